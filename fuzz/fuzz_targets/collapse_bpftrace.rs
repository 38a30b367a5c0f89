//! bpftrace maps: no panic.
//! The checks live in `kflame::fuzzing::collapse_bpftrace`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_bpftrace` and `fuzz/regressions/collapse_bpftrace`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_bpftrace(data));
