//! `kflame diff`: two folded profiles → `stack BEFORE AFTER` lines (FlameGraph's
//! `difffolded.pl` format), for `kflame flamegraph` to draw in red (grew) and blue (shrank).

use std::io::{BufReader, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kflame::diag::Diagnostics;
use kflame::fold::diff::{self, DiffOptions};
use kflame::fold::{Meta, StackCounts};

use crate::input;
use crate::output;

/// Arguments of `kflame diff`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  kflame diff before.folded after.folded | kflame flamegraph > diff.svg
  kflame diff -n before.folded after.folded |
      kflame flamegraph --negate > diff.svg")]
pub(crate) struct Args {
    /// The earlier profile (folded; `-` for stdin).
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The later profile (folded).
    #[arg(value_name = "AFTER")]
    after: String,
    /// Scale BEFORE so that both profiles have the same total: exactly, with up to 9
    /// decimals, the scaled weights adding up to AFTER's total (difffolded.pl and inferno
    /// round each one down to a whole number instead).
    #[arg(short, long)]
    normalize: bool,
    /// Replace hexadecimal addresses by `0x...` before comparing.
    #[arg(short, long)]
    strip_hex: bool,
    /// Write here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    units: crate::units::MixedUnits,
}

/// Runs `kflame diff`.
pub(crate) fn run(args: Args) -> Result<()> {
    let opts = DiffOptions { normalize: args.normalize, strip_hex: args.strip_hex };
    if args.before == "-" && args.after == "-" {
        bail!("BEFORE and AFTER are both stdin (`-`): it can be read only once; save one to a file");
    }
    let (before, m1) = read(&args.before, opts)?;
    let (after, m2) = read(&args.after, opts)?;
    let mut units = args.units.merger();
    let shown = |p: &str| if p == "-" { "<stdin>".to_string() } else { p.to_string() };
    crate::units::compare(&mut units, &shown(&args.before), &m1, !before.is_empty())?;
    crate::units::compare(&mut units, &shown(&args.after), &m2, !after.is_empty())?;
    let lines = diff::diff(&before, &after, opts);
    let mut out = output::create(args.output.as_deref())?;
    out.write_all(units.meta().header().as_bytes()).context("writing the differential stacks")?;
    diff::write_diff(&mut out, &lines).context("writing the differential stacks")?;
    out.finish().context("writing the differential stacks")
}

/// Reads one profile. An empty one is a warning (every stack of the other is new or gone);
/// one that holds only malformed lines is an error.
fn read(path: &str, opts: DiffOptions) -> Result<(StackCounts, Meta)> {
    let Some((input, sample)) = input::open_folded(path)? else {
        return Ok((StackCounts::new(), Meta::default()));
    };
    let name = input.name.clone();
    let (mut meta, mut diag) = (Meta::default(), Diagnostics::new());
    let reader = BufReader::with_capacity(1 << 16, input.reader());
    let counts =
        diff::read_profile(reader, opts, &mut meta, &mut diag).with_context(|| format!("reading {name}"))?;
    output::message(diag.report(&name).to_string());
    input::check_folded(&sample, counts.len() as u64, &diag)?;
    Ok((counts, meta))
}
