//! The [`Recorder`]: open, enable, read records as the caller polls, name the stacks of each
//! window, tear down.
//!
//! Every perf-based mode of a recording shares one session: its events are opened together on
//! every CPU, their records read from the same ring buffers in one time order, and each sample
//! handed to the handler of its mode ([`handlers::Dispatch`]); side-band records (task names,
//! mappings, context switches) reach all of them. `--blocked` snapshots are taken from the
//! same loop, between two reads.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::aggregate::{self, Aggregator};
use super::blocked::Snapshots;
use super::cgroups::CgroupNames;
use super::duty::DutyThread;
use super::handlers::{self, Dispatch};
use super::parse::Record;
use super::session::{EventSpec, Scope, Session, online_cpus};
use super::stacks::{Collector, Drained, NameCache};
use super::sym::Symbolizer;
use super::sys;
use super::tasks::Tasks;
use super::{
    Caches, CommandEnd, Config, Counters, End, Mode, Progress, RecordError, Recording, Recordings, Stats,
    Status, Target, Window,
};
use crate::fold::{Meta, Unit};

/// Data pages per CPU: 512 KiB for CPU samples alone, 4 MiB with tracepoints (bursty, every
/// event); 128 KiB for CPU samples at 100 Hz or less without user stack copies (an always-on
/// profile at 19 Hz writes a few KiB a second per CPU, stacks and task records included:
/// 128 KiB still holds seconds of it while the caller names a window, and a larger buffer
/// only makes the process larger by its pages once the kernel has written through them, on
/// every CPU). With user stacks copied (`copy_bytes` each: `--call-graph dwarf`, the default
/// for CPU samples) a sample weighs its copy: then enough for two seconds of CPU samples,
/// up to 8 MiB, since the reading thread stops reading while it reads the unwind tables of a
/// large binary it meets (a toolchain's: 7 MiB of them) or names a window.
fn ring_pages(modes: &[Mode], copy_bytes: u32) -> usize {
    /// Sampling frequency up to which CPU samples get the small buffer.
    const LOW_RATE: u32 = 100;
    /// A sample's bytes beside its stack copy: header, registers, callchain (a bound).
    const SAMPLE_BYTES: u64 = 1024;
    /// Seconds of samples the buffer holds with stack copies, and its largest size.
    const HOLD_SECS: u64 = 2;
    const MAX_PAGES: usize = 2048;
    let sampling = |m: &Mode| matches!(m, Mode::Cpu { .. } | Mode::Blocked { .. });
    let low = |m: &Mode| match m {
        Mode::Cpu { frequency } => *frequency <= LOW_RATE,
        _ => true,
    };
    let base = match (modes.iter().all(sampling), modes.iter().all(low)) {
        (true, true) => 32,
        (true, false) => 128,
        _ => 1024,
    };
    if copy_bytes == 0 {
        return base;
    }
    let hz: u64 = modes
        .iter()
        .map(|m| match m {
            Mode::Cpu { frequency } => u64::from(*frequency),
            _ => 0,
        })
        .sum();
    let bytes = hz * (u64::from(copy_bytes) + SAMPLE_BYTES) * HOLD_SECS;
    let pages = usize::try_from(bytes.div_ceil(4096)).unwrap_or(MAX_PAGES).next_power_of_two();
    pages.clamp(base, MAX_PAGES.max(base))
}

/// The largest user stack copy `specs` ask for (0: none).
fn copy_bytes(specs: &[EventSpec]) -> u32 {
    specs
        .iter()
        .filter(|s| s.attr.sample_type & super::sys::attr::sample::STACK_USER != 0)
        .map(|s| s.attr.sample_stack_user)
        .max()
        .unwrap_or(0)
}

/// A recording in progress, driven by its caller.
///
/// [`start`](Recorder::start) opens and enables everything (and starts the command of
/// [`Target::Command`]); the caller then calls [`poll`](Recorder::poll) in its own loop,
/// which reads what the kernel wrote and says when the recording has ended (its duration,
/// its command or target processes, or the caller's stop flag).
/// [`take_window`](Recorder::take_window) returns, whenever the caller asks, the stacks
/// recorded since the previous window, already named, with their counters (and the records
/// the kernel lost meanwhile): symbol tables and names are kept from one window to the next,
/// and a task's name and mappings are read when it is first seen, so the stacks of tasks that
/// exited within the window are named too. [`finish`](Recorder::finish) stops and returns
/// what no window took, with the counters of the whole recording.
///
/// Dropping a recorder, after an error or a panic too, closes every perf event, stops the
/// duty-cycle thread and stops a command still running; no tracing state is left changed.
/// The recorder installs no signal handler: a program that wants Ctrl-C to end the recording
/// sets the stop flag from its own handler.
///
/// The modes are fixed for the life of a recorder (the events of one session share the
/// layout of their ring buffers). To capture more for a while (say `Mode::Mem` once a
/// threshold trips), start a second recorder beside the first and drop it when done: the
/// kernel keeps the two sessions apart.
pub struct Recorder {
    config: Config,
    state: Loop,
    session: Option<Session>,
    duty: Option<DutyThread>,
    started: Instant,
    ended: Option<End>,
    /// Set once the events are closed (by [`Recorder::stop`]).
    closed: Option<Duration>,
    notes: Vec<String>,
    // Windows: where the last one ended, and the counters then.
    window_start: Duration,
    /// The ring counters of the session, once it is closed.
    ring_closed: Counters,
    ring_then: Counters,
    stats_then: Vec<Stats>,
    sym: Option<Symbolizer>,
    names: NameCache,
    /// The modes served by an aggregator, in the order of [`Config::modes`].
    aggregated: Vec<AggregatedKind>,
    /// When the aggregators were last drained, since recording started.
    drained: Duration,
}

