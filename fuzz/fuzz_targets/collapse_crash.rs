//! crash bt output: no panic, every task counts once.
//! The checks live in `kflame::fuzzing::collapse_crash`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_crash` and `fuzz/regressions/collapse_crash`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_crash(data));
