//! Entry points of the server's fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): the query strings of `/api/` requests, which anyone who
//! can reach the port sends (the token is checked, but a page's own requests carry it).

use std::collections::HashMap;

use kflame_store::time::{format_time, parse_time};

use crate::api::{self, Hosts};

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[("serve_params", serve_params)];

/// A query string (`a=1&b=2`, as axum splits it, without percent-decoding) through every
/// parameter parser of the API: a value or a 400, never a panic; a heat map's shape within
/// its bounds; names each once and at most [`api::MAX_NAMES`]; a time printed and parsed
/// again is the same time.
pub fn serve_params(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let args: HashMap<String, String> = text
        .split('&')
        .take(64)
        .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let now = 1_764_000_000_000_000_000;
    let mut times = Vec::new();
    for name in ["from", "to", "time", "base_from", "base_to"] {
        if let Ok(Some(t)) = api::time_param(&args, name) {
            times.push(t);
        }
        if let Some(v) = args.get(name) {
            let _ = parse_time(v, now);
        }
    }
    for &t in &times {
        let shown = format_time(t);
        if t >= 0 {
            assert_eq!(parse_time(&shown, now).ok(), Some(t), "{t} printed as {shown}");
        }
    }
    let _ = api::num_param::<usize>(&args, "points", "a number");
    let _ = api::num_param::<f64>(&args, "prune", "a percentage");
    let _ = api::kind_param(&args, "kind");
    let _ = api::cgroup_param(&args);
    let hosts = Hosts::of(&args);
    let _ = (hosts.single(), hosts.json(), hosts.matches("web1"));
    if let Ok(names) = api::names_param(&args) {
        assert!(!names.is_empty() && names.len() <= api::MAX_NAMES, "{} names", names.len());
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a name twice");
    }
    let row_ms = api::num_param::<i64>(&args, "row_ms", "milliseconds").ok().flatten().unwrap_or(20);
    let (from, to) = match (times.first(), times.get(1)) {
        (Some(&a), Some(&b)) => (a.min(b), a.max(b)),
        (Some(&a), None) => (a, i64::MAX),
        _ => (i64::MIN, i64::MAX),
    };
    if let Ok((start, columns, rows)) = api::heatmap_shape(from, to, row_ms) {
        assert!(start <= from, "the first column starts after the range");
        assert!(columns <= api::HEATMAP_MAX_SECONDS && columns * rows <= api::HEATMAP_MAX_CELLS);
        assert_eq!(rows * row_ms, 1000);
    }
}
