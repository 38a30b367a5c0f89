//! Assembling the page: markup, embedded assets, embedded data.

use std::io::{self, Write};

use super::HtmlOptions;
use super::encode::{Encoded, base64};
use crate::fold::{Meta, Weight};

/// The viewer's scripts, in dependency order.
const SCRIPTS: [&str; 6] = [
    include_str!("assets/model.js"),
    include_str!("assets/palette.js"),
    include_str!("assets/render.js"),
    include_str!("assets/ui.js"),
    include_str!("assets/viewer.js"),
    include_str!("assets/page.js"),
];
const STYLE: &str = include_str!("assets/viewer.css");

/// No network at all: the page only runs its own inline code and styles.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

/// The totals of the profile: AFTER (what the widths show) and BEFORE (differential input).
pub(crate) struct Totals {
    pub(crate) after: Weight,
    pub(crate) before: Weight,
}

/// Writes the whole page.
pub(crate) fn write_page(
    out: &mut dyn Write,
    enc: &Encoded,
    totals: &Totals,
    meta: &Meta,
    opts: &HtmlOptions,
) -> io::Result<()> {
    let title = opts.title_or_default();
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <div id=\"kflame\"></div>\n",
        escape_html(title)
    )?;
    out.write_all(b"<script type=\"application/json\" id=\"kflame-profile\">")?;
    out.write_all(profile_json(enc, totals, meta, opts).as_bytes())?;
    out.write_all(b"</script>\n<script type=\"application/octet-stream\" id=\"kflame-nodes\">")?;
    out.write_all(base64(&enc.nodes).as_bytes())?;
    out.write_all(b"</script>\n<script>\n")?;
    for script in SCRIPTS {
        out.write_all(script.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.write_all(b"</script>\n</body>\n</html>\n")
}

/// The profile description and string table, as JSON safe inside a `<script>` element.
pub(crate) fn profile_json(enc: &Encoded, totals: &Totals, meta: &Meta, opts: &HtmlOptions) -> String {
    let differential = enc.differential;
    let total_before = totals.before.to_string();
    let json = ProfileJson {
        version: 1,
        title: opts.title_or_default(),
        subtitle: opts.subtitle.as_deref(),
        notes: opts.notes.as_deref(),
        unit: meta.unit.name(),
        countname: opts.countname_for(&meta.unit),
        event: meta.event.as_deref(),
        palette: opts.palette.name(),
        inverted: opts.inverted,
        flamechart: opts.flamechart,
        total: totals.after.to_string(),
        differential: differential.then_some(true),
        total_before: differential.then_some(total_before.as_str()),
        negate: differential.then_some(opts.negate),
        scale: enc.scale,
        count: enc.count,
        max_depth: enc.max_depth,
        names: &enc.names,
    };
    crate::render::json::to_script_safe_string(&json)
}

/// The `meta` object the viewer reads (`decodeTree(meta, nodes)`, `new FlameViewer(.., meta)`).
/// Weights are decimal strings: exact, whatever their size.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileJson<'a> {
    version: u32,
    title: &'a str,
    subtitle: Option<&'a str>,
    notes: Option<&'a str>,
    unit: &'a str,
    countname: String,
    event: Option<&'a str>,
    palette: &'a str,
    inverted: bool,
    flamechart: bool,
    total: String,
    /// Only for differential input, as the next two.
    #[serde(skip_serializing_if = "Option::is_none")]
    differential: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_before: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    negate: Option<bool>,
    scale: u32,
    count: usize,
    max_depth: usize,
    names: &'a [String],
}

/// A JSON string literal that cannot close or open markup.
#[cfg(test)]
pub(crate) fn json_str(s: &str) -> String {
    crate::render::json::script_safe_str(s)
}

/// Text for HTML element content and attribute values (the SVG renderer's XML escaping,
/// which also replaces characters markup may not contain).
pub(crate) fn escape_html(s: &str) -> String {
    crate::render::svg::escape::xml_string(s)
}

#[cfg(test)]
mod tests;
