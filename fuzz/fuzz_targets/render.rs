//! Folded stacks to SVG, HTML and a diff: no panic.
//! The checks live in `kflame::fuzzing::render`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/render` and `fuzz/regressions/render`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::render(data));
