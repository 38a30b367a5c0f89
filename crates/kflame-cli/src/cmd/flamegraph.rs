//! `kflame flamegraph`: folded stacks to an interactive SVG flame graph, with every option of
//! FlameGraph's `flamegraph.pl` under the same name and meaning.

use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kflame::diag::Diagnostics;
use kflame::fold::Weight;
use kflame::render::html::HtmlOptions;
use kflame::render::{
    self, Background, MinWidth, NameAttrs, Options, OutputKind, Palette, PaletteMap, Profile, Variation,
};

use crate::input;
use crate::output;

/// The consistent palette file of `--cp`, in the working directory (as FlameGraph's).
const PALETTE_FILE: &str = "palette.map";

/// Arguments of `kflame flamegraph`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  kflame collapse perf.script.txt | kflame flamegraph > cpu.svg
  kflame flamegraph --colors kernel --title 'CPU, host1' host1.folded -o h1.svg
  kflame collapse --time-order perf.script.txt |
      kflame flamegraph --flamechart > chart.svg
  kflame diff before.folded after.folded | kflame flamegraph > diff.svg
  kflame flamegraph cpu.folded -o cpu.speedscope.json
  kflame flamegraph cpu.folded -o cpu.pb.gz  # pprof, Pyroscope, Parca
  kflame collapse --time-order perf.script.txt |
      kflame flamegraph --format chrome-trace -o cpu.trace.json")]
pub(crate) struct Args {
    /// Folded input files (`-` or none: stdin); several are merged.
    #[arg(value_name = "FOLDED")]
    files: Vec<String>,

    /// Write the graph here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,

    /// Output format (default: the one the name of -o ends in, in any case: .svg,
    /// .html/.htm, .speedscope.json, .pb.gz/.pprof, .otlp.pb, .trace.json; else svg).
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<OutputFormat>,
    /// speedscope: one profile per process (the first frame of each stack: the comm, or
    /// `comm-PID` from `collapse --pid`, names the profile) instead of one in all.
    #[arg(long)]
    per_process: bool,

    #[command(flatten)]
    units: crate::units::MixedUnits,

