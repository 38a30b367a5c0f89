//! Where a recording goes: the output kind (from `--format` or the extension of `-o`), the
//! output file (opened before recording starts, so that a path that cannot be written fails
//! at once instead of after the recording), and the writers of each kind.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use kflame::fold::write::write_lines;
use kflame::fold::{OrderedStacks, Stacks, Weight};
use kflame::record::{Mode, Recording, json};
use kflame::render::html::{HtmlOptions, HtmlProfile, write_html};
use kflame::render::{self, Options, OutputKind, Profile};

/// Output kinds (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Kind {
    /// Folded stacks with `# unit=` and `# event=` header lines.
    Folded,
    /// One JSON line per event.
    Json,
    /// An interactive SVG flame graph.
    Svg,
    /// A self-contained HTML flame graph viewer.
    Html,
}

impl Kind {
    /// The kind asked for with `--format`, else the one the output file name says: no name,
    /// `-` or no extension is folded text; an extension kflame does not know is refused
    /// (`.txt` could be anything) rather than guessed.
    pub(crate) fn choose(format: Option<Kind>, path: Option<&Path>) -> Result<Kind> {
        if let Some(k) = format {
            return Ok(k);
        }
        let Some(path) = path.filter(|p| p.extension().is_some()) else {
            return Ok(Kind::Folded);
        };
        match OutputKind::from_path(path) {
            Some(OutputKind::Folded) => Ok(Kind::Folded),
            Some(OutputKind::Json) => Ok(Kind::Json),
            Some(OutputKind::Svg) => Ok(Kind::Svg),
            Some(OutputKind::Html) => Ok(Kind::Html),
            None => bail!(
                "unknown output extension `.{}`: use one of {}, or say which with \
                 --format folded|json|svg|html",
                path.extension().unwrap_or_default().to_string_lossy(),
                OutputKind::KNOWN_EXTENSIONS
            ),
        }
    }

    /// The extension of this kind.
    fn ext(self) -> &'static str {
        match self {
            Kind::Folded => OutputKind::Folded,
            Kind::Json => OutputKind::Json,
            Kind::Svg => OutputKind::Svg,
            Kind::Html => OutputKind::Html,
        }
        .extension()
    }
}

/// Where each mode's recording goes: `-o` itself for one mode; for several, one file per mode
/// next to it, the mode's name before the extension (`stall.html` → `stall.cpu.html`,
/// `stall.mem.html`; a name without extension takes the kind's: `stall` → `stall.cpu.folded`).
/// `None`: stdout.
pub(crate) fn paths(output: Option<&Path>, modes: &[Mode], kind: Kind) -> Vec<Option<PathBuf>> {
    let output = output.filter(|p| *p != Path::new("-"));
    let Some(path) = output.filter(|_| modes.len() > 1) else {
        return modes.iter().map(|_| output.map(Path::to_path_buf)).collect();
    };
    let ext = path.extension().map_or_else(|| kind.ext().into(), |e| e.to_string_lossy().into_owned());
    let stem = path.file_stem().map_or_else(|| "kflame".into(), |s| s.to_string_lossy().into_owned());
    modes.iter().map(|m| Some(path.with_file_name(format!("{stem}.{}.{ext}", m.name())))).collect()
}

/// An output opened before recording: a file (created now, removed again unless written),
/// or stdout.
pub(crate) struct Output {
    target: Target,
}

enum Target {
    Stdout,
    File {
        path: PathBuf,
        file: Option<File>,
        /// Created by us: removed when nothing is written into it (recording failed).
        created: bool,
    },
}

impl Output {
    /// Opens `-o PATH` (stdout when absent or `-`). An existing file is opened for writing
    /// without being truncated, so it is kept as it is if recording fails; a new one is
    /// created now and removed if nothing gets written.
    pub(crate) fn open(path: Option<&Path>) -> Result<Output> {
        let path = match path {
            Some(p) if p != Path::new("-") => p,
            _ => return Ok(Output { target: Target::Stdout }),
        };
        let cannot = || format!("cannot write {} (checked before recording)", path.display());
        let (file, created) = match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                (OpenOptions::new().write(true).open(path).with_context(cannot)?, false)
            }
            Err(e) => return Err(e).with_context(cannot),
        };
        Ok(Output { target: Target::File { path: path.to_path_buf(), file: Some(file), created } })
    }

    /// Writes `r` as `kind` (replacing what an existing file held).
    pub(crate) fn write(mut self, kind: Kind, r: &Recording, opts: &GraphOptions) -> Result<()> {
        match &mut self.target {
            Target::Stdout => {
                let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
                write(kind, r, opts, &mut out)?;
                out.flush().context("writing the output")
            }
            Target::File { path, file, created } => {
                let f = file.take().context("output written twice")?;
                *created = false; // from here on the file is ours to fill, even partly
                let what = || format!("writing {}", path.display());
                if f.metadata().is_ok_and(|m| m.is_file()) {
                    f.set_len(0).with_context(what)?;
                }
                let mut out = BufWriter::with_capacity(1 << 16, f);
                write(kind, r, opts, &mut out).with_context(what)?;
                out.flush().with_context(what)
            }
        }
    }
}

