//! Which `kflame collapse` options each input takes: one table, checked for every input
//! once its format (and, for trace input, its mode) is known. An option that the input does
//! not apply is refused with a message naming the inputs that take it, never ignored.
//!
//! A test below checks that every option of `collapse` has a row here, so that a new option
//! cannot be forgotten.

use anyhow::{Result, bail};
use kflame::collapse::Format;
use kflame::collapse::ftrace::{Mode, guess_mode};

use super::collapse_args::{Args, TraceMode, WeightArg};
use crate::input::Input;

/// What one input is, as far as options go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) format: Format,
    /// perf script / perf.data: `--mode` (None: sample counting). ftrace / trace-cmd: the mode
    /// in effect, given or guessed. Other formats: None.
    pub(crate) mode: Option<TraceMode>,
    /// For ftrace / trace-cmd without `--mode`: why the mode was guessed.
    pub(crate) guessed: Option<String>,
    /// `--json` output (kernel logs, crash dumps).
    pub(crate) json: bool,
}

impl Target {
    /// The target of `input` in `format` with these options (guessing the mode of trace
    /// input from its head, as the collapser would).
    pub(crate) fn of(format: Format, args: &Args, input: &Input) -> Target {
        let mut t = Target { format, mode: args.trace.mode, guessed: None, json: false };
        if t.trace() && t.mode.is_none() {
            let (mode, why) = guess_mode(&input.head);
            t.mode = Some(TraceMode::from_mode(mode));
            t.guessed = Some(why);
        }
        t
    }

    fn perf(&self) -> bool {
        matches!(self.format, Format::PerfScript | Format::PerfData)
    }

    fn trace(&self) -> bool {
        matches!(self.format, Format::Ftrace | Format::TraceCmd)
    }

    /// Durations of paired spans (perf with --mode, ftrace in those modes).
    fn spans(&self) -> bool {
        (self.perf() || self.trace())
            && matches!(self.mode, Some(TraceMode::Syscalls | TraceMode::Offcpu | TraceMode::Probes))
    }

    /// perf samples counted (no --mode).
    fn samples(&self) -> bool {
        self.perf() && self.mode.is_none()
    }

    /// ftrace / trace-cmd single events (alloc or events mode).
    fn single_events(&self) -> bool {
        self.trace() && matches!(self.mode, Some(TraceMode::Alloc | TraceMode::Events))
    }

    /// `perf-data input without --mode`, `ftrace input in syscalls mode (guessed...)`.
    fn describe(&self) -> String {
        let mut s = format!("{} input", self.format.name());
        if self.json {
            s.push_str(" with --json");
        } else if self.perf() {
            match self.mode {
                None => s.push_str(" without --mode (sample counting)"),
                Some(m) => s.push_str(&format!(" with --mode {}", m.name())),
            }
        } else if let (true, Some(m)) = (self.trace(), self.mode) {
            s.push_str(&format!(" in {} mode", m.name()));
            if self.guessed.is_some() {
                s.push_str(" (chosen from its events; set another with --mode)");
            }
        }
        s
    }
}

/// One option: how to tell it was given, which inputs apply it, and how to say so.
pub(crate) struct Rule {
    /// The clap id of the option (its field name).
    pub(crate) id: &'static str,
    /// As typed.
    pub(crate) flag: &'static str,
    pub(crate) given: fn(&Args) -> bool,
    pub(crate) applies: fn(&Target) -> bool,
    /// The inputs that take it, for the message.
    pub(crate) takes: &'static str,
}

