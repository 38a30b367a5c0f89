//! The server on a real history database written through the store crate: the security
//! rules on every path, the API's answers computed against what was written, bad requests
//! and a database that goes away or turns corrupt. Most tests call the router directly;
//! `over_loopback` goes through a real socket.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use common::history::{self, HOSTILE_TITLE, History, SEC, T0, Written};
use kflame_serve::Token;
use serde_json::Value;
use tower::ServiceExt;

const TOKEN: &str = "test-token-0123456789";
const ADDR: &str = "127.0.0.1:7420";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-serve-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn setup(name: &str, seconds: i64) -> (PathBuf, History, Router) {
    let path = dir(name).join("history.db");
    let hist = history::write(&path, seconds, true).unwrap();
    let app =
        kflame_serve::app(path.clone(), Token::new(TOKEN).unwrap(), ADDR.parse().unwrap(), false).unwrap();
    (path, hist, app)
}

fn get(uri: &str) -> axum::http::request::Builder {
    Request::get(uri).header(header::HOST, ADDR)
}

fn authed(uri: &str) -> Request<Body> {
    get(uri).header(header::AUTHORIZATION, format!("Bearer {TOKEN}")).body(Body::empty()).unwrap()
}

async fn send(app: &Router, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let resp = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (parts.status, parts.headers, bytes.to_vec())
}

async fn json(app: &Router, uri: &str) -> Value {
    let (status, _, body) = send(app, authed(uri)).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

async fn error(app: &Router, uri: &str, want: StatusCode) -> String {
    let (status, _, body) = send(app, authed(uri)).await;
    assert_eq!(status, want, "{uri}: {}", String::from_utf8_lossy(&body));
    let v: Value = serde_json::from_slice(&body).unwrap();
    v["error"].as_str().unwrap().to_string()
}

/// stack → weight of the written samples in [from, to).
fn expected<'a>(
    lists: impl IntoIterator<Item = &'a [Written]>,
    from: i64,
    to: i64,
) -> BTreeMap<Vec<u8>, u64> {
    let mut m = BTreeMap::new();
    for list in lists {
        for w in list.iter().filter(|w| w.time_ns >= from && w.time_ns < to) {
            *m.entry(w.stack.clone()).or_insert(0) += 1;
        }
    }
    m
}

fn parse_folded(text: &[u8]) -> BTreeMap<Vec<u8>, u64> {
    let mut m = BTreeMap::new();
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty() && !l.starts_with(b"#")) {
        let sp = line.iter().rposition(|&b| b == b' ').unwrap();
        let n: u64 = std::str::from_utf8(&line[sp + 1..]).unwrap().parse().unwrap();
        *m.entry(line[..sp].to_vec()).or_insert(0) += n;
    }
    m
}

