//! perf script text, options from the first byte: no panic, 1 and 2 threads agree.
//! The checks live in `kflame::fuzzing::collapse_perf`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_perf` and `fuzz/regressions/collapse_perf`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_perf(data));
