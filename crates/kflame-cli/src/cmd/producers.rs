//! The collapsers of the latency formats (function_graph; `--top` and `--split-outliers` of
//! every latency collapse) and of the "other producers" formats (bcc, bpftrace, SystemTap,
//! /proc stacks), configured from their options (in `collapse_args.rs`).

use anyhow::Result;
use kflame::collapse::Collapse;
use kflame::collapse::fgraph::{FunctionGraph, Latency, Options};

use super::collapse_args::{BccUnit, LatencyArg, LatencyArgs, ProducerArgs, SharedArgs};

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
