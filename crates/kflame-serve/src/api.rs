//! The JSON API under `/api/`. Times are UTC nanoseconds since the epoch (integers), or
//! anything `kflame query` accepts (`2026-11-25T03:14:00Z`, `now`, `-1h`). Every range is
//! `[from, to)`; a missing bound is the history's own first or last time.
//!
//! | route | what |
//! | --- | --- |
//! | `/api/info` | hosts and their labels, time bounds, metric names, profile kinds, live or not, the metric catalog (name, unit, labels, group, meaning) and its chart groups in order |
//! | `/api/series?names=cpu.usr,cpu.sys&from&to&points=600[&label=][&host=][&hosts=]` | metric series, resampled to `points` spans (min, max, average of each) |
//! | `/api/profile?kind=cpu&from&to[&host][&hosts=A,B][&cgroup=PATH][&capture=ID][&offset_from_ms&offset_to_ms][&prune=PCT][&format=json\|folded\|svg\|html]` | the merged profile; JSON is the viewer's data, stacks under `prune` % of the total merged (`prune.rs`; default [`PRUNE_PCT`]); its `info.captures_apart` lists the captures a CPU range's always-on profile leaves out |
//! | `/api/diff?kind&from&to&base_from&base_to[&hosts][&base_hosts][&cgroup]` or `&base_capture=ID` | differential profile (base → range); `base_hosts`: the base's own hosts (another kernel's; empty: every host), else the range's; `normalize=1`: the base scaled to the range's total (`info.base_total` stays the base's own); `info.changed`: the functions whose share changed most (the explainer's `compare`), both sides' kernels, and with `serve --kernel-git` where each side runs one kernel, the commits between them that changed each function |
//! | `/api/events?from&to[&host][&hosts]` | triggers, captures and kernel reports |
//! | `/api/reports?from&to[&host]` | the kernel reports of a range grouped by signature (the analyzer's where the server explains reports, else kind and title): count, first and last seen, hosts, kernels, titles and the latest 50 reports, most frequent first |
//! | `/api/report?time=NS[&host][&before=S]` | one kernel report: title, text and its stack as viewer data; where the server explains reports (`Config::explain`), its `analysis` (`kflame analyze --json`'s group), `signature` and `similar` reports of the history (count, first and last seen, hosts, kernels, the latest 50); `before`: the CPU and off-CPU profiles of its host in the S seconds before it (60) |
//! | `/api/heatmap?kind&from&to[&row_ms=20\|auto][&hosts][&cgroup]` | samples per (second, offset in the second); `rate_hz`, the rate per CPU the samples show; `auto`: rows of at least two sampling periods |
//! | `/api/latency?kind=syscall&label=write&from&to[&columns=300][&min_rows=N][&host][&hosts]` | a latency heat map: events per (column of time, bucket of latency) from the stored histograms of one family and label (`label=` empty: the family's total), the rows the buckets from the lowest to the highest used (with `min_rows`, empty buckets around them up to that many rows), with the range's count, slow count, largest latency, p50 and p99 |
//! | `/api/outliers?kind=syscall&from&to[&label=write][&min_ns][&max_ns][&host][&hosts]` | the outliers the watcher kept (slow events with their stacks) of a range, those of one label (the call) and of a duration in `[min_ns, max_ns)` (a heat map selection): each with its time, duration, task, CPU and event (at most [`MAX_OUTLIERS`], the longest), and the viewer's data of their stacks weighted by duration |
//! | `/api/latency/labels?from&to[&host]` | the families and labels with latency histograms in the range |
//! | `/api/frame_hosts?frame=F&kind&from&to[&hosts][&cgroup]` | each host's weight in stacks holding frame `F`, its total and the share |
//! | `/api/live` | server-sent events: the history's newest time and a version that changes with every write, every second (`--live`) |
//!
//! `host=NAME` keeps one host, `hosts=A,B` (comma-separated) a set of them; without either,
//! every host (a fleet's profile is all of them merged).
//!
//! Errors are `{"error": "..."}`: 400 for a bad request (range, kind, number), 404 for an
//! unknown capture or report, 503 when the database is gone, 500 when it is corrupt.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query as Params, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kflame::fold::tree::StackTree;
use kflame::fold::{Meta, StackCounts, Stacks, Weight};
use kflame::render::html::{HtmlOptions, HtmlProfile, ViewerData, ViewerMeta, encode_tree, write_html};
use kflame::render::json::to_script_safe_string;
use kflame_store::time::{format_time, now_ns, parse_time};
use kflame_store::{CaptureId, Event, Kind, ProfileQuery, Query, SeriesQuery, StackId, StoreError};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::App;

/// At most this many seconds in one heat map (one column a second).
pub const HEATMAP_MAX_SECONDS: i64 = 6 * 3600;
/// At most this many points in one series.
pub const MAX_POINTS: usize = 10_000;
/// At most this many cells (columns × rows) in one heat map: 6 h of 10-ms rows.
pub const HEATMAP_MAX_CELLS: i64 = HEATMAP_MAX_SECONDS * 100;
/// At most this many distinct metric names in one `/api/series` request (the watcher
/// writes some sixty; the page asks them in four requests).
pub const MAX_NAMES: usize = 256;
/// At most this many points in one `/api/series` answer, all series together (a chart
/// page asks some 60 series of at most 4000 points, a few hosts each).
pub const MAX_ANSWER_POINTS: usize = 2_000_000;

const SEC: i64 = 1_000_000_000;

/// An answer other than 200, with a message for the person reading it.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// 400.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }
    /// 404.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }
    /// 500.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }
    /// 503.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }
    /// A store error: its message (which names the file), 500 (503 when the file is
    /// missing).
    pub fn store(e: StoreError) -> ApiError {
        let gone = matches!(&e, StoreError::Other { detail, .. } if detail.contains("unable to open"));
        ApiError {
            status: if gone { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::INTERNAL_SERVER_ERROR },
            message: e.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            json!({ "error": self.message }).to_string(),
        )
            .into_response()
    }
}

pub(crate) type Result<T> = std::result::Result<T, ApiError>;
type Args = Params<HashMap<String, String>>;

/// The `/api/` routes.
pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/info", get(info))
        .route("/series", get(series))
        .route("/profile", get(profile))
        .route("/diff", get(diff))
        .route("/events", get(events))
        .route("/report", get(report))
        .route("/reports", get(reports))
        .route("/heatmap", get(heatmap))
        .route("/latency", get(latency))
        .route("/latency/labels", get(latency_labels))
        .route("/outliers", get(outliers))
        .route("/frame_hosts", get(frame_hosts))
        .route("/live", get(live))
        .fallback(|| async { ApiError::not_found("no such API path; see /api/info and the README") })
}

fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

// ---- parameters ---------------------------------------------------------------------------

pub(crate) fn time_param(args: &HashMap<String, String>, name: &str) -> Result<Option<i64>> {
    let Some(v) = args.get(name).filter(|v| !v.is_empty()) else { return Ok(None) };
    if let Ok(ns) = v.parse::<i64>() {
        return Ok(Some(ns));
    }
    parse_time(v, now_ns()).map(Some).map_err(|e| {
        ApiError::bad(format!("{name}={v:?}: {e} (expected UTC ns since the epoch, RFC 3339, now or -1h)"))
    })
}

pub(crate) fn num_param<T: std::str::FromStr>(
    args: &HashMap<String, String>,
    name: &str,
    expected: &str,
) -> Result<Option<T>> {
    match args.get(name).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => {
            v.parse().map(Some).map_err(|_| ApiError::bad(format!("{name}={v:?}: expected {expected}")))
        }
    }
}

pub(crate) fn kind_param(args: &HashMap<String, String>, name: &str) -> Result<Kind> {
    match args.get(name) {
        None => Ok(Kind::Cpu),
        Some(k) => k.parse().map_err(|e: kflame_store::UnknownKind| ApiError::bad(format!("{name}: {e}"))),
    }
}

