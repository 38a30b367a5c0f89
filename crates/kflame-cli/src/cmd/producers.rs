//! Options of the latency formats (function_graph; `--top` and `--split-outliers` of every
//! latency collapse) and the "other producers" formats (bcc, bpftrace,
//! SystemTap, /proc stacks), and the constructors of their collapsers.

use anyhow::{Result, bail};
use kflame::collapse::Collapse;
use kflame::collapse::fgraph::{FunctionGraph, Latency, Options};

use super::collapse::SharedArgs;

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

impl LatencyArgs {
    /// `--top N` (at least 1).
    pub(crate) fn top(&self) -> Result<Option<usize>> {
        match self.top {
            Some(0) => bail!("--top takes a number of calls or events of at least 1"),
            t => Ok(t.map(|n| n as usize)),
        }
    }
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
    /// output, read with `-F bcc`; given, it overrides a header):
    /// `us` (offcputime and friends; converted to ns), `samples` (profile), `events`
    /// (stackcount).
    #[arg(long, value_enum, value_name = "UNIT", help_heading = "bcc / bpftrace options")]
    pub(crate) bcc_unit: Option<BccUnit>,
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

/// Builds the bcc collapser.
pub(crate) fn bcc(p: &ProducerArgs, shared: &SharedArgs) -> Box<dyn Collapse> {
    use kflame::collapse::bcc::{Bcc, Options, Unit};
    let unit = match p.bcc_unit {
        None => Unit::Auto,
        Some(BccUnit::Us) => Unit::Micros,
        Some(BccUnit::Samples) => Unit::Samples,
        Some(BccUnit::Events) => Unit::Events,
    };
    Box::new(Bcc::new(Options { unit, pid: shared.pid }))
}

/// Builds the bpftrace collapser.
pub(crate) fn bpftrace(p: &ProducerArgs) -> Box<dyn Collapse> {
    Box::new(kflame::collapse::bpftrace::Bpftrace::new(p.bpftrace_map.as_deref()))
}

/// Builds the function_graph collapser.
pub(crate) fn function_graph(lat: &LatencyArgs, shared: &SharedArgs) -> Result<Box<dyn Collapse>> {
    let latency = match lat.latency {
        None | Some(LatencyArg::SelfTime) => Latency::SelfTime,
        Some(LatencyArg::Total) => Latency::Total,
    };
    let top = lat.top()?;
    // function_graph names tasks by their kernel pid, the thread id: --tid is --pid here.
    let opts = Options { latency, top, comm: shared.comm, pid: shared.pid || shared.tid, cpu: shared.cpu };
    let mut c = FunctionGraph::new(opts);
    if let Some(log) = super::trace_args::events_log(shared.events_json.as_deref())? {
        c = c.with_events(log);
    }
    if let Some(log) = super::outliers::log(lat) {
        c = c.with_outliers(log);
    }
    Ok(Box::new(c))
}
