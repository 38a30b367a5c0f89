//! A history's metric span or block blob: no panic; series decoded alone as decoded together.
//! The checks live in `kflame_store::fuzzing::store_metrics`, replayed by
//! `crates/kflame-store/tests/fuzz_replay.rs` over `fuzz/corpus/store_metrics` and `fuzz/regressions/store_metrics`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_store::fuzzing::store_metrics(data));
