//! The arguments of `kflame collapse`, as clap parses them: the shared options and one
//! struct per format family. Plain data that depends on no other module here;
//! `collapse_options.rs` maps them onto the library's `CollapseOptions`, from which
//! `kflame::collapse::options::Target::collapser` checks and builds every input's collapser.

use std::path::PathBuf;

use anyhow::Result;
use kflame::collapse::Format;

/// Arguments of `kflame collapse`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  perf record -F 99 -a -g -- sleep 10 &&
      perf script | kflame collapse | kflame flamegraph > out.svg
  kflame collapse --pid --kernel perf.script.txt -o out.folded
  kflame collapse --format folded a.folded b.folded > merged.folded
  journalctl -k -b -1 |
      kflame collapse --format kernel-log --group-by kind,title > oopses.folded
  # One JSON object per kernel report:
  kflame collapse --json dmesg.txt
  # crash output: tasks by state and stack:
  kflame collapse --format crash foreach-UN-bt.txt
  # The 10 slowest syscalls, each alone, and each in its own file under slow/:
  kflame collapse --mode syscalls --top 10 --split-outliers slow/ trace.txt

An option that an input does not take is refused (exit 1), naming the formats that take it.")]
pub(crate) struct Args {
    /// Input files (`-` or none: stdin). Several inputs are merged into one output.
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<String>,

    /// Input format; guessed from the content when absent. gzip, zstd and xz input is
    /// decompressed first, whatever the format.
    #[arg(long, value_name = "FORMAT", value_parser = FormatParser)]
    pub(crate) format: Option<Format>,

    /// Write the folded output here instead of stdout. A name ending in `.otlp.pb`,
    /// `.pb.gz`, `.speedscope.json` or `.trace.json` writes that format instead (as
    /// `kflame flamegraph -o`), with what folded text cannot hold: with --time-order, the
    /// time of each perf script or perf.data sample in OTLP's per-sample time stamps.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// Worker threads (default: number of CPUs). Output is identical for any value.
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) threads: Option<usize>,

    /// Keep stacks in input (time) order, merging only identical consecutive stacks:
    /// input for flame charts (`kflame flamegraph --flamechart`).
    #[arg(long)]
    pub(crate) time_order: bool,

    #[command(flatten)]
    pub(crate) units: crate::units::MixedUnits,

    #[command(flatten)]
    pub(crate) shared: SharedArgs,

    #[command(flatten)]
    pub(crate) perf: PerfArgs,

    #[command(flatten)]
    pub(crate) trace: TraceArgs,

    #[command(flatten)]
    pub(crate) latency: LatencyArgs,

    #[command(flatten)]
    pub(crate) producers: ProducerArgs,

    #[command(flatten)]
    pub(crate) report: ReportArgs,

    #[command(flatten)]
    pub(crate) perf_data: Box<PerfDataArgs>,
}

/// Options that several formats understand, each in its own sense (documented per flag).
/// Format-specific options live in each format's own `clap::Args` struct. Which inputs take
/// which option is decided in one table (`kflame::collapse::options::RULES`).
#[derive(clap::Args, Debug, Default)]
#[allow(dead_code)] // each field is read by the formats that support it
pub(crate) struct SharedArgs {
    /// Include the PID with the process name (`comm-PID` root frame): perf script, perf.data,
    /// ftrace, trace-cmd, function-graph, bcc.
    #[arg(long, help_heading = "Shared options")]
    pub(crate) pid: bool,
    /// Include the TID (and PID) with the process name (`comm-PID/TID`): perf script,
    /// perf.data; ftrace, trace-cmd and function-graph name threads by their TID, as --pid.
    #[arg(long, help_heading = "Shared options")]
    pub(crate) tid: bool,
    /// Add the task name (comm) as a root frame: ftrace, trace-cmd, function-graph, kernel
    /// logs, crash dumps, perf with --mode (perf samples and /proc stacks always have it).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) comm: bool,
    /// Add the CPU as a root frame (`cpu-3`): ftrace, trace-cmd, function-graph, kernel logs,
    /// crash dumps, perf script and perf.data with --mode.
    #[arg(long, help_heading = "Shared options")]
    pub(crate) cpu: bool,
    /// Weight by `count` (one per event or sample) or by `bytes` (allocation size): perf
    /// samples without --mode, ftrace / trace-cmd events in alloc and events modes.
    #[arg(long, value_enum, value_name = "count|bytes", help_heading = "Shared options")]
    pub(crate) weight: Option<WeightArg>,
    /// Synthetic root frames, comma-separated (kernel logs: version,kind,title,cpu,comm,
    /// hardware,taint; crash dumps: state,comm,cpu, default state: tasks merge by stack).
    #[arg(long, value_name = "KEYS", help_heading = "Shared options")]
    pub(crate) group_by: Option<String>,
    /// Instead of folded stacks, write one JSON object per report (kernel logs, crash dumps).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) json: bool,
    /// Also write one JSON line per event or call (ts, cpu, pid, comm, duration_ns, stack)
    /// to this file: ftrace, trace-cmd, function-graph, perf script and perf.data with --mode.
    #[arg(long, value_name = "FILE", help_heading = "Shared options")]
    pub(crate) events_json: Option<PathBuf>,
}

