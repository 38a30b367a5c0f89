//! The gzip/zstd/xz layer of opening an input: never a panic. The checks live in `kflame::fuzzing::decompress`, which
//! `crates/kflame/tests/fuzz_replay.rs` replays over `fuzz/corpus/decompress`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::decompress(data));
