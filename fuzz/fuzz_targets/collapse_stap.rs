//! SystemTap collapser on arbitrary bytes: never panics; 1 and 2 threads agree.
#![no_main]

use kflame::collapse::stap::Stap;
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let run = |threads| {
        let e = Engine { threads, order: Order::Sorted, block_size: 4096 };
        e.run(Box::new(Stap::new()), data).map(|o| o.stacks.total())
    };
    if let (Ok(a), Ok(b)) = (run(1), run(2)) {
        assert_eq!(a, b);
    }
});