/// Values of `--weight`.
#[derive(clap::ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum WeightArg {
    /// One per event or sample.
    Count,
    /// Allocated bytes.
    Bytes,
}

/// `--format`: a format name or alias, with every format listed in `--help` and offered by
/// shell completion.
#[derive(Clone)]
struct FormatParser;

impl clap::builder::TypedValueParser for FormatParser {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        let s = value.to_string_lossy();
        Format::from_name(&s).ok_or_else(|| {
            let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
            let msg = format!("unknown format `{s}`; known formats: {}\n", names.join(", "));
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Format::ALL.iter().map(|f| {
            clap::builder::PossibleValue::new(f.name()).aliases(f.aliases().iter().copied()).help(f.summary())
        })))
    }
}

/// `perf script` options (FlameGraph's `stackcollapse-perf.pl` flags).
#[derive(clap::Args, Debug, Default)]
pub(crate) struct PerfArgs {
    /// Suffix kernel frames with `_[k]`.
    #[arg(long, help_heading = "perf script and perf.data options")]
    pub(crate) kernel: bool,
    /// Suffix JIT frames (`/tmp/perf-PID.map`, `jitted-*.so`) with `_[j]`.
    #[arg(long, help_heading = "perf script and perf.data options")]
    pub(crate) jit: bool,
    /// Same as `--kernel --jit`.
    #[arg(long, help_heading = "perf script and perf.data options")]
    pub(crate) all: bool,
    /// Show raw addresses for frames without a symbol (`[libc.so <7f12ab>]`).
    #[arg(long, help_heading = "perf script and perf.data options")]
    pub(crate) addrs: bool,
    /// Suffix DWARF-unwound `(inlined)` frames with `_[i]`.
    #[arg(long, help_heading = "perf script and perf.data options")]
    pub(crate) inline: bool,
    /// Fold only samples of this event (default: the first event in the input; the others
    /// are counted in a note). Modifiers do not count: `cycles` also selects `cycles:u`.
    #[arg(long, value_name = "EVENT", help_heading = "perf script and perf.data options")]
    pub(crate) event_filter: Option<String>,
    /// Count samples instead of summing perf's period column (or, for the kmem allocation
    /// tracepoints mm_page_alloc, kmalloc, kmem_cache_alloc, instead of allocated bytes).
    #[arg(long, help_heading = "perf script and perf.data options")]
    pub(crate) counts: bool,
}

/// What an ftrace / trace-cmd collapse measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TraceMode {
    /// Bytes allocated (mm_page_alloc: 4096 << order; kmalloc/kmem_cache_alloc: bytes_alloc;
    /// kprobe/uprobe events: `order=` gives 4096 << order, else `bytes=`, `size=` or
    /// `request=` the bytes).
    Alloc,
    /// Syscall latency from sys_enter/sys_exit pairs (ns, stack at entry).
    Syscalls,
    /// Off-CPU time from sched_switch (ns until switched back in, stack at switch-out).
    Offcpu,
    /// Function durations from uprobe/kprobe entry + return probes (ns, stack at entry).
    Probes,
    /// One per event, under the event name.
    Events,
}

/// Options of the trace-event formats.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct TraceArgs {
    /// What to measure (trace formats); chosen from the events in the input when absent.
    /// perf script and perf.data input: `syscalls`, `offcpu` or `probes` pair its tracepoint
    /// records.
    #[arg(long, value_enum, value_name = "MODE", help_heading = "Trace options (ftrace, trace-cmd)")]
    pub(crate) mode: Option<TraceMode>,
    /// Add the page allocation order as a root frame (`order-2`), in alloc and events modes.
    #[arg(long, help_heading = "Trace options (ftrace, trace-cmd)")]
    pub(crate) order: bool,
    /// Add the migrate type and GFP flags of allocations as root frames, in alloc and events
    /// modes.
    #[arg(long, help_heading = "Trace options (ftrace, trace-cmd)")]
    pub(crate) page_type: bool,
}

