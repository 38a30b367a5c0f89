//! The kernel-log and crash-dump collapsers configured from their options (in
//! `collapse_args.rs`), and their `--json` output (one object per report or task instead of
//! folded stacks).

use std::io::{BufReader, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use kflame::collapse::{Collapse, Format, crash, kernel_log};

use super::collapse_args::{ReportArgs, SharedArgs};
use crate::input::{self, Input};
use crate::output;

/// The kernel-log collapser configured from the command line.
pub(crate) fn build_kernel_log(shared: &SharedArgs, args: &ReportArgs) -> Result<Box<dyn Collapse>> {
    let mut opts =
        kernel_log::Options { offsets: args.offsets, unreliable: args.unreliable, ..Default::default() };
    if let Some(g) = &shared.group_by {
        opts.group_by = kernel_log::parse_group_keys(g).map_err(|e| anyhow!(e))?;
    }
    // `--comm` / `--cpu` add those root frames when --group-by does not name them.
    for (on, key) in [(shared.comm, kernel_log::GroupKey::Comm), (shared.cpu, kernel_log::GroupKey::Cpu)] {
        if on && !opts.group_by.contains(&key) {
            opts.group_by.push(key);
        }
    }
    Ok(Box::new(kernel_log::KernelLog::new(opts)))
}

/// The crash collapser configured from the command line.
pub(crate) fn build_crash(shared: &SharedArgs) -> Result<Box<dyn Collapse>> {
    let mut keys = match &shared.group_by {
        Some(g) => crash::parse_crash_keys(g).map_err(|e| anyhow!(e))?,
        None => crash::DEFAULT_KEYS.to_vec(),
    };
    for (on, key) in [(shared.comm, crash::CrashKey::Comm), (shared.cpu, crash::CrashKey::Cpu)] {
        if on && !keys.contains(&key) {
            keys.push(key);
        }
    }
    Ok(Box::new(crash::Crash::new(keys)))
}

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
