//! Fuzzes the ftrace / trace-cmd collapser in every mode, with tiny blocks so that records
//! straddle block boundaries: it must never panic, whatever the bytes.
//!
//! Run: `cargo +nightly fuzz run collapse_ftrace` (seed the corpus with
//! `crates/kflame/tests/data/ftrace/*.txt`). Without cargo-fuzz, from `fuzz/`:
//! `RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
//! -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
//! -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions
//! -Coverflow-checks" cargo +nightly build --release --target x86_64-unknown-linux-gnu --bin
//! collapse_ftrace`, then `target/x86_64-unknown-linux-gnu/release/collapse_ftrace CORPUS_DIR
//! -max_total_time=240 -max_len=16384`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/kflame/tests/common/ftrace.rs"]
mod ftrace;

fuzz_target!(|data: &[u8]| {
    ftrace::collapse_every_mode(data, |_| {});
});
