//! `kflame html`: folded stacks to the self-contained interactive HTML page. Hidden: the
//! same page is meant to be reached as `kflame flamegraph --format html`, with these options.

use std::io::{BufReader, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use kflame::diag::Diagnostics;
use kflame::fold::read::read_folded;
use kflame::fold::{Meta, OrderedStacks, StackCounts, Stacks};
use kflame::render::html::{HtmlOptions, HtmlProfile, Palette, write_html};

use crate::input::{self, Input};
use crate::output;

/// Arguments of `kflame html`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  kflame collapse perf.script.txt | kflame html -o profile.html
  kflame html --colors kernel --title 'cpu-clock, 10 s' host.folded -o host.html")]
pub(crate) struct Args {
    /// Folded input files (`-` or none: stdin); several are merged.
    #[arg(value_name = "FOLDED")]
    files: Vec<String>,
    /// Write the page here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Title (default: "Flame Graph", "Flame Chart" or "Icicle Graph").
    #[arg(long)]
    title: Option<String>,
    /// Second title line.
    #[arg(long)]
    subtitle: Option<String>,
    /// What a unit of weight is called (default: from the input's `# unit=` header).
    #[arg(long)]
    countname: Option<String>,
    /// Color palette: hot, mem, io, red, green, blue, aqua, yellow, purple, orange, java, js,
    /// perl, wakeup, chain, or kernel (kernel, user, interrupt, unreliable and synthetic
    /// frames each in their own hue).
    #[arg(long, value_name = "PALETTE", default_value = "hot", value_parser = parse_palette)]
    colors: Palette,
    /// Icicle graph: roots at the top.
    #[arg(long)]
    inverted: bool,
    /// Flame chart: x is input order, only identical consecutive stacks merge.
    #[arg(long)]
    flamechart: bool,
    /// Reverse each stack (leaf first) before merging.
    #[arg(long)]
    reverse: bool,
    /// Notes shown under the title.
    #[arg(long)]
    notes: Option<String>,
}

fn parse_palette(s: &str) -> Result<Palette, String> {
    Palette::from_name(s).ok_or_else(|| {
        let names: Vec<_> = Palette::ALL.iter().map(|p| p.name()).collect();
        format!("unknown palette `{s}`; known palettes: {}", names.join(", "))
    })
}

pub(crate) fn run(args: Args) -> Result<()> {
    let mut stacks = if args.flamechart {
        Stacks::Ordered(OrderedStacks::new())
    } else {
        Stacks::Counts(StackCounts::new())
    };
    let mut meta = Meta::default();
    for path in input::paths_or_stdin(&args.files) {
        read_one(&path, &mut stacks, &mut meta)?;
    }
    if stacks.is_empty() {
        output::message("warning: no samples in the input; writing an empty page");
    }
    let opts = HtmlOptions {
        title: args.title,
        subtitle: args.subtitle,
        countname: args.countname,
        palette: args.colors,
        inverted: args.inverted,
        flamechart: args.flamechart,
        reverse: args.reverse,
        notes: args.notes,
    };
    let mut out = output::open(args.output.as_deref())?;
    write_html(&mut out, &HtmlProfile::new(&stacks, &meta), &opts).context("writing the HTML page")?;
    out.flush().context("writing the HTML page")?;
    Ok(())
}

/// Adds the stacks of one folded input, reporting its skipped lines.
fn read_one(path: &str, stacks: &mut Stacks, meta: &mut Meta) -> Result<()> {
    let input = Input::open(path)?;
    let name = input.name.clone();
    let (mut file_meta, mut diag) = (Meta::default(), Diagnostics::new());
    read_folded(BufReader::new(input.reader()), &mut file_meta, &mut diag, |l| stacks.add(l.stack, l.weight))
        .with_context(|| format!("reading {name}"))?;
    output::message(diag.report(&name).to_string());
    meta.merge(&file_meta).map_err(|e| anyhow::anyhow!("{name}: {e}"))
}
