//! What the options of a collapse mean, in library terms, and which input takes which.
//!
//! [`CollapseOptions`] holds every option of a collapse (the CLI's `kflame collapse` flags,
//! and whatever a server maps its requests onto); [`RULES`] says, for each option, which
//! inputs (format, and for perf and trace input the mode) apply it; [`check`] refuses the
//! options an input does not apply, with a message naming the inputs that take them, so
//! that an option is never silently ignored. Front ends only map their inputs onto these
//! types; the decisions are made here.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Format;
use super::ftrace;

/// What each stack is weighed by, where an input offers the choice (`--weight`): the
/// ftrace collapser's own type (perf input maps it, with `--counts`, onto
/// [`super::perf::PerfWeight`], whose default reads the period or the allocation size).
pub use super::ftrace::WeightBy as Weight;

/// What a trace collapse measures (`--mode`): for ftrace and trace-cmd input any of them;
/// for perf input (perf script, perf.data) the pairing modes `syscalls`, `offcpu`, `probes`.
/// The ftrace collapser's own type, spelled in serde as on the command line.
pub use super::ftrace::Mode;

/// function_graph weight (`--latency`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Latency {
    /// Time in the function itself (the default).
    #[serde(rename = "self")]
    SelfTime,
    /// Whole duration, children included.
    Total,
}

/// Unit of bcc counts for input without a header line that tells it (`--bcc-unit`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BccUnit {
    /// Microseconds, converted to nanoseconds.
    Us,
    /// Samples.
    Samples,
    /// Event counts.
    Events,
}

/// Every option of a collapse, each as given (`false` / `None`: not given). Which inputs
/// take which is in [`RULES`]; the field names are the option ids used there (the CLI's
/// flags with `_` for `-`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CollapseOptions {
    /// Keep stacks in input (time) order.
    pub time_order: bool,
    /// `comm-PID` root frames.
    pub pid: bool,
    /// `comm-PID/TID` root frames (perf); the thread id as `pid` elsewhere.
    pub tid: bool,
    /// The task name as a root frame.
    pub comm: bool,
    /// The CPU as a root frame.
    pub cpu: bool,
    /// What stacks are weighed by.
    pub weight: Option<Weight>,
    /// Synthetic root frames of kernel logs and crash dumps, comma-separated keys.
    pub group_by: Option<String>,
    /// One JSON object per report or task instead of folded stacks.
    pub json: bool,
    /// Also write one JSON line per event or call to this file.
    pub events_json: Option<PathBuf>,
    /// perf: suffix kernel frames with `_[k]`.
    pub kernel: bool,
    /// perf: suffix JIT frames with `_[j]`.
    pub jit: bool,
    /// perf: `kernel` and `jit`.
    pub all: bool,
    /// perf: raw addresses for frames without a symbol.
    pub addrs: bool,
    /// perf: suffix inlined frames with `_[i]`.
    pub inline: bool,
    /// perf: fold only samples of this event.
    pub event_filter: Option<String>,
    /// perf: count samples instead of summing periods.
    pub counts: bool,
    /// pprof: the sample type to read (`alloc_space`, `inuse_space/bytes`).
    pub sample_type: Option<String>,
    /// What a trace collapse measures.
    pub mode: Option<Mode>,
    /// The page allocation order as a root frame.
    pub order: bool,
    /// The migrate type and GFP flags of allocations as root frames.
    pub page_type: bool,
    /// function_graph weight.
    pub latency: Option<Latency>,
    /// Keep only the N slowest calls or events.
    pub top: Option<u32>,
    /// Write each outlier of `top` into this directory.
    pub split_outliers: Option<PathBuf>,
    /// bpftrace: the map to collapse.
    pub bpftrace_map: Option<String>,
    /// bcc: unit of the counts.
    pub bcc_unit: Option<BccUnit>,
    /// Kernel logs: keep `+0x12/0x34` offsets.
    pub offsets: bool,
    /// Kernel logs: keep `? ` frames.
    pub unreliable: bool,
    /// perf.data: kernel symbols from this kallsyms file.
    pub kallsyms: Option<PathBuf>,
    /// perf.data: look binaries up under this directory.
    pub symfs: Option<PathBuf>,
    /// perf.data: do not unwind DWARF user stacks.
    pub no_unwind: bool,
    /// perf.data: no DWARF inline frames.
    pub no_inline: bool,
    /// perf.data: JIT maps from this directory.
    pub perf_map_dir: Option<PathBuf>,
    /// perf.data: read nothing of this machine.
    pub no_host_lookups: bool,
}

/// What one input is, as far as options go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its format.
    pub format: Format,
    /// perf script / perf.data: the `mode` option (None: sample counting). ftrace /
    /// trace-cmd: the mode in effect, given or guessed. Other formats: None.
    pub mode: Option<Mode>,
    /// For ftrace / trace-cmd without a `mode` option: why the mode was guessed.
    pub guessed: Option<String>,
    /// JSON output (kernel logs, crash dumps).
    pub json: bool,
}