    /// Title text (default "Flame Graph", "Icicle Graph" or "Flame Chart").
    #[arg(long, value_name = "TEXT", help_heading = "Appearance")]
    title: Option<String>,
    /// Second title line.
    #[arg(long, value_name = "TEXT", help_heading = "Appearance")]
    subtitle: Option<String>,
    /// Width of the image in pixels (at least 100).
    #[arg(long, value_name = "PX", default_value_t = 1200, value_parser = parse_width, help_heading = "Appearance")]
    width: u32,
    /// Height of each frame in pixels (at least 1).
    #[arg(long, value_name = "PX", default_value_t = 16, value_parser = parse_height, help_heading = "Appearance")]
    height: u32,
    /// Omit frames narrower than this: pixels, or percent of the width with `%`.
    #[arg(long, value_name = "PX|PCT%", default_value = "0.1", value_parser = parse_min_width, help_heading = "Appearance")]
    minwidth: MinWidth,
    /// Font family, or a comma-separated list of families.
    #[arg(long, value_name = "FONT", default_value = "Verdana", value_parser = parse_font_family, help_heading = "Appearance")]
    fonttype: String,
    /// Font size in pixels.
    #[arg(long, value_name = "PX", default_value_t = 12.0, value_parser = parse_positive, help_heading = "Appearance")]
    fontsize: f64,
    /// Average glyph width relative to the font size (label truncation).
    #[arg(long, value_name = "RATIO", default_value_t = 0.59, value_parser = parse_positive, help_heading = "Appearance")]
    fontwidth: f64,
    /// What the counts are ("samples"; by default from the input's `# unit=` header).
    #[arg(long, value_name = "NAME", help_heading = "Appearance")]
    countname: Option<String>,
    /// What the frame names are, shown before the details line.
    #[arg(long, value_name = "NAME", default_value = "Function:", help_heading = "Appearance")]
    nametype: String,
    /// Palette: hot, mem, io, red, green, blue, aqua, yellow, purple, orange, java, js, perl,
    /// wakeup, chain, or kernel (kernel, user, interrupt, unreliable and category frames apart).
    #[arg(long, visible_alias = "color", value_name = "PALETTE", default_value = "hot",
          value_parser = parse_palette, help_heading = "Colors")]
    colors: Palette,
    /// Background: yellow, blue, green, grey, or #rrggbb (default: the palette's).
    #[arg(long, value_name = "COLOR", value_parser = parse_background, help_heading = "Colors")]
    bgcolors: Option<Background>,
    /// Colours keyed by function name (the same function has the same colour everywhere).
    #[arg(long, conflicts_with = "random", help_heading = "Colors")]
    hash: bool,
    /// Random colours, different on every run (default: reproducible).
    #[arg(long, help_heading = "Colors")]
    random: bool,
    /// Consistent palette: reuse and extend the colours of ./palette.map.
    #[arg(long, help_heading = "Colors")]
    cp: bool,

    /// Reverse every stack (leaf first): a caller-side view of the hottest functions.
    #[arg(long, help_heading = "Layout")]
    reverse: bool,
    /// Icicle graph: root at the top, stacks growing down.
    #[arg(long, help_heading = "Layout")]
    inverted: bool,
    /// Flame chart: x is input (time) order, identical consecutive stacks merged.
    #[arg(long, help_heading = "Layout")]
    flamechart: bool,
    /// Differential input: switch the red and blue hues.
    #[arg(long, help_heading = "Layout")]
    negate: bool,
    /// Notes embedded in the SVG.
    #[arg(long, value_name = "TEXT", help_heading = "Layout")]
    notes: Option<String>,
    /// Multiply displayed counts by this factor.
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0, value_parser = parse_positive, help_heading = "Layout")]
    factor: f64,
    /// Total weight the full width stands for (when larger than the real total).
    #[arg(long, value_name = "WEIGHT", value_parser = parse_weight, help_heading = "Layout")]
    total: Option<Weight>,
    /// XML encoding declared in the SVG header (an encoding name such as UTF-8; the SVG itself
    /// is always written in UTF-8).
    #[arg(long, value_name = "ENCODING", value_parser = parse_encoding, help_heading = "Layout")]
    encoding: Option<String>,
    /// Extra frame attributes: lines `name<TAB>attr=value<TAB>...` (title, href, class...).
    #[arg(long, value_name = "FILE", help_heading = "Layout")]
    nameattr: Option<PathBuf>,
}

/// What `kflame flamegraph` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    /// Interactive SVG (zoom, search, tooltips).
    Svg,
    /// Self-contained HTML page (canvas viewer: search, hide/focus, sandwich view, top
    /// functions; differential input in red and blue). The SVG layout options (--width
    /// --height --minwidth --font* --bgcolors --hash --random --cp --factor --total
    /// --encoding --nameattr --nametype) do not apply to it.
    Html,
    /// speedscope's JSON file format (one sampled profile, or one per process with
    /// --per-process; weights in its unit: none, bytes or nanoseconds), for speedscope.app or
    /// the `speedscope` command.
    Speedscope,
    /// pprof's gzipped profile.proto (sample type in the input's unit: samples/count,
    /// cpu/nanoseconds, alloc_space/bytes, off_cpu or latency/nanoseconds), for `go tool
    /// pprof`, Pyroscope, Parca. Weights must be whole numbers.
    Pprof,
    /// OpenTelemetry profiles: an OTLP ExportProfilesServiceRequest (protobuf, the
    /// development profiles signal of opentelemetry-proto v1.11.0+), kernel frames (`_[k]`)
    /// marked, for OTLP profile endpoints. Weights must be whole numbers.
    Otlp,
    /// Chrome Trace Event Format JSON (complete events, µs), a flame chart of the stacks in
    /// input order for Perfetto or chrome://tracing; best on `collapse --time-order` output.
    ChromeTrace,
}

impl OutputFormat {
    /// The format asked for, else the one the output file name implies, else SVG.
    fn choose(flag: Option<OutputFormat>, output: Option<&Path>) -> OutputFormat {
        flag.or_else(|| output.and_then(OutputFormat::from_extension)).unwrap_or(OutputFormat::Svg)
    }

