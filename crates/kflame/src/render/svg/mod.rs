//! The SVG writer: header, background, title, the frames, and the embedded script and
//! style (real files under `render/assets/`, included at build time).
//!
//! Each frame is `<g><title>…</title><rect …/><text …>label</text></g>` with `x`/`width` in
//! percent of the frame area (so the script can zoom by rewriting them) and the exact
//! position in weight units in `kf:x` / `kf:w` (and `kf:d`, the change, for differential
//! input). Everything that comes from the input is escaped.

pub mod escape;
mod frame;

use std::fmt::Write as _;
use std::io::{self, Write};

use super::options::Options;
use super::palette::PaletteMap;
use super::profile::Profile;
use super::text::WeightFormat;
use escape::{json_string, xml_string};

const SCRIPT: &str = include_str!("../assets/flamegraph.js");
const STYLE: &str = include_str!("../assets/flamegraph.css");
/// The namespace of kflame's frame attributes.
pub const NAMESPACE: &str = "urn:kflame:flamegraph";
/// The left and right margin around the frames, in pixels (FlameGraph's `xpad`).
pub const XPAD: f64 = 10.0;

/// Pixel geometry of one graph.
pub(crate) struct Geometry {
    pub(crate) width: f64,
    pub(crate) area: f64,
    pub(crate) height: f64,
    pub(crate) frame_height: f64,
    pub(crate) top: f64,
    pub(crate) bottom: f64,
    pub(crate) inverted: bool,
}

impl Geometry {
    fn new(opts: &Options, max_depth: u32) -> Geometry {
        let fs = opts.font_size;
        let top = fs * 3.0 + if opts.subtitle.is_some() { fs * 2.0 } else { 0.0 };
        let bottom = fs * 2.0 + 10.0;
        let fh = opts.frame_height.max(1) as f64;
        let depths = max_depth + 1;
        let width = opts.width.max(100) as f64;
        Geometry {
            width,
            area: width - 2.0 * XPAD,
            height: top + bottom + depths as f64 * fh,
            frame_height: fh,
            top,
            bottom,
            inverted: opts.inverted,
        }
    }

    /// Top edge of the rectangle of a frame at `depth`.
    pub(crate) fn frame_y(&self, depth: u32) -> f64 {
        if self.inverted {
            self.top + depth as f64 * self.frame_height
        } else {
            self.height - self.bottom - (depth as f64 + 1.0) * self.frame_height + 1.0
        }
    }
}

/// What was drawn.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Frames drawn (the root included).
    pub frames: usize,
    /// Stacks read.
    pub stacks: usize,
}

