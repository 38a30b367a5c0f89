//! `kflame collapse`: any supported input to folded stacks.

use anyhow::{Context, Result, bail};
use kflame::collapse::options::CollapseOptions;
use kflame::collapse::{Engine, Format, Order};
use kflame::fold::{Stacks, write::write_folded};
use kflame::input::{Collapser, Sinks};

pub(crate) use super::collapse_args::Args;
use crate::input::{self, Input, InputExt, ReadAs};
use crate::output;
use kflame::collapse::options::{Target, check};

/// Builds the collapser of `target` (named `name`) from the library's options, with the
/// `--events-json` and `--split-outliers` sinks of the run. The options are checked before
/// any file is created.
fn build(target: &Target, name: &str, options: &CollapseOptions, args: &Args) -> Result<Collapser> {
    target.validate(name, options)?;
    let sinks = Sinks {
        events: super::trace_args::events_log(options.events_json.as_deref())?,
        outliers: super::outliers::log(&args.latency),
    };
    Ok(target.collapser(name, options, sinks)?)
}

pub(crate) fn run(args: Args) -> Result<()> {
    let options = args.options();
    let report_format = args.format.is_none_or(|f| matches!(f, Format::KernelLog | Format::Crash));
    if args.shared.json && report_format {
        let resolve = |input: &Input| -> Result<Format> {
            let format = match args.format {
                Some(f) => f,
                None => detect(input)?,
            };
            check(&options, &Target::json(format), &input.name)?;
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
        let target = Target::of(format, &options, &input.head);
        check(&options, &target, &name)?;
        if i == 0 {
            super::outliers::prepare(&args.latency)?;
        }
        let sample = input.sample();
        let out = match build(&target, &name, &options, &args) {
            Ok(c) => input.collapse(&engine, c).map_err(anyhow::Error::from),
            // perf.data has always reported its option errors as a failed input.
            Err(e) if format == Format::PerfData => Err(e),
            Err(e) => return Err(e),
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
            if skipped > 0 || !hint.is_empty() || format == Format::PerfData {
                // Nothing but malformed lines, or not what it was read as: an error. So is a
                // perf.data file without a sample to fold (its notes say why: another event,
                // damage). A valid text input with nothing to report (a clean kernel log) is
                // not.
                // What the reader skips: lines of text, records of a perf.data file.
                let unit = match format {
                    Format::PerfData => "damaged record",
                    Format::Pprof | Format::Otlp | Format::Speedscope => "skipped sample",
                    _ => "malformed line",
                };
                let only = match skipped {
                    0 => String::new(),
                    1 => format!(", only 1 {unit}"),
                    n => format!(", only {n} {unit}s"),
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
    // `-o x.otlp.pb` (or another tool's file ending): that format, straight from the stacks
    // in memory, so that what folded text cannot hold (perf's sample times) is kept.
    match args.output.as_deref().and_then(kflame::export::Format::from_path) {
        Some(format) => {
            let name = match paths.as_slice() {
                [one] if one != "-" => std::path::Path::new(one).file_name().and_then(|n| n.to_str()),
                _ => None,
            };
            let profile = kflame::export::Profile { stacks: &stacks, meta: units.meta(), name };
            let inputs = if paths.len() == 1 { paths[0].clone() } else { format!("{} inputs", paths.len()) };
            let what = || {
                let to = args.output.as_deref().map_or(String::new(), |p| format!(" {}", p.display()));
                format!("writing the {} profile{to} from {inputs}", format.name())
            };
            kflame::export::write(format, &profile, &mut out).with_context(what)?;
            out.finish().with_context(what)?;
        }
        None => {
            write_folded(&mut out, &stacks, units.meta()).context("writing folded output")?;
            out.finish().context("writing folded output")?;
        }
    }
    super::trace_args::finish_events(args.shared.events_json.as_deref())?;
    super::outliers::finish(&args.latency)?;
    // The process ends here: freeing a hundred thousand stacks one by one would only delay
    // the exit (by tens of milliseconds on a large recording).
    std::mem::forget(stacks);
    Ok(())
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
