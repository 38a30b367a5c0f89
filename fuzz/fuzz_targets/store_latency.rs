//! A history's latency row blob: no panic; written again, the same histograms.
//! The checks live in `kflame_store::fuzzing::store_latency`, replayed by
//! `crates/kflame-store/tests/fuzz_replay.rs` over `fuzz/corpus/store_latency` and `fuzz/regressions/store_latency`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_store::fuzzing::store_latency(data));
