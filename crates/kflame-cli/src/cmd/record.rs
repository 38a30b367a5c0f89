//! `kflame record`: record live with perf_event_open, tracepoints or /proc, then write folded
//! stacks, JSON events or a graph.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kflame::record::{
    self, CommandEnd, Config, DutyCycle, Mode, Naming, Progress, Recorder, Recording, Recordings, StackParts,
    Status, Target,
};

use crate::cmd::Exit;
use crate::output;

mod sink;

/// Arguments of `kflame record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples (as root):
  kflame record -F 99 -d 10 -o cpu.folded       # every CPU for 10 s
  kflame record -p 1234 -d 5 -o app.json        # one process, JSON lines
  kflame record -t 1240 -d 5 -o thread.folded   # one thread of it
  kflame record -o make.folded -- make -j2      # a command and its children
  kflame record -a -o all.folded -- sleep 10    # everything, while it runs
  kflame record --mem --every 60 --for 5 -o mem.folded
  kflame record --off-cpu -d 5 -o offcpu.folded
  # Who woke each blocked task (bcc offwaketime's layout, `--` between):
  kflame record --off-cpu --wakers -d 5 -o wakers.svg
  # Uninterruptible waits of 1 ms or more only:
  kflame record --off-cpu --state D --min-block 1ms -d 10 -o d.folded
  kflame record --syscalls -p 1234 -d 5 -o syscalls.folded
  # Every task's kernel stack, D state first; a snapshot every 0.5 s, summed:
  kflame record --blocked -o blocked.folded
  kflame record --blocked --every 0.5 -d 30 -o b.svg
  # One session, a file per mode: stall.cpu.html, stall.mem.html, ...:
  kflame record --cpu --mem --off-cpu -d 10 -o stall.html
  # Lock contention, run-queue and block IO latency (BPF), a file each:
  kflame record --locks --runq --bio -d 10 -o waits.svg
  kflame record --check                         # what this kernel allows")]
pub(crate) struct Args {
    /// Command to start and record with its children until it exits (after `--`).
    #[arg(value_name = "COMMAND", last = true)]
    command: Vec<OsString>,

    /// Samples per second and per CPU for CPU profiles (any value, e.g. 99 or 997) [default: 99].
    #[arg(short = 'F', long = "freq", value_name = "HZ",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    frequency: Option<u32>,

    /// Record every task on every CPU (the default without -p or a command; with a command,
    /// record everything until the command exits, like `perf record -a -- sleep 10`).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "pid")]
    all_cpus: bool,

    /// Record these processes (every thread, and the threads and children they start);
    /// repeat or separate by commas. A thread id stands for its process, as with perf.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pid: Vec<u32>,

