//! bcc collapser on arbitrary bytes: never panics; 1 and 2 threads agree.
#![no_main]

use kflame::collapse::bcc::{Bcc, Options, Unit};
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let run = |threads| {
        let e = Engine { threads, order: Order::Sorted, block_size: 4096 };
        e.run(Box::new(Bcc::new(Options { unit: Unit::Auto, pid: true })), data).map(|o| o.stacks.total())
    };
    let (one, two) = (run(1), run(2));
    if let (Ok(a), Ok(b)) = (one, two) {
        assert_eq!(a, b);
    }
});