/// How often aggregators are drained into their collectors, whatever the window: the kernel
/// keeps a stack in its map while a count refers to it, and a map holding the stacks of
/// one second rather than of a whole window has fewer collisions (a stack that collides is
/// not taken).
const AGGREGATOR_DRAIN: Duration = Duration::from_secs(1);

/// A mode served by an [`Aggregator`]: it, what was added of it, and its counters.
struct AggregatedKind {
    mode: Mode,
    source: Box<dyn Aggregator>,
    collector: Collector,
    /// Waits added since recording started (an aggregate counts its waits).
    waits: u64,
    /// Drains that failed (each a note).
    failed_drains: u64,
}

impl Recorder {
    /// Windows a file's symbols are kept without being used by any stack.
    pub const FILE_IDLE_WINDOWS: u64 = Symbolizer::IDLE_WINDOWS;

    /// Checks `config`, opens its events, enables them and starts its command. Recording
    /// stops early when `stop` becomes true (set it from a signal handler, another thread,
    /// or a watchdog).
    pub fn start(config: &Config, stop: Arc<AtomicBool>) -> Result<Recorder, RecordError> {
        Recorder::start_with(config, stop, Vec::new())
    }

    /// [`start`](Recorder::start), with some modes served by aggregators instead of perf
    /// events (the BPF programs of the `kflame-bpf` crate, already counting): each is drained
    /// at every window and dropped, so detached, when the recorder is. The session then still
    /// reads the task and mapping records their stacks are named with. A mode of
    /// `aggregators` not in [`Config::modes`] is refused.
    pub fn start_with(
        config: &Config,
        stop: Arc<AtomicBool>,
        aggregators: Vec<(Mode, Box<dyn Aggregator>)>,
    ) -> Result<Recorder, RecordError> {
        let served: Vec<Mode> = aggregators.iter().map(|(m, _)| m.clone()).collect();
        if let Some(m) = served.iter().find(|m| !config.modes.contains(m)) {
            return Err(RecordError::Unsupported(format!("{} is served but not recorded", m.name())));
        }
        validate(config, &served)?;
        let (target, notes) = resolve(&config.target)?;
        let config = Config { target, ..config.clone() };
        let names_budget = config.caches.names;
        let snapshots = config.modes.iter().find_map(|m| match m {
            Mode::Blocked { every } => Some(Snapshots::new(*every, &config)),
            _ => None,
        });
        let one_snapshot = matches!(config.modes.as_slice(), [Mode::Blocked { every: None }]);
        // One snapshot counts the stacks it could not read; a kernel without them (as the
        // mask says) is refused at once, as a series of snapshots is.
        let no_stacks = super::features::masked(super::features::Feature::ProcStack);
        if snapshots.is_some() && (!one_snapshot || no_stacks) {
            Snapshots::probe()?;
        }
        let (mut specs, mut dispatch) = handlers::build(&config, &served)?;
        let scope = scope(&config, &served);
        let mut notes = notes;
        let open = |specs: &[EventSpec]| {
            let pages = ring_pages(&config.modes, copy_bytes(specs));
            Session::open(specs, &online_cpus()?, pages, &scope, config.keep_samples)
        };
        let session = match specs.is_empty() {
            true => None,
            false => match open(&specs) {
                // User stack copies by default, refused by this kernel: frame pointers.
                Err(RecordError::Open { source, .. })
                    if config.call_graph.is_none() && handlers::drop_user_stacks(&mut specs) =>
                {
                    dispatch.unwinder = None;
                    notes.push(format!(
                        "user stacks walk frame pointers: this kernel refused copies of the user stack \
                         ({source}; --call-graph dwarf needs PERF_SAMPLE_STACK_USER, Linux 3.7)"
                    ));
                    Some(open(&specs)?)
                }
                r => Some(r?),
            },
        };
        let thread_pids: Vec<u32>;
        let targets = match &config.target {
            Target::Pids(p) => Some(p.as_slice()),
            Target::Threads(tids) => {
                thread_pids = tids.iter().filter_map(|&t| tgid_of(t)).collect();
                Some(thread_pids.as_slice())
            }
            Target::Command { system_wide: false, .. } => Some(&[][..]),
            Target::Command { system_wide: true, .. } | Target::All => None,
        };
        let mut tasks = Tasks::new(targets);
        if let Target::Threads(tids) = &config.target {
            tasks.only_threads(tids);
        }
        let kinds = config.modes.len();
        if let Some(why) = session.as_ref().and_then(|s| s.cgroup_refused.as_ref()) {
            notes.push(format!(
                "samples carry no cgroup: this kernel refused PERF_SAMPLE_CGROUP ({why}; it needs \
                 Linux 5.7 or later)"
            ));
        }
        let mut cgroups = CgroupNames::default();
        if session.as_ref().is_some_and(|s| s.layout.cgroup)
            && let Some(why) = cgroups.unnamed_why()
        {
            notes.push(format!("samples carry cgroup ids without names: {why}"));
        }
        let state = Loop { tasks, dispatch, snapshots, child: None, command: None, stop, cgroups };
        let mut r = Recorder {
            config,
            state,
            session,
            duty: None,
            started: Instant::now(),
            ended: None,
            closed: None,
            notes,
            window_start: Duration::ZERO,
            ring_closed: Counters::default(),
            ring_then: Counters::default(),
            stats_then: vec![Stats::default(); kinds],
            sym: None,
            names: NameCache::with_budget(names_budget),
            aggregated: Vec::new(),
            drained: Duration::ZERO,
        };
        for (mode, source) in aggregators {
            let events = r.config.keep_events || source.keeps_events();
            let collector = Collector::new(r.config.naming, events, r.config.keep_samples);
            r.aggregated.push(AggregatedKind { mode, source, collector, waits: 0, failed_drains: 0 });
        }
        if one_snapshot {
            // `--blocked` alone, one snapshot: taken at once.
            if let Some(s) = &mut r.state.snapshots {
                s.take()?;
            }
            r.ended = Some(End::Snapshot);
            r.closed = Some(r.started.elapsed());
            return Ok(r);
        }
        if r.session.is_some() {
            r.state.tasks.snapshot();
        }
        r.started = Instant::now();
        if let Some(session) = &r.session
            && scope != Scope::ChildOnExec
        {
            session.set_enabled(true)?; // otherwise the command's execve enables them
        }
        if let Target::Command { argv, system_wide } = &r.config.target {
            let (argv, system_wide) = (argv.clone(), *system_wide);
            r.state.spawn(&argv, system_wide)?;
        }
        if let (Some(d), Some(s)) = (r.config.duty, &r.session) {
            r.duty = Some(DutyThread::start(s.event_fds()?, d, r.started));
        }
        Ok(r)
    }