    /// Record these threads only (not the threads or children they start), as `perf record
    /// -t`; repeat or separate by commas.
    #[arg(short = 't', long = "tid", value_name = "TID", value_delimiter = ',',
          conflicts_with_all = ["pid", "all_cpus"])]
    tid: Vec<u32>,

    /// Stop after this many seconds (default: until Ctrl-C, or until the command exits).
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = super::parse_seconds)]
    duration: Option<Duration>,

    /// Keep only kernel frames (CPU samples taken in user mode are dropped).
    #[arg(long, conflicts_with = "user_only")]
    kernel_only: bool,

    /// Keep only user frames (CPU samples taken in kernel mode are dropped).
    #[arg(long)]
    user_only: bool,

    /// How user stacks are found, as perf's --call-graph: `dwarf` copies 8 KiB of user stack
    /// with each sample (`dwarf,SIZE`: SIZE bytes, up to 65528) and unwinds it with the
    /// binaries' unwind tables (.eh_frame, .debug_frame, separate debug files), right for
    /// binaries built without frame pointers (most distributions' packages); `fp` walks frame
    /// pointers, cheaper, but loses the callers in such binaries. Default: dwarf for CPU
    /// samples, fp for tracepoint modes (--mem, --off-cpu, --syscalls: events that can fire
    /// a million times a second). Stacks taken by BPF (--off-cpu via bpf, --locks, --runq,
    /// --bio) always walk frame pointers.
    #[arg(long, value_name = "fp|dwarf[,SIZE]", value_parser = kflame::record::CallGraph::parse)]
    call_graph: Option<kflame::record::CallGraph>,

    /// Record CPU samples (cpu-clock at -F Hz): the default when no other mode is given; name
    /// it to record it together with others. Several modes record in one session, each into
    /// its own output (-o NAME.EXT gives NAME.cpu.EXT, NAME.mem.EXT, NAME.offcpu.EXT, ...).
    #[arg(long, help_heading = "Modes")]
    cpu: bool,

    /// Record page allocations (kmem:mm_page_alloc), weighted by bytes.
    #[arg(long, help_heading = "Modes")]
    mem: bool,

    /// With --mem: also record kmalloc (kmem:kmalloc, bytes_alloc).
    #[arg(long, help_heading = "Modes", requires = "mem")]
    kmalloc: bool,

    /// With --for, a duty cycle: record `--for` seconds at the start of each period of this
    /// many seconds (CPU and --mem; the paired modes --off-cpu and --syscalls refuse it).
    /// With --blocked: a snapshot every this many seconds (at the start of each period).
    #[arg(long, value_name = "SECONDS", value_parser = super::parse_seconds, help_heading = "Modes")]
    every: Option<Duration>,

    /// Duty cycle: seconds recorded at the start of each `--every` period.
    #[arg(long = "for", id = "active", value_name = "SECONDS", value_parser = super::parse_seconds,
          requires = "every", help_heading = "Modes")]
    active: Option<Duration>,

    /// Record time blocked off-CPU per stack, in nanoseconds: from a task leaving the CPU
    /// asleep (states S, D, I) to its switch back in. Summed in the kernel by BPF where this
    /// kernel allows it (cheap), else from sched:sched_switch samples with callchains paired
    /// with context-switch records (costly under many switches); the first line says which.
    /// Kernel threads waiting for work are left out (see --idle-kthreads).
    #[arg(long, help_heading = "Modes")]
    off_cpu: bool,

    /// With --off-cpu: fold each block with the stack of the task that woke it, after a `--`
    /// frame (bcc offwaketime's layout: blocked task's name and stack root first, `--`, the
    /// waker's stack leaf first, the waker's name). Needs BPF.
    #[arg(long, requires = "off_cpu", help_heading = "Off-CPU")]
    wakers: bool,

    /// With --off-cpu: only blocks begun in these states (letters as ps prints them): D for
    /// uninterruptible waits (disk, locks), S for sleeps, I for idle kernel threads, SD...
    #[arg(long, value_name = "STATES", requires = "off_cpu", help_heading = "Off-CPU",
          value_parser = record::TaskStates::parse)]
    state: Option<record::TaskStates>,

    /// With --off-cpu: leave out blocks shorter than this (e.g. 1ms, 250us, 0.5s).
    #[arg(long, value_name = "DURATION", requires = "off_cpu", help_heading = "Off-CPU",
          value_parser = parse_span)]
    min_block: Option<Duration>,

    /// With --off-cpu: also count kernel threads waiting for work (asleep in S or I: idle
    /// kworkers, ksoftirqd, journal threads between commits), left out by default.
    #[arg(long, requires = "off_cpu", help_heading = "Off-CPU")]
    idle_kthreads: bool,

    /// How --off-cpu records: `bpf` (summed in the kernel), `perf` (perf events, paired
    /// here), `auto` (bpf, else perf, saying why; perf for JSON events and flame charts,
    /// which want each block). --locks, --runq and --bio always record through BPF.
    #[arg(long, value_enum, value_name = "PATH", default_value = "auto", help_heading = "Off-CPU")]
    via: Via,

    /// Record system call latency (raw_syscalls enter/exit) per call and stack, in ns.
    #[arg(long, help_heading = "Modes")]
    syscalls: bool,

    /// Record kernel lock contention (lock:contention_begin to _end) by the waiter's stack,
    /// in ns waited, the lock's kind as the leaf frame ([mutex], [rwsem:W], [spinlock], ...),
    /// as `perf lock contention` names them. Summed in the kernel by BPF (needs it).
    #[arg(long, help_heading = "Modes")]
    locks: bool,

    /// Record run-queue latency: time runnable but not running (from a wakeup or a
    /// preemption to the switch in), per task and the stack it ran again with, in ns; the
    /// JSON output ends with a latency histogram per CPU (as runqlat's, in finer buckets).
    /// Needs BPF.
    #[arg(long, help_heading = "Modes")]
    runq: bool,

    /// Record block IO latency (issue to completion) by disk (the root frame) and by the
    /// stack that submitted the IO, taken in the submitter's context (not the kworker's
    /// that issues it), in ns. Needs BPF.
    #[arg(long, help_heading = "Modes")]
    bio: bool,

    /// Snapshot every task's kernel stack from /proc, grouped by state (D first). Alone: one
    /// snapshot at once, or one every --every seconds until -d, Ctrl-C or the command's end,
    /// aggregated. With other modes: one when recording stops, or one every --every seconds;
    /// always of every task.
    #[arg(long, help_heading = "Modes")]
    blocked: bool,

    /// Print what this kernel allows (events, tracepoints, /proc) and exit.
    #[arg(long, help_heading = "Modes",
          conflicts_with_all = ["cpu", "mem", "off_cpu", "syscalls", "locks", "runq", "bio", "blocked"])]
    check: bool,

    /// Output file, created before recording starts; its extension says the format:
    /// `.folded` (also without extension, and on stdout), `.json` (one line per event),
    /// `.svg`, `.html`. Other extensions are refused unless --format says which. With several
    /// modes, one file per mode: NAME.EXT gives NAME.cpu.EXT, NAME.mem.EXT, ...
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    output: Option<PathBuf>,

    /// Output format, whatever the file name: folded, json, svg or html.
    #[arg(long, value_enum, value_name = "FORMAT", help_heading = "Output")]
    format: Option<sink::Kind>,

    /// Graph style (`.svg`/`.html`): `flame` or `icicle` (root at the top).
    #[arg(long, value_name = "STYLE", default_value = "flame", help_heading = "Output")]
    style: sink::Style,

    /// Graph type (`.svg`/`.html`): `graph` (merged stacks) or `chart` (time order).
    #[arg(long = "type", value_name = "TYPE", default_value = "graph", help_heading = "Output")]
    graph_type: sink::GraphType,

    /// Graph title (`.svg`/`.html`).
    #[arg(long, value_name = "TEXT", help_heading = "Output")]
    title: Option<String>,

    /// Root frame `comm-PID`.
    #[arg(long, help_heading = "Output")]
    include_pid: bool,

    /// Root frame `comm-PID/TID`.
    #[arg(long, help_heading = "Output")]
    include_tid: bool,

    /// A `cpu-N` frame above the task name.
    #[arg(long, help_heading = "Output")]
    include_cpu: bool,

    /// Append `_[k]` to kernel function names.
    #[arg(long, help_heading = "Output")]
    annotate_kernel: bool,
}

