//! Kernels that lack features, live: every feature of `kflame::record::features::FEATURES`
//! masked in turn (`KFLAME_MASK_FEATURES`, which makes kflame act as a kernel without it,
//! since old kernels cannot boot here), and what uses it run: `record` and `watch` either
//! degrade to what still works, with a line that names what is missing, or refuse with an
//! error that names it; never a crash, never a silent hole. `record --check` and
//! `watch --check` show each masked feature as missing. The cases cover the table whole: a
//! feature added to it without a case here fails.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Env;
use kflame::record::features::FEATURES;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `kflame ARGS` with `mask` in `KFLAME_MASK_FEATURES`.
fn kflame(env: &Env, mask: &str, args: &[&str]) -> Output {
    Command::new(env.kflame).args(args).env("KFLAME_MASK_FEATURES", mask).output().unwrap()
}

/// `kflame record -d 1 -o FILE ARGS` with `mask`: its status, stderr and output file.
fn record(env: &Env, mask: &str, args: &[&str]) -> (bool, String, String) {
    let out = env.dir.join(format!("features-{mask}.folded"));
    let _ = std::fs::remove_file(&out);
    let o = kflame(env, mask, &[&["record", "-d", "1", "-o", out.to_str().unwrap()][..], args].concat());
    let err = text(&o.stderr);
    assert!(!err.contains("panicked"), "{mask} {args:?}: {err}");
    assert!(err.contains(&format!("acting as a kernel without {mask}")), "{err}");
    (o.status.success(), err, std::fs::read_to_string(&out).unwrap_or_default())
}

/// A recording that works without the feature: its output holds samples, and a line says
/// what it went without.
fn degrades(env: &Env, mask: &str, args: &[&str], line: &str) -> String {
    let (ok, err, folded) = record(env, mask, args);
    assert!(ok, "{mask} {args:?}: {err}");
    assert!(folded.lines().any(|l| !l.starts_with('#') && !l.is_empty()), "{mask} {args:?}: no stack\n{err}");
    assert!(
        err.contains(line) && err.contains(&format!("KFLAME_MASK_FEATURES={mask}")),
        "{mask} {args:?}: {err}"
    );
    folded
}

/// A recording that cannot be made without the feature: refused, naming it, and no output
/// file left behind.
fn refused(env: &Env, mask: &str, args: &[&str], names: &str) {
    let (ok, err, folded) = record(env, mask, args);
    assert!(!ok, "{mask} {args:?}: not refused\n{err}");
    assert!(folded.is_empty(), "{mask} {args:?}: an output was written");
    assert!(
        err.contains(names) && err.contains(&format!("KFLAME_MASK_FEATURES={mask}")),
        "{mask} {args:?}: {err}"
    );
}

