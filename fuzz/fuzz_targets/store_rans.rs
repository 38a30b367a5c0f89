//! The store's rANS coder: any stream decodes to an error or symbols of the model, and coded
//! symbols decode to themselves.
//! The checks live in `kflame_store::fuzzing::store_rans`, replayed by
//! `crates/kflame-store/tests/fuzz_replay.rs` over `fuzz/corpus/store_rans` and `fuzz/regressions/store_rans`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_store::fuzzing::store_rans(data));
