//! Per-event records in blocks (schema 7) against a row per event (schema 6, written by the
//! same build opened at that version): real system calls written alike to both come back
//! alike, range by range; a schema-6 file migrated in place reads as before; retention cuts
//! blocks by event time and keeps every stack a kept event uses; a damaged block is an error
//! naming its row.

use std::io::Read;
use std::path::{Path, PathBuf};

use kflame::events::{EventKind, EventRecord, Frames};
use kflame::fold::{Meta, Unit};
use kflame_store::{
    CaptureId, CaptureStart, Kind, LatencyKind, OpenMode, Policy, Query, SCHEMA_VERSION, Sqlite, Store,
    StoreError, StoredEvent,
};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-store-events-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One event of the fixture.
#[derive(Clone, Debug)]
struct Owned {
    ts_ns: u64,
    duration_ns: Option<u64>,
    cpu: u32,
    pid: u32,
    comm: String,
    stack: Vec<String>,
    event: String,
    weight: u64,
}

impl Owned {
    fn record(&self) -> EventRecord<'_> {
        EventRecord {
            kind: EventKind::Syscall,
            ts_ns: Some(self.ts_ns),
            duration_ns: self.duration_ns,
            cpu: self.cpu,
            pid: Some(self.pid),
            // The fixture has no thread ids: some made up, below and above the pid.
            tid: match self.ts_ns % 3 {
                0 => Some(self.pid),
                1 => Some(self.pid + 1),
                _ => self.pid.checked_sub(2),
            },
            comm: (!self.comm.is_empty()).then_some(self.comm.as_str()),
            event: &self.event,
            weight: self.weight,
            stack: Frames::Text(&self.stack),
        }
    }
}

/// The value after `"key":` in a line of the fixture (numbers, plain strings, arrays of them).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[at..];
    let end = if rest.starts_with('[') {
        rest.find(']')? + 1
    } else if let Some(s) = rest.strip_prefix('"') {
        s.find('"')? + 2
    } else {
        rest.find([',', '}'])?
    };
    Some(&rest[..end])
}

fn unquote(s: &str) -> String {
    s.trim_matches('"').to_string()
}

/// The 17,259 system calls of `kflame/tests/data/scatter/syscalls-mixed.json.gz` (see its
/// README), their monotonic times moved to `T0` and after.
fn real_events() -> Vec<Owned> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/scatter/syscalls-mixed.json.gz");
    let mut text = String::new();
    kflame::open::Input::open(path).unwrap().reader().read_to_string(&mut text).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let ts = field(line, "ts").unwrap();
        let (s, frac) = ts.split_once('.').unwrap_or((ts, "0"));
        let ns =
            s.parse::<u64>().unwrap() * 1_000_000_000 + format!("{frac:0<9}")[..9].parse::<u64>().unwrap();
        let stack = field(line, "stack").unwrap();
        out.push(Owned {
            ts_ns: ns,
            duration_ns: field(line, "duration_ns").map(|d| d.parse().unwrap()),
            cpu: field(line, "cpu").unwrap().parse().unwrap(),
            pid: field(line, "pid").unwrap().parse().unwrap(),
            comm: field(line, "comm").map(unquote).unwrap_or_default(),
            stack: stack[1..stack.len() - 1].split(',').map(unquote).collect(),
            event: unquote(field(line, "event").unwrap()),
            weight: field(line, "weight").unwrap().parse().unwrap(),
        });
    }
    let first = out.iter().map(|e| e.ts_ns).min().unwrap();
    for e in &mut out {
        e.ts_ns = e.ts_ns - first + T0 as u64;
    }
    assert_eq!(out.len(), 17_259);
    out
}

