//! Fuzzes the perf script collapser: any bytes, any options, must not panic and must give
//! the same stacks and diagnostics on 1 and 2 threads.

#![no_main]

use kflame::collapse::perf::{PerfOptions, PerfScript, PerfWeight};
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, input)) = data.split_first() else { return };
    let opts = PerfOptions {
        include_pid: flags & 1 != 0,
        include_tid: flags & 2 != 0,
        annotate_kernel: flags & 4 != 0,
        annotate_jit: flags & 8 != 0,
        include_addrs: flags & 16 != 0,
        mark_inlined: flags & 32 != 0,
        event_filter: None,
        weight: match flags >> 6 {
            1 => PerfWeight::Samples,
            2 => PerfWeight::Bytes,
            _ => PerfWeight::Auto,
        },
    };
    let run = |threads| {
        let engine = Engine { threads, order: Order::Sorted, block_size: 4096 };
        let out = engine.run(Box::new(PerfScript::new(opts.clone())), input).expect("in-memory input");
        let stacks: Vec<(Vec<u8>, String)> =
            out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.to_string())).collect();
        (stacks, out.diag)
    };
    assert_eq!(run(1), run(2));
});
