//! Live tests of the watcher loop (root: perf events on every CPU, tracefs, a tmpfs mount).
//! Each runs its watcher until what it checks has happened (the log and the database polled,
//! bounded by [`PATIENCE`]), so that a loaded machine only makes it slower. The watcher writes a real SQLite history database
//! in a temporary directory, and the tests read it back through `Query`. They touch the
//! running system, hence the `live_` names.

#![allow(clippy::print_stderr)] // the skip note when not root

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{Event, OpenMode, ProfileQuery, Query, SeriesQuery, Sqlite};
use kflame_watch::config::{self, File, Level};
use kflame_watch::store::{Bucket, Kind, Sample, Store};
use kflame_watch::{Control, Environment, Status, Watcher};

const SEC: i64 = 1_000_000_000;

/// One watcher at a time: each records every CPU and names every process's stacks, and
/// several at once on a small machine (debug builds) make each too slow for its timings.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The watcher's log, shared with the thread that decides when to stop it.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Control for Log {
    fn log(&mut self, level: Level, message: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{}: {message}", level.name()));
    }
    fn status(&mut self, _s: &Status) {}
}

/// The longest a test waits for its watcher to do what it checks.
const PATIENCE: Duration = Duration::from_secs(120);

/// How a watch went: its log, how long it ran, and how long it took to stop once told.
struct Ran {
    log: Vec<String>,
    ran: Duration,
    stop_took: Duration,
}

/// Runs `w` until `done(log, database)` holds, asked every 250 ms with the database at `db`
/// opened read-only (the watcher writes meanwhile), or until [`PATIENCE`] has passed (the
/// test's assertions then say what is missing); the database is closed (flushed) on return.
fn run_until(
    mut w: Watcher<Sqlite>,
    db: &Path,
    done: impl Fn(&[String], &Sqlite) -> bool + Send + 'static,
) -> (Ran, Status) {
    let stop = Arc::new(AtomicBool::new(false));
    let log = Log::default();
    let began = Instant::now();
    let stopper = {
        let (stop, log, db) = (stop.clone(), log.clone(), db.to_path_buf());
        std::thread::spawn(move || {
            while began.elapsed() < PATIENCE {
                std::thread::sleep(Duration::from_millis(250));
                if let Ok(read) = Sqlite::open(&db, OpenMode::Read)
                    && done(&log.lines(), &read)
                {
                    break;
                }
            }
            stop.store(true, Ordering::Relaxed);
            Instant::now()
        })
    };
    let status = w.run(stop, Arc::new(AtomicBool::new(false)), &mut log.clone()).unwrap();
    let told = stopper.join().unwrap();
    let ran = Ran { log: log.lines(), ran: told - began, stop_took: told.elapsed() };
    drop(w.into_store());
    (ran, status)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

#[inline(never)]
fn kflame_watch_test_burner(seconds: u64) -> u64 {
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut x = 1u64;
    while Instant::now() < end {
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    x
}

/// Not a test: the body of the burner processes (a recorder never profiles its own
/// process, so the burner runs in a child: this test binary started again with
/// `KFLAME_WATCH_BURN=SECONDS`). Without the variable it does nothing.
#[test]
fn burner_child() {
    if let Some(secs) = std::env::var("KFLAME_WATCH_BURN").ok().and_then(|s| s.parse().ok()) {
        std::hint::black_box(kflame_watch_test_burner(secs));
    }
}

fn burner(seconds: u64) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "burner_child", "--nocapture", "--test-threads=1"])
        .env("KFLAME_WATCH_BURN", seconds.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A directory removed (with what is in it) when dropped; unmounted first when a tmpfs was
/// mounted on it.
struct TempDir {
    path: PathBuf,
    mounted: bool,
}

impl TempDir {
    fn new(what: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("kflame-watch-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir { path, mounted: false }
    }

    /// A tmpfs of `size` (`8m`) mounted on a new directory; `None` when mounting fails.
    fn tmpfs(what: &str, size: &str) -> Option<TempDir> {
        let mut d = TempDir::new(what);
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&d.path)
            .status()
            .is_ok_and(|s| s.success());
        d.mounted = ok;
        ok.then_some(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.path).status();
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The database the CLI opens: metric values buffered in blocks of one bucket.
fn open_db(path: &Path, bucket_ns: i64) -> Sqlite {
    let mut db = Sqlite::open(path, OpenMode::Write).unwrap();
    db.set_metric_block(bucket_ns);
    db
}

fn now_ns() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(d.as_nanos()).unwrap()
}

/// The whole machine's `cpu` series of `host`, all of it.
fn cpu_of(host: &str) -> SeriesQuery<'_> {
    SeriesQuery { name: "cpu", label: Some(""), host: Some(host), from_ns: 0, to_ns: i64::MAX, points: None }
}

/// The stack texts of a profile with their weights.
fn stacks(p: &kflame_store::Profile) -> Vec<(String, Weight)> {
    p.stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w))
        .collect()
}

