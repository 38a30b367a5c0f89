//! Writing the frames.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::Geometry;
use super::escape::xml;
use crate::render::layout::{Frame, Layout, ROOT, WAKER_SEPARATOR};
use crate::render::options::Options;
use crate::render::palette::{self, Category, PaletteMap, Rgb, Variation};
use crate::render::profile::Profile;
use crate::render::text::{self, WeightFormat};

pub(super) struct Context<'a> {
    pub(super) profile: &'a Profile,
    pub(super) opts: &'a Options,
    pub(super) geo: &'a Geometry,
    pub(super) layout: &'a Layout,
    pub(super) format: &'a WeightFormat,
    pub(super) timemax: f64,
}

pub(super) fn write_frames<W: Write + ?Sized>(
    ctx: &Context<'_>,
    mut palette_map: Option<&mut PaletteMap>,
    out: &mut W,
) -> io::Result<()> {
    let mut buf = String::with_capacity(1 << 17);
    let mut variation = ctx.opts.variation.clone();
    for f in &ctx.layout.frames {
        let name = if f.name == ROOT { "all" } else { ctx.profile.name(f.name) };
        let color = color(ctx, f, name, &mut variation, palette_map.as_deref_mut());
        frame(ctx, f, name, color, &mut buf);
        if buf.len() > (1 << 17) - 4096 {
            out.write_all(buf.as_bytes())?;
            buf.clear();
        }
    }
    out.write_all(buf.as_bytes())
}

fn color(ctx: &Context<'_>, f: &Frame, name: &str, v: &mut Variation, map: Option<&mut PaletteMap>) -> Rgb {
    if ctx.profile.differential {
        return palette::differential(f.delta, ctx.layout.max_delta, ctx.opts.negate);
    }
    let category = if f.name == ROOT { Category::Root } else { f.category };
    let mut pick = || ctx.opts.palette.color(name, category, f.waker, v.next(name));
    match map {
        // A waker's frame keeps a colour of its own family in the map, apart from the same
        // function's in blocked stacks (flamegraph.pl's chain graphs name them `_[w]`).
        Some(m) if f.waker => m.get_or_insert(&format!("{name}_[w]"), pick),
        Some(m) => m.get_or_insert(name, pick),
        None => pick(),
    }
}

fn frame(ctx: &Context<'_>, f: &Frame, name: &str, color: Rgb, s: &mut String) {
    let attrs = ctx.opts.name_attrs.get(name).unwrap_or_default();
    s.push_str("<g");
    for (k, v) in attrs.iter().filter(|(k, _)| !matches!(k.as_str(), "title" | "href" | "target")) {
        write!(s, " {k}=\"").ok();
        xml(v, s);
        s.push('"');
    }
    s.push_str("><title>");
    match attrs.iter().find(|(k, _)| k == "title") {
        Some((_, t)) => xml(t, s),
        None => title(ctx, f, name, s),
    }
    s.push_str("</title>");
    let href = attrs.iter().find(|(k, _)| k == "href");
    if let Some((_, h)) = href {
        let target = attrs.iter().find(|(k, _)| k == "target").map_or("_top", |(_, t)| t.as_str());
        s.push_str("<a xlink:href=\"");
        xml(h, s);
        s.push_str("\" target=\"");
        xml(target, s);
        s.push_str("\">");
    }
    shapes(ctx, f, name, color, s);
    if href.is_some() {
        s.push_str("</a>");
    }
    s.push_str("</g>\n");
}

fn shapes(ctx: &Context<'_>, f: &Frame, name: &str, color: Rgb, s: &mut String) {
    let geo = ctx.geo;
    let x = 100.0 * f.x.as_f64() / ctx.timemax;
    let w = 100.0 * f.w.as_f64() / ctx.timemax;
    let y = geo.frame_y(f.depth);
    let h = geo.frame_height - 1.0;
    write!(
        s,
        r#"<rect x="{x:.4}%" y="{y}" width="{w:.4}%" height="{h}" fill="{color}" kf:x="{}" kf:w="{}"#,
        f.x, f.w
    )
    .ok();
    if ctx.profile.differential {
        write!(s, "\" kf:d=\"{}", f.delta as f64 / 1e9).ok();
    }
    s.push_str("\"/>");
    // Frames too narrow for a label get no text element (most frames of large profiles);
    // the script adds one when a zoom makes room.
    let text = label(name, w * geo.area / 100.0, ctx.opts);
    if !text.is_empty() {
        let tx = x + 100.0 * 3.0 / geo.area;
        let ty = y + h / 2.0 + ctx.opts.font_size / 3.0;
        s.push_str("<text x=\"");
        fixed4(tx, s);
        s.push_str("%\" y=\"");
        fixed2(ty, s);
        s.push_str("\">");
        xml(&text, s);
        s.push_str("</text>");
    }
}

