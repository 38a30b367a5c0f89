//! perf script text paired into syscall/off-CPU/probe latency: no panic, block size does not matter.
//! The checks live in `kflame::fuzzing::collapse_perf_pairs`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_perf_pairs` and `fuzz/regressions/collapse_perf_pairs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_perf_pairs(data));
