//! function_graph collapser on arbitrary bytes: never panics, self times of every option set.
#![no_main]

use kflame::collapse::fgraph::{FunctionGraph, Latency, Options};
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let engine = Engine { threads: 1, order: Order::Sorted, block_size: 4096 };
    let plain = Options::default();
    let top = Options { latency: Latency::Total, top: Some(3), comm: true, pid: true, cpu: true };
    for opts in [plain, top] {
        let c = FunctionGraph::new(opts).with_events(Box::new(std::io::sink()));
        let _ = engine.run(Box::new(c), data);
    }
});