/// How the modes that BPF can serve are recorded.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// BPF where the kernel allows it, else perf events (saying why).
    Auto,
    /// BPF only: refused where the kernel refuses it.
    Bpf,
    /// perf events only.
    Perf,
}

/// A duration with a unit (`1ms`, `250us`, `0.5s`).
fn parse_span(s: &str) -> Result<Duration, String> {
    kflame_store::time::parse_span(s)
        .map_err(|e| format!("`{s}`: {e} (a duration with its unit: 250us, 1ms, 0.5s)"))
}

/// What loading kflame's BPF programs takes.
const BPF_NEEDS: &str = "; it takes root, or CAP_BPF with CAP_PERFMON, and a kernel with BTF";

/// Starts the aggregators (BPF) for the modes that can use one, and says on stderr which
/// path each mode records through and why. A mode BPF alone serves, refused here, is an
/// error; one with a perf path falls back to it (unless `--via bpf`).
fn aggregators(config: &Config, via: Via) -> Result<Vec<(Mode, Box<dyn record::Aggregator>)>> {
    let mut out = Vec::new();
    if config.duty.is_some() {
        return Ok(out); // summed in the kernel: no duty cycle (the recorder says why)
    }
    for mode in &config.modes {
        let perf_path = match mode {
            Mode::OffCpu(o) => (!o.wakers).then_some(
                "through perf events (sched:sched_switch samples with callchains, paired here: costly under many switches)",
            ),
            Mode::Locks | Mode::Runq | Mode::Bio => None,
            _ => continue,
        };
        let name = mode.name();
        if via == Via::Auto && config.keep_events && perf_path.is_some() {
            // BPF sums the blocks in the kernel: an event per block needs the perf path.
            output::message(format!(
                "{name}: recording {}, for an event per block (JSON events, flame charts; BPF sums \
                 them in the kernel: --via bpf gives one event per task and stack)",
                perf_path.unwrap_or_default()
            ));
            continue;
        }
        if via == Via::Perf {
            match perf_path {
                Some(how) => output::message(format!("{name}: recording {how}, as --via perf asks")),
                None if matches!(mode, Mode::OffCpu(_)) => {
                    bail!("{name}: --wakers needs BPF: it cannot record with --via perf")
                }
                None => bail!("--{name} is summed in the kernel by BPF: it cannot record with --via perf"),
            }
            continue;
        }
        match kflame_bpf::record::aggregator(mode, &config.target) {
            None => {}
            Some(Ok(a)) => {
                output::message(format!("{name}: recording {}", a.describe()));
                out.push((mode.clone(), a));
            }
            Some(Err(e)) => match (via, perf_path) {
                (Via::Auto, Some(how)) => {
                    output::message(format!("{name}: BPF is not available ({e}{BPF_NEEDS}); recording {how}"))
                }
                _ => bail!("{name}: BPF is not available here ({e}{BPF_NEEDS}), and this recording needs it"),
            },
        }
    }
    Ok(out)
}

