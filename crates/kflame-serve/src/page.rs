//! The page and its files: its own modules (`assets/`, embedded at compile time) and the
//! flame graph viewer's modules, served from `kflame::render::html::ASSETS` under
//! `/viewer/` (the same files the offline page inlines: shared, not copied).

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The page's own files: (name, content type, text).
pub(crate) const PAGE_ASSETS: [(&str, &str, &str); 7] = [
    ("app.js", JS, include_str!("../assets/app.js")),
    ("common.js", JS, include_str!("../assets/common.js")),
    ("charts.js", JS, include_str!("../assets/charts.js")),
    ("heatmap.js", JS, include_str!("../assets/heatmap.js")),
    ("latency.js", JS, include_str!("../assets/latency.js")),
    ("reports.js", JS, include_str!("../assets/reports.js")),
    ("app.css", "text/css; charset=utf-8", include_str!("../assets/app.css")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// The page: markup only; everything it shows comes from the API.
const INDEX: &str = "<!DOCTYPE html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">
<title>kflame serve</title>
<link rel=\"stylesheet\" href=\"/viewer/viewer.css\">
<link rel=\"stylesheet\" href=\"/assets/app.css\">
<link rel=\"preload\" href=\"/api/info\" as=\"fetch\" crossorigin>
<link rel=\"modulepreload\" href=\"/assets/app.js\">
<link rel=\"modulepreload\" href=\"/assets/charts.js\">
<link rel=\"modulepreload\" href=\"/assets/common.js\">
<link rel=\"modulepreload\" href=\"/assets/heatmap.js\">
<link rel=\"modulepreload\" href=\"/assets/latency.js\">
<link rel=\"modulepreload\" href=\"/assets/reports.js\">
<link rel=\"modulepreload\" href=\"/viewer/viewer.js\">
<link rel=\"modulepreload\" href=\"/viewer/model.js\">
<link rel=\"modulepreload\" href=\"/viewer/palette.js\">
<link rel=\"modulepreload\" href=\"/viewer/render.js\">
<link rel=\"modulepreload\" href=\"/viewer/ui.js\">
</head>
<body>
<div id=\"app\"><p class=\"ks-loading\">Loading…</p></div>
<script type=\"module\" src=\"/assets/app.js\"></script>
</body>
</html>
";

pub(crate) async fn index() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    match PAGE_ASSETS.iter().find(|a| a.0 == file) {
        Some((_, ct, text)) => ([(header::CONTENT_TYPE, *ct)], *text).into_response(),
        None => not_found().await,
    }
}

pub(crate) async fn viewer_asset(Path(file): Path<String>) -> Response {
    match kflame::render::html::ASSETS.iter().find(|a| a.path == file) {
        Some(a) => ([(header::CONTENT_TYPE, a.content_type)], a.text).into_response(),
        None => not_found().await,
    }
}

pub(crate) async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "404: no such page\n")
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module files a page's script imports, transitively: `/assets/x.js` or
    /// `/viewer/x.js`, by their `import ... from '...'` lines.
    fn imports(path: &str, out: &mut Vec<String>) {
        if out.iter().any(|p| p == path) {
            return;
        }
        out.push(path.to_string());
        let (dir, file) = path.rsplit_once('/').unwrap();
        let text = match dir {
            "/assets" => PAGE_ASSETS.iter().find(|a| a.0 == file).map(|a| a.2),
            "/viewer" => kflame::render::html::ASSETS.iter().find(|a| a.path == file).map(|a| a.text),
            _ => None,
        }
        .unwrap_or_else(|| panic!("{path}: not served"));
        for line in text.lines().filter(|l| l.starts_with("import ")) {
            let target = line.rsplit(['\'', '"']).nth(1).unwrap();
            let full = match target.strip_prefix("./") {
                Some(rel) => format!("{dir}/{rel}"),
                None => target.to_string(),
            };
            imports(&full, out);
        }
    }

    /// The page asks for every module it will import at once (`modulepreload`), instead of
    /// finding them level by level: the list in the markup is the import graph of app.js.
    #[test]
    fn the_page_preloads_exactly_the_modules_it_imports() {
        let mut graph = Vec::new();
        imports("/assets/app.js", &mut graph);
        graph.sort();
        let mut preloaded: Vec<String> = INDEX
            .lines()
            .filter_map(|l| l.strip_prefix("<link rel=\"modulepreload\" href=\""))
            .map(|l| l.trim_end_matches("\">").to_string())
            .collect();
        preloaded.sort();
        assert_eq!(preloaded, graph);
        assert!(graph.len() >= 8, "{graph:?}");
    }
}
