//! The SQLite store on real stacks: what goes in comes out, ranges are exact, maintenance
//! keeps totals, and bad files are refused without being touched.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kflame::events::{EventKind, EventRecord, Frames};
use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{
    Bucket, CaptureStart, Event, Kind, Metric, OpenMode, Policy, ProfileQuery, Query, SCHEMA_VERSION, Sample,
    Sqlite, Store, StoreError, StoredReport, TriggerFired,
};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Stacks of a real system-wide capture (see the render fixtures' README), expanded to one
/// entry per sample.
fn real_stacks() -> Vec<Vec<u8>> {
    let text = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kflame/tests/data/render/perf-sys-cpuclock.folded"
    ))
    .unwrap();
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let sp = line.iter().rposition(|&b| b == b' ').unwrap();
        let n: usize = std::str::from_utf8(&line[sp + 1..]).unwrap().parse().unwrap();
        for _ in 0..n {
            out.push(line[..sp].to_vec());
        }
    }
    out
}

#[derive(Clone)]
struct Owned {
    time_ns: i64,
    cpu: u32,
    cgroup: Option<&'static str>,
    stack: Vec<u8>,
    weight: Weight,
}

/// `seconds` of samples at 19 Hz on 2 CPUs, stacks drawn in turn from the capture.
fn generate(seconds: i64) -> Vec<Owned> {
    let stacks = real_stacks();
    let mut out = Vec::new();
    let period = SEC / 19;
    let mut k = 0usize;
    for cpu in 0..2u32 {
        let mut t = T0 + i64::from(cpu) * 7_000_000;
        while t < T0 + seconds * SEC {
            let stack = stacks[k % stacks.len()].clone();
            let cgroup = if k.is_multiple_of(3) {
                Some("/system.slice/nginx.service")
            } else if k % 3 == 1 {
                Some("/user.slice")
            } else {
                None
            };
            out.push(Owned {
                time_ns: t + (k as i64 % 5) * 1_000,
                cpu,
                cgroup,
                stack,
                weight: Weight::from_u64(1),
            });
            k += 1;
            t += period;
        }
    }
    out
}

fn write_buckets(db: &mut Sqlite, samples: &[Owned], bucket_ns: i64, host: &str, meta: &Meta) {
    write_buckets_kind(db, samples, bucket_ns, host, Kind::Cpu, meta);
}

/// [`write_buckets`] of any kind.
fn write_buckets_kind(
    db: &mut Sqlite,
    samples: &[Owned],
    bucket_ns: i64,
    host: &str,
    kind: Kind,
    meta: &Meta,
) {
    let end = samples.iter().map(|s| s.time_ns).max().unwrap() + 1;
    let mut start = T0;
    while start < end {
        let these: Vec<&Owned> =
            samples.iter().filter(|s| s.time_ns >= start && s.time_ns < start + bucket_ns).collect();
        write_bucket(db, &these, start, bucket_ns, host, kind, meta);
        start += bucket_ns;
    }
}

/// One bucket of `samples` over `[start, start + len)`.
fn write_bucket(
    db: &mut Sqlite,
    samples: &[&Owned],
    start: i64,
    len: i64,
    host: &str,
    kind: Kind,
    meta: &Meta,
) {
    let these: Vec<Sample<'_>> = samples
        .iter()
        .map(|s| Sample {
            time_ns: s.time_ns,
            cpu: s.cpu,
            cgroup: s.cgroup,
            stack: &s.stack,
            weight: s.weight,
        })
        .collect();
    db.append_bucket(&Bucket {
        host,
        kind,
        start_ns: start,
        end_ns: start + len,
        capture: None,
        meta,
        samples: &these,
        aggregated: &[],
    })
    .unwrap();
}

/// What the profile of `[from, to)` must be, computed from the input.
fn expected(samples: &[Owned], from: i64, to: i64, cgroup: Option<&str>) -> BTreeMap<Vec<u8>, Weight> {
    let mut m = BTreeMap::new();
    for s in samples {
        if s.time_ns >= from
            && s.time_ns < to
            && cgroup.is_none_or(|c| s.cgroup.is_some_and(|sc| sc.starts_with(c)))
        {
            *m.entry(s.stack.clone()).or_insert(Weight::ZERO) += s.weight;
        }
    }
    m
}

fn got(db: &Sqlite, q: &ProfileQuery<'_>) -> BTreeMap<Vec<u8>, Weight> {
    let p = db.profile(q).unwrap();
    p.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w)).collect()
}

/// A new history of a minute of CPU samples of `web1` in 10 s buckets (in its own directory,
/// `name`), opened for reading: the database, its samples and their unit.
fn minute_of_web1(name: &str) -> (Sqlite, Vec<Owned>, Meta) {
    let path = dir(name).join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let samples = generate(60);
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    write_buckets(&mut db, &samples, 10 * SEC, "web1", &meta);
    drop(db);
    (Sqlite::open(&path, OpenMode::Read).unwrap(), samples, meta)
}

#[test]
fn ranges_are_exact_to_the_sample() {
    let (db, samples, meta) = minute_of_web1("ranges");
    // Whole, and cut inside buckets at odd times.
    for (from, to) in
        [(T0, T0 + 60 * SEC), (T0 + 3_333_333_333, T0 + 27_777_777_777), (T0 + 15 * SEC, T0 + 15 * SEC + 1)]
    {
        let q = ProfileQuery::new(Kind::Cpu, from, to);
        assert_eq!(got(&db, &q), expected(&samples, from, to, None), "[{from}, {to})");
    }
    let p = db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC)).unwrap();
    assert_eq!(p.meta, meta);
    assert_eq!(p.samples, samples.len() as u64);
    // Adjacent ranges add up to the whole.
    let a = db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 12_345_678_901)).unwrap();
    let b = db.profile(&ProfileQuery::new(Kind::Cpu, T0 + 12_345_678_901, T0 + 60 * SEC)).unwrap();
    assert_eq!(a.stacks.total() + b.stacks.total(), p.stacks.total());
    // By cgroup (a path matches itself and below).
    let q = ProfileQuery { cgroup: Some("/system.slice"), ..ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC) };
    assert_eq!(got(&db, &q), expected(&samples, T0, T0 + 60 * SEC, Some("/system.slice/")));
    // By host.
    let q = ProfileQuery { host: Some("web2"), ..ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC) };
    assert!(db.profile(&q).unwrap().stacks.is_empty());
    assert!(db.profile(&ProfileQuery::new(Kind::Mem, T0, T0 + 60 * SEC)).unwrap().stacks.is_empty());
    // Heat map points: every sample of the range, at the stored resolution (1 ms, times
    // truncated), in time order.
    const MS: i64 = 1_000_000;
    let pts = db.samples(&ProfileQuery::new(Kind::Cpu, T0 + 5 * SEC, T0 + 25 * SEC)).unwrap();
    let mut want: Vec<(i64, u32)> = samples
        .iter()
        .filter(|s| s.time_ns >= T0 + 5 * SEC && s.time_ns < T0 + 25 * SEC)
        .map(|s| (s.time_ns / MS * MS, s.cpu))
        .collect();
    want.sort();
    assert_eq!(pts.iter().map(|p| (p.time_ns, p.cpu)).collect::<Vec<_>>(), want);
    let first =
        samples.iter().find(|s| s.time_ns / MS * MS == pts[0].time_ns && s.cpu == pts[0].cpu).unwrap();
    assert_eq!(db.stack_text(pts[0].stack).unwrap(), first.stack);
    assert_eq!(db.hosts().unwrap(), vec!["web1".to_string()]);
    assert_eq!(db.time_bounds().unwrap(), Some((T0, T0 + 60 * SEC)));
}

/// The folded stacks of a tree, by their frames.
fn tree_stacks(t: &kflame::fold::tree::StackTree) -> BTreeMap<Vec<u8>, Weight> {
    t.to_counts().sorted().into_iter().map(|(s, w)| (s.to_vec(), w)).collect()
}

/// A reader that has only the trait's defaults for trees: they come from the texts.
struct TextsOnly<'a>(&'a Sqlite);

impl Query for TextsOnly<'_> {
    fn profile(&self, q: &ProfileQuery<'_>) -> Result<kflame_store::Profile, StoreError> {
        self.0.profile(q)
    }
    fn samples(&self, q: &ProfileQuery<'_>) -> Result<Vec<kflame_store::SamplePoint>, StoreError> {
        self.0.samples(q)
    }
    fn stack_text(&self, id: kflame_store::StackId) -> Result<Vec<u8>, StoreError> {
        self.0.stack_text(id)
    }
    fn series(&self, q: &kflame_store::SeriesQuery<'_>) -> Result<Vec<kflame_store::Series>, StoreError> {
        self.0.series(q)
    }
    fn metric_names(&self, host: Option<&str>) -> Result<Vec<(String, String)>, StoreError> {
        self.0.metric_names(host)
    }
    fn outliers(
        &self,
        kind: kflame_store::LatencyKind,
        from: i64,
        to: i64,
        host: Option<&str>,
    ) -> Result<Vec<kflame_store::StoredEvent>, StoreError> {
        self.0.outliers(kind, from, to, host)
    }
    fn latency(
        &self,
        q: &kflame_store::LatencyQuery<'_>,
    ) -> Result<Vec<kflame_store::LatencySeries>, StoreError> {
        self.0.latency(q)
    }
    fn latency_labels(
        &self,
        host: Option<&str>,
        from: i64,
        to: i64,
    ) -> Result<Vec<(kflame_store::LatencyKind, String)>, StoreError> {
        self.0.latency_labels(host, from, to)
    }
    fn events(&self, from: i64, to: i64, host: Option<&str>) -> Result<Vec<kflame_store::Event>, StoreError> {
        self.0.events(from, to, host)
    }
    fn capture_events(
        &self,
        c: kflame_store::CaptureId,
        from: i64,
        to: i64,
    ) -> Result<Vec<kflame_store::StoredEvent>, StoreError> {
        self.0.capture_events(c, from, to)
    }
    fn hosts(&self) -> Result<Vec<String>, StoreError> {
        self.0.hosts()
    }
    fn time_bounds(&self) -> Result<Option<(i64, i64)>, StoreError> {
        self.0.time_bounds()
    }
}

