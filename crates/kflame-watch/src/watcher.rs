//! The [`Watcher`]: the loop of `kflame watch` (see ARCHITECTURE.md, "The watcher").

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use kflame::fold::{Meta, Unit, Weight};
use kflame::record::{self, Aggregator, Config, Mode, Recorder, Recording, Status as RecStatus};

use crate::capture::{self, Capture, Message};
use crate::config::{ConfigError, Level, Settings};
use crate::kmsg::{Follower, KernelReport};
use crate::metrics::{Options, Reading, Sampler, Tap};
use crate::rules::{CaptureKind, Evaluator, Fired, Held};
use crate::store::{
    Bucket, CaptureId, CaptureStart, Kind, LatencyKind, Metric, Policy, Sample, Store, StoreError,
    StoredReport, TriggerFired, derived,
};

/// How the program running the watcher hears from it and steers it.
pub trait Control {
    /// A log line (the watcher never prints).
    fn log(&mut self, level: Level, message: &str);
    /// Where the watcher stands, once a second.
    fn status(&mut self, _status: &Status) {}
    /// The reload flag was set: the settings to use from now on (rules, thresholds, limits,
    /// rates; a changed database path is ignored with a warning).
    fn reload(&mut self) -> Option<Result<Settings, ConfigError>> {
        None
    }
}

/// Where the watcher stands.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Since start.
    pub elapsed: Duration,
    /// Always-on profile samples stored.
    pub samples: u64,
    /// Buckets of the always-on CPU profile stored (the off-CPU and lock buckets beside them
    /// are not counted here).
    pub buckets: u64,
    /// Triggers fired.
    pub triggers: u64,
    /// Captures running now (their kinds).
    pub capturing: Vec<&'static str>,
    /// Kernel reports stored.
    pub reports: u64,
    /// Latest total CPU busy %.
    pub cpu: Option<f64>,
    /// Latest `mem.available` %.
    pub mem_available: Option<f64>,
    /// Buckets waiting for disk space.
    pub waiting_buckets: usize,
    /// Samples the kernel lost (ring buffer full).
    pub lost: u64,
    /// Outliers stored (slow system calls and waits).
    pub outliers: u64,
    /// Outliers left out: past the slowest `outliers` of their bucket and family (every slow
    /// one still counts in its family's `.slow` metric).
    pub outliers_left: u64,
    /// Seconds each always-on program was detached to keep within its CPU budget (by mode,
    /// those detached at all).
    pub detached: Vec<(&'static str, u64)>,
}

/// True when the kernel lacks what the profile asks for (perf events, the event, its
/// sample type): what an old or stripped-down kernel answers. Privileges, limits and
/// configuration are not that: they are the user's to fix, and stop the watcher.
fn kernel_lacks_it(e: &record::RecordError) -> bool {
    match e {
        record::RecordError::Open { source, .. } => matches!(
            kflame::record::features::errno_of(source),
            Some(libc::ENOSYS | libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP)
        ),
        _ => false,
    }
}