/// Writes a non-negative percentage with four decimals (`12.3456`), like `{:.4}` but
/// without the float formatter's slow path (this runs for every frame).
fn fixed4(v: f64, s: &mut String) {
    let units = (v.max(0.0) * 10_000.0).round() as u64;
    write!(s, "{}.{:04}", units / 10_000, units % 10_000).ok();
}

/// Like [`fixed4`] with two decimals.
fn fixed2(v: f64, s: &mut String) {
    let units = (v.max(0.0) * 100.0).round() as u64;
    write!(s, "{}.{:02}", units / 100, units % 100).ok();
}

/// What the title of a `--` frame adds to its name: which side is which.
const SEPARATOR_NOTE: &str = " (waker's stack above, blocked stack below)";
const SEPARATOR_NOTE_INVERTED: &str = " (waker's stack below, blocked stack above)";

/// `name (1,234 samples, 5.67%)`, `name (…; +1.23%)` for differentials; annotations such as
/// `_[k]` are shown by colour, not in the text.
fn title(ctx: &Context<'_>, f: &Frame, name: &str, s: &mut String) {
    xml(strip_annotation(name), s);
    if name == WAKER_SEPARATOR {
        s.push_str(if ctx.geo.inverted { SEPARATOR_NOTE_INVERTED } else { SEPARATOR_NOTE });
    }
    let weight = ctx.format.weight(f.w);
    let pct = if f.name == ROOT && (f.w.as_f64() - ctx.timemax).abs() < f64::EPSILON {
        "100".to_string()
    } else if ctx.opts.factor != 1.0 {
        // FlameGraph takes the share of the rounded, scaled count.
        let f64_factor = ctx.opts.factor;
        text::percent((f.w.as_f64() * f64_factor).round(), ctx.timemax * f64_factor)
    } else {
        text::percent(f.w.as_f64(), ctx.timemax)
    };
    write!(s, " ({}, {pct}%", super::escape::xml_string(&weight)).ok();
    if ctx.profile.differential && f.name != ROOT {
        let d = if ctx.opts.negate { -f.delta } else { f.delta } as f64 / 1e9;
        write!(s, "; {}%", text::signed_percent(d, ctx.timemax)).ok();
    }
    s.push(')');
}

/// The label that fits `px` pixels: the name, or its start and `..`, or nothing.
fn label(name: &str, px: f64, opts: &Options) -> String {
    let chars = (px / (opts.font_size * opts.font_width)).floor();
    if chars.is_nan() || chars < 3.0 {
        return String::new();
    }
    let chars = chars as usize;
    let name = strip_annotation(name);
    if name.chars().nth(chars).is_none() {
        return name.to_string();
    }
    let mut t: String = name.chars().take(chars - 2).collect();
    t.push_str("..");
    t
}

/// `vfs_read_[k]` → `vfs_read` (the annotation is shown by colour, not in the label).
fn strip_annotation(name: &str) -> &str {
    for a in ["_[k]", "_[j]", "_[i]", "_[w]"] {
        if let Some(n) = name.strip_suffix(a) {
            return n;
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_four_decimals() {
        for v in [0.0, 8.031_06, 100.0, 0.000_04, 0.000_05, 99.999_96, 12.5] {
            let mut s = String::new();
            fixed4(v, &mut s);
            assert_eq!(s.parse::<f64>().unwrap(), format!("{v:.4}").parse::<f64>().unwrap(), "{v}");
        }
    }

    #[test]
    fn labels_fit() {
        let o = Options::default();
        let per = o.font_size * o.font_width;
        assert_eq!(label("__libc_start_main", 13.4 * per, &o), "__libc_star..");
        assert_eq!(label("main", 13.4 * per, &o), "main");
        assert_eq!(label("main", 2.9 * per, &o), "");
        assert_eq!(label("vfs_read_[k]", 20.0 * per, &o), "vfs_read");
        assert_eq!(label("żółw_żółw", 5.0 * per, &o), "żół..");
    }
}
