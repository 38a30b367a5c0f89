//! perf.data input of `kflame collapse`: its options and the call into the library reader.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kflame::collapse::{Order, Output};
use kflame::perf_data::{self, Options, Pairing};

use super::collapse::SharedArgs;
use super::collapse_perf::PerfArgs;
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
    kallsyms: Option<PathBuf>,
    /// Look recorded binaries and /usr/lib/debug files up under this directory (like perf's
    /// --symfs).
    #[arg(long, value_name = "DIR", help_heading = "perf.data options")]
    symfs: Option<PathBuf>,
    /// Do not unwind --call-graph dwarf user stacks.
    #[arg(long, help_heading = "perf.data options")]
    no_unwind: bool,
    /// Do not add the DWARF inline frames of unwound user frames (like perf script
    /// --no-inline).
    #[arg(long, help_heading = "perf.data options")]
    no_inline: bool,
    /// Read JIT symbols from DIR/perf-PID.map instead of /tmp/perf-PID.map (the map files
    /// JIT compilers such as node --perf-basic-prof write, copied with the recording).
    #[arg(long, value_name = "DIR", help_heading = "perf.data options")]
    perf_map_dir: Option<PathBuf>,
}

impl PerfDataArgs {
    fn options(&self, perf: &PerfArgs, shared: &SharedArgs, trace: &TraceArgs) -> Result<Options> {
        Ok(Options {
            include_pid: shared.pid,
            include_tid: shared.tid,
            annotate_kernel: perf.kernel || perf.all,
            annotate_jit: perf.jit || perf.all,
            include_addrs: perf.addrs,
            event_filter: perf.event_filter.clone(),
            counts: perf.counts || shared.weight.as_deref() == Some("count"),
            kallsyms: self.kallsyms.clone(),
            symfs: self.symfs.clone(),
            no_unwind: self.no_unwind,
            no_inline: self.no_inline,
            mark_inlined: perf.inline,
            perf_map_dir: self.perf_map_dir.clone(),
            pairing: pairing(perf, shared, trace)?,
        })
    }
}

/// `--mode syscalls|offcpu|probes`: the pairing options, refusing the sample-counting ones
/// as perf script input does.
fn pairing(perf: &PerfArgs, shared: &SharedArgs, trace: &TraceArgs) -> Result<Option<Pairing>> {
    let Some(mode) = super::perf_pairs::pair_mode(perf, shared, trace, "perf.data")? else {
        return Ok(None);
    };
    let events = events_log(shared.events_json.as_deref())?;
    Ok(Some(Pairing { mode, comm: shared.comm, cpu: shared.cpu, events }))
}

/// Refuses the options of other formats that perf.data input does not apply, rather than
/// ignoring them: the same file as `perf script` text supports them. `--comm`, `--cpu` and
/// `--events-json` apply with `--mode`.
fn check_options(shared: &SharedArgs, trace: &TraceArgs) -> Result<()> {
    let paired = trace.mode.is_some();
    let unused = [
        (trace.order, "--order"),
        (trace.page_type, "--page-type"),
        (shared.comm && !paired, "--comm without --mode"),
        (shared.cpu && !paired, "--cpu without --mode"),
        (shared.group_by.is_some(), "--group-by"),
        (shared.json, "--json"),
        (shared.events_json.is_some() && !paired, "--events-json without --mode"),
        (shared.weight.as_deref().is_some_and(|w| w != "count"), "--weight other than count"),
    ];
    let given: Vec<&str> = unused.iter().filter(|(on, _)| *on).map(|(_, name)| *name).collect();
    if !given.is_empty() {
        bail!(
            "{}: not supported for perf.data input; `perf script -i FILE | kflame collapse` \
             with the same options applies them",
            given.join(", ")
        );
    }
    Ok(())
}

/// Collapses one perf.data input (a file, or stdin read into memory).
pub(crate) fn collapse(
    input: Input,
    args: &PerfDataArgs,
    perf: &PerfArgs,
    shared: &SharedArgs,
    trace: &TraceArgs,
    order: Order,
) -> Result<Output> {
    check_options(shared, trace)?;
    let name = input.name.clone();
    let opts = args.options(perf, shared, trace)?;
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
