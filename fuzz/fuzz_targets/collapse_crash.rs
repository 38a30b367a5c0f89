//! Fuzzes the crash `bt` parser and collapser: any bytes must parse without panicking, and
//! every task must count once.
#![no_main]

use kflame::collapse::Engine;
use kflame::collapse::crash::{Crash, CrashParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut p = CrashParser::new();
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        p.push_line(n as u64 + 1, line.strip_suffix(b"\r").unwrap_or(line));
    }
    p.finish();
    let tasks = p.take();
    for t in &tasks {
        let _ = t.to_json();
    }
    let engine = Engine { block_size: 4096, ..Engine::single_threaded() };
    let out = engine.run(Box::new(Crash::default()), data).expect("reading a slice cannot fail");
    assert_eq!(out.stacks.total().whole(), tasks.len() as u64);
});
