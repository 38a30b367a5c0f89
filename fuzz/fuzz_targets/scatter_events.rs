//! JSON event lines into the latency scatter page: no panic; every line an event or a
//! counted skip. The checks live in `kflame::fuzzing::scatter_events`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/scatter_events`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::scatter_events(data));