/// What both files are given, in this order.
fn write_all(db: &mut Sqlite, events: &[Owned]) -> (CaptureId, CaptureId) {
    let meta = Meta::with_unit(Unit::Nanoseconds);
    let start = |db: &mut Sqlite, host| {
        db.begin_capture(&CaptureStart {
            host,
            kind: Kind::Syscalls,
            start_ns: T0,
            trigger: None,
            meta: &meta,
        })
        .unwrap()
    };
    let a = start(db, "web1");
    let b = start(db, "web2");
    // Capture a: windows of 200 ms (the fixture lasts 1.7 s), each in its own order (one
    // reversed), and a few calls without a duration or with one of 0.
    let mut events = events.to_vec();
    for (i, e) in events.iter_mut().enumerate() {
        match i % 997 {
            0 => e.duration_ns = None,
            1 => e.duration_ns = Some(0),
            _ => {}
        }
    }
    let mut sorted = events.clone();
    sorted.sort_by_key(|e| e.ts_ns);
    for (k, window) in sorted
        .chunk_by(|x, y| (x.ts_ns - T0 as u64) / 200_000_000 == (y.ts_ns - T0 as u64) / 200_000_000)
        .enumerate()
    {
        let mut recs: Vec<EventRecord<'_>> = window.iter().map(Owned::record).collect();
        if k % 2 == 1 {
            recs.reverse();
        }
        db.append_events(a, &recs).unwrap();
    }
    // Capture b: every call four times, in one append (more than a block holds); ties
    // between copies stay in the order written.
    let mut tiled: Vec<EventRecord<'_>> = Vec::new();
    for copy in 0..4u64 {
        tiled.extend(events.iter().map(|e| EventRecord { weight: e.weight + copy, ..e.record() }));
    }
    db.append_events(b, &tiled).unwrap();
    // Outliers of two hosts, a window at a time: the calls of over 1 ms (web2's 1 ns later).
    let slow: Vec<&Owned> = sorted.iter().filter(|e| e.duration_ns.unwrap_or(0) > 1_000_000).collect();
    assert!(slow.len() > 50, "{}", slow.len());
    for window in slow.chunks(40) {
        let recs: Vec<EventRecord<'_>> = window.iter().map(|e| e.record()).collect();
        db.append_outliers("web1", LatencyKind::Syscall, &recs).unwrap();
        let later: Vec<EventRecord<'_>> =
            recs.iter().map(|r| EventRecord { ts_ns: r.ts_ns.map(|t| t + 1), ..*r }).collect();
        db.append_outliers("web2", LatencyKind::Syscall, &later).unwrap();
    }
    (a, b)
}

/// Everything a reader asks of events, over ranges that cut the data anywhere.
fn reads(db: &Sqlite, a: CaptureId, b: CaptureId) -> Vec<(String, Vec<StoredEvent>)> {
    let mut out = Vec::new();
    let span = 2 * SEC;
    let mut ranges = vec![(i64::MIN, i64::MAX), (T0, T0 + 1), (T0 + span, i64::MAX)];
    for k in 0..13 {
        let from = T0 + k * span / 13 + k * 7_777;
        ranges.push((from, from + span / 9));
    }
    for &(from, to) in &ranges {
        for c in [a, b] {
            out.push((format!("capture {} [{from}, {to})", c.0), db.capture_events(c, from, to).unwrap()));
        }
        for host in [None, Some("web1"), Some("web2"), Some("nohost")] {
            out.push((
                format!("outliers of {host:?} [{from}, {to})"),
                db.outliers(LatencyKind::Syscall, from, to, host).unwrap(),
            ));
        }
    }
    out
}

fn counts(db: &Sqlite, a: CaptureId, b: CaptureId) -> Vec<u64> {
    [a, b, CaptureId(b.0 + 1), kflame_store::outlier_capture(LatencyKind::Syscall)]
        .into_iter()
        .map(|c| db.capture_event_count(c).unwrap())
        .collect()
}

fn assert_same(got: &[(String, Vec<StoredEvent>)], want: &[(String, Vec<StoredEvent>)]) {
    assert_eq!(got.len(), want.len());
    for ((what, g), (_, w)) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len(), "{what}");
        if let Some(i) = (0..g.len()).find(|&i| g[i] != w[i]) {
            panic!("{what}: event {i} differs:\n{:?}\n{:?}", g[i], w[i]);
        }
    }
}

fn table_bytes(path: &Path, table: &str) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?1", [table], |r| r.get(0)).unwrap()
}

