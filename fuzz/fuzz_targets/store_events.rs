//! A history's event block blob: no panic; written again, the same events.
//! The checks live in `kflame_store::fuzzing::store_events`, replayed by
//! `crates/kflame-store/tests/fuzz_replay.rs` over `fuzz/corpus/store_events` and `fuzz/regressions/store_events`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_store::fuzzing::store_events(data));
