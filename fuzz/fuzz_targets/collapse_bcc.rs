//! bcc output: no panic, 1 and 2 threads agree.
//! The checks live in `kflame::fuzzing::collapse_bcc`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_bcc` and `fuzz/regressions/collapse_bcc`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_bcc(data));
