//! perf.data images: an error or stacks, never a panic, a hang or an unbounded allocation.
//! The checks live in `kflame::fuzzing::perf_data`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/perf_data` and `fuzz/regressions/perf_data`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::perf_data(data));
