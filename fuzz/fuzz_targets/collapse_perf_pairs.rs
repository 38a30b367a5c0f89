//! Fuzzes the perf script pairing front end (syscalls, off-CPU, probes): any bytes, any
//! mode, must not panic, and cutting the input into other blocks must not change the result.

#![no_main]

use kflame::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions};
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else { return };
    let mode = match flags % 3 {
        0 => PairMode::Syscalls,
        1 => PairMode::OffCpu,
        _ => PairMode::Probes,
    };
    let opts = PerfPairsOptions { pid: flags & 4 != 0, cpu: flags & 8 != 0, ..PerfPairsOptions::new(mode) };
    let run = |block_size| {
        let engine = Engine { threads: 1, order: Order::Sorted, block_size };
        let out = engine.run(Box::new(PerfPairs::new(opts.clone(), None)), input).expect("in-memory input");
        let stacks: Vec<(Vec<u8>, String)> =
            out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.to_string())).collect();
        (stacks, out.diag)
    };
    assert_eq!(run(4096), run(1 << 20));
});
