//! Rendering options: every `flamegraph.pl` option with the same meaning and default.

use std::collections::HashMap;

use super::palette::{Background, Palette, Variation};
use crate::diag::Diagnostics;
use crate::fold::Weight;

/// Minimum frame width: frames narrower than this are not drawn.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum MinWidth {
    /// In pixels (FlameGraph's default: 0.1).
    Pixels(f64),
    /// In percent of the frame area's width.
    Percent(f64),
}

impl MinWidth {
    /// Parses `0.1` or `0.5%`.
    pub fn parse(s: &str) -> Option<MinWidth> {
        let s = s.trim();
        let (num, pct) = match s.strip_suffix('%') {
            Some(n) => (n, true),
            None => (s, false),
        };
        let v: f64 = num.trim().parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
        Some(if pct { MinWidth::Percent(v) } else { MinWidth::Pixels(v) })
    }

    /// In pixels, for a frame area `area` pixels wide.
    pub fn pixels(self, area: f64) -> f64 {
        match self {
            MinWidth::Pixels(p) => p,
            MinWidth::Percent(p) => area * p / 100.0,
        }
    }
}

/// How to draw a flame graph.
#[derive(Clone, Debug)]
pub struct Options {
    /// Title; the mode's default ("Flame Graph", "Icicle Graph", "Flame Chart") when None.
    pub title: Option<String>,
    /// Second line under the title.
    pub subtitle: Option<String>,
    /// Image width in pixels.
    pub width: u32,
    /// Height of one frame in pixels.
    pub frame_height: u32,
    /// Frames narrower than this are left out.
    pub min_width: MinWidth,
    /// Font family.
    pub font_type: String,
    /// Font size in pixels.
    pub font_size: f64,
    /// Average glyph width relative to the font size (for label truncation).
    pub font_width: f64,
    /// What the counts are (`--countname`); the unit's own wording when None.
    pub count_name: Option<String>,
    /// What the names are (`--nametype`), shown before the details line.
    pub name_type: String,
    /// Colour scheme.
    pub palette: Palette,
    /// Background; the palette's default when None.
    pub background: Option<Background>,
    /// Where each frame's colour variation comes from.
    pub variation: Variation,
    /// Icicle graph: root at the top.
    pub inverted: bool,
    /// Flame chart (only changes the default title; the profile keeps time order).
    pub flame_chart: bool,
    /// Differential input: swap red and blue.
    pub negate: bool,
    /// Free text embedded in the SVG (`--notes`).
    pub notes: Option<String>,
    /// Scale displayed weights (`--factor`).
    pub factor: f64,
    /// Width of the graph in weight units when larger than the real total (`--total`).
    pub total: Option<Weight>,
    /// XML encoding declaration (`--encoding`).
    pub encoding: Option<String>,
    /// Extra attributes per function name (`--nameattr`).
    pub name_attrs: NameAttrs,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            title: None,
            subtitle: None,
            width: 1200,
            frame_height: 16,
            min_width: MinWidth::Pixels(0.1),
            font_type: "Verdana".into(),
            font_size: 12.0,
            font_width: 0.59,
            count_name: None,
            name_type: "Function:".into(),
            palette: Palette::Hot,
            background: None,
            variation: Variation::Seeded(0x6b66_6c61_6d65),
            inverted: false,
            flame_chart: false,
            negate: false,
            notes: None,
            factor: 1.0,
            total: None,
            encoding: None,
            name_attrs: NameAttrs::default(),
        }
    }
}

impl Options {
    /// A copy whose numbers are usable: a non-finite or non-positive font size, glyph width
    /// or factor is replaced by its default (they end up in geometry and in the script).
    pub fn sanitized(&self) -> Options {
        let d = Options::default();
        let ok = |v: f64, default: f64| if v.is_finite() && v > 0.0 { v } else { default };
        let min_width = match self.min_width {
            MinWidth::Pixels(p) if p.is_finite() => MinWidth::Pixels(p),
            MinWidth::Percent(p) if p.is_finite() => MinWidth::Percent(p),
            _ => d.min_width,
        };
        Options {
            font_size: ok(self.font_size, d.font_size),
            font_width: ok(self.font_width, d.font_width),
            factor: ok(self.factor, d.factor),
            min_width,
            ..self.clone()
        }
    }

    /// The title to draw.
    pub fn title(&self) -> &str {
        match &self.title {
            Some(t) => t,
            None if self.flame_chart => "Flame Chart",
            None if self.inverted => "Icicle Graph",
            None => "Flame Graph",
        }
    }
}

/// Kind of a name-attribute line that did not parse.
pub const BAD_NAMEATTR_LINE: &str = "bad nameattr line";
/// Kind of an attribute repeated for the same function.
pub const DUPLICATE_ATTRIBUTE: &str = "duplicate attribute";
/// Kind of a link that could run code (`javascript:`, `vbscript:`, `data:`...).
pub const UNSAFE_URL: &str = "unsafe link";

