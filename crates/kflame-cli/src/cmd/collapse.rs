//! `kflame collapse`: any supported input to folded stacks.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kflame::collapse::{self, Collapse, Engine, Format, Order};
use kflame::fold::{Stacks, write::write_folded};

use super::collapse_options::{Target, check};
use crate::input::{self, Input, ReadAs};
use crate::output;

/// Arguments of `kflame collapse`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  perf record -F 99 -a -g -- sleep 10 && perf script | kflame collapse | kflame flamegraph > out.svg
  kflame collapse --pid --kernel perf.script.txt -o out.folded
  kflame collapse --format folded a.folded b.folded > merged.folded
  journalctl -k -b -1 | kflame collapse --format kernel-log --group-by kind,title > oopses.folded
  kflame collapse --json dmesg.txt            # one JSON object per kernel report
  kflame collapse --format crash foreach-UN-bt.txt   # crash output: tasks by state and stack
  kflame collapse --mode syscalls --top 10 --split-outliers slow/ trace.txt   # the 10 slowest

An option that an input does not take is refused (exit 1), naming the formats that take it.")]
pub(crate) struct Args {
    /// Input files (`-` or none: stdin). Several inputs are merged into one output.
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<String>,

    /// Input format; guessed from the content when absent. gzip, zstd and xz input is
    /// decompressed first, whatever the format.
    #[arg(short = 'F', long, value_name = "FORMAT", value_parser = FormatParser)]
    pub(crate) format: Option<Format>,

    /// Write the folded output here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// Worker threads (default: number of CPUs). Output is identical for any value.
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) threads: Option<usize>,

    /// Keep stacks in input (time) order, merging only identical consecutive stacks:
    /// input for flame charts (`kflame flamegraph --flamechart`).
    #[arg(long)]
    pub(crate) time_order: bool,

    #[command(flatten)]
    pub(crate) units: crate::units::MixedUnits,

    #[command(flatten)]
    pub(crate) shared: SharedArgs,

    #[command(flatten)]
    pub(crate) perf: super::collapse_perf::PerfArgs,

    #[command(flatten)]
    pub(crate) trace: super::trace_args::TraceArgs,

    #[command(flatten)]
    pub(crate) latency: super::producers::LatencyArgs,

    #[command(flatten)]
    pub(crate) producers: super::producers::ProducerArgs,

    #[command(flatten)]
    pub(crate) report: super::reports::ReportArgs,

    #[command(flatten)]
    pub(crate) perf_data: Box<super::perf_data::PerfDataArgs>,
}

/// Options that several formats understand, each in its own sense (documented per flag).
/// Format-specific options live in each format's own `clap::Args` struct. Which inputs take
/// which option is decided in one table (`collapse_options.rs`).
#[derive(clap::Args, Debug, Default)]
#[allow(dead_code)] // each field is read by the formats that support it
pub(crate) struct SharedArgs {
    /// Include the PID with the process name (`comm-PID` root frame): perf script, perf.data,
    /// ftrace, trace-cmd, function-graph, bcc.
    #[arg(long, help_heading = "Shared options")]
    pub(crate) pid: bool,
    /// Include the TID (and PID) with the process name (`comm-PID/TID`): perf script,
    /// perf.data; ftrace, trace-cmd and function-graph name threads by their TID, as --pid.
    #[arg(long, help_heading = "Shared options")]
    pub(crate) tid: bool,
    /// Add the task name (comm) as a root frame: ftrace, trace-cmd, function-graph, kernel
    /// logs, crash dumps, perf with --mode (perf samples and /proc stacks always have it).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) comm: bool,
    /// Add the CPU as a root frame (`cpu-3`): ftrace, trace-cmd, function-graph, kernel logs,
    /// crash dumps, perf script and perf.data with --mode.
    #[arg(long, help_heading = "Shared options")]
    pub(crate) cpu: bool,
    /// Weight by `count` (one per event or sample) or by `bytes` (allocation size): perf
    /// samples without --mode, ftrace / trace-cmd events in alloc and events modes.
    #[arg(long, value_enum, value_name = "count|bytes", help_heading = "Shared options")]
    pub(crate) weight: Option<WeightArg>,
    /// Synthetic root frames, comma-separated (kernel logs: version,kind,title,cpu,comm,
    /// hardware,taint; crash dumps: state,comm,cpu, default state: tasks merge by stack).
    #[arg(long, value_name = "KEYS", help_heading = "Shared options")]
    pub(crate) group_by: Option<String>,
    /// Instead of folded stacks, write one JSON object per report (kernel logs, crash dumps).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) json: bool,
    /// Also write one JSON line per event or call (ts, cpu, pid, comm, duration_ns, stack)
    /// to this file: ftrace, trace-cmd, function-graph, perf script and perf.data with --mode.
    #[arg(long, value_name = "FILE", help_heading = "Shared options")]
    pub(crate) events_json: Option<PathBuf>,
}

