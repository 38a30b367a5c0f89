//! `kflame collapse` on ftrace / trace-cmd fixtures, end to end through the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame/tests/data/ftrace").join(name)
}

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-cli-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn memory_flame_graph_with_events_json() {
    let events = tmp("alloc.jsonl");
    let input = fixture("ftrace-mm_page_alloc-stacktrace.txt");
    let out = kflame(&[
        "collapse",
        input.to_str().unwrap(),
        "--pid",
        "--order",
        "--events-json",
        events.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("# unit=bytes\n# event=mm_page_alloc\n"), "{stdout}");
    assert!(stdout.lines().skip(2).all(|l| l.split(';').nth(1).is_some_and(|f| f.starts_with("order-"))));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("alloc mode"), "{stderr}");
    let json = std::fs::read_to_string(&events).unwrap();
    let n_events = std::fs::read_to_string(&input).unwrap().matches(": mm_page_alloc: ").count();
    assert_eq!(json.lines().count(), n_events);
    assert!(
        json.lines()
            .all(|l| l.starts_with("{\"ts\":") && l.ends_with('}') && l.contains("\"duration_ns\":null"))
    );
    let total: u64 =
        stdout.lines().skip(2).map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
    let json_total: u64 = json
        .lines()
        .map(|l| l.rsplit("\"weight\":").next().unwrap().trim_end_matches('}').parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, json_total);
    let _ = std::fs::remove_file(&events);
}

#[test]
fn syscall_mode_by_flag_and_format_name() {
    let input = fixture("ftrace-dd-mixed-stacktrace.txt");
    let out =
        kflame(&["collapse", "--format", "ftrace", "--mode", "syscalls", "--comm", input.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("# unit=ns\n"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("syscall:write;dd;")), "{stdout}");
}

#[test]
fn weight_is_refused_for_latency_modes() {
    let input = fixture("ftrace-dd-mixed-stacktrace.txt");
    let out = kflame(&["collapse", "--mode", "offcpu", "--weight", "bytes", input.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--weight"));
    let out = kflame(&["collapse", "--weight", "pages", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("[possible values: count, bytes]"));
    let out = kflame(&["collapse", "--mode", "syscalls", "--page-type", input.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--page-type"));
}

#[test]
fn trace_cmd_detected_and_reported_with_file_and_line() {
    let input = fixture("handwritten-old-kernel-mm_page_alloc.txt");
    let out = kflame(&["collapse", input.to_str().unwrap()]);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let name = input.to_str().unwrap();
    assert!(stderr.contains(&format!("{name}:47: skipped 1 line (unreadable trace line)")), "{stderr}");
    let out = kflame(&["collapse", fixture("trace-cmd-report-mm_page_alloc.txt").to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("# unit=bytes\n"));
}