impl Args {
    /// The modes asked for, in the order of their outputs: CPU when no other is given.
    fn modes(&self) -> Vec<Mode> {
        let mut modes = Vec::new();
        let others =
            self.mem || self.off_cpu || self.syscalls || self.locks || self.runq || self.bio || self.blocked;
        if self.cpu || !others {
            modes.push(Mode::Cpu { frequency: self.frequency.unwrap_or(99) });
        }
        if self.mem {
            modes.push(Mode::Mem { kmalloc: self.kmalloc });
        }
        if self.off_cpu {
            modes.push(Mode::OffCpu(record::OffCpuOptions {
                wakers: self.wakers,
                states: self.state.unwrap_or(record::TaskStates::SLEEPING),
                min_block: self.min_block.unwrap_or_default(),
                idle_kthreads: self.idle_kthreads,
            }));
        }
        if self.syscalls {
            modes.push(Mode::Syscalls);
        }
        if self.locks {
            modes.push(Mode::Locks);
        }
        if self.runq {
            modes.push(Mode::Runq);
        }
        if self.bio {
            modes.push(Mode::Bio);
        }
        if self.blocked {
            modes.push(Mode::Blocked { every: self.every });
        }
        modes
    }

    /// Usage errors clap cannot express (they depend on which modes are given), exit 2.
    fn check_usage(&self, modes: &[Mode]) {
        let usage = |kind, msg: String| -> ! {
            let mut cli = <crate::Cli as clap::CommandFactory>::command();
            let record = cli.find_subcommand_mut("record").map(std::mem::take).unwrap_or_default();
            record.bin_name("kflame record").error(kind, msg).exit()
        };
        let first_other = [
            (self.mem, "--mem"),
            (self.off_cpu, "--off-cpu"),
            (self.syscalls, "--syscalls"),
            (self.locks, "--locks"),
            (self.runq, "--runq"),
            (self.bio, "--bio"),
            (self.blocked, "--blocked"),
        ]
        .into_iter()
        .find_map(|(on, name)| on.then_some(name));
        if let (Some(other), Some(_), false) = (first_other, self.frequency, self.cpu) {
            usage(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "the argument '--freq <HZ>' cannot be used with '{other}' (add --cpu to record CPU samples as well)"
                ),
            );
        }
        if self.every.is_some() && self.active.is_none() && !self.blocked {
            usage(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--every needs --for (a duty cycle: record --for seconds of every --every), or \
                 --blocked (a snapshot every --every seconds)"
                    .into(),
            );
        }
        if modes.len() > 1 && self.output.as_deref().is_none_or(|p| p == Path::new("-")) {
            let names: Vec<&str> = modes.iter().map(Mode::name).collect();
            usage(
                clap::error::ErrorKind::MissingRequiredArgument,
                format!(
                    "several modes ({}) write one file each: give -o NAME.EXT (written as NAME.{}.EXT, ...)",
                    names.join(", "),
                    names[0]
                ),
            );
        }
    }

    fn config(&self, modes: Vec<Mode>, keep_events: bool) -> Result<Config> {
        let target = match (self.command.is_empty(), self.pid.is_empty(), self.tid.is_empty()) {
            (false, false, _) => bail!("give either -p PID or a command, not both"),
            (false, _, false) => bail!("give either -t TID or a command, not both"),
            (false, true, true) => Target::Command { argv: self.command.clone(), system_wide: self.all_cpus },
            (true, false, _) => Target::Pids(self.pid.clone()),
            (true, true, false) => Target::Threads(self.tid.clone()),
            (true, true, true) => Target::All,
        };
        let parts = match (self.kernel_only, self.user_only) {
            (true, _) => StackParts::KernelOnly,
            (_, true) => StackParts::UserOnly,
            _ => StackParts::Both,
        };
        let duty = match (self.every, self.active) {
            (Some(every), Some(active)) if active <= every => Some(DutyCycle { every, active }),
            (Some(_), Some(_)) => bail!("--for must not be longer than --every"),
            _ => None,
        };
        let naming = Naming {
            pid: self.include_pid,
            tid: self.include_tid,
            cpu: self.include_cpu,
            annotate_kernel: self.annotate_kernel,
        };
        Ok(Config {
            modes,
            target,
            duration: self.duration,
            parts,
            duty,
            naming,
            keep_events,
            keep_samples: false,
            caches: Default::default(),
            call_graph: self.call_graph,
        })
    }
}

