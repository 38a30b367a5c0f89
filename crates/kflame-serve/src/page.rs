//! The page and its files: its own modules (`assets/`, embedded at compile time) and the
//! flame graph viewer's modules, served from `kflame::render::html::ASSETS` under
//! `/viewer/` (the same files the offline page inlines: shared, not copied).

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The page's own files: (name, content type, text).
pub(crate) const PAGE_ASSETS: [(&str, &str, &str); 4] = [
    ("app.js", JS, include_str!("../assets/app.js")),
    ("charts.js", JS, include_str!("../assets/charts.js")),
    ("heatmap.js", JS, include_str!("../assets/heatmap.js")),
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
