//! `kflame collapse`: any supported input to folded stacks.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kflame::collapse::{self, Collapse, Engine, Format, Order};
use kflame::fold::{Meta, Stacks, write::write_folded};

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
  kflame collapse --format crash foreach-UN-bt.txt   # crash output, by task state and comm")]
pub(crate) struct Args {
    /// Input files (`-` or none: stdin). Several inputs are merged into one output.
    #[arg(value_name = "FILE")]
    files: Vec<String>,

    /// Input format; guessed from the content when absent. gzip, zstd and xz input is
    /// decompressed first, whatever the format.
    #[arg(short = 'F', long, value_name = "FORMAT", value_parser = FormatParser)]
    format: Option<Format>,

    /// Write the folded output here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Worker threads (default: number of CPUs). Output is identical for any value.
    #[arg(short = 'j', long, value_name = "N")]
    threads: Option<usize>,

    /// Keep stacks in input (time) order, merging only identical consecutive stacks:
    /// input for flame charts (`kflame flamegraph --flamechart`).
    #[arg(long)]
    time_order: bool,

    #[command(flatten)]
    shared: SharedArgs,

    #[command(flatten)]
    perf: super::collapse_perf::PerfArgs,

    #[command(flatten)]
    trace: super::trace_args::TraceArgs,

    #[command(flatten)]
    latency: super::producers::LatencyArgs,

    #[command(flatten)]
    producers: super::producers::ProducerArgs,

    #[command(flatten)]
    report: super::reports::ReportArgs,

    #[command(flatten)]
    perf_data: Box<super::perf_data::PerfDataArgs>,
}

/// Options that several formats understand, each in its own sense (documented per flag).
/// Format-specific options live in each format's own `clap::Args` struct.
#[derive(clap::Args, Debug, Default)]
#[allow(dead_code)] // each field is read by the formats that support it
pub(crate) struct SharedArgs {
    /// Include the PID with the process name (`comm-PID` root frame).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) pid: bool,
    /// Include the TID (and PID) with the process name (`comm-PID/TID`).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) tid: bool,
    /// Add the task name (comm) as a root frame (trace formats; perf always has it).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) comm: bool,
    /// Add the CPU as a root frame (`cpu-3`).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) cpu: bool,
    /// Weight by `count` (one per event) or by `bytes` (allocation size) for trace events.
    #[arg(long, value_name = "count|bytes", help_heading = "Shared options")]
    pub(crate) weight: Option<String>,
    /// Synthetic root frames, comma-separated (kernel logs: version,kind,title,cpu,comm,
    /// hardware,taint; crash dumps: state,comm,cpu).
    #[arg(long, value_name = "KEYS", help_heading = "Shared options")]
    pub(crate) group_by: Option<String>,
    /// Instead of folded stacks, write one JSON object per report (kernel logs, crash dumps).
    #[arg(long, help_heading = "Shared options")]
    pub(crate) json: bool,
    /// Also write one JSON line per event or call (ts, cpu, pid, comm, duration_ns, stack)
    /// to this file (trace formats).
    #[arg(long, value_name = "FILE", help_heading = "Shared options")]
    pub(crate) events_json: Option<PathBuf>,
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

/// Builds the collapser of `format` configured from the command line.
fn build(format: Format, args: &Args) -> Result<Box<dyn Collapse>> {
    Ok(match format {
        Format::Folded => Box::new(collapse::folded::Folded::new()),
        Format::PerfScript => super::perf_pairs::build(&args.perf, &args.shared, &args.trace)?,
        Format::Ftrace | Format::TraceCmd => super::trace_args::build_ftrace(&args.shared, &args.trace)?,
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
        return super::reports::run_json(&args.files, args.format, args.output.as_deref(), detect);
    }
    let engine = Engine {
        threads: args.threads.unwrap_or_else(|| Engine::default().threads).max(1),
        order: if args.time_order { Order::Time } else { Order::Sorted },
        ..Engine::default()
    };
    let paths = input::paths_or_stdin(&args.files)?;
    let mut total: Option<Stacks> = None;
    let mut meta = Meta::default();
    // Every input is read, and every one that fails is reported, before the run fails.
    let mut failures = Failures::default();
    let mut nonempty = false;
    for path in &paths {
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
        let sample = input.sample();
        let out = if format == Format::PerfData {
            super::perf_data::collapse(
                input,
                &args.perf_data,
                &args.perf,
                &args.shared,
                &args.trace,
                engine.order,
                &mut meta,
            )
        } else {
            // An option that does not fit the format ends the run at once.
            let collapser = build(format, &args)?;
            collapse_one(&engine, collapser, input, &mut meta)
        };
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                failures.add(format!("{e:#}"));
                continue;
            }
        };
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
    write_folded(&mut out, &stacks, &meta).context("writing folded output")?;
    out.finish().context("writing folded output")?;
    super::trace_args::finish_events(args.shared.events_json.as_deref())?;
    // The process ends here: freeing a hundred thousand stacks one by one would only delay
    // the exit (by tens of milliseconds on a large recording).
    std::mem::forget(stacks);
    Ok(())
}

fn collapse_one(
    engine: &Engine,
    c: Box<dyn Collapse>,
    input: Input,
    meta: &mut Meta,
) -> Result<collapse::Output> {
    let name = input.name.clone();
    let out = engine.run(c, input.reader()).with_context(|| format!("reading {name}"))?;
    meta.merge(&out.meta).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(out)
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
