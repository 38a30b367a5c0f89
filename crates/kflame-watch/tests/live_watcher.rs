//! Live tests of the watcher loop (root: perf events on every CPU, tracefs). Each is bounded
//! by its own stop timer. They touch the running system, hence the `live_` names.

#![allow(clippy::print_stderr)] // the skip note when not root

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kflame_watch::config::{self, File, Level};
use kflame_watch::store::{Kind, MemStore};
use kflame_watch::{Control, Environment, Status, Watcher};

/// One watcher at a time: each records every CPU and names every process's stacks, and
/// several at once on a small machine (debug builds) make each too slow for its timings.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

struct Log(Vec<String>);

impl Control for Log {
    fn log(&mut self, level: Level, message: &str) {
        self.0.push(format!("{}: {message}", level.name()));
    }
    fn status(&mut self, _s: &Status) {}
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

/// Runs a watcher with these flags for `secs`, with one burner thread per CPU meanwhile.
fn watch(flags: File, secs: u64) -> (MemStore, Log, Duration) {
    let settings = config::resolve(None, &flags, "test-host").unwrap();
    let mut w = Watcher::new(settings, MemStore::default(), Environment::default());
    let stop = Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..2).map(|_| burner(secs + 10)).collect(); // outlast the watcher; killed after it
    let timer = {
        let s = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            s.store(true, Ordering::Relaxed);
            Instant::now()
        })
    };
    let mut log = Log(Vec::new());
    w.run(stop, Arc::new(AtomicBool::new(false)), &mut log).unwrap();
    let stopped = timer.join().unwrap().elapsed();
    for mut b in burners {
        let _ = b.kill();
        let _ = b.wait();
    }
    (w.into_store(), log, stopped)
}

#[test]
fn live_cpu_trigger_captures_the_burner() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let flags = File {
        triggers: Some(vec!["cpu > 40% for 2s => cpu 4s".into()]),
        bucket: Some("2s".into()),
        kmsg: Some(false),
        ..File::default()
    };
    let (store, log, stop_took) = watch(flags, 20);
    // a few seconds: the last windows of the profile and of the capture still running are
    // named first (slow in a debug build on a loaded machine)
    assert!(stop_took < Duration::from_secs(8), "stopping took {stop_took:?}");
    assert_eq!(store.triggers.len(), 1, "{:?}\n{:?}", store.triggers, log.0);
    assert_eq!(store.triggers[0].1, "cpu");
    assert!(store.triggers[0].2 > 40.0);
    assert_eq!(store.captures.len(), 1);
    let c = &store.captures[0];
    assert_eq!(c.kind, Kind::Cpu);
    assert!(c.end_ns.is_some(), "capture not ended: {:?}", log.0);
    let cap: Vec<_> = store.buckets.iter().filter(|b| b.capture.is_some()).collect();
    assert!(!cap.is_empty(), "{:?}", log.0);
    let burner = |b: &&kflame_watch::store::MemBucket| {
        b.samples.iter().filter(|s| s.2.contains("kflame_watch_test_burner")).count()
    };
    let in_capture: usize = cap.iter().map(burner).sum();
    let total: usize = cap.iter().map(|b| b.samples.len()).sum();
    // 99 Hz x 2 CPUs x ~4 s; the machine may be shared, so the burner's share varies
    let spans: Vec<(i64, usize, usize)> = cap
        .iter()
        .map(|b| ((b.end_ns - b.start_ns) / 1_000_000, b.samples.len(), b.aggregated.len()))
        .collect();
    assert!(
        total > 100,
        "{total} samples in {spans:?}; {in_capture} burner; {:?}; {:?}",
        store.captures,
        log.0
    );
    let mut top: Vec<&str> = cap
        .iter()
        .flat_map(|b| b.samples.iter().map(|s| s.2.as_str()))
        .filter(|s| s.starts_with("live_watcher"))
        .take(5)
        .collect();
    top.sort();
    // present, whatever share the rest of a busy machine leaves it
    assert!(in_capture >= 5, "{in_capture} of {total} samples in the burner: {top:#?}");
    // the always-on profile: buckets of 2 s with per-sample times inside their range
    let profile: Vec<_> = store.buckets.iter().filter(|b| b.capture.is_none()).collect();
    assert!(profile.len() >= 3, "{} buckets", profile.len());
    for b in &profile {
        assert_eq!(b.end_ns - b.start_ns, 2_000_000_000);
        assert!(b.samples.iter().all(|s| s.0 >= b.start_ns && s.0 < b.end_ns));
    }
    assert!(profile.iter().map(burner).sum::<usize>() > 0);
    // metrics every second
    let cpu_rows = store.metrics.iter().filter(|m| m.1 == "cpu" && m.2.is_empty()).count();
    // one a second, a few late while the first windows are named (kallsyms, ELF tables)
    assert!((8..=21).contains(&cpu_rows), "{cpu_rows} cpu rows");
}

#[test]
fn live_disk_full_keeps_running_and_resumes() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    // The store refuses the first bucket writes (disk full); the watcher keeps the buckets,
    // goes on recording metrics, and writes them all, in order, once it takes writes again.
    let settings =
        config::resolve(None, &File { bucket: Some("1s".into()), kmsg: Some(false), ..File::default() }, "h")
            .unwrap();
    let store = MemStore { refuse_buckets: 3, ..MemStore::default() };
    let mut w = Watcher::new(settings, store, Environment::default());
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(7));
        s.store(true, Ordering::Relaxed);
    });
    let mut log = Log(Vec::new());
    let status = w.run(stop, Arc::new(AtomicBool::new(false)), &mut log).unwrap();
    t.join().unwrap();
    let store = w.store();
    let full = log.0.iter().position(|l| {
        l.starts_with("error: memory: disk full") && l.contains("keeping profile buckets in memory")
    });
    let resumed = log.0.iter().position(|l| l.contains("storing resumed"));
    assert!(full.is_some() && resumed > full, "{:?}", log.0);
    assert_eq!(status.waiting_buckets, 0, "{status:?}");
    assert!(store.buckets.len() >= 5, "{} buckets", store.buckets.len());
    let starts: Vec<i64> = store.buckets.iter().map(|b| b.start_ns).collect();
    // in time order (a second without a sample on an idle machine has no bucket; samples
    // handed over late for time order make a second bucket of the same range)
    assert!(starts.windows(2).all(|p| p[1] >= p[0]), "buckets out of order: {starts:?}");
    assert!(store.metrics.len() > 10, "metrics still stored");
}
