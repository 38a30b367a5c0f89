//! A history's bucket blob (formats 1 and 2): no panic, no allocation beyond its size; decoded whole,
//! by window and summed per stack alike.
//! The checks live in `kflame_store::fuzzing::store_bucket`, replayed by
//! `crates/kflame-store/tests/fuzz_replay.rs` over `fuzz/corpus/store_bucket` and `fuzz/regressions/store_bucket`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_store::fuzzing::store_bucket(data));