#[test]
fn a_range_as_a_tree_is_built_from_frame_ids_and_holds_every_sample() {
    let (db, samples, _) = minute_of_web1("tree");
    for (from, to, cgroup) in [
        (T0, T0 + 60 * SEC, None),
        (T0 + 3_333_333_333, T0 + 27_777_777_777, None),
        (T0, T0 + 60 * SEC, Some("/system.slice")),
    ] {
        let q = ProfileQuery { cgroup, ..ProfileQuery::new(Kind::Cpu, from, to) };
        let t = db.profile_tree(&q).unwrap();
        let want = expected(&samples, from, to, cgroup.map(|c| format!("{c}/")).as_deref());
        assert!(!want.is_empty());
        assert_eq!(tree_stacks(&t.tree), want, "[{from}, {to}) {cgroup:?}");
        let p = db.profile(&q).unwrap();
        assert_eq!(
            (t.samples, t.buckets, t.mixed_units, &t.meta),
            (p.samples, p.buckets, p.mixed_units, &p.meta)
        );
        assert_eq!(t.tree.total(), p.stacks.total());
        // The trait's default (from the texts) gives the same tree.
        let by_text = TextsOnly(&db).profile_tree(&q).unwrap();
        assert_eq!(tree_stacks(&by_text.tree), want);
        assert_eq!(by_text.tree.nodes().len(), t.tree.nodes().len());
        assert_eq!(by_text.tree.names().len(), t.tree.names().len());
    }
    // Stacks by id (repeated ids add up), from the heat map's points.
    let pts = db.samples(&ProfileQuery::new(Kind::Cpu, T0 + 5 * SEC, T0 + 25 * SEC)).unwrap();
    let pairs: Vec<(kflame_store::StackId, Weight)> = pts.iter().map(|p| (p.stack, p.weight)).collect();
    let t = db.stacks_tree(&pairs).unwrap();
    let by_text = TextsOnly(&db).stacks_tree(&pairs).unwrap();
    assert_eq!(t.total(), Weight::from_u64(pts.len() as u64));
    assert_eq!(tree_stacks(&t), tree_stacks(&by_text));
    assert_eq!(tree_stacks(&t), expected(&samples, T0 + 5 * SEC, T0 + 25 * SEC, None));
    // An empty range is an empty tree.
    let empty = db.profile_tree(&ProfileQuery::new(Kind::Mem, T0, T0 + 60 * SEC)).unwrap();
    assert!(empty.tree.is_empty());
    assert_eq!(empty.samples, 0);
}

#[test]
fn metrics_events_and_reports_come_back() {
    let d = dir("metrics");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let mut want = Vec::new();
    for i in 0..300i64 {
        let usr = ((i * 37) % 1000) as f64 / 10.0;
        want.push((T0 + i * SEC, usr));
        db.append_metrics(
            "web1",
            T0 + i * SEC,
            &[
                Metric { name: "cpu.usr", label: "", value: usr },
                Metric { name: "cpu.usr", label: "cpu1", value: usr / 3.0 },
            ],
        )
        .unwrap();
    }
    let trig = db
        .append_trigger(&TriggerFired {
            host: "web1",
            time_ns: T0 + 100 * SEC,
            rule: "cpu > 80% for 5s => cpu 30s",
            metric: "cpu",
            value: 91.5,
            threshold: 80.0,
        })
        .unwrap();
    let meta = Meta::with_unit(Unit::Nanoseconds);
    let cap = db
        .begin_capture(&CaptureStart {
            host: "web1",
            kind: Kind::Syscalls,
            start_ns: T0 + 101 * SEC,
            trigger: Some(trig),
            meta: &meta,
        })
        .unwrap();
    let frames = vec!["dd".to_string(), "write".to_string()];
    let ev = EventRecord {
        kind: EventKind::Syscall,
        ts_ns: Some((T0 + 102 * SEC) as u64),
        duration_ns: Some(5000),
        cpu: 1,
        pid: Some(42),
        tid: Some(43),
        comm: Some("dd"),
        event: "syscall:write",
        weight: 5000,
        stack: Frames::Text(&frames),
    };
    db.append_events(cap, &[ev]).unwrap();
    db.end_capture(cap, T0 + 131 * SEC, "done").unwrap();
    db.append_report(&StoredReport {
        host: "web1",
        time_ns: T0 + 200 * SEC,
        kind: "warning",
        title: "WARNING: CPU: 1 PID: 7 at foo",
        stack: "foo;bar",
        text: "WARNING: ...\n",
    })
    .unwrap();
    drop(db); // flushes the metric block in progress

    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let q = kflame_store::SeriesQuery {
        name: "cpu.usr",
        label: Some(""),
        host: None,
        from_ns: T0,
        to_ns: T0 + 300 * SEC,
        points: None,
    };
    let s = db.series(&q).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].points.iter().map(|p| (p.time_ns, p.avg)).collect::<Vec<_>>(), want);
    let all = db.series(&kflame_store::SeriesQuery { label: None, ..q }).unwrap();
    assert_eq!(all.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["", "cpu1"]);
    // Several names at once: each as asked alone, in the order asked; an unknown name none.
    let many = db.series_many(&["nope", "cpu.usr"], &kflame_store::SeriesQuery { label: None, ..q }).unwrap();
    assert_eq!(many, all);
    // Resampled to 10 points: each the min, max and mean of its 30 values.
    let r = db.series(&kflame_store::SeriesQuery { points: Some(10), ..q }).unwrap();
    assert_eq!(r[0].points.len(), 10);
    for (k, p) in r[0].points.iter().enumerate() {
        let part = &want[k * 30..(k + 1) * 30];
        assert_eq!(p.count, 30);
        assert_eq!(p.min, part.iter().map(|v| v.1).fold(f64::INFINITY, f64::min));
        assert_eq!(p.max, part.iter().map(|v| v.1).fold(f64::NEG_INFINITY, f64::max));
        assert!((p.avg - part.iter().map(|v| v.1).sum::<f64>() / 30.0).abs() < 1e-9);
    }
    assert_eq!(
        db.metric_names(None).unwrap(),
        vec![("cpu.usr".to_string(), String::new()), ("cpu.usr".into(), "cpu1".into())]
    );

    let evs = db.events(T0, T0 + 300 * SEC, None).unwrap();
    assert_eq!(evs.len(), 3);
    assert!(matches!(&evs[0], Event::Trigger { metric, value, .. } if metric == "cpu" && *value == 91.5));
    assert!(
        matches!(&evs[1], Event::Capture { kind: Kind::Syscalls, end_ns: Some(e), trigger: Some(t), note: Some(n), .. } if *e == T0 + 131 * SEC && *t == trig && n == "done")
    );
    assert!(matches!(&evs[2], Event::Report { kind, .. } if kind == "warning"));
    // Reports alone, by time: the one the range gave, at its very nanosecond too.
    assert_eq!(db.reports(T0, T0 + 300 * SEC, None).unwrap(), vec![evs[2].clone()]);
    let at = evs[2].time_ns();
    assert_eq!(db.reports(at, at + 1, Some("web1")).unwrap(), vec![evs[2].clone()]);
    assert!(db.reports(at + 1, at + 2, None).unwrap().is_empty());
    assert!(db.reports(at, at + 1, Some("nohost")).unwrap().is_empty());
    let recs = db.capture_events(cap, T0, T0 + 300 * SEC).unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(db.capture_event_count(cap).unwrap(), 1);
    assert_eq!(db.capture_event_count(kflame_store::CaptureId(cap.0 + 1000)).unwrap(), 0);
    // Looked up by id: the same capture as the range gave, none for an unknown id.
    assert_eq!(db.capture(cap).unwrap().as_ref(), Some(&evs[1]));
    assert_eq!(db.capture(kflame_store::CaptureId(cap.0 + 1000)).unwrap(), None);
    assert_eq!(
        (recs[0].pid, recs[0].tid, recs[0].duration_ns, recs[0].comm.as_str()),
        (42, 43, Some(5000), "dd")
    );
    assert_eq!(db.stack_text(recs[0].stack).unwrap(), b"dd;write");
}

#[test]
fn a_reader_queries_while_the_writer_writes() {
    let d = dir("concurrent");
    let path = d.join("h.db");
    let samples = generate(120);
    let meta = Meta::with_unit(Unit::Samples);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    write_buckets(&mut db, &samples[..10], 10 * SEC, "web1", &meta);
    let reader = Sqlite::open(&path, OpenMode::Read).unwrap();
    std::thread::scope(|s| {
        let w = s.spawn(move || {
            write_buckets(&mut db, &samples, 10 * SEC, "web1", &meta);
        });
        let mut reads = 0;
        while !w.is_finished() || reads == 0 {
            reader.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 200 * SEC)).unwrap();
            reads += 1;
        }
        w.join().unwrap();
    });
}