    /// Waits up to `timeout` for records and handles them (and takes the `--blocked`
    /// snapshot that is due). Returns [`Status::Ended`] once the recording has ended (and
    /// from then on); the events stay open until [`stop`](Recorder::stop),
    /// [`finish`](Recorder::finish) or drop.
    pub fn poll(&mut self, timeout: Duration) -> Result<Status, RecordError> {
        if let Some(end) = self.ended {
            return Ok(Status::Ended(end));
        }
        let elapsed = self.started.elapsed();
        if let Some(s) = &mut self.state.snapshots {
            s.tick(elapsed)?;
        }
        if !self.aggregated.is_empty() && elapsed >= self.drained + AGGREGATOR_DRAIN {
            self.drained = elapsed;
            self.drain_aggregators();
        }
        if let Some(end) = self.state.should_stop(&self.config, elapsed) {
            self.ended = Some(end);
            return Ok(Status::Ended(end));
        }
        match &mut self.session {
            Some(s) => {
                let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
                let records = s.poll(ms)?;
                self.state.handle(records);
            }
            None => {
                let next = self.state.snapshots.as_ref().and_then(|s| s.until_next(self.started.elapsed()));
                std::thread::sleep(next.unwrap_or(Duration::MAX).min(timeout));
            }
        }
        Ok(Status::Running)
    }

    /// Where the recording stands: for a progress line.
    pub fn progress(&self) -> Progress {
        let snapshots = self.state.snapshots.as_ref().map_or(0, Snapshots::tasks);
        Progress {
            elapsed: self.closed.unwrap_or_else(|| self.started.elapsed()),
            samples: self.state.dispatch.added()
                + snapshots
                + self.aggregated.iter().map(|a| a.waits).sum::<u64>(),
            lost: self.session.as_ref().map_or(0, |s| s.counters.lost),
            active: self.duty.as_ref().is_none_or(DutyThread::active),
        }
    }

    /// Stops recording (if it has not ended by itself): takes the `--blocked` snapshot that
    /// is due at the end, closes every perf event after handling what they still held, and
    /// stops the command if it is still running. Calling it again does nothing.
    pub fn stop(&mut self) -> Result<(), RecordError> {
        if self.closed.is_some() {
            return Ok(());
        }
        let mut result = Ok(());
        if let Some(s) = self.state.snapshots.as_mut().filter(|s| s.until_next(Duration::ZERO).is_none()) {
            result = s.take(); // the one snapshot, when recording stops
        }
        self.duty = None;
        if let Some(mut session) = self.session.take() {
            let _ = session.set_enabled(false);
            let rest = session.finish();
            self.state.handle(rest);
            self.ring_closed = session.counters;
        } // every perf event closed before the (slow) symbolization
        self.closed = Some(self.started.elapsed());
        self.ended.get_or_insert(End::Stopped);
        self.state.reap();
        result
    }

    /// The ring-buffer counters since recording started.
    pub fn ring(&self) -> Counters {
        self.session.as_ref().map_or(self.ring_closed, |s| s.counters)
    }