impl Drop for Output {
    /// A file created for a recording that failed is removed: no empty file is left behind.
    fn drop(&mut self) {
        if let Target::File { path, created: true, .. } = &self.target {
            let _ = std::fs::remove_file(path);
        }
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
fn write<W: Write>(kind: Kind, r: &Recording, opts: &GraphOptions, out: &mut W) -> Result<()> {
    match kind {
        Kind::Folded => {
            out.write_all(r.meta.declared_header().as_bytes()).context("writing folded stacks")?;
            write_lines(out, r.stacks.sorted().into_iter()).context("writing folded stacks")
        }
        Kind::Json => {
            json::write_events(out, &r.events, &r.meta).context("writing JSON events")?;
            json::write_histograms(out, &r.histograms).context("writing JSON events")
        }
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
    let profile = Profile::from_stacks(&stacks, &r.meta, false);
    let svg = Options { title: opts.title.clone(), inverted, flame_chart: chart, ..Options::default() };
    render::write_svg(&profile, &svg, None, out).context("writing the SVG")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kflame::fold::Meta;

    #[test]
    fn kind_from_format_or_extension() {
        let k = |p: &str| Kind::choose(None, Some(Path::new(p)));
        assert_eq!(Kind::choose(None, None).unwrap(), Kind::Folded);
        assert_eq!(k("-").unwrap(), Kind::Folded);
        assert_eq!(k("cpu").unwrap(), Kind::Folded);
        assert_eq!(k("a.FOLDED").unwrap(), Kind::Folded);
        assert_eq!(k("a.json").unwrap(), Kind::Json);
        assert_eq!(k("a.svg").unwrap(), Kind::Svg);
        assert_eq!(k("a.html").unwrap(), Kind::Html);
        for unknown in ["a.png", "a.txt", "a.stacks"] {
            let e = k(unknown).unwrap_err().to_string();
            assert!(
                e.contains("unknown output extension") && e.contains(".folded") && e.contains("--format"),
                "{e}"
            );
        }
        assert_eq!(Kind::choose(Some(Kind::Folded), Some(Path::new("a.txt"))).unwrap(), Kind::Folded);
        assert_eq!(Kind::choose(Some(Kind::Html), None).unwrap(), Kind::Html);
    }

    #[test]
    fn one_output_per_mode() {
        let cpu = Mode::Cpu { frequency: 99 };
        let modes = [cpu.clone(), Mode::Mem { kmalloc: false }, Mode::Blocked { every: None }];
        let p = |o: Option<&str>, m: &[Mode], k| -> Vec<Option<String>> {
            paths(o.map(Path::new), m, k).into_iter().map(|p| p.map(|p| p.display().to_string())).collect()
        };
        assert_eq!(
            p(Some("out/stall.html"), &modes, Kind::Html),
            [
                Some("out/stall.cpu.html".to_string()),
                Some("out/stall.mem.html".into()),
                Some("out/stall.blocked.html".into())
            ]
        );
        assert_eq!(
            p(Some("stall"), &modes[..2], Kind::Folded),
            [Some("stall.cpu.folded".to_string()), Some("stall.mem.folded".into())]
        );
        assert_eq!(
            p(Some("x.txt"), &modes[..2], Kind::Json),
            [Some("x.cpu.txt".to_string()), Some("x.mem.txt".into())]
        );
        assert_eq!(p(Some("cpu.svg"), &modes[..1], Kind::Svg), [Some("cpu.svg".to_string())]);
        assert_eq!(p(Some("-"), &modes[..1], Kind::Folded), [None]);
        assert_eq!(p(None, &modes[..1], Kind::Folded), [None]);
    }

    #[test]
    fn header_says_the_unit_of_sample_counts_too() {
        use kflame::fold::Unit;
        let cpu = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
        assert_eq!(cpu.declared_header(), "# unit=samples\n# event=cpu-clock\n");
        let mem = Meta { unit: Unit::Bytes, event: Some("kmem:mm_page_alloc".into()) };
        assert_eq!(mem.declared_header(), mem.header());
        // Read back as it was written.
        let mut back = Meta::default();
        for l in cpu.declared_header().lines() {
            assert!(back.apply_comment(l.as_bytes()));
        }
        assert_eq!(back, cpu);
    }

    #[test]
    fn a_file_created_for_a_recording_that_fails_is_removed_and_an_existing_one_kept() {
        let dir = std::env::temp_dir().join(format!("kflame-sink-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let new = dir.join("new.svg");
        drop(Output::open(Some(&new)).unwrap());
        assert!(!new.exists(), "an empty file was left behind");
        let old = dir.join("old.folded");
        std::fs::write(&old, "a;b 1\n").unwrap();
        drop(Output::open(Some(&old)).unwrap());
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "a;b 1\n");
        let missing = dir.join("no/such/dir/x.svg");
        let e = Output::open(Some(&missing)).err().expect("an error").to_string();
        assert!(e.contains("no/such/dir/x.svg"), "{e}");
        // Written: the old content is replaced.
        let r = Recording::new(Mode::Cpu { frequency: 99 }, Meta::default());
        Output::open(Some(&old)).unwrap().write(Kind::Folded, &r, &GraphOptions::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "# unit=samples\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