    /// `.svg` or `.html`/`.htm`, or an ending of [`kflame::export::Format::from_path`] (any
    /// case); other names leave the default.
    fn from_extension(path: &Path) -> Option<OutputFormat> {
        if let Some(f) = kflame::export::Format::from_path(path) {
            return Some(match f {
                kflame::export::Format::Speedscope => OutputFormat::Speedscope,
                kflame::export::Format::Pprof => OutputFormat::Pprof,
                kflame::export::Format::Otlp => OutputFormat::Otlp,
                kflame::export::Format::ChromeTrace => OutputFormat::ChromeTrace,
            });
        }
        match OutputKind::from_path(path)? {
            OutputKind::Svg => Some(OutputFormat::Svg),
            OutputKind::Html => Some(OutputFormat::Html),
            OutputKind::Folded | OutputKind::Json => None,
        }
    }

    /// The library's writer of an interop format; `None` for SVG and HTML.
    fn export(self) -> Option<kflame::export::Format> {
        match self {
            OutputFormat::Svg | OutputFormat::Html => None,
            OutputFormat::Speedscope => Some(kflame::export::Format::Speedscope),
            OutputFormat::Pprof => Some(kflame::export::Format::Pprof),
            OutputFormat::Otlp => Some(kflame::export::Format::Otlp),
            OutputFormat::ChromeTrace => Some(kflame::export::Format::ChromeTrace),
        }
    }
}

/// Runs `kflame flamegraph`.
pub(crate) fn run(args: Args) -> Result<()> {
    let format = OutputFormat::choose(args.format, args.output.as_deref());
    check_options(&args)?;
    if args.per_process && format != OutputFormat::Speedscope {
        return Err(crate::Usage(format!(
            "--per-process splits a speedscope file into one profile per process; the output is {}: \
             add --format speedscope (or -o NAME.speedscope.json)",
            format.export().map_or(if format == OutputFormat::Html { "html" } else { "svg" }, |f| f.name())
        ))
        .into());
    }
    if let Some(export) = format.export() {
        let mut ignored = svg_only_options(&args);
        ignored.extend(page_options(&args));
        if !ignored.is_empty() {
            output::message(format!(
                "warning: {} only shape a graph kflame draws; a {} profile is drawn by the tool that \
                 opens it, so {} ignored",
                ignored.join(" "),
                export.name(),
                if ignored.len() == 1 { "it is" } else { "they are" }
            ));
        }
        let time_order = args.flamechart || export == kflame::export::Format::ChromeTrace;
        let how = super::export::How { time_order, per_process: args.per_process };
        return super::export::write(&args.files, args.output.as_deref(), export, how, args.units);
    }
    if format == OutputFormat::Html {
        let ignored = svg_only_options(&args);
        if !ignored.is_empty() {
            output::message(format!(
                "warning: {} only shape the SVG; the HTML page lays out and colours itself, so {} ignored",
                ignored.join(" "),
                if ignored.len() == 1 { "it is" } else { "they are" }
            ));
        }
        return super::html::write_page(&args.files, args.output.as_deref(), html_options(&args), args.units);
    }
    let profile = read_inputs(&args)?;
    if profile.is_empty() {
        output::message("warning: no samples in the input; writing an empty graph");
    }
    let opts = options(&args)?;
    if let Some(t) = opts.total.filter(|t| *t < profile.total()) {
        output::message(format!(
            "warning: --total {t} is less than the actual total {}; ignored",
            profile.total()
        ));
    }
    let mut palette_map = if args.cp { Some(read_palette_map()?) } else { None };
    let mut out = output::create(args.output.as_deref())?;
    render::write_svg(&profile, &opts, palette_map.as_mut(), &mut out).context("writing the SVG")?;
    out.finish().context("writing the graph")?;
    if let Some(map) = palette_map {
        fs::write(PALETTE_FILE, map.to_text()).with_context(|| format!("writing {PALETTE_FILE}"))?;
    }
    Ok(())
}