/// `[from, to)` of the request, missing bounds from the history's own.
pub(crate) fn range(
    db: &dyn Query,
    args: &HashMap<String, String>,
    from: &str,
    to: &str,
) -> Result<(i64, i64)> {
    let (f, t) = (time_param(args, from)?, time_param(args, to)?);
    let (f, t) = match (f, t) {
        (Some(f), Some(t)) => (f, t),
        _ => {
            let bounds = db.time_bounds().map_err(ApiError::store)?;
            let (lo, hi) = bounds.unwrap_or((0, 1));
            (f.unwrap_or(lo), t.unwrap_or(hi.saturating_add(1)))
        }
    };
    if f >= t {
        return Err(ApiError::bad(format!(
            "bad range: {from}={f} ({}) is not before {to}={t} ({})",
            format_time(f),
            format_time(t)
        )));
    }
    Ok((f, t))
}

pub(crate) fn host_param(args: &HashMap<String, String>) -> Option<String> {
    args.get("host").filter(|h| !h.is_empty()).cloned()
}

/// The hosts of a request: `host=NAME` (one) and `hosts=A,B` (a set); both may be given
/// (both must hold). Neither: every host.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hosts {
    host: Option<String>,
    hosts: Option<Vec<String>>,
}

impl Hosts {
    pub(crate) fn of(args: &HashMap<String, String>) -> Hosts {
        let hosts = args.get("hosts").map(|l| {
            let mut v: Vec<String> =
                l.split(',').map(str::trim).filter(|h| !h.is_empty()).map(str::to_string).collect();
            v.sort();
            v.dedup();
            v
        });
        Hosts { host: host_param(args), hosts: hosts.filter(|v| !v.is_empty()) }
    }

    /// The one host a query can be narrowed to in the store (`host`, or a set of one).
    pub(crate) fn single(&self) -> Option<&str> {
        self.host.as_deref().or(match self.hosts.as_deref() {
            Some([one]) => Some(one.as_str()),
            _ => None,
        })
    }

    pub(crate) fn matches(&self, host: &str) -> bool {
        self.host.as_deref().is_none_or(|h| h == host)
            && self.hosts.as_ref().is_none_or(|l| l.iter().any(|h| h == host))
    }

    /// Narrows a profile query.
    fn apply<'a>(&'a self, q: &mut ProfileQuery<'a>) {
        q.host = self.host.as_deref();
        q.hosts = self.hosts.as_deref();
    }

    /// The selection for an answer's `info`: the set, or `null` for every host.
    pub(crate) fn json(&self) -> Value {
        match (&self.host, &self.hosts) {
            (None, None) => Value::Null,
            (Some(h), None) => json!([h]),
            (_, Some(l)) => json!(l.iter().filter(|h| self.matches(h)).collect::<Vec<_>>()),
        }
    }
}

// ---- handlers -----------------------------------------------------------------------------

async fn info(State(app): State<Arc<App>>) -> Result<Response> {
    let live = app.live;
    app.db
        .with(move |db| {
            let labelled = db.host_labels().map_err(ApiError::store)?;
            let hosts: Vec<&str> = labelled.iter().map(|(h, _)| h.as_str()).collect();
            let host_labels: serde_json::Map<String, Value> =
                labelled.iter().map(|(h, l)| (h.clone(), Value::from(l.as_str()))).collect();
            let bounds = db.time_bounds().map_err(ApiError::store)?;
            let metrics: Vec<Value> = db
                .metric_names(None)
                .map_err(ApiError::store)?
                .into_iter()
                .map(|(n, l)| json!([n, l]))
                .collect();
            let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            let catalog: Vec<Value> = kflame_store::metrics::METRICS
                .iter()
                .map(|m| {
                    json!({ "name": m.name, "unit": m.unit, "labels": m.labels, "group": m.group,
                            "meaning": m.meaning })
                })
                .collect();
            Ok(json_response(
                json!({
                    "hosts": hosts,
                    "host_labels": host_labels,
                    "from": bounds.map(|b| b.0),
                    "to": bounds.map(|b| b.1),
                    "metrics": metrics,
                    "kinds": kinds,
                    "live": live,
                    "catalog": catalog,
                    "groups": kflame_store::metrics::GROUPS,
                })
                .to_string(),
            ))
        })
        .await
}

async fn series(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let names = names_param(&args)?;
    let points = num_param::<usize>(&args, "points", "a number of points (1 to 10000)")?;
    let columns = match args.get("layout").map(String::as_str) {
        None | Some("points") => false,
        Some("columns") => true,
        Some(other) => return Err(ApiError::bad(format!("layout={other:?}: expected points or columns"))),
    };
    if points.is_some_and(|p| p == 0 || p > MAX_POINTS) {
        return Err(ApiError::bad(format!("points: expected 1 to {MAX_POINTS}")));
    }
    app.db
        .with(move |db| {
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let q = SeriesQuery {
                name: "",
                label: args.get("label").map(String::as_str),
                host: hosts.single(),
                from_ns: from,
                to_ns: to,
                points,
            };
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            // One read of the history for every series of the chart.
            let t0 = Instant::now();
            let found = db.series_many(&names, &q).map_err(ApiError::store)?;
            let store = t0.elapsed();
            let total: usize = found.iter().filter(|s| hosts.matches(&s.host)).map(|s| s.points.len()).sum();
            if total > MAX_ANSWER_POINTS {
                return Err(ApiError::bad(format!(
                    "the answer would hold {total} points of {} series; at most {MAX_ANSWER_POINTS}: \
                     ask fewer names or hosts, fewer points= or a shorter range",
                    found.len()
                )));
            }
            let series: Vec<SeriesJson> = found
                .iter()
                .filter(|s| hosts.matches(&s.host))
                .map(|s| SeriesJson {
                    host: &s.host,
                    name: &s.name,
                    label: &s.label,
                    points: (!columns).then_some(PointRows(&s.points)),
                    columns: columns.then(|| Columns::of(&s.points)),
                })
                .collect();
            let out = serde_json::to_string(&SeriesAnswer { series, from, to })
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let timing = format!("store;dur={:.1}, encode;dur={:.1}", ms(store), ms(t0.elapsed() - store));
            let mut resp = json_response(out);
            if let Ok(v) = HeaderValue::from_str(&timing) {
                resp.headers_mut().insert("server-timing", v);
            }
            Ok(resp)
        })
        .await
}

/// The metric names of `/api/series` (`names=`, or `name=`): comma-separated, each once
/// (in the order first given), at most [`MAX_NAMES`].
pub fn names_param(args: &HashMap<String, String>) -> Result<Vec<String>> {
    let Some(list) = args.get("names").or_else(|| args.get("name")) else {
        return Err(ApiError::bad("names: missing (metric names, comma-separated: cpu.usr,cpu.sys)"));
    };
    let mut seen = std::collections::HashSet::new();
    let mut names = Vec::new();
    for n in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if seen.insert(n) {
            if names.len() == MAX_NAMES {
                return Err(ApiError::bad(format!(
                    "names: more than {MAX_NAMES} distinct metric names in one request; ask in several"
                )));
            }
            names.push(n.to_string());
        }
    }
    if names.is_empty() {
        return Err(ApiError::bad("names: empty (metric names, comma-separated: cpu.usr,cpu.sys)"));
    }
    Ok(names)
}

/// The cells of a heat map of `[from, to)` in rows of `row_ms` (a divisor of 1000): (the
/// start of its first second, columns, rows), or why it is too large. Computed without
/// overflow for any pair of times.
pub fn heatmap_shape(from: i64, to: i64, row_ms: i64) -> Result<(i64, i64, i64)> {
    if row_ms <= 0 || 1000 % row_ms != 0 {
        return Err(ApiError::bad(format!("row_ms={row_ms}: expected a divisor of 1000 (10, 20, 50, 100)")));
    }
    let sec = i128::from(SEC);
    let start = i128::from(from).div_euclid(sec) * sec;
    let columns = (i128::from(to) - start + sec - 1).div_euclid(sec).max(0);
    let rows = i128::from(1000 / row_ms);
    if columns > i128::from(HEATMAP_MAX_SECONDS) {
        return Err(ApiError::bad(format!(
            "the heat map range is {columns} s long; at most {HEATMAP_MAX_SECONDS} s (pick a shorter range)"
        )));
    }
    if columns * rows > i128::from(HEATMAP_MAX_CELLS) {
        return Err(ApiError::bad(format!(
            "the heat map would have {} cells ({columns} s of {rows} rows); at most {HEATMAP_MAX_CELLS}: \
             pick a shorter range or longer rows (row_ms)",
            columns * rows
        )));
    }
    // `from` is at least i64::MIN, so its second's start is within a second of it: the
    // only start below i64::MIN is that of the first second, which no sample time reaches.
    let start = i64::try_from(start).unwrap_or(i64::MIN);
    Ok((start, columns as i64, rows as i64))
}

