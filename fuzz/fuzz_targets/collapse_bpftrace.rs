//! bpftrace collapser on arbitrary bytes: never panics.
#![no_main]

use kflame::collapse::bpftrace::Bpftrace;
use kflame::collapse::{Engine, Order};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let e = Engine { threads: 1, order: Order::Sorted, block_size: 4096 };
    let _ = e.run(Box::new(Bpftrace::new(None)), data);
    let _ = e.run(Box::new(Bpftrace::new(Some("@"))), data);
});
