//! A kernel tree's `MAINTAINERS` file: no panic; every section found for a path carries the
//! pattern that matched. The checks live in `kflame_analyze::fuzzing::maintainers`, which
//! `crates/kflame-analyze/tests/fuzz_replay.rs` replays over `fuzz/corpus/maintainers` and
//! `fuzz/regressions/maintainers`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_analyze::fuzzing::maintainers(data));
