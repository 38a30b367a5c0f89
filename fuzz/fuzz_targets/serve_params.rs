//! The query string of a `kflame serve` API request through every parameter parser: a value or a
//! 400, never a panic, heat maps and name lists within their bounds.
//! The checks live in `kflame_serve::fuzzing::serve_params`, replayed by
//! `crates/kflame-serve/tests/fuzz_replay.rs` over `fuzz/corpus/serve_params` and `fuzz/regressions/serve_params`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_serve::fuzzing::serve_params(data));
