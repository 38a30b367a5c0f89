//! Fuzzes the kernel report extractor and the kernel-log collapser: any bytes must parse
//! without panicking, and every report must count once.
#![no_main]

use kflame::collapse::Engine;
use kflame::collapse::kernel_log::{KernelLog, Options};
use kflame::report::ReportExtractor;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let reports = ReportExtractor::extract_all(data);
    for r in &reports {
        let _ = r.to_json();
    }
    let opts = Options { offsets: true, unreliable: true, ..Options::default() };
    let engine = Engine { block_size: 4096, ..Engine::single_threaded() };
    let out = engine.run(Box::new(KernelLog::new(opts)), data).expect("reading a slice cannot fail");
    assert_eq!(out.stacks.total().whole(), reports.len() as u64);
});
