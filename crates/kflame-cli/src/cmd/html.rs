//! `kflame flamegraph --format html`: folded stacks to the self-contained interactive HTML
//! page (the canvas viewer of `kflame::render::html`).

use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use kflame::diag::Diagnostics;
use kflame::fold::read::read_folded;
use kflame::fold::{Meta, MetaMerge, OrderedStacks, StackCounts, Stacks};
use kflame::render::html::{HtmlOptions, HtmlProfile, write_html};

use crate::input;
use crate::output;

/// Writes the page for `files` (folded, merged; `-` or none: stdin) to `output` or stdout.
/// Time order is kept when `opts.flamechart` is set. Differential input (`stack BEFORE
/// AFTER` lines, from `kflame diff`) is drawn red and blue, as in the SVG.
pub(crate) fn write_page(
    files: &[String],
    output: Option<&Path>,
    opts: HtmlOptions,
    units: crate::units::MixedUnits,
) -> Result<()> {
    let empty = || {
        if opts.flamechart {
            Stacks::Ordered(OrderedStacks::new())
        } else {
            Stacks::Counts(StackCounts::new())
        }
    };
    let mut read = Read { after: empty(), before: empty(), differential: false, flamechart: opts.flamechart };
    let mut meta = units.merger();
    for path in input::paths_or_stdin(files)? {
        read_one(&path, &mut read, &mut meta)?;
    }
    if read.after.is_empty() {
        output::message("warning: no samples in the input; writing an empty page");
    }
    let profile = if read.differential {
        HtmlProfile::differential(&read.after, &read.before, meta.meta())
    } else {
        HtmlProfile::new(&read.after, meta.meta())
    };
    let mut out = output::create(output)?;
    write_html(&mut out, &profile, &opts).context("writing the HTML page")?;
    out.finish().context("writing the HTML page")?;
    Ok(())
}

/// The stacks read so far: AFTER weights (the only column of plain input) and the BEFORE
/// weights of differential lines. For flame charts both get every line, so that their runs
/// pair up; summed stacks keep BEFORE weights only for differential lines (looked up by
/// stack, 0 when absent).
struct Read {
    after: Stacks,
    before: Stacks,
    differential: bool,
    flamechart: bool,
}

/// Adds the stacks of one folded input, reporting its skipped lines.
fn read_one(path: &str, read: &mut Read, meta: &mut MetaMerge) -> Result<()> {
    let Some((input, sample)) = input::open_folded(path)? else { return Ok(()) };
    let name = input.name.clone();
    let (mut file_meta, mut diag) = (Meta::default(), Diagnostics::new());
    let mut stacks = 0;
    read_folded(BufReader::new(input.reader()), &mut file_meta, &mut diag, |l| {
        read.after.add(l.stack, l.weight);
        read.differential |= l.before.is_some();
        if read.flamechart || l.before.is_some() {
            read.before.add(l.stack, l.before.unwrap_or_default());
        }
        stacks += 1;
    })
    .with_context(|| format!("reading {name}"))?;
    output::message(diag.report(&name).to_string());
    input::check_folded(&sample, stacks, &diag)?;
    crate::units::add(meta, &name, &file_meta, stacks > 0)
}
