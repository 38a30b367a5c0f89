//! Format detection on arbitrary heads: never a panic. The checks live in `kflame::fuzzing::detect`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/detect`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::detect(data));
