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
    let name = input.name.clone();
    let mut tasks = crash::tasks(BufReader::with_capacity(1 << 16, input.reader()));
    let mut count = 0;
    for t in tasks.by_ref() {
        writeln!(out, "{}", t?.to_json())?;
        count += 1;
    }
    output::message(tasks.diagnostics().report(&name).to_string());
    Ok(count)
}