    /// Remarks on the whole recording so far (a thread id taken for its process, hidden
    /// kernel symbols once a window was named, ...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The stacks recorded since the previous window (or the start), named, per mode in the
    /// order of [`Config::modes`], with the counters of the window. Records the kernel has
    /// written but that are not yet safe to put in time order belong to the next window.
    pub fn take_window(&mut self) -> Window {
        let end = self.closed.unwrap_or_else(|| self.started.elapsed());
        let now = self.ring();
        let then = std::mem::replace(&mut self.ring_then, now);
        let ring = Counters {
            records: now.records.saturating_sub(then.records),
            lost: now.lost.saturating_sub(then.lost),
            malformed: now.malformed.saturating_sub(then.malformed),
        };
        let kinds = self.name_window();
        let start = std::mem::replace(&mut self.window_start, end);
        Window { start, end, kinds, ring, clock: super::WallClock::now() }
    }

    /// Names what every mode collected since the last window, and counts the window.
    fn name_window(&mut self) -> Vec<Recording> {
        self.drain_aggregators();
        let state = &mut self.state;
        if !state.dispatch.kinds.is_empty() || !self.aggregated.is_empty() {
            match &mut self.sym {
                Some(sym) => {
                    sym.next_window();
                    if sym.kernel_stale() {
                        // Modules loaded or BPF programs attached since kallsyms was read.
                        if let Ok(text) = super::sym::read_kallsyms() {
                            sym.reload_kernel(&text);
                            self.names.forget_kernel();
                        }
                    }
                }
                None => {
                    let mut sym = Symbolizer::new(); // read now: modules loaded meanwhile are named
                    sym.set_budget(self.config.caches.symbols);
                    if let Some(e) = sym.kallsyms_error() {
                        self.notes.push(format!(
                            "kernel symbols are missing (/proc/kallsyms: {e}); kernel frames are shown \
                             as [kernel.kallsyms]"
                        ));
                    } else if !sym.has_kernel_symbols() {
                        self.notes.push(
                            "kernel symbols are hidden (/proc/kallsyms shows zero addresses: run as root \
                             or set kernel.kptr_restrict=0); kernel frames are shown as [kernel.kallsyms]"
                                .to_string(),
                        );
                    }
                    self.sym = Some(sym);
                }
            }
        }
        self.names.trim();
        let mut out = Vec::with_capacity(self.config.modes.len());
        for (i, mode) in self.config.modes.iter().enumerate() {
            let aggregated = self.aggregated.iter_mut().find(|a| a.mode == *mode);
            let (mut r, total) = match (mode, aggregated) {
                (Mode::Blocked { .. }, _) => {
                    let Some(s) = &mut state.snapshots else { continue };
                    let mut r = Recording::new(mode.clone(), s.meta());
                    (r.stacks, r.events) = s.drain();
                    (r, s.stats())
                }
                (_, Some(a)) => {
                    let Some(sym) = &mut self.sym else { continue };
                    let d = a.collector.drain(mode.event_kind(), &state.tasks, sym, &mut self.names);
                    let mut r = drained_recording(mode, aggregated_meta(mode), d);
                    r.histograms = a.source.histograms();
                    let lost = a.source.lost();
                    (
                        r,
                        Stats {
                            samples: a.waits,
                            lost: lost.waits,
                            detached_secs: lost.detached_secs,
                            ..Stats::default()
                        },
                    )
                }
                (_, None) => {
                    let Some(k) = state.dispatch.kinds.iter_mut().find(|k| k.mode == *mode) else { continue };
                    let Some(sym) = &mut self.sym else { continue };
                    let d = k.collector.drain(mode.event_kind(), &state.tasks, sym, &mut self.names);
                    let mut r = drained_recording(mode, k.handler.meta(), d);
                    let ids: std::collections::BTreeSet<u64> =
                        r.samples.iter().filter_map(|s| s.cgroup).collect();
                    r.cgroups = state.cgroups.name(ids);
                    let total = Stats {
                        samples: k.handler.added(),
                        unpaired: k.handler.unpaired(),
                        open: k.handler.open(),
                        ..Stats::default()
                    };
                    (r, total)
                }
            };
            if let Some(then) = self.stats_then.get_mut(i) {
                r.stats = total.since(then);
                *then = total;
            }
            out.push(r);
        }
        if let Some(u) = &mut state.dispatch.unwinder {
            u.next_window();
        }
        // Every sample of a task that exited a window ago is named: forget the task.
        let ended = state.tasks.prune();
        self.names.forget(&ended);
        if self.sym.as_ref().is_some_and(Symbolizer::churned) {
            super::sys::release_free_memory(); // what reading a symbol table freed
        }
        out
    }