#[test]
fn downsampling_and_retention_keep_what_they_promise() {
    let d = dir("maintain");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let samples = generate(600);
    let meta = Meta::with_unit(Unit::Samples);
    write_buckets(&mut db, &samples, 10 * SEC, "web1", &meta);
    let whole = |db: &Sqlite| got(db, &ProfileQuery::new(Kind::Cpu, T0, T0 + 600 * SEC));
    let before = whole(&db);
    // Buckets older than 5 min (now = T0 + 10 min) drop to counts per minute.
    let m =
        db.maintain(&Policy { downsample_after_ns: Some(300 * SEC), ..Policy::new(T0 + 600 * SEC) }).unwrap();
    assert_eq!(m.downsampled_buckets, 30);
    assert_eq!(whole(&db), before);
    // Per-minute ranges stay exact; heat-map points are gone there.
    assert_eq!(
        got(&db, &ProfileQuery::new(Kind::Cpu, T0 + 60 * SEC, T0 + 120 * SEC)),
        expected(&samples, T0 + 60 * SEC, T0 + 120 * SEC, None)
    );
    assert!(db.samples(&ProfileQuery::new(Kind::Cpu, T0, T0 + 300 * SEC)).unwrap().is_empty());
    let q = ProfileQuery { cgroup: Some("/user.slice"), ..ProfileQuery::new(Kind::Cpu, T0, T0 + 600 * SEC) };
    assert_eq!(got(&db, &q), expected(&samples, T0, T0 + 600 * SEC, Some("/user.slice")));
    // Retention of 2 min deletes every bucket that ended 2 min before now.
    db.maintain(&Policy { retain_ns: Some(120 * SEC), ..Policy::new(T0 + 600 * SEC) }).unwrap();
    assert!(whole(&db).len() < before.len() || whole(&db) != before);
    assert_eq!(got(&db, &ProfileQuery::new(Kind::Cpu, T0, T0 + 480 * SEC)), BTreeMap::new());
    assert_eq!(
        got(&db, &ProfileQuery::new(Kind::Cpu, T0 + 480 * SEC, T0 + 600 * SEC)),
        expected(&samples, T0 + 480 * SEC, T0 + 600 * SEC, None)
    );
}

#[test]
fn a_disk_budget_shrinks_the_file() {
    let d = dir("budget");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let samples = generate(1800);
    write_buckets(&mut db, &samples, 10 * SEC, "web1", &Meta::with_unit(Unit::Samples));
    db.maintain(&Policy::new(T0)).unwrap();
    let full = std::fs::metadata(&path).unwrap().len();
    // Room for half of the sample blobs (the stacks stay: every bucket refers to them).
    let blobs: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT sum(length(data)) FROM buckets", [], |r| r.get(0))
        .unwrap();
    let budget = db.used_bytes().unwrap() - blobs as u64 / 2;
    let m = db.maintain(&Policy { max_bytes: Some(budget), ..Policy::new(T0 + 1800 * SEC) }).unwrap();
    assert!(m.budget_rows > 0);
    assert!(db.used_bytes().unwrap() <= budget, "{} > {budget}", db.used_bytes().unwrap());
    let main_file = std::fs::metadata(&path).unwrap().len();
    assert!(main_file < full, "the file did not shrink: {main_file} of {full}");
    // What is left is the newest part, exact.
    let (lo, hi) = db.time_bounds().unwrap().unwrap();
    assert!(lo > T0 && hi == T0 + 1800 * SEC);
    assert_eq!(got(&db, &ProfileQuery::new(Kind::Cpu, lo, hi)), expected(&samples, lo, hi, None));
}

fn unchanged_after(path: &std::path::Path, mode: OpenMode) -> StoreError {
    let before = std::fs::read(path).unwrap();
    let err = Sqlite::open(path, mode).unwrap_err();
    assert_eq!(std::fs::read(path).unwrap(), before, "{} was written to", path.display());
    assert!(err.to_string().contains(&path.display().to_string()), "{err} does not name the file");
    err
}

#[test]
fn bad_files_are_refused_and_left_alone() {
    let d = dir("bad");
    // Not SQLite at all.
    let text = d.join("notes.txt");
    std::fs::write(&text, "swapper;do_idle 12\n").unwrap();
    for mode in [OpenMode::Write, OpenMode::Read] {
        assert!(matches!(unchanged_after(&text, mode), StoreError::NotADatabase { .. }));
    }
    // A SQLite database of another program.
    let foreign = d.join("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);").unwrap();
    }
    for mode in [OpenMode::Write, OpenMode::Read] {
        let e = unchanged_after(&foreign, mode);
        assert!(matches!(e, StoreError::NotADatabase { .. }), "{e}");
    }
    // A real history, then damaged copies of it.
    let good = d.join("good.db");
    {
        let mut db = Sqlite::open(&good, OpenMode::Write).unwrap();
        write_buckets(&mut db, &generate(120), 10 * SEC, "web1", &Meta::with_unit(Unit::Samples));
        db.maintain(&Policy::new(T0)).unwrap(); // checkpoint: everything in the main file
    }
    let bytes = std::fs::read(&good).unwrap();
    assert!(bytes.len() > 8192);
    let truncated = d.join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for mode in [OpenMode::Write, OpenMode::Read] {
        let e = unchanged_after(&truncated, mode);
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("truncated"), "{e}");
    }
    let corrupt = d.join("corrupt.db");
    let mut c = bytes.clone();
    // Every page after the first (which holds the schema): tables and blobs.
    let page = usize::from(u16::from_be_bytes([c[16], c[17]]));
    for b in &mut c[page..] {
        *b = 0x5a;
    }
    std::fs::write(&corrupt, &c).unwrap();
    let e = unchanged_after(&corrupt, OpenMode::Write);
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    // A reader finds the damage when it reads it.
    match Sqlite::open(&corrupt, OpenMode::Read) {
        Err(e) => assert!(matches!(e, StoreError::Corrupt { .. } | StoreError::NotADatabase { .. }), "{e}"),
        Ok(db) => match db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 200 * SEC)) {
            Ok(_) => panic!("a corrupt database was read without an error"),
            Err(e) => assert!(matches!(e, StoreError::Corrupt { .. }), "{e}"),
        },
    }
    // A future schema version.
    let future = d.join("future.db");
    std::fs::write(&future, &bytes).unwrap();
    rusqlite::Connection::open(&future)
        .unwrap()
        .execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
        .unwrap();
    for mode in [OpenMode::Write, OpenMode::Read] {
        let e = unchanged_after(&future, mode);
        assert!(matches!(e, StoreError::FutureVersion { found, .. } if found == SCHEMA_VERSION + 1), "{e}");
    }
    // A missing file is not created by a reader.
    let missing = d.join("missing.db");
    assert!(Sqlite::open(&missing, OpenMode::Read).is_err());
    assert!(!missing.exists());
}

#[test]
fn an_old_schema_is_migrated_in_place() {
    let d = dir("migrate");
    let path = d.join("h.db");
    let samples = generate(60);
    {
        let mut db = Sqlite::open_at_version(&path, 1).unwrap();
        assert_eq!(db.schema_version().unwrap(), 1);
        write_buckets(&mut db, &samples, 10 * SEC, "web1", &Meta::with_unit(Unit::Samples));
        // Metric rows of the first schema (keyed by series, then time).
        for i in 0..200i64 {
            let m = [Metric { name: "load1", label: "", value: (i % 17) as f64 * 0.25 }];
            db.append_metrics("web1", T0 + i * SEC, &m).unwrap();
        }
    }
    let load = |db: &Sqlite| {
        let q = kflame_store::SeriesQuery {
            name: "load1",
            label: Some(""),
            host: None,
            from_ns: T0,
            to_ns: T0 + 3600 * SEC,
            points: None,
        };
        db.series(&q).unwrap().remove(0).points.iter().map(|p| (p.time_ns, p.avg)).collect::<Vec<_>>()
    };
    let before = load(&Sqlite::open(&path, OpenMode::Read).unwrap());
    assert_eq!(before.len(), 200);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(load(&db), before);
    // The migrated table takes more values, and gives the old and new back in order.
    db.append_metrics("web1", T0 + 200 * SEC, &[Metric { name: "load1", label: "", value: 9.5 }]).unwrap();
    db.flush().unwrap();
    let mut after = before.clone();
    after.push((T0 + 200 * SEC, 9.5));
    assert_eq!(load(&db), after);
    let n: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name IN ('buckets_capture', 'metric_blocks_series')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(
        got(&db, &ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC)),
        expected(&samples, T0, T0 + 60 * SEC, None)
    );
}

#[test]
fn bad_buckets_are_refused_whole() {
    let d = dir("refuse");
    let mut db = Sqlite::open(d.join("h.db"), OpenMode::Write).unwrap();
    let meta = Meta::default();
    let s = [Sample { time_ns: T0 + 20 * SEC, cpu: 0, cgroup: None, stack: b"a;b", weight: Weight::ONE }];
    let e = db
        .append_bucket(&Bucket {
            host: "h",
            kind: Kind::Cpu,
            start_ns: T0,
            end_ns: T0 + 10 * SEC,
            capture: None,
            meta: &meta,
            samples: &s,
            aggregated: &[],
        })
        .unwrap_err();
    assert!(matches!(e, StoreError::Invalid { .. }), "{e}");
    assert!(db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC)).unwrap().stacks.is_empty());
}

