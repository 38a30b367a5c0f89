//! function_graph output, self and total time with the events log: no panic.
//! The checks live in `kflame::fuzzing::collapse_function_graph`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_function_graph` and `fuzz/regressions/collapse_function_graph`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_function_graph(data));
