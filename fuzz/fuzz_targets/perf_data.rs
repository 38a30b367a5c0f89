//! perf.data bytes of any shape must give an error or stacks, never a panic, a hang or an
//! unbounded allocation. Run: `cargo +nightly fuzz run perf_data`, seeded with the
//! fixtures: `cp ../crates/kflame/tests/data/perf-data/*.data corpus/perf_data/`.
#![no_main]

use std::path::PathBuf;

use kflame::collapse::Order;
use kflame::perf_data::{Options, collapse_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = Options {
        // No host files: symbols stay unknown, only the container and records are tested.
        kallsyms: Some(PathBuf::from("/dev/null")),
        symfs: Some(PathBuf::from("/nonexistent")),
        ..Options::default()
    };
    let _ = collapse_bytes(data, &opts, Order::Sorted);
});
