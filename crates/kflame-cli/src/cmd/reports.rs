//! The `--json` output of kernel logs and crash dumps (one object per report or task
//! instead of folded stacks).

use std::io::{BufReader, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use kflame::collapse::{Format, crash};

use crate::input::{self, Input};
use crate::output;

/// `--json`: one JSON object per kernel report (kernel logs) or per task (crash output),
/// streamed line by line. `resolve` gives each input's format (and refuses the options it
/// does not take).
pub(crate) fn run_json(
    files: &[String],
    out_path: Option<&Path>,
    resolve: impl Fn(&Input) -> Result<Format>,
) -> Result<()> {
    let mut out = output::create(out_path)?;
    for path in input::paths_or_stdin(files)? {
        let input = Input::open(&path)?;
        let name = input.name.clone();
        if input.is_empty() && files.len() > 1 {
            // One empty log among several (a fresh kern.log): the others still count.
            output::message(format!("warning: {name} is empty"));
            continue;
        }
        let format = resolve(&input)?;
        let n = match format {
            Format::KernelLog => json_reports(input, &mut out),
            Format::Crash => json_tasks(input, &mut out),
            other => Err(anyhow!("--json applies to kernel-log and crash inputs; {name} is {other}")),
        }
        .with_context(|| format!("reading {name}"))?;
        if n == 0 {
            let what = if format == Format::Crash { "task backtrace" } else { "kernel report" };
            output::message(format!("{name}: no {what} found in this {format} input"));
        }
    }
    out.finish().context("writing JSON output")?;
    Ok(())
}

/// Calls `f` with each line (without its newline) and its 1-based number. A line longer than
/// the cap is not passed on; it is reported once the input is read.
fn for_each_line(input: Input, mut f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
    let name = input.name.clone();
    let r = BufReader::with_capacity(1 << 16, input.reader());
    let mut diag = kflame::diag::Diagnostics::new();
    kflame::text::read_lines(
        r,
        |n, line| f(n, line.strip_suffix(b"\r").unwrap_or(line)),
        |n, len| diag.skip(kflame::text::LINE_TOO_LONG, n, || kflame::text::line_too_long_message(len)),
    )?;
    output::message(diag.report(&name).to_string());
    Ok(())
}

fn json_reports(input: Input, out: &mut dyn Write) -> Result<usize> {
    let name = input.name.clone();
    let mut reports = kflame::report::reports(BufReader::with_capacity(1 << 16, input.reader()));
    let mut count = 0;
    for r in reports.by_ref() {
        writeln!(out, "{}", r?.to_json())?;
        count += 1;
    }
    output::message(reports.diagnostics().report(&name).to_string());
    Ok(count)
}

fn json_tasks(input: Input, out: &mut dyn Write) -> Result<usize> {
    let mut p = crash::CrashParser::new();
    let mut count = 0;
    for_each_line(input, |n, line| {
        p.push_line(n, line);
        for t in p.take() {
            writeln!(out, "{}", t.to_json())?;
            count += 1;
        }
        Ok(())
    })?;
    p.finish();
    for t in p.take() {
        writeln!(out, "{}", t.to_json())?;
        count += 1;
    }
    Ok(count)
}