    /// The sizes of the caches kept from one window to the next, and what was forgotten to
    /// keep them bounded: for a recorder that runs for days.
    pub fn caches(&self) -> Caches {
        let (threads, address_spaces) = self.state.tasks.sizes();
        let t = &self.state.tasks;
        Caches {
            threads,
            address_spaces,
            files: self.sym.as_ref().map_or(0, Symbolizer::files),
            names: self.names.len(),
            cgroups: self.state.cgroups.len(),
            cgroup_walks: self.state.cgroups.walks,
            forgotten_threads: t.pruned_threads,
            forgotten_address_spaces: t.pruned_maps,
            forgotten_files: self.sym.as_ref().map_or(0, |s| s.pruned_files),
            symbol_bytes: self.sym.as_ref().map_or(0, Symbolizer::bytes),
            name_bytes: self.names.bytes(),
            unreadable_names: self.sym.as_ref().map_or(0, |s| s.unreadable_names),
            kallsyms_reloads: self.sym.as_ref().map_or(0, |s| s.kallsyms_reloads),
            resets: t.overflows + self.names.resets(),
            unwind: self.state.dispatch.unwinder.as_ref().map(|u| u.stats()).unwrap_or_default(),
        }
    }

    /// Stops (see [`stop`](Recorder::stop)) and returns what no window took: the stacks and
    /// events since the last window (all of them when no window was taken), with the counters
    /// (events still open count as unpaired) and notes of the whole recording, per mode in the
    /// order of [`Config::modes`].
    pub fn finish(mut self) -> Result<Recordings, RecordError> {
        self.stop()?;
        let mut kinds = self.take_window().kinds;
        let blocked = self.state.snapshots.take().map(Snapshots::finish);
        for (r, total) in kinds.iter_mut().zip(&self.stats_then) {
            r.stats = Stats { open: 0, ..*total };
            match (&r.mode, self.aggregated.iter().find(|a| a.mode == r.mode)) {
                (Mode::Blocked { .. }, _) => {
                    r.notes = blocked.as_ref().map(|b| b.notes.clone()).unwrap_or_default()
                }
                (_, Some(a)) => r.notes = aggregated_notes(a),
                (mode, None) => {
                    let Some(k) = self.state.dispatch.kinds.iter().find(|k| k.mode == *mode) else {
                        continue;
                    };
                    r.notes = k.handler.notes();
                    if k.collector.is_empty() {
                        r.notes.push("no samples were recorded for the selected tasks".to_string());
                    }
                }
            }
        }
        if let Some(u) = &self.state.dispatch.unwinder {
            self.notes.extend(u.notes());
        }
        Ok(Recordings {
            kinds,
            ring: self.ring(),
            elapsed: self.closed.unwrap_or_default(),
            notes: std::mem::take(&mut self.notes),
            command: self.state.command,
            clock: super::WallClock::now(),
        })
    }
}

impl Recorder {
    /// Reads what every aggregator summed since the last window into its collector, keeping
    /// the waits of the tasks recorded.
    fn drain_aggregators(&mut self) {
        let now = sys::monotonic_ns();
        let tid = self.config.naming.tid || self.config.keep_events || self.config.keep_samples;
        for a in &mut self.aggregated {
            let got = match a.source.drain() {
                Ok(got) => got,
                Err(e) => {
                    a.failed_drains += 1;
                    if a.failed_drains == 1 {
                        self.notes
                            .push(format!("{}: reading the aggregated waits failed: {e}", a.mode.name()));
                    }
                    continue;
                }
            };
            for w in got {
                if w.ns == 0 || !self.state.tasks.wanted(w.task.pid, w.task.tid) {
                    continue;
                }
                let tid = tid || w.event.is_some();
                let mut raw = aggregate::raw_stack(&w, &mut self.state.tasks, tid);
                match w.event {
                    Some(e) => {
                        raw.cpu = e.cpu;
                        a.collector.add_event(e.end_ns.saturating_sub(w.ns), raw, w.ns, w.ns);
                    }
                    None => {
                        a.waits += w.count;
                        // Events of summed waits only when every event is asked for.
                        match self.config.keep_events {
                            true => a.collector.add(now, raw, w.ns, None),
                            false => a.collector.add_summed(now, raw, w.ns),
                        }
                    }
                }
            }
        }
    }
}

/// A recording of `mode` holding what its collector drained.
fn drained_recording(mode: &Mode, meta: Meta, d: Drained) -> Recording {
    let mut r = Recording::new(mode.clone(), meta);
    (r.stacks, r.events, r.samples, r.sample_stacks) = (d.stacks, d.events, d.samples, d.sample_stacks);
    r
}

/// The unit and events of a mode served by an aggregator.
fn aggregated_meta(mode: &Mode) -> Meta {
    let event = match mode {
        Mode::OffCpu(o) if o.wakers => "sched:sched_switch+sched:sched_waking",
        Mode::Locks => "lock:contention_begin+lock:contention_end",
        Mode::Runq => "sched:sched_wakeup+sched:sched_switch",
        Mode::Bio => "block:block_bio_queue+block:block_rq_complete",
        Mode::Syscalls => "raw_syscalls:sys_enter+raw_syscalls:sys_exit",
        _ => "sched:sched_switch",
    };
    Meta { unit: Unit::Nanoseconds, event: Some(event.into()) }
}