/// Values of `--weight`.
#[derive(clap::ValueEnum, Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum WeightArg {
    /// One per event or sample.
    Count,
    /// Allocated bytes.
    Bytes,
}

/// `--format`: a format name or alias, with every format listed in `--help` and offered by
/// shell completion.
#[derive(Clone)]
struct FormatParser;

impl clap::builder::TypedValueParser for FormatParser {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        let s = value.to_string_lossy();
        Format::from_name(&s).ok_or_else(|| {
            let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
            let msg = format!("unknown format `{s}`; known formats: {}\n", names.join(", "));
            clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(Format::ALL.iter().map(|f| {
            clap::builder::PossibleValue::new(f.name()).aliases(f.aliases().iter().copied()).help(f.summary())
        })))
    }
}

/// Builds the collapser of `target` configured from the command line.
fn build(target: &Target, args: &Args) -> Result<Box<dyn Collapse>> {
    Ok(match target.format {
        Format::Folded => Box::new(collapse::folded::Folded::new()),
        Format::PerfScript => super::perf_pairs::build(&args.perf, &args.shared, &args.trace, &args.latency)?,
        Format::Ftrace | Format::TraceCmd => {
            super::trace_args::build_ftrace(target, &args.shared, &args.trace, &args.latency)?
        }
        Format::FunctionGraph => super::producers::function_graph(&args.latency, &args.shared)?,
        Format::ProcStacks => Box::new(collapse::proc_stacks::ProcStacks::new()),
        Format::Bpftrace => super::producers::bpftrace(&args.producers),
        Format::Bcc => super::producers::bcc(&args.producers, &args.shared),
        Format::Stap => Box::new(collapse::stap::Stap::new()),
        Format::KernelLog => super::reports::build_kernel_log(&args.shared, &args.report)?,
        Format::Crash => super::reports::build_crash(&args.shared)?,
        Format::PerfData => bail!("perf.data is binary: it is read by its own reader, not the line engine"),
    })
}

