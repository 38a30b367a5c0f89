//! `kflame query` through the binary, on a history the test writes with the store crate from
//! the stacks of a real capture.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kflame::fold::{Meta, Unit, Weight};
use kflame_store::time::format_time;
use kflame_store::{Bucket, Kind, Metric, OpenMode, Sample, Sqlite, Store, TriggerFired};

const SEC: i64 = 1_000_000_000;
/// Fixed, so that the ranges are absolute times (2025-11-24T16:00:00Z).
const T0: i64 = 1_764_000_000_000_000_000;

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().unwrap()
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-query-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One sample per folded count of a real capture, 19 Hz on 2 CPUs from T0, in 10 s
/// buckets; returns every (time, stack).
fn history(path: &Path) -> Vec<(i64, Vec<u8>)> {
    let text = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kflame/tests/data/render/perf-sys-cpuclock.folded"
    ))
    .unwrap();
    let mut all = Vec::new();
    let mut k = 0i64;
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let sp = line.iter().rposition(|&b| b == b' ').unwrap();
        let n: i64 = std::str::from_utf8(&line[sp + 1..]).unwrap().parse().unwrap();
        for _ in 0..n {
            all.push((T0 + (k / 2) * (SEC / 19) + (k % 2) * 1_000_000, line[..sp].to_vec()));
            k += 1;
        }
    }
    let mut db = Sqlite::open(path, OpenMode::Write).unwrap();
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let end = all.last().unwrap().0;
    let mut start = T0;
    while start <= end {
        let s: Vec<Sample<'_>> = all
            .iter()
            .enumerate()
            .filter(|(_, (t, _))| *t >= start && *t < start + 10 * SEC)
            .map(|(i, (t, st))| Sample {
                time_ns: *t,
                cpu: (i % 2) as u32,
                cgroup: None,
                stack: st,
                weight: Weight::ONE,
            })
            .collect();
        db.append_bucket(&Bucket {
            host: "web1",
            kind: Kind::Cpu,
            start_ns: start,
            end_ns: start + 10 * SEC,
            capture: None,
            meta: &meta,
            samples: &s,
            aggregated: &[],
        })
        .unwrap();
        start += 10 * SEC;
    }
    for i in 0..120 {
        db.append_metrics(
            "web1",
            T0 + i * SEC,
            &[Metric { name: "cpu.usr", label: "", value: i as f64 / 4.0 }],
        )
        .unwrap();
    }
    db.append_trigger(&TriggerFired {
        host: "web1",
        time_ns: T0 + 30 * SEC,
        rule: "cpu > 80% for 5s => cpu 30s",
        metric: "cpu",
        value: 93.25,
        threshold: 80.0,
    })
    .unwrap();
    all
}

fn folded(out: &[u8]) -> BTreeMap<Vec<u8>, u64> {
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
        .map(|l| {
            let sp = l.iter().rposition(|&b| b == b' ').unwrap();
            (l[..sp].to_vec(), std::str::from_utf8(&l[sp + 1..]).unwrap().parse().unwrap())
        })
        .collect()
}

fn expected(all: &[(i64, Vec<u8>)], from: i64, to: i64) -> BTreeMap<Vec<u8>, u64> {
    let mut m = BTreeMap::new();
    for (t, s) in all {
        if *t >= from && *t < to {
            *m.entry(s.clone()).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn query_writes_the_profile_of_a_range() {
    let d = dir("profile");
    let db = d.join("h.db");
    let all = history(&db);
    let db = db.to_str().unwrap();
    let (from, to) = (T0 + 7 * SEC + 123_000_000, T0 + 21 * SEC);
    let out = kflame(&["query", "--db", db, "--from", &format_time(from), "--to", &format_time(to)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.starts_with(b"# unit=samples\n# event=cpu-clock\n"));
    assert_eq!(folded(&out.stdout), expected(&all, from, to));

    // SVG and HTML by extension, through the renderers.
    for ext in ["svg", "html", "json"] {
        let o = d.join(format!("range.{ext}"));
        let out = kflame(&[
            "query",
            "--db",
            db,
            "--from",
            &format_time(T0),
            "--to=2025-11-24T16:01:00Z",
            "-o",
            o.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let body = std::fs::read_to_string(&o).unwrap();
        assert!(body.contains("do_syscall_64"), "{ext} lacks a frame of the capture");
    }

    // The difference of two ranges, in the differential format.
    let (b1, b2) = (T0, T0 + 10 * SEC);
    let out = kflame(&[
        "query",
        "--db",
        db,
        "--from",
        &format_time(b2),
        "--to",
        &format_time(T0 + 20 * SEC),
        "--diff-from",
        &format_time(b1),
        "--diff-to",
        &format_time(b2),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let before = expected(&all, b1, b2);
    let after = expected(&all, b2, T0 + 20 * SEC);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = 0;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let mut it = l.rsplitn(3, ' ');
        let (a, b, stack) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        assert_eq!(b.parse::<u64>().unwrap(), before.get(stack.as_bytes()).copied().unwrap_or(0), "{l}");
        assert_eq!(a.parse::<u64>().unwrap(), after.get(stack.as_bytes()).copied().unwrap_or(0), "{l}");
        lines += 1;
    }
    assert_eq!(lines, before.keys().chain(after.keys()).collect::<std::collections::BTreeSet<_>>().len());
}

#[test]
fn query_metrics_and_events() {
    let d = dir("metrics");
    let db = d.join("h.db");
    history(&db);
    let db = db.to_str().unwrap();
    let out = kflame(&[
        "query",
        "--db",
        db,
        "--metrics",
        "--from",
        &format_time(T0),
        "--to",
        &format_time(T0 + 10 * SEC),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "time,host,name,label,value");
    assert_eq!(lines.len(), 11);
    assert_eq!(lines[5], format!("{},web1,cpu.usr,,1", format_time(T0 + 4 * SEC)));
    let out = kflame(&[
        "query",
        "--db",
        db,
        "--metrics",
        "--json",
        "--points",
        "4",
        "--from",
        &format_time(T0),
        "--to",
        &format_time(T0 + 120 * SEC),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pts = v[0]["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4);
    assert_eq!(pts[0]["count"], 30);
    assert_eq!(pts[0]["max"], 29.0 / 4.0);
    let out = kflame(&[
        "query",
        "--db",
        db,
        "--events",
        "--from",
        &format_time(T0),
        "--to",
        &format_time(T0 + 120 * SEC),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("trigger #1 cpu=93.25 (threshold 80)"), "{text}");
}

#[test]
fn query_errors_are_clear() {
    let d = dir("errors");
    let notes = d.join("notes.txt");
    std::fs::write(&notes, "not a database\n").unwrap();
    let out = kflame(&["query", "--db", notes.to_str().unwrap(), "--from", "-1h"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.txt") && err.contains("not a kflame history database"), "{err}");
    let db = d.join("h.db");
    history(&db);
    let db = db.to_str().unwrap();
    let out = kflame(&["query", "--db", db, "--from=-10m"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("no cpu samples")
            && err.contains("the database holds 2025-11-24T16:00:00Z"),
        "{err}"
    );
    let out = kflame(&["query", "--db", db, "--from", "yesterday"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not a time"), "{err}");
    let out = kflame(&["query", "--db", db, "--kind", "gpu"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("unknown profile kind"), "{err}");
}