fn weight_of(stacks: &[(String, Weight)], part: &str) -> Weight {
    stacks.iter().filter(|(s, _)| s.contains(part)).fold(Weight::ZERO, |a, (_, w)| a + *w)
}

/// Runs a watcher with these flags on a new database at `db` until `done` holds (see
/// [`run_until`]), with one burner process per CPU meanwhile.
fn watch(flags: File, db: &Path, done: impl Fn(&[String], &Sqlite) -> bool + Send + 'static) -> Ran {
    let settings = config::resolve(None, &flags, "test-host").unwrap();
    let store = open_db(db, i64::try_from(settings.bucket.as_nanos()).unwrap());
    let w = Watcher::new(settings, store, Environment::default());
    // outlast the watcher; killed after it
    let burners: Vec<_> = (0..2).map(|_| burner(PATIENCE.as_secs() + 30)).collect();
    let (ran, _) = run_until(w, db, done);
    for mut b in burners {
        let _ = b.kill();
        let _ = b.wait();
    }
    ran
}

#[test]
fn live_cpu_trigger_captures_the_burner() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let dir = TempDir::new("trigger");
    let path = dir.path.join("history.db");
    let flags = File {
        triggers: Some(vec!["cpu > 40% for 2s => cpu 4s".into()]),
        bucket: Some("2s".into()),
        kmsg: Some(false),
        ..File::default()
    };
    let began = now_ns();
    // Until the capture has ended, the always-on profile has three buckets and a few more
    // seconds of metrics have been stored.
    let ran = watch(flags, &path, |_, db| {
        let ended = db
            .events(0, i64::MAX, None)
            .is_ok_and(|events| events.iter().any(|e| matches!(e, Event::Capture { end_ns: Some(_), .. })));
        ended && db.profile(&ProfileQuery::new(Kind::Cpu, 0, i64::MAX)).is_ok_and(|p| p.buckets >= 3)
    });
    let ended = now_ns();
    let (log, stop_took) = (&ran.log, ran.stop_took);
    // a few seconds: the last windows of the profile and of the capture still running are
    // named first (slow in a debug build on a loaded machine)
    assert!(stop_took < Duration::from_secs(8), "stopping took {stop_took:?}");
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let events = db.events(0, i64::MAX, None).unwrap();
    let triggers: Vec<_> = events.iter().filter(|e| matches!(e, Event::Trigger { .. })).collect();
    assert_eq!(triggers.len(), 1, "{events:?}\n{log:?}");
    let Event::Trigger { id: trigger, metric, value, threshold, host, .. } = triggers[0] else {
        unreachable!()
    };
    assert_eq!((metric.as_str(), *threshold, host.as_str()), ("cpu", 40.0, "test-host"));
    assert!(*value > 40.0, "{value}");
    let captures: Vec<_> = events.iter().filter(|e| matches!(e, Event::Capture { .. })).collect();
    assert_eq!(captures.len(), 1, "{events:?}");
    let Event::Capture { id, kind, start_ns, end_ns, trigger: by, .. } = captures[0] else { unreachable!() };
    assert_eq!((*kind, *by), (Kind::Cpu, Some(*trigger)));
    let end = end_ns.unwrap_or_else(|| panic!("capture not ended: {log:?}"));
    assert!(
        began <= *start_ns && *start_ns < end && end <= ended,
        "{start_ns}..{end} outside {began}..{ended}"
    );
    let cap = db
        .profile(&ProfileQuery { capture: Some(*id), ..ProfileQuery::new(Kind::Cpu, 0, i64::MAX) })
        .unwrap();
    let cap_stacks = stacks(&cap);
    let in_capture = weight_of(&cap_stacks, "kflame_watch_test_burner");
    // 99 Hz x 2 CPUs x ~4 s; the machine may be shared, so the burner's share varies
    assert!(cap.samples > 100, "{} samples in {} buckets; {log:?}", cap.samples, cap.buckets);
    let mut top: Vec<&str> = cap_stacks
        .iter()
        .map(|(s, _)| s.as_str())
        .filter(|s| s.starts_with("live_watcher"))
        .take(5)
        .collect();
    top.sort();
    // present, whatever share the rest of a busy machine leaves it
    assert!(
        in_capture >= Weight::from_u64(5),
        "{in_capture:?} of {} samples in the burner: {top:#?}",
        cap.samples
    );
    // the always-on profile: its own buckets only (the capture's 99 Hz samples are kept
    // apart, not added to its 19 Hz ones), samples timed inside the watch, the burner in it
    let all = db.profile(&ProfileQuery::new(Kind::Cpu, 0, i64::MAX)).unwrap();
    assert!(all.buckets >= 3, "{} always-on buckets", all.buckets);
    assert!(weight_of(&stacks(&all), "kflame_watch_test_burner") > Weight::ZERO);
    let times = db.samples(&ProfileQuery::new(Kind::Cpu, 0, i64::MAX)).unwrap();
    assert!(
        times.iter().all(|s| s.time_ns >= began - 2 * SEC && s.time_ns <= ended),
        "sample times outside the watch"
    );
    assert!(times.windows(2).all(|p| p[0].time_ns <= p[1].time_ns));
    // metrics every second
    let cpu = db.series(&cpu_of("test-host")).unwrap();
    let cpu_rows = cpu.iter().map(|s| s.points.len()).sum::<usize>();
    // one a second, a few late while the first windows are named (kallsyms, ELF tables)
    let secs = ran.ran.as_secs_f64() + stop_took.as_secs_f64();
    assert!(
        cpu_rows as f64 >= secs * 0.4 && cpu_rows as f64 <= secs + 1.0,
        "{cpu_rows} cpu rows in {secs:.1} s"
    );
}

