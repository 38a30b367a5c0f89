//! The latency scatter tab: `/scatter` (markup only) offers the always-on system-call
//! outliers of a range of the history and lists the captures that stored per-event records,
//! and opens the scatter view (`kflame::render::html` `scatter.js`, the module the offline
//! `kflame scatter` page inlines) on either.
//!
//! | route | answer |
//! |---|---|
//! | `/scatter` | the page (its state, `?capture=ID` or `?kind=FAMILY&from=T&to=T[&host=H]`, in the URL; the view's in the hash) |
//! | `/scatter/tab.js` | its module: the outliers' range form and the capture list, then `startScatter` on the data |
//! | `/api/scatter/captures` | `{"captures": [{id, host, kind, time, end, note, events}]}`: captures with events |
//! | `/api/scatter?capture=ID` | the capture's events in the columnar form of `ScatterData::to_json` |
//! | `/api/scatter?kind=FAMILY&from=T&to=T[&host=H]` (FAMILY: syscall, lock, offcpu, runq, bio) | the outliers the watcher kept in `[from, to)` (`Query::outliers`; times as the other `/api/` routes take them), in the same form: at most [`MAX_SCATTER_OUTLIERS`], the longest, the rest counted in the notes |

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query as Params, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kflame::render::html::scatter::{ScatterBuilder, ScatterEvent, ScatterOptions, StackRef};
use kflame_store::time::format_time;
use kflame_store::{CaptureId, Event, Query, StackId, StoredEvent};
use serde_json::json;

use crate::App;
use crate::api::ApiError;

/// At most this many outliers in one scatter answer (the longest of the range; the others
/// are counted in its notes).
pub(crate) const MAX_SCATTER_OUTLIERS: usize = 200_000;

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

/// The events of one capture, or the outliers of a range, as scatter columns.
async fn capture(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response, ApiError> {
    if args.contains_key("kind") && !args.contains_key("capture") {
        return outliers(app, args).await;
    }
    let id = match args.get("capture").map(|v| v.parse::<i64>()) {
        Some(Ok(id)) => CaptureId(id),
        Some(Err(_)) | None => {
            return Err(ApiError::bad(
                "capture: expected a capture id (from /api/scatter/captures), or kind=syscall&from&to \
                 for the outliers of a range",
            ));
        }
    };
    app.db
        .with(move |db| {
            let events = db.capture_events(id, i64::MIN, i64::MAX).map_err(ApiError::store)?;
            let title = format!("Capture {}: latency scatter", id.0);
            scatter_json(db, &events, title, None)
        })
        .await
}

/// The outliers of a family the watcher kept in a range (of one host), as scatter columns.
async fn outliers(app: Arc<App>, args: HashMap<String, String>) -> Result<Response, ApiError> {
    let kind = crate::api::latency_kind(&args)?;
    app.db
        .with(move |db| {
            let (from, to) = crate::api::range(db, &args, "from", "to")?;
            let host = crate::api::host_param(&args);
            let mut events = db.outliers(kind, from, to, host.as_deref()).map_err(ApiError::store)?;
            let mut notes = None;
            if events.len() > MAX_SCATTER_OUTLIERS {
                let all = events.len();
                events.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.time_ns.cmp(&b.time_ns)));
                events.truncate(MAX_SCATTER_OUTLIERS);
                events.sort_by_key(|e| e.time_ns);
                notes = Some(format!(
                    "the range holds {all} outliers: the longest {MAX_SCATTER_OUTLIERS} are shown, {} \
                     shorter ones left out (pick a shorter range to see them)",
                    all - MAX_SCATTER_OUTLIERS
                ));
            }
            let on = host.map_or_else(String::new, |h| format!(" on {h}"));
            let title = format!(
                "{} outliers{on}, {} to {}: latency scatter",
                capitalized(kind.event()),
                format_time(from),
                format_time(to)
            );
            scatter_json(db, &events, title, notes)
        })
        .await
}

/// `System call` of `system call`.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// Stored events (in time order) in the columnar form of `ScatterData::to_json`, their
/// stacks read at once; events without a duration are counted in the notes.
fn scatter_json(
    db: &dyn Query,
    events: &[StoredEvent],
    title: String,
    notes: Option<String>,
) -> Result<Response, ApiError> {
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
    for e in events {
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
    let untimed = (without_duration > 0)
        .then(|| format!("{without_duration} events without a duration (single events) are not shown"));
    let notes = match (notes, untimed) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    let opts = ScatterOptions { title: Some(title), subtitle: Some(format!("{} events", b.len())), notes };
    Ok(json_response(b.encode(&opts).to_json()))
}

fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