#[test]
fn blocks_read_as_rows_did_and_a_schema_6_file_is_migrated() {
    let d = dir("migrate");
    let (old_path, new_path) = (d.join("v6.db"), d.join("v7.db"));
    let events = real_events();
    let mut old = Sqlite::open_at_version(&old_path, 6).unwrap();
    assert_eq!(old.schema_version().unwrap(), 6);
    let (a, b) = write_all(&mut old, &events);
    let mut new = Sqlite::open(&new_path, OpenMode::Write).unwrap();
    assert_eq!(new.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(write_all(&mut new, &events), (a, b));
    drop((old, new));

    let old = Sqlite::open(&old_path, OpenMode::Read).unwrap();
    assert_eq!(old.schema_version().unwrap(), 6, "a reader does not migrate");
    let new = Sqlite::open(&new_path, OpenMode::Read).unwrap();
    let want = reads(&old, a, b);
    assert_same(&reads(&new, a, b), &want);
    assert_eq!(counts(&new, a, b), counts(&old, a, b));
    assert_eq!(counts(&new, a, b)[..3], [17_259, 4 * 17_259, 0]);
    // The whole of each capture in time order, every event of it there.
    let all_b = &want[1].1;
    assert_eq!(all_b.len(), 4 * 17_259);
    assert!(all_b.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert!(all_b.windows(4).any(|w| w.iter().map(|e| e.weight).collect::<Vec<_>>()
        == [w[0].weight, w[0].weight + 1, w[0].weight + 2, w[0].weight + 3]));
    let stacks: Vec<_> = all_b.iter().map(|e| e.stack).collect();
    let texts = new.stack_texts(&stacks).unwrap();
    let mut by_time = events.clone();
    by_time.sort_by_key(|e| e.ts_ns);
    assert_eq!(texts[0], by_time[0].stack.join(";").into_bytes());
    let (old_bytes, new_bytes) = (
        table_bytes(&old_path, "events") + table_bytes(&old_path, "events_time"),
        table_bytes(&new_path, "event_blocks"),
    );
    assert!(new_bytes * 4 < old_bytes, "{new_bytes} bytes of blocks, {old_bytes} of rows");
    drop((old, new));

    // Migrated in place: the same answers, the rows gone.
    let db = Sqlite::open(&old_path, OpenMode::Write).unwrap();
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
    assert_same(&reads(&db, a, b), &want);
    assert_eq!(counts(&db, a, b), counts(&Sqlite::open(&new_path, OpenMode::Read).unwrap(), a, b));
    let c = rusqlite::Connection::open(&old_path).unwrap();
    let left: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('events', 'events_v6', 'events_time')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
    let blocks: i64 = c.query_row("SELECT count(*) FROM event_blocks", [], |r| r.get(0)).unwrap();
    assert!(blocks >= 4, "{blocks}");
}

#[test]
fn retention_cuts_blocks_by_time_and_keeps_the_stacks_of_kept_events() {
    let d = dir("retain");
    let events = real_events();
    let mut dbs = Vec::new();
    for (name, version) in [("v6.db", 6), ("v7.db", SCHEMA_VERSION)] {
        let mut db = Sqlite::open_at_version(d.join(name), version).unwrap();
        let ids = write_all(&mut db, &events);
        dbs.push((db, ids));
    }
    // A cutoff inside capture a's windows and inside capture b's one append.
    let cutoff = T0 + 900_000_123;
    let policy = Policy { retain_ns: Some(60 * SEC), ..Policy::new(cutoff + 60 * SEC) };
    let mut results = Vec::new();
    for (db, (a, b)) in &mut dbs {
        let before = db.capture_events(*b, i64::MIN, i64::MAX).unwrap();
        let m = db.maintain(&policy).unwrap();
        let after = reads(db, *a, *b);
        let kept: Vec<StoredEvent> = before.iter().filter(|e| e.time_ns >= cutoff).cloned().collect();
        assert_eq!(after[1].1, kept, "capture b after retention");
        assert!(kept.len() < before.len() && !kept.is_empty());
        assert_eq!(db.capture_event_count(*b).unwrap(), kept.len() as u64);
        assert!(m.orphan_stacks > 0, "stacks of expired calls only: {m:?}");
        // Every kept event's stack is still there, and says what it said.
        let stacks: Vec<_> = after.iter().flat_map(|(_, evs)| evs.iter().map(|e| e.stack)).collect();
        db.stack_texts(&stacks).unwrap();
        results.push((m.expired_rows, m.orphan_stacks, after));
    }
    let (v7, v6) = (results.pop().unwrap(), results.pop().unwrap());
    assert_eq!((v7.0, v7.1), (v6.0, v6.1), "events expired, stacks deleted");
    assert_same(&v7.2, &v6.2);
}

#[test]
fn a_damaged_block_is_an_error_naming_its_row() {
    let d = dir("damaged");
    let pristine = d.join("h.db");
    let events = real_events();
    let mut db = Sqlite::open(&pristine, OpenMode::Write).unwrap();
    let (a, _) = write_all(&mut db, &events);
    drop(db);
    let c = rusqlite::Connection::open(&pristine).unwrap();
    // The block of capture a's last window: maintenance below deletes an earlier one, then
    // reads every block's stacks.
    let id: i64 =
        c.query_row("SELECT max(id) FROM event_blocks WHERE capture = ?1", [a.0], |r| r.get(0)).unwrap();
    let data: Vec<u8> =
        c.query_row("SELECT data FROM event_blocks WHERE id = ?1", [id], |r| r.get(0)).unwrap();
    drop(c);
    let mut bad = data.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x5a;
    bad.truncate(bad.len() - 3);
    for (i, blob) in [bad, vec![1, 2, 3], vec![9], Vec::new()].into_iter().enumerate() {
        let path = d.join(format!("h{i}.db"));
        std::fs::copy(&pristine, &path).unwrap();
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute("UPDATE event_blocks SET data = ?2 WHERE id = ?1", rusqlite::params![id, blob]).unwrap();
        drop(c);
        let db = Sqlite::open(&path, OpenMode::Read).unwrap();
        let e = db.capture_events(a, i64::MIN, i64::MAX).unwrap_err();
        let named = format!("event_blocks row {id}: ");
        assert!(
            matches!(&e, StoreError::Corrupt { store, detail } if store.ends_with(&format!("h{i}.db")) && detail.starts_with(&named)),
            "{e}"
        );
        // A range that does not reach the block reads as before.
        assert!(!db.capture_events(a, T0, T0 + 100_000_000).unwrap().is_empty());
        drop(db);
        // Maintenance meets it too, and deletes no stack for it.
        let mut w = Sqlite::open(&path, OpenMode::Write).unwrap();
        let e =
            w.maintain(&Policy { retain_ns: Some(SEC), ..Policy::new(T0 + SEC + 200_000_000) }).unwrap_err();
        assert!(matches!(&e, StoreError::Corrupt { detail, .. } if detail.starts_with(&named)), "{e}");
    }
}

/// The rows of `capture` per host, with their first times, counts and bytes.
fn rows_of(path: &Path, capture: CaptureId) -> Vec<(i64, i64, i64, i64, Vec<u8>)> {
    let c = rusqlite::Connection::open(path).unwrap();
    c.prepare("SELECT id, host, first_ns, count, data FROM event_blocks WHERE capture = ?1 ORDER BY id")
        .unwrap()
        .query_map([capture.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Appends as the watcher does: the calls of the fixture spread over 71 minutes, the slowest ten of each 10-s bucket, a bucket at a time in time order, for two hosts (web2's 1 ns
/// later); the calls of one bucket a minute are appended a bucket late; and a capture of
/// every call of the first 200 ms, which folding leaves alone.
fn append_outliers_as_the_watcher(db: &mut Sqlite, events: &[Owned]) -> CaptureId {
    let mut spread = events.to_vec();
    spread.sort_by_key(|e| e.ts_ns);
    // The fixture comes in bursts: its calls in their order, 247 ms apart (plus their
    // microseconds and nanoseconds).
    for (i, e) in spread.iter_mut().enumerate() {
        e.ts_ns = T0 as u64 + i as u64 * 247_000_000 + e.ts_ns % 1_000_000;
    }
    let bucket = |e: &Owned| (e.ts_ns - T0 as u64) / (10 * SEC as u64);
    // The slowest ten of each bucket, in time order (ties of duration as they came).
    let buckets: Vec<Vec<Owned>> = spread
        .chunk_by(|a, b| bucket(a) == bucket(b))
        .map(|b| {
            let mut b = b.to_vec();
            b.sort_by_key(|e| std::cmp::Reverse(e.duration_ns));
            b.truncate(10);
            b.sort_by_key(|e| e.ts_ns);
            b
        })
        .collect();
    assert!(buckets.len() > 400, "{}", buckets.len());
    let append = |db: &mut Sqlite, window: &[Owned]| {
        let recs: Vec<EventRecord<'_>> = window.iter().map(Owned::record).collect();
        db.append_outliers("web1", LatencyKind::Syscall, &recs).unwrap();
        let later: Vec<EventRecord<'_>> =
            recs.iter().map(|r| EventRecord { ts_ns: r.ts_ns.map(|t| t + 1), ..*r }).collect();
        db.append_outliers("web2", LatencyKind::Syscall, &later).unwrap();
    };
    let mut late: Option<&Vec<Owned>> = None;
    for (k, window) in buckets.iter().enumerate() {
        if k % 6 == 3 {
            late = Some(window);
            continue;
        }
        append(db, window);
        if let Some(w) = late.take() {
            append(db, w);
        }
    }
    if let Some(w) = late {
        append(db, w);
    }
    let meta = Meta::with_unit(Unit::Nanoseconds);
    let c = db
        .begin_capture(&CaptureStart {
            host: "web1",
            kind: Kind::Syscalls,
            start_ns: T0,
            trigger: None,
            meta: &meta,
        })
        .unwrap();
    for window in events.iter().filter(|e| e.ts_ns < T0 as u64 + 200_000_000).collect::<Vec<_>>().chunks(50) {
        let recs: Vec<EventRecord<'_>> = window.iter().map(|e| e.record()).collect();
        db.append_events(c, &recs).unwrap();
    }
    c
}

/// Everything a reader asks of outliers and of a capture, over ranges that cut the data anywhere.
fn outlier_reads(db: &Sqlite, capture: CaptureId) -> Vec<(String, Vec<StoredEvent>)> {
    let mut out = Vec::new();
    let span = 75 * 60 * SEC;
    let mut ranges = vec![(i64::MIN, i64::MAX), (T0, T0 + 1), (T0 + 3_600 * SEC, i64::MAX)];
    for k in 0..17 {
        let from = T0 + k * span / 17 + k * 7_777;
        ranges.push((from, from + span / 11));
    }
    for &(from, to) in &ranges {
        out.push((format!("capture [{from}, {to})"), db.capture_events(capture, from, to).unwrap()));
        for host in [None, Some("web1"), Some("web2"), Some("nohost")] {
            out.push((
                format!("outliers of {host:?} [{from}, {to})"),
                db.outliers(LatencyKind::Syscall, from, to, host).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn outliers_of_closed_spans_fold_into_a_row_each_and_read_as_before() {
    let d = dir("fold");
    let (plain_path, path) = (d.join("plain.db"), d.join("folded.db"));
    let events = real_events();
    let mut plain = Sqlite::open(&plain_path, OpenMode::Write).unwrap();
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let c = append_outliers_as_the_watcher(&mut plain, &events);
    assert_eq!(append_outliers_as_the_watcher(&mut db, &events), c);
    let want = outlier_reads(&plain, c);
    let outliers = kflame_store::outlier_capture(LatencyKind::Syscall);
    let appended = rows_of(&path, outliers);
    let capture_rows = rows_of(&path, c);
    let total = db.capture_event_count(outliers).unwrap();
    assert!(total > 400, "{total}");
    let min = 60 * SEC;
    // Per host, the rows whose first event is in [from, to).
    let rows_in = |from: i64, to: i64| -> Vec<usize> {
        let rows = rows_of(&path, outliers);
        [1, 2].iter().map(|h| rows.iter().filter(|r| r.1 == *h && r.2 >= from && r.2 < to).count()).collect()
    };
    assert!(rows_in(T0, T0 + 10 * min).iter().all(|&n| n > 1), "{:?}", rows_in(T0, T0 + 10 * min));

    // Ten minutes closed, but not a minute ago yet: nothing folds.
    let m = db.maintain(&Policy::new(T0 + 10 * min + 59 * SEC)).unwrap();
    assert_eq!((m.folded_event_rows, rows_of(&path, outliers).len()), (0, appended.len()));
    // A minute later the first span is a row per host, read as before.
    let m = db.maintain(&Policy::new(T0 + 11 * min)).unwrap();
    assert_eq!(rows_in(T0, T0 + 10 * min), [1, 1]);
    assert_eq!(m.folded_event_rows as usize, appended.len() - rows_of(&path, outliers).len());
    assert!(rows_in(T0 + 10 * min, T0 + 20 * min).iter().all(|&n| n > 1));
    assert_same(&outlier_reads(&db, c), &want);
    // The first row of the span kept its id.
    assert_eq!(rows_of(&path, outliers)[0].0, appended[0].0);

    // Two hours on: the first hour a row per host, and each ten minutes after it.
    db.maintain(&Policy::new(T0 + 120 * min)).unwrap();
    assert_eq!(rows_in(T0, T0 + 60 * min), [1, 1]);
    assert_eq!(rows_in(T0 + 60 * min, T0 + 70 * min), [1, 1]);
    assert_eq!(rows_in(T0 + 70 * min, T0 + 80 * min), [1, 1]);
    assert_eq!(rows_of(&path, outliers).len(), 6);
    assert_same(&outlier_reads(&db, c), &want);
    assert_eq!(db.capture_event_count(outliers).unwrap(), total);
    assert_eq!(db.capture_event_count(c).unwrap(), plain.capture_event_count(c).unwrap());
    // A capture's own rows are left as they were.
    assert_eq!(rows_of(&path, c), capture_rows);
    // Nothing more to fold until the second hour closes: then it is a row per host.
    assert_eq!(db.maintain(&Policy::new(T0 + 120 * min)).unwrap().folded_event_rows, 0);
    assert_eq!(db.maintain(&Policy::new(T0 + 121 * min)).unwrap().folded_event_rows, 2);
    assert_eq!(rows_in(T0 + 60 * min, T0 + 120 * min), [1, 1]);
    assert_same(&outlier_reads(&db, c), &want);
    assert!(table_bytes(&path, "event_blocks") < table_bytes(&plain_path, "event_blocks"));

    // An outlier written late into the folded hour joins it at the next run.
    let late = Owned { ts_ns: T0 as u64 + 5 * min as u64 + 17, ..events[0].clone() };
    for db in [&mut plain, &mut db] {
        db.append_outliers("web1", LatencyKind::Syscall, &[late.record()]).unwrap();
    }
    assert_eq!(rows_in(T0, T0 + 60 * min), [2, 1]);
    assert_eq!(db.maintain(&Policy::new(T0 + 122 * min)).unwrap().folded_event_rows, 1);
    assert_eq!(rows_in(T0, T0 + 60 * min), [1, 1]);
    let want = outlier_reads(&plain, c);
    assert_same(&outlier_reads(&db, c), &want);

    // Retention cuts a folded row by event time and keeps every stack a kept event uses.
    let cutoff = T0 + 37 * min + 123;
    let policy = Policy { retain_ns: Some(60 * SEC), ..Policy::new(cutoff + 60 * SEC) };
    let m = db.maintain(&policy).unwrap();
    assert!(m.expired_rows > 0, "{m:?}");
    let kept: Vec<StoredEvent> = want[1].1.iter().filter(|e| e.time_ns >= cutoff).cloned().collect();
    let after = db.outliers(LatencyKind::Syscall, i64::MIN, i64::MAX, None).unwrap();
    assert_same(&[("after retention".into(), after.clone())], &[(String::new(), kept.clone())]);
    assert!(!kept.is_empty() && kept.len() < want[1].1.len());
    let stacks: Vec<_> = after.iter().map(|e| e.stack).collect();
    let texts = db.stack_texts(&stacks).unwrap();
    assert!(texts.iter().all(|t| !t.is_empty()));
    assert_eq!(db.capture_event_count(outliers).unwrap(), kept.len() as u64);
}

/// A fold is one transaction: one of its rows damaged, the fold fails naming the row, and
/// every row of the span is still there, read as before where the damage does not reach.
#[test]
fn a_fold_that_fails_leaves_the_rows_as_they_were() {
    let d = dir("fold-damaged");
    let path = d.join("h.db");
    let events = real_events();
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let c = append_outliers_as_the_watcher(&mut db, &events);
    let want = outlier_reads(&db, c);
    drop(db);
    let outliers = kflame_store::outlier_capture(LatencyKind::Syscall);
    let rows = rows_of(&path, outliers);
    // The last row of web1's first ten minutes: what precedes it still reads.
    let id = rows.iter().rfind(|r| r.1 == 1 && r.2 < T0 + 600 * SEC).unwrap().0;
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE event_blocks SET data = x'01020304' WHERE id = ?1", [id]).unwrap();
    drop(conn);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let e = db.maintain(&Policy::new(T0 + 120 * 60 * SEC)).unwrap_err();
    assert!(
        matches!(&e, StoreError::Corrupt { detail, .. } if detail.starts_with(&format!("event_blocks row {id}: "))),
        "{e}"
    );
    let left = rows_of(&path, outliers);
    let first = |rows: &[(i64, i64, i64, i64, Vec<u8>)]| {
        rows.iter().filter(|r| r.1 == 1 && r.2 < T0 + 600 * SEC).map(|r| r.0).collect::<Vec<_>>()
    };
    assert!(first(&rows).len() > 1);
    assert_eq!(first(&left), first(&rows));
    assert!(left.iter().any(|r| r.0 == id));
    let upto = rows.iter().find(|r| r.0 == id).unwrap().2 - 10 * SEC;
    let before: Vec<StoredEvent> = want[2].1.iter().filter(|e| e.time_ns < upto).cloned().collect();
    assert!(before.len() > 10, "{}", before.len());
    assert_eq!(db.outliers(LatencyKind::Syscall, i64::MIN, upto, Some("web1")).unwrap(), before);
}