/// What the user is told about an aggregated mode at the end: what was lost, never silent.
fn aggregated_notes(a: &AggregatedKind) -> Vec<String> {
    let mut notes = Vec::new();
    let lost = a.source.lost();
    if lost.waits > 0 {
        notes.push(format!("{} waits were not counted: the kernel's aggregation map was full", lost.waits));
    }
    if lost.stacks > 0 {
        notes.push(format!(
            "{} stacks could not be taken (stack map full or walk failed): their time counts with a shorter stack",
            lost.stacks
        ));
    }
    if lost.detached_secs > 0 {
        notes.push(format!(
            "its programs were detached {} s in all to keep within their CPU budget: nothing was counted then",
            lost.detached_secs
        ));
    }
    for (what, n) in lost.other.iter().filter(|(_, n)| *n > 0) {
        notes.push(format!("{n} {what}"));
    }
    if a.failed_drains > 1 {
        notes.push(format!("{} reads of the aggregated waits failed", a.failed_drains));
    }
    if a.collector.is_empty() {
        notes.push("no samples were recorded for the selected tasks".to_string());
    }
    notes
}

impl Drop for Recorder {
    /// Every perf event is closed and a command still running stopped, whatever ended the
    /// recording (an error or a panic too).
    fn drop(&mut self) {
        self.duty = None;
        if let Some(s) = self.session.take() {
            let _ = s.set_enabled(false);
        }
        self.state.reap();
    }
}
/// Refuses what cannot be recorded, before anything is opened; `served`: the modes an
/// aggregator serves.
fn validate(config: &Config, served: &[Mode]) -> Result<(), RecordError> {
    let refuse = |why: String| Err(RecordError::Unsupported(why));
    for m in &config.modes {
        if matches!(m, Mode::Locks | Mode::Runq | Mode::Bio) && !served.contains(m) {
            return refuse(format!(
                "--{} is summed in the kernel by BPF, which is not available here; it has no other path",
                m.name()
            ));
        }
        if let Mode::OffCpu(o) = m
            && o.wakers
            && !served.contains(m)
        {
            return refuse(
                "--wakers needs the in-kernel (BPF) off-CPU path, which is not available here: \
                 record --off-cpu without --wakers"
                    .into(),
            );
        }
    }
    let Some(first) = config.modes.first() else { return refuse("nothing to record: no mode given".into()) };
    for (i, m) in config.modes.iter().enumerate() {
        if config.modes[..i].iter().any(|o| o.name() == m.name()) {
            return refuse(format!("{} is asked for twice", m.name()));
        }
    }
    if config.duty.is_some() {
        for m in &config.modes {
            if let Some(why) = duty_refused(m) {
                return refuse(why.into());
            }
            if served.contains(m) {
                return refuse(format!(
                    "{} is summed in the kernel and read once per window: a duty cycle has no \
                     meaning there",
                    m.name()
                ));
            }
        }
    }
    let Mode::Blocked { every } = first else { return Ok(()) };
    if config.modes.len() > 1 {
        return Ok(()); // the other modes say how long; the snapshots cover every task
    }
    if matches!(config.target, Target::Pids(_) | Target::Threads(_)) {
        return refuse("--blocked takes a snapshot of every task; it cannot be limited to -p or -t".into());
    }
    if config.duty.is_some() {
        return refuse(
            "--blocked takes snapshots, instants: --for has no meaning there (--every alone sets \
             the interval between snapshots)"
                .into(),
        );
    }
    let how_long = match config.target {
        Target::Command { .. } => Some("a command"),
        _ => config.duration.map(|_| "-d"),
    };
    if let (None, Some(what)) = (every, how_long) {
        return refuse(format!(
            "--blocked alone takes one snapshot at once, so {what} would change nothing: add \
             --every SECONDS to take a snapshot every SECONDS until the end"
        ));
    }
    Ok(())
}

/// Why the mode cannot record with a duty cycle, if it cannot: paired modes would join an
/// event before a pause with an unrelated one after it.
fn duty_refused(mode: &Mode) -> Option<&'static str> {
    match mode {
        Mode::OffCpu(_) => Some(
            "--off-cpu cannot record with a duty cycle: the switch-in of a task asleep when \
             recording pauses would be missed, and its blocked time would run on to a later one",
        ),
        Mode::Syscalls => Some(
            "--syscalls cannot record with a duty cycle: a call entered before a pause would \
             pair with the exit of a later call of the same number after it (a loop of reads)",
        ),
        _ => None,
    }
}

/// Per-task events where they see everything the modes need: a process's events, or a
/// command's from its `execve` on. Off-CPU recording is always system-wide: it reads the
/// CPU-wide context-switch records, and its targets are chosen while pairing; the modes
/// recorded with it share its system-wide events and filter by task the same way.
fn scope(config: &Config, served: &[Mode]) -> Scope {
    if !served.is_empty() || config.modes.iter().any(|m| matches!(m, Mode::OffCpu(_))) {
        return Scope::SystemWide; // aggregators see every task: theirs are chosen in user space
    }
    match &config.target {
        Target::All | Target::Command { system_wide: true, .. } => Scope::SystemWide,
        Target::Command { system_wide: false, .. } => Scope::ChildOnExec,
        Target::Pids(pids) => Scope::Tasks(pids.iter().flat_map(|&p| threads_of(p)).collect()),
        Target::Threads(tids) => Scope::Threads(tids.clone()),
    }
}

