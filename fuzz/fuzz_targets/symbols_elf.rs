//! ELF symbol tables and build ids read from memory: never a panic. The checks live in `kflame::fuzzing::symbols_elf`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/symbols_elf`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::symbols_elf(data));
