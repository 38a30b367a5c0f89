//! How the options of the `perf-script` format (in `collapse_args.rs`) configure its
//! collapser.

use anyhow::{Result, bail};
use kflame::collapse::perf::{PerfOptions, PerfScript, PerfWeight};

use super::collapse_args::{PerfArgs, SharedArgs, WeightArg};

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
