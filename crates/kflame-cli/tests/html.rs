//! `kflame flamegraph --format html` end to end: real fixture in, page out, bad lines reported.

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/html")).join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-html-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn writes_a_page_and_reports_skipped_lines() {
    let input = scratch("bad.folded");
    let good = std::fs::read_to_string(fixture("perf-script-report-stackcollapse.folded")).expect("fixture");
    std::fs::write(&input, format!("{good}not a folded line\nmain;x -3\n")).expect("write input");
    let page = scratch("bad.html");
    let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(["flamegraph", "--format", "html"])
        .arg(&input)
        .arg("-o")
        .arg(&page)
        .output()
        .expect("kflame runs");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = good.lines().count();
    assert!(stderr.contains(&format!("bad.folded:{}: skipped 1 line (no count)", lines + 1)), "{stderr}");
    assert!(stderr.contains(&format!("bad.folded:{}: skipped 1 line (bad count)", lines + 2)), "{stderr}");
    let html = std::fs::read_to_string(&page).expect("page written");
    let total: u64 = good.lines().filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum();
    assert!(total > 0);
    assert!(html.contains(&format!("\"total\":\"{total}\"")), "the page's total is the fixture's sum");
}

#[test]
fn empty_input_warns_and_succeeds() {
    let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(["flamegraph", "--format", "html"])
        .output()
        .expect("kflame runs");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no samples"));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("<!DOCTYPE html>"));
}

#[test]
fn unknown_palette_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(["flamegraph", "--format", "html", "--colors", "nope"])
        .output()
        .expect("kflame runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown palette `nope`; one of: hot, mem, io"));
}

/// SVG layout options do nothing to the page: the user is told which, and the page is
/// still written; without them nothing is said.
#[test]
fn svg_only_options_are_named_as_ignored() {
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kflame"))
            .args(["flamegraph", "--format", "html"])
            .args(extra)
            .arg(fixture("perf-script-report-stackcollapse.folded"))
            .output()
            .expect("kflame runs")
    };
    let out = run(&["--width", "900", "--hash", "--minwidth", "2%"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("warning: --width --minwidth --hash only shape the SVG"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("<!DOCTYPE html>"));
    let plain = run(&["--title", "CPU"]);
    assert!(plain.status.success());
    assert!(!String::from_utf8_lossy(&plain.stderr).contains("only shape the SVG"));
}