pub(crate) fn run(args: Args) -> Result<()> {
    let report_format = args.format.is_none_or(|f| matches!(f, Format::KernelLog | Format::Crash));
    if args.shared.json && report_format {
        let resolve = |input: &Input| -> Result<Format> {
            let format = match args.format {
                Some(f) => f,
                None => detect(input)?,
            };
            let target = Target { format, mode: None, guessed: None, json: true };
            check(&args, &target, &input.name)?;
            Ok(format)
        };
        return super::reports::run_json(&args.files, args.output.as_deref(), resolve);
    }
    let engine = Engine {
        threads: args.threads.unwrap_or_else(|| Engine::default().threads).max(1),
        order: if args.time_order { Order::Time } else { Order::Sorted },
        ..Engine::default()
    };
    let paths = input::paths_or_stdin(&args.files)?;
    let mut total: Option<Stacks> = None;
    let mut units = args.units.merger();
    // Every input is read, and every one that fails is reported, before the run fails.
    let mut failures = Failures::default();
    let mut nonempty = false;
    for (i, path) in paths.iter().enumerate() {
        let input = match Input::open(path) {
            Ok(input) => input,
            Err(e) => {
                failures.add(format!("{e:#}"));
                continue;
            }
        };
        let name = input.name.clone();
        if input.is_empty() {
            output::message(format!("warning: {name} is empty"));
            continue;
        }
        nonempty = true;
        let (format, read_as) = match args.format {
            Some(f) => (f, ReadAs::Forced(f)),
            None => match input.detect() {
                Some(f) => (f, ReadAs::Detected(f)),
                None => {
                    failures.unknown_format(&input);
                    continue;
                }
            },
        };
        // An option that the input does not take ends the run at once.
        let target = Target::of(format, &args, &input);
        check(&args, &target, &name)?;
        if i == 0 {
            super::outliers::prepare(&args.latency)?;
        }
        let sample = input.sample();
        let out = if format == Format::PerfData {
            super::perf_data::collapse(input, &args, engine.order)
        } else {
            let collapser = build(&target, &args)?;
            collapse_one(&engine, collapser, input)
        };
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                failures.add(format!("{e:#}"));
                continue;
            }
        };
        super::outliers::collect(&name);
        crate::units::add(&mut units, &name, &out.meta, !out.stacks.is_empty())?;
        output::message(out.diag.report(&name).to_string());
        if out.stacks.is_empty() {
            let what = match format {
                Format::KernelLog => "no kernel report",
                Format::Crash => "no task backtrace",
                _ => "no stacks",
            };
            let hint = sample.hint(read_as);
            let skipped = out.diag.skipped();
            if skipped > 0 || !hint.is_empty() {
                // Nothing but malformed lines, or not what it was read as: an error. A valid
                // input with nothing to report (a clean kernel log) is not.
                let only = match skipped {
                    0 => String::new(),
                    1 => ", only 1 malformed line".to_string(),
                    n => format!(", only {n} malformed lines"),
                };
                failures.add(format!("{name}: {what} found in this {format} input{only}{hint}"));
                continue;
            }
            output::message(format!("{name}: {what} found in this {format} input"));
        }
        match &mut total {
            Some(t) => t.append(out.stacks),
            None => total = Some(out.stacks),
        }
    }
    failures.check(paths.len())?;
    if !nonempty {
        let what = if paths.len() == 1 { "the input is" } else { "every input is" };
        bail!("nothing to collapse: {what} empty");
    }
    let stacks = total.unwrap_or_else(|| engine.order.empty_stacks());
    let mut out = output::create(args.output.as_deref())?;
    write_folded(&mut out, &stacks, units.meta()).context("writing folded output")?;
    out.finish().context("writing folded output")?;
    super::trace_args::finish_events(args.shared.events_json.as_deref())?;
    super::outliers::finish(&args.latency)?;
    // The process ends here: freeing a hundred thousand stacks one by one would only delay
    // the exit (by tens of milliseconds on a large recording).
    std::mem::forget(stacks);
    Ok(())
}

fn collapse_one(engine: &Engine, c: Box<dyn Collapse>, input: Input) -> Result<collapse::Output> {
    let name = input.name.clone();
    engine.run(c, input.reader()).with_context(|| format!("reading {name}"))
}

/// The inputs that could not be read, reported together at the end of the run.
#[derive(Default)]
struct Failures {
    messages: Vec<String>,
    unknown_format: bool,
}

impl Failures {
    fn add(&mut self, message: String) {
        self.messages.push(message);
    }

    fn unknown_format(&mut self, input: &Input) {
        // Folded or not does not matter here: no text format was detected, the hint can
        // only name a binary kind, for which naming a format would not help.
        let hint = input.sample().hint(ReadAs::Folded);
        let why = if hint.is_empty() {
            self.unknown_format = true;
            "its first lines match none of the known formats".to_string()
        } else {
            hint.trim_start_matches("; ").to_string()
        };
        self.add(format!("cannot tell the format of {}: {why}", input.name));
    }

    /// Fails the run when an input failed: with that input's message when it was the only
    /// input, else after printing each; the format list comes once.
    fn check(self, inputs: usize) -> Result<()> {
        if self.messages.is_empty() {
            return Ok(());
        }
        let formats = if self.unknown_format {
            let list: Vec<String> =
                Format::ALL.iter().map(|f| format!("  {:<14} {}", f.name(), f.summary())).collect();
            format!("\nname one with --format:\n{}", list.join("\n"))
        } else {
            String::new()
        };
        if inputs == 1 && self.messages.len() == 1 {
            bail!("{}{formats}", self.messages[0]);
        }
        for m in &self.messages {
            output::message(format!("error: {m}"));
        }
        bail!("{} of {inputs} inputs failed (see above); nothing written{formats}", self.messages.len())
    }
}

fn detect(input: &Input) -> Result<Format> {
    if input.is_empty() {
        bail!("{} is empty: nothing to collapse", input.name);
    }
    input.detect().ok_or_else(|| {
        let mut failures = Failures::default();
        failures.unknown_format(input);
        failures.check(1).err().unwrap_or_else(|| anyhow::anyhow!("cannot tell the format of {}", input.name))
    })
}