/// The options of the HTML page, from the flamegraph.pl-style arguments that apply to it.
fn html_options(args: &Args) -> HtmlOptions {
    HtmlOptions {
        title: args.title.clone(),
        subtitle: args.subtitle.clone(),
        countname: args.countname.clone(),
        palette: args.colors,
        inverted: args.inverted,
        flamechart: args.flamechart,
        reverse: args.reverse,
        notes: args.notes.clone(),
        negate: args.negate,
    }
}

fn read_inputs(args: &Args) -> Result<Profile> {
    let mut profile = Profile::new(args.flamechart, args.reverse);
    let mut units = args.units.merger();
    for path in input::paths_or_stdin(&args.files)? {
        let Some((input, sample)) = input::open_folded(&path)? else { continue };
        let name = input.name.clone();
        let mut diag = Diagnostics::new();
        let reader = BufReader::with_capacity(1 << 16, input.reader());
        let (meta, stacks) =
            profile.read_stacks(reader, &mut diag).with_context(|| format!("reading {name}"))?;
        output::message(diag.report(&name).to_string());
        input::check_folded(&sample, stacks, &diag)?;
        crate::units::add(&mut units, &name, &meta, stacks > 0)?;
    }
    profile.meta = units.into_meta();
    profile.finish();
    Ok(profile)
}

/// The options of both the SVG and the HTML page given (none shapes an exported profile;
/// `--flamechart` does: it keeps the input order).
fn page_options(args: &Args) -> Vec<&'static str> {
    [
        ("--title", args.title.is_some()),
        ("--subtitle", args.subtitle.is_some()),
        ("--countname", args.countname.is_some()),
        ("--colors", !matches!(args.colors, Palette::Hot)),
        ("--reverse", args.reverse),
        ("--inverted", args.inverted),
        ("--negate", args.negate),
        ("--notes", args.notes.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect()
}

/// Checks the options that make sense only together (each value alone is checked by its
/// parser), and warns about an encoding the SVG is not written in.
/// The SVG layout options given with values other than their defaults (the HTML page has
/// no use for them).
fn svg_only_options(args: &Args) -> Vec<&'static str> {
    let default_minwidth = matches!(args.minwidth, MinWidth::Pixels(px) if px == 0.1);
    [
        ("--width", args.width != 1200),
        ("--height", args.height != 16),
        ("--minwidth", !default_minwidth),
        ("--fonttype", args.fonttype != "Verdana"),
        ("--fontsize", args.fontsize != 12.0),
        ("--fontwidth", args.fontwidth != 0.59),
        ("--nametype", args.nametype != "Function:"),
        ("--bgcolors", args.bgcolors.is_some()),
        ("--hash", args.hash),
        ("--random", args.random),
        ("--cp", args.cp),
        ("--factor", args.factor != 1.0),
        ("--total", args.total.is_some()),
        ("--encoding", args.encoding.is_some()),
        ("--nameattr", args.nameattr.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect()
}

fn check_options(args: &Args) -> Result<()> {
    let area = f64::from(args.width) - 2.0 * render::svg::XPAD;
    if let MinWidth::Pixels(px) = args.minwidth
        && px > area
    {
        return Err(crate::Usage(format!(
            "--minwidth {px} is wider than the frame area of a {} px image ({area} px): every frame \
             would be omitted",
            args.width
        ))
        .into());
    }
    if let Some(e) = args.encoding.as_deref().filter(|e| !is_utf8_label(e)) {
        output::message(format!(
            "warning: the SVG is written in UTF-8; declaring it {e} garbles frame names beyond ASCII"
        ));
    }
    Ok(())
}

fn options(args: &Args) -> Result<Options> {
    let name_attrs = match &args.nameattr {
        Some(path) => read_name_attrs(path)?,
        None => NameAttrs::default(),
    };
    Ok(Options {
        title: args.title.clone(),
        subtitle: args.subtitle.clone(),
        width: args.width,
        frame_height: args.height,
        min_width: args.minwidth,
        font_type: args.fonttype.clone(),
        font_size: args.fontsize,
        font_width: args.fontwidth,
        count_name: args.countname.clone(),
        name_type: args.nametype.clone(),
        palette: args.colors,
        background: args.bgcolors,
        variation: variation(args),
        inverted: args.inverted,
        flame_chart: args.flamechart,
        negate: args.negate,
        notes: args.notes.clone(),
        factor: args.factor,
        total: args.total,
        encoding: args.encoding.clone(),
        name_attrs,
    })
}

fn variation(args: &Args) -> Variation {
    if args.hash {
        Variation::NameHash
    } else if args.random {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Variation::Seeded(now.as_nanos() as u64 ^ u64::from(std::process::id()))
    } else {
        Options::default().variation
    }
}

fn read_name_attrs(path: &Path) -> Result<NameAttrs> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut diag = Diagnostics::new();
    let attrs = NameAttrs::parse(&text, &mut diag);
    output::message(diag.report(&path.display().to_string()).to_string());
    Ok(attrs)
}

fn read_palette_map() -> Result<PaletteMap> {
    let text = match fs::read_to_string(PALETTE_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {PALETTE_FILE}")),
    };
    let mut diag = Diagnostics::new();
    let map = PaletteMap::parse(&text, &mut diag);
    output::message(diag.report(PALETTE_FILE).to_string());
    Ok(map)
}

fn parse_min_width(s: &str) -> Result<MinWidth, String> {
    match MinWidth::parse(s) {
        Some(MinWidth::Percent(p)) if p > 100.0 => {
            Err(format!("a percentage of the width is at most 100%, found `{s}`"))
        }
        Some(m) => Ok(m),
        None => Err(format!("expected pixels (0.1) or a percentage (0.5%), found `{s}`")),
    }
}

fn parse_width(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(w) if w >= 100 => Ok(w),
        Ok(w) => Err(format!(
            "at least 100 pixels (room for the title, the frames and the details line), found {w}"
        )),
        Err(_) => Err(format!("expected a whole number of pixels, found `{s}`")),
    }
}