/// `/api/series`' answer.
#[derive(serde::Serialize)]
struct SeriesAnswer<'a> {
    series: Vec<SeriesJson<'a>>,
    from: i64,
    to: i64,
}

/// One series: its points as an array each (`[time, min, max, avg, count]`), or as columns.
#[derive(serde::Serialize)]
struct SeriesJson<'a> {
    host: &'a str,
    name: &'a str,
    label: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    points: Option<PointRows<'a>>,
    #[serde(flatten)]
    columns: Option<Columns<'a>>,
}

/// Points as `[time, min, max, avg, count]` arrays.
struct PointRows<'a>(&'a [kflame_store::Point]);

impl serde::Serialize for PointRows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for p in self.0 {
            seq.serialize_element(&(p.time_ns, Num(p.min), Num(p.max), Num(p.avg), p.count))?;
        }
        seq.end()
    }
}

/// A series' points as columns (`layout=columns`: what the page asks for, some 45 % smaller
/// and quicker to read than an array per point): `t0` the first point's time in ns, `t` every
/// point's offset from it in ms, then `min`, `max`, `avg` and `count`.
#[derive(serde::Serialize)]
struct Columns<'a> {
    t0: i64,
    t: Column<'a>,
    min: Column<'a>,
    max: Column<'a>,
    avg: Column<'a>,
    count: Column<'a>,
}

impl<'a> Columns<'a> {
    fn of(points: &'a [kflame_store::Point]) -> Columns<'a> {
        let t0 = points.first().map_or(0, |p| p.time_ns);
        Columns {
            t0,
            t: Column(points, t0, |p, t0| (p.time_ns - t0) as f64 / 1e6),
            min: Column(points, t0, |p, _| p.min),
            max: Column(points, t0, |p, _| p.max),
            avg: Column(points, t0, |p, _| p.avg),
            count: Column(points, t0, |p, _| f64::from(p.count)),
        }
    }
}

/// One column of points: a value of each (given the first point's time).
struct Column<'a>(&'a [kflame_store::Point], i64, fn(&kflame_store::Point, i64) -> f64);

impl serde::Serialize for Column<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for p in self.0 {
            seq.serialize_element(&Num((self.2)(p, self.1)))?;
        }
        seq.end()
    }
}

/// A JSON number as short as its value allows: an integral value without a fraction; NaN
/// and infinities, which JSON lacks, as null.
#[derive(Clone, Copy)]
struct Num(f64);

impl serde::Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let v = self.0;
        if !v.is_finite() {
            s.serialize_none()
        } else if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
            s.serialize_i64(v as i64)
        } else {
            s.serialize_f64(v)
        }
    }
}

/// A weight as a JSON number, exact whatever its size.
fn weight_num(w: Weight) -> Box<RawValue> {
    RawValue::from_string(w.to_string()).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// One profile of `/api/profile` and `/api/diff`, as the viewer draws it.
struct Merged {
    tree: StackTree,
    meta: Meta,
    samples: u64,
    /// Time spent in the store's queries (for `Server-Timing`).
    store: Duration,
}

/// The viewer's answer: its data, with the profile's samples and exact total, and what
/// the page needs to know besides (`info`). Encoded once, as JSON safe in a page.
#[derive(serde::Serialize)]
struct ViewerAnswer {
    profile: ViewerMeta,
    nodes: String,
    samples: u64,
    /// A JSON number, exact whatever its size.
    total: Box<RawValue>,
    info: Value,
}

fn viewer_answer(data: ViewerData, samples: u64, total: Weight, info: Value) -> ViewerAnswer {
    ViewerAnswer { profile: data.profile, nodes: data.nodes, samples, total: weight_num(total), info }
}

pub(crate) fn cgroup_param(args: &HashMap<String, String>) -> Result<Option<String>> {
    match args.get("cgroup").filter(|c| !c.is_empty()) {
        None => Ok(None),
        Some(c) if c.starts_with('/') => Ok(Some(c.clone())),
        Some(c) => Err(ApiError::bad(format!(
            "cgroup={c:?}: expected a cgroup path from the root of the hierarchy, like /system.slice/foo.service"
        ))),
    }
}

/// The profile a request asks for: a range (or a capture), optionally only the samples at
/// an offset within their second (a heat map rectangle).
struct Range {
    kind: Kind,
    from: i64,
    to: i64,
    capture: Option<CaptureId>,
    hosts: Hosts,
    cgroup: Option<String>,
    /// `[lo, hi)` ns within the second.
    offsets: Option<(i64, i64)>,
}

impl Range {
    fn query(&self) -> ProfileQuery<'_> {
        let mut q = ProfileQuery::new(self.kind, self.from, self.to);
        self.hosts.apply(&mut q);
        q.capture = self.capture;
        q.cgroup = self.cgroup.as_deref();
        q
    }

    /// The profile as the viewer draws it: a tree built by the store from its frame ids.
    fn tree(&self, db: &dyn Query) -> Result<Merged> {
        let q = self.query();
        let t0 = Instant::now();
        let Some((lo, hi)) = self.offsets else {
            let p = db.profile_tree(&q).map_err(ApiError::store)?;
            return Ok(Merged { tree: p.tree, meta: p.meta, samples: p.samples, store: t0.elapsed() });
        };
        let (sums, samples, first) = by_offset(db, &q, lo, hi)?;
        let tree = db.stacks_tree(&sums).map_err(ApiError::store)?;
        let meta = meta_at(db, &q, first)?;
        Ok(Merged { tree, meta, samples, store: t0.elapsed() })
    }

    /// The profile's stacks as the store keeps them: what a download holds.
    fn stacks(&self, db: &dyn Query) -> Result<(Stacks, Meta)> {
        let q = self.query();
        let Some((lo, hi)) = self.offsets else {
            let p = db.profile(&q).map_err(ApiError::store)?;
            return Ok((p.stacks, p.meta));
        };
        let (sums, _, first) = by_offset(db, &q, lo, hi)?;
        let mut counts = StackCounts::new();
        let ids: Vec<StackId> = sums.iter().map(|s| s.0).collect();
        for (text, (_, w)) in db.stack_texts(&ids).map_err(ApiError::store)?.into_iter().zip(sums) {
            counts.add(&text, w);
        }
        Ok((Stacks::Counts(counts), meta_at(db, &q, first)?))
    }
}

/// The profile of the request (see [`Range`]); `prefix` names its parameters (`base_`).
fn profile_range(db: &dyn Query, args: &HashMap<String, String>, prefix: &str) -> Result<Range> {
    let key = |k: &str| format!("{prefix}{k}");
    let capture = num_param::<i64>(args, &key("capture"), "a capture id")?.map(CaptureId);
    let mut kind = kind_param(args, "kind")?;
    let (from, to) = match capture {
        Some(id) => {
            let c = find_capture(db, id)?;
            kind = c.0;
            match (time_param(args, &key("from"))?, time_param(args, &key("to"))?) {
                (Some(f), Some(t)) if f < t => (f, t),
                (Some(_), Some(_)) => return Err(ApiError::bad("bad range: from is not before to")),
                _ => (c.1, c.2),
            }
        }
        None => range(db, args, &key("from"), &key("to"))?,
    };
    let off_from = num_param::<i64>(args, "offset_from_ms", "milliseconds 0 to 1000")?;
    let off_to = num_param::<i64>(args, "offset_to_ms", "milliseconds 0 to 1000")?;
    let offsets = match (off_from, off_to) {
        (None, None) => None,
        (f, t) => {
            let (f, t) = (f.unwrap_or(0), t.unwrap_or(1000));
            if !(0..=1000).contains(&f) || !(0..=1000).contains(&t) || f >= t {
                return Err(ApiError::bad(format!(
                    "bad offsets: offset_from_ms={f}, offset_to_ms={t} (expected 0 <= from < to <= 1000)"
                )));
            }
            Some((f * 1_000_000, t * 1_000_000))
        }
    };
    Ok(Range { kind, from, to, capture, hosts: Hosts::of(args), cgroup: cgroup_param(args)?, offsets })
}

