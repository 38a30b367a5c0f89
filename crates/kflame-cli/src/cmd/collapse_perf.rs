//! Options of the `perf-script` format and how they configure the collapser.

use anyhow::{Result, bail};
use kflame::collapse::perf::{PerfOptions, PerfScript, PerfWeight};

use super::collapse::{SharedArgs, WeightArg};

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

/// The perf collapser configured from the command line. Weights: the period column by
/// default, allocated bytes for kmem allocation tracepoints, `--counts`/`--weight count`
/// for one per sample, `--weight bytes` for bytes from the payload of any event.
pub(crate) fn build(perf: &PerfArgs, shared: &SharedArgs) -> Result<PerfScript> {
    let weight = match (shared.weight, perf.counts) {
        (Some(WeightArg::Bytes), true) => bail!("--counts and --weight bytes contradict each other"),
        (Some(WeightArg::Bytes), false) => PerfWeight::Bytes,
        (Some(WeightArg::Count), _) | (None, true) => PerfWeight::Samples,
        (None, false) => PerfWeight::Auto,
    };
    Ok(PerfScript::new(PerfOptions {
        include_pid: shared.pid,
        include_tid: shared.tid,
        annotate_kernel: perf.kernel || perf.all,
        annotate_jit: perf.jit || perf.all,
        include_addrs: perf.addrs,
        mark_inlined: perf.inline,
        event_filter: perf.event_filter.clone(),
        weight,
    }))
}
