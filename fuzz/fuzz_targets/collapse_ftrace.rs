//! Fuzzes the ftrace / trace-cmd collapser in every mode, with tiny blocks so that records
//! straddle block boundaries: it must never panic, whatever the bytes.
//!
//! Run: `cargo +nightly fuzz run collapse_ftrace` (seed the corpus with
//! `crates/kflame/tests/data/ftrace/*.txt`).

#![no_main]

use kflame::collapse::Engine;
use kflame::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let engine = Engine { threads: 1, block_size: 4096, ..Engine::default() };
    for mode in [None, Some(Mode::Alloc), Some(Mode::Syscalls), Some(Mode::OffCpu), Some(Mode::Events)] {
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
