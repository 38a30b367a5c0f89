//! `kflame collapse --mode syscalls|offcpu` on `perf script` captures, end to end through the
//! binary: latency / off-CPU flame graphs, the events JSON side channel, refused options.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn capture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame/tests/data/perf/captures").join(name)
}

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn weights(folded: &str) -> u64 {
    folded
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

#[test]
fn syscall_latency_with_events_json() {
    let dir = std::env::temp_dir().join(format!("kflame-cli-perf-pairs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let events = dir.join("calls.jsonl");
    let input = capture("perf-syscalls-dd.script.txt");
    let out = kflame(&[
        "collapse",
        "--mode",
        "syscalls",
        "--comm",
        "--events-json",
        events.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("# unit=ns\n# event=syscalls\n"), "{stdout}");
    assert!(stdout.lines().skip(2).all(|l| l.starts_with("syscall:") && l.contains(";dd;")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("syscall:write;dd;")));
    let json = std::fs::read_to_string(&events).unwrap();
    let json_total: u64 = json
        .lines()
        .map(|l| l.rsplit("\"weight\":").next().unwrap().trim_end_matches('}').parse::<u64>().unwrap())
        .sum();
    assert_eq!(weights(&stdout), json_total);
    assert!(json.lines().all(|l| l.contains("\"comm\":\"dd\"") && l.contains("\"event\":\"syscall:")));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("perf-syscalls-dd.script.txt:1: note: exit from execve"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn off_cpu_time_and_the_default_hint() {
    let input = capture("perf-sched-switch.script.txt");
    let out = kflame(&["collapse", "--mode", "offcpu", input.to_str().unwrap()]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("# unit=ns\n# event=sched_switch\n"), "{stdout}");
    assert!(stdout.lines().skip(2).all(|l| l.starts_with("offcpu:")));
    // Without --mode: samples are counted as before, and a note says what --mode gives.
    let out = kflame(&["collapse", input.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(!String::from_utf8(out.stdout).unwrap().contains("offcpu:"));
    assert!(String::from_utf8(out.stderr).unwrap().contains("`--mode offcpu` pairs them"));
}

#[test]
fn probed_function_durations() {
    let input = capture("perf-uprobe-getcwd.script.txt");
    let out = kflame(&["collapse", "--mode", "probes", "--pid", input.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("# unit=ns\n# event=probes\n"), "{stdout}");
    let rows: Vec<&str> = stdout.lines().skip(2).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(rows.iter().all(|l| l.starts_with("probe:probe_libc:getcwd;pwd-")), "{stdout}");
}

#[test]
fn options_that_do_not_apply_are_refused() {
    let input = capture("perf-syscalls-dd.script.txt");
    let input = input.to_str().unwrap();
    for args in [
        &["--mode", "alloc"][..],
        &["--mode", "syscalls", "--counts"],
        &["--mode", "syscalls", "--event-filter", "raw_syscalls:sys_enter"],
        &["--events-json", "/dev/null"],
    ] {
        let out = kflame(&[&["collapse"], args, &[input]].concat());
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--"), "{args:?}");
    }
}