/// Fills the database with buckets two days old, 200 distinct stacks each, until the file
/// system is full; returns how many were stored.
fn fill_with_old_buckets(db: &mut Sqlite) -> i64 {
    let t0 = now_ns() - 2 * 86_400 * SEC;
    let meta = Meta::with_unit(Unit::Samples);
    for i in 0..100_000i64 {
        let stacks: Vec<Vec<u8>> =
            (0..200).map(|k| format!("old_worker;run;step{i};leaf{k}").into_bytes()).collect();
        let samples: Vec<Sample<'_>> = stacks
            .iter()
            .enumerate()
            .map(|(k, s)| Sample {
                time_ns: t0 + i * 10 * SEC + k as i64 * 1_000_000,
                cpu: (k % 2) as u32,
                cgroup: None,
                stack: s,
                weight: Weight::ONE,
            })
            .collect();
        let r = db.append_bucket(&Bucket {
            host: "h",
            kind: Kind::Cpu,
            start_ns: t0 + i * 10 * SEC,
            end_ns: t0 + (i + 1) * 10 * SEC,
            capture: None,
            meta: &meta,
            samples: &samples,
            aggregated: &[],
        });
        match r {
            Ok(()) => {}
            Err(e) if e.is_disk_full() => return i,
            Err(e) => panic!("filling: {e}"),
        }
    }
    panic!("the file system never filled");
}

