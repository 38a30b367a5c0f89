//! One of the waiting-time programs over the whole system (or one process) for N seconds,
//! drained every second, then the records with the most time on stdout (one line each: ns,
//! count, tid, comm, what was waited on, the innermost kernel frames named from kallsyms) and
//! what was lost.
//!
//! Usage: `waits_drain locks|runq|bio SECONDS [PID]` (as root).

use std::time::{Duration, Instant};

use kflame_bpf::{Bio, Locks, Runq, WaitOptions, Waited, device_name, lock_kind};

fn kallsyms() -> Vec<(u64, String)> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let mut syms: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let a = u64::from_str_radix(it.next()?, 16).ok()?;
            Some((a, it.nth(1)?.to_string()))
        })
        .filter(|(a, _)| *a != 0)
        .collect();
    syms.sort_unstable();
    syms
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let secs: f64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let pid = std::env::args().nth(3).and_then(|s| s.parse().ok());
    let opts = WaitOptions { pid, ..WaitOptions::default() };
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut all: Vec<Waited> = Vec::new();
    let mut hist_total = 0u64;
    let lost = match mode.as_str() {
        "locks" => {
            let mut p = Locks::start(&opts)?;
            while Instant::now() < end {
                std::thread::sleep(Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())));
                all.extend(p.drain()?);
            }
            p.lost()?
        }
        "runq" => {
            let mut p = Runq::start(&opts)?;
            while Instant::now() < end {
                std::thread::sleep(Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())));
                let d = p.drain()?;
                all.extend(d.waited);
                hist_total += d.histograms.iter().flatten().sum::<u64>();
            }
            p.lost()?
        }
        "bio" => {
            let mut p = Bio::start(&opts)?;
            while Instant::now() < end {
                std::thread::sleep(Duration::from_secs(1).min(end.saturating_duration_since(Instant::now())));
                all.extend(p.drain()?);
            }
            p.lost()?
        }
        _ => return Err("usage: waits_drain locks|runq|bio SECONDS [PID]".into()),
    };
    let syms = kallsyms();
    let name = |a: u64| match syms.partition_point(|s| s.0 <= a) {
        0 => format!("{a:#x}"),
        i => syms[i - 1].1.clone(),
    };
    all.sort_by_key(|w| std::cmp::Reverse(w.ns));
    #[allow(clippy::print_stdout)]
    {
        let waits: u64 = all.iter().map(|w| w.count).sum();
        println!("records {} waits {waits} histogram_waits {hist_total} lost {lost:?}", all.len());
        for w in all.iter().take(15) {
            let on = match mode.as_str() {
                "locks" => lock_kind(w.on).to_string(),
                "bio" => device_name(w.on).unwrap_or_else(|| format!("dev {:#x}", w.on)),
                _ => format!("cpu {}", w.on),
            };
            let frames: Vec<String> = w.kernel.iter().take(6).map(|&a| name(a)).collect();
            println!(
                "{:>12} {:>6} {:>7} {:<16} {on:<14} {}",
                w.ns,
                w.count,
                w.tid,
                String::from_utf8_lossy(&w.comm),
                frames.join(";")
            );
        }
    }
    Ok(())
}
