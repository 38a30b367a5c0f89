//! /proc stack snapshot collapser and its pure parsers on arbitrary bytes: never panic;
//! 1 and 2 threads agree.
#![no_main]

use kflame::collapse::proc_stacks::{ProcStacks, parse_proc_stack, parse_status};
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_status(data);
    let _ = parse_proc_stack(data);
    let run = |threads| {
        let e = Engine { threads, order: Order::Sorted, block_size: 4096 };
        e.run(Box::new(ProcStacks::new()), data).map(|o| o.stacks.total())
    };
    if let (Ok(a), Ok(b)) = (run(1), run(2)) {
        assert_eq!(a, b);
    }
});
