//! The collapser of an input configured from [`CollapseOptions`]: the one entry point of
//! every format (perf.data included), owning the option checks and defaults, so that front
//! ends only map their inputs onto the options.

use crate::collapse::events_json::EventLog;
use crate::collapse::options::{
    BccUnit, CollapseOptions, Latency, Mode, OptionsError, Target, Weight, check,
};
use crate::collapse::outliers::OutlierLog;
use crate::collapse::perf::pairs::PairMode;
use crate::collapse::{Collapse, Format};
use crate::perf_data;

/// Where a collapse writes besides its folded stacks, shared by all inputs of a run.
#[derive(Clone, Default)]
pub struct Sinks {
    /// Receives one JSON line per event or call (`events_json`).
    pub events: Option<EventLog>,
    /// Receives each `top` outlier on its own (`split_outliers`).
    pub outliers: Option<OutlierLog>,
}

/// A configured collapser: a line-based one for the engine, or the options of the perf.data
/// reader (binary input, read by its own reader).
pub enum Collapser {
    /// Text input, fed to [`crate::collapse::Engine`].
    Lines(Box<dyn Collapse>),
    /// perf.data input, for [`perf_data::collapse_file`] / [`perf_data::collapse_bytes`].
    PerfData(Box<perf_data::Options>),
    /// Another tool's profile (pprof, speedscope, OTLP), read whole by
    /// [`crate::import::read_sample_type`] with this reader and, for pprof, the sample type
    /// asked for (`sample_type`).
    Import(crate::import::Kind, Option<String>),
}

impl Target {
    /// Checks `opts` for this input (every option it does not apply is refused, conflicting
    /// values too) without building anything: what [`Target::collapser`] checks first, for
    /// callers that prepare [`Sinks`] only for valid options.
    pub fn validate(&self, name: &str, opts: &CollapseOptions) -> Result<(), OptionsError> {
        check(opts, self, name)?;
        self.checked(opts).map(|_| ())
    }

    /// The collapser of this input (named `name` in messages) configured from `opts`,
    /// writing to `sinks`; the options are checked first, as by [`Target::validate`].
    pub fn collapser(
        &self,
        name: &str,
        opts: &CollapseOptions,
        sinks: Sinks,
    ) -> Result<Collapser, OptionsError> {
        check(opts, self, name)?;
        let c = self.checked(opts)?;
        Ok(match self.format {
            Format::Folded => Collapser::Lines(Box::new(crate::collapse::folded::Folded::new())),
            Format::PerfScript => Collapser::Lines(perf_script(opts, c, sinks)),
            Format::PerfData => Collapser::PerfData(Box::new(perf_data(opts, c, sinks))),
            Format::Ftrace | Format::TraceCmd => Collapser::Lines(self.ftrace(opts, c, sinks)),
            Format::FunctionGraph => Collapser::Lines(function_graph(opts, c, sinks)),
            Format::ProcStacks => Collapser::Lines(Box::new(crate::collapse::proc_stacks::ProcStacks::new())),
            Format::Bpftrace => Collapser::Lines(Box::new(crate::collapse::bpftrace::Bpftrace::new(
                opts.bpftrace_map.as_deref(),
            ))),
            Format::Bcc => Collapser::Lines(bcc(opts)),
            Format::Stap => Collapser::Lines(Box::new(crate::collapse::stap::Stap::new())),
            Format::KernelLog => Collapser::Lines(kernel_log(opts, c.group_by)),
            Format::Crash => Collapser::Lines(crash(opts, c.group_by)),
            Format::Pprof => Collapser::Import(crate::import::Kind::Pprof, opts.sample_type.clone()),
            Format::Speedscope => Collapser::Import(crate::import::Kind::Speedscope, None),
            Format::Otlp => Collapser::Import(crate::import::Kind::Otlp, None),
        })
    }

    /// The checks beyond the table of [`crate::collapse::options::RULES`], and their results.
    fn checked(&self, opts: &CollapseOptions) -> Result<Checked, OptionsError> {
        let top = match opts.top {
            Some(0) => return Err(OptionsError::TopZero),
            t => t.map(|n| n as usize),
        };
        let pair = match self.format {
            Format::PerfScript => pair_mode(opts, "perf script")?,
            Format::PerfData => pair_mode(opts, "perf.data")?,
            _ => None,
        };
        if self.format == Format::PerfScript
            && pair.is_none()
            && opts.counts
            && opts.weight == Some(Weight::Bytes)
        {
            return Err(OptionsError::Contradict { a: "--counts", b: "--weight bytes" });
        }
        let group_by = match (self.format, &opts.group_by) {
            (Format::KernelLog, Some(g)) => {
                GroupBy::Log(crate::collapse::kernel_log::parse_group_keys(g).map_err(OptionsError::GroupBy)?)
            }
            (Format::Crash, Some(g)) => {
                GroupBy::Crash(crate::collapse::crash::parse_crash_keys(g).map_err(OptionsError::GroupBy)?)
            }
            _ => GroupBy::Default,
        };
        Ok(Checked { top, pair, group_by })
    }

