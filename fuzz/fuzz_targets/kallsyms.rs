//! /proc/kallsyms text: never a panic. The checks live in `kflame::fuzzing::kallsyms`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/kallsyms`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::kallsyms(data));
