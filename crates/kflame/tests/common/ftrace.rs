//! The ftrace collapser in every mode, with every option that adds root frames, on small
//! blocks (records straddle block boundaries): shared by the mutation tests and the
//! `collapse_ftrace` fuzz target (which includes this file).

#![allow(dead_code, unreachable_pub)]

use kflame::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};
use kflame::collapse::{Engine, Output};

/// Every mode of the ftrace collapser (`None`: detected from the events).
pub const MODES: [Option<Mode>; 6] = [
    None,
    Some(Mode::Alloc),
    Some(Mode::Syscalls),
    Some(Mode::OffCpu),
    Some(Mode::Probes),
    Some(Mode::Events),
];

/// Collapses `input` once per mode, single-threaded in 4 KiB blocks, and hands each output
/// (or the error, for in-memory input only a bug) to `check`.
pub fn collapse_every_mode(input: &[u8], mut check: impl FnMut(std::io::Result<Output>)) {
    let engine = Engine { threads: 1, block_size: 4096, ..Engine::default() };
    for mode in MODES {
        let opts = FtraceOptions {
            mode,
            weight: if mode == Some(Mode::Events) { Some(WeightBy::Bytes) } else { None },
            pid: true,
            cpu: true,
            order: true,
            page_type: true,
            ..FtraceOptions::default()
        };
        check(engine.run(Box::new(Ftrace::new(opts, None)), input));
    }
}
