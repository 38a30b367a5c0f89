//! `kflame flamegraph --format speedscope|pprof|otlp|chrome-trace`: folded inputs merged and
//! written in another tool's format by the library's writers (`kflame::export`).

use std::io::BufReader;
use std::path::Path;

use anyhow::{Context, Result, bail};
use kflame::diag::Diagnostics;
use kflame::export::{self, Format, Profile};
use kflame::fold::{OrderedStacks, StackCounts, Stacks};

use crate::input;
use crate::output;

/// How a profile is written besides its format.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct How {
    /// Keep the input order (`--flamechart`, and always for a Chrome trace), else sum.
    pub(crate) time_order: bool,
    /// speedscope: one profile per process (`--per-process`).
    pub(crate) per_process: bool,
}

/// Reads the folded `files` (stdin when none) and writes them in `format` to `out` (stdout
/// when none), as `how` says.
pub(crate) fn write(
    files: &[String],
    out_path: Option<&Path>,
    format: Format,
    how: How,
    units: crate::units::MixedUnits,
) -> Result<()> {
    let time_order = how.time_order;
    let mut stacks =
        if time_order { Stacks::Ordered(OrderedStacks::new()) } else { Stacks::Counts(StackCounts::new()) };
    let mut merge = units.merger();
    let paths = input::paths_or_stdin(files)?;
    for path in &paths {
        let Some((input, sample)) = input::open_folded(path)? else { continue };
        let name = input.name.clone();
        let mut diag = Diagnostics::new();
        let mut meta = kflame::fold::Meta::default();
        let mut count = 0u64;
        let mut differential = None;
        let reader = BufReader::with_capacity(1 << 16, input.reader());
        kflame::fold::read::read_folded_lines(reader, &mut meta, &mut diag, |lineno, line, _| {
            if line.before.is_some() {
                differential.get_or_insert(lineno);
                return;
            }
            stacks.add(line.stack, line.weight);
            count += 1;
        })
        .with_context(|| format!("reading {name}"))?;
        if let Some(line) = differential {
            bail!(
                "{name}:{line}: differential input (two counts per line, from `kflame diff`) has no \
                 equivalent in {}: write each side on its own",
                format.name()
            );
        }
        output::message(diag.report(&name).to_string());
        input::check_folded(&sample, count, &diag)?;
        crate::units::add(&mut merge, &name, &meta, count > 0)?;
    }
    if stacks.is_empty() {
        output::message(format!(
            "warning: no samples in the input; writing an empty {} profile",
            format.name()
        ));
    }
    let meta = merge.into_meta();
    // The input's file name (not its path) names the profile.
    let name = match paths.as_slice() {
        [one] if one != "-" => Path::new(one).file_name().and_then(|n| n.to_str()),
        _ => None,
    };
    let profile = Profile { stacks: &stacks, meta: &meta, name };
    let mut out = output::create(out_path)?;
    let written = if how.per_process && format == Format::Speedscope {
        export::speedscope::write_per_process(&profile, &mut out)
    } else {
        export::write(format, &profile, &mut out)
    };
    written.with_context(|| format!("writing the {} profile", format.name()))?;
    out.finish().with_context(|| format!("writing the {} profile", format.name()))?;
    Ok(())
}
