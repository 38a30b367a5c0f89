//! A history's stack or frame-name chunk blob, after its row's count: no panic; live stacks
//! counted as decoded.
//! The checks live in `kflame_store::fuzzing::store_chunks`, replayed by
//! `crates/kflame-store/tests/fuzz_replay.rs` over `fuzz/corpus/store_chunks` and `fuzz/regressions/store_chunks`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_store::fuzzing::store_chunks(data));