pub(crate) fn run(args: Args) -> Result<()> {
    // Before any thread starts: a recording of hours keeps one arena, not one per thread.
    kflame::record::one_malloc_arena();
    if args.check {
        return print_check();
    }
    let modes = args.modes();
    args.check_usage(&modes);
    let kind = sink::Kind::choose(args.format, args.output.as_deref())?;
    // JSON lines and flame charts (time order) need every event, not only the merged stacks.
    let keep_events = kind == sink::Kind::Json || args.graph_type == sink::GraphType::Chart;
    let config = args.config(modes, keep_events)?;
    // Opened now: a path that cannot be written fails before recording, not after it.
    let paths = sink::paths(args.output.as_deref(), &config.modes, kind);
    let mut outputs = Vec::with_capacity(paths.len());
    for p in &paths {
        outputs.push(sink::Output::open(p.as_deref())?);
    }
    let mut progress = ProgressLine::new(output::stderr_is_terminal());
    let one_snapshot = config.modes == [Mode::Blocked { every: None }];
    if progress.enabled && config.duration.is_none() && config.target == Target::All && !one_snapshot {
        let what = match config.modes.as_slice() {
            [Mode::Blocked { .. }] => "taking snapshots",
            _ => "recording every CPU",
        };
        output::message(format!("{what} until Ctrl-C (use -d SECONDS to stop by itself)"));
    }
    let aggregators = aggregators(&config, args.via)?;
    let recordings = record_until_end(&config, aggregators, &mut progress).context("recording")?;
    progress.clear();
    report(&recordings, &paths);
    let opts =
        sink::GraphOptions { style: args.style, graph_type: args.graph_type, title: args.title.clone() };
    for (out, r) in outputs.into_iter().zip(&recordings.kinds) {
        out.write(kind, r, &opts)?;
    }
    command_result(recordings.command)
}