/// Every option of `collapse` except the generic ones (inputs, `-F`, `-o`, `-j`).
pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "time_order",
        flag: "--time-order",
        given: |a| a.time_order,
        applies: |_| true,
        takes: "every format (not with --json)",
    },
    Rule {
        id: "pid",
        flag: "--pid",
        given: |a| a.shared.pid,
        applies: |t| t.perf() || t.trace() || matches!(t.format, Format::FunctionGraph | Format::Bcc),
        takes: "perf-script, perf-data, ftrace, trace-cmd, function-graph, bcc",
    },
    Rule {
        id: "tid",
        flag: "--tid",
        given: |a| a.shared.tid,
        applies: |t| t.perf() || t.trace() || t.format == Format::FunctionGraph,
        takes: "perf-script, perf-data, ftrace, trace-cmd, function-graph",
    },
    Rule {
        id: "comm",
        flag: "--comm",
        given: |a| a.shared.comm,
        applies: |t| {
            t.perf()
                || t.trace()
                || matches!(
                    t.format,
                    Format::FunctionGraph | Format::KernelLog | Format::Crash | Format::ProcStacks
                )
        },
        takes: "ftrace, trace-cmd, function-graph, kernel-log, crash, perf-script and perf-data with \
                --mode (without it, and in proc-stacks, the comm is always the root frame)",
    },
    Rule {
        id: "cpu",
        flag: "--cpu",
        given: |a| a.shared.cpu,
        applies: |t| {
            t.spans()
                || t.trace()
                || matches!(t.format, Format::FunctionGraph | Format::KernelLog | Format::Crash)
        },
        takes: "ftrace, trace-cmd, function-graph, kernel-log, crash, and perf-script and perf-data \
                with --mode syscalls|offcpu|probes",
    },
    Rule {
        id: "weight",
        flag: "--weight count",
        given: |a| a.shared.weight == Some(WeightArg::Count),
        applies: |t| t.samples() || t.single_events(),
        takes: "perf-script and perf-data without --mode, ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "weight",
        flag: "--weight bytes",
        given: |a| a.shared.weight == Some(WeightArg::Bytes),
        applies: |t| (t.samples() && t.format == Format::PerfScript) || t.single_events(),
        takes: "perf-script without --mode, ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "group_by",
        flag: "--group-by",
        given: |a| a.shared.group_by.is_some(),
        applies: |t| matches!(t.format, Format::KernelLog | Format::Crash) && !t.json,
        takes: "kernel-log and crash (not with --json)",
    },
    Rule {
        id: "json",
        flag: "--json",
        given: |a| a.shared.json,
        applies: |t| matches!(t.format, Format::KernelLog | Format::Crash),
        takes: "kernel-log and crash",
    },
    Rule {
        id: "events_json",
        flag: "--events-json",
        given: |a| a.shared.events_json.is_some(),
        applies: |t| t.spans() || t.trace() || t.format == Format::FunctionGraph,
        takes: "ftrace, trace-cmd, function-graph, and perf-script and perf-data with --mode \
                syscalls|offcpu|probes",
    },
    Rule {
        id: "kernel",
        flag: "--kernel",
        given: |a| a.perf.kernel,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "jit",
        flag: "--jit",
        given: |a| a.perf.jit,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "all",
        flag: "--all",
        given: |a| a.perf.all,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "addrs",
        flag: "--addrs",
        given: |a| a.perf.addrs,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "inline",
        flag: "--inline",
        given: |a| a.perf.inline,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "event_filter",
        flag: "--event-filter",
        given: |a| a.perf.event_filter.is_some(),
        applies: Target::samples,
        takes: "perf-script and perf-data without --mode (--mode pairs the events it needs)",
    },
    Rule {
        id: "counts",
        flag: "--counts",
        given: |a| a.perf.counts,
        applies: Target::samples,
        takes: "perf-script and perf-data without --mode (--mode weighs by duration)",
    },
    Rule {
        id: "mode",
        flag: "--mode syscalls|offcpu|probes",
        given: |a| matches!(a.trace.mode, Some(TraceMode::Syscalls | TraceMode::Offcpu | TraceMode::Probes)),
        applies: |t| t.perf() || t.trace(),
        takes: "perf-script, perf-data, ftrace, trace-cmd",
    },
    Rule {
        id: "mode",
        flag: "--mode alloc|events",
        given: |a| matches!(a.trace.mode, Some(TraceMode::Alloc | TraceMode::Events)),
        applies: Target::trace,
        takes: "ftrace and trace-cmd (perf-script and perf-data count samples without --mode, kmem \
                allocation tracepoints by their bytes)",
    },
    Rule {
        id: "order",
        flag: "--order",
        given: |a| a.trace.order,
        applies: Target::single_events,
        takes: "ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "page_type",
        flag: "--page-type",
        given: |a| a.trace.page_type,
        applies: Target::single_events,
        takes: "ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "latency",
        flag: "--latency",
        given: |a| a.latency.latency.is_some(),
        applies: |t| t.format == Format::FunctionGraph,
        takes: "function-graph",
    },
    Rule {
        id: "top",
        flag: "--top",
        given: |a| a.latency.top.is_some(),
        applies: |t| t.spans() || t.format == Format::FunctionGraph,
        takes: "function-graph, and perf-script, perf-data, ftrace and trace-cmd in syscalls, \
                offcpu or probes mode (--mode)",
    },
    Rule {
        id: "split_outliers",
        flag: "--split-outliers",
        given: |a| a.latency.split_outliers.is_some(),
        applies: |t| t.spans() || t.format == Format::FunctionGraph,
        takes: "function-graph, and perf-script, perf-data, ftrace and trace-cmd in syscalls, \
                offcpu or probes mode (--mode)",
    },
    Rule {
        id: "bpftrace_map",
        flag: "--bpftrace-map",
        given: |a| a.producers.bpftrace_map.is_some(),
        applies: |t| t.format == Format::Bpftrace,
        takes: "bpftrace",
    },
    Rule {
        id: "bcc_unit",
        flag: "--bcc-unit",
        given: |a| a.producers.bcc_unit.is_some(),
        applies: |t| t.format == Format::Bcc,
        takes: "bcc",
    },
    Rule {
        id: "offsets",
        flag: "--offsets",
        given: |a| a.report.offsets,
        applies: |t| t.format == Format::KernelLog && !t.json,
        takes: "kernel-log (not with --json, whose frames keep their offsets in raw_frames)",
    },
    Rule {
        id: "unreliable",
        flag: "--unreliable",
        given: |a| a.report.unreliable,
        applies: |t| t.format == Format::KernelLog && !t.json,
        takes: "kernel-log (not with --json, whose raw_frames keep `?` frames)",
    },
    Rule {
        id: "kallsyms",
        flag: "--kallsyms",
        given: |a| a.perf_data.kallsyms.is_some(),
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "symfs",
        flag: "--symfs",
        given: |a| a.perf_data.symfs.is_some(),
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "no_unwind",
        flag: "--no-unwind",
        given: |a| a.perf_data.no_unwind,
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "no_inline",
        flag: "--no-inline",
        given: |a| a.perf_data.no_inline,
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "perf_map_dir",
        flag: "--perf-map-dir",
        given: |a| a.perf_data.perf_map_dir.is_some(),
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "no_host_lookups",
        flag: "--no-host-lookups",
        given: |a| a.perf_data.no_host_lookups,
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
];

