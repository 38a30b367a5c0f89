//! Trigger rules of `kflame watch`: an error or a rule that prints and parses back the same.
//! The checks live in `kflame_watch::fuzzing::watch_rules`, replayed by
//! `crates/kflame-watch/tests/fuzz_replay.rs` over `fuzz/corpus/watch_rules` and `fuzz/regressions/watch_rules`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_watch::fuzzing::watch_rules(data));