/// How often the recording's stacks are named and joined to what came before: the raw
/// call chains and the mappings of exited tasks are kept no longer than this, so a recording
/// of hours holds its named stacks and bounded caches, and its end names only the last
/// window.
const WINDOW: Duration = Duration::from_secs(10);

/// Records until the duration, the command or the targets end, or SIGINT/SIGTERM arrives;
/// names the stacks every [`WINDOW`], then closes the events and names the last window. Until
/// the events are closed and the command reaped, SIGINT and SIGTERM only stop recording;
/// after that (while naming stacks or writing) they terminate, as without a handler.
fn record_until_end(
    config: &Config,
    aggregators: Vec<(Mode, Box<dyn record::Aggregator>)>,
    progress: &mut ProgressLine,
) -> Result<Recordings> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    let terminate = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        // The default action goes first: it acts once `terminate` is set.
        signal_hook::flag::register_conditional_default(sig, terminate.clone())
            .and_then(|_| signal_hook::flag::register(sig, stop.clone()))
            .context("installing signal handlers")?;
    }
    let mut earlier: Option<Vec<Recording>> = None;
    let stopped = (|| -> Result<Recorder> {
        let mut recorder = Recorder::start_with(config, stop, aggregators)?;
        let mut window = Instant::now();
        while recorder.poll(Duration::from_millis(100))? == Status::Running {
            progress.update(&recorder.progress());
            if window.elapsed() >= WINDOW {
                window = Instant::now();
                let kinds = recorder.take_window().kinds;
                earlier = Some(join(earlier.take(), kinds));
            }
        }
        recorder.stop()?;
        Ok(recorder)
    })(); // on error, the recorder was dropped: every event closed, the command reaped
    terminate.store(true, Ordering::SeqCst);
    let mut end = stopped?.finish()?;
    // The last window carries the totals and notes of the whole recording.
    let totals: Vec<_> = end.kinds.iter_mut().map(|k| (k.stats, std::mem::take(&mut k.notes))).collect();
    end.kinds = join(earlier, std::mem::take(&mut end.kinds));
    for (k, (stats, notes)) in end.kinds.iter_mut().zip(totals) {
        (k.stats, k.notes) = (stats, notes);
    }
    Ok(end)
}

/// The windows so far followed by the next one, mode by mode (the same modes, in the same
/// order, in every window of a recorder).
fn join(earlier: Option<Vec<Recording>>, next: Vec<Recording>) -> Vec<Recording> {
    let Some(mut earlier) = earlier else { return next };
    for (e, n) in earlier.iter_mut().zip(next) {
        e.append(n);
    }
    earlier
}

