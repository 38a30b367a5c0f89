//! Ring buffer records and DWARF unwinding of their user stacks: never a panic, never a frame
//! outside the mapped image. The checks live in `kflame::fuzzing::record_unwind`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/record_unwind`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::record_unwind(data));
