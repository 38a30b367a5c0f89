//! `kflame scatter` end to end: the recorded fixture and `collapse --events-json` output of
//! the trace fixtures in, a page out; bad lines reported with their numbers.

use std::path::PathBuf;
use std::process::Command;

fn data(path: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data")).join(path)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-scatter-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn kflame(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("kflame runs")
}

/// The `"count":N` of the page's meta object.
fn count(page: &str) -> u64 {
    let at = page.find("\"count\":").expect("meta count") + 8;
    page[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn the_recorded_fixture_makes_a_page_of_every_event() {
    let page = scratch("fixture.html");
    let input = data("scatter/syscalls-mixed.json.gz");
    let out = kflame(&["scatter".as_ref(), input.as_os_str(), "-o".as_ref(), page.as_os_str()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    // Lines of the decompressed fixture, counted here.
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&input).unwrap()),
        &mut text,
    )
    .unwrap();
    assert_eq!(count(&html), text.lines().count() as u64);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("kflame-scatter-t"));
}

#[test]
fn collapse_events_json_of_trace_fixtures_is_accepted() {
    let events = scratch("dd.events.json");
    let trace = data("ftrace/ftrace-dd-mixed-stacktrace.txt");
    let out = kflame(&[
        "collapse".as_ref(),
        "--mode".as_ref(),
        "syscalls".as_ref(),
        "--events-json".as_ref(),
        events.as_os_str(),
        trace.as_os_str(),
    ]);
    assert!(out.status.success());
    let fgraph = data("function-graph/raw-abstime-proc.events.json");
    let page = scratch("dd.html");
    let out = kflame(&[
        "scatter".as_ref(),
        events.as_os_str(),
        fgraph.as_os_str(),
        "-o".as_ref(),
        page.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = std::fs::read_to_string(&events).unwrap().lines().count() + 2;
    assert_eq!(count(&std::fs::read_to_string(&page).unwrap()), lines as u64);
}

#[test]
fn bad_lines_are_reported_and_an_input_of_only_bad_lines_fails() {
    let input = scratch("bad.json");
    std::fs::write(
        &input,
        "{\"ts\":1.0,\"cpu\":0,\"pid\":1,\"comm\":\"a\",\"duration_ns\":5,\"stack\":[\"x\"],\"event\":\"e\"}\n\
         {\"ts\":2.0,\"cpu\":0\n\
         {\"ts\":3.0,\"cpu\":0,\"duration_ns\":null,\"stack\":[]}\n",
    )
    .unwrap();
    let page = scratch("bad.html");
    let out = kflame(&["scatter".as_ref(), input.as_os_str(), "-o".as_ref(), page.as_os_str()]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.json:2: skipped 1 line (malformed event line)"), "{stderr}");
    assert!(stderr.contains("bad.json:3: skipped 1 line (event without duration)"), "{stderr}");
    assert_eq!(count(&std::fs::read_to_string(&page).unwrap()), 1);

    std::fs::write(&input, "not json\n").unwrap();
    let out = kflame(&["scatter".as_ref(), input.as_os_str(), "-o".as_ref(), page.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.json: no event could be read"), "{stderr}");

    let empty = scratch("empty.json");
    std::fs::write(&empty, "").unwrap();
    let out = kflame(&["scatter".as_ref(), empty.as_os_str(), "-o".as_ref(), page.as_os_str()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty.json: no events"));
    assert_eq!(count(&std::fs::read_to_string(&page).unwrap()), 0);
}
