//! OTLP profiles requests read by `kflame collapse`: an error or stacks, never a panic or an
//! unbounded allocation. The checks live in `kflame::fuzzing::import_otlp`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/import_otlp` and
//! `fuzz/regressions/import_otlp`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::import_otlp(data));
