//! The lookup half of `bench/analyze-source.sh`: opens the index of a kernel tree once, then
//! looks up the definitions (with their text) of every 97th name defined in the tree and
//! prints the median and the slowest lookup, and the time of one callers query.
//!
//! Usage: source_lookup KERNEL_TREE INDEX_FILE

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::Instant;

use kflame_analyze::source::{KernelSource, SourceIndex};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, tree, index] = args.as_slice() else {
        return Err("usage: source_lookup KERNEL_TREE INDEX_FILE".into());
    };
    let t = Instant::now();
    let (index, _) = SourceIndex::open(Path::new(tree), Path::new(index), 2)?;
    let opened = t.elapsed();
    let names: Vec<String> = index.defined_names().into_iter().map(str::to_string).collect();
    let src = KernelSource { index, vmlinux: None };
    let mut times = Vec::new();
    for name in names.iter().step_by(97) {
        let t = Instant::now();
        for d in src.definitions(name) {
            src.text(&d.file, d.start, d.end)?;
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    let max = times.last().copied().unwrap_or(0.0);
    let t = Instant::now();
    let callers = src.callers("kfree").len();
    let callers_ms = t.elapsed().as_secs_f64() * 1000.0;
    println!("index open in-process (load + stat): {:.0} ms", opened.as_secs_f64() * 1000.0);
    println!(
        "lookup (definitions + text) of {} names: median {median:.3} ms, max {max:.3} ms (target <= 10 ms)",
        times.len()
    );
    println!("callers of kfree: {callers} in {callers_ms:.1} ms");
    Ok(())
}