/// Weight by stack of the samples at an offset, how many they are, and the first one's time.
type AtOffset = (Vec<(StackId, Weight)>, u64, Option<i64>);

/// The samples of `q` whose offset within their second is in `[lo, hi)` ns.
fn by_offset(db: &dyn Query, q: &ProfileQuery<'_>, lo: i64, hi: i64) -> Result<AtOffset> {
    let points = db.samples(q).map_err(ApiError::store)?;
    let mut weights: HashMap<StackId, Weight> = HashMap::new();
    let mut samples = 0u64;
    let mut first = None;
    for p in points {
        let off = p.time_ns.rem_euclid(SEC);
        if off >= lo && off < hi {
            *weights.entry(p.stack).or_insert(Weight::ZERO) += p.weight;
            samples += 1;
            first.get_or_insert(p.time_ns);
        }
    }
    Ok((weights.into_iter().collect(), samples, first))
}

/// The unit of samples taken at `first` (a profile's meta is its buckets'): read from the
/// one bucket of that time, not by merging the whole range a second time.
fn meta_at(db: &dyn Query, q: &ProfileQuery<'_>, first: Option<i64>) -> Result<Meta> {
    match first {
        Some(t) => {
            Ok(db.profile(&ProfileQuery { from_ns: t, to_ns: t + 1, ..*q }).map_err(ApiError::store)?.meta)
        }
        None => Ok(Meta::default()),
    }
}

/// (kind, start, end) of a capture.
fn find_capture(db: &dyn Query, id: CaptureId) -> Result<(Kind, i64, i64)> {
    match db.capture(id).map_err(ApiError::store)? {
        Some(Event::Capture { kind, start_ns, end_ns, .. }) => {
            Ok((kind, start_ns, end_ns.map_or(i64::MAX, |e| e.max(start_ns + 1))))
        }
        _ => Err(ApiError::not_found(format!("capture {} not found", id.0))),
    }
}

async fn profile(State(app): State<Arc<App>>, headers: HeaderMap, Params(args): Args) -> Result<Response> {
    let format = args.get("format").cloned().unwrap_or_else(|| "json".into());
    if !["json", "folded", "svg", "html"].contains(&format.as_str()) {
        return Err(ApiError::bad(format!("format={format:?}: expected json, folded, svg or html")));
    }
    let prune_pct =
        num_param::<f64>(&args, "prune", "a percentage of the total, 0 to 100")?.unwrap_or(PRUNE_PCT);
    if !(0.0..100.0).contains(&prune_pct) {
        return Err(ApiError::bad(format!(
            "prune={prune_pct}: expected a percentage of the total, 0 to 100"
        )));
    }
    let if_none_match = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_string);
    let cache_app = app.clone();
    app.db
        .with(move |db| {
            // A closed range (ended well before the newest data) of an unchanged file gives
            // the same answer every time: an ETag and a copy of the body.
            let key = if format == "json" { cache_key(&cache_app, db, &args)? } else { None };
            let etag = key.as_deref().map(etag_of);
            if let Some(tag) = &etag {
                if if_none_match.as_deref().is_some_and(|h| h.split(',').any(|t| t.trim() == tag)) {
                    return Ok(cached_response(StatusCode::NOT_MODIFIED, tag, None));
                }
                if let Some(body) = cache_app.cache.get(key.as_deref().unwrap_or_default()) {
                    return Ok(cached_response(StatusCode::OK, tag, Some(body)));
                }
            }
            let r = profile_range(db, &args, "")?;
            let (kind, from, to) = (r.kind, r.from, r.to);
            let title = format!("{kind} {} to {}", format_time(from), format_time(to));
            let opts = HtmlOptions { title: Some(title.clone()), ..HtmlOptions::default() };
            let file = format!("kflame-{kind}-{}", format_time(from).replace(':', ""));
            match format.as_str() {
                "folded" => {
                    let (stacks, meta) = r.stacks(db)?;
                    let mut out = Vec::new();
                    kflame::fold::write::write_folded(&mut out, &stacks, &meta)
                        .map_err(|e| ApiError::internal(e.to_string()))?;
                    Ok(download(out, "text/plain; charset=utf-8", &format!("{file}.folded")))
                }
                "svg" => {
                    let (stacks, meta) = r.stacks(db)?;
                    let mut p = kflame::render::Profile::from_stacks(&stacks, &meta, false);
                    p.finish();
                    let ropts =
                        kflame::render::Options { title: Some(title), ..kflame::render::Options::default() };
                    let mut out = Vec::new();
                    kflame::render::write_svg(&p, &ropts, None, &mut out)
                        .map_err(|e| ApiError::internal(e.to_string()))?;
                    Ok(download(out, "image/svg+xml", &format!("{file}.svg")))
                }
                "html" => {
                    let (stacks, meta) = r.stacks(db)?;
                    let mut out = Vec::new();
                    write_html(&mut out, &HtmlProfile::new(&stacks, &meta), &opts)
                        .map_err(|e| ApiError::internal(e.to_string()))?;
                    Ok(download(out, "text/html; charset=utf-8", &format!("{file}.html")))
                }
                _ => {
                    let mut m = r.tree(db)?;
                    let t0 = Instant::now();
                    let total = m.tree.total();
                    let mut pruned = json!(null);
                    let mut opts = opts;
                    if let Some(p) = m.tree.prune(prune_pct / 100.0) {
                        let pct = kflame::fold::tree::percent(prune_pct / 100.0);
                        opts.notes = Some(format!(
                            "{} of {} stacks narrower than {pct} of the total are merged into the frame above them \
                             (\"(N stacks below {pct} merged)\"); the folded download has them all",
                            p.merged, p.before
                        ));
                        pruned = json!({ "stacks": p.merged, "of": p.before, "below_pct": prune_pct });
                    }
                    // The exact total of the range, whatever was merged.
                    debug_assert_eq!(m.tree.total(), total);
                    let prune_time = t0.elapsed();
                    let apart = captures_apart(db, &args, kind, from, to)?;
                    let t1 = Instant::now();
                    let info = json!({ "kind": kind.as_str(), "from": from, "to": to, "pruned": pruned,
                                       "cgroup": args.get("cgroup").filter(|c| !c.is_empty()),
                                       "hosts": r.hosts.json(), "captures_apart": apart });
                    let data = encode_tree(&m.tree, &m.meta, &opts, false);
                    let body = to_script_safe_string(&viewer_answer(data, m.samples, total, info));
                    let timing = format!(
                        "store;dur={:.1}, prune;dur={:.1}, encode;dur={:.1}",
                        ms(m.store),
                        ms(prune_time),
                        ms(t1.elapsed())
                    );
                    let body = Bytes::from(body);
                    let mut resp = match (&key, &etag) {
                        (Some(key), Some(tag)) => {
                            cache_app.cache.put(key.clone(), body.clone());
                            cached_response(StatusCode::OK, tag, Some(body))
                        }
                        _ => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
                    };
                    if let Ok(v) = HeaderValue::from_str(&timing) {
                        resp.headers_mut().insert("server-timing", v);
                    }
                    Ok(resp)
                }
            }
        })
        .await
}