#[test]
fn metric_values_keep_two_decimals_and_short_blocks_share_rows() {
    let d = dir("metric-rows");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    // As the watcher: a block of one 10 s bucket.
    db.set_metric_block(10 * SEC);
    let mut want = Vec::new();
    for i in 0..1800i64 {
        // A share of jiffies (not a short decimal), a byte count, a rate.
        let pct = 100.0 * ((i * 7919) % 201) as f64 / 201.0;
        let bytes = (4_000_000_000i64 + (i % 13) * 4096) as f64;
        let rate = ((i * 131) % 997) as f64 / 0.998_7;
        let t = T0 + i * SEC + (i % 3) * 1_000_000;
        want.push((t, pct, bytes, rate));
        db.append_metrics(
            "web1",
            t,
            &[
                Metric { name: "cpu.usr", label: "", value: pct },
                Metric { name: "mem.cached", label: "", value: bytes },
                Metric { name: "ctxt", label: "", value: rate },
            ],
        )
        .unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let get = |name: &str| {
        let q = kflame_store::SeriesQuery {
            name,
            label: Some(""),
            host: None,
            from_ns: T0,
            to_ns: T0 + 3600 * SEC,
            points: None,
        };
        db.series(&q).unwrap().remove(0).points.iter().map(|p| (p.time_ns, p.avg)).collect::<Vec<_>>()
    };
    let round2 = |v: f64| (v * 100.0).round() / 100.0;
    let pct: Vec<(i64, f64)> = want.iter().map(|w| (w.0, round2(w.1))).collect();
    let bytes: Vec<(i64, f64)> = want.iter().map(|w| (w.0, w.2)).collect();
    let rate: Vec<(i64, f64)> = want.iter().map(|w| (w.0, round2(w.3))).collect();
    assert_eq!(get("cpu.usr"), pct);
    assert_eq!(get("mem.cached"), bytes);
    assert_eq!(get("ctxt"), rate);
    // 30 minutes in blocks of 10 s: three rows of 10 minutes for the host's three series,
    // not 180 (nor one per series).
    let c = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = c.query_row("SELECT count(*) FROM metric_spans", [], |r| r.get(0)).unwrap();
    assert_eq!(rows, 3);
    let old: i64 = c.query_row("SELECT count(*) FROM metric_blocks", [], |r| r.get(0)).unwrap();
    assert_eq!(old, 0);
}

#[test]
fn a_schema_3_file_still_reads_its_metrics_and_takes_new_ones() {
    let d = dir("schema3");
    let path = d.join("h.db");
    let values = |i: i64| {
        [
            Metric { name: "cpu.usr", label: "cpu0", value: 100.0 * ((i * 37) % 101) as f64 / 101.0 },
            Metric { name: "mem.cached", label: "", value: (4_000_000_000i64 + (i % 13) * 4096) as f64 },
            Metric { name: "load1", label: "", value: (i % 17) as f64 * 0.25 },
        ]
    };
    {
        // Rows of one series each, as the previous schema stores them.
        let mut db = Sqlite::open_at_version(&path, 3).unwrap();
        assert_eq!(db.schema_version().unwrap(), 3);
        db.set_metric_block(10 * SEC);
        for i in 0..700i64 {
            db.append_metrics("web1", T0 + i * SEC, &values(i)).unwrap();
        }
    }
    let series = |db: &Sqlite, name: &str| {
        let q = kflame_store::SeriesQuery {
            name,
            label: None,
            host: Some("web1"),
            from_ns: T0,
            to_ns: T0 + 3600 * SEC,
            points: None,
        };
        db.series(&q)
            .unwrap()
            .remove(0)
            .points
            .iter()
            .map(|p| (p.time_ns, p.avg.to_bits()))
            .collect::<Vec<_>>()
    };
    let want = |name: &str, n: i64| -> Vec<(i64, u64)> {
        (0..n)
            .map(|i| {
                let m = values(i).into_iter().find(|m| m.name == name).unwrap();
                (T0 + i * SEC, kflame_store::stored_metric_value(m.value).to_bits())
            })
            .collect()
    };
    let names = ["cpu.usr", "mem.cached", "load1"];
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        let rows: i64 = c.query_row("SELECT count(*) FROM metric_blocks", [], |r| r.get(0)).unwrap();
        assert!(rows >= 3 * 2, "{rows} rows of schema 3");
        // A reader of the schema-3 file, before any writer migrates it.
        let db = Sqlite::open(&path, OpenMode::Read).unwrap();
        assert_eq!(db.schema_version().unwrap(), 3);
        for name in names {
            assert_eq!(series(&db, name), want(name, 700), "{name}");
        }
        assert_eq!(db.time_bounds().unwrap().map(|b| b.0), Some(T0));
    }
    // A writer migrates it: the old rows stay readable, new values go to the host's spans,
    // and a series gives both back in order.
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
    db.set_metric_block(10 * SEC);
    for name in names {
        assert_eq!(series(&db, name), want(name, 700), "{name} migrated");
    }
    for i in 700..1300i64 {
        db.append_metrics("web1", T0 + i * SEC, &values(i)).unwrap();
    }
    db.flush().unwrap();
    for name in names {
        assert_eq!(series(&db, name), want(name, 1300), "{name} old and new");
    }
    let spans: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT count(*) FROM metric_spans", [], |r| r.get(0))
        .unwrap();
    assert!(spans >= 1);
    assert_eq!(db.time_bounds().unwrap().map(|b| b.0), Some(T0));
    // Retention deletes old rows of both kinds.
    let m = db.maintain(&Policy { retain_ns: Some(SEC), ..Policy::new(T0 + 1400 * SEC) }).unwrap();
    assert!(m.expired_rows > 0);
    for name in names {
        assert!(series(&db, name).is_empty(), "{name} after retention");
    }
    assert_eq!(db.time_bounds().unwrap(), None);
}

#[test]
fn compacted_hours_answer_every_range_as_before() {
    let d = dir("compact");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let cpu = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let samples = generate(2 * 3600 + 1200);
    write_buckets(&mut db, &samples, 10 * SEC, "h", &cpu);
    // Allocation bytes: weights that differ, so that a cut hour is decoded, not subtracted.
    let mut mem = generate(2 * 3600 + 1200);
    for (i, s) in mem.iter_mut().enumerate() {
        s.weight = Weight::from_u64(4096 << (i % 3));
    }
    write_buckets_kind(&mut db, &mem, 10 * SEC, "h", Kind::Mem, &Meta { unit: Unit::Bytes, event: None });
    let ranges = [
        (T0, T0 + 3600 * SEC),
        (T0 + 1800 * SEC, T0 + 5400 * SEC),
        (T0 + 600 * SEC, T0 + 7200 * SEC),
        (T0 + 3900 * SEC + 123_456_789, T0 + 4020 * SEC),
        (T0 + 7000 * SEC, T0 + 8000 * SEC),
        (T0 - SEC, T0 + 9000 * SEC),
    ];
    let heat = |db: &Sqlite, kind, from, to| {
        // Stack ids stay what they were: compaction rewrites buckets, not stacks.
        let mut v: Vec<(i64, u32, i64, Weight)> = db
            .samples(&ProfileQuery::new(kind, from, to))
            .unwrap()
            .into_iter()
            .map(|p| (p.time_ns, p.cpu, p.stack.0, p.weight))
            .collect();
        v.sort();
        v
    };
    let before: Vec<_> = ranges.iter().map(|&(a, b)| heat(&db, Kind::Cpu, a, b)).collect();
    let rows_before = db.profile(&ProfileQuery::new(Kind::Cpu, T0 - SEC, T0 + 9000 * SEC)).unwrap().buckets;
    // Two closed hours of 360 buckets each, for both kinds; the third hour is still open.
    // A run compacts for a bounded time, newest hours first; runs go on until none is left.
    assert_eq!(compact_all(&mut db, T0 + 2 * 3600 * SEC + 1200 * SEC + 660 * SEC), 4 * 360);
    let rows_after = db.profile(&ProfileQuery::new(Kind::Cpu, T0 - SEC, T0 + 9000 * SEC)).unwrap().buckets;
    assert_eq!((rows_before, rows_after), (840, 2 + 120));
    drop(db);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    for (i, &(a, b)) in ranges.iter().enumerate() {
        for cgroup in [None, Some("/system.slice"), Some("/user.slice")] {
            let q = ProfileQuery { cgroup, ..ProfileQuery::new(Kind::Cpu, a, b) };
            assert_eq!(got(&db, &q), expected(&samples, a, b, cgroup), "cpu {a}..{b} {cgroup:?}");
            let q = ProfileQuery { cgroup, ..ProfileQuery::new(Kind::Mem, a, b) };
            assert_eq!(got(&db, &q), expected(&mem, a, b, cgroup), "mem {a}..{b} {cgroup:?}");
        }
        assert_eq!(heat(&db, Kind::Cpu, a, b), before[i], "heat map {a}..{b}");
        let n = db.profile(&ProfileQuery::new(Kind::Cpu, a, b)).unwrap().samples;
        assert_eq!(n as usize, samples.iter().filter(|s| s.time_ns >= a && s.time_ns < b).count());
    }
    // Compacting again does nothing; a bucket written late into a closed hour joins it.
    drop(db);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let late: Vec<Owned> =
        generate(20).into_iter().map(|s| Owned { time_ns: s.time_ns + 1800 * SEC, ..s }).collect();
    write_bucket(&mut db, &late.iter().collect::<Vec<_>>(), T0 + 1800 * SEC, 20 * SEC, "h", Kind::Cpu, &cpu);
    assert_eq!(
        compact_all(&mut db, T0 + 2 * 3600 * SEC + 1200 * SEC + 660 * SEC),
        2,
        "the hour and the late bucket"
    );
    let mut all = samples.clone();
    all.extend(late.iter().cloned());
    for &(a, b) in &ranges {
        assert_eq!(got(&db, &ProfileQuery::new(Kind::Cpu, a, b)), expected(&all, a, b, None), "{a}..{b}");
    }
}

