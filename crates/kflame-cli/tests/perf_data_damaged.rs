//! Damaged perf.data files (the fuzzing regressions of `fuzz/regressions/perf_data/`) are an
//! error naming the file and the problem, exit status 1, never a crash; a file damaged after
//! some records keeps them with a note.

use std::path::PathBuf;
use std::process::{Command, Output};

fn regression(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/regressions/perf_data")).join(name)
}

fn collapse(path: &PathBuf) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).arg("collapse").arg(path).output().expect("run kflame")
}

#[test]
fn unreadable_headers_are_errors_naming_the_file() {
    for (name, problem) in [
        ("attr-size-zero.data", "the header gives attributes of 0 bytes"),
        ("event-desc-count.data", "the event description claims 4294967295 events"),
        ("event-desc-ids.data", "event 0 of the event description claims 4294967295 ids"),
        ("event-desc-name.data", "event 0 of the event description has a name of 4294967295 bytes"),
        ("event-types-ids.data", "the event ids of attribute 0 in the event types section"),
        ("simpleperf-ids.data", "the event ids of attribute 0 in the attributes section"),
    ] {
        let out = collapse(&regression(name));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(&format!("reading perf.data {}", regression(name).display())), "{name}: {err}");
        assert!(err.contains(problem), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}");
    }
}

#[test]
fn a_build_id_longer_than_20_bytes_is_a_damaged_record() {
    let out = collapse(&regression("mmap2-build-id-too-long.data"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a MMAP2 record at byte 240 of the file gives a build id of 21 bytes"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_lying_auxtrace_record_ends_the_reading_with_a_note() {
    let path = regression("big-endian-auxtrace-size.data");
    let out = collapse(&path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("an AUXTRACE record claims 1099511627776 bytes of trace data"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