/// The captures of a range's kind left out of its profile (`Kind::has_always_on`: the
/// profile is the always-on one, a capture samples the same seconds at its own rate), as
/// `[{id, host, start, end}]` (`end` null while running); empty for a capture's own profile
/// and for kinds that exist only as captures.
fn captures_apart(
    db: &dyn Query,
    args: &HashMap<String, String>,
    kind: Kind,
    from: i64,
    to: i64,
) -> Result<Value> {
    if !kind.has_always_on() || args.contains_key("capture") {
        return Ok(json!([]));
    }
    let hosts = Hosts::of(args);
    let list = db.events(from, to, hosts.single()).map_err(ApiError::store)?;
    let apart: Vec<Value> = list
        .iter()
        .filter(|e| hosts.matches(e.host()))
        .filter_map(|e| match e {
            Event::Capture { id, host, kind: k, start_ns, end_ns, .. } if *k == kind => {
                Some(json!({ "id": id.0, "host": host, "start": start_ns, "end": end_ns }))
            }
            _ => None,
        })
        .collect();
    Ok(Value::from(apart))
}

/// The default of `prune`: a tenth of a pixel of a flame graph 2000 pixels wide.
pub const PRUNE_PCT: f64 = 0.005;

/// A range is closed (its answer will not change) when it ends this long before the newest
/// data: buckets are written some seconds after their end.
const CLOSED_AFTER: i64 = 120 * SEC;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The cache key of a closed range's answer, `None` for an open one: the file (device,
/// inode), the history's first time (retention and the disk budget move it) and the query.
fn cache_key(app: &App, db: &dyn Query, args: &HashMap<String, String>) -> Result<Option<String>> {
    let Some(id) = app.db.file_id() else { return Ok(None) };
    let Some((first, newest)) = db.time_bounds().map_err(ApiError::store)? else { return Ok(None) };
    // Without an end (the history's, or a capture's that may still be running) it is open.
    let Some(to) = time_param(args, "to")? else { return Ok(None) };
    if to.saturating_add(CLOSED_AFTER) > newest {
        return Ok(None);
    }
    // The bounds as absolute times: `to=-3h` is another range an hour later.
    let from = time_param(args, "from")?.unwrap_or(first);
    let mut sorted: Vec<(&String, &String)> =
        args.iter().filter(|(k, _)| *k != "from" && *k != "to").collect();
    sorted.sort();
    let mut key = format!("{}:{}:{first}:{from}:{to}", id.0, id.1);
    for (k, v) in sorted {
        let _ = write!(key, "&{k}={v}");
    }
    Ok(Some(key))
}

fn etag_of(key: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    let a = h.finish();
    "kflame".hash(&mut h);
    format!("\"{a:016x}{:016x}\"", h.finish())
}

fn cached_response(status: StatusCode, etag: &str, body: Option<Bytes>) -> Response {
    let mut resp = match body {
        Some(b) => ([(header::CONTENT_TYPE, "application/json")], b).into_response(),
        None => status.into_response(),
    };
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    // Kept by the browser, asked again each time (a 304 when unchanged).
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache"));
    resp
}

fn download(body: Vec<u8>, content_type: &'static str, name: &str) -> Response {
    let disposition = format!("attachment; filename=\"{name}\"");
    ([(header::CONTENT_TYPE, content_type.to_string()), (header::CONTENT_DISPOSITION, disposition)], body)
        .into_response()
}

/// Functions listed as grown and as shrunk in a comparison (as `kflame query --base-label`).
const CHANGED_FUNCTIONS: usize = 5;
/// Commits listed for each of them between the two sides' kernels.
const CHANGED_COMMITS: usize = 5;

/// A side of a comparison: its hosts and range.
type Side<'a> = (&'a Hosts, i64, i64);

/// What changed most between a comparison's two sides (the explainer's
/// [`crate::Explain::compare`]: each function's share of each side, the most grown and shrunk
/// first; `null` without one), with both sides' kernels; when each side runs one kernel, they differ and the server has a git history,
/// each function carries the commits between the two releases that changed it.
fn changed_functions(
    db: &dyn Query,
    tree: &StackTree,
    meta: &Meta,
    (before, after): (Side<'_>, Side<'_>),
    explain: Option<&crate::Signer>,
) -> Result<Value> {
    let Some(explain) = explain else { return Ok(Value::Null) };
    let Some(mut v) = explain.explain.compare(tree, &meta.unit, CHANGED_FUNCTIONS) else {
        return Ok(Value::Null);
    };
    // What each side's hosts ran over its own range (a host upgraded in place between the
    // two ran another kernel in each). Labels are a help here, not the answer: a store that
    // cannot give them gives none.
    let kernels = |(hosts, from, to): Side<'_>| {
        let spans = db.host_label_spans(from, to).unwrap_or_default();
        kflame_store::labels::values(spans.iter().filter(|s| hosts.matches(&s.host)), "kernel")
    };
    let (kb, ka) = (kernels(before), kernels(after));
    v["kernels"] = json!({ "before": kb, "after": ka });
    let ([b], [a]) = (kb.as_slice(), ka.as_slice()) else { return Ok(v) };
    if b == a {
        return Ok(v);
    }
    // Every listed function, as `query --base-label` searches them (the range is listed once
    // for all of them).
    let mut names = Vec::new();
    for list in ["grew", "shrank"] {
        for (i, item) in v[list].as_array().into_iter().flatten().enumerate() {
            let name = item["function"].as_str().unwrap_or("").split('+').next().unwrap_or("");
            names.push((list, i, name.to_string()));
        }
    }
    let functions: Vec<&str> = names.iter().map(|n| n.2.as_str()).collect();
    match explain.explain.commits(&functions, b, a, CHANGED_COMMITS) {
        None => {}
        Some(Ok(found)) => {
            for ((list, i, _), c) in names.iter().zip(found) {
                v[*list][*i]["commits"] = c;
            }
        }
        Some(Err(e)) => v["commits_error"] = Value::from(e),
    }
    Ok(v)
}

async fn diff(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let explain = app.explain.clone();
    app.db
        .with(move |db| {
            let r = profile_range(db, &args, "")?;
            let (kind, from, to) = (r.kind, r.from, r.to);
            let mut after = r.tree(db)?;
            // The base takes the selection's kind, hosts and cgroup, but for what it names
            // itself (`base_hosts=`: other hosts, e.g. those of another kernel; empty: every
            // host).
            let base_args: HashMap<String, String> = ["kind", "host", "hosts", "cgroup"]
                .into_iter()
                .filter_map(|k| args.get(k).map(|v| (k.to_string(), v.clone())))
                .chain(args.iter().filter_map(|(k, v)| k.strip_prefix("base_").map(|k| (k.to_string(), v.clone()))))
                .collect();
            let has_range = base_args.contains_key("from") && base_args.contains_key("to");
            if !(base_args.contains_key("capture") || has_range) {
                return Err(ApiError::bad("the base: give base_from and base_to, or base_capture"));
            }
            let base = profile_range(db, &base_args, "")?;
            let (bkind, bfrom, bto) = (base.kind, base.from, base.to);
            if bkind != kind {
                return Err(ApiError::bad(format!("cannot compare a {bkind} profile with a {kind} profile")));
            }
            let title = format!(
                "{kind}: {} to {} against {} to {}",
                format_time(from),
                format_time(to),
                format_time(bfrom),
                format_time(bto)
            );
            let before = base.tree(db)?;
            let opts = HtmlOptions { title: Some(title), ..HtmlOptions::default() };
            let total = after.tree.total();
            let normalize = match args.get("normalize").map(String::as_str) {
                None | Some("0") => false,
                Some("1") => true,
                Some(v) => return Err(ApiError::bad(format!("normalize={v}: expected 0 or 1"))),
            };
            if normalize && !before.tree.total().is_zero() {
                after.tree.add_baseline_normalized(&before.tree);
            } else {
                after.tree.add_baseline(&before.tree);
            }
            let changed = changed_functions(
                db,
                &after.tree,
                &after.meta,
                ((&base.hosts, bfrom, bto), (&r.hosts, from, to)),
                explain.as_deref(),
            )?;
            let info = json!({ "kind": kind.as_str(), "from": from, "to": to, "base_from": bfrom, "base_to": bto,
                               "base_samples": before.samples, "base_total": before.tree.total().to_string(),
                               "hosts": r.hosts.json(), "base_hosts": base.hosts.json(), "normalized": normalize,
                               "changed": changed });
            let data = encode_tree(&after.tree, &after.meta, &opts, true);
            Ok(json_response(to_script_safe_string(&viewer_answer(data, after.samples, total, info))))
        })
        .await
}