/// Profiles summed elsewhere (the always-on off-CPU profile: a weight per stack for each
/// 10-s bucket, no sample times) are merged per minute once their hour is closed: a minute's
/// buckets become one, a stack's weights summed, and every range of whole minutes reads the
/// same profile as before, the hour in progress left as written.
#[test]
fn summed_profiles_of_closed_hours_merge_per_minute() {
    let d = dir("compact-summed");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let meta = Meta { unit: Unit::Nanoseconds, event: Some("sched:sched_switch".into()) };
    let stacks: Vec<Vec<u8>> = (0..7).map(|i| format!("app;read;schedule;s{i}").into_bytes()).collect();
    let hour = 3600 * SEC;
    let h0 = (T0 / hour + 1) * hour;
    // What each bucket holds: a few of the stacks, weights that vary with the bucket.
    let entries = |b: i64| -> Vec<(usize, Weight)> {
        (0..7)
            .filter(|i| (b + i) % 3 != 0)
            .map(|i| (i as usize, Weight::from_u64((1000 + b * 7 + i * 13) as u64)))
            .collect()
    };
    let n = (2 * 3600 + 600) / 10;
    for b in 0..n {
        let e = entries(b);
        let aggregated: Vec<(&[u8], Weight)> = e.iter().map(|&(i, w)| (&stacks[i][..], w)).collect();
        db.append_bucket(&Bucket {
            host: "h",
            kind: Kind::OffCpu,
            start_ns: h0 + b * 10 * SEC,
            end_ns: h0 + (b + 1) * 10 * SEC,
            capture: None,
            meta: &meta,
            samples: &[],
            aggregated: &aggregated,
        })
        .unwrap();
    }
    let expect = |from: i64, to: i64| -> BTreeMap<Vec<u8>, Weight> {
        let mut m = BTreeMap::new();
        for b in (0..n).filter(|b| h0 + b * 10 * SEC >= from && h0 + b * 10 * SEC < to) {
            for (i, w) in entries(b) {
                *m.entry(stacks[i].clone()).or_insert(Weight::ZERO) += w;
            }
        }
        m
    };
    let ranges = [
        (h0, h0 + hour),
        (h0 + 60 * SEC, h0 + 180 * SEC),
        (h0 + 1800 * SEC, h0 + 2 * hour + 300 * SEC),
        (h0 + 2 * hour, h0 + 2 * hour + 130 * SEC),
        (h0 - SEC, h0 + 3 * hour),
    ];
    for &(a, b) in &ranges {
        assert_eq!(got(&db, &ProfileQuery::new(Kind::OffCpu, a, b)), expect(a, b), "as written, {a}..{b}");
    }
    let count = |db: &Sqlite, from: i64, to: i64| {
        db.profile(&ProfileQuery::new(Kind::OffCpu, from, to)).unwrap().buckets
    };
    assert_eq!(count(&db, h0, h0 + 2 * hour), 720);
    compact_all(&mut db, h0 + 2 * hour + 600 * SEC);
    assert_eq!(count(&db, h0, h0 + 2 * hour), 120, "a bucket a minute of the two closed hours");
    assert_eq!(count(&db, h0 + 2 * hour, h0 + 3 * hour), 60, "the hour in progress as written");
    for &(a, b) in &ranges {
        assert_eq!(got(&db, &ProfileQuery::new(Kind::OffCpu, a, b)), expect(a, b), "merged, {a}..{b}");
    }
    // Merged once: nothing left to merge.
    assert_eq!(db.maintain(&Policy::new(h0 + 2 * hour + 600 * SEC)).unwrap().compacted_buckets, 0);
}

/// Maintenance runs until compaction has nothing left; the buckets it merged.
fn compact_all(db: &mut Sqlite, now: i64) -> u64 {
    let mut n = 0;
    for _ in 0..1000 {
        let m = db.maintain(&Policy::new(now)).unwrap();
        if m.compacted_buckets == 0 {
            return n;
        }
        n += m.compacted_buckets;
    }
    panic!("compaction never ended ({n} buckets)");
}

/// Every series of every host and label over `[from, to)`, resampled to `points`.
fn series_query(from: i64, to: i64, points: Option<usize>) -> kflame_store::SeriesQuery<'static> {
    kflame_store::SeriesQuery { name: "", label: None, host: None, from_ns: from, to_ns: to, points }
}

/// A chart of hours read through a summary cache: every point is exactly the min, max,
/// mean and count of the values of its cell (as the values read one by one give on the
/// same grid), the second read comes from the cache, and a range whose ends cut rows, or
/// cells, gets the cells its ends fall in whole.
#[test]
fn wide_series_from_summaries_are_those_of_their_values() {
    let path = dir("summaries").join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    // 3 h 10 min at 1 Hz: per-CPU ticks and their totals (the writer's relations), a load.
    let hours = 3 * 3600 + 600;
    for i in 0..hours {
        let (u0, u1) = ((i * 37 % 100) as f64, (i * 53 % 100) as f64);
        let m = [
            Metric { name: "cpu.usr", label: "cpu0", value: u0 },
            Metric { name: "cpu.usr", label: "cpu1", value: u1 },
            Metric { name: "cpu.usr", label: "", value: (u0 + u1) / 2.0 },
            Metric { name: "load1", label: "", value: (i % 977) as f64 / 100.0 },
        ];
        db.append_metrics("web1", T0 + i * SEC + 250_000_000, &m).unwrap();
    }
    drop(db);
    let plain = Sqlite::open(&path, OpenMode::Read).unwrap();
    let mut cached = Sqlite::open(&path, OpenMode::Read).unwrap();
    let cache = std::sync::Arc::new(kflame_store::SeriesCache::new());
    cached.set_series_cache(cache.clone());
    let names = ["cpu.usr", "load1"];
    let ranges = [
        (T0, T0 + hours * SEC, 120usize),
        // Ends between slots, inside a slot, and a millisecond after the first value's slot
        // began: each grows to the cells it falls in.
        (T0 + 1800 * SEC, T0 + 10_000 * SEC, 50),
        (T0 + 1810 * SEC, T0 + 9_999 * SEC + 500_000_000, 40),
        (T0 + 1_000_000, T0 + hours * SEC, 100),
    ];
    for (from, to, points) in ranges {
        let q = series_query(from, to, None);
        let wide = kflame_store::SeriesQuery { points: Some(points), ..q };
        let first = cached.series_many(&names, &wide).unwrap();
        let again = cached.series_many(&names, &wide).unwrap();
        assert_eq!(first, again);
        assert!(!cache.is_empty());
        // The cells (1 Hz values leave none empty): whole slots, aligned on the epoch, from
        // the one `from` falls in to the one `to` falls in.
        let width = first[0].points[1].time_ns - first[0].points[0].time_ns;
        assert_eq!(width % (20 * SEC), 0, "a grid of whole slots");
        assert_eq!(first[0].points[0].time_ns, from.div_euclid(width) * width);
        let end = first[0].points.last().unwrap().time_ns + width;
        assert_eq!(end, (to - 1).div_euclid(width) * width + width);
        // Every value of those cells, read one by one.
        let cells = kflame_store::SeriesQuery { from_ns: first[0].points[0].time_ns, to_ns: end, ..q };
        let every = plain.series_many(&names, &cells).unwrap();
        assert_eq!(first.len(), every.len());
        for (s, all) in first.iter().zip(&every) {
            assert_eq!((&s.name, &s.label), (&all.name, &all.label));
            assert!(s.points.len() <= points, "{} points", s.points.len());
            assert_eq!(s.points.iter().map(|p| u64::from(p.count)).sum::<u64>(), all.points.len() as u64);
            for p in &s.points {
                let inside: Vec<f64> = all
                    .points
                    .iter()
                    .filter(|v| v.time_ns >= p.time_ns && v.time_ns < p.time_ns + width)
                    .map(|v| v.avg)
                    .collect();
                assert_eq!(p.count as usize, inside.len(), "{} at {}", s.name, p.time_ns);
                assert_eq!(p.min, inside.iter().copied().fold(f64::INFINITY, f64::min));
                assert_eq!(p.max, inside.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                let mean = inside.iter().sum::<f64>() / inside.len() as f64;
                assert!((p.avg - mean).abs() < 1e-9, "{} vs {mean}", p.avg);
            }
        }
    }
}

/// A writer that flushes as it goes writes the rows of its current block and hour again
/// (a block replaced in place, blocks folded into rows): a reader that keeps summaries of
/// rows sees every value written, never the summary of a row as it was.
#[test]
fn summaries_follow_rows_written_again() {
    let path = dir("rewritten").join("h.db");
    let mut w = Sqlite::open(&path, OpenMode::Write).unwrap();
    w.set_metric_block(10 * SEC);
    let mut cached = Sqlite::open(&path, OpenMode::Read).unwrap();
    cached.set_series_cache(std::sync::Arc::new(kflame_store::SeriesCache::new()));
    let plain = Sqlite::open(&path, OpenMode::Read).unwrap();
    let mut t = 0i64;
    let mut rows_seen: std::collections::HashMap<i64, (i64, i64, Vec<u8>)> = Default::default();
    // Flushes in the middle of a block, at its end, and across the end of an hour.
    for step in [3i64, 7, 10, 95, 1, 3600, 13, 2, 400, 3] {
        for _ in 0..step {
            let m = [Metric { name: "load1", label: "", value: ((t * 37) % 977) as f64 / 10.0 }];
            w.append_metrics("web1", T0 + t * SEC + 250_000_000, &m).unwrap();
            t += 1;
        }
        w.flush().unwrap();
        let q = series_query(T0, T0 + 2 * 3600 * SEC, Some(60));
        let wide = cached.series_many(&["load1"], &q).unwrap();
        let values = plain.series_many(&["load1"], &kflame_store::SeriesQuery { points: None, ..q }).unwrap();
        let count: u64 = wide[0].points.iter().map(|p| u64::from(p.count)).sum();
        assert_eq!(count, t as u64, "after {t} values");
        assert_eq!(values[0].points.len() as i64, t);
        let max = values[0].points.iter().map(|p| p.max).fold(f64::MIN, f64::max);
        assert_eq!(wide[0].points.iter().map(|p| p.max).fold(f64::MIN, f64::max), max);
        let sum: f64 = values[0].points.iter().map(|p| p.avg).sum();
        let wide_sum: f64 = wide[0].points.iter().map(|p| p.avg * f64::from(p.count)).sum();
        assert!((sum - wide_sum).abs() < 1e-6 * sum.abs().max(1.0), "{sum} vs {wide_sum}");
        // A row's id always names the same row: never given to another content.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let rows: Vec<(i64, i64, i64, Vec<u8>)> = conn
            .prepare("SELECT id, start_ns, end_ns, data FROM metric_spans")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (id, start, end, data) in rows {
            match rows_seen.get(&id) {
                Some(seen) => assert_eq!(seen, &(start, end, data), "row id {id} given twice"),
                None => {
                    rows_seen.insert(id, (start, end, data));
                }
            }
        }
    }
    assert!(rows_seen.len() > 5, "{} rows", rows_seen.len());
}

#[test]
fn a_second_writer_is_refused_naming_the_first_and_readers_go_on() {
    let d = dir("two-writers");
    let path = d.join("history.db");
    let meta = Meta::with_unit(Unit::Samples);
    let mut first = Sqlite::open(&path, OpenMode::Write).unwrap();
    write_buckets(&mut first, &generate(30), 10 * SEC, "web1", &meta);
    let before = std::fs::read(&path).unwrap();
    // Two writers would each number new stacks from their own maps: refused, by pid.
    let e = Sqlite::open(&path, OpenMode::Write).unwrap_err();
    match &e {
        StoreError::Locked { store: p, lock, pid } => {
            assert_eq!(p, &path.display().to_string());
            assert_eq!(lock, &kflame_store::lock_path(&path));
            assert_eq!(*pid, Some(std::process::id()));
        }
        other => panic!("expected Locked, got {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(&format!("process {}", std::process::id())), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the refused writer wrote to the file");
    // Readers are not refused while the writer writes.
    let reader = Sqlite::open(&path, OpenMode::Read).unwrap();
    let total = reader.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC)).unwrap().samples;
    assert!(total > 0);
    write_buckets(&mut first, &generate(30), 10 * SEC, "web2", &meta);
    assert!(reader.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC)).unwrap().samples > total);
    // Once the first writer is gone, the next one gets the file.
    drop(first);
    let mut second = Sqlite::open(&path, OpenMode::Write).unwrap();
    write_buckets(&mut second, &generate(10), 10 * SEC, "web3", &meta);
    drop(second);
    drop(reader);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let hosts: Vec<String> = db.host_labels().unwrap().into_iter().map(|(h, _)| h).collect();
    assert_eq!(hosts, ["web1", "web2", "web3"]);
}