fn parse_height(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(h) if h >= 1 => Ok(h),
        Ok(_) => Err("at least 1 pixel; frames 0 pixels high would not be seen".to_string()),
        Err(_) => Err(format!("expected a whole number of pixels, found `{s}`")),
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a positive number, found `{s}`")),
    }
}

/// A font family list: names separated by commas, none empty. Characters that could end the
/// CSS rule or the style element are dropped by the SVG writer (as are the quotes some users
/// put around a name with spaces); control characters are refused.
fn parse_font_family(s: &str) -> Result<String, String> {
    if s.split(',').any(|f| f.trim().trim_matches(['"', '\'']).trim().is_empty()) {
        return Err(format!("expected font family names separated by commas, found `{s}`"));
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(format!("a font family name cannot contain {c:?}, found `{}`", s.escape_debug()));
    }
    Ok(s.to_string())
}

/// An XML encoding name (`EncName`: a letter, then letters, digits, `.`, `_` or `-`).
fn parse_encoding(s: &str) -> Result<String, String> {
    let mut chars = s.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(s.to_string())
    } else {
        Err(format!("expected an encoding name such as UTF-8 (letters, digits, `.`, `_`, `-`), found `{s}`"))
    }
}

/// True for the names browsers take for UTF-8.
fn is_utf8_label(s: &str) -> bool {
    matches!(s.to_ascii_lowercase().as_str(), "utf-8" | "utf8" | "unicode-1-1-utf-8")
}

fn parse_palette(s: &str) -> Result<Palette, String> {
    Palette::from_name(s).ok_or_else(|| {
        format!("unknown palette `{s}`; one of: {}", render::palette::PALETTE_NAMES.join(", "))
    })
}

fn parse_background(s: &str) -> Result<Background, String> {
    Background::from_name(s)
        .ok_or_else(|| format!("expected yellow, blue, green, grey or #rrggbb, found `{s}`"))
}

fn parse_weight(s: &str) -> Result<Weight, String> {
    Weight::parse(s.as_bytes()).map_err(|e| format!("{e}: `{s}`"))
}
