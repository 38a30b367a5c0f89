//! `kflame flamegraph --format html`: folded stacks to the self-contained interactive HTML
//! page (the canvas viewer of `kflame::render::html`).

use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result};
use kflame::diag::Diagnostics;
use kflame::fold::read::read_folded;
use kflame::fold::{Meta, OrderedStacks, StackCounts, Stacks};
use kflame::render::html::{HtmlOptions, HtmlProfile, write_html};

use crate::input;
use crate::output;

/// Writes the page for `files` (folded, merged; `-` or none: stdin) to `output` or stdout.
/// Time order is kept when `opts.flamechart` is set.
pub(crate) fn write_page(files: &[String], output: Option<&Path>, opts: HtmlOptions) -> Result<()> {
    let mut stacks = if opts.flamechart {
        Stacks::Ordered(OrderedStacks::new())
    } else {
        Stacks::Counts(StackCounts::new())
    };
    let mut meta = Meta::default();
    for path in input::paths_or_stdin(files)? {
        read_one(&path, &mut stacks, &mut meta)?;
    }
    if stacks.is_empty() {
        output::message("warning: no samples in the input; writing an empty page");
    }
    let mut out = output::create(output)?;
    write_html(&mut out, &HtmlProfile::new(&stacks, &meta), &opts).context("writing the HTML page")?;
    out.finish().context("writing the HTML page")?;
    Ok(())
}

/// Adds the stacks of one folded input, reporting its skipped lines.
fn read_one(path: &str, stacks: &mut Stacks, meta: &mut Meta) -> Result<()> {
    let Some((input, sample)) = input::open_folded(path)? else { return Ok(()) };
    let name = input.name.clone();
    let (mut file_meta, mut diag) = (Meta::default(), Diagnostics::new());
    let mut read = 0;
    read_folded(BufReader::new(input.reader()), &mut file_meta, &mut diag, |l| {
        read += 1;
        stacks.add(l.stack, l.weight)
    })
    .with_context(|| format!("reading {name}"))?;
    output::message(diag.report(&name).to_string());
    input::check_folded(&sample, read, &diag)?;
    meta.merge(&file_meta).map_err(|e| anyhow::anyhow!("{name}: {e}"))
}
