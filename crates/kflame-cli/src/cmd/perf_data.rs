//! perf.data input of `kflame collapse`: its options (in `collapse_args.rs`) mapped onto
//! the library reader's, and the call into it.

use std::io::Read;

use anyhow::{Context, Result};
use kflame::collapse::{Order, Output};
use kflame::perf_data::{self, Options, Pairing};

use super::collapse_args::{Args, LatencyArgs, PerfArgs, PerfDataArgs, SharedArgs, TraceArgs, WeightArg};
use super::trace_args::events_log;
use crate::input::Input;

impl PerfDataArgs {
    fn options(
        &self,
        perf: &PerfArgs,
        shared: &SharedArgs,
        trace: &TraceArgs,
        lat: &LatencyArgs,
    ) -> Result<Options> {
        Ok(Options {
            include_pid: shared.pid,
            include_tid: shared.tid,
            annotate_kernel: perf.kernel || perf.all,
            annotate_jit: perf.jit || perf.all,
            include_addrs: perf.addrs,
            event_filter: perf.event_filter.clone(),
            counts: perf.counts || shared.weight == Some(WeightArg::Count),
            kallsyms: self.kallsyms.clone(),
            symfs: self.symfs.clone(),
            no_unwind: self.no_unwind,
            no_inline: self.no_inline,
            mark_inlined: perf.inline,
            perf_map_dir: self.perf_map_dir.clone(),
            pairing: pairing(shared, trace, lat)?,
            host: if self.no_host_lookups { perf_data::Host::Isolated } else { perf_data::Host::Running },
        })
    }
}

/// `--mode syscalls|offcpu|probes`: the pairing options (those of sample counting were
/// refused with `--mode` by the option check, as for perf script input).
fn pairing(shared: &SharedArgs, trace: &TraceArgs, lat: &LatencyArgs) -> Result<Option<Pairing>> {
    let Some(mode) = super::perf_pairs::pair_mode(trace, "perf.data")? else {
        return Ok(None);
    };
    let events = events_log(shared.events_json.as_deref())?;
    Ok(Some(Pairing {
        comm: shared.comm,
        cpu: shared.cpu,
        events,
        top: lat.top()?,
        outliers: super::outliers::log(lat),
        ..Pairing::new(mode)
    }))
}

/// Collapses one perf.data input (a file, or stdin read into memory).
pub(crate) fn collapse(input: Input, args: &Args, order: Order) -> Result<Output> {
    let name = input.name.clone();
    let opts = args.perf_data.options(&args.perf, &args.shared, &args.trace, &args.latency)?;
    let out = match input.path.clone() {
        Some(path) => perf_data::collapse_file(&path, &opts, order),
        None => {
            let mut data = Vec::new();
            input.reader().read_to_end(&mut data).with_context(|| format!("reading {name}"))?;
            perf_data::collapse_bytes(&data, &opts, order)
        }
    }
    .with_context(|| format!("reading perf.data {name}"))?;
    Ok(out)
}
