//! The ClickHouse store against real `clickhouse-server` processes started here (Debian's
//! 18.16, on loopback, see `kflame_clickhouse::rig`): what three hosts write reads back as
//! the embedded SQLite store reads the same writes; two shards hold each host once and answer
//! together; an outage in the middle of writing, of the server or of one shard, loses nothing
//! and counts nothing twice; bad setups are refused with a clear error.

use std::path::PathBuf;
use std::time::Duration;

use kflame::fold::{Meta, StackCounts, Stacks, Unit, Weight};
use kflame_clickhouse::rig::Rig;
use kflame_clickhouse::rig::fleet::{self, OwnedSample};
use kflame_clickhouse::{InitOptions, Location, Reader, Writer, WriterOptions, schema};
use kflame_store::{
    Bucket, Event, Kind, LatencyKind, LatencyQuery, Metric, OpenMode, ProfileQuery, Query, Sample,
    SeriesQuery, Sqlite, Store, StoreError,
};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;
/// Host names; over two shards `cityHash64` puts db1 and web1 on one, db2 on the other.
const HOSTS: [&str; 3] = ["db1", "db2", "web1"];

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-ch-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The samples of `[a, z)`, as a bucket takes them.
fn bucket_samples(samples: &[OwnedSample], a: i64, z: i64) -> Vec<Sample<'_>> {
    samples.iter().filter(|s| s.time_ns >= a && s.time_ns < z).map(OwnedSample::sample).collect()
}

/// `seconds` of 19 Hz samples on 2 CPUs for host number `h`.
fn generate(h: usize, seconds: i64, stacks: &[Vec<u8>]) -> Vec<OwnedSample> {
    fleet::host_samples(h, T0, seconds, 19, 2, stacks)
}

/// Writes `seconds` of one host's history (see `rig::fleet::write_history`).
fn write_host(store: &mut dyn Store, h: usize, seconds: i64, stacks: &[Vec<u8>]) -> u64 {
    fleet::write_history(store, HOSTS[h], h, T0, seconds, stacks).unwrap()
}

fn folded(s: &Stacks) -> Vec<(Vec<u8>, Weight)> {
    let mut v: Vec<(Vec<u8>, Weight)> =
        s.in_output_order().into_iter().map(|(k, w)| (k.to_vec(), w)).collect();
    v.sort();
    v
}

fn without_ids(mut evs: Vec<Event>) -> Vec<Event> {
    for e in &mut evs {
        match e {
            Event::Trigger { id, .. } => id.0 = 0,
            Event::Capture { id, trigger, .. } => {
                id.0 = 0;
                *trigger = trigger.map(|_| kflame_store::TriggerId(0));
            }
            Event::Report { .. } => {}
        }
    }
    evs.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    evs
}

