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

use kflame::collapse::Engine;
use kflame::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let engine = Engine { threads: 1, block_size: 4096, ..Engine::default() };
    for mode in [
        None,
        Some(Mode::Alloc),
        Some(Mode::Syscalls),
        Some(Mode::OffCpu),
        Some(Mode::Probes),
        Some(Mode::Events),
    ] {
        let opts = FtraceOptions {
            mode,
            weight: if mode == Some(Mode::Events) { Some(WeightBy::Bytes) } else { None },
            pid: true,
            cpu: true,
            order: true,
            page_type: true,
            ..FtraceOptions::default()
        };
        let _ = engine.run(Box::new(Ftrace::new(opts, None)), data);
    }
});
