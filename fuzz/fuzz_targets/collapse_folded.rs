//! Folded stacks as collapse input: no panic, 1 and 2 threads agree.
//! The checks live in `kflame::fuzzing::collapse_folded`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_folded` and `fuzz/regressions/collapse_folded`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_folded(data));
