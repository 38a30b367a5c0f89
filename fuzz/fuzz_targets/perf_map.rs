//! JIT perf maps (/tmp/perf-PID.map): never a panic. The checks live in `kflame::fuzzing::perf_map`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/perf_map`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::perf_map(data));