/// An event as JSON; `ns` is its time as a string (a JavaScript number cannot hold every
/// nanosecond time exactly).
fn event_json(e: &Event) -> Value {
    let mut v = event_fields(e);
    v["ns"] = Value::from(e.time_ns().to_string());
    v
}

fn event_fields(e: &Event) -> Value {
    match e {
        Event::Trigger { id, host, time_ns, rule, metric, value, threshold } => json!({
            "type": "trigger", "id": id.0, "host": host, "time": time_ns, "rule": rule,
            "metric": metric, "value": value, "threshold": threshold,
        }),
        Event::Capture { id, host, kind, start_ns, end_ns, trigger, note } => json!({
            "type": "capture", "id": id.0, "host": host, "kind": kind.as_str(), "time": start_ns,
            "end": end_ns, "trigger": trigger.map(|t| t.0), "note": note,
        }),
        Event::Report { host, time_ns, kind, title, .. } => json!({
            "type": "report", "host": host, "time": time_ns, "kind": kind, "title": title,
        }),
    }
}

async fn events(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    app.db
        .with(move |db| {
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let list = db.events(from, to, hosts.single()).map_err(ApiError::store)?;
            let events: Vec<Value> =
                list.iter().filter(|e| hosts.matches(e.host())).map(event_json).collect();
            Ok(json_response(json!({ "events": events, "from": from, "to": to }).to_string()))
        })
        .await
}

/// `/api/report`: a stored kernel report, with its stack as the viewer draws it; where the
/// server explains reports ([`crate::Explain`]), its analysis, signature and the reports of
/// the same signature in the history; and the CPU profile (and off-CPU, where stored) of its
/// host in the `before` seconds before it (60 by default).
#[derive(serde::Serialize)]
struct ReportAnswer {
    host: String,
    kind: String,
    stack: String,
    text: String,
    time: i64,
    /// `time` as text, exact in JavaScript.
    ns: String,
    title: String,
    profile: ViewerAnswer,
    signature: Option<String>,
    analysis: Value,
    similar: Value,
    before: Value,
}

/// The default and largest `before=` of `/api/report`, seconds.
const BEFORE_SECS: i64 = 60;
const BEFORE_MAX_SECS: i64 = 3600;
/// The reports of one signature listed in a group (all are counted).
const SIMILAR_LISTED: usize = 50;

async fn report(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let Some(time) = time_param(&args, "time")? else {
        return Err(ApiError::bad("time: missing (the report's time, UTC ns, from /api/events)"));
    };
    let before = num_param::<i64>(&args, "before", "a number of seconds")?.unwrap_or(BEFORE_SECS);
    if !(1..=BEFORE_MAX_SECS).contains(&before) {
        return Err(ApiError::bad(format!("before={before}: expected 1 to {BEFORE_MAX_SECS} seconds")));
    }
    let explain = app.explain.clone();
    app.db
        .with(move |db| {
            let host = host_param(&args);
            let list = db.reports(time, time.saturating_add(1), host.as_deref()).map_err(ApiError::store)?;
            let Some(Event::Report { host, time_ns, kind, title, stack, text }) =
                list.into_iter().find(|e| matches!(e, Event::Report { .. }))
            else {
                return Err(ApiError::not_found(format!(
                    "no kernel report at {time} ({})",
                    format_time(time)
                )));
            };
            let mut counts = StackCounts::new();
            if !stack.is_empty() {
                counts.add(stack.as_bytes(), Weight::from_u64(1));
            }
            let tree = StackTree::from_stacks(&Stacks::Counts(counts), None, false, true);
            let opts = HtmlOptions { title: Some(title.clone()), ..HtmlOptions::default() };
            let data = encode_tree(&tree, &Meta::default(), &opts, false);
            let profile = viewer_answer(data, 1, tree.total(), json!({ "kind": "report" }));
            let signed = explain.as_ref().and_then(|x| x.sign_text(&host, time_ns, &text));
            let analysis = explain.as_ref().and_then(|x| x.explain.explain(&text)).unwrap_or(Value::Null);
            let similar = match (&explain, &signed) {
                (Some(x), Some(s)) => similar_reports(db, x, &s.signature)?,
                _ => Value::Null,
            };
            let mut before_json = json!({ "seconds": before });
            for kind in [Kind::Cpu, Kind::OffCpu] {
                if let Some(p) = profile_before(db, kind, &host, time_ns, before)? {
                    before_json[kind.as_str()] = p;
                }
            }
            let signature = signed.map(|s| s.signature);
            let answer = ReportAnswer {
                host,
                kind,
                stack,
                text,
                time: time_ns,
                ns: time_ns.to_string(),
                title,
                profile,
                signature,
                analysis,
                similar,
                before: before_json,
            };
            Ok(json_response(to_script_safe_string(&answer)))
        })
        .await
}

/// `/api/reports`: the kernel reports of a range, grouped by signature.
async fn reports(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let explain = app.explain.clone();
    app.db
        .with(move |db| {
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let list = db.reports(from, to, hosts.single()).map_err(ApiError::store)?;
            let groups = report_groups(&list, &hosts, explain.as_deref());
            let answer = json!({ "from": from, "to": to, "explained": explain.is_some(), "groups": groups });
            Ok(json_response(to_script_safe_string(&answer)))
        })
        .await
}

/// The reports of `events` on the hosts `hosts` names, grouped by signature (the
/// explainer's, else kind and stored title), most frequent first, ties by first seen: each
/// group's count, first and last seen, hosts, kernels, titles and latest
/// [`SIMILAR_LISTED`] reports (`time`, and `ns`, the time as text, exact in JavaScript).
fn report_groups(events: &[Event], hosts: &Hosts, signer: Option<&crate::Signer>) -> Vec<Value> {
    let mut sign = |e: &Event| signer.and_then(|x| x.sign(e)).map(|s| (s.signature, s.kernel));
    kflame_store::reports::group_reports(events, |h| hosts.matches(h), &mut sign, SIMILAR_LISTED)
        .into_iter()
        .map(|g| {
            let reports: Vec<Value> = g
                .latest
                .iter()
                .map(|r| json!({ "time": r.time_ns, "ns": r.time_ns.to_string(), "host": r.host, "title": r.title }))
                .collect();
            json!({
                "signature": g.signature, "count": g.count, "first_seen": g.first_seen,
                "last_seen": g.last_seen, "hosts": g.hosts, "kernels": g.kernels, "titles": g.titles,
                "reports": reports,
            })
        })
        .collect()
}

/// The reports of the whole history with signature `signature`, as one group of
/// [`report_groups`] (the others are not made: their signatures are kept, not their JSON).
fn similar_reports(db: &dyn Query, signer: &crate::Signer, signature: &str) -> Result<Value> {
    let Some((lo, hi)) = db.time_bounds().map_err(ApiError::store)? else { return Ok(Value::Null) };
    let mut same = db.reports(lo, hi.saturating_add(1), None).map_err(ApiError::store)?;
    same.retain(|e| signer.sign(e).is_some_and(|s| s.signature == signature));
    let every_host = Hosts { host: None, hosts: None };
    Ok(report_groups(&same, &every_host, Some(signer)).into_iter().next().unwrap_or(Value::Null))
}

/// The profile of `kind` of `host` in the `secs` seconds before `time` (viewer data with its
/// total), or `None` when nothing of that kind is stored then.
fn profile_before(db: &dyn Query, kind: Kind, host: &str, time: i64, secs: i64) -> Result<Option<Value>> {
    let from = time.saturating_sub(secs.saturating_mul(SEC));
    let hosts = Hosts { host: Some(host.to_string()), hosts: None };
    let r = Range { kind, from, to: time, capture: None, hosts, cgroup: None, offsets: None };
    let m = r.tree(db)?;
    if m.samples == 0 {
        return Ok(None);
    }
    let total = m.tree.total();
    let name = match kind {
        Kind::Cpu => "CPU",
        Kind::OffCpu => "Off-CPU",
        _ => kind.as_str(),
    };
    let title = format!("{name} of {host} in the {secs} s before the report");
    let opts = HtmlOptions { title: Some(title), ..HtmlOptions::default() };
    let data = encode_tree(&m.tree, &m.meta, &opts, false);
    let info = json!({ "kind": kind.as_str(), "from": from, "to": time, "host": host });
    let answer = viewer_answer(data, m.samples, total, info);
    Ok(Some(serde_json::to_value(&answer).map_err(|e| ApiError::internal(e.to_string()))?))
}