    fn ftrace(&self, opts: &CollapseOptions, c: Checked, sinks: Sinks) -> Box<dyn Collapse> {
        use crate::collapse::ftrace::{Ftrace, FtraceOptions};
        let fopts = FtraceOptions {
            mode: self.mode,
            mode_reason: self.guessed.clone(),
            weight: opts.weight,
            comm: opts.comm,
            pid: opts.pid || opts.tid,
            cpu: opts.cpu,
            order: opts.order,
            page_type: opts.page_type,
            top: c.top,
        };
        let mut f = Ftrace::new(fopts, sinks.events);
        if let Some(log) = sinks.outliers {
            f = f.with_outliers(log);
        }
        Box::new(f)
    }
}

/// What the checks of [`Target::checked`] found.
struct Checked {
    top: Option<usize>,
    /// perf input with a pairing mode.
    pair: Option<PairMode>,
    group_by: GroupBy,
}

enum GroupBy {
    Default,
    Log(Vec<crate::collapse::kernel_log::GroupKey>),
    Crash(Vec<crate::collapse::crash::CrashKey>),
}

/// The pairing mode of perf input (`input` names it in messages); `None` without a mode.
fn pair_mode(opts: &CollapseOptions, input: &'static str) -> Result<Option<PairMode>, OptionsError> {
    Ok(match opts.mode {
        None => None,
        Some(Mode::Syscalls) => Some(PairMode::Syscalls),
        Some(Mode::OffCpu) => Some(PairMode::OffCpu),
        Some(Mode::Probes) => Some(PairMode::Probes),
        Some(Mode::Alloc | Mode::Events) => return Err(OptionsError::PerfMode { input }),
    })
}

/// perf script: pairing with a mode, else sample counting. Weights of samples: the period
/// column by default, allocated bytes for kmem allocation tracepoints, `counts` or
/// `weight: count` for one per sample, `weight: bytes` for bytes from the payload of any
/// event.
fn perf_script(opts: &CollapseOptions, c: Checked, sinks: Sinks) -> Box<dyn Collapse> {
    use crate::collapse::perf::pairs::{PerfPairs, PerfPairsOptions};
    use crate::collapse::perf::{PerfOptions, PerfScript, PerfWeight};
    let Some(mode) = c.pair else {
        let weight = match (opts.weight, opts.counts) {
            (Some(Weight::Bytes), _) => PerfWeight::Bytes,
            (Some(Weight::Count), _) | (None, true) => PerfWeight::Samples,
            (None, false) => PerfWeight::Auto,
        };
        return Box::new(PerfScript::new(PerfOptions {
            include_pid: opts.pid,
            include_tid: opts.tid,
            annotate_kernel: opts.kernel || opts.all,
            annotate_jit: opts.jit || opts.all,
            include_addrs: opts.addrs,
            mark_inlined: opts.inline,
            event_filter: opts.event_filter.clone(),
            weight,
        }));
    };
    let popts = PerfPairsOptions {
        mode,
        comm: opts.comm,
        pid: opts.pid || opts.tid,
        cpu: opts.cpu,
        annotate_kernel: opts.kernel || opts.all,
        annotate_jit: opts.jit || opts.all,
        include_addrs: opts.addrs,
        mark_inlined: opts.inline,
        top: c.top,
    };
    let mut p = PerfPairs::new(popts, sinks.events);
    if let Some(log) = sinks.outliers {
        p = p.with_outliers(log);
    }
    Box::new(p)
}

/// perf.data: the options of sample counting and, with a mode, of pairing (those of
/// sample counting were refused with a mode, as for perf script input).
fn perf_data(opts: &CollapseOptions, c: Checked, sinks: Sinks) -> perf_data::Options {
    perf_data::Options {
        include_pid: opts.pid,
        include_tid: opts.tid,
        annotate_kernel: opts.kernel || opts.all,
        annotate_jit: opts.jit || opts.all,
        include_addrs: opts.addrs,
        event_filter: opts.event_filter.clone(),
        counts: opts.counts || opts.weight == Some(Weight::Count),
        kallsyms: opts.kallsyms.clone(),
        symfs: opts.symfs.clone(),
        no_unwind: opts.no_unwind,
        no_inline: opts.no_inline,
        mark_inlined: opts.inline,
        perf_map_dir: opts.perf_map_dir.clone(),
        pairing: c.pair.map(|mode| perf_data::Pairing {
            comm: opts.comm,
            cpu: opts.cpu,
            events: sinks.events,
            top: c.top,
            outliers: sinks.outliers,
            ..perf_data::Pairing::new(mode)
        }),
        host: if opts.no_host_lookups { perf_data::Host::Isolated } else { perf_data::Host::Running },
    }
}

