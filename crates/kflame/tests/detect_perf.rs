//! Content detection of `perf script` text against every other capture of this machine kind
//! (the shared captures folder next to the workspace; skipped with a note when absent).

use kflame::collapse::{Format, detect};

#[test]
#[allow(clippy::print_stderr)] // the skip note of an absent shared folder
fn perf_script_detector_claims_only_perf_script() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/captures/text");
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!("note: {dir} is absent; detection test on shared captures skipped");
        return;
    };
    let mut checked = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let data = std::fs::read(entry.path()).expect("readable capture");
        let head = &data[..data.len().min(64 * 1024)];
        let is_perf_script = name.starts_with("perf-") && name.ends_with(".script.txt");
        let got = detect(head);
        if is_perf_script {
            assert_eq!(got, Some(Format::PerfScript), "{name}");
        } else {
            assert_ne!(got, Some(Format::PerfScript), "{name} is not perf script");
            assert_eq!(Format::PerfScript.detect(head), 0, "{name}");
        }
        if name.ends_with(".folded") {
            // bcc's folded output (a `-` frame between kernel and user stacks) is claimed by
            // the bcc reader, which reads the same lines and knows bcc's units.
            let bcc = name.starts_with("bcc-") && got == Some(Format::Bcc);
            assert!(got == Some(Format::Folded) || bcc, "{name}: {got:?}");
        }
        checked += 1;
    }
    assert!(checked > 30, "{checked} captures");
}
