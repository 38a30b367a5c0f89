//! The latency scatter tab: `/scatter` (markup only) lists the captures that stored
//! per-event records and opens the scatter view (`kflame::render::html` `scatter.js`, the
//! module the offline `kflame scatter` page inlines) on one of them.
//!
//! | route | answer |
//! |---|---|
//! | `/scatter` | the page (its state, `?capture=ID`, in the URL; the view's in the hash) |
//! | `/scatter/tab.js` | its module: the capture list, then `startScatter` on the data |
//! | `/api/scatter/captures` | `{"captures": [{id, host, kind, time, end, note, events}]}`: captures with events |
//! | `/api/scatter?capture=ID` | the capture's events in the columnar form of `ScatterData::to_json` |

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query as Params, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kflame::render::html::scatter::{ScatterBuilder, ScatterEvent, ScatterOptions, StackRef};
use kflame_store::{CaptureId, Event, StackId};
use serde_json::json;

use crate::App;
use crate::api::ApiError;

/// The tab's routes (behind the same security middleware as every other route).
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/scatter", get(page))
        .route("/scatter/tab.js", get(script))
        .route("/api/scatter/captures", get(captures))
        .route("/api/scatter", get(capture))
}

const PAGE: &str = "<!DOCTYPE html>
<html lang=\"en\">
<head>
<meta charset=\"utf-8\">
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">
<title>kflame serve: latency scatter</title>
<link rel=\"stylesheet\" href=\"/viewer/viewer.css\">
<link rel=\"stylesheet\" href=\"/viewer/scatter.css\">
</head>
<body>
<div id=\"scatter-tab\"><p class=\"sc-loading\">Loading…</p></div>
<script type=\"module\" src=\"/scatter/tab.js\"></script>
</body>
</html>
";

async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response()
}

async fn script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], include_str!("../assets/scatter_tab.js"))
        .into_response()
}

type Args = Params<HashMap<String, String>>;

/// Every capture of the history with the number of its per-event records (those without
/// any are listed too, with 0: the page says why they cannot be opened).
async fn captures(State(app): State<Arc<App>>) -> Result<Response, ApiError> {
    app.db
        .with(move |db| {
            let Some((from, to)) = db.time_bounds().map_err(ApiError::store)? else {
                return Ok(json_response(json!({ "captures": [] }).to_string()));
            };
            let mut list = Vec::new();
            for e in db.events(from, to.saturating_add(1), None).map_err(ApiError::store)? {
                let Event::Capture { id, host, kind, start_ns, end_ns, note, .. } = e else { continue };
                let events = db.capture_event_count(id).map_err(ApiError::store)?;
                list.push(json!({ "id": id.0, "host": host, "kind": kind.as_str(), "time": start_ns,
                                  "end": end_ns, "note": note, "events": events }));
            }
            Ok(json_response(json!({ "captures": list }).to_string()))
        })
        .await
}

/// The events of one capture as scatter columns.
async fn capture(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response, ApiError> {
    let id = match args.get("capture").map(|v| v.parse::<i64>()) {
        Some(Ok(id)) => CaptureId(id),
        Some(Err(_)) | None => {
            return Err(ApiError::bad("capture: expected a capture id (from /api/scatter/captures)"));
        }
    };
    app.db
        .with(move |db| {
            let events = db.capture_events(id, i64::MIN, i64::MAX).map_err(ApiError::store)?;
            let mut b = ScatterBuilder::new();
            // The stacks shown, in the order first met, their texts read at once.
            let mut stacks: HashMap<StackId, StackRef> = HashMap::new();
            let mut order: Vec<StackId> = Vec::new();
            let mut seen: std::collections::HashSet<StackId> = std::collections::HashSet::new();
            for e in events.iter().filter(|e| e.duration_ns.is_some()) {
                if seen.insert(e.stack) {
                    order.push(e.stack);
                }
            }
            let texts = db.stack_texts(&order).map_err(ApiError::store)?;
            for (id, text) in order.iter().zip(texts) {
                let text = String::from_utf8_lossy(&text);
                stacks.insert(*id, b.intern_stack(text.split(';').filter(|f| !f.is_empty())));
            }
            let mut without_duration = 0u64;
            for e in &events {
                let Some(duration_ns) = e.duration_ns else {
                    without_duration += 1;
                    continue;
                };
                let stack = stacks[&e.stack];
                b.push(&ScatterEvent {
                    ts_ns: Some(e.time_ns),
                    duration_ns,
                    cpu: Some(e.cpu),
                    pid: (e.pid != 0).then_some(e.pid),
                    tid: (e.tid != 0).then_some(e.tid),
                    comm: Some(&e.comm),
                    event: &e.event,
                    stack,
                });
            }
            let notes = (without_duration > 0).then(|| {
                format!("{without_duration} events without a duration (single events) are not shown")
            });
            let opts = ScatterOptions {
                title: Some(format!("Capture {}: latency scatter", id.0)),
                subtitle: Some(format!("{} events", b.len())),
                notes,
            };
            Ok(json_response(b.encode(&opts).to_json()))
        })
        .await
}

fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
