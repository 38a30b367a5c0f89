//! DWARF function names and inline chains read from memory: never a panic. The checks live in `kflame::fuzzing::symbols_dwarf`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/symbols_dwarf`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::symbols_dwarf(data));
