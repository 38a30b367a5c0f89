//! `kflame query --kind syscall-outliers --top N --split-outliers DIR` through the binary, on
//! a SQLite history the test writes with the store crate: slow system calls of two hosts,
//! each with a stack of a real capture, as the watcher keeps them (`Store::append_outliers`).
//! The directory must hold, for the N longest (the earliest first among equals), what
//! `kflame collapse --split-outliers` writes for a trace, with wall-clock starts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kflame::collapse::outliers::format_duration;
use kflame::events::{EventKind, EventRecord, Frames};
use kflame_store::time::format_time;
use kflame_store::{LatencyKind, OpenMode, Sqlite, Store};

const SEC: i64 = 1_000_000_000;
/// Fixed, so that the ranges are absolute times (2025-11-24T16:00:00Z).
const T0: i64 = 1_764_000_000_000_000_000;

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn fails(o: &Output) -> String {
    assert!(!o.status.success(), "expected a failure: {}", String::from_utf8_lossy(&o.stdout));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-query-outliers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One outlier as written.
#[derive(Clone, Debug)]
struct Kept {
    host: &'static str,
    time_ns: i64,
    duration_ns: u64,
    cpu: u32,
    pid: u32,
    comm: &'static str,
    event: &'static str,
    stack: String,
}

/// Writes slow calls of `web1` and `db1` over the first minute after T0, with stacks of a
/// real capture (perf-sys-cpuclock.folded, in file order); durations repeat, so that ties
/// are ranked by time. Returns what was written.
fn history(path: &Path) -> Vec<Kept> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kflame/tests/data/render/perf-sys-cpuclock.folded"
    ))
    .unwrap();
    let stacks: Vec<&str> =
        text.lines().filter(|l| !l.is_empty()).map(|l| l.rsplit_once(' ').unwrap().0).collect();
    let calls = ["syscall:write", "syscall:fsync", "syscall:openat"];
    let comms = ["postgres", "kworker/u8:3 x", "nginx"];
    let mut kept = Vec::new();
    for i in 0..24usize {
        let host = if i % 3 == 0 { "db1" } else { "web1" };
        kept.push(Kept {
            host,
            time_ns: T0 + (i as i64) * 2 * SEC + (i as i64) * 1_250_000,
            // 12 ms to 33.3 ms, every value twice (i and i + 12, 24 s apart)
            duration_ns: 12_000_000 + (i % 12) as u64 * 1_937_000,
            cpu: (i % 4) as u32,
            pid: 3000 + i as u32,
            comm: comms[i % comms.len()],
            event: calls[i % calls.len()],
            stack: stacks[(i * 37) % stacks.len()].to_string(),
        });
    }
    let mut db = Sqlite::open(path, OpenMode::Write).unwrap();
    for k in &kept {
        let frames: Vec<Vec<u8>> = k.stack.split(';').map(|f| f.as_bytes().to_vec()).collect();
        let rec = EventRecord {
            kind: EventKind::Syscall,
            ts_ns: Some(k.time_ns as u64),
            duration_ns: Some(k.duration_ns),
            cpu: k.cpu,
            pid: Some(k.pid),
            tid: Some(k.pid + 1),
            comm: Some(k.comm),
            event: k.event,
            weight: k.duration_ns,
            stack: Frames::Owned(&frames),
        };
        db.append_outliers(k.host, LatencyKind::Syscall, &[rec]).unwrap();
    }
    db.flush().unwrap();
    kept
}

/// The `n` longest of `kept` (of the hosts in `hosts`), the earliest first among equals.
fn ranked(kept: &[Kept], hosts: &[&str], n: usize) -> Vec<Kept> {
    let mut v: Vec<Kept> = kept.iter().filter(|k| hosts.contains(&k.host)).cloned().collect();
    v.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.time_ns.cmp(&b.time_ns)));
    v.truncate(n);
    v
}

/// A file name part as the writer makes it (letters, digits, `._+` kept).
fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "._+".contains(c) { c } else { '_' }).collect()
}

/// Text as an SVG holds it.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Checks `dir` against `want`, rank by rank: index.tsv's rows, each folded file (the stored
/// stack weighted by the call's duration) and its SVG.
fn check_dir(dir: &Path, want: &[Kept]) {
    let index = std::fs::read_to_string(dir.join("index.tsv")).expect("index.tsv");
    let mut lines = index.lines();
    assert_eq!(
        lines.next(),
        Some("rank\tduration_ns\tduration\tstart\tcomm\tpid\tcpu\twhat\thost\tfolded\tsvg")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), want.len(), "{index}");
    let width = want.len().to_string().len();
    let mut files: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files.len(), 2 * want.len() + 1, "{files:?}");
    for (i, (row, k)) in rows.iter().zip(want).enumerate() {
        let start = format_time(k.time_ns);
        let base = format!(
            "{:0width$}-{}-{}-{}-{}-{}",
            i + 1,
            format_duration(k.duration_ns),
            safe(k.comm),
            k.pid,
            safe(k.event),
            start.replace(['-', ':'], "")
        );
        let folded_name = format!("{base}.folded");
        let svg_name = format!("{base}.svg");
        let want_row = [
            (i + 1).to_string(),
            k.duration_ns.to_string(),
            format_duration(k.duration_ns),
            start.clone(),
            k.comm.to_string(),
            k.pid.to_string(),
            k.cpu.to_string(),
            k.event.to_string(),
            k.host.to_string(),
            folded_name.clone(),
            svg_name.clone(),
        ];
        assert_eq!(row, &want_row.iter().map(String::as_str).collect::<Vec<_>>(), "rank {}", i + 1);
        assert_eq!(files[2 * i], folded_name, "listing order is rank order");
        let folded = std::fs::read_to_string(dir.join(&folded_name)).unwrap();
        assert_eq!(folded, format!("# unit=ns\n{} {}\n", k.stack, k.duration_ns), "{folded_name}");
        let svg = std::fs::read_to_string(dir.join(&svg_name)).unwrap();
        assert!(svg.starts_with("<?xml"), "{svg_name}");
        let leaf = xml(k.stack.rsplit(';').next().unwrap());
        for part in [k.event, k.host, start.as_str(), leaf.as_str()] {
            assert!(svg.contains(part), "{svg_name} lacks {part}");
        }
    }
}

