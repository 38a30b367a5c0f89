//! `kflame record`: record live with perf_event_open, tracepoints or /proc, then write folded
//! stacks, JSON events or a graph.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kflame::record::{self, Config, DutyCycle, Mode, Naming, Progress, Recording, StackParts, Target};

use crate::output;

mod sink;

/// Arguments of `kflame record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples (as root):
  kflame record -F 99 -d 10 -o cpu.folded            # every CPU for 10 s
  kflame record -p 1234 -d 5 -o app.json             # one process, one JSON line per sample
  kflame record -o make.folded -- make -j2           # a command and its children
  kflame record -a -o all.folded -- sleep 10         # every task, while the command runs
  kflame record --mem --every 60 --for 5 -o mem.folded
  kflame record --off-cpu -d 5 -o offcpu.folded
  kflame record --syscalls -p 1234 -d 5 -o syscalls.folded
  kflame record --blocked -o blocked.folded          # every task's kernel stack, D state first
  kflame record --check                              # what this kernel allows")]
pub(crate) struct Args {
    /// Command to start and record with its children until it exits (after `--`).
    #[arg(value_name = "COMMAND", last = true)]
    command: Vec<OsString>,

    /// Samples per second and per CPU for CPU profiles (any value, e.g. 99 or 997).
    #[arg(short = 'F', long = "freq", value_name = "HZ", default_value_t = 99,
          conflicts_with_all = ["mem", "off_cpu", "syscalls", "blocked"],
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    frequency: u32,

    /// Record every task on every CPU (the default without -p or a command; with a command,
    /// record everything until the command exits, like `perf record -a -- sleep 10`).
    #[arg(short = 'a', long = "all-cpus", conflicts_with = "pid")]
    all_cpus: bool,

    /// Record these processes (and the children they start); repeat or separate by commas.
    #[arg(short = 'p', long = "pid", value_name = "PID", value_delimiter = ',')]
    pid: Vec<u32>,

    /// Stop after this many seconds (default: until Ctrl-C, or until the command exits).
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", value_parser = parse_seconds)]
    duration: Option<Duration>,

    /// Keep only kernel frames (CPU samples taken in user mode are dropped).
    #[arg(long, conflicts_with = "user_only")]
    kernel_only: bool,

    /// Keep only user frames (CPU samples taken in kernel mode are dropped).
    #[arg(long)]
    user_only: bool,

    /// Record page allocations (kmem:mm_page_alloc), weighted by bytes.
    #[arg(long, help_heading = "Modes", group = "mode")]
    mem: bool,

    /// With --mem: also record kmalloc (kmem:kmalloc, bytes_alloc).
    #[arg(long, help_heading = "Modes", requires = "mem")]
    kmalloc: bool,

    /// Duty cycle period in seconds: record `--for` seconds at the start of each period (CPU
    /// and --mem; the paired modes --off-cpu and --syscalls refuse it).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, requires = "active", help_heading = "Modes")]
    every: Option<Duration>,

    /// Duty cycle: seconds recorded at the start of each `--every` period.
    #[arg(long = "for", id = "active", value_name = "SECONDS", value_parser = parse_seconds,
          requires = "every", help_heading = "Modes")]
    active: Option<Duration>,

    /// Record time blocked off-CPU per stack, in nanoseconds: from a task leaving the CPU
    /// asleep (sched:sched_switch, states S, D, I) to its switch back in (context-switch records).
    #[arg(long, help_heading = "Modes", group = "mode")]
    off_cpu: bool,

    /// Record system call latency (raw_syscalls enter/exit) per call and stack, in ns.
    #[arg(long, help_heading = "Modes", group = "mode")]
    syscalls: bool,

    /// Snapshot every task's kernel stack from /proc, grouped by state (D first).
    #[arg(long, help_heading = "Modes", group = "mode")]
    blocked: bool,

    /// Print what this kernel allows (events, tracepoints, /proc) and exit.
    #[arg(long, help_heading = "Modes", group = "mode")]
    check: bool,

    /// Output: `.folded` (default, also stdout), `.json` (one line per event), `.svg`, `.html`.
    #[arg(short, long, value_name = "FILE", help_heading = "Output")]
    output: Option<PathBuf>,

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

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let v: f64 = s.parse().map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(v > 0.0 && v < 1e9) {
        return Err(format!("`{s}`: expected a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

impl Args {
    fn config(&self, keep_events: bool) -> Result<Config> {
        let mode = if self.mem {
            Mode::Mem { kmalloc: self.kmalloc }
        } else if self.off_cpu {
            Mode::OffCpu
        } else if self.syscalls {
            Mode::Syscalls
        } else if self.blocked {
            Mode::Blocked
        } else {
            Mode::Cpu { frequency: self.frequency }
        };
        let target = match (self.command.is_empty(), self.pid.is_empty()) {
            (false, false) => bail!("give either -p PID or a command, not both"),
            (false, true) => Target::Command { argv: self.command.clone(), system_wide: self.all_cpus },
            (true, false) => Target::Pids(self.pid.clone()),
            (true, true) => Target::All,
        };
        if mode == Mode::Blocked && target != Target::All {
            bail!("--blocked takes a snapshot of every task; it cannot be limited to -p or a command");
        }
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
        Ok(Config { mode, target, duration: self.duration, parts, duty, naming, keep_events })
    }
}

pub(crate) fn run(args: Args) -> Result<()> {
    if args.check {
        return print_check();
    }
    let kind = sink::Kind::from_path(args.output.as_deref())?;
    // JSON lines and flame charts (time order) need every event, not only the merged stacks.
    let config = args.config(kind == sink::Kind::Json || args.graph_type == sink::GraphType::Chart)?;
    let mut progress = ProgressLine::new(output::stderr_is_terminal());
    if progress.enabled
        && config.duration.is_none()
        && config.target == Target::All
        && config.mode != Mode::Blocked
    {
        output::message("recording every CPU until Ctrl-C (use -d SECONDS to stop by itself)");
    }
    let recording = record::record(&config, &mut |p| progress.update(p)).context("recording")?;
    progress.clear();
    report(&recording, &config);
    let opts =
        sink::GraphOptions { style: args.style, graph_type: args.graph_type, title: args.title.clone() };
    let mut out = output::open(args.output.as_deref())?;
    sink::write(kind, &recording, &opts, &mut out)?;
    out.flush().context("writing the output")?;
    Ok(())
}

fn report(r: &Recording, config: &Config) {
    for n in &r.notes {
        output::message(n);
    }
    let s = &r.stats;
    let what = if config.mode == Mode::Blocked { "tasks" } else { "samples" };
    output::message(format!(
        "recorded {} {what} in {:.1} s ({} distinct stacks, unit {})",
        s.samples,
        s.elapsed.as_secs_f64(),
        r.stacks.len(),
        r.meta.unit
    ));
    if s.ring.lost > 0 {
        output::message(format!(
            "warning: the kernel dropped {} records (ring buffer full); lower -F or record fewer events",
            s.ring.lost
        ));
    }
    if s.ring.malformed > 0 {
        output::message(format!(
            "warning: {} records could not be decoded and were skipped",
            s.ring.malformed
        ));
    }
    if s.unpaired > 0 {
        output::message(format!(
            "{} events could not be paired (still open when recording stopped, or failed)",
            s.unpaired
        ));
    }
    if let Some(code) = r.command_status.filter(|c| *c != 0) {
        output::message(format!("the recorded command exited with status {code}"));
    }
}

#[allow(clippy::print_stdout)]
fn print_check() -> Result<()> {
    let caps = record::check();
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
