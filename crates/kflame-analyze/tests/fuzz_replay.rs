//! Replays the analyzer's fuzz targets (`kflame_analyze::fuzzing`, the code each
//! `fuzz/fuzz_targets/<name>.rs` calls) over their seeds, `fuzz/corpus/<name>/`, and every
//! input a fuzzer ever crashed on, `fuzz/regressions/<name>/`, so that `cargo test` catches a
//! regression without a fuzzing session. (The memory limits of the report parsers' replay,
//! `crates/kflame/tests/fuzz_replay.rs`, are not needed here: these parsers allocate in
//! proportion to what they read.)

use std::fs;
use std::path::Path;

use kflame_analyze::fuzzing::TARGETS;

#[test]
fn every_seed_and_past_crash_passes() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    for (name, target) in TARGETS {
        let mut seeds = 0;
        for dir in ["corpus", "regressions"] {
            let Ok(entries) = fs::read_dir(fuzz.join(dir).join(name)) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                if path.file_name().is_some_and(|n| n == "README.md") {
                    continue;
                }
                let data = fs::read(&path).unwrap();
                if std::panic::catch_unwind(|| target(&data)).is_err() {
                    panic!("{name}: {} fails", path.display());
                }
                seeds += usize::from(dir == "corpus");
            }
        }
        assert!(seeds > 0, "{name}: no seed in fuzz/corpus/{name}");
    }
}
