//! Kernel logs: no panic, every report counts once.
//! The checks live in `kflame::fuzzing::collapse_kernel_log`, which `crates/kflame/tests/fuzz_replay.rs`
//! replays over `fuzz/corpus/collapse_kernel_log` and `fuzz/regressions/collapse_kernel_log`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame::fuzzing::collapse_kernel_log(data));
