//! Latency histograms of a day, replayed from a real history: the histograms a `kflame watch`
//! database holds (every family and label, one per second) are written again, second after
//! second, until `HOURS` of history fill a new database (as the watcher writes them: 10-s
//! blocks, folded per 10 minutes and hour). Then prints the bytes they take (a replay repeats
//! a short recording, which the compressor finds again: these bytes are a floor, not what a
//! day of watching takes; `bench/watch-storage.sh` measures that), and times what a page asks: the heat map of one hour (`Query::latency` and `heatmap`, 300 columns) of each
//! family's total and of the busiest label, at the start, middle and end of the day.
//!
//! ```sh
//! cargo run --release -p kflame-store --example latency_bench -- FROM.db OUT.db [HOURS]
//! ```
#![allow(clippy::print_stdout)]

use std::time::Instant;

use kflame_store::{LatencyKind, LatencyQuery, LatencyRow, OpenMode, Query, Sqlite, Store};

const SEC: i64 = 1_000_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(from), Some(out)) = (args.first(), args.get(1)) else {
        return Err("usage: latency_bench FROM.db OUT.db [HOURS]".into());
    };
    let hours: i64 = args.get(2).map_or(Ok(24), |h| h.parse())?;
    let src = Sqlite::open(from, OpenMode::Read)?;
    let (lo, hi) = src.time_bounds()?.ok_or("the history is empty")?;
    // Every second of the source: (second, kind, label, histogram, slow).
    let mut seconds: std::collections::BTreeMap<i64, Vec<(LatencyKind, String, kflame_store::LatencyPoint)>> =
        Default::default();
    for kind in LatencyKind::ALL {
        let q = LatencyQuery { kind, label: None, host: None, from_ns: lo, to_ns: hi + SEC };
        for s in src.latency(&q)? {
            for p in s.points {
                seconds.entry((p.time_ns - lo) / SEC).or_default().push((kind, s.label.clone(), p));
            }
        }
    }
    let n = seconds.len() as i64;
    if n == 0 {
        return Err("no latency histograms in the history".into());
    }
    let per_second: usize = seconds.values().map(Vec::len).sum::<usize>() / n as usize;
    let _ = std::fs::remove_file(out);
    let mut db = Sqlite::open(out, OpenMode::Write)?;
    db.set_metric_block(10 * SEC);
    let t0: i64 = 1_764_000_000 * SEC;
    let replay: Vec<&Vec<(LatencyKind, String, kflame_store::LatencyPoint)>> = seconds.values().collect();
    let started = Instant::now();
    for s in 0..hours * 3600 {
        let rows: Vec<LatencyRow<'_>> = replay[(s % n) as usize]
            .iter()
            .map(|(kind, label, p)| LatencyRow {
                kind: *kind,
                label,
                histogram: &p.histogram,
                slow: p.slow,
                span_ms: p.span_ms,
            })
            .collect();
        db.append_latency("host", t0 + s * SEC + 999_000_000, &rows)?;
    }
    db.flush()?;
    let wrote = started.elapsed();
    drop(db);
    let bytes = std::fs::metadata(out)?.len();
    println!(
        "{hours} h of histograms ({n} real seconds replayed, {per_second} histograms a second): {bytes} bytes \
         ({:.2} MB a day), written in {:.1} s",
        bytes as f64 * 24.0 / hours as f64 / 1e6,
        wrote.as_secs_f64()
    );
    let db = Sqlite::open(out, OpenMode::Read)?;
    let end = t0 + hours * 3600 * SEC;
    for (what, at) in
        [("first hour", t0), ("middle hour", t0 + (end - t0) / 2), ("last hour", end - 3600 * SEC)]
    {
        for kind in LatencyKind::ALL {
            let labels: Vec<String> = db
                .latency_labels(None, at, at + 3600 * SEC)?
                .into_iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, l)| l)
                .collect();
            let Some(busiest) = labels.iter().find(|l| !l.is_empty() && *l != "other").or(labels.first())
            else {
                continue;
            };
            for label in ["", busiest.as_str()] {
                let t = Instant::now();
                let q = LatencyQuery {
                    kind,
                    label: Some(label),
                    host: None,
                    from_ns: at,
                    to_ns: at + 3600 * SEC,
                };
                let found = db.latency(&q)?;
                let map = kflame_store::heatmap::heatmap(&found, at, at + 3600 * SEC, 300);
                let took = t.elapsed();
                println!(
                    "{what:<12} {:<8} {:<12} {:>8} events in {:>3} rows: {:>7.2} ms",
                    kind.as_str(),
                    if label.is_empty() { "(total)" } else { label },
                    map.total,
                    map.lower_ns.len(),
                    took.as_secs_f64() * 1e3
                );
            }
        }
    }
    Ok(())
}
