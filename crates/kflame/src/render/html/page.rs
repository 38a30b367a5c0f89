//! Assembling the page: markup, embedded assets, embedded data.

use std::io::{self, Write};

use super::encode::Encoded;
use super::{HtmlOptions, ViewerData, ViewerMeta};
use crate::fold::{Meta, Weight};

/// One file of the viewer: an ES module (or the style sheet) a server serves as it is.
#[derive(Clone, Copy, Debug)]
pub struct Asset {
    /// File name, relative to the page (`model.js`).
    pub path: &'static str,
    /// Its `Content-Type` (module scripts must be served as JavaScript).
    pub content_type: &'static str,
    /// Its text.
    pub text: &'static str,
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the viewer: the ES modules in dependency order (each imports only files
/// before it), then the style sheet. `page.js` boots the viewer on data embedded in the page,
/// `served.js` on data it fetches; the others are the same for both. `scatter.js` (the
/// latency scatter view, which draws its flame graphs with `viewer.js`), its entry
/// `scatter_page.js` and `scatter.css` make the scatter page (`scatter.rs`).
pub const ASSETS: [Asset; 12] = [
    Asset { path: "model.js", content_type: JS, text: include_str!("assets/model.js") },
    Asset { path: "palette.js", content_type: JS, text: include_str!("assets/palette.js") },
    Asset { path: "render.js", content_type: JS, text: include_str!("assets/render.js") },
    Asset { path: "ui.js", content_type: JS, text: include_str!("assets/ui.js") },
    Asset { path: "viewer.js", content_type: JS, text: include_str!("assets/viewer.js") },
    Asset { path: "page.js", content_type: JS, text: include_str!("assets/page.js") },
    Asset { path: "served.js", content_type: JS, text: include_str!("assets/served.js") },
    Asset { path: "mcp_app.js", content_type: JS, text: include_str!("assets/mcp_app.js") },
    Asset { path: "viewer.css", content_type: "text/css; charset=utf-8", text: STYLE },
    Asset { path: "scatter.js", content_type: JS, text: include_str!("assets/scatter.js") },
    Asset { path: "scatter_page.js", content_type: JS, text: include_str!("assets/scatter_page.js") },
    Asset {
        path: "scatter.css",
        content_type: "text/css; charset=utf-8",
        text: include_str!("assets/scatter.css"),
    },
];

/// The modules the self-contained page inlines, in dependency order.
const OFFLINE_MODULES: [&str; 6] = ["model.js", "palette.js", "render.js", "ui.js", "viewer.js", "page.js"];

/// The modules of the MCP Apps view: the viewer, then its entry module instead of page.js.
const APP_MODULES: [&str; 6] = ["model.js", "palette.js", "render.js", "ui.js", "viewer.js", "mcp_app.js"];

const STYLE: &str = include_str!("assets/viewer.css");

/// No network at all: the page only runs its own inline code and styles.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

/// A served page loads its modules, style and data from its own server only.
const SERVED_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src data:";

/// The totals of the profile: AFTER (what the widths show) and BEFORE (differential input).
pub(crate) struct Totals {
    pub(crate) after: Weight,
    pub(crate) before: Weight,
}

/// Writes the whole page.
pub(crate) fn write_page(out: &mut dyn Write, data: &ViewerData, opts: &HtmlOptions) -> io::Result<()> {
    write_offline_head(out, opts.title_or_default())?;
    out.write_all(b"<script type=\"application/json\" id=\"kflame-profile\">")?;
    out.write_all(crate::render::json::to_script_safe_string(&data.profile).as_bytes())?;
    out.write_all(b"</script>\n<script type=\"application/octet-stream\" id=\"kflame-nodes\">")?;
    out.write_all(data.nodes.as_bytes())?;
    out.write_all(b"</script>\n<script>\n")?;
    out.write_all(bundle().as_bytes())?;
    out.write_all(b"</script>\n</body>\n</html>\n")
}

/// The served page: markup that loads `served.js` and `viewer.css` from `base` and the data
/// from `data_url`.
pub(crate) fn write_served_page(
    out: &mut dyn Write,
    title: &str,
    data_url: &str,
    base: &str,
) -> io::Result<()> {
    let (base, data_url) = (escape_html(base), escape_html(data_url));
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{SERVED_CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<link rel=\"stylesheet\" href=\"{base}viewer.css\">\n</head>\n<body>\n\
         <div id=\"kflame\" data-src=\"{data_url}\"></div>\n\
         <script type=\"module\" src=\"{base}served.js\"></script>\n</body>\n</html>\n",
        escape_html(title)
    )
}

/// The head and the viewer's element of a page that loads nothing (the offline page and the
/// MCP Apps view): its CSP allows inline script and style only.
fn write_offline_head(out: &mut dyn Write, title: &str) -> io::Result<()> {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <div id=\"kflame\"></div>\n",
        escape_html(title)
    )
}

/// The MCP Apps view: the viewer's modules inlined as in the offline page, with `mcp_app.js`
/// as entry; no data (the host sends it). Its CSP is the offline page's: nothing is loaded.
pub(crate) fn write_app_page(out: &mut dyn Write, title: &str) -> io::Result<()> {
    write_offline_head(out, title)?;
    out.write_all(b"<script>\n")?;
    for name in APP_MODULES {
        if let Some(asset) = ASSETS.iter().find(|a| a.path == name) {
            out.write_all(inline_module(asset.path, asset.text).as_bytes())?;
        }
    }
    out.write_all(b"</script>\n</body>\n</html>\n")
}

/// The offline page's script: the viewer's ES modules as one classic script, built once.
fn bundle() -> &'static str {
    static BUNDLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUNDLE.get_or_init(|| {
        let mut out = String::new();
        for name in OFFLINE_MODULES {
            if let Some(asset) = ASSETS.iter().find(|a| a.path == name) {
                out.push_str(&inline_module(asset.path, asset.text));
            }
        }
        out
    })
}