/// The options every input takes: inputs, `--format`, `--output`, `--threads` (output is
/// the same for any number of threads), `--mixed-units` (how inputs are merged), and clap's
/// own.
#[cfg(test)]
pub(crate) const GENERIC: &[&str] = &["files", "format", "output", "threads", "mixed_units", "help"];

/// Refuses the options given in `args` that `target` does not apply, all of them in one
/// message naming the input (`name`) and, for each, the inputs that take it.
pub(crate) fn check(args: &Args, target: &Target, name: &str) -> Result<()> {
    let refused: Vec<String> = RULES
        .iter()
        .filter(|r| (r.given)(args))
        .filter(|r| !(r.applies)(target) || (target.json && r.id != "json"))
        .map(|r| {
            if target.json && r.id != "json" {
                format!("  {}: not with --json (one JSON object per report or task, as found)", r.flag)
            } else {
                format!("  {}: taken by {}", r.flag, r.takes)
            }
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    bail!(
        "{name} is {}; {} not apply to it:\n{}",
        target.describe(),
        if refused.len() == 1 { "this option does" } else { "these options do" },
        refused.join("\n")
    )
}

impl TraceMode {
    fn from_mode(m: Mode) -> TraceMode {
        match m {
            Mode::Alloc => TraceMode::Alloc,
            Mode::Syscalls => TraceMode::Syscalls,
            Mode::OffCpu => TraceMode::Offcpu,
            Mode::Probes => TraceMode::Probes,
            Mode::Events => TraceMode::Events,
        }
    }

    /// As on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TraceMode::Alloc => "alloc",
            TraceMode::Syscalls => "syscalls",
            TraceMode::Offcpu => "offcpu",
            TraceMode::Probes => "probes",
            TraceMode::Events => "events",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// Every option of `collapse` has a row (or is generic), and every row's `given`
    /// recognises its own flag.
    #[test]
    fn every_option_has_a_rule() {
        let cmd = Cli::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            assert!(
                GENERIC.contains(&id) || RULES.iter().any(|r| r.id == id),
                "collapse option `{id}` has no row in RULES: say which formats take it"
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
            assert!((r.given)(&cli.args), "{argv:?} not recognised by the rule of {}", r.flag);
            let none = Cli::try_parse_from(["collapse"]).unwrap();
            assert!(!(r.given)(&none.args), "{} given by default", r.flag);
        }
    }
}
