//! Where a recording goes: chosen by the extension of `-o`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use kflame::fold::write::write_lines;
use kflame::fold::{OrderedStacks, Stacks, Weight};
use kflame::record::{Recording, json};
use kflame::render::html::{HtmlOptions, HtmlProfile, write_html};
use kflame::render::{self, Options, Profile};

/// Output kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Folded stacks with a `# unit=` header.
    Folded,
    /// One JSON line per event.
    Json,
    /// A flame graph.
    Svg,
    /// An interactive HTML flame graph.
    Html,
}

impl Kind {
    /// From the output file name (no name or `-`: folded on stdout).
    pub(crate) fn from_path(path: Option<&Path>) -> Result<Kind> {
        let Some(ext) = path.and_then(|p| p.extension()).and_then(|e| e.to_str()) else {
            return Ok(Kind::Folded);
        };
        Ok(match ext.to_ascii_lowercase().as_str() {
            "folded" | "txt" | "stacks" => Kind::Folded,
            "json" | "jsonl" => Kind::Json,
            "svg" => Kind::Svg,
            "html" | "htm" => Kind::Html,
            other => bail!("unknown output extension `.{other}`; use .folded, .json, .svg or .html"),
        })
    }
}

/// `--style`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Style {
    /// Root at the bottom.
    #[default]
    Flame,
    /// Root at the top.
    Icicle,
}

/// `--type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GraphType {
    /// Stacks merged and sorted alphabetically.
    #[default]
    Graph,
    /// Stacks in time order (flame chart).
    Chart,
}

/// Options passed to the renderer.
#[derive(Clone, Debug, Default)]
pub(crate) struct GraphOptions {
    pub(crate) style: Style,
    pub(crate) graph_type: GraphType,
    pub(crate) title: Option<String>,
}

/// Writes `r` as `kind`.
pub(crate) fn write<W: Write>(kind: Kind, r: &Recording, opts: &GraphOptions, out: &mut W) -> Result<()> {
    match kind {
        Kind::Folded => {
            out.write_all(r.meta.header().as_bytes()).context("writing folded stacks")?;
            write_lines(out, r.stacks.sorted().into_iter()).context("writing folded stacks")
        }
        Kind::Json => json::write_events(out, &r.events, &r.meta).context("writing JSON events"),
        Kind::Svg | Kind::Html => render_graph(kind, r, opts, out),
    }
}

/// The stacks to draw: merged for a flame graph, the recorded events in time order for a
/// flame chart (identical consecutive stacks merge).
fn graph_stacks(r: &Recording, opts: &GraphOptions) -> Stacks {
    if opts.graph_type == GraphType::Chart && !r.events.is_empty() {
        let mut events: Vec<_> = r.events.iter().collect();
        events.sort_by_key(|e| e.ts);
        let mut ordered = OrderedStacks::new();
        for e in events {
            ordered.push(e.stack.join(";").as_bytes(), Weight::from_u64(e.weight));
        }
        Stacks::Ordered(ordered)
    } else {
        Stacks::Counts(r.stacks.clone())
    }
}

/// Draws `r` with the renderers of `kflame flamegraph`: the SVG or the HTML viewer page.
fn render_graph<W: Write>(kind: Kind, r: &Recording, opts: &GraphOptions, out: &mut W) -> Result<()> {
    let stacks = graph_stacks(r, opts);
    let chart = matches!(stacks, Stacks::Ordered(_));
    let inverted = opts.style == Style::Icicle;
    if kind == Kind::Html {
        let page =
            HtmlOptions { title: opts.title.clone(), inverted, flamechart: chart, ..HtmlOptions::default() };
        return write_html(out, &HtmlProfile::new(&stacks, &r.meta), &page).context("writing the HTML page");
    }
    let mut profile = Profile::new(chart, false);
    for (stack, weight) in stacks.in_output_order() {
        profile.add(&String::from_utf8_lossy(stack), weight, Weight::ZERO);
    }
    profile.meta = r.meta.clone();
    profile.finish();
    let svg = Options { title: opts.title.clone(), inverted, flame_chart: chart, ..Options::default() };
    render::write_svg(&profile, &svg, None, out).context("writing the SVG")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_from_extension() {
        assert_eq!(Kind::from_path(None).unwrap(), Kind::Folded);
        assert_eq!(Kind::from_path(Some(Path::new("-"))).unwrap(), Kind::Folded);
        assert_eq!(Kind::from_path(Some(Path::new("a.FOLDED"))).unwrap(), Kind::Folded);
        assert_eq!(Kind::from_path(Some(Path::new("a.json"))).unwrap(), Kind::Json);
        assert_eq!(Kind::from_path(Some(Path::new("a.svg"))).unwrap(), Kind::Svg);
        assert_eq!(Kind::from_path(Some(Path::new("a.html"))).unwrap(), Kind::Html);
        assert!(Kind::from_path(Some(Path::new("a.png"))).is_err());
    }
}