/// Attributes per function name, from a `--nameattr` file: `name<TAB>attr=value<TAB>...`.
/// `title` replaces the frame's tooltip, `href`/`target` make the frame a link, anything
/// else is set on the frame's group. Event-handler attributes (`on...`) are refused, and so
/// are links other than `http:`, `https:`, `mailto:` or relative ones (`javascript:`,
/// `vbscript:`, `data:`... in any disguise, see [`super::attr::is_safe_url`]).
#[derive(Clone, Debug, Default)]
pub struct NameAttrs {
    map: HashMap<String, Vec<(String, String)>>,
}

impl NameAttrs {
    /// Parses the file text; bad lines and attributes go to `diag`.
    pub fn parse(text: &str, diag: &mut Diagnostics) -> NameAttrs {
        let mut map: HashMap<String, Vec<(String, String)>> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let lineno = i as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            let Some((name, fields)) = line.split_once('\t') else {
                diag.skip(BAD_NAMEATTR_LINE, lineno, || {
                    "`name<TAB>attribute=value...`, found no tab".to_string()
                });
                continue;
            };
            let attrs = map.entry(name.to_string()).or_default();
            for field in fields.split('\t') {
                parse_attr(field, lineno, attrs, diag);
            }
        }
        map.retain(|_, v| !v.is_empty());
        NameAttrs { map }
    }

    /// The attributes of `name`.
    pub fn get(&self, name: &str) -> Option<&[(String, String)]> {
        self.map.get(name).map(Vec::as_slice)
    }

    /// True when no attribute is set.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

fn parse_attr(field: &str, lineno: u64, attrs: &mut Vec<(String, String)>, diag: &mut Diagnostics) {
    let Some((k, v)) = field.split_once('=').filter(|(k, _)| super::attr::is_attr_name(k)) else {
        diag.skip(BAD_NAMEATTR_LINE, lineno, || {
            format!(
                "`attribute=value` (no event handlers), found `{}`",
                crate::fold::read::show(field.as_bytes())
            )
        });
        return;
    };
    if super::attr::is_url_attr(k) && !super::attr::is_safe_url(v) {
        diag.skip(UNSAFE_URL, lineno, || {
            format!(
                "`{k}` must be an http(s), mailto or relative URL (it would run code when \
                 clicked), found `{}`; attribute left out",
                crate::fold::read::show(v.as_bytes())
            )
        });
        return;
    }
    if attrs.iter().any(|(name, _)| name == k) {
        diag.note(DUPLICATE_ATTRIBUTE, lineno, || format!("attribute `{k}` given twice; the first is kept"));
        return;
    }
    attrs.push((k.to_string(), v.to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_width_forms() {
        assert_eq!(MinWidth::parse("0.5"), Some(MinWidth::Pixels(0.5)));
        assert_eq!(MinWidth::parse("1%").map(|m| m.pixels(1180.0)), Some(11.8));
        assert_eq!(MinWidth::parse("-1"), None);
        assert_eq!(MinWidth::parse("x%"), None);
    }

    #[test]
    fn sanitized_numbers() {
        let o =
            Options { font_size: f64::NAN, font_width: -1.0, factor: f64::INFINITY, ..Options::default() };
        let s = o.sanitized();
        assert_eq!((s.font_size, s.font_width, s.factor), (12.0, 0.59, 1.0));
    }

    #[test]
    fn nameattr_file() {
        let mut diag = Diagnostics::new();
        let text = "main\ttitle=entry\tclass=hot\nx\tonclick=alert(1)\nmain\tclass=again\n";
        let a = NameAttrs::parse(text, &mut diag);
        assert_eq!(a.get("main").unwrap().len(), 2);
        assert!(a.get("x").is_none());
        assert_eq!(diag.get(BAD_NAMEATTR_LINE).unwrap().first_line, 2);
        assert_eq!(diag.get(DUPLICATE_ATTRIBUTE).unwrap().first_line, 3);
    }

    #[test]
    fn nameattr_links_that_run_code_are_refused() {
        let mut diag = Diagnostics::new();
        let text = "a\thref=https://example.com/a\ttarget=_blank\n\
                    b\thref=javascript:alert(1)\tclass=kept\n\
                    c\txlink:href=JaVa&#x53;cript:alert(1)\n\
                    d\thref=data:text/html,x\n\
                    e\thref=mailto:mm@example.com\n";
        let a = NameAttrs::parse(text, &mut diag);
        assert_eq!(a.get("a").unwrap().len(), 2);
        assert_eq!(a.get("b").unwrap(), &[("class".to_string(), "kept".to_string())]);
        assert!(a.get("c").is_none() && a.get("d").is_none());
        assert_eq!(a.get("e").unwrap()[0].1, "mailto:mm@example.com");
        let refused = diag.get(UNSAFE_URL).unwrap();
        assert_eq!((refused.first_line, refused.count), (2, 3));
    }
}