/// At most this many columns in a latency heat map.
pub const LATENCY_MAX_COLUMNS: usize = 4000;

/// The latency family of `kind=`.
pub(crate) fn latency_kind(args: &HashMap<String, String>) -> Result<kflame_store::LatencyKind> {
    let k = args.get("kind").map_or("syscall", String::as_str);
    kflame_store::LatencyKind::from_name(k)
        .ok_or_else(|| ApiError::bad(format!("kind={k:?}: expected syscall, bio, runq, offcpu or lock")))
}

async fn latency(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let kind = latency_kind(&args)?;
    let columns = num_param::<usize>(&args, "columns", "a number of columns")?.unwrap_or(300);
    if columns == 0 || columns > LATENCY_MAX_COLUMNS {
        return Err(ApiError::bad(format!("columns: expected 1 to {LATENCY_MAX_COLUMNS}")));
    }
    let min_rows = num_param::<usize>(&args, "min_rows", "a number of rows")?.unwrap_or(0);
    if min_rows > kflame::latency::SLOTS {
        return Err(ApiError::bad(format!("min_rows: expected 0 to {}", kflame::latency::SLOTS)));
    }
    app.db
        .with(move |db| {
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let label = args.get("label").map_or("", String::as_str);
            let q = kflame_store::LatencyQuery {
                kind,
                label: Some(label),
                host: hosts.single(),
                from_ns: from,
                to_ns: to,
            };
            let t0 = Instant::now();
            let found: Vec<kflame_store::LatencySeries> = db
                .latency(&q)
                .map_err(ApiError::store)?
                .into_iter()
                .filter(|s| hosts.matches(&s.host))
                .collect();
            let store = t0.elapsed();
            let mut m = kflame_store::heatmap::heatmap(&found, from, to, columns);
            pad_rows(&mut m, min_rows);
            let ms = |q: f64| m.summed.quantile(q).map(|ns| ns / 1e6);
            let out = json!({
                "kind": kind.as_str(),
                "event": kind.event(),
                "label": label,
                "from": m.from_ns,
                "to": m.to_ns,
                "step_ns": m.step_ns,
                "lower_ns": m.lower_ns,
                "upper_ns": m.upper_ns,
                "counts": m.counts,
                "total": m.total,
                "slow": m.slow,
                "max_ms": m.max_ns as f64 / 1e6,
                "p50_ms": ms(0.5),
                "p99_ms": ms(0.99),
                "hosts": found.iter().map(|s| s.host.as_str()).collect::<std::collections::BTreeSet<_>>(),
            })
            .to_string();
            let timing =
                format!("store;dur={:.1}, encode;dur={:.1}", self::ms(store), self::ms(t0.elapsed() - store));
            let mut resp = json_response(out);
            if let Ok(v) = HeaderValue::from_str(&timing) {
                resp.headers_mut().insert("server-timing", v);
            }
            Ok(resp)
        })
        .await
}

/// At most this many outliers listed in one answer (the longest; all of them are in its
/// flame graph).
pub const MAX_OUTLIERS: usize = 2000;

async fn outliers(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let kind = latency_kind(&args)?;
    let min_ns = num_param::<u64>(&args, "min_ns", "a duration in ns")?.unwrap_or(0);
    let max_ns = num_param::<u64>(&args, "max_ns", "a duration in ns")?.unwrap_or(u64::MAX);
    app.db
        .with(move |db| {
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let label = args.get("label").filter(|l| !l.is_empty()).map(|l| format!("{}:{l}", kind.as_str()));
            let mut found: Vec<kflame_store::StoredEvent> = db
                .outliers(kind, from, to, hosts.single())
                .map_err(ApiError::store)?
                .into_iter()
                .filter(|e| {
                    let d = e.duration_ns.unwrap_or(0);
                    d >= min_ns && d < max_ns && label.as_ref().is_none_or(|l| *l == e.event)
                })
                .collect();
            let ids: Vec<StackId> = found.iter().map(|e| e.stack).collect();
            let texts = db.stack_texts(&ids).map_err(ApiError::store)?;
            let mut counts = StackCounts::default();
            for (e, t) in found.iter().zip(&texts) {
                counts.add(t, Weight::from(e.duration_ns.unwrap_or(0)));
            }
            let meta = Meta { unit: kflame::fold::Unit::Nanoseconds, event: Some(format!("{kind} outliers")) };
            let stacks = Stacks::Counts(counts);
            let tree = StackTree::from_stacks(&stacks, None, false, true);
            let total = tree.total();
            let data = encode_tree(&tree, &meta, &HtmlOptions::default(), false);
            let n = found.len();
            found.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.time_ns.cmp(&b.time_ns)));
            found.truncate(MAX_OUTLIERS);
            found.sort_by_key(|e| e.time_ns);
            let listed: Vec<Value> = found
                .iter()
                .map(|e| {
                    json!({ "time": e.time_ns, "duration_ns": e.duration_ns, "pid": e.pid, "tid": e.tid,
                            "comm": e.comm, "cpu": e.cpu, "event": e.event, "stack": e.stack.0 })
                })
                .collect();
            let info = json!({ "kind": kind.as_str(), "from": from, "to": to, "count": n,
                               "listed": listed, "min_ns": min_ns, "max_ns": (max_ns != u64::MAX).then_some(max_ns) });
            Ok(json_response(to_script_safe_string(&viewer_answer(data, n as u64, total, info))))
        })
        .await
}

/// Adds empty buckets around the rows of `m` until it has `min_rows` (below and above alike,
/// within the buckets there are), so that a map whose events fall in one or two buckets is
/// drawn with its neighbours, rows as tall as in any other map. A map of no event stays empty.
fn pad_rows(m: &mut kflame_store::heatmap::HeatMap, min_rows: usize) {
    use kflame::latency::{SLOTS, slot_lower, slot_of, slot_upper};
    let Some(&first) = m.lower_ns.first() else { return };
    let rows = m.lower_ns.len();
    if rows >= min_rows {
        return;
    }
    let lo = slot_of(first);
    let hi = lo + rows;
    let extra = min_rows.min(SLOTS) - rows;
    let mut below = (extra / 2).min(lo);
    let above = (extra - below).min(SLOTS - hi);
    below = (extra - above).min(lo);
    m.lower_ns = (lo - below..hi + above).map(slot_lower).collect();
    m.upper_ns = slot_upper(hi + above - 1);
    for c in &mut m.counts {
        let mut padded = vec![0; below];
        padded.extend_from_slice(c);
        padded.resize(below + rows + above, 0);
        *c = padded;
    }
}

async fn latency_labels(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    app.db
        .with(move |db| {
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let labels = db.latency_labels(hosts.single(), from, to).map_err(ApiError::store)?;
            let out: Vec<Value> = labels
                .iter()
                .map(|(k, l)| json!({ "kind": k.as_str(), "event": k.event(), "label": l }))
                .collect();
            Ok(json_response(json!({ "labels": out, "from": from, "to": to }).to_string()))
        })
        .await
}

