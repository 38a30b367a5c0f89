//! pprof files read by `kflame collapse`: an error or stacks, never a panic or an unbounded
//! allocation. The checks live in `kflame::fuzzing::import_pprof`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/import_pprof` and
//! `fuzz/regressions/import_pprof`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::import_pprof(data));
