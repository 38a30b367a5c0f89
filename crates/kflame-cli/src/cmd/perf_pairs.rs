//! `perf script` input with `--mode syscalls|offcpu|probes`: tracepoint records paired into
//! syscall latency, off-CPU time or probed function durations; without `--mode`, the
//! sample-counting perf collapser.

use anyhow::{Result, bail};
use kflame::collapse::Collapse;
use kflame::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions};

use super::collapse::SharedArgs;
use super::collapse_perf::PerfArgs;
use super::trace_args::{TraceArgs, TraceMode, events_log};

/// The perf script collapser for these options: pairing when `--mode` asks for it.
pub(crate) fn build(perf: &PerfArgs, shared: &SharedArgs, trace: &TraceArgs) -> Result<Box<dyn Collapse>> {
    let mode = match trace.mode {
        None if shared.events_json.is_some() => {
            bail!("--events-json with perf script input needs --mode syscalls, offcpu or probes")
        }
        None => return Ok(Box::new(super::collapse_perf::build(perf, shared)?)),
        Some(TraceMode::Syscalls) => PairMode::Syscalls,
        Some(TraceMode::Offcpu) => PairMode::OffCpu,
        Some(TraceMode::Probes) => PairMode::Probes,
        Some(TraceMode::Alloc | TraceMode::Events) => bail!(
            "perf script input takes --mode syscalls, offcpu or probes; without --mode it counts \
             samples (allocation tracepoints weigh their bytes)"
        ),
    };
    if shared.weight.is_some() || perf.counts {
        bail!(
            "--weight and --counts apply to sample counting; --mode syscalls/offcpu/probes weighs by duration (ns)"
        );
    }
    if perf.event_filter.is_some() {
        bail!(
            "--event-filter chooses the event to count; --mode syscalls/offcpu/probes uses the events it pairs"
        );
    }
    let opts = PerfPairsOptions {
        mode,
        comm: shared.comm,
        pid: shared.pid || shared.tid,
        cpu: shared.cpu,
        annotate_kernel: perf.kernel || perf.all,
        annotate_jit: perf.jit || perf.all,
        include_addrs: perf.addrs,
        mark_inlined: perf.inline,
    };
    Ok(Box::new(PerfPairs::new(opts, events_log(shared.events_json.as_deref())?)))
}