#[tokio::test]
async fn every_path_needs_the_token() {
    let (_, _, app) = setup("token", 30);
    for path in [
        "/",
        "/api/info",
        "/api/profile?kind=cpu",
        "/api/scatter?kind=syscall&from=-1h&to=now",
        "/viewer/viewer.js",
        "/assets/app.js",
        "/nope",
        "/api/nope",
    ] {
        let (status, headers, body) = send(&app, get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert!(String::from_utf8_lossy(&body).contains("needs its token"), "{path}");
        assert!(
            headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("frame-ancestors 'none'")
        );
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        // A wrong token is no token.
        let req = get(path)
            .header(header::AUTHORIZATION, "Bearer test-token-0123456788")
            .body(Body::empty())
            .unwrap();
        assert_eq!(send(&app, req).await.0, StatusCode::UNAUTHORIZED, "{path}");
        let req = get(path).header(header::COOKIE, "kflame_token=x").body(Body::empty()).unwrap();
        assert_eq!(send(&app, req).await.0, StatusCode::UNAUTHORIZED, "{path}");
    }
    // The page opened with the token: a cookie, and the same address without the token.
    let (status, headers, _) =
        send(&app, get(&format!("/?from=5&token={TOKEN}&to=9")).body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/?from=5&to=9");
    let cookie = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let pair = cookie.split(';').next().unwrap();
    let (status, headers, body) =
        send(&app, get("/?from=5&to=9").header(header::COOKIE, pair).body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let page = String::from_utf8(body).unwrap();
    assert!(page.contains("/assets/app.js") && !page.contains(TOKEN));
    // No inline script may run on the page.
    assert!(headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("script-src 'self';"));
    // A wrong token in the URL sets nothing.
    let (status, headers, _) = send(&app, get("/?token=nope").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.get(header::SET_COOKIE).is_none());
    // The viewer's modules are served as they are.
    let (status, headers, body) = send(&app, authed("/viewer/viewer.js")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/javascript"));
    let viewer = kflame::render::html::ASSETS.iter().find(|a| a.path == "viewer.js").unwrap();
    assert_eq!(body, viewer.text.as_bytes());
}

#[tokio::test]
async fn other_hosts_and_origins_are_refused() {
    let (_, _, app) = setup("hosts", 30);
    let with = |name: &str, value: &str| {
        Request::get("/api/info")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(name, value)
            .body(Body::empty())
            .unwrap()
    };
    for host in ["evil.example:7420", "127.0.0.1:7421", "localhost", "127.0.0.1.nip.io:7420", ""] {
        let (status, _, body) = send(&app, with("host", host)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "Host {host:?}");
        assert!(String::from_utf8_lossy(&body).contains("Host"));
    }
    for host in ["127.0.0.1:7420", "localhost:7420", "[::1]:7420"] {
        assert_eq!(send(&app, with("host", host)).await.0, StatusCode::OK, "Host {host:?}");
    }
    let cross = |name: &str, value: &str| {
        get("/api/info")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(name, value)
            .body(Body::empty())
            .unwrap()
    };
    assert_eq!(send(&app, cross("origin", "http://evil.example")).await.0, StatusCode::FORBIDDEN);
    assert_eq!(send(&app, cross("origin", "null")).await.0, StatusCode::FORBIDDEN);
    assert_eq!(send(&app, cross("sec-fetch-site", "cross-site")).await.0, StatusCode::FORBIDDEN);
    assert_eq!(send(&app, cross("sec-fetch-site", "same-site")).await.0, StatusCode::FORBIDDEN);
    assert_eq!(send(&app, cross("origin", "http://127.0.0.1:7420")).await.0, StatusCode::OK);
    assert_eq!(send(&app, cross("sec-fetch-site", "same-origin")).await.0, StatusCode::OK);
    // Only GET.
    let post = Request::post("/api/info")
        .header(header::HOST, ADDR)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&app, post).await.0, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn profiles_are_exactly_the_samples_of_the_range() {
    let (_, hist, app) = setup("profile", 200);
    for (a, b) in [(0, 200), (13, 47), (55, 75), (59, 61), (100, 101)] {
        let (from, to) = (T0 + a * SEC + 123_456_789, T0 + b * SEC);
        // The always-on profile alone: the capture's samples (another rate, the same
        // seconds) are kept apart, and asked for by its id below.
        let want = expected([&hist.samples[..]], from, to);
        let (status, headers, body) =
            send(&app, authed(&format!("/api/profile?kind=cpu&from={from}&to={to}&format=folded"))).await;
        assert_eq!(status, StatusCode::OK);
        assert!(headers[header::CONTENT_DISPOSITION].to_str().unwrap().contains(".folded"));
        assert_eq!(parse_folded(&body), want, "{a}..{b}");
        let v = json(&app, &format!("/api/profile?kind=cpu&from={from}&to={to}")).await;
        let total: u64 = want.values().sum();
        assert_eq!(v["total"].as_u64(), Some(total));
        assert_eq!(v["samples"].as_u64(), Some(total));
        assert_eq!(v["profile"]["total"].as_str(), Some(total.to_string().as_str()));
        assert!(v["nodes"].as_str().unwrap().len() > 10);
    }
    // The capture alone.
    let v = json(&app, &format!("/api/profile?capture={}", hist.capture_id)).await;
    assert_eq!(v["total"].as_u64(), Some(hist.capture.len() as u64));
    // SVG and standalone HTML downloads of a range.
    let (status, headers, body) =
        send(&app, authed(&format!("/api/profile?from={}&to={}&format=svg", T0, T0 + 30 * SEC))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "image/svg+xml");
    let svg = String::from_utf8(body).unwrap();
    assert!(svg.contains("<svg") && svg.contains("&lt;img src=x") && !svg.contains("<img src=x"));
    let (_, _, body) =
        send(&app, authed(&format!("/api/profile?from={}&to={}&format=html", T0, T0 + 30 * SEC))).await;
    let html = String::from_utf8(body).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && !html.contains("<img src=x"));
}

#[tokio::test]
async fn a_heat_map_counts_each_sample_in_its_cell() {
    let (_, hist, app) = setup("heat", 40);
    let (from, to) = (T0 + 2 * SEC, T0 + 25 * SEC);
    let v = json(&app, &format!("/api/heatmap?kind=cpu&from={from}&to={to}&row_ms=20")).await;
    assert_eq!(v["columns"].as_i64(), Some(23));
    assert_eq!(v["rows"].as_i64(), Some(50));
    let counts: Vec<u64> = v["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
    let mut want = vec![0u64; 23 * 50];
    for w in hist.samples.iter().filter(|w| w.time_ns >= from && w.time_ns < to) {
        let d = w.time_ns - from;
        want[((d / SEC) * 50 + (d % SEC) / 20_000_000) as usize] += 1;
    }
    assert_eq!(counts, want);
    assert_eq!(v["total"].as_u64(), Some(want.iter().sum()));
    // The burst in the first 100 ms of second 3 and 13 is the hottest cell.
    assert_eq!(v["max"].as_u64(), counts.iter().max().copied());
    assert!(counts[50] > 3 * counts[50 + 10]);
    // A rectangle: seconds 2..25, offsets 0..100 ms: exactly those samples.
    let (_, _, body) = send(
        &app,
        authed(&format!(
            "/api/profile?kind=cpu&from={from}&to={to}&offset_from_ms=0&offset_to_ms=100&format=folded"
        )),
    )
    .await;
    let mut rect = BTreeMap::new();
    for w in hist
        .samples
        .iter()
        .filter(|w| w.time_ns >= from && w.time_ns < to && (w.time_ns - T0) % SEC < 100_000_000)
    {
        *rect.entry(w.stack.clone()).or_insert(0u64) += 1;
    }
    assert_eq!(parse_folded(&body), rect);
}

/// A latency heat map holds every stored event of its range in its cells (rows from the
/// lowest bucket used to the highest), with the range's slow count, largest latency and
/// percentiles; the labels are listed; a bad family is a 400.
#[tokio::test]
async fn a_latency_heat_map_counts_the_stored_histograms() {
    let (_, _, app) = setup("latency", 60);
    let uri = format!("/api/latency?kind=syscall&label=write&from={T0}&to={}&columns=6", T0 + 60 * SEC);
    let v = json(&app, &uri).await;
    let counts: Vec<Vec<u64>> = serde_json::from_value(v["counts"].clone()).unwrap();
    assert_eq!(counts.len(), 6);
    // Ten calls a second, and one of 50 ms every tenth second: one per column of 10 s.
    assert!(counts.iter().all(|c| c.iter().sum::<u64>() == 101), "{counts:?}");
    assert_eq!(v["total"], 606);
    assert_eq!(v["slow"], 6);
    assert_eq!(v["max_ms"], 50.0);
    let (first, _) = history::latency_of(9);
    let lower: Vec<u64> = serde_json::from_value(v["lower_ns"].clone()).unwrap();
    let lowest = first.counts.iter().position(|&c| c > 0).unwrap();
    assert_eq!(lower[0], kflame::latency::slot_lower(lowest));
    assert_eq!(counts[0].last(), Some(&1), "the 50 ms call in the top row");
    let p50 = v["p50_ms"].as_f64().unwrap();
    assert!((0.008..0.014).contains(&p50), "{p50}");
    // The family's total and another family.
    let total = json(&app, &format!("/api/latency?kind=syscall&from={T0}&to={}", T0 + 60 * SEC)).await;
    assert_eq!(total["total"], 606);
    let runq = json(&app, &format!("/api/latency?kind=runq&label=cpu0&from={T0}&to={}", T0 + 60 * SEC)).await;
    assert_eq!((runq["total"].as_u64(), runq["max_ms"].as_f64()), (Some(60), Some(1.0)));
    assert_eq!(runq["lower_ns"].as_array().map(Vec::len), Some(1), "one bucket used");
    // At least 12 rows: the used bucket with empty ones around it, consecutive buckets.
    let padded =
        json(&app, &format!("/api/latency?kind=runq&label=cpu0&from={T0}&to={}&min_rows=12", T0 + 60 * SEC))
            .await;
    let lower: Vec<u64> = serde_json::from_value(padded["lower_ns"].clone()).unwrap();
    assert_eq!(lower.len(), 12);
    let slot = kflame::latency::slot_of(1_000_000);
    let at = lower.iter().position(|&l| l == kflame::latency::slot_lower(slot)).unwrap();
    assert_eq!(at, (12 - 1) / 2, "half the empty buckets below, the rest above: {lower:?}");
    assert!(lower.windows(2).all(|w| kflame::latency::slot_of(w[1]) == kflame::latency::slot_of(w[0]) + 1));
    assert_eq!(padded["upper_ns"].as_u64(), Some(kflame::latency::slot_upper(slot + 12 - 1 - at)));
    let counts: Vec<Vec<u64>> = serde_json::from_value(padded["counts"].clone()).unwrap();
    assert!(counts.iter().all(|c| c.len() == 12 && c.iter().sum::<u64>() == c[at]), "{counts:?}");
    assert_eq!(counts.iter().map(|c| c[at]).sum::<u64>(), 60);
    error(&app, &format!("/api/latency?min_rows=129&from={T0}&to={}", T0 + SEC), StatusCode::BAD_REQUEST)
        .await;
    let labels = json(&app, &format!("/api/latency/labels?from={T0}&to={}", T0 + 60 * SEC)).await;
    let got: Vec<(String, String)> = labels["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["kind"].as_str().unwrap().to_string(), l["label"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("syscall".into(), String::new()),
            ("syscall".into(), "write".into()),
            ("runq".into(), "cpu0".into())
        ]
    );
    let e = error(&app, &format!("/api/latency?kind=gpu&from={T0}&to={}", T0 + SEC), StatusCode::BAD_REQUEST)
        .await;
    assert!(e.contains("expected syscall, bio, runq, offcpu or lock"), "{e}");
    error(&app, &format!("/api/latency?columns=0&from={T0}&to={}", T0 + SEC), StatusCode::BAD_REQUEST).await;
}

/// A column of a scatter answer, decoded from its base64 little-endian values.
fn scatter_column(v: &Value, name: &str) -> Vec<f64> {
    let text = v["columns"][name].as_str().unwrap_or_else(|| panic!("no column {name}"));
    let ty = v["meta"]["types"][name].as_str().unwrap();
    let digit = |c: u8| match c {
        b'A'..=b'Z' => u32::from(c - b'A'),
        b'a'..=b'z' => u32::from(c - b'a') + 26,
        b'0'..=b'9' => u32::from(c - b'0') + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut bytes = Vec::new();
    for chunk in text.trim_end_matches('=').as_bytes().chunks(4) {
        let n = chunk.iter().fold(0u32, |a, &c| a << 6 | digit(c)) << (6 * (4 - chunk.len()));
        bytes.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    match ty {
        "f64" => bytes.chunks(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect(),
        "u8" => bytes.iter().map(|&b| f64::from(b)).collect(),
        "u16" => bytes.chunks(2).map(|b| f64::from(u16::from_le_bytes(b.try_into().unwrap()))).collect(),
        "u32" | "i32" => {
            bytes.chunks(4).map(|b| f64::from(i32::from_le_bytes(b.try_into().unwrap()))).collect()
        }
        _ => panic!("type {ty}"),
    }
}

/// The scatter of a range's outliers (kept by the watcher, one 50 ms `write` at s + 500 ms of
/// every tenth second s = 9, 19, ...) holds exactly those of the range: their times, durations,
/// task, CPU, call and stack; another host's range is empty; a bad family or range is a 400.
#[tokio::test]
async fn the_scatter_of_a_range_holds_its_outliers() {
    let (_, _, app) = setup("scatter-outliers", 60);
    let (from, to) = (T0 + 15 * SEC, T0 + 45 * SEC);
    let kept: Vec<i64> = (0..60)
        .filter(|s| s % 10 == 9)
        .map(|s| T0 + s * SEC + SEC / 2)
        .filter(|t| (from..to).contains(t))
        .collect();
    assert_eq!(kept.len(), 3);
    let v = json(&app, &format!("/api/scatter?kind=syscall&from={from}&to={to}")).await;
    assert_eq!(v["meta"]["count"].as_u64(), Some(kept.len() as u64), "{}", v["meta"]);
    assert_eq!(v["meta"]["timed"], true);
    // t0 is the first outlier's start (exact seconds), t each one's offset from it, ns.
    let first = kept[0];
    assert_eq!(v["meta"]["t0"].as_str(), Some(format!("{}.{:09}", first / SEC, first % SEC).as_str()));
    let t = scatter_column(&v, "t");
    assert_eq!(t, kept.iter().map(|k| (k - first) as f64).collect::<Vec<_>>());
    assert_eq!(scatter_column(&v, "d"), vec![50e6; kept.len()]);
    assert_eq!(scatter_column(&v, "pid"), vec![4242.0; kept.len()]);
    assert_eq!(scatter_column(&v, "tid"), vec![4243.0; kept.len()]);
    assert_eq!(scatter_column(&v, "cpu"), vec![1.0; kept.len()]);
    assert_eq!(v["meta"]["comms"], serde_json::json!(["testapp"]));
    assert_eq!(v["meta"]["events"], serde_json::json!(["syscall:write"]));
    let names: Vec<&str> = v["meta"]["names"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for frame in history::OUTLIER_STACK.split(';') {
        assert!(names.contains(&frame), "{frame} not in {names:?}");
    }
    let title = v["meta"]["title"].as_str().unwrap();
    assert!(
        title.starts_with("System call outliers, 2025-11-24T16:00:15Z to 2025-11-24T16:00:45Z"),
        "{title}"
    );
    // Times as the other routes take them (RFC 3339), and the one host of the history.
    let rfc = json(
        &app,
        "/api/scatter?kind=syscall&from=2025-11-24T16:00:15Z&to=2025-11-24T16:00:45Z&host=testhost",
    )
    .await;
    assert_eq!(rfc["columns"], v["columns"]);
    let other = json(&app, &format!("/api/scatter?kind=syscall&from={from}&to={to}&host=db9")).await;
    assert_eq!(other["meta"]["count"], 0);
    // Without bounds: the history's own, every outlier.
    let all = json(&app, "/api/scatter?kind=syscall").await;
    assert_eq!(all["meta"]["count"], 6);
    let e = error(&app, &format!("/api/scatter?kind=gpu&from={from}&to={to}"), StatusCode::BAD_REQUEST).await;
    assert!(e.contains("expected syscall, bio, runq, offcpu or lock"), "{e}");
    let e =
        error(&app, &format!("/api/scatter?kind=syscall&from={to}&to={from}"), StatusCode::BAD_REQUEST).await;
    assert!(e.contains("bad range"), "{e}");
    let e = error(&app, "/api/scatter?kind=syscall&from=yesterday", StatusCode::BAD_REQUEST).await;
    assert!(e.contains("from=\"yesterday\""), "{e}");
    let e = error(&app, "/api/scatter", StatusCode::BAD_REQUEST).await;
    assert!(e.contains("kind=syscall&from&to"), "{e}");
}

#[tokio::test]
async fn series_keep_their_extremes_when_resampled() {
    let (_, _, app) = setup("series", 900);
    let v = json(
        &app,
        &format!("/api/series?names=cpu.usr,io.util&label=&from={T0}&to={}&points=50", T0 + 900 * SEC),
    )
    .await;
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "io.util has only the label sda: {v}");
    let points = series[0]["points"].as_array().unwrap();
    assert!(points.len() <= 50 && points.len() >= 40, "{}", points.len());
    let max = points.iter().map(|p| p[2].as_f64().unwrap()).fold(f64::MIN, f64::max);
    let min = points.iter().map(|p| p[1].as_f64().unwrap()).fold(f64::MAX, f64::min);
    let values: Vec<f64> = (0..900)
        .map(|s| {
            let v = history::metrics_of(s)
                .into_iter()
                .find(|(n, l, _)| n == "cpu.usr" && l.is_empty())
                .unwrap()
                .2;
            // What the store keeps of a value (its documented resolution).
            kflame_store::stored_metric_value(v)
        })
        .collect();
    assert_eq!(max, values.iter().copied().fold(f64::MIN, f64::max));
    assert_eq!(min, values.iter().copied().fold(f64::MAX, f64::min));
    let count: u64 = points.iter().map(|p| p[4].as_u64().unwrap()).sum();
    assert_eq!(count, 900);
    // Every label of a name.
    let v = json(&app, "/api/series?names=cpu.sys&points=10").await;
    let labels: Vec<&str> =
        v["series"].as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["", "cpu0", "cpu1"]);
}

/// `/api/info` sends the metric catalog, so that the page reads each metric's unit and chart
/// from it: every metric of the watcher has its entry, each group listed once, in order.
#[tokio::test]
async fn info_sends_the_metric_catalog() {
    let (_, _, app) = setup("catalog", 30);
    let v = json(&app, "/api/info").await;
    let catalog = v["catalog"].as_array().unwrap();
    assert_eq!(catalog.len(), kflame_store::metrics::METRICS.len());
    let unit_of = |name: &str| {
        catalog.iter().find(|m| m["name"] == name).map(|m| (m["unit"].clone(), m["group"].clone()))
    };
    assert_eq!(unit_of("mem.available"), Some((Value::from("%"), Value::from("mem-util"))));
    assert_eq!(unit_of("io.read_bytes"), Some((Value::from("bytes/s"), Value::from("io"))));
    // A stored name the catalog does not know (another version's) has no entry: the page
    // charts it by its prefix.
    assert_eq!(unit_of("cpu.softirq"), None);
    let groups: Vec<&str> = v["groups"].as_array().unwrap().iter().map(|g| g[0].as_str().unwrap()).collect();
    assert_eq!(groups.first(), Some(&"cpu"));
    for m in catalog {
        assert_eq!(groups.iter().filter(|g| m["group"] == **g).count(), 1, "{m}");
    }
}

/// `layout=columns` (what the page asks for) holds the same points as the array per point.
#[tokio::test]
async fn series_as_columns_hold_the_same_points() {
    let (_, _, app) = setup("columns", 900);
    let q = format!("names=cpu.usr,cpu.sys,io.util&from={T0}&to={}&points=70", T0 + 900 * SEC);
    let rows = json(&app, &format!("/api/series?{q}")).await;
    let cols = json(&app, &format!("/api/series?{q}&layout=columns")).await;
    let (rows, cols) = (rows["series"].as_array().unwrap(), cols["series"].as_array().unwrap());
    assert_eq!(rows.len(), cols.len());
    assert!(rows.len() >= 3, "{rows:?}");
    for (r, c) in rows.iter().zip(cols) {
        assert_eq!((&r["name"], &r["label"]), (&c["name"], &c["label"]));
        let points = r["points"].as_array().unwrap();
        assert!(points.len() > 10);
        let t0 = c["t0"].as_i64().unwrap();
        for (i, p) in points.iter().enumerate() {
            let t = t0 + (c["t"][i].as_f64().unwrap() * 1e6).round() as i64;
            assert_eq!(p[0].as_i64().unwrap(), t, "{} point {i}", r["name"]);
            for (k, col) in ["min", "max", "avg", "count"].iter().enumerate() {
                assert_eq!(p[k + 1].as_f64(), c[col][i].as_f64(), "{} {col} {i}", r["name"]);
            }
        }
        assert_eq!(c["t"].as_array().unwrap().len(), points.len());
    }
}

/// The analyzer as `kflame serve` gives it to the server.
#[derive(Debug)]
struct Analyzer;

impl kflame_serve::Explain for Analyzer {
    fn sign(&self, text: &str) -> Option<kflame_serve::Signed> {
        kflame_analyze::reports::sign_text(text)
            .map(|(signature, kernel)| kflame_serve::Signed { signature, kernel })
    }
    fn explain(&self, text: &str) -> Option<serde_json::Value> {
        serde_json::to_value(kflame_analyze::reports::explain_text(text, "history")?).ok()
    }
}

/// A served report explained: the analyzer's culprit and signature for its text, the reports
/// of the same signature in the history (two, on two hosts), and the CPU profile of the
/// seconds before it.
#[tokio::test]
async fn reports_are_explained_with_similar_ones_and_the_minute_before() {
    let path = dir("explained").join("history.db");
    let hist = history::write(&path, 200, false).unwrap();
    let texts = history::add_similar_reports(&path).unwrap();
    let explain: std::sync::Arc<dyn kflame_serve::Explain> = std::sync::Arc::new(Analyzer);
    let app = kflame_serve::app_explained(
        path,
        Token::new(TOKEN).unwrap(),
        ADDR.parse().unwrap(),
        false,
        Some(explain),
    )
    .unwrap();
    let r = json(&app, &format!("/api/report?time={}&before=30", texts.warning_ns)).await;
    let want = kflame_analyze::reports::explain_text(&texts.warning, "history").unwrap();
    assert_eq!(r["signature"].as_str(), Some(want.signature.as_str()));
    assert_eq!(r["analysis"]["signature"].as_str(), Some(want.signature.as_str()));
    let culprit = r["analysis"]["error"]["culprit"]["function"].as_str();
    assert_eq!(culprit, want.error.culprit.as_ref().map(|c| c.function.as_str()));
    assert!(culprit.is_some(), "{}", r["analysis"]);
    let s = &r["similar"];
    assert_eq!(s["count"], 2, "{s}");
    assert_eq!(s["hosts"].as_array().unwrap().len(), 2, "{s}");
    assert_eq!(s["kernels"], serde_json::json!([want.error.kernel.as_deref().unwrap()]), "{s}");
    assert_eq!(s["first_seen"].as_i64(), Some(texts.earlier_ns));
    assert_eq!(s["last_seen"].as_i64(), Some(texts.warning_ns));
    assert_eq!(r["before"]["seconds"], 30);
    assert!(r["before"]["cpu"]["total"].as_u64().unwrap() > 0);
    // The report of another signature has its own group.
    let other = json(&app, &format!("/api/report?time={}", hist.report_ns)).await;
    assert_ne!(other["signature"], r["signature"]);
    // The range's reports grouped by signature, most frequent first.
    let g = json(&app, "/api/reports").await;
    assert_eq!(g["explained"], true);
    let groups = g["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{g}");
    assert_eq!(groups[0]["signature"], r["signature"]);
    assert_eq!((groups[0]["count"].as_u64(), groups[1]["count"].as_u64()), (Some(2), Some(1)));
    assert_eq!(groups[0]["hosts"], serde_json::json!(["otherhost", "testhost"]));
    assert_eq!(groups[0]["kernels"], s["kernels"]);
    assert_eq!(groups[0]["first_seen"].as_i64(), Some(texts.earlier_ns));
    assert_eq!(groups[1]["signature"], other["signature"]);
    // Only the range asked for.
    let late = json(&app, &format!("/api/reports?from={}", texts.earlier_ns + 1)).await;
    let counts: Vec<u64> =
        late["groups"].as_array().unwrap().iter().map(|g| g["count"].as_u64().unwrap()).collect();
    assert_eq!(counts, [1, 1], "{late}");
}

#[tokio::test]
async fn events_reports_and_comparisons() {
    let (_, hist, app) = setup("events", 200);
    let v = json(&app, "/api/events").await;
    let types: Vec<&str> =
        v["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["trigger", "capture", "report"]);
    assert_eq!(v["events"][2]["title"], HOSTILE_TITLE);
    let r = json(&app, &format!("/api/report?time={}", hist.report_ns)).await;
    assert!(r["text"].as_str().unwrap().contains("cut here"));
    assert_eq!(r["profile"]["total"].as_u64(), Some(1));
    assert_eq!(
        error(&app, &format!("/api/report?time={}", hist.report_ns + 1), StatusCode::NOT_FOUND).await,
        format!("no kernel report at {} (2025-11-24T16:02:00.000000001Z)", hist.report_ns + 1)
    );
    // Without an explainer: no analysis, no signature; the profile before the report is
    // the CPU profile of its host in the 60 s before it.
    assert!(r["analysis"].is_null() && r["signature"].is_null() && r["similar"].is_null());
    let before = &r["before"]["cpu"];
    assert_eq!(r["before"]["seconds"], 60);
    assert!(before["total"].as_u64().unwrap() > 0, "{before}");
    assert_eq!(before["info"]["to"].as_i64(), Some(hist.report_ns));
    assert!(r["before"]["offcpu"].is_null());
    // Not explained: grouped by kind and stored title.
    let g = json(&app, "/api/reports").await;
    assert_eq!(g["explained"], false);
    assert_eq!(g["groups"][0]["signature"].as_str(), Some(format!("warning:{HOSTILE_TITLE}").as_str()));
    assert_eq!(g["groups"][0]["count"], 1);
    assert_eq!(
        error(&app, &format!("/api/report?time={}&before=0", hist.report_ns), StatusCode::BAD_REQUEST).await,
        "before=0: expected 1 to 3600 seconds"
    );
    // Differential: 20..40 s against 0..20 s.
    let d = json(
        &app,
        &format!(
            "/api/diff?kind=cpu&from={}&to={}&base_from={T0}&base_to={}",
            T0 + 20 * SEC,
            T0 + 40 * SEC,
            T0 + 20 * SEC
        ),
    )
    .await;
    assert_eq!(d["profile"]["differential"], true);
    let after: u64 = expected([&hist.samples[..]], T0 + 20 * SEC, T0 + 40 * SEC).values().sum();
    let before: u64 = expected([&hist.samples[..]], T0, T0 + 20 * SEC).values().sum();
    assert_eq!(d["total"].as_u64(), Some(after));
    assert_eq!(d["info"]["base_total"].as_str(), Some(before.to_string().as_str()));
    // Against the capture.
    let d =
        json(&app, &format!("/api/diff?from={}&to={}&base_capture={}", T0, T0 + 10 * SEC, hist.capture_id))
            .await;
    assert_eq!(d["info"]["base_samples"].as_u64(), Some(hist.capture.len() as u64));
    assert!(error(&app, "/api/diff?from=1&to=2", StatusCode::BAD_REQUEST).await.contains("base_from"));
}

#[tokio::test]
async fn bad_requests_get_400_with_a_message() {
    let (_, _, app) = setup("bad", 30);
    let cases = [
        ("/api/profile?kind=gpu", "unknown profile kind \"gpu\""),
        ("/api/profile?from=20&to=10", "bad range: from=20"),
        ("/api/profile?from=yesterday", "from=\"yesterday\""),
        ("/api/profile?format=png", "format=\"png\""),
        ("/api/profile?offset_from_ms=500&offset_to_ms=100", "bad offsets"),
        ("/api/series?names=cpu.usr&points=0", "points"),
        ("/api/series?names=cpu.usr&layout=rows", "layout"),
        ("/api/series", "names: missing"),
        ("/api/heatmap?row_ms=7", "row_ms=7"),
        ("/api/heatmap?from=0&to=1764000000000000000", "at most 21600 s"),
        ("/api/report", "time: missing"),
    ];
    for (uri, want) in cases {
        let msg = error(&app, uri, StatusCode::BAD_REQUEST).await;
        assert!(msg.contains(want), "{uri}: {msg}");
    }
    assert!(error(&app, "/api/profile?capture=99", StatusCode::NOT_FOUND).await.contains("capture 99"));
    assert!(error(&app, "/api/live", StatusCode::NOT_FOUND).await.contains("--live"));
}

#[tokio::test]
async fn a_database_that_goes_away_or_rots_is_a_5xx_not_a_crash() {
    let (path, _, app) = setup("gone", 30);
    json(&app, "/api/info").await;
    let saved = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let msg = error(&app, "/api/info", StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(msg.contains("history.db: the history database is gone"), "{msg}");
    // Back, but every page overwritten with garbage.
    let junk: Vec<u8> = saved.iter().enumerate().map(|(i, _)| (i * 31 % 251) as u8).collect();
    std::fs::write(&path, &junk).unwrap();
    let (status, _, body) = send(&app, authed("/api/profile?kind=cpu")).await;
    assert!(status.is_server_error(), "{status}");
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(v["error"].as_str().unwrap().contains("history.db"), "{v}");
    // The server still answers.
    assert_eq!(send(&app, authed("/viewer/model.js")).await.0, StatusCode::OK);
}

#[test]
fn a_foreign_file_or_a_remote_address_is_refused_at_start() {
    let d = dir("start");
    let foreign = d.join("foreign.db");
    std::fs::write(&foreign, b"not a database at all, just text\n").unwrap();
    let rt = kflame_serve::runtime().unwrap();
    let config = |db: &Path, listen: &str, allow_remote| kflame_serve::Config {
        db: db.to_path_buf(),
        remote: None,
        listen: listen.parse().unwrap(),
        allow_remote,
        token: Token::new(TOKEN).unwrap(),
        live: false,
        explain: None,
    };
    let e = rt.block_on(kflame_serve::bind(config(&foreign, "127.0.0.1:0", false))).unwrap_err();
    assert!(e.to_string().contains("foreign.db"), "{e}");
    let good = d.join("h.db");
    history::write(&good, 5, false).unwrap();
    let e = rt.block_on(kflame_serve::bind(config(&good, "0.0.0.0:0", false))).unwrap_err();
    assert!(e.to_string().contains("--allow-remote"), "{e}");
    assert!(Token::new(" \n").is_err());
    assert!(Token::new("a b").is_err());
    assert_eq!(Token::new("  abc-1\n").unwrap().as_str(), "abc-1");
}

/// A server bound on loopback over a history of `seconds` seconds, serving on its own
/// runtime until [`Served::stop`].
struct Served {
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), kflame_serve::ServeError>>,
}

fn serve_on_loopback(
    name: &str,
    seconds: i64,
    live: bool,
    tune: impl FnOnce(&mut kflame_serve::Bound),
) -> Served {
    let db = dir(name).join("h.db");
    history::write(&db, seconds, false).unwrap();
    let rt = kflame_serve::runtime().unwrap();
    let config = kflame_serve::Config {
        db,
        remote: None,
        listen: "127.0.0.1:0".parse().unwrap(),
        allow_remote: false,
        token: Token::new(TOKEN).unwrap(),
        live,
        explain: None,
    };
    let mut bound = rt.block_on(kflame_serve::bind(config)).unwrap();
    tune(&mut bound);
    let addr = bound.addr();
    assert_eq!(bound.url(), format!("http://{addr}/?token={TOKEN}"));
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = rt.spawn(bound.serve(async move {
        let _ = stop_rx.await;
    }));
    Served { rt, addr, stop, server }
}

impl Served {
    /// Stops the server and checks that it ends, bounded.
    fn stop(self) {
        self.stop.send(()).unwrap();
        let done = self
            .rt
            .block_on(async { tokio::time::timeout(std::time::Duration::from_secs(10), self.server).await });
        assert!(matches!(done, Ok(Ok(Ok(())))), "the server did not stop: {done:?}");
    }
}

#[test]
fn over_loopback() {
    use std::io::{Read, Write};
    let served = serve_on_loopback("loopback", 20, true, |_| {});
    let addr = served.addr;
    let request = |extra: &str, path: &str| {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    assert!(request("", "/api/info").starts_with("HTTP/1.1 401"));
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let info = request(&auth, "/api/info");
    assert!(info.starts_with("HTTP/1.1 200") && info.contains("\"live\":true"), "{info}");
    // A live stream sends a tick within about a second, and ends at shutdown.
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /api/live HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\n").unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = String::new();
    while !got.contains("event: tick") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "stream closed early: {got}");
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let body = &info[info.find("\r\n\r\n").unwrap() + 4..];
    let last = serde_json::from_str::<Value>(body).unwrap()["to"].as_i64().unwrap();
    // The newest time, and the file's version (it changes with every write).
    assert!(got.contains(&format!("data: {{\"to\":{last},\"version\":\"")), "{got}");
    served.stop();
}

#[tokio::test]
async fn a_live_stream_without_a_socket_ticks() {
    let path = dir("live").join("history.db");
    history::write(&path, 5, false).unwrap();
    let app = kflame_serve::app(path, Token::new(TOKEN).unwrap(), ADDR.parse().unwrap(), true).unwrap();
    // The router stays alive meanwhile (as a server's does); its end ends the stream.
    let resp = app.clone().oneshot(authed("/api/live")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = resp.into_body().into_data_stream();
    use futures_util::StreamExt;
    let first =
        tokio::time::timeout(std::time::Duration::from_secs(5), body.next()).await.unwrap().unwrap().unwrap();
    let text = String::from_utf8_lossy(&first);
    assert!(text.contains("event: tick") && text.contains("\"to\":"), "{text}");
    drop(app);
}

/// The distinct names of the `(N stacks below P merged)` frames of viewer JSON (a name is
/// stored once, however many frames carry it), and the largest N.
fn merged_frames(v: &Value) -> (Vec<String>, u64) {
    let names: Vec<String> = v["profile"]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .filter(|n| n.ends_with(" merged)"))
        .collect();
    let n = names.iter().map(|n| n[1..].split(' ').next().unwrap().parse::<u64>().unwrap()).max();
    (names, n.unwrap_or(0))
}

#[tokio::test]
async fn narrow_stacks_are_merged_with_the_total_kept_exact() {
    let (_, hist, app) = setup("prune", 300);
    let (from, to) = (T0, T0 + 300 * SEC);
    let want: u64 = expected([&hist.samples[..]], from, to).values().sum();
    let distinct = expected([&hist.samples[..]], from, to).len() as u64;
    // Nothing merged: every stack of the range.
    let full = json(&app, &format!("/api/profile?kind=cpu&from={from}&to={to}&prune=0")).await;
    assert!(full["info"]["pruned"].is_null());
    assert_eq!(merged_frames(&full).0, Vec::<String>::new());
    // Stacks under 0.5 % of the total: merged into the frame above them, the total exact.
    let v = json(&app, &format!("/api/profile?kind=cpu&from={from}&to={to}&prune=0.5")).await;
    assert_eq!(v["total"].as_u64(), Some(want));
    assert_eq!(v["profile"]["total"].as_str(), Some(want.to_string().as_str()));
    let pruned = &v["info"]["pruned"];
    assert_eq!(pruned["of"].as_u64(), Some(distinct));
    let (names, largest) = merged_frames(&v);
    assert!(!names.is_empty() && names.iter().all(|n| n.contains("below 0.5% merged")), "{names:?}");
    let n = pruned["stacks"].as_u64().unwrap();
    assert!(largest <= n && n < distinct, "{largest} <= {n} < {distinct}");
    assert!(n > distinct / 2, "most of the {distinct} stacks of a real capture are narrow: {n}");
    assert!(v["profile"]["notes"].as_str().unwrap().contains(&format!("{n} of {distinct} stacks")));
    assert!(v["nodes"].as_str().unwrap().len() < full["nodes"].as_str().unwrap().len() / 2);
    // The default cut-off is a tenth of a pixel of a wide graph: this small history keeps
    // more than with 0.5 %.
    let d = json(&app, &format!("/api/profile?kind=cpu&from={from}&to={to}")).await;
    assert_eq!(d["total"].as_u64(), Some(want));
    assert!(d["info"]["pruned"].is_null() || d["info"]["pruned"]["stacks"].as_u64().unwrap() < n);
    // A bad cut-off.
    let e =
        error(&app, &format!("/api/profile?from={from}&to={to}&prune=100"), StatusCode::BAD_REQUEST).await;
    assert!(e.contains("prune=100"), "{e}");
    let e = error(&app, &format!("/api/profile?from={from}&to={to}&prune=x"), StatusCode::BAD_REQUEST).await;
    assert!(e.contains("percentage"), "{e}");
}

#[tokio::test]
async fn closed_ranges_carry_an_etag_answers_are_compressed_and_timed() {
    let (_, _, app) = setup("etag", 300);
    // Ends 150 s before the newest data: closed.
    let closed = format!("/api/profile?kind=cpu&from={}&to={}", T0 + 10 * SEC, T0 + 150 * SEC);
    let (status, headers, body) = send(&app, authed(&closed)).await;
    assert_eq!(status, StatusCode::OK);
    let tag = headers[header::ETAG].to_str().unwrap().to_string();
    assert_eq!(headers[header::CACHE_CONTROL], "private, no-cache");
    let timing = headers["server-timing"].to_str().unwrap();
    assert!(timing.starts_with("store;dur=") && timing.contains("encode;dur="), "{timing}");
    // Asked again with the tag: 304 without a body; without it: the same body (kept).
    let req = get(&closed)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::IF_NONE_MATCH, &tag)
        .body(Body::empty())
        .unwrap();
    let (status, h304, none) = send(&app, req).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(none.is_empty());
    assert_eq!(h304[header::ETAG].to_str().unwrap(), tag);
    let (_, again, same) = send(&app, authed(&closed)).await;
    assert_eq!(same, body);
    assert_eq!(again[header::ETAG].to_str().unwrap(), tag);
    // Another range, another tag; a range up to the newest data is open: no tag, not stored.
    let (_, other, _) =
        send(&app, authed(&format!("/api/profile?kind=cpu&from={}&to={}", T0, T0 + 150 * SEC))).await;
    assert_ne!(other[header::ETAG].to_str().unwrap(), tag);
    let (_, open, _) = send(&app, authed(&format!("/api/profile?kind=cpu&from={}", T0 + 10 * SEC))).await;
    assert!(open.get(header::ETAG).is_none());
    assert_eq!(open[header::CACHE_CONTROL], "no-store");
    // gzip when the browser takes it: the same JSON.
    for enc in ["gzip", "br"] {
        let req = get(&closed)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .header(header::ACCEPT_ENCODING, enc)
            .body(Body::empty())
            .unwrap();
        let (status, h, packed) = send(&app, req).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h[header::CONTENT_ENCODING], enc);
        assert!(packed.len() < body.len() / 2, "{enc}: {} of {}", packed.len(), body.len());
        if enc == "gzip" {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&packed[..]), &mut out).unwrap();
            assert_eq!(out, body);
        }
    }
}

/// A copy of the real watched history with cgroups (tests/data/README.md), brought to the
/// store's current schema, and the router on it.
fn real_history(name: &str) -> (PathBuf, Router) {
    let path = dir(name).join("history.db");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/watched-cgroups.db"), &path)
        .unwrap();
    drop(kflame_store::Sqlite::open(&path, kflame_store::OpenMode::Write).unwrap());
    let app =
        kflame_serve::app(path.clone(), Token::new(TOKEN).unwrap(), ADDR.parse().unwrap(), false).unwrap();
    (path, app)
}

#[tokio::test]
async fn a_cgroup_filter_on_a_real_watched_history() {
    use kflame_store::{Kind, ProfileQuery, Query};
    let (path, app) = real_history("cgroups");
    let folded = async |q: &str| {
        let (status, _, body) = send(&app, authed(&format!("/api/profile?kind=cpu&format=folded{q}"))).await;
        assert_eq!(status, StatusCode::OK, "{q}: {}", String::from_utf8_lossy(&body));
        parse_folded(&body)
    };
    let all = folded("").await;
    let burn = folded("&cgroup=/kflame-test.slice/burn.service").await;
    let dd = folded("&cgroup=%2Fkflame-test.slice%2Fdd.service").await;
    let slice = folded("&cgroup=/kflame-test.slice").await;
    // The samples of a cgroup are its processes' (the comm is the stack's first frame).
    assert!(!burn.is_empty() && burn.keys().all(|s| s.starts_with(b"sha256sum;")), "{burn:?}");
    assert!(!dd.is_empty() && dd.keys().all(|s| s.starts_with(b"dd;")), "{dd:?}");
    // A cgroup holds its children: the slice is the two services.
    let sum = |m: &BTreeMap<Vec<u8>, u64>| m.values().sum::<u64>();
    let mut both = burn.clone();
    for (s, n) in &dd {
        *both.entry(s.clone()).or_insert(0) += n;
    }
    assert_eq!(slice, both);
    assert!(sum(&all) > sum(&slice));
    // The same as the store's own query, in every view of it: viewer data, heat map, diff.
    let db = kflame_store::Sqlite::open(&path, kflame_store::OpenMode::Read).unwrap();
    let (lo, hi) = db.time_bounds().unwrap().unwrap();
    let mut q = ProfileQuery::new(Kind::Cpu, lo, hi + 1);
    q.cgroup = Some("/kflame-test.slice/burn.service");
    let want = db.profile(&q).unwrap();
    assert_eq!(want.stacks.total().whole(), sum(&burn));
    let cg = "cgroup=/kflame-test.slice/burn.service";
    let v = json(&app, &format!("/api/profile?kind=cpu&{cg}")).await;
    assert_eq!(v["total"].as_u64(), Some(sum(&burn)));
    assert_eq!(v["info"]["cgroup"], "/kflame-test.slice/burn.service");
    let h = json(&app, &format!("/api/heatmap?kind=cpu&{cg}")).await;
    assert_eq!(h["total"].as_u64(), Some(sum(&burn)));
    let mid = lo + (hi - lo) / 2;
    let d =
        json(&app, &format!("/api/diff?kind=cpu&from={mid}&to={}&base_from={lo}&base_to={mid}&{cg}", hi + 1))
            .await;
    let (a, b) = (
        folded(&format!("&from={mid}&to={}&{cg}", hi + 1)).await,
        folded(&format!("&from={lo}&to={mid}&{cg}")).await,
    );
    assert_eq!(d["total"].as_u64(), Some(sum(&a)));
    assert_eq!(d["info"]["base_total"].as_str(), Some(sum(&b).to_string().as_str()));
    // A cgroup without samples is an empty profile; a path not from the root is a bad request.
    let none = json(&app, "/api/profile?kind=cpu&cgroup=/no.such.slice").await;
    assert_eq!(none["total"].as_u64(), Some(0));
    let e = error(&app, "/api/profile?kind=cpu&cgroup=system.slice", StatusCode::BAD_REQUEST).await;
    assert!(e.contains("/system.slice/foo.service"), "{e}");
}

// ---- a fleet: three hosts in one history ----------------------------------------------------

/// A SQLite history read as a fleet's store is read (through `Query` alone), with the labels
/// a ClickHouse store keeps for its hosts (a SQLite file keeps none).
struct Labelled(std::sync::Mutex<kflame_store::Sqlite>);

impl Labelled {
    fn db(&self) -> std::sync::MutexGuard<'_, kflame_store::Sqlite> {
        self.0.lock().unwrap()
    }
}

impl kflame_store::Query for Labelled {
    fn profile(
        &self,
        q: &kflame_store::ProfileQuery<'_>,
    ) -> Result<kflame_store::Profile, kflame_store::StoreError> {
        self.db().profile(q)
    }
    fn samples(
        &self,
        q: &kflame_store::ProfileQuery<'_>,
    ) -> Result<Vec<kflame_store::SamplePoint>, kflame_store::StoreError> {
        self.db().samples(q)
    }
    fn stack_text(&self, id: kflame_store::StackId) -> Result<Vec<u8>, kflame_store::StoreError> {
        self.db().stack_text(id)
    }
    fn stack_texts(&self, ids: &[kflame_store::StackId]) -> Result<Vec<Vec<u8>>, kflame_store::StoreError> {
        self.db().stack_texts(ids)
    }
    fn series(
        &self,
        q: &kflame_store::SeriesQuery<'_>,
    ) -> Result<Vec<kflame_store::Series>, kflame_store::StoreError> {
        self.db().series(q)
    }
    fn metric_names(&self, host: Option<&str>) -> Result<Vec<(String, String)>, kflame_store::StoreError> {
        self.db().metric_names(host)
    }
    fn outliers(
        &self,
        kind: kflame_store::LatencyKind,
        from: i64,
        to: i64,
        host: Option<&str>,
    ) -> Result<Vec<kflame_store::StoredEvent>, kflame_store::StoreError> {
        self.db().outliers(kind, from, to, host)
    }
    fn latency(
        &self,
        q: &kflame_store::LatencyQuery<'_>,
    ) -> Result<Vec<kflame_store::LatencySeries>, kflame_store::StoreError> {
        self.db().latency(q)
    }
    fn latency_labels(
        &self,
        host: Option<&str>,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<(kflame_store::LatencyKind, String)>, kflame_store::StoreError> {
        self.db().latency_labels(host, from_ns, to_ns)
    }
    fn events(
        &self,
        from_ns: i64,
        to_ns: i64,
        host: Option<&str>,
    ) -> Result<Vec<kflame_store::Event>, kflame_store::StoreError> {
        self.db().events(from_ns, to_ns, host)
    }
    fn capture_events(
        &self,
        capture: kflame_store::CaptureId,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<kflame_store::StoredEvent>, kflame_store::StoreError> {
        self.db().capture_events(capture, from_ns, to_ns)
    }
    fn hosts(&self) -> Result<Vec<String>, kflame_store::StoreError> {
        self.db().hosts()
    }
    fn host_labels(&self) -> Result<Vec<(String, String)>, kflame_store::StoreError> {
        Ok(history::FLEET.iter().map(|(h, l)| (h.to_string(), l.to_string())).collect())
    }
    fn time_bounds(&self) -> Result<Option<(i64, i64)>, kflame_store::StoreError> {
        self.db().time_bounds()
    }
}

/// The fleet's history, the server on its file, and the server on the same file read as a
/// labelled remote store.
fn fleet_setup(name: &str, seconds: i64) -> (history::Fleet, Router, Router) {
    let path = dir(name).join("fleet.db");
    let fleet = history::write_fleet(&path, seconds).unwrap();
    let token = || Token::new(TOKEN).unwrap();
    let app = kflame_serve::app(path.clone(), token(), ADDR.parse().unwrap(), false).unwrap();
    let sqlite = kflame_store::Sqlite::open(&path, kflame_store::OpenMode::Read).unwrap();
    let store = kflame_serve::RemoteStore {
        store: std::sync::Arc::new(Labelled(std::sync::Mutex::new(sqlite))),
        name: "labelled".into(),
    };
    let labelled = kflame_serve::app_with_store(store, token(), ADDR.parse().unwrap(), false);
    (fleet, app, labelled)
}

/// A query parameter's value, percent-encoded.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn has_frame(stack: &[u8], frame: &str) -> bool {
    stack.split(|&b| b == b';').any(|f| f == frame.as_bytes())
}

#[tokio::test]
async fn a_fleet_selects_hosts_merges_them_and_breaks_a_frame_down_by_host() {
    let (fleet, app, labelled) = fleet_setup("fleet", 60);
    let (from, to) = (T0 + 5 * SEC + 1234, T0 + 47 * SEC);
    let all: Vec<&str> = fleet.hosts.iter().map(|(h, _)| h.as_str()).collect();
    let of = |names: &[&str], from: i64, to: i64| {
        expected(
            fleet.hosts.iter().filter(|(h, _)| names.contains(&h.as_str())).map(|(_, w)| &w[..]),
            from,
            to,
        )
    };
    // The hosts and their labels (none in a SQLite file; a fleet's store keeps them).
    let info = json(&app, "/api/info").await;
    assert_eq!(info["hosts"], serde_json::json!(all));
    assert_eq!(info["host_labels"], serde_json::json!({ "db-1": "", "db-2": "", "web-1": "" }));
    let info = json(&labelled, "/api/info").await;
    let labels: serde_json::Map<String, Value> =
        history::FLEET.iter().map(|(h, l)| (h.to_string(), Value::from(*l))).collect();
    assert_eq!(info["host_labels"], Value::Object(labels));
    // Every host merged, one, two, all three named: exactly their samples, in the profile,
    // the heat map and the differential graph, through the file and through `Query` alone.
    for sel in
        [vec![], vec!["db-1"], vec!["web-1"], vec!["db-2", "web-1"], vec!["web-1", "db-1"], all.clone()]
    {
        let hq = if sel.is_empty() { String::new() } else { format!("&hosts={}", sel.join(",")) };
        let names = if sel.is_empty() { &all } else { &sel };
        let want = of(names, from, to);
        let total: u64 = want.values().sum();
        assert!(total > 0);
        for app in [&app, &labelled] {
            let (status, _, body) =
                send(app, authed(&format!("/api/profile?kind=cpu&from={from}&to={to}{hq}&format=folded")))
                    .await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(parse_folded(&body), want, "{sel:?}");
            let v = json(app, &format!("/api/profile?kind=cpu&from={from}&to={to}{hq}")).await;
            assert_eq!(v["total"].as_u64(), Some(total), "{sel:?}");
            let mut shown = sel.clone();
            shown.sort();
            let shown = if sel.is_empty() { Value::Null } else { serde_json::json!(shown) };
            assert_eq!(v["info"]["hosts"], shown);
            let h = json(app, &format!("/api/heatmap?kind=cpu&from={from}&to={to}{hq}")).await;
            assert_eq!(h["total"].as_u64(), Some(total), "{sel:?}");
        }
        let d =
            json(&app, &format!("/api/diff?kind=cpu&from={from}&to={to}&base_from={T0}&base_to={from}{hq}"))
                .await;
        assert_eq!(d["total"].as_u64(), Some(total));
        let before: u64 = of(names, T0, from).values().sum();
        assert_eq!(d["info"]["base_total"].as_str(), Some(before.to_string().as_str()));
    }
    // `host` and `hosts` together: both hold. A host the history lacks: nothing.
    let v = json(&app, &format!("/api/profile?from={from}&to={to}&hosts=db-1,db-2&host=db-2")).await;
    assert_eq!(v["total"].as_u64(), Some(of(&["db-2"], from, to).values().sum()));
    let v = json(&app, &format!("/api/profile?from={from}&to={to}&hosts=nope")).await;
    assert_eq!(v["total"].as_u64(), Some(0));
    // Series and events of the chosen hosts only.
    let v =
        json(&app, &format!("/api/series?names=cpu.usr&label=&from={from}&to={to}&hosts=web-1,db-1")).await;
    let hosts: Vec<&str> =
        v["series"].as_array().unwrap().iter().map(|s| s["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["db-1", "web-1"]);
    let v = json(&app, &format!("/api/series?names=cpu.usr&label=&from={from}&to={to}")).await;
    assert_eq!(v["series"].as_array().unwrap().len(), 3);
    let events = |v: Value| -> Vec<(String, String)> {
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["type"].as_str().unwrap().to_string(), e["host"].as_str().unwrap().to_string()))
            .collect()
    };
    let ev = |s: &str, h: &str| (s.to_string(), h.to_string());
    assert_eq!(events(json(&app, "/api/events").await), [ev("trigger", "db-2"), ev("report", "web-1")]);
    assert_eq!(events(json(&app, "/api/events?hosts=db-1,db-2").await), [ev("trigger", "db-2")]);
    assert_eq!(events(json(&app, "/api/events?hosts=web-1").await), [ev("report", "web-1")]);
    assert_eq!(events(json(&app, "/api/events?hosts=db-1").await), []);

    // The per-host breakdown of a frame only web-1 runs and of a frame every host runs (the
    // second frame of db-1's first sample in the range), computed from what was written.
    let common = {
        let w = fleet.hosts[0].1.iter().find(|w| w.time_ns >= from).unwrap();
        let frames: Vec<&[u8]> = w.stack.split(|&b| b == b';').collect();
        String::from_utf8(frames[1].to_vec()).unwrap()
    };
    for frame in [history::WEB_FRAME, common.as_str()] {
        for sel in [None, Some(vec!["db-1", "web-1"]), Some(vec!["db-2"])] {
            let hq = sel.as_ref().map_or(String::new(), |s| format!("&hosts={}", s.join(",")));
            let mut want: Vec<(String, u64, u64)> = fleet
                .hosts
                .iter()
                .filter(|(h, _)| sel.as_ref().is_none_or(|s| s.contains(&h.as_str())))
                .map(|(h, ws)| {
                    let inside = ws.iter().filter(|w| w.time_ns >= from && w.time_ns < to);
                    let total = inside.clone().count() as u64;
                    (h.clone(), inside.filter(|w| has_frame(&w.stack, frame)).count() as u64, total)
                })
                .collect();
            want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            for app in [&app, &labelled] {
                let uri = format!("/api/frame_hosts?frame={}&kind=cpu&from={from}&to={to}{hq}", enc(frame));
                let v = json(app, &uri).await;
                let got: Vec<(String, u64, u64)> = v["hosts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        let (i, t) = (r["in_frame"].as_u64().unwrap(), r["total"].as_u64().unwrap());
                        let pct = r["percent"].as_f64().unwrap();
                        assert!((pct - i as f64 / t as f64 * 100.0).abs() < 1e-9, "{uri}: {r}");
                        (r["host"].as_str().unwrap().to_string(), i, t)
                    })
                    .collect();
                assert_eq!(got, want, "{uri}");
                assert_eq!(v["frame"], frame);
                assert_eq!(v["in_frame"].as_u64(), Some(want.iter().map(|w| w.1).sum()));
                assert_eq!(v["total"].as_u64(), Some(want.iter().map(|w| w.2).sum()));
            }
        }
    }
    // Only web-1 runs nginx; every host runs the common frame.
    let v = json(&app, &format!("/api/frame_hosts?frame={}&from={from}&to={to}", history::WEB_FRAME)).await;
    let rows = v["hosts"].as_array().unwrap();
    assert_eq!(rows[0]["host"], "web-1");
    assert!(rows[0]["in_frame"].as_u64().unwrap() > 0);
    assert!(rows[1..].iter().all(|r| r["in_frame"].as_u64() == Some(0)));
    // Bad requests: what is wrong, in words.
    for (uri, want) in [
        ("/api/frame_hosts", "frame: missing"),
        ("/api/frame_hosts?frame=", "frame: missing"),
        ("/api/frame_hosts?frame=a%3Bb", "without ';'"),
        ("/api/frame_hosts?frame=x&kind=gpu", "unknown profile kind"),
        ("/api/frame_hosts?frame=x&from=20&to=10", "bad range"),
        ("/api/frame_hosts?frame=x&cgroup=nope", "cgroup=\"nope\""),
    ] {
        let msg = error(&app, uri, StatusCode::BAD_REQUEST).await;
        assert!(msg.contains(want), "{uri}: {msg}");
    }
}

#[tokio::test]
async fn hostile_ranges_and_name_lists_get_400_not_a_panic_or_a_flood() {
    let (_, _, app) = setup("hostile", 30);
    // Ranges whose length overflows 64 bits.
    for uri in [
        "/api/heatmap?from=0&to=9223372036854775807",
        "/api/heatmap?from=-9223372036854775808&to=9223372036854775807",
        "/api/heatmap?from=-9223372036854775808&to=0&row_ms=10",
    ] {
        let msg = error(&app, uri, StatusCode::BAD_REQUEST).await;
        assert!(msg.contains("at most 21600 s"), "{uri}: {msg}");
    }
    // The largest heat map allowed still answers, the cells counted.
    let v = json(&app, &format!("/api/heatmap?from={T0}&to={}&row_ms=10", T0 + 21_600 * SEC)).await;
    assert_eq!(v["columns"], 21_600);
    assert_eq!(v["counts"].as_array().unwrap().len(), 21_600 * 100);
    // One name repeated: one series, as if it were given once.
    let range = format!("from={T0}&to={}&points=100", T0 + 30 * SEC);
    let once = send(&app, authed(&format!("/api/series?names=cpu.usr&{range}"))).await;
    assert_eq!(once.0, StatusCode::OK);
    // As many as a URI holds (the http crate takes up to 64 KiB).
    let many = vec!["cpu.usr"; 7_000].join(",");
    let repeated = send(&app, authed(&format!("/api/series?names={many}&{range}"))).await;
    assert_eq!(repeated.0, StatusCode::OK);
    assert_eq!(repeated.2, once.2, "a repeated name answered more than the name once");
    // Too many distinct names: 400, saying the limit.
    let names: Vec<String> = (0..=kflame_serve::api::MAX_NAMES).map(|i| format!("m{i}")).collect();
    let msg =
        error(&app, &format!("/api/series?names={}&{range}", names.join(",")), StatusCode::BAD_REQUEST).await;
    assert!(
        msg.contains(&format!("more than {} distinct metric names", kflame_serve::api::MAX_NAMES)),
        "{msg}"
    );
    let msg = error(&app, "/api/series?names=,,,", StatusCode::BAD_REQUEST).await;
    assert!(msg.contains("names: empty"), "{msg}");
}

/// Reads from `s` until the server closes it (or `limit` passes: then the test fails).
fn wait_closed(s: &mut std::net::TcpStream, limit: std::time::Duration) -> (std::time::Duration, Vec<u8>) {
    use std::io::Read;
    let start = std::time::Instant::now();
    s.set_read_timeout(Some(std::time::Duration::from_millis(100))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        assert!(start.elapsed() < limit, "still open after {:?}", start.elapsed());
        match s.read(&mut buf) {
            Ok(0) => return (start.elapsed(), got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            // A reset is a close too.
            Err(_) => return (start.elapsed(), got),
        }
    }
}

#[test]
fn idle_partial_and_slow_connections_are_closed() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let timeout = Duration::from_millis(400);
    let served = serve_on_loopback("slow", 5, false, |b| b.set_header_timeout(timeout));
    let addr = served.addr;
    let limit = Duration::from_secs(10);
    // Connected, never a byte.
    let mut idle = std::net::TcpStream::connect(addr).unwrap();
    let (after, got) = wait_closed(&mut idle, limit);
    assert!(after >= timeout / 2 && (got.is_empty() || got.starts_with(b"HTTP/1.1 408")), "{after:?}");
    // Half a request head, then nothing.
    let mut partial = std::net::TcpStream::connect(addr).unwrap();
    write!(partial, "GET /api/info HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    wait_closed(&mut partial, limit);
    // A byte now and then: the head never completes within the timeout.
    let mut slow = std::net::TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    let head = format!("GET /api/info HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let start = Instant::now();
    let mut closed = false;
    for b in head.bytes() {
        if slow.write_all(&[b]).is_err() || matches!(slow.read(&mut [0u8; 64]), Ok(0)) {
            closed = true;
            break;
        }
        assert!(start.elapsed() < limit);
        std::thread::sleep(Duration::from_millis(50));
    }
    if !closed {
        let (_, got) = wait_closed(&mut slow, limit);
        assert!(!got.starts_with(b"HTTP/1.1 200"), "a head sent over {:?} was served", start.elapsed());
    }
    // Kept alive after an answer, then idle: closed too.
    let mut kept = std::net::TcpStream::connect(addr).unwrap();
    write!(kept, "GET /api/info HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").unwrap();
    let (_, got) = wait_closed(&mut kept, limit);
    assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
    // A prompt client is served as before.
    let mut ok = std::net::TcpStream::connect(addr).unwrap();
    write!(
        ok,
        "GET /api/info HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    ok.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    served.stop();
}

/// At most `max_connections` are served at once: the next one waits, unanswered, until one of
/// them closes, and is then served.
#[test]
fn connections_beyond_the_cap_wait_for_a_free_one() {
    use std::io::{Read, Write};
    use std::time::Duration;
    let served = serve_on_loopback("cap", 5, false, |b| {
        b.set_max_connections(2);
        b.set_header_timeout(Duration::from_secs(60));
    });
    let addr = served.addr;
    let idle: Vec<_> = (0..2).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    let mut third = std::net::TcpStream::connect(addr).unwrap();
    write!(
        third,
        "GET /api/info HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    // Unanswered while both slots are held (the two idle connections have 60 s).
    third.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 64];
    match third.read(&mut buf) {
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
        other => panic!("the third connection was served while two were open: {other:?}"),
    }
    drop(idle);
    third.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut out = String::new();
    third.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    served.stop();
}
