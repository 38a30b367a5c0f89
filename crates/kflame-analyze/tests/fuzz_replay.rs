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

/// Every target of the fuzz crate that calls `kflame_analyze::fuzzing` is listed in
/// [`TARGETS`] (so replayed above) and built; and every listed one has its target.
#[test]
fn every_analyzer_target_is_built_and_listed() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let manifest = fs::read_to_string(fuzz.join("Cargo.toml")).unwrap();
    for (name, _) in TARGETS {
        let text = fs::read_to_string(fuzz.join(format!("fuzz_targets/{name}.rs"))).unwrap();
        assert!(text.contains(&format!("kflame_analyze::fuzzing::{name}(")), "{name}.rs");
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no [[bin]] {name}");
    }
    for e in fs::read_dir(fuzz.join("fuzz_targets")).unwrap().flatten() {
        let stem = e.path().file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let text = fs::read_to_string(e.path()).unwrap();
        if text.contains("kflame_analyze::fuzzing::") {
            assert!(
                TARGETS.iter().any(|(n, _)| *n == stem),
                "{stem} is not in kflame_analyze::fuzzing::TARGETS"
            );
        }
    }
}
