//! Where a recording goes: chosen by the extension of `-o`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use kflame::fold::write::write_lines;
use kflame::record::{Recording, json};

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

/// Refuses, before anything is recorded, an output this build cannot write.
pub(crate) fn ensure_supported(kind: Kind) -> Result<()> {
    match kind {
        Kind::Folded | Kind::Json => Ok(()),
        Kind::Svg | Kind::Html => {
            render_graph(kind, &Recording::default(), &GraphOptions::default(), &mut Vec::new())
        }
    }
}

/// THE RENDERER HOOK: the single place where a recording becomes an SVG or HTML graph.
/// The renderers are developed separately; once merged, call them here with `r.stacks`,
/// `r.meta` (unit for the tooltips), and `opts` (style, flame chart from `r.events` in time
/// order — recorded when `--type chart` is given —, title).
fn render_graph<W: Write>(kind: Kind, _r: &Recording, opts: &GraphOptions, _out: &mut W) -> Result<()> {
    let _ = (opts.style, opts.graph_type, &opts.title);
    bail!(
        "{} output is not built in this version; write .folded and render it with `kflame flamegraph`",
        if kind == Kind::Svg { "SVG" } else { "HTML" }
    )
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