impl Target {
    /// The target of an input in `format` with these options, `head` being the start of
    /// the input (the mode of trace input without a `mode` option is guessed from it, as
    /// the collapser would).
    pub fn of(format: Format, opts: &CollapseOptions, head: &[u8]) -> Target {
        let mut t = Target { format, mode: opts.mode, guessed: None, json: false };
        if t.trace() && t.mode.is_none() {
            let (mode, why) = ftrace::guess_mode(head);
            t.mode = Some(mode);
            t.guessed = Some(why);
        }
        t
    }

    /// The target of kernel-log or crash input written as JSON.
    pub fn json(format: Format) -> Target {
        Target { format, mode: None, guessed: None, json: true }
    }

    fn perf(&self) -> bool {
        matches!(self.format, Format::PerfScript | Format::PerfData)
    }

    fn trace(&self) -> bool {
        matches!(self.format, Format::Ftrace | Format::TraceCmd)
    }

    /// Durations of paired spans (perf with a mode, ftrace in those modes).
    fn spans(&self) -> bool {
        (self.perf() || self.trace()) && self.mode.is_some_and(Mode::spans)
    }

    /// perf samples counted (no mode).
    fn samples(&self) -> bool {
        self.perf() && self.mode.is_none()
    }

    /// ftrace / trace-cmd single events (alloc or events mode).
    fn single_events(&self) -> bool {
        self.trace() && matches!(self.mode, Some(Mode::Alloc | Mode::Events))
    }

