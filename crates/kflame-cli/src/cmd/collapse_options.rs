//! The options of `kflame collapse` mapped onto the library's
//! [`CollapseOptions`](kflame::collapse::options::CollapseOptions), which owns the table of
//! which input takes which option (`kflame::collapse::options::RULES`) and the check that
//! refuses, with a message naming the inputs that take it, an option an input does not
//! apply.
//!
//! A test below checks that every option of `collapse` has a rule there (the clap id of a
//! flag is the id of its rule), so that a new option cannot be forgotten.

use kflame::collapse::options::{BccUnit, CollapseOptions, Latency, Mode, Weight};

use super::collapse_args::{Args, BccUnit as BccUnitArg, LatencyArg, TraceMode, WeightArg};

impl Args {
    /// What the flags mean, in library terms.
    pub(crate) fn options(&self) -> CollapseOptions {
        CollapseOptions {
            time_order: self.time_order,
            pid: self.shared.pid,
            tid: self.shared.tid,
            comm: self.shared.comm,
            cpu: self.shared.cpu,
            weight: self.shared.weight.map(WeightArg::weight),
            group_by: self.shared.group_by.clone(),
            json: self.shared.json,
            events_json: self.shared.events_json.clone(),
            kernel: self.perf.kernel,
            jit: self.perf.jit,
            all: self.perf.all,
            addrs: self.perf.addrs,
            inline: self.perf.inline,
            event_filter: self.perf.event_filter.clone(),
            counts: self.perf.counts,
            sample_type: self.producers.sample_type.clone(),
            mode: self.trace.mode.map(TraceMode::mode),
            order: self.trace.order,
            page_type: self.trace.page_type,
            latency: self.latency.latency.map(|l| match l {
                LatencyArg::SelfTime => Latency::SelfTime,
                LatencyArg::Total => Latency::Total,
            }),
            top: self.latency.top,
            split_outliers: self.latency.split_outliers.clone(),
            bpftrace_map: self.producers.bpftrace_map.clone(),
            bcc_unit: self.producers.bcc_unit.map(|u| match u {
                BccUnitArg::Us => BccUnit::Us,
                BccUnitArg::Samples => BccUnit::Samples,
                BccUnitArg::Events => BccUnit::Events,
            }),
            offsets: self.report.offsets,
            unreliable: self.report.unreliable,
            kallsyms: self.perf_data.kallsyms.clone(),
            symfs: self.perf_data.symfs.clone(),
            no_unwind: self.perf_data.no_unwind,
            no_inline: self.perf_data.no_inline,
            perf_map_dir: self.perf_data.perf_map_dir.clone(),
            no_host_lookups: self.perf_data.no_host_lookups,
        }
    }
}

impl WeightArg {
    pub(crate) fn weight(self) -> Weight {
        match self {
            WeightArg::Count => Weight::Count,
            WeightArg::Bytes => Weight::Bytes,
        }
    }
}

impl TraceMode {
    pub(crate) fn mode(self) -> Mode {
        match self {
            TraceMode::Alloc => Mode::Alloc,
            TraceMode::Syscalls => Mode::Syscalls,
            TraceMode::Offcpu => Mode::OffCpu,
            TraceMode::Probes => Mode::Probes,
            TraceMode::Events => Mode::Events,
        }
    }
}

/// The options every input takes: inputs, `--format`, `--output`, `--threads` (output is
/// the same for any number of threads), `--mixed-units` (how inputs are merged), and clap's
/// own.
#[cfg(test)]
pub(crate) const GENERIC: &[&str] = &["files", "format", "output", "threads", "mixed_units", "help"];

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use kflame::collapse::options::RULES;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// Every option of `collapse` has a rule (or is generic), and every rule's `given`
    /// recognises its own flag once mapped onto the library's options.
    #[test]
    fn every_option_has_a_rule() {
        let cmd = Cli::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            assert!(
                GENERIC.contains(&id) || RULES.iter().any(|r| r.id == id),
                "collapse option `{id}` has no rule in kflame::collapse::options::RULES: say which \
                 formats take it"
            );
        }
        for r in RULES {
            let mut argv = vec!["collapse".to_string()];
            argv.extend(r.flag.split(' ').map(|w| w.split('|').next().unwrap_or(w).to_string()));
            let arg = cmd.get_arguments().find(|a| a.get_id().as_str() == r.id).expect("a clap argument");
            if arg.get_action().takes_values() && !r.flag.contains(' ') {
                let value =
                    arg.get_possible_values().first().map_or("1".into(), |v| v.get_name().to_string());
                argv.push(value);
            }
            let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            assert!((r.given)(&cli.args.options()), "{argv:?} not recognised by the rule of {}", r.flag);
            let none = Cli::try_parse_from(["collapse"]).unwrap();
            assert!(!(r.given)(&none.args.options()), "{} given by default", r.flag);
        }
    }
}
