//! perf.data input of `kflame collapse`: its options and the call into the library reader.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use kflame::collapse::{Order, Output};
use kflame::fold::Meta;
use kflame::perf_data::{self, Options};

use super::collapse::SharedArgs;
use crate::input::Input;

/// Options of perf.data input (`--pid`/`--tid` come from the shared options).
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
    /// Annotate kernel frames with `_[k]` (stackcollapse-perf --kernel).
    #[arg(long, help_heading = "perf.data options")]
    kernel: bool,
    /// Annotate JIT frames (/tmp/perf-PID.map) with `_[j]`.
    #[arg(long, help_heading = "perf.data options")]
    jit: bool,
    /// Both --kernel and --jit.
    #[arg(long, help_heading = "perf.data options")]
    all: bool,
    /// Show addresses of unknown frames: `[dso <addr>]`.
    #[arg(long, help_heading = "perf.data options")]
    addrs: bool,
    /// Keep only samples of this event (as perf script names it, e.g. `cpu-clock:pppH`);
    /// default: the event of the first sample.
    #[arg(long, value_name = "EVENT", help_heading = "perf.data options")]
    event_filter: Option<String>,
    /// Weight each sample 1 instead of by its period.
    #[arg(long, help_heading = "perf.data options")]
    counts: bool,
}

impl PerfDataArgs {
    fn options(&self, shared: &SharedArgs) -> Options {
        Options {
            include_pid: shared.pid,
            include_tid: shared.tid,
            annotate_kernel: self.kernel || self.all,
            annotate_jit: self.jit || self.all,
            include_addrs: self.addrs,
            event_filter: self.event_filter.clone(),
            counts: self.counts,
            kallsyms: self.kallsyms.clone(),
            symfs: self.symfs.clone(),
            no_unwind: self.no_unwind,
        }
    }
}

/// Collapses one perf.data input (a file, or stdin read into memory).
pub(crate) fn collapse(
    input: Input,
    args: &PerfDataArgs,
    shared: &SharedArgs,
    order: Order,
    meta: &mut Meta,
) -> Result<Output> {
    let name = input.name.clone();
    let opts = args.options(shared);
    let out = match input.path.clone() {
        Some(path) => perf_data::collapse_file(&path, &opts, order),
        None => {
            let mut data = Vec::new();
            input.reader().read_to_end(&mut data).with_context(|| format!("reading {name}"))?;
            perf_data::collapse_bytes(&data, &opts, order)
        }
    }
    .with_context(|| format!("reading perf.data {name}"))?;
    meta.merge(&out.meta).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(out)
}
