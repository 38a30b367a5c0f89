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
    let mut j = String::with_capacity(enc.names.iter().map(|n| n.len() + 3).sum::<usize>() + 512);
    j.push('{');
    field(&mut j, "version", "1");
    field(&mut j, "title", &json_str(opts.title_or_default()));
    field(&mut j, "subtitle", &opt_str(opts.subtitle.as_deref()));
    field(&mut j, "notes", &opt_str(opts.notes.as_deref()));
    field(&mut j, "unit", &json_str(meta.unit.name()));
    field(&mut j, "countname", &json_str(&opts.countname_for(&meta.unit)));
    field(&mut j, "event", &opt_str(meta.event.as_deref()));
    field(&mut j, "palette", &json_str(opts.palette.name()));
    field(&mut j, "inverted", bool_str(opts.inverted));
    field(&mut j, "flamechart", bool_str(opts.flamechart));
    field(&mut j, "total", &json_str(&totals.after.to_string()));
    if enc.differential {
        field(&mut j, "differential", "true");
        field(&mut j, "totalBefore", &json_str(&totals.before.to_string()));
        field(&mut j, "negate", bool_str(opts.negate));
    }
    field(&mut j, "scale", &enc.scale.to_string());
    field(&mut j, "count", &enc.count.to_string());
    field(&mut j, "maxDepth", &enc.max_depth.to_string());
    j.push_str("\"names\":[");
    for (i, name) in enc.names.iter().enumerate() {
        if i > 0 {
            j.push(',');
        }
        j.push_str(&json_str(name));
    }
    j.push_str("]}");
    j
}

fn field(j: &mut String, key: &str, value: &str) {
    j.push('"');
    j.push_str(key);
    j.push_str("\":");
    j.push_str(value);
    j.push(',');
}

fn bool_str(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

fn opt_str(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_string(), json_str)
}

/// A JSON string literal that cannot close or open markup (the SVG renderer's escaping).
pub(crate) fn json_str(s: &str) -> String {
    crate::render::svg::escape::json_string(s)
}

/// Text for HTML element content and attribute values (the SVG renderer's XML escaping,
/// which also replaces characters markup may not contain).
pub(crate) fn escape_html(s: &str) -> String {
    crate::render::svg::escape::xml_string(s)
}

#[cfg(test)]
mod tests;
