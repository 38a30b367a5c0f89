//! ftrace and trace-cmd text in every mode: no panic.
//! The checks live in `kflame::fuzzing::collapse_ftrace`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_ftrace` and `fuzz/regressions/collapse_ftrace`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_ftrace(data));