/// Every answer of the ClickHouse reader equals the SQLite store's on the same writes.
fn compare(ch: &dyn Query, db: &dyn Query) {
    assert_eq!(ch.hosts().unwrap(), db.hosts().unwrap());
    // Latency histograms: the same series, points and labels, over a range and within it.
    for (from, to) in [(T0, T0 + 3600 * SEC), (T0 + 3 * SEC, T0 + 17 * SEC)] {
        for (kind, label, host) in [
            (LatencyKind::Syscall, Some("write"), None),
            (LatencyKind::Syscall, None, Some("web1")),
            (LatencyKind::Runq, None, None),
        ] {
            let q = LatencyQuery { kind, label, host, from_ns: from, to_ns: to };
            let (a, b) = (ch.latency(&q).unwrap(), db.latency(&q).unwrap());
            assert!(!b.is_empty() && b.iter().all(|s| !s.points.is_empty()), "{q:?}");
            assert_eq!(a, b, "{q:?}");
        }
        assert_eq!(ch.latency_labels(None, from, to).unwrap(), db.latency_labels(None, from, to).unwrap());
    }
    // Outliers: the same records (stacks compared by text), per host and over every host.
    for host in [None, Some("web1")] {
        let (a, b) = (
            ch.outliers(LatencyKind::Syscall, T0, T0 + 3600 * SEC, host).unwrap(),
            db.outliers(LatencyKind::Syscall, T0, T0 + 3600 * SEC, host).unwrap(),
        );
        assert_eq!(b.len(), if host.is_some() { 3 } else { 3 * HOSTS.len() });
        let strip = |v: &[kflame_store::StoredEvent], q: &dyn Query| {
            let mut v: Vec<_> = v
                .iter()
                .map(|e| {
                    (e.time_ns, e.duration_ns, e.pid, e.cpu, e.event.clone(), q.stack_text(e.stack).unwrap())
                })
                .collect();
            v.sort();
            v
        };
        assert_eq!(strip(&a, ch), strip(&b, db), "{host:?}");
    }
    let (lo, hi) = db.time_bounds().unwrap().unwrap();
    let (clo, chi) = ch.time_bounds().unwrap().unwrap();
    assert_eq!(clo, lo);
    assert!(chi >= hi - 1_000_000_000 && chi <= hi, "{chi} vs {hi}");
    // The last two ranges hold whole 10-minute slots: over every host they are read from the
    // fleet's per-slot sums (and the edges from the samples).
    for (from, to) in [
        (T0, T0 + 60 * SEC),
        (T0 + 3 * SEC, T0 + 17 * SEC),
        (T0 + 55 * SEC, T0 + 70 * SEC),
        (T0, T0 + 600 * SEC),
        (T0 - 590 * SEC, T0 + 1200 * SEC + 30 * SEC),
    ] {
        for host in [None, Some("web1")] {
            for cgroup in [None, Some("/system.slice"), Some("/user.slice/")] {
                let q = ProfileQuery { host, cgroup, ..ProfileQuery::new(Kind::Cpu, from, to) };
                let (a, b) = (ch.profile(&q).unwrap(), db.profile(&q).unwrap());
                assert_eq!(folded(&a.stacks), folded(&b.stacks), "{from} {to} {host:?} {cgroup:?}");
                assert_eq!(
                    (a.samples, a.buckets, a.mixed_units, &a.meta),
                    (b.samples, b.buckets, b.mixed_units, &b.meta)
                );
            }
        }
        let q = ProfileQuery::new(Kind::Cpu, from, to);
        let (a, b) = (ch.samples(&q).unwrap(), db.samples(&q).unwrap());
        assert_eq!(a.len(), b.len());
        let ta = ch.stack_texts(&a.iter().take(50).map(|p| p.stack).collect::<Vec<_>>()).unwrap();
        let tb = db.stack_texts(&b.iter().take(50).map(|p| p.stack).collect::<Vec<_>>()).unwrap();
        assert_eq!(ta, tb);
    }
    let sys = ProfileQuery::new(Kind::Syscalls, T0, T0 + 60 * SEC);
    assert_eq!(folded(&ch.profile(&sys).unwrap().stacks), folded(&db.profile(&sys).unwrap().stacks));
    assert_eq!(ch.metric_names(None).unwrap(), db.metric_names(None).unwrap());
    assert_eq!(ch.metric_names(Some("db1")).unwrap(), db.metric_names(Some("db1")).unwrap());
    for points in [None, Some(10), Some(1000)] {
        let q = SeriesQuery {
            name: "cpu.usr",
            label: None,
            host: None,
            from_ns: T0,
            to_ns: T0 + 60 * SEC,
            points,
        };
        let (a, b) = (ch.series(&q).unwrap(), db.series(&q).unwrap());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((&x.host, &x.name, &x.label), (&y.host, &y.name, &y.label));
            assert_eq!(x.points.len(), y.points.len(), "{points:?} {}", x.host);
            for (p, r) in x.points.iter().zip(&y.points) {
                assert_eq!((p.time_ns, p.count), (r.time_ns, r.count), "{points:?}");
                assert!(
                    (p.min - r.min).abs() < 1e-9
                        && (p.max - r.max).abs() < 1e-9
                        && (p.avg - r.avg).abs() < 1e-9
                );
            }
        }
    }
    // Rates read from the histograms over their spans (reads 1 s apart, give or take 10 ms):
    // the same values from both.
    let q =
        SeriesQuery { name: "", label: None, host: None, from_ns: T0, to_ns: T0 + 60 * SEC, points: None };
    let names = ["syscall.slow", "runq.wait", "syscall.lat.p99"];
    let (a, b) = (ch.series_many(&names, &q).unwrap(), db.series_many(&names, &q).unwrap());
    for n in names {
        assert!(b.iter().any(|s| s.name == n && !s.points.is_empty()), "{n}");
    }
    assert_eq!(a, b);
    let (a, b) = (ch.events(T0, T0 + 60 * SEC, None).unwrap(), db.events(T0, T0 + 60 * SEC, None).unwrap());
    assert_eq!(without_ids(a.clone()), without_ids(b.clone()));
    // Reports alone: those of the events, on either store.
    let reports_of =
        |evs: &[Event]| evs.iter().filter(|e| matches!(e, Event::Report { .. })).cloned().collect::<Vec<_>>();
    assert_eq!(ch.reports(T0, T0 + 60 * SEC, None).unwrap(), reports_of(&a));
    assert_eq!(db.reports(T0, T0 + 60 * SEC, None).unwrap(), reports_of(&b));
    let cap = |evs: &[Event], host: &str| {
        evs.iter()
            .find_map(|e| match e {
                Event::Capture { id, host: h, .. } if h == host => Some(*id),
                _ => None,
            })
            .unwrap()
    };
    for host in HOSTS {
        let x = ch.capture_events(cap(&a, host), T0, T0 + 60 * SEC).unwrap();
        let y = db.capture_events(cap(&b, host), T0, T0 + 60 * SEC).unwrap();
        assert_eq!(x.len(), 50);
        assert_eq!(ch.capture_event_count(cap(&a, host)).unwrap(), 50);
        assert_eq!(db.capture_event_count(cap(&b, host)).unwrap(), 50);
        // Looked up by id: the capture the range gave, on either store.
        let by_id = |evs: &[Event]| {
            evs.iter().find(|e| matches!(e, Event::Capture { host: h, .. } if h == host)).cloned()
        };
        assert_eq!(ch.capture(cap(&a, host)).unwrap(), by_id(&a));
        assert_eq!(db.capture(cap(&b, host)).unwrap(), by_id(&b));
        assert_eq!(ch.capture(kflame_store::CaptureId(-7)).unwrap(), None);
        let strip = |v: &[kflame_store::StoredEvent]| {
            v.iter()
                .map(|e| {
                    (
                        e.time_ns,
                        e.duration_ns,
                        e.pid,
                        e.comm.clone(),
                        e.kind.clone(),
                        e.event.clone(),
                        e.weight,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&x), strip(&y));
        assert_eq!(ch.stack_text(x[0].stack).unwrap(), db.stack_text(y[0].stack).unwrap());
    }
    // Which hosts spend time in a frame: ClickHouse's one statement equals the default
    // (one profile per host) on SQLite; over samples only, over one whole hour (from the
    // hosts' hourly sums only), and over a whole hour with edges, for every host, a list of
    // hosts, one host.
    let two = ["web1".to_string(), "db1".to_string()];
    for (from, to) in [(T0, T0 + 60 * SEC), (T0, T0 + 3600 * SEC), (T0 - 590 * SEC, T0 + 3630 * SEC)] {
        for (host, hosts, n) in [(None, None, 3), (None, Some(&two[..]), 2), (Some("web1"), None, 1)] {
            let q = ProfileQuery { host, hosts, ..ProfileQuery::new(Kind::Cpu, from, to) };
            let frame = "ksys_write";
            let (a, b) = (ch.host_shares(&q, frame).unwrap(), db.host_shares(&q, frame).unwrap());
            assert_eq!(a, b, "{from} {to} {host:?} {hosts:?}");
            assert_eq!(a.len(), n);
            assert!(a.iter().all(|s| !s.frame.is_zero() && s.frame < s.total), "{a:?}");
        }
    }
}

fn sqlite_of(name: &str, seconds: i64, stacks: &[Vec<u8>]) -> (Sqlite, u64) {
    let path = dir(name).join("history.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let mut n = 0;
    for h in 0..HOSTS.len() {
        n += write_host(&mut db, h, seconds, stacks);
    }
    drop(db);
    (Sqlite::open(&path, OpenMode::Read).unwrap(), n)
}

#[test]
fn three_hosts_on_one_server_read_back_as_the_embedded_store_reads_them() {
    let rig = Rig::start(1).unwrap();
    let loc = rig.location(0, "fleet", false);
    let client = kflame_clickhouse::http::Client::new(&loc);
    // Before init: readers and writers say what to do.
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(e.contains("run `kflame store init"), "{e}");
    let stmts = schema::init(&client, &loc, &InitOptions { retain_days: Some(30) }).unwrap();
    assert!(stmts.iter().all(|s| !s.contains("TTL")), "18.16 has no TTL: {stmts:?}");
    // Twice is harmless.
    schema::init(&client, &loc, &InitOptions::default()).unwrap();
    let stacks = fleet::real_stacks();
    let spool = dir("one-server").join("spool.db");
    let mut w = Writer::open(&loc, &spool, WriterOptions::default()).unwrap();
    let mut written = 0;
    for h in 0..HOSTS.len() {
        written += write_host(&mut w, h, 60, &stacks);
    }
    assert_eq!(w.spooled(), (0, 0));
    drop(w);
    let (db, n) = sqlite_of("one-server-sqlite", 60, &stacks);
    assert_eq!(written, n);
    let ch = Reader::open(&loc).unwrap();
    let all = ch.profile(&ProfileQuery::new(Kind::Cpu, 0, i64::MAX)).unwrap();
    assert_eq!(all.samples, written);
    assert_eq!(all.stacks.total(), Weight::from_u64(written));
    compare(&ch, &db);
}

#[test]
fn two_shards_hold_each_host_once_and_answer_together() {
    let rig = Rig::start(2).unwrap();
    let stacks = fleet::real_stacks();
    for i in 0..2 {
        let loc = rig.location(i, "fleet", true);
        schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();
    }
    // Three writers, one per host, each through a server of its own choosing; web1 puts its
    // rows straight into that server's local tables (insert=local).
    let mut written = 0;
    for (h, host) in HOSTS.iter().enumerate() {
        let loc = Location { insert_local: *host == "web1", ..rig.location(h % 2, "fleet", true) };
        let mut w =
            Writer::open(&loc, &dir(&format!("shard-spool-{h}")).join("spool.db"), WriterOptions::default())
                .unwrap();
        written += write_host(&mut w, h, 60, &stacks);
        assert_eq!(w.spooled(), (0, 0));
    }
    // Each host's samples are on one shard, the two shards hold all of them.
    let mut per_shard = Vec::new();
    for i in 0..2 {
        let loc = rig.location(i, "fleet", false);
        let c = kflame_clickhouse::http::Client::new(&loc);
        let text = c
            .query(
                "SELECT host, count() FROM fleet.samples_local GROUP BY host ORDER BY host FORMAT TSV",
                &[],
            )
            .unwrap();
        per_shard.push(String::from_utf8(text).unwrap());
    }
    let mut hosts_seen = Vec::new();
    let mut total = 0u64;
    for text in &per_shard {
        for line in text.lines() {
            let (h, n) = line.split_once('\t').unwrap();
            hosts_seen.push(h.to_string());
            total += n.parse::<u64>().unwrap();
        }
    }
    hosts_seen.sort();
    assert_eq!(hosts_seen, HOSTS.map(String::from).to_vec(), "shards: {per_shard:?}");
    assert!(per_shard.iter().all(|t| !t.is_empty()), "both shards hold hosts: {per_shard:?}");
    assert_eq!(total, written + HOSTS.len() as u64, "timed samples plus one aggregated row per host");
    // Through either server, the fleet reads as the embedded store of the same writes.
    let (db, _) = sqlite_of("two-shards-sqlite", 60, &stacks);
    for i in 0..2 {
        let ch = Reader::open(&rig.location(i, "fleet", true)).unwrap();
        compare(&ch, &db);
        let only: Vec<String> = vec!["db1".into(), "db2".into()];
        let q = ProfileQuery { hosts: Some(&only), ..ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC) };
        assert_eq!(folded(&ch.profile(&q).unwrap().stacks), folded(&db.profile(&q).unwrap().stacks));
    }
}

/// Flushes `w` until its spool is empty, at most 10 s: a writer retries after a back-off.
fn flush_until_sent(w: &mut Writer) {
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < end {
        if w.flush().is_ok() && w.spooled() == (0, 0) {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Appends host's always-on CPU bucket `[a, z)` of `samples` to `w`, and its samples to
/// `expect`.
fn append_counted(
    w: &mut Writer,
    host: &str,
    meta: &Meta,
    samples: &[OwnedSample],
    (a, z): (i64, i64),
    expect: &mut StackCounts,
) {
    let part: Vec<Sample<'_>> = bucket_samples(samples, a, z);
    for s in &part {
        expect.add(s.stack, s.weight);
    }
    let bucket = Bucket {
        host,
        kind: Kind::Cpu,
        start_ns: a,
        end_ns: z,
        capture: None,
        meta,
        samples: &part,
        aggregated: &[],
    };
    w.append_bucket(&bucket).unwrap();
}

#[test]
fn an_outage_while_writing_loses_nothing() {
    let mut rig = Rig::start(1).unwrap();
    let loc = rig.location(0, "fleet", false);
    schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();
    let stacks = fleet::real_stacks();
    let samples = generate(0, 120, &stacks);
    let meta = Meta { unit: Unit::Samples, event: None };
    let spool = dir("outage").join("spool.db");
    let opts = WriterOptions { batch_interval: Duration::ZERO, ..WriterOptions::default() };
    let mut w = Writer::open(&loc, &spool, opts).unwrap();
    let mut notes = Vec::new();
    let mut expect = StackCounts::new();
    for b in 0..12 {
        if b == 4 {
            rig.stop(0);
        }
        if b == 9 {
            rig.restart(0).unwrap();
        }
        let (a, z) = (T0 + b * 10 * SEC, T0 + (b + 1) * 10 * SEC);
        append_counted(&mut w, "db1", &meta, &samples, (a, z), &mut expect);
        w.append_metrics("db1", a, &[Metric { name: "load1", label: "", value: b as f64 }]).unwrap();
        if (4..9).contains(&b) {
            assert!(w.spooled().0 > 0, "bucket {b} waits in the spool");
        }
        notes.extend(w.notes());
        // The writer retries after a back-off: give it the time a watcher's bucket takes.
        if b >= 9 {
            std::thread::sleep(Duration::from_millis(1100));
            w.flush().unwrap();
        }
    }
    w.flush().unwrap();
    notes.extend(w.notes());
    assert_eq!(w.spooled(), (0, 0), "{notes:?}");
    assert!(
        w.stats().batches_spooled > 0 && w.stats().batches_resent == w.stats().batches_spooled,
        "{:?}",
        w.stats()
    );
    assert!(notes.iter().any(|n| n.contains("unreachable")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("answers again")), "{notes:?}");
    drop(w);
    let ch = Reader::open(&loc).unwrap();
    let p = ch.profile(&ProfileQuery::new(Kind::Cpu, 0, i64::MAX)).unwrap();
    assert_eq!(folded(&p.stacks), folded(&Stacks::Counts(expect)));
    assert_eq!(p.buckets, 12);
    let s = ch
        .series(&SeriesQuery {
            name: "load1",
            label: None,
            host: None,
            from_ns: 0,
            to_ns: i64::MAX,
            points: None,
        })
        .unwrap();
    assert_eq!(s[0].points.iter().map(|p| p.avg as i64).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());
}

#[test]
fn a_full_spool_refuses_the_write_whole_and_takes_it_later() {
    let mut rig = Rig::start(1).unwrap();
    let loc = rig.location(0, "fleet", false);
    schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();
    rig.stop(0);
    let stacks = fleet::real_stacks();
    let samples = generate(1, 30, &stacks);
    let meta = Meta { unit: Unit::Samples, event: None };
    let spool = dir("full").join("spool.db");
    let opts = WriterOptions {
        batch_interval: Duration::ZERO,
        spool_max_bytes: 150_000,
        ..WriterOptions::default()
    };
    let mut w = Writer::open(&loc, &spool, opts).unwrap();
    let bucket = |b: i64| {
        let (a, z) = (T0 + b * 10 * SEC, T0 + (b + 1) * 10 * SEC);
        bucket_samples(&samples, a, z)
    };
    let mut refused = 0;
    let mut stored = 0;
    for b in 0..3 {
        let part = bucket(b);
        let r = w.append_bucket(&Bucket {
            host: "web1",
            kind: Kind::Cpu,
            start_ns: T0 + b * 10 * SEC,
            end_ns: T0 + (b + 1) * 10 * SEC,
            capture: None,
            meta: &meta,
            samples: &part,
            aggregated: &[],
        });
        match r {
            Ok(()) => stored += part.len(),
            Err(e @ StoreError::DiskFull { .. }) => {
                assert!(e.to_string().contains("nothing of this write was stored"), "{e}");
                assert!(e.to_string().contains("spool.db"), "{e}");
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 0 && stored > 0, "refused {refused}, stored {stored}");
    assert!(w.spooled().1 <= 150_000);
    rig.restart(0).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    w.flush().unwrap();
    drop(w);
    let r = Reader::open(&loc).unwrap();
    let q = ProfileQuery::new(Kind::Cpu, 0, i64::MAX);
    let p = r.profile(&q).unwrap();
    assert_eq!(p.samples as usize, stored, "what was taken is there, what was refused is not");
    // The per-slot sums sent with the samples count the same: the refused write's are gone too.
    let shares = r.host_shares(&q, "no-such-frame").unwrap();
    assert_eq!(shares.len(), 1);
    assert_eq!(shares[0].total.whole() as usize, stored);
    assert_eq!(shares[0].frame.whole(), 0);
}

#[test]
fn bad_setups_are_refused_with_what_to_do() {
    let rig = Rig::start(1).unwrap();
    // A wrong password.
    let mut loc = rig.location(0, "fleet", false);
    loc.password = "wrong".into();
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(e.contains("refused") && e.contains("fleet"), "{e}");
    assert!(!e.contains("wrong"), "no password in messages: {e}");
    // A cluster the server does not know.
    let loc = Location { cluster: Some("nope".into()), ..rig.location(0, "fleet", false) };
    let e =
        schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap_err();
    assert!(e.to_string().contains("no cluster \"nope\""), "{e}");
    // Nothing listening: a reader fails at once; a writer starts and spools.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let loc = Location { port, ..rig.location(0, "fleet", false) };
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(e.contains("unreachable") && e.contains(&port.to_string()), "{e}");
    let mut w = Writer::open(&loc, &dir("bad").join("spool.db"), WriterOptions::default()).unwrap();
    assert!(w.notes().iter().any(|n| n.contains("spooling")));
    // Tables of another shape.
    let loc = rig.location(0, "other", false);
    let c = kflame_clickhouse::http::Client::new(&loc);
    c.query("CREATE DATABASE other", &[]).unwrap();
    c.query(
        "CREATE TABLE other.samples (day Date, x UInt8) ENGINE = MergeTree PARTITION BY day ORDER BY x",
        &[],
    )
    .unwrap();
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(e.contains("other.samples has columns (day, x)"), "{e}");
    // A database of an earlier kflame, whose server filled samples_10m with a materialized
    // view: refused (each sample would count twice) until init drops the view.
    let loc = rig.location(0, "older", false);
    let c = kflame_clickhouse::http::Client::new(&loc);
    schema::init(&c, &loc, &InitOptions::default()).unwrap();
    c.query(
        "CREATE MATERIALIZED VIEW older.samples_10m_mv TO older.samples_10m AS SELECT day, '*' AS host, kind, \
         intDiv(time_ns, 600000000000) * 600000000000 AS slot, unit, stack_id, sum(weight) AS weight, \
         toUInt64(sum(weight_nano)) AS weight_nano, count() AS samples FROM older.samples \
         GROUP BY day, kind, slot, unit, stack_id",
        &[],
    )
    .unwrap();
    let e =
        Writer::open(&loc, &dir("older").join("spool.db"), WriterOptions::default()).unwrap_err().to_string();
    assert!(e.contains("samples_10m_mv") && e.contains("kflame store init"), "{e}");
    let ran = schema::init(&c, &loc, &InitOptions::default()).unwrap();
    assert!(ran.iter().any(|s| s == "DROP TABLE older.samples_10m_mv"), "{ran:?}");
    Reader::open(&loc).unwrap();
}

/// A database of a kflame before latency rows had spans: refused until init adds the column;
/// then its rows read as reads of a second, a batch spooled then (without the column) is taken,
/// and new rows keep their spans.
#[test]
fn latency_rows_before_spans_read_as_seconds_once_init_adds_them() {
    use kflame_store::LatencyRow;
    let rig = Rig::start(1).unwrap();
    let loc = rig.location(0, "nospan", false);
    let c = kflame_clickhouse::http::Client::new(&loc);
    schema::init(&c, &loc, &InitOptions::default()).unwrap();
    c.query("ALTER TABLE nospan.latency DROP COLUMN span_ms", &[]).unwrap();
    let day = schema::day_of(T0);
    let mut h = kflame::latency::Histogram::default();
    h.record(30_000_000);
    h.record(30_000_000);
    c.query(
        &format!(
            "INSERT INTO nospan.latency (day, host, time_ns, kind, label, slow, max_ns, sum_ns, buckets) VALUES \
             ({day}, 'web1', {}, {}, 'mutex', 2, {}, {}, unhex('{}'))",
            T0 + 999_000_000,
            LatencyKind::Lock.code(),
            h.max_ns,
            h.sum_ns,
            schema::encode_buckets(&h.counts).iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
        &[],
    )
    .unwrap();
    let e = Reader::open(&loc).unwrap_err().to_string();
    assert!(e.contains("nospan.latency has no column span_ms") && e.contains("kflame store init"), "{e}");
    let ran = schema::init(&c, &loc, &InitOptions::default()).unwrap();
    assert!(
        ran.iter().any(|s| s == "ALTER TABLE nospan.latency ADD COLUMN span_ms UInt32 DEFAULT 1000"),
        "{ran:?}"
    );
    assert!(schema::init(&c, &loc, &InitOptions::default()).unwrap().iter().all(|s| !s.contains("ALTER")));
    // A batch an earlier writer spooled: the table's columns of then, in Native.
    let old = schema::Table { columns: &schema::LATENCY.columns[..9], ..schema::LATENCY };
    let mut cols = kflame_clickhouse::native::Columns::new(old.columns.len());
    {
        use kflame_clickhouse::rowbinary::Put;
        cols.u16(day);
        cols.str("web1");
        cols.i64(T0 + 1_999_000_000);
        cols.u8(LatencyKind::Lock.code());
        cols.str("mutex");
        cols.u64(2);
        cols.u64(h.max_ns);
        cols.u64(h.sum_ns);
        Put::bytes(&mut cols, &schema::encode_buckets(&h.counts));
    }
    let body = cols.encode(&old);
    let names = kflame_clickhouse::native::column_names(&body).unwrap();
    c.insert("nospan.latency", &names.join(", "), "Native", &body, &[]).unwrap();
    let mut w = Writer::open(&loc, &dir("nospan").join("spool.db"), WriterOptions::default()).unwrap();
    let row = [LatencyRow { kind: LatencyKind::Lock, label: "mutex", histogram: &h, slow: 2, span_ms: 990 }];
    w.append_latency("web1", T0 + 2_999_000_000, &row).unwrap();
    w.flush().unwrap();
    drop(w);
    let ch = Reader::open(&loc).unwrap();
    let q = LatencyQuery {
        kind: LatencyKind::Lock,
        label: Some("mutex"),
        host: None,
        from_ns: T0,
        to_ns: T0 + 10 * SEC,
    };
    let spans: Vec<u32> = ch.latency(&q).unwrap()[0].points.iter().map(|p| p.span_ms).collect();
    assert_eq!(spans, [1000, 1000, 990]);
    let q = SeriesQuery {
        name: "lock.wait",
        label: Some("mutex"),
        host: None,
        from_ns: T0,
        to_ns: T0 + 10 * SEC,
        points: None,
    };
    let wait: Vec<f64> = ch.series(&q).unwrap()[0].points.iter().map(|p| p.avg).collect();
    assert_eq!(wait, [60.0, 60.0, kflame_store::stored_metric_value(60.0 / 0.99)]);
}

#[test]
fn a_write_refused_after_its_samples_were_stored_keeps_their_sums() {
    let rig = Rig::start(1).unwrap();
    let loc = rig.location(0, "partial", false);
    let c = kflame_clickhouse::http::Client::new(&loc);
    schema::init(&c, &loc, &InitOptions::default()).unwrap();
    let stacks = fleet::real_stacks();
    let samples = generate(1, 10, &stacks);
    let opts =
        WriterOptions { batch_interval: Duration::ZERO, spool_max_bytes: 10, ..WriterOptions::default() };
    let mut w = Writer::open(&loc, &dir("partial").join("spool.db"), opts).unwrap();
    // The buckets table goes away after the writer checked it: a batch's samples are stored,
    // its bucket row is not, and the spool is too small for the rest: the call is refused.
    c.query("RENAME TABLE partial.buckets TO partial.buckets_away", &[]).unwrap();
    let meta = Meta { unit: Unit::Samples, event: None };
    let part = bucket_samples(&samples, T0, T0 + 10 * SEC);
    let r = w.append_bucket(&Bucket {
        host: "web1",
        kind: Kind::Cpu,
        start_ns: T0,
        end_ns: T0 + 10 * SEC,
        capture: None,
        meta: &meta,
        samples: &part,
        aggregated: &[],
    });
    assert!(matches!(r, Err(StoreError::DiskFull { .. })), "{r:?}");
    c.query("RENAME TABLE partial.buckets_away TO partial.buckets", &[]).unwrap();
    w.flush().unwrap();
    // The samples that were stored have their sums: the refusal took back only what it could.
    let n = |sql: &str| String::from_utf8_lossy(&c.query(sql, &[]).unwrap()).trim().to_string();
    let stored = n("SELECT count() FROM partial.samples FORMAT TSV");
    assert_eq!(stored, part.len().to_string());
    assert_eq!(n("SELECT sum(samples) FROM partial.samples_10m FORMAT TSV"), stored);
    assert_eq!(n("SELECT sum(samples) FROM partial.host_stacks_1h FORMAT TSV"), stored);
}

/// A shard down while a writer writes through the other: the fleet's sums (`samples_10m`,
/// sharded by stack, so every batch of them spans both shards) and each host's hour sums read
/// exactly the samples written once it is back, whole slots and the raw samples alike.
#[test]
fn a_shard_down_while_writing_counts_every_sample_once() {
    let mut rig = Rig::start(2).unwrap();
    for i in 0..2 {
        let loc = rig.location(i, "fleet", true);
        schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();
    }
    let stacks = fleet::real_stacks();
    let meta = Meta { unit: Unit::Samples, event: None };
    let loc = rig.location(0, "fleet", true);
    let spool = dir("shard-down").join("spool.db");
    let opts = WriterOptions { batch_interval: Duration::ZERO, ..WriterOptions::default() };
    let mut w = Writer::open(&loc, &spool, opts).unwrap();
    let mut expect = StackCounts::new();
    // Slot-aligned: 10 minutes of db1 and db2 from a slot's start.
    let t0 = T0 - T0.rem_euclid(600 * SEC);
    let mut notes = Vec::new();
    // db1 first: its rows stay on the server written through (shard 1 of 2), and only the
    // sums of the other shard's stacks meet the outage.
    for (h, host) in ["db1", "db2"].iter().enumerate() {
        let samples = fleet::host_samples(h, t0, 600, 19, 2, &stacks);
        for b in 0..60 {
            if h == 0 && b == 20 {
                rig.stop(1);
            }
            if h == 1 && b == 40 {
                rig.restart(1).unwrap();
            }
            let (a, z) = (t0 + b * 10 * SEC, t0 + (b + 1) * 10 * SEC);
            append_counted(&mut w, host, &meta, &samples, (a, z), &mut expect);
            notes.extend(w.notes());
        }
    }
    flush_until_sent(&mut w);
    notes.extend(w.notes());
    assert_eq!(w.spooled(), (0, 0), "{notes:?}");
    assert!(w.stats().batches_spooled > 0, "the outage was seen: {:?} {notes:?}", w.stats());
    drop(w);
    let ch = Reader::open(&loc).unwrap();
    // Whole slots of every host: the fleet's sums.
    let whole = ch.profile(&ProfileQuery::new(Kind::Cpu, t0, t0 + 600 * SEC)).unwrap();
    assert_eq!(folded(&whole.stacks), folded(&Stacks::Counts(expect.clone())), "{notes:?}");
    // Not whole slots: the samples themselves.
    let raw = ch.profile(&ProfileQuery::new(Kind::Cpu, t0 + SEC, t0 + 600 * SEC)).unwrap();
    let part = raw.samples;
    assert!(part > 0 && part < whole.samples);
    for host in ["db1", "db2"] {
        let q = ProfileQuery { host: Some(host), ..ProfileQuery::new(Kind::Cpu, t0, t0 + 600 * SEC) };
        let by_hour = ch.profile(&q).unwrap();
        let q = ProfileQuery { host: Some(host), ..ProfileQuery::new(Kind::Cpu, t0 + SEC, t0 + 600 * SEC) };
        let raw = ch.profile(&q).unwrap();
        assert!(by_hour.samples >= raw.samples, "{host}");
        assert_eq!(by_hour.buckets, 60, "{host}");
    }
    // db1's rows are on the server written through (see above).
    let c = kflame_clickhouse::http::Client::new(&rig.location(0, "fleet", false));
    let on_0 = c.query("SELECT DISTINCT host FROM fleet.samples_local FORMAT TSV", &[]).unwrap();
    assert_eq!(String::from_utf8(on_0).unwrap(), "db1\n");
}

/// A loopback proxy in front of a server: it passes each request (one per connection, as the
/// client sends them) and its answer, but for the first request whose head holds `lose`: that
/// one reaches the server whole, and the connection is closed as its answer comes, without it.
struct LossyProxy {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u32>>,
}

impl LossyProxy {
    fn start(server: u16, lose: &'static str) -> LossyProxy {
        use std::io::{BufRead, BufReader, Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut lost = 0;
            while !stopped.load(Ordering::Relaxed) {
                let Ok((client, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                client.set_nonblocking(false).unwrap();
                client.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut r = BufReader::new(client);
                let mut head = String::new();
                while !head.ends_with("\r\n\r\n") {
                    if r.read_line(&mut head).unwrap_or(0) == 0
                        || !"POST ".starts_with(&head[..head.len().min(5)])
                    {
                        break;
                    }
                }
                // Not HTTP (the writer asking whether the port speaks TLS): dropped.
                if !head.starts_with("POST ") || !head.ends_with("\r\n\r\n") {
                    continue;
                }
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .map_or(0, |n| n.trim().parse().unwrap());
                let mut body = vec![0; length];
                if r.read_exact(&mut body).is_err() {
                    continue;
                }
                let mut up = std::net::TcpStream::connect(("127.0.0.1", server)).unwrap();
                up.write_all(head.as_bytes()).unwrap();
                up.write_all(&body).unwrap();
                let mut answer = Vec::new();
                let _ = up.read_to_end(&mut answer);
                let mut client = r.into_inner();
                if lost == 0 && head.contains(lose) {
                    lost += 1;
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let _ = client.write_all(&answer);
            }
            lost
        });
        LossyProxy { port, stop, thread: Some(thread) }
    }

    /// Stops it; how many answers it lost.
    fn lost(mut self) -> u32 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

/// An insert the server stored whose answer never came: the writer cannot know it was stored,
/// sends it again, and says so in a note, with the rows it may have stored twice, and counts
/// it; and what is read then is exactly what it said: the samples written, that batch's twice.
#[test]
fn an_insert_stored_but_unanswered_is_sent_again_and_said() {
    let rig = Rig::start(1).unwrap();
    let loc = rig.location(0, "fleet", false);
    schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();
    let proxy = LossyProxy::start(loc.port, "INSERT%20INTO%20fleet.samples%20%28");
    let via = Location { port: proxy.port, ..loc.clone() };
    let stacks = fleet::real_stacks();
    let samples = generate(0, 30, &stacks);
    let meta = Meta { unit: Unit::Samples, event: None };
    let opts = WriterOptions { batch_interval: Duration::ZERO, ..WriterOptions::default() };
    let mut w = Writer::open(&via, &dir("unanswered").join("spool.db"), opts).unwrap();
    let mut expect = StackCounts::new();
    let mut notes = Vec::new();
    let mut first = StackCounts::new();
    append_counted(&mut w, "db1", &meta, &samples, (T0, T0 + 10 * SEC), &mut first);
    for (stack, weight) in first.iter() {
        expect.add(stack, weight);
    }
    notes.extend(w.notes());
    for b in 1..3 {
        let (a, z) = (T0 + b * 10 * SEC, T0 + (b + 1) * 10 * SEC);
        append_counted(&mut w, "db1", &meta, &samples, (a, z), &mut expect);
        notes.extend(w.notes());
    }
    flush_until_sent(&mut w);
    notes.extend(w.notes());
    assert_eq!(w.spooled(), (0, 0), "{notes:?}");
    let stats = w.stats();
    drop(w);
    assert_eq!(proxy.lost(), 1);
    assert_eq!(stats.batches_unanswered, 1, "{stats:?} {notes:?}");
    let said =
        "rows into samples sent whole: it is sent again, and if the server had stored it, it is stored twice";
    assert!(
        notes.iter().any(|n| n.contains("gave no answer to an insert of") && n.contains(said)),
        "{notes:?}"
    );
    // As said: the samples of the batch whose answer was lost are stored twice, the others
    // once. (The sums sent after them in that batch were spooled unsent, and are stored once.)
    for (stack, weight) in first.iter() {
        expect.add(stack, weight);
    }
    let ch = Reader::open(&loc).unwrap();
    let q = ProfileQuery { host: Some("db1"), ..ProfileQuery::new(Kind::Cpu, T0, T0 + 30 * SEC) };
    assert_eq!(folded(&ch.profile(&q).unwrap().stacks), folded(&Stacks::Counts(expect)));
}