#[test]
fn a_missing_table_or_a_bad_version_is_named_and_nothing_is_written() {
    let d = dir("damaged-schema");
    let good = d.join("good.db");
    {
        let mut db = Sqlite::open(&good, OpenMode::Write).unwrap();
        write_buckets(&mut db, &generate(30), 10 * SEC, "web1", &Meta::with_unit(Unit::Samples));
        db.maintain(&Policy::new(T0)).unwrap();
    }
    let bytes = std::fs::read(&good).unwrap();
    let damaged = |name: &str, sql: &str| {
        let p = d.join(name);
        std::fs::write(&p, &bytes).unwrap();
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch(sql).unwrap();
        c.execute_batch("PRAGMA journal_mode = DELETE").unwrap();
        drop(c);
        p
    };
    let no_buckets = damaged("no-buckets.db", "DROP TABLE buckets");
    for mode in [OpenMode::Write, OpenMode::Read] {
        let e = unchanged_after(&no_buckets, mode);
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("the table `buckets` is missing"), "{msg}");
        assert!(msg.contains(&format!("schema version {SCHEMA_VERSION}")), "{msg}");
    }
    let no_column = damaged(
        "no-column.db",
        "CREATE TABLE r2(id INTEGER PRIMARY KEY, host INTEGER NOT NULL, time_ns INTEGER NOT NULL,
             kind TEXT NOT NULL, title TEXT NOT NULL, stack TEXT NOT NULL);
         DROP TABLE reports; ALTER TABLE r2 RENAME TO reports;",
    );
    let e = unchanged_after(&no_column, OpenMode::Write);
    assert!(e.to_string().contains("the table `reports` has no column `text`"), "{e}");
    let negative = damaged("negative.db", "PRAGMA user_version = -1");
    for mode in [OpenMode::Write, OpenMode::Read] {
        let e = unchanged_after(&negative, mode);
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains("schema version (PRAGMA user_version) is -1"), "{msg}");
        assert!(msg.contains(&format!("1 to {SCHEMA_VERSION}")), "{msg}");
        assert!(!msg.contains("out of range at index"), "{msg}");
    }
    // The undamaged copy still opens both ways.
    drop(Sqlite::open(&good, OpenMode::Write).unwrap());
    drop(Sqlite::open(&good, OpenMode::Read).unwrap());
}

/// Histograms of `ms` latencies each.
fn hist(ms: &[u64]) -> kflame::latency::Histogram {
    let mut h = kflame::latency::Histogram::default();
    for &m in ms {
        h.record(m * 1_000_000);
    }
    h
}

/// Latency histograms are stored per host and block, read back per label in time order
/// (exact buckets, max, sum, slow), listed by label, kept apart by host; a block in progress
/// is written by `flush` (and on drop); retention deletes them with the rest.
#[test]
fn latency_histograms_round_trip_and_expire() {
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow};
    let d = dir("latency");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    let (writes, reads, cpu0) = (hist(&[1, 2, 40]), hist(&[1]), hist(&[3]));
    for i in 0..25 {
        let rows = [
            LatencyRow { kind: LatencyKind::Syscall, label: "", histogram: &writes, slow: 1, span_ms: 1000 },
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "write",
                histogram: &writes,
                slow: 1,
                span_ms: 1000,
            },
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "read",
                histogram: &reads,
                slow: 0,
                span_ms: 1000,
            },
            LatencyRow { kind: LatencyKind::Runq, label: "cpu0", histogram: &cpu0, slow: 0, span_ms: 1000 },
        ];
        db.append_latency("web1", T0 + i * SEC + 999_000_000, &rows).unwrap();
    }
    db.append_latency(
        "web2",
        T0 + SEC,
        &[LatencyRow {
            kind: LatencyKind::Syscall,
            label: "write",
            histogram: &reads,
            slow: 0,
            span_ms: 1000,
        }],
    )
    .unwrap();
    let q = LatencyQuery {
        kind: LatencyKind::Syscall,
        label: Some("write"),
        host: Some("web1"),
        from_ns: T0,
        to_ns: T0 + 3600 * SEC,
    };
    // Two whole blocks written as the third began; the third, in progress, is written every
    // second (a `kill -9` loses at most the second being read).
    let before = db.latency(&q).unwrap();
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].points.len(), 25);
    let r = Sqlite::open(&path, OpenMode::Read).unwrap();
    assert_eq!(r.latency(&q).unwrap(), before, "another process reads it too");
    drop(r);
    db.flush().unwrap();
    let all = db.latency(&q).unwrap();
    assert_eq!(all[0].points.len(), 25);
    assert_eq!(all[0].host, "web1");
    assert!(all[0].points.windows(2).all(|w| w[0].time_ns < w[1].time_ns));
    assert_eq!(all[0].points[3].time_ns, T0 + 3 * SEC + 999_000_000);
    assert_eq!(all[0].points[3].histogram, writes);
    assert_eq!(all[0].points[3].slow, 1);
    let every_host = db.latency(&LatencyQuery { host: None, ..q }).unwrap();
    assert_eq!(every_host.iter().map(|s| s.host.as_str()).collect::<Vec<_>>(), ["web1", "web2"]);
    let every_label = db.latency(&LatencyQuery { label: None, ..q }).unwrap();
    let labels: Vec<&str> = every_label.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["", "read", "write"]);
    let runq = db.latency(&LatencyQuery { kind: LatencyKind::Runq, label: None, ..q }).unwrap();
    assert_eq!((runq.len(), runq[0].label.as_str(), runq[0].points.len()), (1, "cpu0", 25));
    // A range inside a block: its seconds only.
    let part = db.latency(&LatencyQuery { from_ns: T0 + 12 * SEC, to_ns: T0 + 15 * SEC, ..q }).unwrap();
    assert_eq!(part[0].points.len(), 3);
    let listed = db.latency_labels(Some("web1"), T0, T0 + 3600 * SEC).unwrap();
    assert_eq!(
        listed,
        [
            (LatencyKind::Syscall, String::new()),
            (LatencyKind::Syscall, "read".into()),
            (LatencyKind::Syscall, "write".into()),
            (LatencyKind::Runq, "cpu0".into()),
        ]
    );
    // A reader sees what was written.
    let r = Sqlite::open(&path, OpenMode::Read).unwrap();
    assert_eq!(r.latency(&q).unwrap(), all);
    drop(r);
    let m = db
        .maintain(&kflame_store::Policy {
            retain_ns: Some(10 * SEC),
            ..kflame_store::Policy::new(T0 + 40 * SEC)
        })
        .unwrap();
    assert!(m.expired_rows >= 2, "{m:?}");
    assert!(db.latency(&q).unwrap().is_empty(), "every block ended more than 10 s before");
}