/// `kflame watch` into a new database with `mask`, until its log holds every one of `want`
/// and a profile bucket or a metric reading is stored (30 s at most); then SIGINT. Returns the
/// log, after checking that it stopped cleanly.
fn watch(env: &Env, mask: &str, extra: &[&str], want: &[&str]) -> String {
    let db = env.dir.join(format!("features-{mask}.db"));
    let _ = std::fs::remove_file(&db);
    let mut child = Command::new(env.kflame)
        .args(["watch", "--db", db.to_str().unwrap(), "--log-level", "info", "--bucket", "1s"])
        .args(["--program-budget", "0"])
        .args(extra)
        .env("KFLAME_MASK_FEATURES", mask)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().unwrap();
    let sink = log.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let started = Instant::now();
    loop {
        let seen = log.lock().unwrap().clone();
        let metrics = db.exists() && stored_metrics(env, &db);
        if want.iter().all(|w| seen.contains(w)) && metrics {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30) && child.try_wait().unwrap().is_none(),
            "{mask}: waiting for {want:?} and a stored metric\n{seen}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(Command::new("kill").arg("-INT").arg(child.id().to_string()).status().unwrap().success());
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(status.code(), Some(0), "{mask}: {log}");
    assert!(!log.contains("panicked"), "{mask}: {log}");
    log
}

/// True once the history holds a reading of the host's CPU use.
fn stored_metrics(env: &Env, db: &Path) -> bool {
    let o = Command::new(env.kflame)
        .args(["query", "--db", db.to_str().unwrap(), "--metrics", "--name", "cpu.sys", "--from", "-1h"])
        .output()
        .unwrap();
    o.status.success() && text(&o.stdout).lines().count() > 1
}

/// `--check` of `record` and `watch`: the masked feature is a missing line naming the mask.
fn checks_show(env: &Env, mask: &str, command: &str, line: &str) {
    let o = kflame(env, mask, &[command, "--check"]);
    let out = text(&o.stdout);
    let l = out.lines().find(|l| l.contains(line)).unwrap_or_else(|| panic!("{mask}: no {line:?} in\n{out}"));
    assert!(l.starts_with("no") && l.contains(&format!("KFLAME_MASK_FEATURES={mask}")), "{mask}: {l}");
}

#[test]
fn live_each_missing_kernel_feature_degrades_or_is_refused_with_a_clear_line() {
    let Some(env) = Env::get("live_each_missing_kernel_feature_degrades_or_is_refused_with_a_clear_line")
    else {
        return;
    };
    let mut covered: Vec<&str> = Vec::new();
    let mut case = |key: &'static str| {
        covered.push(key);
        key
    };

    let m = case("perf-events");
    refused(&env, m, &[], "cannot open perf event cpu-clock");
    checks_show(&env, m, "record", "cpu-clock sampling");
    let log = watch(&env, m, &["--no-kmsg"], &["cannot start the always-on CPU profile"]);
    assert!(log.contains("recording metrics, PSI and kernel reports without it"), "{log}");

    let m = case("user-stack-copy");
    degrades(&env, m, &[], "user stacks walk frame pointers");
    checks_show(&env, m, "record", "user stack copies");

    let m = case("context-switch");
    refused(&env, m, &["--off-cpu", "--via", "perf"], "context-switch records");
    // The BPF path needs no switch records.
    let (ok, err, _) = record(&env, m, &["--off-cpu"]);
    assert!(ok && err.contains("summed in the kernel by BPF"), "{err}");
    checks_show(&env, m, "record", "context-switch records");

    let m = case("sample-cgroup");
    checks_show(&env, m, "record", "cgroup ids of samples");
    watch(&env, m, &["--no-kmsg"], &["samples carry no cgroup: this kernel refused PERF_SAMPLE_CGROUP"]);

    let m = case("tracefs");
    refused(&env, m, &["--syscalls", "--via", "perf"], "cannot use tracefs");
    // CPU profiles read no tracepoint.
    let (ok, err, folded) = record(&env, m, &[]);
    assert!(ok && !folded.is_empty(), "{err}");
    checks_show(&env, m, "record", "tracefs");

    let m = case("kmem-tracepoints");
    refused(&env, m, &["--mem"], "tracepoint kmem:mm_page_alloc");
    checks_show(&env, m, "record", "kmem:mm_page_alloc");

    let m = case("sched-tracepoints");
    // Neither path: BPF's raw tracepoint and perf's tracepoint are both missing.
    refused(&env, m, &["--off-cpu"], "tracepoint sched:sched_switch");
    checks_show(&env, m, "record", "sched:sched_switch");
    let log = watch(&env, m, &["--no-kmsg"], &["runq latency is not recorded"]);
    for mode in ["syscalls", "offcpu"] {
        assert!(log.contains(&format!("{mode} latency is not recorded")), "{log}");
    }

    let m = case("syscall-tracepoints");
    refused(&env, m, &["--syscalls"], "tracepoint raw_syscalls:sys_enter");
    checks_show(&env, m, "record", "raw_syscalls:sys_enter");

    let m = case("lock-tracepoints");
    refused(&env, m, &["--locks"], "raw tracepoint contention_");
    checks_show(&env, m, "record", "lock:contention_begin");

    let m = case("bpf");
    // Naps of its own to record: a quiet machine may block no task in a second.
    let naps = ["--off-cpu", "--", env.workload_str(), "naptimed", "25", "20", "2"];
    let folded = degrades(&env, m, &naps, "BPF is not available");
    assert!(folded.lines().any(|l| l.contains("nanosleep")), "{folded}");
    refused(&env, m, &["--locks"], "BPF load refused");
    checks_show(&env, m, "record", "kernel BTF");
    let log = watch(&env, m, &["--no-kmsg"], &["bio latency is not recorded"]);
    for mode in ["syscalls", "offcpu", "locks", "runq"] {
        assert!(log.contains(&format!("{mode} latency is not recorded: BPF load refused")), "{log}");
    }

    let m = case("btf-tracepoints");
    checks_show(&env, m, "record", "BPF on BTF tracepoints");
    watch(
        &env,
        m,
        &["--no-kmsg"],
        &["outliers without where they waited (masked by KFLAME_MASK_FEATURES=btf-tracepoints)"],
    );

    let m = case("psi");
    checks_show(&env, m, "watch", "PSI");
    watch(&env, m, &["--no-kmsg"], &["no /proc/pressure (PSI): psi.* metrics are not recorded"]);

    let m = case("kmsg");
    checks_show(&env, m, "watch", "/dev/kmsg");
    watch(&env, m, &[], &["/dev/kmsg: cannot open", "KFLAME_MASK_FEATURES=kmsg"]);

    let m = case("cgroup2");
    checks_show(&env, m, "watch", "cgroup v2");
    watch(&env, m, &["--no-kmsg"], &["samples carry cgroup ids without names: no cgroup v2 hierarchy"]);

    let m = case("proc-stack");
    refused(&env, m, &["--blocked", "--every", "1"], "no kernel stack could be read");
    checks_show(&env, m, "record", "/proc/PID/task/TID/stack");

    let m = case("kallsyms");
    let folded = degrades(&env, m, &[], "kernel symbols are missing");
    // Kernel frames stay in the stacks, unnamed.
    assert!(folded.contains("[kernel.kallsyms]"), "{folded}");
    checks_show(&env, m, "record", "/proc/kallsyms");

    let mut table: Vec<&str> = FEATURES.iter().map(|i| i.key).collect();
    table.sort_unstable();
    covered.sort_unstable();
    assert_eq!(covered, table, "every feature of the table has a case here");
}

/// A mask that names no feature is said, with the known names, rather than masking nothing
/// in silence.
#[test]
fn live_a_mask_naming_no_feature_is_warned_about() {
    let Some(env) = Env::get("live_a_mask_naming_no_feature_is_warned_about") else { return };
    let o = kflame(&env, "psi,no-such-thing", &["record", "--check"]);
    let err = text(&o.stderr);
    assert!(err.contains("names no feature no-such-thing (known: perf-events,"), "{err}");
    assert!(err.contains("acting as a kernel without psi"), "{err}");
}