/// Latency options: function_graph, and the outliers of every latency collapse.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct LatencyArgs {
    /// function_graph weight: `self` time of each call path (default; flame graph widths are
    /// then total times) or `total` time (inclusive duration of each call path).
    #[arg(long, value_enum, value_name = "self|total", help_heading = "Latency options")]
    pub(crate) latency: Option<LatencyArg>,
    /// Keep only the N slowest calls or events, each as its own tower under a root frame
    /// `[#rank duration @start]`, to see the outliers alone: top-level calls of
    /// function_graph input; syscalls, off-CPU intervals or probed calls with --mode
    /// syscalls|offcpu|probes (ftrace, trace-cmd, perf script, perf.data). --events-json still
    /// lists every one.
    #[arg(long, value_name = "N", help_heading = "Latency options")]
    pub(crate) top: Option<u32>,
    /// Also write each --top outlier on its own into DIR (new or empty): folded stacks and an
    /// SVG flame graph per outlier, named RANK-DURATION-COMM-PID-WHAT-START so that they list
    /// in latency order, and index.tsv listing them with their task, CPU and time.
    #[arg(long, value_name = "DIR", help_heading = "Latency options")]
    pub(crate) split_outliers: Option<std::path::PathBuf>,
}

/// Values of `--latency`.
#[derive(clap::ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum LatencyArg {
    /// Time in the function itself.
    #[value(name = "self")]
    SelfTime,
    /// Whole duration, children included.
    Total,
}

/// bcc, bpftrace and SystemTap options.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ProducerArgs {
    /// bpftrace: the map to collapse (`@bytes`, `@` for the anonymous map); default: the
    /// first map keyed by a stack.
    #[arg(long, value_name = "@NAME", help_heading = "bcc / bpftrace options")]
    pub(crate) bpftrace_map: Option<String>,
    /// bcc: unit of the counts, for input without a header line that tells it (folded `-f`
    /// output, read with `--format bcc`; given, it overrides a header):
    /// `us` (offcputime and friends; converted to ns), `samples` (profile), `events`
    /// (stackcount).
    #[arg(long, value_enum, value_name = "UNIT", help_heading = "bcc / bpftrace options")]
    pub(crate) bcc_unit: Option<BccUnit>,
    /// pprof: the sample type to read, by type (`inuse_space`) or type/unit
    /// (`alloc_objects/count`); default: the profile's default sample type, else its last one
    /// (as `go tool pprof`). An unknown name is an error listing the profile's types.
    #[arg(long, value_name = "NAME", help_heading = "pprof options")]
    pub(crate) sample_type: Option<String>,
}

/// Values of `--bcc-unit`.
#[derive(clap::ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum BccUnit {
    /// Microseconds, converted to nanoseconds.
    Us,
    /// Samples.
    Samples,
    /// Event counts.
    Events,
}

/// Options of the kernel-log format.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ReportArgs {
    /// Kernel logs: keep `+0x12/0x34` offsets on frames (stripped by default, so that the
    /// same function merges across kernel builds).
    #[arg(long, help_heading = "Kernel log options")]
    pub(crate) offsets: bool,
    /// Kernel logs: keep the `? ` frames the unwinder could not vouch for, marked `? func`
    /// (dropped by default).
    #[arg(long, help_heading = "Kernel log options")]
    pub(crate) unreliable: bool,
}

/// Options of perf.data input only; `--pid`/`--tid` come from the shared options and
/// `--kernel --jit --all --addrs --event-filter --counts` from the perf script options,
/// with the same meaning for both inputs.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct PerfDataArgs {
    /// Kernel symbols from this kallsyms file (the /proc/kallsyms of the boot that recorded;
    /// another boot of the same kernel works: addresses are relocated through `_text`).
    #[arg(long, value_name = "FILE", help_heading = "perf.data options")]
    pub(crate) kallsyms: Option<PathBuf>,
    /// Look recorded binaries and /usr/lib/debug files up under this directory (like perf's
    /// --symfs).
    #[arg(long, value_name = "DIR", help_heading = "perf.data options")]
    pub(crate) symfs: Option<PathBuf>,
    /// Do not unwind --call-graph dwarf user stacks.
    #[arg(long, help_heading = "perf.data options")]
    pub(crate) no_unwind: bool,
    /// Do not add the DWARF inline frames of unwound user frames (like perf script
    /// --no-inline).
    #[arg(long, help_heading = "perf.data options")]
    pub(crate) no_inline: bool,
    /// Read JIT symbols from DIR/perf-PID.map instead of /tmp/perf-PID.map (the map files
    /// JIT compilers such as node --perf-basic-prof write, copied with the recording).
    #[arg(long, value_name = "DIR", help_heading = "perf.data options")]
    pub(crate) perf_map_dir: Option<PathBuf>,
    /// Read nothing of this machine: no /proc/kallsyms, no own [vdso], no ~/.debug build-id
    /// cache, no /tmp perf maps, no binaries outside --symfs; only the files given with
    /// --kallsyms, --symfs and --perf-map-dir. For a recording made elsewhere, the output
    /// then never depends on the machine that reads it.
    #[arg(long, help_heading = "perf.data options")]
    pub(crate) no_host_lookups: bool,
}