async fn heatmap(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let auto = args.get("row_ms").is_some_and(|r| r == "auto");
    let row_ms = if auto {
        0
    } else {
        num_param::<i64>(&args, "row_ms", "milliseconds, a divisor of 1000, or auto")?.unwrap_or(20)
    };
    if !auto {
        heatmap_shape(0, 1, row_ms)?;
    }
    app.db
        .with(move |db| {
            let kind = kind_param(&args, "kind")?;
            let (from, to) = range(db, &args, "from", "to")?;
            // The range checked before anything is read (with whole-second rows when the
            // rows follow the rate); the cells again once the rows are known.
            heatmap_shape(from, to, if auto { 1000 } else { row_ms })?;
            let hosts = Hosts::of(&args);
            let cgroup = cgroup_param(&args)?;
            let mut q = ProfileQuery::new(kind, from, to);
            hosts.apply(&mut q);
            q.cgroup = cgroup.as_deref();
            let samples = db.samples(&q).map_err(ApiError::store)?;
            let rate = sample_rate(&samples);
            let row_ms = if auto { rows_for(rate) } else { row_ms };
            let (start, columns, rows) = heatmap_shape(from, to, row_ms)?;
            let mut counts = vec![0u32; (columns * rows) as usize];
            let mut total = 0u64;
            for p in samples {
                let Some(d) = p.time_ns.checked_sub(start).filter(|d| *d >= 0) else { continue };
                let (c, r) = (d / SEC, (d % SEC) / (row_ms * 1_000_000));
                if let Some(slot) = usize::try_from(c * rows + r).ok().and_then(|i| counts.get_mut(i)) {
                    *slot += 1;
                    total += 1;
                }
            }
            let max = counts.iter().copied().max().unwrap_or(0);
            let answer = HeatmapAnswer {
                kind: kind.as_str(),
                start,
                from,
                to,
                columns,
                rows,
                row_ms,
                rate_hz: rate,
                max,
                total,
                counts,
            };
            Ok(json_response(serde_json::to_string(&answer).map_err(|e| ApiError::internal(e.to_string()))?))
        })
        .await
}

/// `/api/heatmap`'s answer: samples per cell, column by column (a column is a second, its
/// `rows` cells of `row_ms` each).
#[derive(serde::Serialize)]
struct HeatmapAnswer {
    kind: &'static str,
    start: i64,
    from: i64,
    to: i64,
    columns: i64,
    rows: i64,
    row_ms: i64,
    rate_hz: u32,
    max: u32,
    total: u64,
    counts: Vec<u32>,
}

/// The sampling rate the samples show, per CPU: the sampling instants (distinct
/// milliseconds) of one CPU in one second, the 90th percentile over the CPU-seconds that
/// have samples (a CPU idle part of a second, or a second cut by the range, shows fewer);
/// 0 without samples. Samples come in time order.
fn sample_rate(samples: &[kflame_store::SamplePoint]) -> u32 {
    // Per CPU: (its current second, the last millisecond seen, instants in the second).
    let mut cpus: HashMap<u32, (i64, i64, u32)> = HashMap::new();
    let mut histogram = [0u64; 1001];
    for p in samples {
        let ms = p.time_ns.div_euclid(1_000_000);
        let sec = ms.div_euclid(1000);
        let c = cpus.entry(p.cpu).or_insert((sec, i64::MIN, 0));
        if c.0 != sec {
            histogram[c.2.min(1000) as usize] += 1;
            *c = (sec, i64::MIN, 0);
        }
        if c.1 != ms {
            c.1 = ms;
            c.2 += 1;
        }
    }
    for (_, _, n) in cpus.into_values() {
        histogram[n.min(1000) as usize] += 1;
    }
    histogram[0] = 0;
    let seconds: u64 = histogram.iter().sum();
    let mut below = 0;
    for (n, count) in histogram.iter().enumerate() {
        below += count;
        if seconds > 0 && below * 10 >= seconds * 9 {
            return n as u32;
        }
    }
    0
}

/// The heat map's row height for a rate (`row_ms=auto`): at least two sampling periods,
/// so that every row of a busy CPU's second holds samples (rows of half a period would
/// draw the sampling instants as stripes), a divisor of 1000 ms, 10 ms at least.
fn rows_for(rate_hz: u32) -> i64 {
    const ROWS: [i64; 11] = [10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000];
    if rate_hz == 0 {
        return 20;
    }
    let want = 2000.0 / f64::from(rate_hz);
    ROWS.into_iter().find(|&r| r as f64 >= want).unwrap_or(1000)
}

/// `/api/frame_hosts`' answer.
#[derive(serde::Serialize)]
struct FrameHostsAnswer<'a> {
    hosts: Vec<HostShareJson<'a>>,
    frame: &'a str,
    kind: &'static str,
    from: i64,
    to: i64,
    in_frame: Box<RawValue>,
    total: Box<RawValue>,
    percent: Num,
}

/// One host of [`FrameHostsAnswer`].
#[derive(serde::Serialize)]
struct HostShareJson<'a> {
    host: &'a str,
    in_frame: Box<RawValue>,
    total: Box<RawValue>,
    percent: Num,
}

/// Which hosts spend weight in stacks holding one frame (`Query::host_shares`): each host's
/// weight in the frame, its total and the share, the most in the frame first.
async fn frame_hosts(State(app): State<Arc<App>>, Params(args): Args) -> Result<Response> {
    let frame = match args.get("frame").map(String::as_str) {
        None | Some("") => {
            return Err(ApiError::bad(
                "frame: missing (one frame name as the flame graph shows it, like shrink_slab)",
            ));
        }
        Some(f) if f.contains(';') => {
            return Err(ApiError::bad(format!(
                "frame={f:?}: one frame name, without ';' (a frame, not a stack)"
            )));
        }
        Some(f) => f.to_string(),
    };
    app.db
        .with(move |db| {
            let kind = kind_param(&args, "kind")?;
            let (from, to) = range(db, &args, "from", "to")?;
            let hosts = Hosts::of(&args);
            let cgroup = cgroup_param(&args)?;
            let mut q = ProfileQuery::new(kind, from, to);
            hosts.apply(&mut q);
            q.cgroup = cgroup.as_deref();
            let t0 = Instant::now();
            let shares = db.host_shares(&q, &frame).map_err(ApiError::store)?;
            let store = t0.elapsed();
            let (mut in_frame, mut total) = (Weight::ZERO, Weight::ZERO);
            let rows: Vec<HostShareJson> = shares
                .iter()
                .map(|s| {
                    in_frame += s.frame;
                    total += s.total;
                    HostShareJson {
                        host: &s.host,
                        in_frame: weight_num(s.frame),
                        total: weight_num(s.total),
                        percent: Num(percent(s.frame, s.total)),
                    }
                })
                .collect();
            let answer = FrameHostsAnswer {
                hosts: rows,
                frame: &frame,
                kind: kind.as_str(),
                from,
                to,
                in_frame: weight_num(in_frame),
                total: weight_num(total),
                percent: Num(percent(in_frame, total)),
            };
            let out = serde_json::to_string(&answer).map_err(|e| ApiError::internal(e.to_string()))?;
            let mut resp = json_response(out);
            if let Ok(v) = HeaderValue::from_str(&format!("store;dur={:.1}", ms(store))) {
                resp.headers_mut().insert("server-timing", v);
            }
            Ok(resp)
        })
        .await
}

/// `part` in % of `whole` (0 when `whole` is 0).
fn percent(part: Weight, whole: Weight) -> f64 {
    if whole == Weight::ZERO { 0.0 } else { part.as_f64() / whole.as_f64() * 100.0 }
}

async fn live(State(app): State<Arc<App>>) -> Result<Response> {
    if !app.live {
        return Err(ApiError::not_found("live updates are off: start kflame serve with --live"));
    }
    let shutdown = app.shutdown.clone();
    let db = app.db.clone();
    let stream = futures_util::stream::unfold((db, false), move |(db, done)| {
        let mut shutdown = shutdown.clone();
        async move {
            if done || *shutdown.borrow() {
                return None;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.changed() => return None,
            }
            let version = db.clone();
            let bounds =
                db.with(move |db| Ok((db.time_bounds().map_err(ApiError::store)?, version.version()))).await;
            let ev = match bounds {
                Ok((b, version)) => SseEvent::default()
                    .event("tick")
                    .data(json!({ "to": b.map(|b| b.1), "version": version }).to_string()),
                Err(e) => SseEvent::default().event("error").data(json!({ "error": e.message }).to_string()),
            };
            Some((Ok::<_, Infallible>(ev), (db, false)))
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}