/// The target with every id checked: a thread id given as a process (`-p TID`) stands for
/// its process, as with `perf record -p` (whose thread list is `/proc/TID/task`: all the
/// threads of the process); `-t` takes thread ids as they are. Also returns notes on ids
/// that were taken for their process.
fn resolve(target: &Target) -> Result<(Target, Vec<String>), RecordError> {
    match target {
        Target::Pids(ids) => {
            let (mut pids, mut notes) = (Vec::new(), Vec::new());
            for &id in ids {
                let pid = tgid_of(id).ok_or(RecordError::NoSuchProcess(id))?;
                if pid != id {
                    notes.push(format!(
                        "-p {id}: {id} is a thread of process {pid}; recording the whole process, as \
                         perf record -p does (-t {id} records that thread alone)"
                    ));
                }
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
            Ok((Target::Pids(pids), notes))
        }
        Target::Threads(tids) => match tids.iter().find(|&&t| tgid_of(t).is_none()) {
            Some(&t) => Err(RecordError::NoSuchThread(t)),
            None => Ok((target.clone(), Vec::new())),
        },
        Target::All | Target::Command { .. } => Ok((target.clone(), Vec::new())),
    }
}

/// The process (thread group) of task `id`, from `/proc/ID/status`; `None` when there is no
/// such task.
fn tgid_of(id: u32) -> Option<u32> {
    if id == 0 {
        return None; // the idle tasks have no /proc entry
    }
    let status = std::fs::read_to_string(format!("/proc/{id}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:"))?.trim().parse().ok()
}

/// The threads of process `pid` (just `pid` when its task list cannot be read).
fn threads_of(pid: u32) -> Vec<u32> {
    let tids: Vec<u32> = super::tasks::numeric_dirs(&format!("/proc/{pid}/task")).collect();
    if tids.is_empty() { vec![pid] } else { tids }
}

struct Loop {
    tasks: Tasks,
    dispatch: Dispatch,
    snapshots: Option<Snapshots>,
    child: Option<Child>,
    command: Option<CommandEnd>,
    /// The caller's stop flag.
    stop: Arc<AtomicBool>,
    /// Names of the cgroup ids of kept samples.
    cgroups: CgroupNames,
}

/// How a command that ended ended; `stopping`: the recorder was told to stop (a signal)
/// meanwhile, so a SIGINT or SIGTERM that killed the command was meant for both.
fn command_end(status: ExitStatus, stopping: bool) -> CommandEnd {
    match (status.code(), status.signal()) {
        (Some(code), _) => CommandEnd::Exited(code),
        (None, Some(sig)) if stopping && (sig == libc::SIGINT || sig == libc::SIGTERM) => CommandEnd::Stopped,
        (None, Some(sig)) => CommandEnd::Killed(sig),
        (None, None) => CommandEnd::Stopped,
    }
}

impl Loop {
    fn spawn(&mut self, argv: &[std::ffi::OsString], system_wide: bool) -> Result<(), RecordError> {
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| RecordError::Unsupported("no command given after `--`".into()))?;
        let child = Command::new(prog)
            .args(args)
            .spawn()
            .map_err(|source| RecordError::Spawn { command: prog.to_string_lossy().into_owned(), source })?;
        if !system_wide {
            self.tasks.add_target(child.id());
        }
        self.child = Some(child);
        Ok(())
    }

    /// Why recording should end now, if it should.
    fn should_stop(&mut self, config: &Config, elapsed: Duration) -> Option<End> {
        let stopping = self.stop.load(Ordering::SeqCst);
        if let Some(child) = &mut self.child
            && let Ok(Some(status)) = child.try_wait()
        {
            self.command = Some(command_end(status, stopping));
            self.child = None;
            return Some(End::CommandExited);
        }
        if stopping {
            return Some(End::Stopped);
        }
        if config.duration.is_some_and(|d| elapsed >= d) {
            return Some(End::Duration);
        }
        match &config.target {
            Target::Pids(ids) | Target::Threads(ids) if !ids.iter().any(|p| process_alive(*p)) => {
                Some(End::TargetsExited)
            }
            _ => None,
        }
    }

    fn handle(&mut self, records: Vec<Record>) {
        for mut r in records {
            match &mut r {
                Record::Sample(s) => self.dispatch.sample(s, &mut self.tasks),
                Record::Cgroup { id, path, .. } => self.cgroups.learn(*id, path),
                other => {
                    self.tasks.apply(other);
                    self.dispatch.side_band(other);
                }
            }
        }
    }

    /// Stops a command still running (recording stopped first) and waits for it.
    fn reap(&mut self) {
        if let Some(mut child) = self.child.take() {
            let stopped = match child.try_wait() {
                Ok(None) => {
                    sys::kill(child.id(), sys::SIGTERM);
                    true
                }
                _ => false,
            };
            let status = child.wait();
            self.command = Some(match status {
                Ok(s) if !stopped => command_end(s, self.stop.load(Ordering::SeqCst)),
                _ => CommandEnd::Stopped,
            });
        }
    }
}

impl Drop for Loop {
    /// A command is never left running, even when recording ends by a panic.
    fn drop(&mut self) {
        self.reap();
    }
}

