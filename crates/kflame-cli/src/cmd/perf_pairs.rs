//! `perf script` input with `--mode syscalls|offcpu|probes`: tracepoint records paired into
//! syscall latency, off-CPU time or probed function durations; without `--mode`, the
//! sample-counting perf collapser.

use anyhow::{Result, bail};
use kflame::collapse::Collapse;
use kflame::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions};

use super::collapse_args::{LatencyArgs, PerfArgs, SharedArgs, TraceArgs, TraceMode};
use super::trace_args::events_log;

/// The perf script collapser for these options: pairing when `--mode` asks for it.
pub(crate) fn build(
    perf: &PerfArgs,
    shared: &SharedArgs,
    trace: &TraceArgs,
    lat: &LatencyArgs,
) -> Result<Box<dyn Collapse>> {
    let Some(mode) = pair_mode(trace, "perf script")? else {
        return Ok(Box::new(super::collapse_perf::build(perf, shared)?));
    };
    let opts = PerfPairsOptions {
        mode,
        comm: shared.comm,
        pid: shared.pid || shared.tid,
        cpu: shared.cpu,
        annotate_kernel: perf.kernel || perf.all,
        annotate_jit: perf.jit || perf.all,
        include_addrs: perf.addrs,
        mark_inlined: perf.inline,
        top: lat.top()?,
    };
    let mut c = PerfPairs::new(opts, events_log(shared.events_json.as_deref())?);
    if let Some(log) = super::outliers::log(lat) {
        c = c.with_outliers(log);
    }
    Ok(Box::new(c))
}

/// The pairing `--mode` of perf input (`input` names it in messages); `None` without
/// `--mode`. The options of sample counting were refused with it by the option check
/// (`kflame::collapse::options`).
pub(crate) fn pair_mode(trace: &TraceArgs, input: &str) -> Result<Option<PairMode>> {
    let mode = match trace.mode {
        None => return Ok(None),
        Some(TraceMode::Syscalls) => PairMode::Syscalls,
        Some(TraceMode::Offcpu) => PairMode::OffCpu,
        Some(TraceMode::Probes) => PairMode::Probes,
        Some(TraceMode::Alloc | TraceMode::Events) => bail!(
            "{input} input takes --mode syscalls, offcpu or probes; without --mode it counts \
             samples (allocation tracepoints weigh their bytes)"
        ),
    };
    Ok(Some(mode))
}