    /// `perf-data input without --mode`, `ftrace input in syscalls mode (guessed...)`.
    pub fn describe(&self) -> String {
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
pub struct Rule {
    /// The option's id: its field name in [`CollapseOptions`] (and the CLI's clap id).
    pub id: &'static str,
    /// As typed on the command line.
    pub flag: &'static str,
    /// Whether the options give it.
    pub given: fn(&CollapseOptions) -> bool,
    /// Whether an input applies it.
    pub applies: fn(&Target) -> bool,
    /// The inputs that take it, for the message.
    pub takes: &'static str,
}

/// Every option of a collapse except the generic ones (inputs, format, output, threads).
pub const RULES: &[Rule] = &[
    Rule {
        id: "time_order",
        flag: "--time-order",
        given: |o| o.time_order,
        applies: |_| true,
        takes: "every format (not with --json)",
    },
    Rule {
        id: "pid",
        flag: "--pid",
        given: |o| o.pid,
        applies: |t| t.perf() || t.trace() || matches!(t.format, Format::FunctionGraph | Format::Bcc),
        takes: "perf-script, perf-data, ftrace, trace-cmd, function-graph, bcc",
    },
    Rule {
        id: "tid",
        flag: "--tid",
        given: |o| o.tid,
        applies: |t| t.perf() || t.trace() || t.format == Format::FunctionGraph,
        takes: "perf-script, perf-data, ftrace, trace-cmd, function-graph",
    },
    Rule {
        id: "comm",
        flag: "--comm",
        given: |o| o.comm,
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
        given: |o| o.cpu,
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
        given: |o| o.weight == Some(Weight::Count),
        applies: |t| t.samples() || t.single_events(),
        takes: "perf-script and perf-data without --mode, ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "weight",
        flag: "--weight bytes",
        given: |o| o.weight == Some(Weight::Bytes),
        applies: |t| (t.samples() && t.format == Format::PerfScript) || t.single_events(),
        takes: "perf-script without --mode, ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "group_by",
        flag: "--group-by",
        given: |o| o.group_by.is_some(),
        applies: |t| matches!(t.format, Format::KernelLog | Format::Crash) && !t.json,
        takes: "kernel-log and crash (not with --json)",
    },
    Rule {
        id: "json",
        flag: "--json",
        given: |o| o.json,
        applies: |t| matches!(t.format, Format::KernelLog | Format::Crash),
        takes: "kernel-log and crash",
    },
    Rule {
        id: "events_json",
        flag: "--events-json",
        given: |o| o.events_json.is_some(),
        applies: |t| t.spans() || t.trace() || t.format == Format::FunctionGraph,
        takes: "ftrace, trace-cmd, function-graph, and perf-script and perf-data with --mode \
                syscalls|offcpu|probes",
    },
    Rule {
        id: "kernel",
        flag: "--kernel",
        given: |o| o.kernel,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "jit",
        flag: "--jit",
        given: |o| o.jit,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "all",
        flag: "--all",
        given: |o| o.all,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "addrs",
        flag: "--addrs",
        given: |o| o.addrs,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "inline",
        flag: "--inline",
        given: |o| o.inline,
        applies: Target::perf,
        takes: "perf-script and perf-data",
    },
    Rule {
        id: "event_filter",
        flag: "--event-filter",
        given: |o| o.event_filter.is_some(),
        applies: Target::samples,
        takes: "perf-script and perf-data without --mode (--mode pairs the events it needs)",
    },
    Rule {
        id: "sample_type",
        flag: "--sample-type",
        given: |o| o.sample_type.is_some(),
        applies: |t| t.format == Format::Pprof,
        takes: "pprof",
    },
    Rule {
        id: "counts",
        flag: "--counts",
        given: |o| o.counts,
        applies: Target::samples,
        takes: "perf-script and perf-data without --mode (--mode weighs by duration)",
    },
    Rule {
        id: "mode",
        flag: "--mode syscalls|offcpu|probes",
        given: |o| o.mode.is_some_and(Mode::spans),
        applies: |t| t.perf() || t.trace(),
        takes: "perf-script, perf-data, ftrace, trace-cmd",
    },
    Rule {
        id: "mode",
        flag: "--mode alloc|events",
        given: |o| matches!(o.mode, Some(Mode::Alloc | Mode::Events)),
        applies: Target::trace,
        takes: "ftrace and trace-cmd (perf-script and perf-data count samples without --mode, kmem \
                allocation tracepoints by their bytes)",
    },
    Rule {
        id: "order",
        flag: "--order",
        given: |o| o.order,
        applies: Target::single_events,
        takes: "ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "page_type",
        flag: "--page-type",
        given: |o| o.page_type,
        applies: Target::single_events,
        takes: "ftrace and trace-cmd in alloc and events modes",
    },
    Rule {
        id: "latency",
        flag: "--latency",
        given: |o| o.latency.is_some(),
        applies: |t| t.format == Format::FunctionGraph,
        takes: "function-graph",
    },
    Rule {
        id: "top",
        flag: "--top",
        given: |o| o.top.is_some(),
        applies: |t| t.spans() || t.format == Format::FunctionGraph,
        takes: "function-graph, and perf-script, perf-data, ftrace and trace-cmd in syscalls, \
                offcpu or probes mode (--mode)",
    },
    Rule {
        id: "split_outliers",
        flag: "--split-outliers",
        given: |o| o.split_outliers.is_some(),
        applies: |t| t.spans() || t.format == Format::FunctionGraph,
        takes: "function-graph, and perf-script, perf-data, ftrace and trace-cmd in syscalls, \
                offcpu or probes mode (--mode)",
    },
    Rule {
        id: "bpftrace_map",
        flag: "--bpftrace-map",
        given: |o| o.bpftrace_map.is_some(),
        applies: |t| t.format == Format::Bpftrace,
        takes: "bpftrace",
    },
    Rule {
        id: "bcc_unit",
        flag: "--bcc-unit",
        given: |o| o.bcc_unit.is_some(),
        applies: |t| t.format == Format::Bcc,
        takes: "bcc",
    },
    Rule {
        id: "offsets",
        flag: "--offsets",
        given: |o| o.offsets,
        applies: |t| t.format == Format::KernelLog && !t.json,
        takes: "kernel-log (not with --json, whose frames keep their offsets in raw_frames)",
    },
    Rule {
        id: "unreliable",
        flag: "--unreliable",
        given: |o| o.unreliable,
        applies: |t| t.format == Format::KernelLog && !t.json,
        takes: "kernel-log (not with --json, whose raw_frames keep `?` frames)",
    },
    Rule {
        id: "kallsyms",
        flag: "--kallsyms",
        given: |o| o.kallsyms.is_some(),
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "symfs",
        flag: "--symfs",
        given: |o| o.symfs.is_some(),
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "no_unwind",
        flag: "--no-unwind",
        given: |o| o.no_unwind,
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "no_inline",
        flag: "--no-inline",
        given: |o| o.no_inline,
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "perf_map_dir",
        flag: "--perf-map-dir",
        given: |o| o.perf_map_dir.is_some(),
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
    Rule {
        id: "no_host_lookups",
        flag: "--no-host-lookups",
        given: |o| o.no_host_lookups,
        applies: |t| t.format == Format::PerfData,
        takes: "perf-data",
    },
];

/// One option refused for an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The option's id ([`Rule::id`]).
    pub option: &'static str,
    /// As typed ([`Rule::flag`]).
    pub flag: &'static str,
    /// Why: the inputs that take it, or that it does not go with JSON output.
    pub reason: String,
}

/// Options that do not fit an input.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// Options that the input does not apply.
    NotTaken {
        /// The input's name.
        input: String,
        /// What the input is ([`Target::describe`]).
        target: String,
        /// Each option refused, in the order of [`RULES`].
        refused: Vec<Refused>,
    },
    /// Two options that say opposite things.
    Contradict {
        /// One, as typed.
        a: &'static str,
        /// The other, as typed.
        b: &'static str,
    },
    /// `top` of 0.
    TopZero,
    /// A mode that perf input does not pair (alloc, events).
    PerfMode {
        /// The input kind: `perf script`, `perf.data`.
        input: &'static str,
    },
    /// `group_by` keys that the format does not know (the message says which it knows).
    GroupBy(String),
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionsError::NotTaken { input, target, refused } => {
                let these = if refused.len() == 1 { "this option does" } else { "these options do" };
                write!(f, "{input} is {target}; {these} not apply to it:")?;
                for r in refused {
                    write!(f, "\n  {}: {}", r.flag, r.reason)?;
                }
                Ok(())
            }
            OptionsError::Contradict { a, b } => write!(f, "{a} and {b} contradict each other"),
            OptionsError::TopZero => f.write_str("--top takes a number of calls or events of at least 1"),
            OptionsError::PerfMode { input } => write!(
                f,
                "{input} input takes --mode syscalls, offcpu or probes; without --mode it counts \
                 samples (allocation tracepoints weigh their bytes)"
            ),
            OptionsError::GroupBy(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for OptionsError {}

/// Refuses the options given in `opts` that `target` does not apply, all of them in one
/// error naming the input (`name`) and, for each, the inputs that take it.
pub fn check(opts: &CollapseOptions, target: &Target, name: &str) -> Result<(), OptionsError> {
    let refused: Vec<Refused> = RULES
        .iter()
        .filter(|r| (r.given)(opts))
        .filter(|r| !(r.applies)(target) || (target.json && r.id != "json"))
        .map(|r| Refused {
            option: r.id,
            flag: r.flag,
            reason: if target.json && r.id != "json" {
                "not with --json (one JSON object per report or task, as found)".to_string()
            } else {
                format!("taken by {}", r.takes)
            },
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(OptionsError::NotTaken { input: name.to_string(), target: target.describe(), refused })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of [`CollapseOptions`] has a rule: set one at a time (through serde, by
    /// its name), exactly the rules of that id see it given.
    #[test]
    fn every_field_has_a_rule() {
        let all = serde_json::to_value(CollapseOptions::default()).unwrap();
        let fields: Vec<String> = all.as_object().unwrap().keys().cloned().collect();
        assert_eq!(fields.len(), 33);
        for field in &fields {
            let value = match &all[field.as_str()] {
                serde_json::Value::Bool(_) => serde_json::json!(true),
                _ => match field.as_str() {
                    "weight" => serde_json::json!("count"),
                    "mode" => serde_json::json!("syscalls"),
                    "latency" => serde_json::json!("total"),
                    "bcc_unit" => serde_json::json!("us"),
                    "top" => serde_json::json!(3),
                    _ => serde_json::json!("x"),
                },
            };
            let opts: CollapseOptions =
                serde_json::from_value(serde_json::json!({ field.as_str(): value })).unwrap();
            let given: Vec<&str> = RULES.iter().filter(|r| (r.given)(&opts)).map(|r| r.id).collect();
            assert_eq!(given, [field.as_str()], "{field}");
        }
        let none: Vec<&str> =
            RULES.iter().filter(|r| (r.given)(&CollapseOptions::default())).map(|r| r.id).collect();
        assert!(none.is_empty(), "given by default: {none:?}");
    }

    /// Enum values are spelled as on the command line.
    #[test]
    fn values_are_cli_names() {
        for m in [Mode::Alloc, Mode::Syscalls, Mode::OffCpu, Mode::Probes, Mode::Events] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
        for w in [Weight::Count, Weight::Bytes] {
            assert_eq!(serde_json::to_value(w).unwrap(), w.name());
        }
        assert_eq!(serde_json::to_value(Latency::SelfTime).unwrap(), "self");
        assert!(serde_json::from_str::<CollapseOptions>(r#"{"weigth":"count"}"#).is_err());
    }

    #[test]
    fn refusals_name_input_and_takers() {
        let opts = CollapseOptions { kallsyms: Some("k".into()), counts: true, ..Default::default() };
        let t = Target { format: Format::Ftrace, mode: Some(Mode::OffCpu), guessed: None, json: false };
        let e = check(&opts, &t, "t.txt").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.txt is ftrace input in offcpu mode; these options do not apply to it:\n  \
             --counts: taken by perf-script and perf-data without --mode (--mode weighs by \
             duration)\n  --kallsyms: taken by perf-data"
        );
        let pd = Target { format: Format::PerfData, mode: None, guessed: None, json: false };
        assert!(check(&opts, &pd, "perf.data").is_ok());
        let j = CollapseOptions { json: true, offsets: true, ..Default::default() };
        let e = check(&j, &Target::json(Format::KernelLog), "dmesg").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("--offsets: not with --json (one JSON object per report or task, as found)")
        );
    }
}