/// True while process or thread `pid` exists.
fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live: on a kernel that refuses cgroup ids (as before 5.7, simulated), a recording
    /// that keeps samples still records them, without cgroups, and its notes say why.
    #[test]
    #[allow(clippy::print_stderr)]
    fn live_a_kernel_refusing_cgroup_ids_records_without_them() {
        super::super::session::REFUSE_CGROUP.set(true);
        let config =
            Config { modes: vec![Mode::Cpu { frequency: 997 }], keep_samples: true, ..Config::default() };
        let started = Recorder::start(&config, Arc::new(AtomicBool::new(false)));
        super::super::session::REFUSE_CGROUP.set(false);
        let mut rec = match started {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipping: cannot record here ({e})");
                return;
            }
        };
        let notes = rec.notes().join("\n");
        assert!(notes.contains("refused PERF_SAMPLE_CGROUP") && notes.contains("Linux 5.7"), "{notes}");
        // Windows of 300 ms of a busy CPU until one holds samples (on a machine busy with
        // other tests, the first may not), 3 s at most.
        let _spinner = Spinner::start();
        let give_up = Instant::now() + Duration::from_secs(3);
        let w = loop {
            let end = Instant::now() + Duration::from_millis(300);
            while Instant::now() < end {
                rec.poll(Duration::from_millis(20)).expect("poll");
            }
            let w = rec.take_window();
            if !w.kinds[0].samples.is_empty() || Instant::now() > give_up {
                break w;
            }
        };
        let r = &w.kinds[0];
        assert!(!r.samples.is_empty(), "no sample recorded");
        assert!(r.samples.iter().all(|s| s.cgroup.is_none()) && r.cgroups.is_empty());
        assert_eq!(w.ring.malformed, 0, "the records were read with the layout they have");
    }

    /// Live test: on a kernel that refuses user stack copies, the default CPU profile walks
    /// frame pointers, says so, and reads its records with the layout they have.
    #[test]
    #[allow(clippy::print_stderr)]
    fn live_a_kernel_refusing_user_stack_copies_walks_frame_pointers() {
        super::super::session::REFUSE_USER_STACK.set(true);
        let config = Config { modes: vec![Mode::Cpu { frequency: 997 }], ..Config::default() };
        let started = Recorder::start(&config, Arc::new(AtomicBool::new(false)));
        let asked = Config { call_graph: Some(super::super::CallGraph::DWARF), ..config.clone() };
        let refused = Recorder::start(&asked, Arc::new(AtomicBool::new(false)));
        super::super::session::REFUSE_USER_STACK.set(false);
        let mut rec = match started {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipping: cannot record here ({e})");
                return;
            }
        };
        // Asked for by name, DWARF is not replaced silently.
        assert!(refused.is_err());
        let notes = rec.notes().join("\n");
        assert!(notes.contains("user stacks walk frame pointers") && notes.contains("Linux 3.7"), "{notes}");
        let _spinner = Spinner::start();
        let give_up = Instant::now() + Duration::from_secs(3);
        let mut samples = 0;
        while samples == 0 && Instant::now() < give_up {
            rec.poll(Duration::from_millis(20)).expect("poll");
            samples = rec.progress().samples;
        }
        assert!(samples > 0, "no sample recorded");
        let w = rec.take_window();
        assert_eq!(w.ring.malformed, 0, "the records were read with the layout they have");
        assert_eq!(rec.caches().unwind.samples, 0);
    }

    /// A shell spinning on a CPU until dropped: a recording leaves out its own process, so
    /// a test that spins itself has nothing of its own to record, and two such tests at
    /// once may leave no CPU idle either.
    struct Spinner(std::process::Child);

    impl Spinner {
        fn start() -> Spinner {
            let child = std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("a spinning shell");
            Spinner(child)
        }
    }

    impl Drop for Spinner {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn buffers_hold_two_seconds_of_stack_copies() {
        let cpu = |frequency| vec![Mode::Cpu { frequency }];
        // Without copies, as before.
        assert_eq!(ring_pages(&cpu(99), 0), 32);
        assert_eq!(ring_pages(&cpu(997), 0), 128);
        // 8 KiB copies: 99 Hz for 2 s is 1.8 MB, 512 pages; the watcher's 19 Hz 128.
        assert_eq!(ring_pages(&cpu(99), 8192), 512);
        assert_eq!(ring_pages(&cpu(19), 8192), 128);
        // Capped at 8 MiB, never below what the modes had.
        assert_eq!(ring_pages(&cpu(4999), 65528), 2048);
        let mut with_tracepoints = cpu(99);
        with_tracepoints.push(Mode::Mem { kmalloc: false });
        assert_eq!(ring_pages(&with_tracepoints, 8192), 1024);
    }

    #[test]
    fn how_a_command_ended() {
        let st = ExitStatus::from_raw;
        assert_eq!(command_end(st(0), false), CommandEnd::Exited(0));
        assert_eq!(command_end(st(3 << 8), true), CommandEnd::Exited(3));
        assert_eq!(command_end(st(libc::SIGSEGV), false), CommandEnd::Killed(libc::SIGSEGV));
        assert_eq!(command_end(st(libc::SIGSEGV), true), CommandEnd::Killed(libc::SIGSEGV));
        // Ctrl-C reaches the recorder and the command alike: the command did not fail.
        assert_eq!(command_end(st(libc::SIGINT), true), CommandEnd::Stopped);
        assert_eq!(command_end(st(libc::SIGINT), false), CommandEnd::Killed(libc::SIGINT));
    }
}