/// The variable that holds the exports of module `path` in the offline page.
fn module_var(path: &str) -> String {
    format!("kflame_{}", path.trim_end_matches(".js"))
}

/// One ES module as a function run at once whose result is its exports, for a page that
/// must work from `file://` (where modules cannot import each other) and in one file:
///
/// - `import * as ns from './m.js';` becomes `const ns = kflame_m;`
/// - `import { a, b as c } from './m.js';` becomes `const { a, b: c } = kflame_m;`
/// - the closing `export { a, b as c };` becomes `return { a, c: b };`
///
/// These are the only import and export forms the assets may use (a test keeps them to it);
/// every other line is copied as it is, so the code that runs is the code served.
pub(crate) fn inline_module(path: &str, source: &str) -> String {
    let mut out = format!("const {} = (function () {{\n'use strict';\n", module_var(path));
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if let Some(import) = line.strip_prefix("import ") {
            out.push_str(&inline_import(import).unwrap_or_else(|| line.to_string()));
        } else if line.starts_with("export {") {
            let mut list = line.to_string();
            while !list.trim_end().ends_with("};") {
                let Some(next) = lines.next() else { break };
                list.push(' ');
                list.push_str(next.trim());
            }
            let names = list.trim_start_matches("export {").trim_end().trim_end_matches("};");
            let fields: Vec<String> = names
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| match n.split_once(" as ") {
                    Some((local, exported)) => format!("{}: {}", exported.trim(), local.trim()),
                    None => n.to_string(),
                })
                .collect();
            out.push_str(&format!("return {{ {} }};", fields.join(", ")));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.push_str("})();\n");
    out
}

/// `* as ns from './m.js';` or `{ a, b as c } from './m.js';` as a `const` of the module's
/// exports; `None` for any other form.
fn inline_import(import: &str) -> Option<String> {
    let (what, from) = import.split_once(" from ")?;
    let file = from.trim().strip_prefix("'./")?.strip_suffix("';")?;
    let var = module_var(file);
    if let Some(ns) = what.strip_prefix("* as ") {
        return Some(format!("const {} = {var};", ns.trim()));
    }
    let names = what.trim().strip_prefix('{')?.strip_suffix('}')?;
    let fields: Vec<String> = names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| n.replacen(" as ", ": ", 1))
        .collect();
    Some(format!("const {{ {} }} = {var};", fields.join(", ")))
}

/// The profile description and string table.
pub(crate) fn viewer_meta(enc: Encoded, totals: &Totals, meta: &Meta, opts: &HtmlOptions) -> ViewerMeta {
    let differential = enc.differential;
    ViewerMeta {
        version: 1,
        title: opts.title_or_default().to_string(),
        subtitle: opts.subtitle.clone(),
        notes: opts.notes.clone(),
        unit: meta.unit.name().to_string(),
        countname: opts.countname_for(&meta.unit),
        event: meta.event.clone(),
        palette: opts.palette.name().to_string(),
        inverted: opts.inverted,
        flamechart: opts.flamechart,
        total: totals.after.to_string(),
        differential: differential.then_some(true),
        total_before: differential.then(|| totals.before.to_string()),
        negate: differential.then_some(opts.negate),
        scale: enc.scale,
        count: enc.count,
        max_depth: enc.max_depth,
        names: enc.names,
    }
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