/// Writes the SVG of `profile` (finished) to `out`. `palette_map` is the consistent palette
/// (`--cp`): colours found there are used, new ones are added.
pub fn write_svg<W: Write + ?Sized>(
    profile: &Profile,
    opts: &Options,
    palette_map: Option<&mut PaletteMap>,
    out: &mut W,
) -> io::Result<Summary> {
    let opts = &opts.sanitized();
    let total = profile.total();
    let timemax = opts.total.filter(|t| *t > total).unwrap_or(total).as_f64();
    let area = opts.width.max(100) as f64 - 2.0 * XPAD;
    let min_width = opts.min_width.pixels(area) * timemax / area;
    let classify = opts.palette == super::palette::Palette::Kernel;
    let layout = super::layout::layout(profile, min_width, classify);
    let geo = Geometry::new(opts, layout.max_depth);
    let format = WeightFormat {
        unit: profile.meta.unit.clone(),
        count_name: opts.count_name.clone(),
        factor: opts.factor,
    };
    let mut s = String::with_capacity(1 << 16);
    header(&mut s, opts, &geo);
    chrome(&mut s, opts, &geo, profile.is_empty());
    write!(s, r#"<svg id="frames" x="{XPAD}" width="{}">"#, geo.area).ok();
    s.push('\n');
    out.write_all(s.as_bytes())?;
    let ctx = frame::Context { profile, opts, geo: &geo, layout: &layout, format: &format, timemax };
    if !profile.is_empty() {
        frame::write_frames(&ctx, palette_map, out)?;
    }
    s.clear();
    s.push_str("</svg>\n");
    script(&mut s, opts, &geo, &format, timemax, profile);
    s.push_str("</svg>\n");
    out.write_all(s.as_bytes())?;
    Ok(Summary { frames: if profile.is_empty() { 0 } else { layout.frames.len() }, stacks: profile.len() })
}

fn header(s: &mut String, opts: &Options, geo: &Geometry) {
    let enc =
        opts.encoding.as_deref().map(|e| format!(r#" encoding="{}""#, xml_string(e))).unwrap_or_default();
    let (w, h) = (geo.width, geo.height);
    write!(
        s,
        "<?xml version=\"1.0\"{enc} standalone=\"no\"?>\n\
         <!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n\
         <svg version=\"1.1\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" \
         xmlns:kf=\"{NAMESPACE}\">\n"
    )
    .ok();
    if let Some(notes) = &opts.notes {
        writeln!(s, "<desc id=\"notes\">{}</desc>", xml_string(notes)).ok();
    }
    let (c1, c2) = opts.background.unwrap_or_else(|| opts.palette.default_background()).stops();
    write!(
        s,
        "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">\
         <stop stop-color=\"{c1}\" offset=\"5%\"/><stop stop-color=\"{c2}\" offset=\"95%\"/>\
         </linearGradient></defs>\n<style type=\"text/css\"><![CDATA[\ntext {{ font-family:{}; font-size:{}px; }}\n{STYLE}]]></style>\n",
        css_font(&opts.font_type),
        opts.font_size
    )
    .ok();
}

/// A font family list safe inside CSS in CDATA (quotes, backslashes, braces, `;`, `<`, `>`
/// removed, so it cannot end the rule, the CDATA section or the element), ending in a generic
/// family so that a missing font (Verdana on Linux) falls back to a sans-serif, not serif.
fn css_font(f: &str) -> String {
    let mut font: String =
        f.chars().filter(|c| !matches!(c, '"' | '\\' | ';' | '{' | '}' | '<' | '>')).collect();
    let generic = ["serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui"];
    if !font.split(',').any(|p| generic.contains(&p.trim())) {
        font.push_str(", sans-serif");
    }
    font
}

fn chrome(s: &mut String, opts: &Options, geo: &Geometry, empty: bool) {
    let fs = opts.font_size;
    let (w, h) = (geo.width, geo.height);
    let right = w - XPAD;
    let bottom_y = h - fs * 1.5 + 4.0;
    writeln!(s, "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"{h}\" fill=\"url(#background)\"/>").ok();
    writeln!(s, "<text id=\"title\" x=\"50%\" y=\"{}\">{}</text>", fs * 2.0, xml_string(opts.title())).ok();
    if let Some(sub) = &opts.subtitle {
        writeln!(s, "<text id=\"subtitle\" x=\"50%\" y=\"{}\">{}</text>", fs * 4.0, xml_string(sub)).ok();
    }
    writeln!(s, "<text id=\"details\" x=\"{XPAD}\" y=\"{bottom_y}\"> </text>").ok();
    writeln!(s, "<text id=\"unzoom\" class=\"hide\" x=\"{XPAD}\" y=\"{}\">Reset Zoom</text>", fs * 2.0).ok();
    writeln!(s, "<text id=\"search\" x=\"{}\" y=\"{}\">Search</text>", right - 24.0, fs * 2.0).ok();
    writeln!(s, "<text id=\"ignorecase\" x=\"{right}\" y=\"{}\">ic</text>", fs * 2.0).ok();
    writeln!(s, "<text id=\"matched\" x=\"{right}\" y=\"{bottom_y}\"> </text>").ok();
    if empty {
        writeln!(s, "<text id=\"empty\" x=\"50%\" y=\"{}\">no samples</text>", geo.frame_y(0) + fs).ok();
    }
}

fn script(s: &mut String, opts: &Options, geo: &Geometry, f: &WeightFormat, timemax: f64, p: &Profile) {
    let unit = if f.scaled() { f.unit.name().to_string() } else { String::new() };
    write!(
        s,
        "<g id=\"tooltip\" class=\"hide\"><rect rx=\"3\" ry=\"3\"/><text/></g>\n\
         <script type=\"text/ecmascript\"><![CDATA[\nvar kflameConfig = {{\"nametype\": {}, \"countname\": {}, \
         \"unit\": {}, \"factor\": {}, \"total\": {}, \"fontsize\": {}, \"fontwidth\": {}, \"xpad\": {XPAD}, \
         \"frameheight\": {}, \"inverted\": {}, \"differential\": {}, \"negate\": {}}};\n{SCRIPT}]]></script>\n",
        json_string(&opts.name_type),
        json_string(f.count_name()),
        json_string(&unit),
        f.factor,
        timemax,
        opts.font_size,
        opts.font_width,
        geo.frame_height,
        geo.inverted,
        p.differential,
        opts.negate,
    )
    .ok();
}
