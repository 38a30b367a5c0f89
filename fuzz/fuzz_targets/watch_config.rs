//! The TOML configuration of `kflame watch`, resolved as at start: errors name the file.
//! The checks live in `kflame_watch::fuzzing::watch_config`, replayed by
//! `crates/kflame-watch/tests/fuzz_replay.rs` over `fuzz/corpus/watch_config` and `fuzz/regressions/watch_config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_watch::fuzzing::watch_config(data));
