//! Live tests of `kflame watch` (root): a CPU burner crossing a trigger, SIGTERM, kill -9
//! and a restart on the same database, and tracefs left as it was. The tests wait for what
//! they look for (a capture ended, a bucket written, a line logged), polling the database
//! read-only or the watcher's log with a generous bound, never for a fixed time: a loaded
//! machine makes them slower, not wrong. The database is read back through
//! `kflame_store::Query`.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Env, Reaped, TracingState, wait_timeout};
use kflame_store::{Event, Kind, OpenMode, ProfileQuery, Query, Sqlite};

/// One watcher at a time: each records every CPU and names every process's stacks, and
/// several at once on a small machine (debug builds) make each too slow for its timings.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// How long a test waits for what it expects before it fails: far beyond what an idle
/// machine needs (seconds), so that only a watcher that never gets there fails.
const PATIENCE: Duration = Duration::from_secs(120);

/// Polls `f` every 100 ms until it gives a value, for at most [`PATIENCE`]; panics with
/// `what` (and the watcher's log) after that.
fn wait_for<T>(what: &str, w: &Watch, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "waited {PATIENCE:?} for {what}; the watcher's log:\n{}", w.log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A `kflame watch` process and its log (stderr), read as it comes on a thread of its own.
struct Watch {
    child: Child,
    log: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until the log holds `text` (after the first `skip` bytes of it).
    fn wait_log(&self, text: &str, skip: usize) {
        wait_for(&format!("{text:?} in the log"), self, || {
            self.log().get(skip..)?.contains(text).then_some(())
        });
    }

    /// Stops it with SIGTERM: its exit status, how long it took, and its whole log.
    fn term(mut self) -> (std::process::ExitStatus, Duration, String) {
        signal(&self.child, 15);
        let started = Instant::now();
        let status = wait_timeout(&mut self.child, Duration::from_secs(10))
            .expect("kflame watch did not stop within 10 s of SIGTERM");
        let took = started.elapsed();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        (status, took, self.log())
    }
}

/// A test that fails does not leave its watcher running (nor holding its output open).
impl Drop for Watch {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn spawn_watch(cmd: &mut Command) -> Watch {
    let mut child = cmd.stderr(Stdio::piped()).spawn().expect("start kflame watch");
    let log = Arc::new(Mutex::new(String::new()));
    let mut err = child.stderr.take().expect("piped stderr");
    let sink = log.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap_or_else(|e| e.into_inner()).push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    Watch { child, log, reader: Some(reader) }
}

/// A watcher of `db` with `args`. Its BPF programs keep no CPU budget: on a machine as loaded
/// as a test run they would be detached for most of each minute, and these tests check what
/// they capture (the budget has its own test, `kflame-bpf`'s `live_budget`).
fn watch(env: &Env, db: &Path, args: &[&str]) -> Watch {
    spawn_watch(
        Command::new(env.kflame)
            .arg("watch")
            .arg("--db")
            .arg(db)
            .args(["--no-kmsg", "--log-level", "info", "--program-budget", "0"])
            .args(args),
    )
}

fn signal(child: &Child, sig: i32) {
    let status = Command::new("kill").arg(format!("-{sig}")).arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
}

/// The database, once the watcher has made it (read-only, as `query` opens it).
fn open_read(db: &Path) -> Option<Sqlite> {
    Sqlite::open(db, OpenMode::Read).ok()
}

/// The first capture of `kind` that has ended: (id, start, end).
fn ended_capture(db: &Path, kind: Kind) -> Option<(kflame_store::CaptureId, i64, i64)> {
    let events = open_read(db)?.events(0, i64::MAX, None).ok()?;
    events.iter().find_map(|e| match e {
        Event::Capture { id, kind: k, start_ns, end_ns: Some(end), .. } if *k == kind => {
            Some((*id, *start_ns, *end))
        }
        _ => None,
    })
}

fn db_path(env: &Env, name: &str) -> std::path::PathBuf {
    let p = env.dir.join(format!("{}-{name}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

/// The newest sample time of the always-on profile.
fn last_sample(db: &Sqlite) -> Option<i64> {
    let q = ProfileQuery::new(Kind::Cpu, 0, i64::MAX);
    let all = db.samples(&q).ok()?;
    let capture_free: Vec<i64> = all.iter().map(|s| s.time_ns).collect();
    capture_free.into_iter().max()
}

#[test]
fn live_cpu_trigger_capture_shows_the_burner_and_sigterm_writes_the_last_bucket() {
    let _serial = serial();
    let Some(env) = Env::get("live_cpu_trigger_capture_shows_the_burner") else { return };
    let db = db_path(&env, "trigger");
    let before = TracingState::read();
    // The burner outlasts any wait; it is killed once the watcher stopped.
    // Killed when dropped, a failed assertion too: a burner left running would load the
    // tests after it.
    let burner =
        Reaped(Command::new(&env.workload).args(["cpu", "300"]).stdout(Stdio::null()).spawn().unwrap());
    let w = watch(&env, &db, &["--bucket", "2s", "--trigger", "cpu > 40% for 2s => cpu 5s"]);
    wait_for("the trigger's capture to end", &w, || ended_capture(&db, Kind::Cpu));
    let term = now_ns();
    let (status, took, err) = w.term();
    drop(burner);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert_eq!(TracingState::read(), before, "tracefs state changed");

    let db = Sqlite::open(&db, OpenMode::Read).unwrap();
    let events = db.events(0, i64::MAX, None).unwrap();
    let trigger = events.iter().find_map(|e| match e {
        Event::Trigger { id, metric, value, threshold, rule, .. } => {
            Some((*id, metric.clone(), *value, *threshold, rule.clone()))
        }
        _ => None,
    });
    let (tid, metric, value, threshold, rule) =
        trigger.unwrap_or_else(|| panic!("no trigger: {events:?}\n{err}"));
    assert_eq!((metric.as_str(), threshold, rule.as_str()), ("cpu", 40.0, "cpu > 40% for 2s => cpu 5s"));
    assert!(value > 40.0);
    let capture = events.iter().find_map(|e| match e {
        Event::Capture { id, kind: Kind::Cpu, trigger: Some(t), start_ns, end_ns, .. } if *t == tid => {
            Some((*id, *start_ns, *end_ns))
        }
        _ => None,
    });
    let (cid, start, end) = capture.unwrap_or_else(|| panic!("no capture of the trigger: {events:?}"));
    let end = end.expect("the capture ended");
    // 5 s, ended when the watcher has stored its last window (later on a loaded machine)
    assert!((4_000_000_000..15_000_000_000).contains(&(end - start)), "capture of {} ns", end - start);
    let q = ProfileQuery {
        capture: Some(cid),
        ..ProfileQuery::new(Kind::Cpu, start - 1_000_000_000, end + 1_000_000_000)
    };
    let p = db.profile(&q).unwrap();
    let kflame::fold::Stacks::Counts(stacks) = &p.stacks else { panic!("a merged profile is summed") };
    let total: u64 = stacks.iter().map(|(_, w)| w.whole()).sum();
    let burner: u64 = stacks
        .iter()
        .filter(|(s, _)| String::from_utf8_lossy(s).contains("kf_deep_6"))
        .map(|(_, w)| w.whole())
        .sum();
    // 99 Hz on 2 CPUs for 5 s; the burner keeps one CPU busy (others may share the machine)
    assert!(total > 200, "{total} samples in the capture");
    // (at least 5%: the machine may be busy with other work)
    assert!(burner >= 20 && burner * 20 > total, "kf_deep_6 has {burner} of {total} samples");
    // The last bucket: written at SIGTERM, with samples up to the signal.
    let last = last_sample(&db).expect("samples");
    assert!(last > term - 1_500_000_000, "last sample {} ms before SIGTERM", (term - last) / 1_000_000);
}

#[test]
fn live_kill_9_loses_at_most_the_bucket_in_progress_and_a_restart_continues() {
    let _serial = serial();
    let Some(env) = Env::get("live_kill_9_loses_at_most_the_bucket_in_progress") else { return };
    let db = db_path(&env, "kill9");
    // Killed when dropped, a failed assertion too: a burner left running would load the
    // tests after it.
    let burner =
        Reaped(Command::new(&env.workload).args(["cpu", "300"]).stdout(Stdio::null()).spawn().unwrap());
    // System calls every 10 ms, for a latency histogram in every second (a second without a
    // call stores none, and the burner makes none).
    let _napper = Reaped(Command::new(&env.workload).args(["nap", "1000000", "10"]).spawn().unwrap());
    let mut w = watch(&env, &db, &["--bucket", "2s"]);
    // Killed right after a bucket is written: a first bucket, then the next one.
    let first = wait_for("a first bucket", &w, || last_sample(&open_read(&db)?));
    wait_for("a second bucket", &w, || last_sample(&open_read(&db)?).filter(|&t| t > first));
    // And a block of metric values (the first value of the next block writes it): on a
    // loaded machine the first values come seconds after the first samples.
    wait_for("a block of metric values", &w, || {
        let q = kflame_store::SeriesQuery {
            name: "cpu",
            label: Some(""),
            host: None,
            from_ns: 0,
            to_ns: i64::MAX,
            points: None,
        };
        open_read(&db)?.series(&q).ok()?.iter().any(|s| !s.points.is_empty()).then_some(())
    });
    // Then killed as the next bucket is written: what is lost is then what the watcher held
    // (the bucket in progress, the window not yet taken), not how long the waits above took
    // on a loaded machine.
    let seen = last_sample(&open_read(&db).unwrap()).expect("buckets written");
    wait_for("the next bucket", &w, || last_sample(&open_read(&db)?).filter(|&t| t > seen));
    let killed = now_ns();
    signal(&w.child, 9);
    let _ = w.child.wait();
    {
        // A reader opens it at once: no recovery step, no error.
        let r = Sqlite::open(&db, OpenMode::Read).unwrap();
        let last = last_sample(&r).expect("buckets written before the kill");
        // The bucket in progress (2 s) may be lost, and the window not yet taken (1 s).
        assert!(
            killed - last < 3_500_000_000,
            "last sample {} ms before the kill",
            (killed - last) / 1_000_000
        );
        let cpu = r.series(&kflame_store::SeriesQuery {
            name: "cpu",
            label: Some(""),
            host: None,
            from_ns: 0,
            to_ns: i64::MAX,
            points: None,
        });
        let last_value = cpu.unwrap().iter().flat_map(|s| s.points.iter().map(|p| p.time_ns)).max();
        let last_value = last_value.expect("metric values written before the kill");
        // Metric values are written in blocks of one bucket: the block in progress is lost,
        // and the one before it is written with the first value of the next.
        assert!(
            killed - last_value < 5_000_000_000,
            "last cpu value {} ms before the kill",
            (killed - last_value) / 1_000_000
        );
        // Latency histograms are written every second, the block in progress too: the
        // second being read is lost, and the one the kernel was still counting.
        let q = kflame_store::LatencyQuery {
            kind: kflame_store::LatencyKind::Syscall,
            label: Some(""),
            host: None,
            from_ns: 0,
            to_ns: i64::MAX,
        };
        let last_histogram =
            r.latency(&q).unwrap().iter().flat_map(|s| s.points.iter().map(|p| p.time_ns)).max();
        let last_histogram = last_histogram.expect("latency histograms written before the kill");
        assert!(
            killed - last_histogram < 2_500_000_000,
            "last latency histogram {} ms before the kill",
            (killed - last_histogram) / 1_000_000
        );
    }
    let restarted = now_ns();
    let w = watch(&env, &db, &["--bucket", "2s"]);
    wait_for("a bucket written after the restart", &w, || {
        last_sample(&open_read(&db)?).filter(|&t| t > restarted + 2_000_000_000)
    });
    let (status, _, err) = w.term();
    drop(burner);
    assert_eq!(status.code(), Some(0), "{err}");
    let r = Sqlite::open(&db, OpenMode::Read).unwrap();
    let times: Vec<i64> =
        r.samples(&ProfileQuery::new(Kind::Cpu, 0, i64::MAX)).unwrap().iter().map(|s| s.time_ns).collect();
    assert!(times.iter().any(|&t| t < killed), "history before the kill kept");
    assert!(
        times.iter().any(|&t| t > restarted + 2_000_000_000),
        "the restart appended to the same database"
    );
}

#[test]
fn live_sighup_reloads_rules_and_refuses_a_bad_file() {
    let _serial = serial();
    let Some(env) = Env::get("live_sighup_reloads_rules") else { return };
    let db = db_path(&env, "hup");
    let cfg = env.dir.join(format!("{}-hup.toml", std::process::id()));
    std::fs::write(&cfg, "triggers = []\n").unwrap();
    let w = watch(&env, &db, &["--config", cfg.to_str().unwrap()]);
    // SIGHUP is handled once the watcher runs: it says so first.
    w.wait_log("watching ", 0);
    std::fs::write(&cfg, "triggers = [\"load1 > 1000*ncpu\", \"psi.io.some > 99\"]\n").unwrap();
    signal(&w.child, 1);
    w.wait_log("configuration reloaded", 0);
    let seen = w.log().len();
    std::fs::write(&cfg, "triggers = [\"load1 >> 3\"]\n").unwrap();
    signal(&w.child, 1);
    w.wait_log("reload refused", seen);
    let (status, _, err) = w.term();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("configuration reloaded: 2 trigger rules"), "{err}");
    assert!(
        err.contains(&format!(
            "reload refused, keeping the running configuration: configuration {}: trigger rule `load1 >> 3`, column 7",
            cfg.display()
        )),
        "{err}"
    );
}

#[test]
fn live_check_says_what_is_available_and_what_is_missing() {
    let _serial = serial();
    let Some(env) = Env::get("live_check_says_what_is_available") else { return };
    let out = Command::new(env.kflame).args(["watch", "--check"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for what in [
        "capabilities",
        "kernel.perf_event_paranoid",
        "cpu-clock sampling",
        "sched:sched_switch",
        "PSI",
        "cgroup",
        "/dev/kmsg",
    ] {
        assert!(
            text.lines().any(|l| (l.starts_with("yes ") || l.starts_with("no ")) && l.contains(what)),
            "{what}:\n{text}"
        );
    }
    assert!(text.lines().any(|l| l.starts_with("yes ") && l.contains("cpu-clock")), "{text}");
}

/// The profile of the first capture of `kind`, as (stack, weight) lines, and its unit.
fn capture_profile(db: &Path, kind: Kind) -> (Vec<(String, u64)>, kflame::fold::Unit, Vec<Event>) {
    let db = Sqlite::open(db, OpenMode::Read).unwrap();
    let events = db.events(0, i64::MAX, None).unwrap();
    let Some((cid, start, end)) = events.iter().find_map(|e| match e {
        Event::Capture { id, kind: k, start_ns, end_ns, .. } if *k == kind => Some((*id, *start_ns, *end_ns)),
        _ => None,
    }) else {
        return (Vec::new(), kflame::fold::Unit::Unspecified, events);
    };
    let end = end.unwrap_or(i64::MAX - 1_000_000_000);
    let q = ProfileQuery {
        capture: Some(cid),
        ..ProfileQuery::new(kind, start - 1_000_000_000, end + 1_000_000_000)
    };
    let p = db.profile(&q).unwrap();
    let kflame::fold::Stacks::Counts(stacks) = &p.stacks else { panic!("a merged profile is summed") };
    let lines = stacks.iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole())).collect();
    (lines, p.meta.unit, events)
}

#[test]
fn live_memory_trigger_capture_is_weighted_in_bytes() {
    let _serial = serial();
    let Some(env) = Env::get("live_memory_trigger_capture_is_weighted_in_bytes") else { return };
    let db = db_path(&env, "mem");
    let churner =
        Reaped(Command::new(&env.workload).args(["churn", "300"]).stdout(Stdio::null()).spawn().unwrap());
    // Always true, so that it fires at the first reading: what is tested is the capture.
    let w = watch(&env, &db, &["--trigger", "mem.available < 100% => mem 4s"]);
    wait_for("the memory capture to end", &w, || ended_capture(&db, Kind::Mem));
    let (status, _, err) = w.term();
    drop(churner);
    assert_eq!(status.code(), Some(0), "{err}");
    let (lines, unit, events) = capture_profile(&db, Kind::Mem);
    assert_eq!(unit, kflame::fold::Unit::Bytes, "{events:?}\n{err}");
    let churn: Vec<&(String, u64)> = lines.iter().filter(|(s, _)| s.contains("kf_churn")).collect();
    assert!(!churn.is_empty(), "no kf_churn allocations in {} stacks", lines.len());
    assert!(churn.iter().all(|(_, w)| w % 4096 == 0), "page allocations weigh 4096 << order bytes");
    let bytes: u64 = churn.iter().map(|(_, w)| w).sum();
    assert!(bytes >= 64 * 4096, "{bytes} bytes");
}

#[test]
fn live_io_trigger_offcpu_capture_shows_the_block_io_wait() {
    let _serial = serial();
    let Some(env) = Env::get("live_io_trigger_offcpu_capture_shows_the_block_io_wait") else { return };
    let db = db_path(&env, "io");
    // On the disk (a temporary directory may be a tmpfs elsewhere, where dsync writes do no
    // block IO).
    let file = std::path::PathBuf::from(format!("/var/tmp/kflame-watch-dd-{}.bin", std::process::id()));
    let writer = Reaped(
        Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", file.display()))
            .args(["bs=4k", "count=100000", "oflag=dsync"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let w = watch(&env, &db, &["--trigger", "io.util > 2% => offcpu 4s"]);
    wait_for("the off-CPU capture to end", &w, || ended_capture(&db, Kind::OffCpu));
    let (status, _, err) = w.term();
    drop(writer);
    let _ = std::fs::remove_file(&file);
    assert_eq!(status.code(), Some(0), "{err}");
    let (lines, unit, events) = capture_profile(&db, Kind::OffCpu);
    assert_eq!(unit, kflame::fold::Unit::Nanoseconds, "{events:?}\n{err}");
    let dd: Vec<&(String, u64)> = lines.iter().filter(|(s, _)| s.starts_with("dd;")).collect();
    let waits: u64 = dd
        .iter()
        .filter(|(s, _)| s.contains("io_schedule") || s.contains("jbd2") || s.contains("wait_for_completion"))
        .map(|(_, w)| w)
        .sum();
    assert!(waits > 10_000_000, "dd waited {waits} ns on block IO; its stacks: {dd:#?}");
}

/// Writes a WARNING (clearly a test's: its function is `kflame_watch_test_warning`) into the
/// kernel log through /dev/kmsg; the watcher stores it as a report and its `report.warning`
/// rule fires a blocked-task snapshot.
#[test]
fn live_kernel_report_is_stored_and_fires_its_rule() {
    let _serial = serial();
    use std::io::Write;
    let Some(env) = Env::get("live_kernel_report_is_stored_and_fires_its_rule") else { return };
    let db = db_path(&env, "kmsg");
    let w = spawn_watch(Command::new(env.kflame).arg("watch").arg("--db").arg(&db).args([
        "--log-level",
        "info",
        "--trigger",
        "report.warning => blocked",
    ]));
    // /dev/kmsg is followed from its end from the moment the watcher runs, which it says
    // by listing its rules.
    w.wait_log("trigger: report.warning", 0);
    let written = [
        "------------[ cut here ]------------",
        "WARNING: CPU: 0 PID: 1 at kflame-watch-test.c:1 kflame_watch_test_warning+0x0/0x10",
        "Call Trace:",
        " <TASK>",
        " kflame_watch_test_warning+0x0/0x10",
        " kflame_watch_test_caller+0x10/0x20",
        " </TASK>",
        "---[ end trace 0000000000000000 ]---",
    ];
    {
        let mut kmsg = std::fs::OpenOptions::new().write(true).open("/dev/kmsg").unwrap(); // live: the kernel log
        for line in written {
            kmsg.write_all(format!("<4>{line}").as_bytes()).unwrap();
        }
    }
    wait_for("the report stored and its rule's snapshot taken", &w, || {
        let events = open_read(&db)?.events(0, i64::MAX, None).ok()?;
        let stored = events
            .iter()
            .any(|e| matches!(e, Event::Report { stack, .. } if stack.contains("kflame_watch_test_warning")));
        let snapshot = events.iter().any(|e| matches!(e, Event::Capture { kind: Kind::Blocked, .. }));
        (stored && snapshot).then_some(())
    });
    let (status, _, err) = w.term();
    assert_eq!(status.code(), Some(0), "{err}");
    let db = Sqlite::open(&db, OpenMode::Read).unwrap();
    let events = db.events(0, i64::MAX, None).unwrap();
    let report = events.iter().find_map(|e| match e {
        Event::Report { kind, title, stack, text, .. } if stack.contains("kflame_watch_test_warning") => {
            Some((kind.clone(), title.clone(), stack.clone(), text.clone()))
        }
        _ => None,
    });
    let (kind, title, stack, text) = report.unwrap_or_else(|| panic!("no report stored: {events:?}\n{err}"));
    // The text as printed, from the WARNING line through the end of the trace (and its end
    // marker when that line had come when the report ended), and the analyzer's reading of
    // it is its reading of what was written.
    assert!(text == written[1..7].join("\n") || text == written[1..].join("\n"), "{text}");
    let explained =
        |t: &str| kflame_analyze::reports::explain_text(t, "kmsg").map(|g| (g.signature, g.error.culprit));
    assert_eq!(explained(&text), explained(&written.join("\n")));
    assert_eq!(kind, "warning");
    assert!(title.contains("kflame_watch_test_warning"), "{title}");
    assert_eq!(stack, "kflame_watch_test_caller;kflame_watch_test_warning");
    assert!(
        events.iter().any(|e| matches!(e, Event::Trigger { metric, .. } if metric == "report.warning")),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, Event::Capture { kind: Kind::Blocked, .. })), "{events:?}");
}

/// A WARNING written to the kernel log while `kflame watch` runs is served by `kflame serve`
/// (started beside the running watcher, reading its database) explained: the culprit and
/// signature `kflame analyze --json` gives for the same text, the same bug's count, and the
/// host's CPU profile of the minute before it, which the watcher had stored.
#[test]
fn live_a_kernel_report_is_served_explained_with_the_minute_before() {
    let _serial = serial();
    use std::io::Write;
    let Some(env) = Env::get("live_a_kernel_report_is_served_explained_with_the_minute_before") else {
        return;
    };
    let db = db_path(&env, "served-report");
    let w = spawn_watch(Command::new(env.kflame).arg("watch").arg("--db").arg(&db).args([
        "--log-level",
        "info",
        "--bucket",
        "2s",
        "--program-budget",
        "0",
    ]));
    // Some CPU profile stored before the report, and /dev/kmsg followed (from its end).
    wait_for("the first CPU samples stored", &w, || last_sample(&open_read(&db)?));
    let written = [
        "------------[ cut here ]------------",
        "WARNING: CPU: 1 PID: 1 at kflame-serve-test.c:7 kflame_serve_test_warning+0x4/0x10",
        "Call Trace:",
        " <TASK>",
        " kflame_serve_test_warning+0x4/0x10",
        " kflame_serve_test_caller+0x10/0x20",
        " </TASK>",
        "---[ end trace 0000000000000000 ]---",
    ];
    {
        let mut kmsg = std::fs::OpenOptions::new().write(true).open("/dev/kmsg").unwrap(); // live: the kernel log
        for line in written {
            kmsg.write_all(format!("<4>{line}").as_bytes()).unwrap();
        }
    }
    let (host, time) = wait_for("the report stored", &w, || {
        open_read(&db)?.events(0, i64::MAX, None).ok()?.into_iter().find_map(|e| match e {
            Event::Report { host, time_ns, stack, .. } if stack.contains("kflame_serve_test_warning") => {
                Some((host, time_ns))
            }
            _ => None,
        })
    });
    let served =
        common::Served::start(&env.dir, &[std::ffi::OsStr::new("--db"), db.as_os_str()], "live-serve-7");
    let (status, body) = served.get(&format!("/api/report?time={time}&host={host}"));
    drop(served);
    let (code, _, err) = w.term();
    assert_eq!(code.code(), Some(0), "{err}");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let r: serde_json::Value = serde_json::from_str(&body).unwrap();

    // What `kflame analyze --json` says of the text written.
    let file = env.dir.join(format!("{}-served-report.txt", std::process::id()));
    std::fs::write(&file, written.join("\n") + "\n").unwrap();
    let out = Command::new(env.kflame).args(["analyze", "--json"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = &cli["groups"][0];
    assert_eq!(want["error"]["culprit"]["function"], "kflame_serve_test_warning");
    assert_eq!(r["analysis"]["error"]["culprit"], want["error"]["culprit"]);
    assert_eq!(r["signature"], want["signature"]);
    assert_eq!(r["similar"]["count"], 1);
    assert_eq!(r["similar"]["hosts"], serde_json::json!([host]));
    // The minute before: the CPU profile the watcher stored, with its samples.
    let cpu = &r["before"]["cpu"];
    assert!(cpu["samples"].as_u64().is_some_and(|n| n > 0), "{}", r["before"]);
    assert_eq!(cpu["info"]["host"], host.as_str());
}

/// The latency issue's case: a program writing 64 KiB with O_DSYNC in a known function
/// (`kf_dsync_writer`). The write latency's p99, a metric summed in the kernel, crosses the
/// rule's threshold and fires a system-call capture; the stored p99 of `write` shows the
/// slow writes, and the capture holds them under that function. The threshold is this
/// machine's: its disk takes about 0.2 ms a write where the took over 2 ms.
#[test]
fn live_write_latency_p99_fires_its_rule_and_the_capture_holds_the_writes() {
    let _serial = serial();
    let Some(env) = Env::get("live_write_latency_p99_fires_its_rule_and_the_capture_holds_the_writes") else {
        return;
    };
    let db = db_path(&env, "latency");
    // On the disk (a temporary directory may be a tmpfs elsewhere).
    let file = format!("/var/tmp/kflame-watch-dsync-{}", std::process::id());
    let writer = Reaped(
        Command::new(&env.workload)
            .args(["dsync", "120", &file])
            .stdout(Stdio::null())
            .spawn()
            .expect("the dsync writer"),
    );
    let started = now_ns();
    let w = watch(
        &env,
        &db,
        // Outliers: the slowest 40 calls of a bucket, so that the writer's are among them
        // beside whatever else the machine writes slowly; only `write` has a threshold, so
        // that other calls' waits (a busy machine's reads of pipes and sockets) take none
        // of the 40.
        &[
            "--trigger",
            "syscall.lat.p99[write] > 50us for 2s => syscalls 4s",
            "--slow-syscall",
            "1h",
            "--slow-call",
            "write=50us",
            "--outliers",
            "40",
        ],
    );
    wait_for("the system-call capture to end", &w, || ended_capture(&db, Kind::Syscalls));
    let (status, _, err) = w.term();
    drop(writer);
    let _ = std::fs::remove_file(&file);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.contains("latency metrics: "), "the log says how latency is measured:\n{err}");
    let r = Sqlite::open(&db, OpenMode::Read).unwrap();
    let q = kflame_store::SeriesQuery {
        name: "syscall.lat.p99",
        label: Some("write"),
        host: None,
        from_ns: started,
        to_ns: now_ns(),
        points: None,
    };
    let p99: Vec<f64> = r.series(&q).unwrap().iter().flat_map(|s| s.points.iter().map(|p| p.max)).collect();
    assert!(
        p99.iter().filter(|&&v| v > 0.05).count() >= 2,
        "p99 of write above 50 us for 2 s: {p99:?}\n{err}"
    );
    let (lines, unit, events) = capture_profile(&db, Kind::Syscalls);
    assert_eq!(unit, kflame::fold::Unit::Nanoseconds, "{events:?}\n{err}");
    let writes: u64 = lines
        .iter()
        .filter(|(s, _)| s.starts_with("write;") && s.contains(";kf_dsync_writer;"))
        .map(|(_, w)| w)
        .sum();
    assert!(writes > 100_000_000, "the slow writes under kf_dsync_writer: {writes} ns\n{lines:#?}");
    // Always on, without the trigger: the slow writes kept one by one with where they were
    // made (under kf_dsync_writer) and where they waited (the kernel's write path).
    let outliers = r.outliers(kflame_store::LatencyKind::Syscall, started, now_ns(), None).unwrap();
    // The slowest 40 (`--outliers`) of each 10-s bucket.
    let mut per_bucket: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
    for o in &outliers {
        *per_bucket.entry(o.time_ns.div_euclid(10_000_000_000)).or_default() += 1;
    }
    assert!(per_bucket.values().all(|&n| n <= 40), "outliers per bucket: {per_bucket:?}");
    let ids: Vec<kflame_store::StackId> = outliers.iter().map(|o| o.stack).collect();
    let texts = r.stack_texts(&ids).unwrap();
    let mine: Vec<(&kflame_store::StoredEvent, String)> = outliers
        .iter()
        .zip(texts)
        .map(|(o, t)| (o, String::from_utf8_lossy(&t).into_owned()))
        .filter(|(o, t)| o.event == "syscall:write" && t.contains(";kf_dsync_writer;"))
        .collect();
    assert!(
        mine.len() >= 10,
        "{} slow writes kept under kf_dsync_writer of {}: {:?}\n{err}",
        mine.len(),
        outliers.len(),
        outliers.iter().map(|o| (o.event.as_str(), o.comm.as_str(), o.duration_ns)).collect::<Vec<_>>()
    );
    for (o, t) in &mine {
        assert!(o.duration_ns.is_some_and(|d| d >= 50_000), "{o:?}");
        assert!(t.starts_with("write;"), "the call's name first: {t}");
        assert!(o.time_ns >= started - 1_000_000_000 && o.time_ns <= now_ns(), "{o:?}");
    }
    let waited = mine
        .iter()
        .filter(|(_, t)| {
            t.split(';')
                .skip_while(|f| *f != "kf_dsync_writer")
                .any(|f| f.contains("write") && f != "kf_dsync_writer")
        })
        .count();
    assert!(waited * 2 >= mine.len(), "most with the kernel frames where they waited: {mine:#?}");
}

/// The range's always-on profile of `kind` (no capture), as folded lines; empty when none.
fn range_profile(db: &Path, kind: Kind, from_ns: i64) -> Vec<(String, u64)> {
    let Some(db) = open_read(db) else { return Vec::new() };
    let Ok(p) = db.profile(&ProfileQuery::new(kind, from_ns, i64::MAX)) else { return Vec::new() };
    let kflame::fold::Stacks::Counts(stacks) = &p.stacks else { return Vec::new() };
    stacks.iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole())).collect()
}

/// The largest stored value of `name[label]` since `from_ns`.
fn largest(db: &Path, name: &str, label: &str, from_ns: i64) -> Option<f64> {
    let q = kflame_store::SeriesQuery {
        name,
        label: Some(label),
        host: None,
        from_ns,
        to_ns: i64::MAX,
        points: None,
    };
    let series = open_read(db)?.series(&q).ok()?;
    series.iter().flat_map(|s| s.points.iter().map(|p| p.max)).reduce(f64::max)
}

/// Blocked time always on, without a trigger: eight threads mapping memory wait on their
/// mmap lock, O_DSYNC writes wait on the disk, three spinners share CPU 0. Each shows in its
/// metrics (`lock.wait[rwsem:W]`, `bio.lat.p99`, `offcpu.wait[D]`, `runq.lat.max[cpu0]`) and
/// the range's off-CPU and lock profiles hold the waits under the workload's functions.
#[test]
fn live_blocked_time_is_always_on_as_metrics_and_profiles() {
    let _serial = serial();
    let Some(env) = Env::get("live_blocked_time_is_always_on_as_metrics_and_profiles") else { return };
    let db = db_path(&env, "blocked");
    // Summed waits have no time of their own: their bucket (10 s) may start before the
    // watcher did, and a range takes whole buckets.
    let started = now_ns() - 60_000_000_000;
    // Thresholds low enough for this workload's waits to be outliers; for locks, only the
    // label's own (the family's is an hour). Outliers kept by the thousand, so that a busy
    // machine's own slow waits leave room for the workload's.
    let w = watch(
        &env,
        &db,
        &[
            "--outliers",
            "1000",
            "--slow-lock",
            "1h",
            "--slow-label",
            "lock:rwsem:W=1ms",
            "--slow-runq",
            "2ms",
            "--slow-offcpu",
            "2ms",
            "--slow-bio",
            "1ms",
        ],
    );
    w.wait_log("always-on blocked time (syscalls, offcpu, locks, runq, bio)", 0);
    let file = format!("/var/tmp/kflame-watch-blocked-{}", std::process::id());
    let mut dsync_blocked = 0u64;
    for args in [&["mappers", "8", "2"][..], &["dsync", "2", &file], &["crowd", "3", "1"]] {
        let out = Command::new(&env.workload).args(args).stderr(Stdio::inherit()).output().unwrap();
        assert!(out.status.success(), "kfwork {args:?}");
        if args[0] == "dsync" {
            let text = String::from_utf8_lossy(&out.stdout);
            dsync_blocked = text.split_whitespace().next().and_then(|n| n.parse().ok()).expect("blocked ns");
        }
    }
    let _ = std::fs::remove_file(&file);
    let locks = wait_for("the lock profile of kf_map_unmap", &w, || {
        let p = range_profile(&db, Kind::Locks, started);
        let ns: u64 = p
            .iter()
            .filter(|(s, _)| s.contains(";kf_map_unmap;") && s.contains("[rwsem:W]"))
            .map(|x| x.1)
            .sum();
        (ns > 0).then_some(ns)
    });
    let dsync = wait_for("the off-CPU profile of kf_dsync_writer", &w, || {
        let p = range_profile(&db, Kind::OffCpu, started);
        let ns: u64 = p.iter().filter(|(s, _)| s.contains(";kf_dsync_writer;")).map(|x| x.1).sum();
        (ns > 0).then_some(ns)
    });
    let metric = |name: &str, label: &str| {
        wait_for(&format!("{name}[{label}] > 0"), &w, || {
            largest(&db, name, label, started).filter(|&v| v > 0.0)
        })
    };
    let lock_wait = metric("lock.wait", "rwsem:W");
    let d_wait = metric("offcpu.wait", "D");
    let bio = metric("bio.lat.p99", "");
    let runq = metric("runq.lat.max", "cpu0");
    let (status, _, err) = w.term();
    assert_eq!(status.code(), Some(0), "{err}");
    // Two seconds of eight threads contending: well over 100 ms of waits.
    assert!(locks > 100_000_000, "{locks} ns of rwsem:W waits under kf_map_unmap\n{err}");
    // Most of what the writer blocked, as the kernel accounted it (its waits for a CPU on
    // a loaded machine are not off-CPU time; a stack under 1 ms in a bucket is folded into
    // the task's `[rarer stacks]`).
    assert!(
        dsync * 2 >= dsync_blocked && dsync_blocked > 0,
        "{dsync} ns blocked under kf_dsync_writer of the {dsync_blocked} ns it blocked\n{err}"
    );
    // Three spinners on one CPU: each waits a scheduler slice at least (ms).
    assert!(runq >= 1.0, "runq.lat.max[cpu0] {runq} ms\n{err}");
    assert!(lock_wait > 0.0 && d_wait > 0.0 && bio > 0.0, "{lock_wait} {d_wait} {bio}");
    assert!(!err.contains("could not count"), "nothing lost on an idle machine:\n{err}");
    // The slow waits kept one by one, named by their label, with their task and, where the
    // program takes stacks (locks, off-CPU), where they waited.
    let r = Sqlite::open(&db, OpenMode::Read).unwrap();
    let kept = |kind: kflame_store::LatencyKind| -> Vec<(kflame_store::StoredEvent, String)> {
        let found = r.outliers(kind, started, now_ns(), None).unwrap();
        let texts = r.stack_texts(&found.iter().map(|o| o.stack).collect::<Vec<_>>()).unwrap();
        found.into_iter().zip(texts).map(|(o, t)| (o, String::from_utf8_lossy(&t).into_owned())).collect()
    };
    let lock = kept(kflame_store::LatencyKind::Lock);
    assert!(
        lock.iter().all(|(o, _)| o.event == "lock:rwsem:W"),
        "only the label with a threshold: {lock:#?}"
    );
    assert!(
        lock.iter().any(|(o, t)| o.event == "lock:rwsem:W"
            && t.starts_with("rwsem:W;kfwork")
            && t.contains(";kf_map_unmap;")
            && o.duration_ns.is_some_and(|d| d >= 1_000_000)),
        "a slow rwsem:W wait under kf_map_unmap: {lock:#?}\n{err}"
    );
    let off = kept(kflame_store::LatencyKind::OffCpu);
    // The slowest blocks in D of their bucket: the mappers' (on the mmap lock) or the
    // writer's (on the disk), whichever were longer.
    assert!(
        off.iter().any(|(o, t)| o.event == "offcpu:D"
            && t.starts_with("D;kfwork;")
            && (t.contains(";kf_dsync_writer;") || t.contains(";kf_map_unmap;"))
            && o.duration_ns.is_some_and(|d| d >= 2_000_000)),
        "a slow block in D under the workload: {off:#?}\n{err}"
    );
    assert!(off.iter().all(|(o, _)| o.event == "offcpu:D"), "only blocks in D: {off:#?}");
    let runq = kept(kflame_store::LatencyKind::Runq);
    assert!(
        runq.iter().any(|(o, _)| o.event == "runq:cpu0" && o.comm == "kfwork"),
        "a slow run-queue wait of a spinner on CPU 0: {runq:#?}\n{err}"
    );
    let bio = kept(kflame_store::LatencyKind::Bio);
    assert!(bio.iter().all(|(o, _)| o.event.starts_with("bio:")), "{bio:#?}");
}