/// Latency percentiles and maxima are read from the histograms (not stored twice): per label,
/// a point per second with a count, as the watcher computed them; listed among the names.
#[test]
fn latency_percentiles_are_read_from_the_histograms() {
    use kflame_store::SeriesQuery;
    use kflame_store::derived::{Stat, value};
    use kflame_store::{LatencyKind, LatencyRow};
    let d = dir("latency-derived");
    let mut db = Sqlite::open(d.join("h.db"), OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    let (writes, reads) = (hist(&[1, 2, 40]), hist(&[3]));
    let empty = kflame::latency::Histogram::default();
    for i in 0..20 {
        let rows = [
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "write",
                histogram: &writes,
                slow: 1,
                span_ms: 1000,
            },
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "read",
                histogram: if i < 5 { &reads } else { &empty },
                slow: 0,
                span_ms: 1000,
            },
        ];
        db.append_latency("web1", T0 + i * SEC + 999_000_000, &rows).unwrap();
        db.append_metrics(
            "web1",
            T0 + i * SEC + 999_000_000,
            &[Metric { name: "syscall.slow", label: "write", value: 1.0 }],
        )
        .unwrap();
    }
    db.flush().unwrap();
    let q = SeriesQuery {
        name: "syscall.lat.p99",
        label: None,
        host: None,
        from_ns: T0,
        to_ns: T0 + 60 * SEC,
        points: None,
    };
    let p99 = db.series(&q).unwrap();
    assert_eq!(
        p99.iter().map(|s| (s.label.as_str(), s.points.len())).collect::<Vec<_>>(),
        [("read", 5), ("write", 20)]
    );
    assert_eq!(p99[1].points[0].avg, value(Stat::P99, &writes, 1, 1000).unwrap());
    assert_eq!(p99[1].points[0].time_ns, T0 + 999_000_000);
    let both = db
        .series_many(&["syscall.slow", "syscall.lat.max"], &SeriesQuery { label: Some("write"), ..q })
        .unwrap();
    assert_eq!(both.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["syscall.slow", "syscall.lat.max"]);
    assert_eq!(both[1].points[3].avg, 40.0);
    let wide = db.series(&SeriesQuery { label: Some("write"), points: Some(4), ..q }).unwrap();
    assert_eq!(wide[0].points.iter().map(|p| p.count).sum::<u32>(), 20);
    let names = db.metric_names(None).unwrap();
    for n in ["syscall.lat.p50", "syscall.lat.p99", "syscall.lat.max", "syscall.slow"] {
        assert!(names.contains(&(n.to_string(), "write".to_string())), "{n}[write] in {names:?}");
    }
}

/// The rates `FAMILY.slow` and `FAMILY.wait` are read from the histograms over their spans,
/// values appended under their names dropped; in a file whose older writer stored them, a
/// range over its seconds and the newer writer's gives a point per second: the stored value,
/// then the derived ones. The spans round-trip; a 10-s histogram of a folded hour is a rate
/// over its 10 s.
#[test]
fn latency_rates_are_read_from_the_histograms_over_their_spans() {
    use kflame_store::derived::{Stat, value};
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow, SeriesQuery};
    let d = dir("latency-rates");
    let path = d.join("h.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    let waits = hist(&[3, 40]);
    let span = |i: i64| if i % 4 == 1 { 990 } else { 1000 };
    for i in 0..20 {
        let at = T0 + i * SEC + 999_000_000;
        let rows = [LatencyRow {
            kind: LatencyKind::Lock,
            label: "mutex",
            histogram: &waits,
            slow: 1,
            span_ms: span(i),
        }];
        db.append_latency("web1", at, &rows).unwrap();
        // Appended under the derived name: dropped.
        db.append_metrics("web1", at, &[Metric { name: "lock.wait", label: "mutex", value: 1e6 }]).unwrap();
        if i < 8 {
            // What an older writer stored as the rate of these seconds (renamed below).
            db.append_metrics("web1", at, &[Metric { name: "old.wait", label: "mutex", value: 7.0 }])
                .unwrap();
        }
    }
    db.flush().unwrap();
    drop(db);
    let n = rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE series SET name = 'lock.wait' WHERE name = 'old.wait'", [])
        .unwrap();
    assert_eq!(n, 1);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let lq = LatencyQuery {
        kind: LatencyKind::Lock,
        label: Some("mutex"),
        host: None,
        from_ns: T0,
        to_ns: T0 + 60 * SEC,
    };
    let points = &db.latency(&lq).unwrap()[0].points;
    assert_eq!(points.iter().map(|p| p.span_ms).collect::<Vec<_>>(), (0..20).map(span).collect::<Vec<_>>());
    let q = SeriesQuery {
        name: "lock.wait",
        label: Some("mutex"),
        host: None,
        from_ns: T0,
        to_ns: T0 + 60 * SEC,
        points: None,
    };
    let wait = db.series(&q).unwrap();
    assert_eq!(wait.len(), 1);
    let got: Vec<(i64, f64)> = wait[0].points.iter().map(|p| (p.time_ns, p.avg)).collect();
    let want: Vec<(i64, f64)> = (0..20)
        .map(|i| {
            let v = if i < 8 { 7.0 } else { value(Stat::Wait, &waits, 1, span(i)).unwrap() };
            (T0 + i * SEC + 999_000_000, v)
        })
        .collect();
    assert_eq!(got, want);
    assert_eq!(want[9].1, kflame_store::stored_metric_value(43.0 / 0.99));
    let slow = db.series(&SeriesQuery { name: "lock.slow", ..q }).unwrap();
    assert_eq!(slow[0].points.len(), 20);
    assert_eq!(slow[0].points[0].avg, 1.0);
    assert_eq!(slow[0].points[1].avg, kflame_store::stored_metric_value(1.0 / 0.99));
    let cells = db.series(&SeriesQuery { points: Some(2), ..q }).unwrap();
    assert_eq!(cells[0].points.iter().map(|p| p.count).sum::<u32>(), 20, "every second once");
    let names = db.metric_names(None).unwrap();
    for n in ["lock.slow", "lock.wait", "lock.lat.p99"] {
        assert!(names.contains(&(n.to_string(), "mutex".to_string())), "{n}[mutex] in {names:?}");
    }
    assert!(!names.iter().any(|(n, _)| n == "syscall.wait"));
}

/// An hour's seconds summed into 10-s histograms read as rates over the 10 s.
#[test]
fn folded_hours_rates_are_over_their_10_s() {
    use kflame_store::derived::{Stat, value};
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow, SeriesQuery};
    let d = dir("latency-rates-hour");
    let mut db = Sqlite::open(d.join("h.db"), OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    let hour = 3600 * SEC;
    let h0 = (T0 / hour + 1) * hour;
    let waits = hist(&[5]);
    for i in 0..3600 + 10 {
        // Busy in the first 3 s of every 10.
        let busy = i % 10 < 3;
        let empty = kflame::latency::Histogram::default();
        let rows = [
            LatencyRow { kind: LatencyKind::Runq, label: "cpu0", histogram: &waits, slow: 0, span_ms: 1000 },
            LatencyRow {
                kind: LatencyKind::Runq,
                label: "cpu1",
                histogram: if busy { &waits } else { &empty },
                slow: u64::from(busy),
                span_ms: 1000,
            },
        ];
        db.append_latency("web1", h0 + i * SEC + 999_000_000, &rows).unwrap();
    }
    db.flush().unwrap();
    let lq = LatencyQuery {
        kind: LatencyKind::Runq,
        label: Some("cpu1"),
        host: None,
        from_ns: h0,
        to_ns: h0 + hour,
    };
    let coarse = &db.latency(&lq).unwrap()[0].points;
    assert_eq!(coarse.len(), 360);
    assert!(coarse.iter().all(|p| p.span_ms == 10_000 && p.slow == 3), "{:?}", &coarse[..2]);
    let q = SeriesQuery {
        name: "runq.slow",
        label: Some("cpu1"),
        host: None,
        from_ns: h0,
        to_ns: h0 + hour,
        points: None,
    };
    let slow = db.series(&q).unwrap();
    assert_eq!(slow[0].points.len(), 360);
    assert!(slow[0].points.iter().all(|p| p.avg == 0.3));
    let wait = db.series(&SeriesQuery { name: "runq.wait", label: Some("cpu0"), ..q }).unwrap();
    assert!(wait[0].points.iter().all(|p| Some(p.avg) == value(Stat::Wait, &waits, 0, 1000)));
}

