//! `bench/offcpu-bpf.sh`'s recorder: the off-CPU program over the whole system for N
//! seconds, drained every second as a recorder would, then its totals on stdout (one line:
//! records drained, blocks, ns blocked, lost blocks and stacks).
//!
//! Usage: `offcpu_drain SECONDS [--wakers]` (as root).

use std::time::{Duration, Instant};

use kflame_bpf::{OffCpu, OffCpuOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let wakers = std::env::args().any(|a| a == "--wakers");
    let mut p = OffCpu::start(&OffCpuOptions { wakers, ..OffCpuOptions::default() })?;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let (mut records, mut blocks, mut ns) = (0u64, 0u64, 0u128);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())));
        for b in p.drain()? {
            records += 1;
            blocks += b.count;
            ns += u128::from(b.ns);
        }
    }
    let lost = p.lost()?;

    #[allow(clippy::print_stdout)]
    {
        println!(
            "records {records} blocks {blocks} ns {ns} lost_blocks {} lost_stacks {}",
            lost.blocks, lost.stacks
        );
    }
    Ok(())
}