fn function_graph(opts: &CollapseOptions, c: Checked, sinks: Sinks) -> Box<dyn Collapse> {
    use crate::collapse::fgraph::{FunctionGraph, Options};
    let latency = match opts.latency {
        None | Some(Latency::SelfTime) => crate::collapse::fgraph::Latency::SelfTime,
        Some(Latency::Total) => crate::collapse::fgraph::Latency::Total,
    };
    // function_graph names tasks by their kernel pid, the thread id: `tid` is `pid` here.
    let fopts = Options { latency, top: c.top, comm: opts.comm, pid: opts.pid || opts.tid, cpu: opts.cpu };
    let mut f = FunctionGraph::new(fopts);
    if let Some(log) = sinks.events {
        f = f.with_events(log);
    }
    if let Some(log) = sinks.outliers {
        f = f.with_outliers(log);
    }
    Box::new(f)
}

fn bcc(opts: &CollapseOptions) -> Box<dyn Collapse> {
    use crate::collapse::bcc::{Bcc, Options, Unit};
    let unit = match opts.bcc_unit {
        None => Unit::Auto,
        Some(BccUnit::Us) => Unit::Micros,
        Some(BccUnit::Samples) => Unit::Samples,
        Some(BccUnit::Events) => Unit::Events,
    };
    Box::new(Bcc::new(Options { unit, pid: opts.pid }))
}

fn kernel_log(opts: &CollapseOptions, group_by: GroupBy) -> Box<dyn Collapse> {
    use crate::collapse::kernel_log::{GroupKey, KernelLog, Options};
    let mut kopts = Options { offsets: opts.offsets, unreliable: opts.unreliable, ..Default::default() };
    if let GroupBy::Log(keys) = group_by {
        kopts.group_by = keys;
    }
    // `comm` / `cpu` add those root frames when `group_by` does not name them.
    for (on, key) in [(opts.comm, GroupKey::Comm), (opts.cpu, GroupKey::Cpu)] {
        if on && !kopts.group_by.contains(&key) {
            kopts.group_by.push(key);
        }
    }
    Box::new(KernelLog::new(kopts))
}

fn crash(opts: &CollapseOptions, group_by: GroupBy) -> Box<dyn Collapse> {
    use crate::collapse::crash::{Crash, CrashKey, DEFAULT_KEYS};
    let mut keys = match group_by {
        GroupBy::Crash(keys) => keys,
        _ => DEFAULT_KEYS.to_vec(),
    };
    for (on, key) in [(opts.comm, CrashKey::Comm), (opts.cpu, CrashKey::Cpu)] {
        if on && !keys.contains(&key) {
            keys.push(key);
        }
    }
    Box::new(Crash::new(keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(format: Format, mode: Option<Mode>) -> Target {
        Target { format, mode, guessed: None, json: false }
    }

    /// Every format has a collapser with no options; perf.data gets the reader's options.
    #[test]
    fn every_format_builds() {
        let none = CollapseOptions::default();
        for &f in Format::ALL {
            let c = target(f, None).collapser("in", &none, Sinks::default()).unwrap();
            assert_eq!(matches!(c, Collapser::PerfData(_)), f == Format::PerfData, "{f}");
        }
    }

    /// The checks beyond the table are made before anything is built.
    #[test]
    fn conflicts_are_refused() {
        let perf = target(Format::PerfScript, None);
        let both = CollapseOptions { counts: true, weight: Some(Weight::Bytes), ..Default::default() };
        assert_eq!(
            perf.validate("p", &both),
            Err(OptionsError::Contradict { a: "--counts", b: "--weight bytes" })
        );
        let top0 = CollapseOptions { mode: Some(Mode::OffCpu), top: Some(0), ..Default::default() };
        let paired = target(Format::PerfData, Some(Mode::OffCpu));
        assert_eq!(paired.validate("d", &top0).unwrap_err().to_string(), OptionsError::TopZero.to_string());
        let keys = CollapseOptions { group_by: Some("nope".into()), ..Default::default() };
        assert!(matches!(target(Format::Crash, None).validate("c", &keys), Err(OptionsError::GroupBy(_))));
        let off = CollapseOptions { mode: Some(Mode::OffCpu), top: Some(3), ..Default::default() };
        match paired.collapser("d", &off, Sinks::default()) {
            Ok(Collapser::PerfData(o)) => assert_eq!(o.pairing.and_then(|p| p.top), Some(3)),
            _ => panic!("perf.data options expected"),
        }
    }
}