/// Once an hour ends, its seconds are kept as 10-s histograms (counts, slow counts and sums
/// added, at each window's last millisecond), the next hour's seconds as they came; a family's total
/// reads back as written.
#[test]
fn an_hour_of_latency_seconds_is_kept_in_10_s_histograms() {
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow};
    let d = dir("latency-hour");
    let mut db = Sqlite::open(d.join("h.db"), OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    let hour = 3600 * SEC;
    let h0 = (T0 / hour + 1) * hour;
    let (writes, reads) = (hist(&[1, 2, 40]), hist(&[1]));
    let mut total = writes.clone();
    total.add(&reads);
    for i in 0..3600 + 30 {
        let rows = [
            LatencyRow { kind: LatencyKind::Syscall, label: "", histogram: &total, slow: 1, span_ms: 1000 },
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "write",
                histogram: &writes,
                slow: 1,
                span_ms: 1000,
            },
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "read",
                histogram: &reads,
                slow: 0,
                span_ms: 1000,
            },
        ];
        db.append_latency("web1", h0 + i * SEC + 999_000_000, &rows).unwrap();
    }
    db.flush().unwrap();
    let q = |label: &'static str, from_ns, to_ns| LatencyQuery {
        kind: LatencyKind::Syscall,
        label: Some(label),
        host: None,
        from_ns,
        to_ns,
    };
    let first = db.latency(&q("write", h0, h0 + hour)).unwrap();
    assert_eq!(first[0].points.len(), 360, "the 10-s windows of the hour");
    let p = &first[0].points[5];
    assert_eq!(p.time_ns, h0 + 60 * SEC - 1_000_000, "at the last millisecond of its window");
    assert_eq!(p.histogram.total(), 30);
    assert_eq!(p.histogram.sum_ns, 10 * writes.sum_ns);
    assert_eq!(p.histogram.max_ns, writes.max_ns);
    assert_eq!(p.slow, 10);
    let all = db.latency(&q("", h0, h0 + 2 * hour)).unwrap();
    let counted: u64 = all[0].points.iter().map(|p| p.histogram.total()).sum();
    assert_eq!(counted, 3630 * total.total(), "every second's total counted once");
    let next = db.latency(&q("read", h0 + hour, h0 + 2 * hour)).unwrap();
    assert_eq!(next[0].points.len(), 30, "the seconds of the hour in progress");
    assert_eq!(next[0].points[0].histogram, reads);
    let totals = db.latency(&q("", h0 + hour, h0 + 2 * hour)).unwrap();
    assert!(totals[0].points.iter().all(|p| p.histogram == total && p.slow == 1));
}

/// A writer stopped 25 minutes into an hour leaves that hour's latency seconds and metric
/// rows as they were written; maintenance once the hour is closed (a minute after its end)
/// folds each into one row of the hour: latency in 10-s histograms with every count,
/// sum and slow call kept, metrics with every value, and nothing of the hour still in
/// progress touched.
#[test]
fn maintenance_folds_the_hours_a_stopped_writer_left() {
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow, Policy, SeriesQuery};
    let d = dir("latency-stopped");
    let path = d.join("h.db");
    let hour = 3600 * SEC;
    let h0 = (T0 / hour + 1) * hour;
    let writes = hist(&[1, 2, 40]);
    let write_seconds = |db: &mut Sqlite, from: i64, n: i64| {
        for i in from..from + n {
            let rows = [LatencyRow {
                kind: LatencyKind::Syscall,
                label: "write",
                histogram: &writes,
                slow: 1,
                span_ms: 1000,
            }];
            db.append_latency("web1", h0 + i * SEC + 999_000_000, &rows).unwrap();
            let m = [Metric { name: "load1", label: "", value: (i % 7) as f64 }];
            db.append_metrics("web1", h0 + i * SEC, &m).unwrap();
        }
        db.flush().unwrap();
    };
    {
        let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
        db.set_metric_block(10 * SEC);
        write_seconds(&mut db, 0, 25 * 60);
        // The next hour, still in progress at maintenance.
        write_seconds(&mut db, 3600, 30);
    }
    let rows = |table: &str, from: i64, to: i64| -> i64 {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                &format!("SELECT count(*) FROM {table} WHERE start_ns >= ?1 AND start_ns < ?2"),
                [from, to],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert!(rows("latency_spans", h0, h0 + hour) > 1, "the spans and blocks the writer left");
    assert!(rows("metric_spans", h0, h0 + hour) > 1);
    let q = LatencyQuery {
        kind: LatencyKind::Syscall,
        label: Some("write"),
        host: None,
        from_ns: h0,
        to_ns: h0 + hour,
    };
    let mq = SeriesQuery {
        name: "load1",
        label: Some(""),
        host: None,
        from_ns: h0,
        to_ns: h0 + 2 * hour,
        points: None,
    };
    let values = |db: &Sqlite| {
        db.series(&mq).unwrap().remove(0).points.iter().map(|p| (p.time_ns, p.avg)).collect::<Vec<_>>()
    };
    let before_values = values(&Sqlite::open(&path, OpenMode::Read).unwrap());
    assert_eq!(before_values.len(), 25 * 60 + 30);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    // Not yet a minute after the hour's end: left.
    let m = db.maintain(&Policy::new(h0 + hour + 30 * SEC)).unwrap();
    assert_eq!(m.folded_hour_rows, 0);
    let m = db.maintain(&Policy::new(h0 + hour + 20 * 60 * SEC)).unwrap();
    assert!(m.folded_hour_rows > 0, "{m:?}");
    assert_eq!(rows("latency_spans", h0, h0 + hour), 1);
    assert_eq!(rows("metric_spans", h0, h0 + hour), 1);
    assert!(rows("latency_spans", h0 + hour, h0 + 2 * hour) >= 1, "the hour in progress");
    let folded = db.latency(&q).unwrap();
    assert_eq!(folded[0].points.len(), 25 * 6, "10-s windows of the 25 minutes written");
    let total: u64 = folded[0].points.iter().map(|p| p.histogram.total()).sum();
    let slow: u64 = folded[0].points.iter().map(|p| p.slow).sum();
    let sum: u64 = folded[0].points.iter().map(|p| p.histogram.sum_ns).sum();
    assert_eq!((total, slow, sum), (25 * 60 * writes.total(), 25 * 60, 25 * 60 * writes.sum_ns));
    assert_eq!(values(&db), before_values, "every metric value kept");
    // Folded once: a second run finds nothing left to fold.
    assert_eq!(db.maintain(&Policy::new(h0 + hour + 30 * 60 * SEC)).unwrap().folded_hour_rows, 0);
}

/// A writer that dies within a block (never flushed, never dropped: as `kill -9` leaves it)
/// loses none of the seconds it was given; the next writer of the block adds its own.
#[test]
fn latency_seconds_survive_a_writer_killed_within_the_block() {
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow};
    let d = dir("latency-killed");
    let path = d.join("h.db");
    let writes = hist(&[1, 2, 40]);
    let row = [LatencyRow {
        kind: LatencyKind::Syscall,
        label: "write",
        histogram: &writes,
        slow: 1,
        span_ms: 1000,
    }];
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    for i in 0..4 {
        db.append_latency("web1", T0 + i * SEC + 999_000_000, &row).unwrap();
    }
    std::mem::forget(db);
    let q = LatencyQuery {
        kind: LatencyKind::Syscall,
        label: Some("write"),
        host: None,
        from_ns: T0,
        to_ns: T0 + 60 * SEC,
    };
    let r = Sqlite::open(&path, OpenMode::Read).unwrap();
    assert_eq!(r.latency(&q).unwrap()[0].points.len(), 4, "every second given, the last too");
    drop(r);
    // The file as the dead process left it (its lock is this live process's: a copy).
    let copy = d.join("after.db");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::copy(d.join("h.db-wal"), d.join("after.db-wal")).unwrap();
    let mut db = Sqlite::open(&copy, OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    for i in 4..25 {
        db.append_latency("web1", T0 + i * SEC + 999_000_000, &row).unwrap();
    }
    db.flush().unwrap();
    let all = db.latency(&q).unwrap();
    assert_eq!(all[0].points.len(), 25);
    assert!(all[0].points.windows(2).all(|w| w[0].time_ns < w[1].time_ns), "each second once");
}

/// A file of the schema before latency histograms (5) is migrated in place: its metrics and
/// buckets stay, and histograms are taken and read back.
#[test]
fn a_schema_5_file_takes_latency_histograms_after_migration() {
    use kflame_store::{LatencyKind, LatencyQuery, LatencyRow};
    let d = dir("migrate-latency");
    let path = d.join("h.db");
    let samples = generate(30);
    {
        let mut db = Sqlite::open_at_version(&path, 5).unwrap();
        assert_eq!(db.schema_version().unwrap(), 5);
        write_buckets(&mut db, &samples, 10 * SEC, "web1", &Meta::with_unit(Unit::Samples));
        for i in 0..30i64 {
            db.append_metrics("web1", T0 + i * SEC, &[Metric { name: "load1", label: "", value: 1.5 }])
                .unwrap();
        }
        // A reader of this schema finds no histograms, and no error.
        let q = LatencyQuery {
            kind: LatencyKind::Syscall,
            label: None,
            host: None,
            from_ns: T0,
            to_ns: T0 + 60 * SEC,
        };
        assert!(db.latency(&q).unwrap().is_empty());
    }
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(SCHEMA_VERSION, 7);
    assert_eq!(
        got(&db, &ProfileQuery::new(Kind::Cpu, T0, T0 + 30 * SEC)),
        expected(&samples, T0, T0 + 30 * SEC, None)
    );
    let h = hist(&[5, 7]);
    db.append_latency(
        "web1",
        T0 + 31 * SEC,
        &[LatencyRow { kind: LatencyKind::Bio, label: "vda", histogram: &h, slow: 0, span_ms: 1000 }],
    )
    .unwrap();
    db.flush().unwrap();
    let q = LatencyQuery {
        kind: LatencyKind::Bio,
        label: Some("vda"),
        host: None,
        from_ns: T0,
        to_ns: T0 + 60 * SEC,
    };
    let got_h = db.latency(&q).unwrap();
    assert_eq!(got_h[0].points[0].histogram, h);
    let load = kflame_store::SeriesQuery {
        name: "load1",
        label: Some(""),
        host: None,
        from_ns: T0,
        to_ns: T0 + 60 * SEC,
        points: None,
    };
    assert_eq!(db.series(&load).unwrap()[0].points.len(), 30);
}
