//! `/dev/kmsg` records: no panic; parsing is the same record by record or as a stream.
//! The checks live in `kflame::fuzzing::kmsg`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/kmsg` and `fuzz/regressions/kmsg`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::kmsg(data));
