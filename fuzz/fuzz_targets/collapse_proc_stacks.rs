//! /proc stack snapshots: no panic, 1 and 2 threads agree.
//! The checks live in `kflame::fuzzing::collapse_proc_stacks`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_proc_stacks` and `fuzz/regressions/collapse_proc_stacks`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_proc_stacks(data));