fn report(r: &Recordings, paths: &[Option<PathBuf>]) {
    for n in &r.notes {
        output::message(n);
    }
    let several = r.kinds.len() > 1;
    for (k, path) in r.kinds.iter().zip(paths) {
        let prefix = if several { format!("{}: ", k.mode.name()) } else { String::new() };
        for n in &k.notes {
            output::message(format!("{prefix}{n}"));
        }
        let s = &k.stats;
        let what = match k.mode {
            Mode::Blocked { every: Some(_) } => format!("tasks ({} snapshots)", s.snapshots),
            Mode::Blocked { every: None } => "tasks".into(),
            _ => "samples".into(),
        };
        let into = match path {
            Some(p) if several => format!(", into {}", p.display()),
            _ => String::new(),
        };
        output::message(format!(
            "{prefix}recorded {} {what} in {:.1} s ({} distinct stacks, unit {}){into}",
            s.samples,
            r.elapsed.as_secs_f64(),
            k.stacks.len(),
            k.meta.unit
        ));
        if s.unpaired > 0 {
            output::message(format!(
                "{prefix}{} events could not be paired (still open when recording stopped, or failed)",
                s.unpaired
            ));
        }
    }
    if r.ring.lost > 0 {
        output::message(format!(
            "warning: the kernel dropped {} records (ring buffer full); lower -F or record fewer events",
            r.ring.lost
        ));
    }
    if r.ring.malformed > 0 {
        output::message(format!(
            "warning: {} records could not be decoded and were skipped",
            r.ring.malformed
        ));
    }
}

/// The exit status of a recorded command that failed, as `perf record` returns it: its own
/// exit status, or 128 + the signal that killed it (what a shell reports).
fn command_result(end: Option<CommandEnd>) -> Result<()> {
    let code = match end {
        None | Some(CommandEnd::Exited(0)) => return Ok(()),
        Some(CommandEnd::Stopped) => {
            output::message(
                "the recorded command was still running when recording stopped, and was stopped too",
            );
            return Ok(());
        }
        Some(CommandEnd::Exited(code)) => {
            output::message(format!("the recorded command failed: exit status {code}"));
            code
        }
        Some(CommandEnd::Killed(sig)) => {
            output::message(format!("the recorded command was killed by signal {sig}{}", signal_name(sig)));
            128 + sig
        }
    };
    Err(Exit(u8::try_from(code).unwrap_or(1)).into())
}

/// ` (SIGSEGV)` for the usual signals.
fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 16] = [
        "", "SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
        "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
    ];
    match usize::try_from(sig).ok().and_then(|i| NAMES.get(i)) {
        Some(n) if !n.is_empty() => format!(" ({n})"),
        _ => String::new(),
    }
}

#[allow(clippy::print_stdout)]
fn print_check() -> Result<()> {
    let mut caps = record::check();
    caps.extend(kflame_bpf::record::check());
    let width = caps.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = output::stdout();
    for c in caps {
        let mark = if c.available { "yes" } else { "no " };
        writeln!(out, "{mark}  {:width$}  {}", c.name, c.detail)?;
    }
    Ok(())
}

/// `recording: 3.2 s, 312 samples, 0 lost`, redrawn in place on a terminal.
struct ProgressLine {
    enabled: bool,
    last: Option<Instant>,
}

impl ProgressLine {
    fn new(enabled: bool) -> ProgressLine {
        ProgressLine { enabled, last: None }
    }

    #[allow(clippy::print_stderr)]
    fn update(&mut self, p: &Progress) {
        if !self.enabled || self.last.is_some_and(|t| t.elapsed() < Duration::from_millis(250)) {
            return;
        }
        self.last = Some(Instant::now());
        let paused = if p.active { "" } else { " (paused by duty cycle)" };
        eprint!(
            "\r\x1b[Kkflame: recording: {:.1} s, {} samples, {} lost{paused}",
            p.elapsed.as_secs_f64(),
            p.samples,
            p.lost
        );
    }

    #[allow(clippy::print_stderr)]
    fn clear(&mut self) {
        if self.enabled && self.last.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}
