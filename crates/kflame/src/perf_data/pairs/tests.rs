//! Payloads printed from raw sample data against the payloads perf script printed for the
//! same files (tests/data/perf-data): every paired event, in record order, the same text.

use std::io::Cursor;
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::EventRecord;
use linux_perf_data::{PerfFileReader, PerfFileRecord};

use super::event_kinds;
use super::payload::Kind;

fn fixture(name: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data");
    std::fs::read(dir.join(name)).expect("fixture")
}

/// `system:event: payload` of every sample of a paired event, read from perf.data.
fn from_data(data: &[u8]) -> Vec<String> {
    let fixed;
    let bytes = match crate::perf_data::header::repair_event_desc(data) {
        Some((f, _)) if PerfFileReader::parse_file(Cursor::new(data)).is_err() => {
            fixed = f;
            &fixed[..]
        }
        _ => data,
    };
    let PerfFileReader { mut perf_file, mut record_iter } =
        PerfFileReader::parse_file(Cursor::new(bytes)).expect("perf.data");
    let kinds = event_kinds(&perf_file);
    let mut out = Vec::new();
    while let Some(rec) = record_iter.next_record(&mut perf_file).expect("record") {
        let PerfFileRecord::EventRecord { attr_index, record } = rec else { continue };
        let Ok(EventRecord::Sample(s)) = record.parse() else { continue };
        let (name, kind) = &kinds[attr_index];
        if matches!(kind, Kind::Other) {
            continue;
        }
        let raw = s.raw.as_ref().map(|r| r.as_slice()).unwrap_or_default();
        out.push(format!("{name}: {}", kind.print(&raw).expect("payload")));
    }
    out
}

/// The same from the header lines of perf script text.
fn from_text(text: &[u8], names: &[&str]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with(char::is_whitespace)) {
        for name in names {
            let key = format!(" {name}: ");
            if let Some(at) = line.find(&key) {
                out.push(format!("{name}: {}", &line[at + key.len()..]));
            }
        }
    }
    out
}

fn check(data: &str, text: &str, names: &[&str], at_least: usize) {
    let d = from_data(&fixture(data));
    let t = from_text(&fixture(text), names);
    assert!(t.len() >= at_least, "{text}: {} paired events", t.len());
    assert_eq!(d.len(), t.len(), "{data}: event count");
    for (a, b) in d.iter().zip(&t) {
        assert_eq!(a, b, "{data}");
    }
}

#[test]
fn raw_syscalls_print_as_perf_script() {
    check(
        "pairs-syscalls.data",
        "pairs-syscalls.ns.script.txt",
        &["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"],
        100,
    );
}

#[test]
fn syscalls_events_print_as_perf_script() {
    let names = [
        "syscalls:sys_enter_read",
        "syscalls:sys_exit_read",
        "syscalls:sys_enter_write",
        "syscalls:sys_exit_write",
        "syscalls:sys_enter_openat",
        "syscalls:sys_exit_openat",
    ];
    check("pairs-syscalls-x.data", "pairs-syscalls-x.ns.script.txt", &names, 100);
}

#[test]
fn sched_switch_prints_as_perf_script() {
    check("pairs-offcpu.data", "pairs-offcpu.ns.script.txt", &["sched:sched_switch"], 50);
    // Another boot's capture with D, I, R, S and Z states (perf sched record -g).
    check("perf-sched.data", "perf-sched.script.txt", &["sched:sched_switch"], 200);
}

#[test]
fn uprobes_print_as_perf_script() {
    check(
        "pairs-probes.data",
        "pairs-probes.ns.script.txt",
        &["probe_sleeper:nap", "probe_sleeper:nap__return"],
        40,
    );
}