/// Why the watcher could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The always-on profile could not be recorded.
    #[error("cannot start the always-on CPU profile: {0}")]
    Record(#[from] record::RecordError),
    /// The store failed in a way the watcher cannot go on from.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// What the loop needs from outside besides the settings.
#[derive(Clone, Debug)]
pub struct Environment {
    /// Root of `/proc` files (`/`).
    pub proc_root: PathBuf,
    /// The kernel log device (`/dev/kmsg`).
    pub kmsg: PathBuf,
    /// Online CPUs.
    pub ncpu: u32,
}

impl Default for Environment {
    fn default() -> Environment {
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Environment { proc_root: "/".into(), kmsg: "/dev/kmsg".into(), ncpu }
    }
}

/// Profile buckets older than a day lose their per-sample times (merged into 1 min buckets).
const DOWNSAMPLE_AFTER_NS: i64 = 24 * 3_600_000_000_000;
/// The always-on programs' losses are said at most this often per mode (summed meanwhile).
const LOSS_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Most buckets kept in memory while the disk is full (10 min of the default 10 s buckets);
/// older ones are dropped, and counted.
const MAX_WAITING: usize = 60; // in FULL_NOTE too

/// What the watcher does when the disk first turns out full (whichever write found it).
const FULL_NOTE: &str = "keeping profile buckets in memory (at most 60) and retrying; retention and \
                         the disk budget free space (maintenance every 5 s until writes succeed)";

/// How often maintenance runs while the disk is full (once a minute otherwise).
const FULL_MAINTAIN: Duration = Duration::from_secs(5);

/// A bucket being filled: samples with their wall time, stacks interned.
#[derive(Debug)]
struct Pending {
    start_ns: i64,
    end_ns: i64,
    kind: Kind,
    capture: Option<CaptureId>,
    meta: Meta,
    stacks: Vec<Box<[u8]>>,
    index: HashMap<Box<[u8]>, u32>,
    cgroups: Vec<Arc<str>>,
    rows: Vec<Row>,
    aggregated: Vec<(Box<[u8]>, Weight)>,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    time_ns: i64,
    cpu: u32,
    cgroup: Option<u32>,
    stack: u32,
    weight: u64,
}

impl Pending {
    fn new(start_ns: i64, end_ns: i64, kind: Kind, capture: Option<CaptureId>, meta: Meta) -> Pending {
        Pending {
            start_ns,
            end_ns,
            kind,
            capture,
            meta,
            stacks: Vec::new(),
            index: HashMap::new(),
            cgroups: Vec::new(),
            rows: Vec::new(),
            aggregated: Vec::new(),
        }
    }

    fn intern(&mut self, stack: &[u8]) -> u32 {
        if let Some(&i) = self.index.get(stack) {
            return i;
        }
        let i = self.stacks.len() as u32;
        self.stacks.push(stack.into());
        self.index.insert(stack.into(), i);
        i
    }

    /// Adds one sample record of `r`, taken at `time_ns` (wall clock).
    fn push(&mut self, r: &Recording, s: &record::SampleRecord, time_ns: i64) {
        let stack = self.intern(r.sample_stack(s));
        let cgroup = s.cgroup.and_then(|id| r.cgroups.get(&id)).map(|p| self.cgroup(p));
        self.rows.push(Row { time_ns, cpu: s.cpu, cgroup, stack, weight: s.weight });
    }

    fn cgroup(&mut self, path: &Arc<str>) -> u32 {
        match self.cgroups.iter().position(|c| Arc::ptr_eq(c, path) || **c == **path) {
            Some(i) => i as u32,
            None => {
                self.cgroups.push(path.clone());
                (self.cgroups.len() - 1) as u32
            }
        }
    }

    /// Writes it; `Ok(samples)` or the store's error.
    fn write(&self, store: &mut impl Store, host: &str) -> Result<u64, StoreError> {
        let samples: Vec<Sample<'_>> = self
            .rows
            .iter()
            .map(|r| Sample {
                time_ns: r.time_ns,
                cpu: r.cpu,
                cgroup: r.cgroup.and_then(|c| self.cgroups.get(c as usize)).map(|c| &**c),
                stack: self.stacks.get(r.stack as usize).map_or(&[][..], |s| &**s),
                weight: Weight::from(r.weight),
            })
            .collect();
        let summed;
        let aggregated: Vec<(&[u8], Weight)> = if self.capture.is_none()
            && matches!(self.kind, Kind::OffCpu | Kind::Locks)
        {
            summed =
                rarer_stacks_folded(&self.aggregated, ((self.end_ns - self.start_ns) / RARER_PART) as u128);
            summed.iter().map(|(s, w)| (&s[..], *w)).collect()
        } else {
            self.aggregated.iter().map(|(s, w)| (&**s, *w)).collect()
        };
        store.append_bucket(&Bucket {
            host,
            kind: self.kind,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            capture: self.capture,
            meta: &self.meta,
            samples: &samples,
            aggregated: &aggregated,
        })?;
        Ok(samples.len() as u64)
    }
}

/// The frame that stands for the stacks of a task too rare in a bucket to be kept apart.
const RARER_STACKS: &str = "[rarer stacks]";

/// The part of a bucket's length below which the time an always-on blocked-time stack
/// waited in it is not kept apart: a ten-thousandth (1 ms of a 10-s bucket). A share of the
/// bucket's weight would not do: off-CPU time is mostly the sleep of idle threads, thousands
/// of seconds per bucket, next to which a writer's seconds in D are a rounding error.
const RARER_PART: i64 = 10_000;

/// An always-on blocked-time bucket's stacks (off-CPU, locks), summed per stack, the
/// stacks that waited less than `floor` ns in all are folded into one per task name:
/// `COMM;[rarer stacks]`, and the stack's last frame when it names what was waited on
/// (`[spinlock]`, `[rwsem:W]`). Every wait is counted, under its task. On a busy machine the
/// short lock waits come from ever new stacks (1,913 in five minutes of
/// `bench/watch-storage.sh`'s mix, 4 of them holding 99% of the time waited, the median one
/// 16 µs in all): kept apart, they were most of a day's bytes.
fn rarer_stacks_folded(aggregated: &[(Box<[u8]>, Weight)], floor: u128) -> Vec<(Vec<u8>, Weight)> {
    let mut summed: HashMap<&[u8], Weight> = HashMap::new();
    for (stack, w) in aggregated {
        *summed.entry(&**stack).or_insert(Weight::ZERO) += *w;
    }
    let floor = Weight::from(u64::try_from(floor).unwrap_or(u64::MAX)).raw();
    let mut kept: Vec<(Vec<u8>, Weight)> = Vec::new();
    let mut folded: HashMap<Vec<u8>, Weight> = HashMap::new();
    for (stack, w) in summed {
        if w.raw() >= floor {
            kept.push((stack.to_vec(), w));
            continue;
        }
        let mut frames = stack.split(|&b| b == b';');
        let comm = frames.next().unwrap_or_default();
        let last = frames.next_back().filter(|f| f.starts_with(b"[") && f.ends_with(b"]"));
        let mut key = comm.to_vec();
        key.push(b';');
        key.extend_from_slice(RARER_STACKS.as_bytes());
        if let Some(last) = last {
            key.push(b';');
            key.extend_from_slice(last);
        }
        let e = folded.entry(key).or_insert(Weight::ZERO);
        *e += w;
    }
    kept.extend(folded);
    kept.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    kept
}

/// Adds a recording's samples (or, without per-sample records, its stacks) to `pending`.
fn add_recording(pending: &mut Pending, r: &Recording, clock: &record::WallClock) {
    if r.samples.is_empty() {
        for (stack, w) in r.stacks.iter() {
            pending.aggregated.push((stack.into(), w));
        }
        return;
    }
    for s in &r.samples {
        pending.push(r, s, clock.to_realtime_ns(s.ts));
    }
}

fn store_kind(k: CaptureKind) -> Kind {
    match k {
        CaptureKind::Cpu => Kind::Cpu,
        CaptureKind::OffCpu => Kind::OffCpu,
        CaptureKind::Mem => Kind::Mem,
        CaptureKind::Syscalls => Kind::Syscalls,
        CaptureKind::Blocked => Kind::Blocked,
    }
}

/// The unit and event of a capture kind (what its recorder reports in every window).
fn meta_of(k: CaptureKind) -> Meta {
    let (unit, event) = match k {
        CaptureKind::Cpu => (Unit::Samples, Some("cpu-clock")),
        CaptureKind::Mem => (Unit::Bytes, Some("kmem:mm_page_alloc")),
        CaptureKind::OffCpu => (Unit::Nanoseconds, Some("sched:sched_switch")),
        CaptureKind::Syscalls => (Unit::Nanoseconds, Some("raw_syscalls:sys_enter,sys_exit")),
        CaptureKind::Blocked => (Unit::Samples, None),
    };
    Meta { unit, event: event.map(str::to_string) }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A capture in progress, as the loop sees it.
struct Running {
    capture: Capture,
    kind: CaptureKind,
    start_ns: i64,
    pending: Option<Pending>,
}

/// The watcher: owns the store and the loop.
pub struct Watcher<S: Store> {
    settings: Settings,
    store: S,
    env: Environment,
    sampler: Sampler,
    evaluator: Evaluator,
    status: Status,
    /// Profile buckets being filled, by start and kind.
    buckets: BTreeMap<(i64, Kind), Pending>,
    /// Buckets that could not be written (disk full), oldest first.
    waiting: VecDeque<Pending>,
    disk_full: bool,
    dropped_buckets: u64,
    running: HashMap<CaptureId, Running>,
    tx: Sender<Message>,
    rx: Receiver<Message>,
    profile_meta: Meta,
    /// Rules that held without firing at the last evaluation, and why.
    held: HashMap<usize, &'static str>,
    /// When the log last said that a rule holds without firing, per rule and reason: said
    /// again only once the cooldown (or the hour of the budget) has passed, so that a
    /// condition that comes and goes during a cooldown is one line, not one per return.
    said_held: HashMap<(usize, &'static str), i64>,
    /// The programs of the always-on blocked time (off-CPU and lock profiles, every latency
    /// histogram but the system calls'), until the run starts them in a recorder.
    blocked: Vec<(Mode, Box<dyn Aggregator>)>,
    /// Where that recorder's histograms go for the metric reader; in the sampler once added.
    tap: Option<Tap>,
    /// Waits its programs could not count since the start, and when that was last said, per
    /// mode.
    blocked_lost: HashMap<&'static str, (u64, Option<std::time::Instant>)>,
    /// Outliers by the start of the bucket they fall in (wall-clock times) and family, each
    /// with its event name: the slowest of a bucket are stored when it ends.
    outliers: BTreeMap<(i64, LatencyKind), Vec<(record::Event, String)>>,
    /// Outliers stored per bucket and family, for the last few buckets: those that come after
    /// their bucket was stored (a window read late) fill it up to the bound, no more.
    outliers_stored: BTreeMap<(i64, LatencyKind), usize>,
}

impl<S: Store> Watcher<S> {
    /// A watcher with these settings writing to `store`.
    pub fn new(settings: Settings, store: S, env: Environment) -> Watcher<S> {
        let sampler = Sampler::new(&env.proc_root, Options { all_devices: settings.all_devices });
        let evaluator = Evaluator::new(settings.rules.clone(), settings.limits, env.ncpu);
        let (tx, rx) = channel();
        Watcher {
            settings,
            store,
            env,
            sampler,
            evaluator,
            status: Status::default(),
            buckets: BTreeMap::new(),
            waiting: VecDeque::new(),
            disk_full: false,
            dropped_buckets: 0,
            running: HashMap::new(),
            tx,
            rx,
            profile_meta: meta_of(CaptureKind::Cpu),
            held: HashMap::new(),
            said_held: HashMap::new(),
            blocked: Vec::new(),
            tap: None,
            blocked_lost: HashMap::new(),
            outliers: BTreeMap::new(),
            outliers_stored: BTreeMap::new(),
        }
    }

    /// Records the blocked time of `aggregators` all the time from the next run on (each
    /// already counting: the BPF programs of the off-CPU, lock, run-queue and block IO modes):
    /// their profiles (off-CPU and lock waits, when they take stacks) go into buckets of their
    /// kind beside the CPU profile's, their latency histograms into the metrics
    /// (`offcpu.*`, `lock.*`, `runq.*`, `bio.*`) and the store.
    pub fn set_blocked(&mut self, aggregators: Vec<(Mode, Box<dyn Aggregator>)>) {
        self.blocked = aggregators;
    }

    /// The store (for tests and for the program's last words).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Gives the store back.
    pub fn into_store(self) -> S {
        self.store
    }

    /// The recorder configuration of the always-on profile.
    pub fn profile_config(&self) -> Config {
        // Config::default() is every CPU, kernel and user stacks, no duty cycle.
        Config {
            modes: vec![Mode::Cpu { frequency: self.settings.rate }],
            call_graph: Some(self.settings.call_graph),
            keep_samples: true,
            ..Config::default()
        }
    }

    /// Runs until `stop` is set: then writes the last bucket, ends the captures in progress
    /// and returns (within about a second). `reload` set asks `control` for new settings.
    pub fn run(
        &mut self,
        stop: Arc<AtomicBool>,
        reload: Arc<AtomicBool>,
        control: &mut dyn Control,
    ) -> Result<Status, WatchError> {
        let started = Instant::now();
        // A kernel without perf events (or without the profile's event) leaves the rest to
        // record: metrics, PSI and kernel reports. Permissions are the user's to fix.
        let mut profile = match Recorder::start(&self.profile_config(), stop.clone()) {
            Ok(p) => Some(p),
            Err(e) if kernel_lacks_it(&e) => {
                control.log(
                    Level::Error,
                    &format!(
                        "cannot start the always-on CPU profile: {}; recording metrics, PSI and kernel \
                         reports without it",
                        kflame::diag::error_chain(&e)
                    ),
                );
                None
            }
            Err(e) => return Err(e.into()),
        };
        for note in profile.iter().flat_map(|p| p.notes()) {
            control.log(Level::Info, &format!("CPU profile: {note}"));
        }
        let kmsg = match self.settings.kmsg {
            false => None,
            true => match Follower::start(&self.env.kmsg) {
                Ok(f) => Some(f),
                Err(e) => {
                    control.log(Level::Warn, &e.to_string());
                    None
                }
            },
        };
        if !self.sampler.has_pressure() {
            control.log(
                Level::Info,
                &format!(
                    "this kernel has no /proc/pressure (PSI): psi.* metrics are not recorded{}",
                    if kflame::record::features::masked(kflame::record::features::Feature::Psi) {
                        format!(
                            " ({})",
                            kflame::record::features::masked_why(kflame::record::features::Feature::Psi)
                        )
                    } else {
                        String::new()
                    }
                ),
            );
        }
        // The always-on programs' histograms reach the metric reader through a tap, in place
        // before the reader starts; their recorder starts after it, so that its start-up
        // (naming every process) does not hold the metrics back.
        if !self.blocked.is_empty() && self.tap.is_none() {
            let tap = Tap::default();
            self.sampler.add_latency(Box::new(tap.clone()));
            self.tap = Some(tap);
        }
        for how in self.sampler.latency_descriptions() {
            control.log(Level::Info, &format!("latency metrics: {how}"));
        }
        for r in self.evaluator.rules() {
            control.log(Level::Info, &format!("trigger: {} (read as: {r})", r.text));
        }
        let tick = Duration::from_secs(1);
        let mut next_tick = started + tick;
        let mut next_maintain = started + Duration::from_secs(60);
        let mut last_maintain = started;
        self.metrics_tick(control); // the first read: rates from the next one on
        // Metrics are read on their own thread, once a second whatever the loop waits for
        // (a slow maintenance run, a full disk): readings queue and are stored in order.
        let options = Options { all_devices: self.settings.all_devices };
        let root = self.env.proc_root.clone();
        let fresh = move || Sampler::new(&root, Options { all_devices: options.all_devices });
        let sampler = std::mem::replace(&mut self.sampler, Sampler::new(&self.env.proc_root, options));
        let mut reader = MetricReader::start(sampler, started + tick, tick, fresh);
        let mut blocked = self.start_blocked(&stop, control);
        loop {
            let polled = match &mut profile {
                Some(p) => p.poll(Duration::from_millis(100)),
                None => {
                    // Nothing to wait on but the clock: the loop's own pace.
                    std::thread::sleep(Duration::from_millis(100));
                    Ok(RecStatus::Running)
                }
            };
            let ended = match polled {
                Ok(RecStatus::Running) => false,
                Ok(RecStatus::Ended(_)) => true,
                Err(e) => {
                    control.log(Level::Error, &format!("always-on profile: {e}"));
                    true
                }
            };
            self.drain_captures(control);
            if let Some(k) = &kmsg {
                while let Ok(r) = k.reports.try_recv() {
                    match r {
                        Ok(r) => self.report(&r, control),
                        Err(e) => {
                            control.log(Level::Warn, &format!("kernel reports are no longer read: {e}"))
                        }
                    }
                }
            }
            if reload.swap(false, Ordering::Relaxed) {
                self.reload(control);
            }
            let now = Instant::now();
            if ended || stop.load(Ordering::Relaxed) {
                break;
            }
            for (t, reading) in reader.readings() {
                self.store_reading(t, reading, true, control);
            }
            if let Some(b) = &mut blocked
                && let Err(e) = b.poll(Duration::ZERO)
            {
                control.log(Level::Error, &format!("always-on blocked time: {e}; no longer recorded"));
                blocked = None;
            }
            if now >= next_tick {
                if let Some(p) = &mut profile {
                    let w = p.take_window();
                    self.profile_window(&w);
                    self.status.lost += w.ring.lost;
                }
                if let Some(b) = &mut blocked {
                    let w = b.take_window();
                    self.blocked_window(&w, control);
                }
                self.flush_buckets(false, control);
                while next_tick <= now {
                    next_tick += tick;
                }
                self.status.elapsed = started.elapsed();
                self.status.capturing = self.running.values().map(|r| r.kind.name()).collect();
                control.status(&self.status);
            }
            // A full disk is freed by retention and the disk budget: maintenance then runs
            // every few seconds rather than once a minute.
            let due =
                if self.disk_full { next_maintain.min(last_maintain + FULL_MAINTAIN) } else { next_maintain };
            if now >= due {
                self.maintain(control);
                last_maintain = now;
                next_maintain = now + Duration::from_secs(60);
            }
        }
        // Stop: the readings taken, the rest of the profile, the captures' last windows,
        // every bucket.
        let (sampler, rest) = reader.stop();
        if let Some(sampler) = sampler {
            self.sampler = sampler;
        }
        for (t, reading) in rest {
            // Stored, but no capture starts now.
            self.store_reading(t, reading, false, control);
        }
        let u = match &mut profile {
            Some(p) => {
                let _ = p.stop();
                let w = p.take_window();
                self.profile_window(&w);
                p.caches().unwind
            }
            None => Default::default(),
        };
        if u.samples > 0 {
            control.log(
                Level::Info,
                &format!(
                    "CPU profile: {} user stacks unwound from stack copies, {} deeper than the copy, {} not \
                     unwound to their outermost frame; {} unwind tables read, {} damaged",
                    u.samples, u.copy_ended, u.cannot_unwind, u.tables_read, u.damaged_tables
                ),
            );
        }
        drop(profile);
        if let Some(mut b) = blocked.take() {
            let _ = b.stop();
            let w = b.take_window();
            self.blocked_window(&w, control);
        }
        for r in self.running.values() {
            r.capture.stop();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while !self.running.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            self.drain_captures(control);
        }
        // A capture whose last window is still being named: what came is stored, and the
        // capture ends here rather than staying open in the database.
        let late: Vec<CaptureId> = self.running.keys().copied().collect();
        for id in late {
            let Some(mut run) = self.running.remove(&id) else { continue };
            let end = now_ns();
            if let Some(mut p) = run.pending.take() {
                p.end_ns = end.max(p.start_ns);
                if let Err(e) = p.write(&mut self.store, &self.settings.host) {
                    self.store_error("capture", &e, control);
                }
            }
            let note = "stopped; its last window was not ready in time";
            if let Err(e) = self.store.end_capture(id, end, note) {
                self.store_error("capture", &e, control);
            }
            control.log(Level::Warn, &format!("{} capture {note}", run.kind.name()));
            run.capture.detach();
        }
        self.flush_buckets(true, control);
        drop(kmsg);
        self.status.elapsed = started.elapsed();
        if self.dropped_buckets > 0 {
            control.log(
                Level::Warn,
                &format!("{} profile buckets were dropped while the disk was full", self.dropped_buckets),
            );
        }
        Ok(self.status.clone())
    }

    fn reload(&mut self, control: &mut dyn Control) {
        match control.reload() {
            None => {}
            Some(Err(e)) => {
                control.log(Level::Error, &format!("reload refused, keeping the running configuration: {e}"))
            }
            Some(Ok(new)) => {
                if new.db != self.settings.db {
                    control.log(
                        Level::Warn,
                        &format!(
                            "reload: the database stays {} (a new path takes a restart)",
                            self.settings.db.display()
                        ),
                    );
                }
                if new.rate != self.settings.rate || new.call_graph != self.settings.call_graph {
                    control.log(
                        Level::Warn,
                        "reload: the profile rate and call graph take a restart; keeping the running ones",
                    );
                }
                self.evaluator.reload(new.rules.clone(), new.limits);
                self.held.clear(); // rule indices change with the rules
                self.said_held.clear();
                let db = self.settings.db.clone();
                let (rate, call_graph) = (self.settings.rate, self.settings.call_graph);
                self.settings = Settings { db, rate, call_graph, ..new };
                control
                    .log(Level::Info, &format!("configuration reloaded: {}", self.settings.rules_summary()));
            }
        }
    }

    fn metrics_tick(&mut self, control: &mut dyn Control) {
        let reading = self.sampler.read();
        self.store_reading(now_ns(), reading, true, control);
    }

    /// Stores a reading taken at `now` (wall clock) and, when `evaluate`, feeds it to the
    /// triggers.
    fn store_reading(&mut self, now: i64, reading: Reading, evaluate: bool, control: &mut dyn Control) {
        for p in &reading.problems {
            control.log(Level::Warn, &p.to_string());
        }
        // Latency percentiles, maxima and rates are read back from the histograms stored below.
        let metrics: Vec<Metric<'_>> = reading
            .values
            .iter()
            .filter(|v| derived::derived(v.name).is_none())
            .map(|v| Metric { name: v.name, label: &v.label, value: v.value })
            .collect();
        if !metrics.is_empty()
            && let Err(e) = self.store.append_metrics(&self.settings.host, now, &metrics)
        {
            self.store_error("metrics", &e, control);
        }
        let histograms = reading.latency_rows();
        if !histograms.is_empty()
            && let Err(e) = self.store.append_latency(&self.settings.host, now, &histograms)
        {
            self.store_error("latency histograms", &e, control);
        }
        self.status.cpu = reading.get("cpu", "");
        self.status.mem_available = reading.get("mem.available", "");
        if evaluate {
            let (fired, held) = self.evaluator.push(now, &reading.values);
            self.fire(now, fired, held, control);
        }
    }

    fn report(&mut self, r: &KernelReport, control: &mut dyn Control) {
        control.log(Level::Warn, &format!("kernel report: {}", r.title));
        let row = StoredReport {
            host: &self.settings.host,
            time_ns: r.time_ns,
            kind: r.kind,
            title: &r.title,
            stack: &r.stack,
            text: &r.text,
        };
        match self.store.append_report(&row) {
            Ok(()) => self.status.reports += 1,
            Err(e) => self.store_error("kernel report", &e, control),
        }
        let (fired, held) = self.evaluator.report(r.time_ns, r.kind);
        self.fire(r.time_ns, fired, held, control);
    }

    fn fire(&mut self, now: i64, fired: Vec<Fired>, held: Vec<Held>, control: &mut dyn Control) {
        // Said once per rule and reason, not every second it holds.
        let mut now_held = HashMap::new();
        for h in held {
            let (i, why, quiet) = match h {
                Held::Cooldown { rule } => (rule, "in its cooldown", self.settings.limits.cooldown),
                Held::Budget { rule } => {
                    (rule, "the budget of triggers per hour is spent", Duration::from_secs(3600))
                }
            };
            now_held.insert(i, why);
            let quiet_ns = i64::try_from(quiet.as_nanos()).unwrap_or(i64::MAX);
            let said_lately =
                self.said_held.get(&(i, why)).is_some_and(|&t| now.saturating_sub(t) < quiet_ns);
            if self.held.get(&i) != Some(&why)
                && !said_lately
                && let Some(r) = self.evaluator.rules().get(i)
            {
                control.log(Level::Info, &format!("`{}` holds but does not fire: {why}", r.text));
                self.said_held.insert((i, why), now);
            }
        }
        if !fired.is_empty()
            || now_held.len() != self.held.len()
            || now_held.keys().any(|k| !self.held.contains_key(k))
        {
            self.held = now_held;
        }
        for f in fired {
            let Some(rule) = self.evaluator.rules().get(f.rule).cloned() else { continue };
            self.status.triggers += 1;
            let t = TriggerFired {
                host: &self.settings.host,
                time_ns: now,
                rule: &rule.text,
                metric: &f.metric,
                value: f.value,
                threshold: f.threshold,
            };
            let trigger = match self.store.append_trigger(&t) {
                Ok(id) => Some(id),
                Err(e) => {
                    self.store_error("trigger", &e, control);
                    None
                }
            };
            if self.running.values().any(|r| r.kind == rule.capture) {
                control.log(
                    Level::Info,
                    &format!(
                        "`{}` fired ({} = {:.1}); a {} capture is already running",
                        rule.text,
                        f.metric,
                        f.value,
                        rule.capture.name()
                    ),
                );
                continue;
            }
            let meta = meta_of(rule.capture);
            let start = CaptureStart {
                host: &self.settings.host,
                kind: store_kind(rule.capture),
                start_ns: now,
                trigger,
                meta: &meta,
            };
            let id = match self.store.begin_capture(&start) {
                Ok(id) => id,
                Err(e) => {
                    self.store_error("capture", &e, control);
                    continue;
                }
            };
            match Capture::start(id, rule.capture, rule.length, self.tx.clone()) {
                Ok(c) => {
                    control.log(
                        Level::Info,
                        &format!(
                            "`{}` fired ({} = {:.1}, threshold {}): capturing {} for {} s",
                            rule.text,
                            f.metric,
                            f.value,
                            f.threshold,
                            rule.capture.name(),
                            rule.length.as_secs()
                        ),
                    );
                    self.running
                        .insert(id, Running { capture: c, kind: rule.capture, start_ns: now, pending: None });
                }
                Err(e) => {
                    control.log(
                        Level::Warn,
                        &format!("`{}` fired but its capture failed to start: {e}", rule.text),
                    );
                    let _ = self.store.end_capture(id, now, &format!("not started: {e}"));
                }
            }
        }
    }

    fn drain_captures(&mut self, control: &mut dyn Control) {
        while let Ok(m) = self.rx.try_recv() {
            match m {
                Message::Window { id, kind, window } => {
                    let Some(run) = self.running.get_mut(&id) else { continue };
                    let pending = run.pending.get_or_insert_with(|| {
                        Pending::new(run.start_ns, run.start_ns, store_kind(kind), Some(id), meta_of(kind))
                    });
                    for r in &window.kinds {
                        pending.meta = r.meta.clone();
                        add_recording(pending, r, &window.clock);
                    }
                    for r in window.kinds.iter().filter(|r| !r.events.is_empty()) {
                        let name = r.meta.event.as_deref().unwrap_or("");
                        // The store keeps event times as UTC: the window's clock converts them.
                        let records: Vec<_> = r
                            .events
                            .iter()
                            .map(|e| {
                                let mut rec = e.record(name);
                                rec.ts_ns = rec
                                    .ts_ns
                                    .map(|t| u64::try_from(window.clock.to_realtime_ns(t)).unwrap_or(0));
                                rec
                            })
                            .collect();
                        if let Err(e) = self.store.append_events(id, &records) {
                            self.store_error("capture events", &e, control);
                        }
                    }
                }
                Message::Done { id, kind, note } => {
                    let Some(mut run) = self.running.remove(&id) else { continue };
                    let end = now_ns();
                    if let Some(mut p) = run.pending.take() {
                        p.end_ns = end.max(p.start_ns);
                        if let Err(e) = p.write(&mut self.store, &self.settings.host) {
                            self.store_error("capture", &e, control);
                        }
                    }
                    if let Err(e) = self.store.end_capture(id, end, &note) {
                        self.store_error("capture", &e, control);
                    }
                    let extra = if note.is_empty() { String::new() } else { format!(" ({note})") };
                    control.log(Level::Info, &format!("{} capture ended{extra}", kind.name()));
                    run.capture.join();
                }
            }
        }
    }

    /// Starts the recorder of the always-on blocked time, when there are programs for it.
    fn start_blocked(&mut self, stop: &Arc<AtomicBool>, control: &mut dyn Control) -> Option<Recorder> {
        let aggregators = std::mem::take(&mut self.blocked);
        if aggregators.is_empty() {
            return None;
        }
        let modes: Vec<Mode> = aggregators.iter().map(|(m, _)| m.clone()).collect();
        let names: Vec<&str> = modes.iter().map(Mode::name).collect();
        // What each program takes, and what it goes without on this kernel.
        let described: Vec<String> =
            aggregators.iter().map(|(m, a)| format!("always-on {}: {}", m.name(), a.describe())).collect();
        let config = Config { modes: modes.clone(), ..Config::default() };
        match Recorder::start_with(&config, stop.clone(), aggregators) {
            Ok(r) => {
                control.log(
                    Level::Info,
                    &format!("always-on blocked time ({}), summed in the kernel by BPF", names.join(", ")),
                );
                for line in &described {
                    control.log(Level::Info, line);
                }
                Some(r)
            }
            Err(e) => {
                control.log(
                    Level::Warn,
                    &format!("the always-on blocked time is not recorded: {}", kflame::diag::error_chain(&e)),
                );
                None
            }
        }
    }

    /// A window of the always-on blocked time: histograms to the metric reader, off-CPU and
    /// lock stacks into buckets of their kind (stamped with the window's end: they are sums
    /// over it, without a time of their own), what the kernel could not count to the log.
    fn blocked_window(&mut self, w: &record::Window, control: &mut dyn Control) {
        // Taken just now: the window ends now.
        let end = now_ns();
        let b = self.bucket_ns();
        for r in &w.kinds {
            if let Some(tap) = &self.tap {
                tap.put(r.histograms.clone());
            }
            let family = match r.mode {
                Mode::Syscalls => Some(LatencyKind::Syscall),
                Mode::OffCpu(_) => Some(LatencyKind::OffCpu),
                Mode::Locks => Some(LatencyKind::Lock),
                Mode::Runq => Some(LatencyKind::Runq),
                Mode::Bio => Some(LatencyKind::Bio),
                _ => None,
            };
            if let Some(family) = family
                && !r.events.is_empty()
            {
                self.hold_outliers(family, r, &w.clock);
            }
            // Since the last window: said when it begins, summed up at the end.
            if r.stats.detached_secs > 0 {
                let mode = r.mode.name();
                match self.status.detached.iter_mut().find(|(m, _)| *m == mode) {
                    Some(d) => d.1 += r.stats.detached_secs,
                    None => {
                        control.log(
                            Level::Info,
                            &format!(
                                "always-on {mode}: its programs cost more than their share of the CPU budget \
                                 (--program-budget): detached for part of each minute, their histograms and \
                                 outliers missing then"
                            ),
                        );
                        self.status.detached.push((mode, r.stats.detached_secs));
                    }
                }
            }
            // Counted per window: summed, and said when it happens, at most once a minute.
            if r.stats.lost > 0 {
                let (total, said) = self.blocked_lost.entry(r.mode.name()).or_insert((0, None));
                *total += r.stats.lost;
                if said.is_none_or(|at: std::time::Instant| at.elapsed() >= LOSS_LOG_EVERY) {
                    control.log(
                        Level::Warn,
                        &format!(
                            "always-on {}: {} waits the kernel could not count (a full map) in the last \
                             window, {} since the start",
                            r.mode.name(),
                            r.stats.lost,
                            total
                        ),
                    );
                    *said = Some(std::time::Instant::now());
                }
            }
            let kind = match r.mode {
                Mode::OffCpu(_) => Kind::OffCpu,
                Mode::Locks => Kind::Locks,
                _ => continue,
            };
            if r.stacks.is_empty() {
                continue;
            }
            // The window ends inside the bucket that holds its last instant.
            let t = end - 1;
            let start = t - t.rem_euclid(b);
            let p = self
                .buckets
                .entry((start, kind))
                .or_insert_with(|| Pending::new(start, start + b, kind, None, r.meta.clone()));
            for (stack, weight) in r.stacks.iter() {
                p.aggregated.push((stack.into(), weight));
            }
        }
    }

    /// Holds the outliers of a window of `kind` (each slow call or wait with its time, its
    /// duration, task, CPU and stack: its label (the call's name, the lock's kind, the disk,
    /// the CPU, the task state), the task, its user frames, where it waited; named
    /// `FAMILY:LABEL`, `syscall:write`) until their bucket ends.
    fn hold_outliers(&mut self, kind: LatencyKind, r: &Recording, clock: &record::WallClock) {
        let b = self.bucket_ns();
        for e in &r.events {
            let mut e = e.clone();
            let t = clock.to_realtime_ns(e.ts);
            e.ts = u64::try_from(t).unwrap_or(0);
            let name = format!("{}:{}", kind.as_str(), e.stack.first().map_or("", String::as_str));
            self.outliers.entry((t - t.rem_euclid(b), kind)).or_default().push((e, name));
        }
    }

    /// Stores the slowest `outliers` of each family in each bucket that is over (in every
    /// bucket with `all`), in time order; the others are counted.
    fn store_outliers(&mut self, all: bool, horizon: i64, control: &mut dyn Control) {
        let b = self.bucket_ns();
        let done: Vec<(i64, LatencyKind)> =
            self.outliers.keys().copied().filter(|&(start, _)| all || start + b <= horizon).collect();
        // Counts of buckets long over are not needed any more.
        let recent = horizon - 6 * b;
        self.outliers_stored.retain(|&(start, _), _| start >= recent);
        for key in done {
            let Some(mut held) = self.outliers.remove(&key) else { continue };
            held.sort_by_key(|(e, _)| std::cmp::Reverse(e.duration_ns));
            let stored = self.outliers_stored.entry(key).or_insert(0);
            let keep = (self.settings.outliers as usize).saturating_sub(*stored).min(held.len());
            *stored += keep;
            self.status.outliers_left += (held.len() - keep) as u64;
            held.truncate(keep);
            held.sort_by_key(|(e, _)| e.ts);
            let records: Vec<_> = held.iter().map(|(e, name)| e.record(name)).collect();
            match self.store.append_outliers(&self.settings.host, key.1, &records) {
                Ok(()) => self.status.outliers += records.len() as u64,
                Err(e) => self.store_error(&format!("{} outliers", key.1.as_str()), &e, control),
            }
        }
    }

    fn bucket_ns(&self) -> i64 {
        i64::try_from(self.settings.bucket.as_nanos()).unwrap_or(10_000_000_000)
    }

    fn profile_window(&mut self, w: &record::Window) {
        let Some(r) = w.kinds.first() else { return };
        self.profile_meta = r.meta.clone();
        let b = self.bucket_ns();
        for s in &r.samples {
            let t = w.clock.to_realtime_ns(s.ts);
            let start = t - t.rem_euclid(b);
            let meta = self.profile_meta.clone();
            let p = self
                .buckets
                .entry((start, Kind::Cpu))
                .or_insert_with(|| Pending::new(start, start + b, Kind::Cpu, None, meta));
            p.push(r, s, t);
        }
    }

    /// Writes the buckets that are over (all of them with `all`), and those waiting for disk
    /// space first.
    fn flush_buckets(&mut self, all: bool, control: &mut dyn Control) {
        // A bucket is written once a window taken after its end has been read (this is
        // called right after taking one). A sample the recorder held back for time order
        // and hands over in a later window goes into a second bucket of the same range.
        let horizon = now_ns() - 100_000_000;
        self.store_outliers(all, horizon, control);
        let done: Vec<(i64, Kind)> =
            self.buckets.iter().filter(|(_, p)| all || p.end_ns <= horizon).map(|(k, _)| *k).collect();
        for k in done {
            if let Some(p) = self.buckets.remove(&k) {
                self.waiting.push_back(p);
            }
        }
        while let Some(p) = self.waiting.front() {
            match p.write(&mut self.store, &self.settings.host) {
                Ok(n) => {
                    self.status.samples += n;
                    self.status.buckets += u64::from(p.kind == Kind::Cpu);
                    self.waiting.pop_front();
                    if self.disk_full {
                        self.disk_full = false;
                        control.log(Level::Warn, "the database takes writes again: storing resumed");
                    }
                }
                Err(e) if e.is_disk_full() => {
                    if !self.disk_full {
                        self.disk_full = true;
                        control.log(Level::Error, &format!("profile bucket not stored: {e}; {FULL_NOTE}"));
                    }
                    while self.waiting.len() > MAX_WAITING {
                        self.waiting.pop_front();
                        self.dropped_buckets += 1;
                    }
                    break;
                }
                Err(e) => {
                    control.log(Level::Error, &format!("profile bucket not stored: {e}"));
                    self.waiting.pop_front();
                    self.dropped_buckets += 1;
                }
            }
        }
        self.status.waiting_buckets = self.waiting.len();
        // A remote store's word on itself (gone, spooling, back).
        for note in self.store.notes() {
            control.log(Level::Warn, &note);
        }
        if all {
            // Metric values the store buffers until their block ends (the CLI makes a block
            // one bucket long: a kill -9 loses the bucket in progress, no more).
            if let Err(e) = self.store.flush() {
                self.store_error("metrics", &e, control);
            }
        }
    }

    fn maintain(&mut self, control: &mut dyn Control) {
        let policy = Policy {
            retain_ns: Some(i64::try_from(self.settings.retain.as_nanos()).unwrap_or(i64::MAX)),
            downsample_after_ns: Some(DOWNSAMPLE_AFTER_NS),
            max_bytes: (self.settings.disk_budget > 0).then_some(self.settings.disk_budget),
            ..Policy::new(now_ns())
        };
        match self.store.maintain(&policy) {
            // While the disk is full, what made room is worth a warning (a run that freed
            // nothing, every few seconds, is not).
            Ok(m) => control.log(
                match self.disk_full
                    && (m.expired_rows > 0 || m.budget_rows > 0 || m.bytes_after < m.bytes_before)
                {
                    true => Level::Warn,
                    false => Level::Debug,
                },
                &format!(
                    "database maintenance: {} rows expired, {} buckets downsampled, {} rows over the disk \
                     budget, {} outlier rows and {} latency and metric rows folded, {} -> {} bytes",
                    m.expired_rows,
                    m.downsampled_buckets,
                    m.budget_rows,
                    m.folded_event_rows,
                    m.folded_hour_rows,
                    m.bytes_before,
                    m.bytes_after
                ),
            ),
            Err(e) => control.log(Level::Warn, &format!("database maintenance: {e}")),
        }
    }

    fn store_error(&mut self, what: &str, e: &StoreError, control: &mut dyn Control) {
        match e {
            e if e.is_disk_full() && self.disk_full => {}
            e if e.is_disk_full() => {
                self.disk_full = true;
                control.log(Level::Error, &format!("{what} not stored: {e}; {FULL_NOTE}"));
            }
            _ => control.log(Level::Error, &format!("{what} not stored: {e}")),
        }
    }
}

/// The capture configuration of a kind (re-exported for `--check` and tests).
pub fn capture_config(kind: CaptureKind, length: Duration) -> Config {
    capture::config(kind, length)
}

/// The thread that reads the metrics once a second and queues the readings.
struct MetricReader {
    stop: Arc<AtomicBool>,
    rx: std::sync::mpsc::Receiver<(i64, Reading)>,
    handle: Option<std::thread::JoinHandle<Sampler>>,
    /// Where no thread could be started: the sampler, read by the loop itself when due.
    inline: Option<(Sampler, Instant)>,
    tick: Duration,
}

/// Readings queued at most (an hour): past that the reader waits for the loop.
const QUEUED_READINGS: usize = 3600;

impl MetricReader {
    /// Reads with `sampler` at `first`, then every `tick`; `fresh` makes a sampler should
    /// the thread not start (its first reading then has no rates).
    fn start(
        sampler: Sampler,
        first: Instant,
        tick: Duration,
        fresh: impl FnOnce() -> Sampler,
    ) -> MetricReader {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUED_READINGS);
        let flag = stop.clone();
        let mut sampler = sampler;
        let spawned = std::thread::Builder::new().name("kflame-metrics".into()).spawn(move || {
            let mut next = first;
            while !flag.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now < next {
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                    continue;
                }
                let reading = sampler.read();
                if tx.send((now_ns(), reading)).is_err() {
                    break;
                }
                while next <= Instant::now() {
                    next += tick;
                }
            }
            sampler
        });
        match spawned {
            Ok(h) => MetricReader { stop, rx, handle: Some(h), inline: None, tick },
            Err(_) => MetricReader { stop, rx, handle: None, inline: Some((fresh(), first)), tick },
        }
    }

    /// The readings taken since the last call, oldest first.
    fn readings(&mut self) -> Vec<(i64, Reading)> {
        if let Some((sampler, next)) = &mut self.inline {
            let now = Instant::now();
            if now < *next {
                return Vec::new();
            }
            while *next <= now {
                *next += self.tick;
            }
            return vec![(now_ns(), sampler.read())];
        }
        self.rx.try_iter().collect()
    }

    /// Stops the thread; the sampler back and the readings left.
    fn stop(mut self) -> (Option<Sampler>, Vec<(i64, Reading)>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut rest: Vec<(i64, Reading)> = Vec::new();
        let Some(h) = self.handle.take() else {
            return (self.inline.take().map(|(s, _)| s), rest);
        };
        // The thread may wait on a full queue: empty it while it ends.
        while !h.is_finished() {
            rest.extend(self.rx.try_iter());
            std::thread::sleep(Duration::from_millis(5));
        }
        let sampler = h.join().ok();
        rest.extend(self.rx.try_iter());
        (sampler, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stacks summed; those under the floor folded per task, with the lock's kind when the
    /// stack ends with it; no weight lost.
    #[test]
    fn rarer_blocked_stacks_fold_per_task() {
        let w = |n: u64| Weight::from(n);
        let s = |t: &str| -> Box<[u8]> { t.as_bytes().into() };
        let aggregated = vec![
            (s("db;main;lock;[rwsem:W]"), w(600_000)),
            (s("db;main;lock;[rwsem:W]"), w(399_000)),
            (s("db;a;b;[spinlock]"), w(400)),
            (s("db;c;[spinlock]"), w(300)),
            (s("db;d;schedule"), w(200)),
            (s("sh;e;[spinlock]"), w(100)),
        ];
        let folded = rarer_stacks_folded(&aggregated, 1000);
        let got: Vec<(&str, u64)> =
            folded.iter().map(|(k, w)| (std::str::from_utf8(k).unwrap(), w.whole())).collect();
        assert_eq!(
            got,
            [
                ("db;[rarer stacks]", 200),
                ("db;[rarer stacks];[spinlock]", 700),
                ("db;main;lock;[rwsem:W]", 999_000),
                ("sh;[rarer stacks];[spinlock]", 100),
            ]
        );
        assert!(rarer_stacks_folded(&[], 1000).is_empty());
    }
}