#[test]
fn live_disk_full_keeps_running_and_resumes() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    // A small tmpfs filled with old history: the watcher's first buckets find the disk full.
    // It keeps them, goes on recording, says so; maintenance frees space by the disk budget
    // (oldest first), and every kept bucket is then written, in order, and storing goes on.
    let Some(dir) = TempDir::tmpfs("full", "8m") else {
        eprintln!("skipped: mounting a tmpfs failed");
        return;
    };
    let path = dir.path.join("history.db");
    let mut db = open_db(&path, SEC);
    let old = fill_with_old_buckets(&mut db);
    assert!(old > 10, "{old} buckets filled 8 MiB");
    assert!(db.reserve_path().exists(), "the reserve maintenance deletes with under a full disk");
    let used = db.used_bytes().unwrap();
    let budget = format!("{}K", used / 2 / 1024);
    let settings = config::resolve(
        None,
        &File {
            bucket: Some("1s".into()),
            kmsg: Some(false),
            disk_budget: Some(budget.clone()),
            ..File::default()
        },
        "h",
    )
    .unwrap();
    let w = Watcher::new(settings, db, Environment::default());
    let began = now_ns();
    // Until storing has resumed and three more seconds of metrics are stored after it.
    let (ran, status) = run_until(w, &path, move |log, db| {
        if !log.iter().any(|l| l.contains("storing resumed")) {
            return false;
        }
        let stored =
            db.series(&cpu_of("h")).map(|s| s.iter().map(|s| s.points.len()).sum::<usize>()).unwrap_or(0);
        let buckets =
            db.profile(&ProfileQuery::new(Kind::Cpu, began - SEC, i64::MAX)).map(|p| p.buckets).unwrap_or(0);
        stored >= 6 && buckets >= 10
    });
    let log = ran.log;
    let full = log.iter().position(|l| {
        // metrics or a bucket, whichever write found the disk full first
        l.starts_with("error: ")
            && l.contains("not stored")
            && l.contains("disk full")
            && l.contains(&path.display().to_string())
            && l.contains("keeping profile buckets in memory")
    });
    let freed =
        log.iter().position(|l| l.starts_with("warn: database maintenance:") && l.contains("disk budget"));
    let resumed = log.iter().position(|l| l.contains("storing resumed"));
    assert!(full.is_some() && freed > full && resumed > freed, "budget {budget}: {log:#?}");
    assert_eq!(status.waiting_buckets, 0, "{status:?}");
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    // the oldest history went for the budget; the watch's buckets are all there
    let old_left = db.profile(&ProfileQuery::new(Kind::Cpu, 0, began - 86_400 * SEC)).unwrap();
    assert!(old_left.buckets < old as u64, "{} of {old} old buckets left", old_left.buckets);
    let new = db.profile(&ProfileQuery::new(Kind::Cpu, began - SEC, i64::MAX)).unwrap();
    assert!(new.buckets >= 10, "{} buckets of the watch", new.buckets);
    assert!(new.samples > 0);
    let times = db.samples(&ProfileQuery::new(Kind::Cpu, began - SEC, i64::MAX)).unwrap();
    assert!(times.windows(2).all(|p| p[0].time_ns <= p[1].time_ns), "samples out of order");
    // metrics: stored again once the disk has room, one a second to the end. (Values of a
    // series first seen while the disk is full are not kept: the store cannot create the
    // series row; the error above says so.)
    let cpu = db.series(&cpu_of("h")).unwrap();
    let secs: Vec<i64> =
        cpu.iter().flat_map(|s| s.points.iter().map(|p| (p.time_ns - began) / SEC)).collect();
    assert!(secs.len() >= 3, "cpu values at {secs:?} s");
    assert!(secs.windows(2).all(|p| p[1] - p[0] <= 2), "gaps in the cpu values: {secs:?} s");
    let end = (ran.ran.as_secs_f64()) as i64;
    assert!(*secs.last().unwrap() >= end - 3, "cpu values end early: {secs:?} s of {end}");
}
