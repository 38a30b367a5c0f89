//! The C scanner of `kflame source` / `analyze --kernel-src`: no panic; definitions lie within
//! the file. The checks live in `kflame_analyze::fuzzing::source_scan`, which
//! `crates/kflame-analyze/tests/fuzz_replay.rs` replays over `fuzz/corpus/source_scan` and
//! `fuzz/regressions/source_scan`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_analyze::fuzzing::source_scan(data));