#[test]
fn split_outliers_of_a_range_as_of_a_trace() {
    let d = scratch("split");
    let db = d.join("h.db");
    let kept = history(&db);
    let (from, to) = (format_time(T0), format_time(T0 + 60 * SEC));
    let split = d.join("slow");
    let shared = d.join("top.folded");
    let out = ok(&kflame(&[
        "query",
        "--db",
        db.to_str().unwrap(),
        "--from",
        &from,
        "--to",
        &to,
        "--kind",
        "syscall-outliers",
        "--top",
        "10",
        "--split-outliers",
        split.to_str().unwrap(),
        "-o",
        shared.to_str().unwrap(),
    ]));
    assert!(out.is_empty(), "{out}");
    let want = ranked(&kept, &["db1", "web1"], 10);
    // Ties are there to rank (each duration twice), across both hosts.
    assert_eq!(want.len(), 10);
    assert!(want.iter().any(|k| k.host == "db1") && want.iter().any(|k| k.host == "web1"));
    assert!(want.windows(2).any(|w| w[0].duration_ns == w[1].duration_ns));
    check_dir(&split, &want);
    // The shared graph holds the same ten, each weighing its duration.
    let text = std::fs::read_to_string(&shared).unwrap();
    let total: u64 = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, want.iter().map(|k| k.duration_ns).sum::<u64>());

    // A host selection, and a range that cuts the minute in half.
    let one = d.join("db1");
    let half = format_time(T0 + 30 * SEC);
    ok(&kflame(&[
        "query",
        "--db",
        db.to_str().unwrap(),
        "--from",
        &from,
        "--to",
        &half,
        "--kind",
        "syscall-outliers",
        "--hosts",
        "db*",
        "--top",
        "3",
        "--split-outliers",
        one.to_str().unwrap(),
    ]));
    let in_range: Vec<Kept> = kept.iter().filter(|k| k.time_ns < T0 + 30 * SEC).cloned().collect();
    check_dir(&one, &ranked(&in_range, &["db1"], 3));

    // --list names each outlier's host, in time order.
    let list = ok(&kflame(&[
        "query",
        "--db",
        db.to_str().unwrap(),
        "--from",
        &from,
        "--to",
        &to,
        "--kind",
        "syscall-outliers",
        "--list",
    ]));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), kept.len(), "{list}");
    for (line, k) in lines.iter().zip(&kept) {
        assert!(line.starts_with(&format!("{}  {}  ", format_time(k.time_ns), k.host)), "{line}");
        assert!(line.ends_with(&k.stack), "{line}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn split_outliers_checks_as_collapse_does() {
    let d = scratch("checks");
    let db = d.join("h.db");
    history(&db);
    let from = format_time(T0);
    let to = format_time(T0 + 60 * SEC);
    let dir = d.join("out");
    let base = ["query", "--db", db.to_str().unwrap(), "--from", &from, "--to", &to];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        kflame(&a)
    };
    let dir_s = dir.to_str().unwrap();
    let err = fails(&run(&["--kind", "syscall-outliers", "--split-outliers", dir_s]));
    assert!(err.contains("give --top N too"), "{err}");
    assert!(!dir.exists(), "nothing made on a refused run");
    let err = fails(&run(&["--kind", "cpu", "--top", "3", "--split-outliers", dir_s]));
    assert!(err.contains("go with --kind FAMILY-outliers"), "{err}");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("old.svg"), "x").unwrap();
    let err = fails(&run(&["--kind", "syscall-outliers", "--top", "3", "--split-outliers", dir_s]));
    assert!(err.contains("the directory is not empty"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "the directory left as it was");
    // A range without outliers writes nothing.
    let empty = d.join("empty");
    let later = format_time(T0 + 3600 * SEC);
    let o = kflame(&[
        "query",
        "--db",
        db.to_str().unwrap(),
        "--from",
        &later,
        "--to",
        &format_time(T0 + 7200 * SEC),
        "--kind",
        "syscall-outliers",
        "--top",
        "3",
        "--split-outliers",
        empty.to_str().unwrap(),
    ]);
    let err = fails(&o);
    assert!(err.contains("no syscall outliers"), "{err}");
    assert!(!empty.exists());
    let _ = std::fs::remove_dir_all(&d);
}
