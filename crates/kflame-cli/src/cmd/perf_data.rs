//! perf.data input of `kflame collapse`: its options and the call into the library reader.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use kflame::collapse::{Order, Output};
use kflame::perf_data::{self, Options, Pairing};

use super::collapse::{SharedArgs, WeightArg};
use super::collapse_perf::PerfArgs;
use super::producers::LatencyArgs;
use super::trace_args::{TraceArgs, events_log};
use crate::input::Input;

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
pub(crate) fn collapse(input: Input, args: &super::collapse::Args, order: Order) -> Result<Output> {
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
