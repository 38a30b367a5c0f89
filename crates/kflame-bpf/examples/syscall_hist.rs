//! System-call latency histograms counted in the kernel, and what counting them costs a call.
//!
//! `syscall_hist [SECONDS] [--pid PID] [--slow-ms MS]`: attaches `SyscallLatency` (every
//! process, or one), waits SECONDS (default 5), and prints the calls most made: count, p50,
//! p99, max, slow calls per second.
//!
//! `syscall_hist --loop N`: times N `getppid()` calls without the program, then with it
//! attached for every process, then with it attached for another process only (the filter's
//! cost), in alternating rounds, and prints the median ns per call of each, and the loop's
//! `getppid` histogram as the kernel counted it.

#![allow(clippy::print_stdout, clippy::print_stderr)] // an example prints its figures

use std::time::{Duration, Instant};

use kflame_bpf::{CallLatency, SyscallLatency, SyscallOptions, syscall_name};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| -> Option<u64> {
        let at = args.iter().position(|a| a == flag)?;
        args.get(at + 1)?.parse().ok()
    };
    let result = match value("--loop") {
        Some(n) => overhead(n),
        None => {
            let secs = args.first().and_then(|a| a.parse().ok()).unwrap_or(5);
            let opts = SyscallOptions {
                pid: value("--pid").map(|p| p as u32),
                slow_ns: value("--slow-ms").map_or(10_000_000, |ms| ms * 1_000_000),
                skip_pid: Some(std::process::id()),
                ..SyscallOptions::default()
            };
            watch(&opts, secs)
        }
    };
    if let Err(e) = result {
        eprintln!("syscall_hist: {e}");
        std::process::exit(1);
    }
}

/// Prints the calls most made in `secs` seconds.
fn watch(opts: &SyscallOptions, secs: u64) -> Result<(), kflame_bpf::BpfError> {
    let mut p = SyscallLatency::start(opts)?;
    eprintln!("attached; counting for {secs} s");
    std::thread::sleep(Duration::from_secs(secs));
    let calls = p.drain()?;
    print_top(&calls, secs as f64, 15);
    let lost = p.lost()?;
    println!("lost: {} calls not timed, {} not counted", lost.starts, lost.waits);
    Ok(())
}

fn print_top(calls: &[CallLatency], secs: f64, top: usize) {
    let mut calls: Vec<&CallLatency> = calls.iter().collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.histogram.total()));
    println!(
        "{:<20} {:>10} {:>12} {:>12} {:>12} {:>8}",
        "call", "count", "p50 µs", "p99 µs", "max µs", "slow/s"
    );
    for c in calls.iter().take(top) {
        let h = &c.histogram;
        let us = |q: f64| h.quantile(q).unwrap_or(0.0) / 1e3;
        println!(
            "{:<20} {:>10} {:>12.1} {:>12.1} {:>12.1} {:>8.1}",
            syscall_name(c.nr),
            h.total(),
            us(0.5),
            us(0.99),
            h.max_ns as f64 / 1e3,
            c.slow as f64 / secs
        );
    }
}

/// ns per call of `n` getppid() calls.
fn time_loop(n: u64) -> f64 {
    let t = Instant::now();
    let mut sum = 0u32;
    for _ in 0..n {
        sum = sum.wrapping_add(std::os::unix::process::parent_id());
    }
    std::hint::black_box(sum);
    t.elapsed().as_nanos() as f64 / n as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Prints ns per getppid() call idle, attached for every process, attached for another one.
fn overhead(n: u64) -> Result<(), kflame_bpf::BpfError> {
    const ROUNDS: usize = 5;
    let (mut idle, mut all, mut other) = (Vec::new(), Vec::new(), Vec::new());
    let mut counted = Vec::new();
    time_loop(n / 10); // warm up
    for _ in 0..ROUNDS {
        idle.push(time_loop(n));
        let mut p = SyscallLatency::start(&SyscallOptions::default())?;
        all.push(time_loop(n));
        counted.extend(p.drain()?);
        drop(p);
        // pid 1: the filter rejects every call of this loop.
        let p = SyscallLatency::start(&SyscallOptions { pid: Some(1), ..SyscallOptions::default() })?;
        other.push(time_loop(n));
        drop(p);
    }
    let (idle, all, other) = (median(idle), median(all), median(other));
    println!("getppid x {n}, median of {ROUNDS} rounds");
    println!("idle:                       {idle:.1} ns/call");
    println!("attached (every process):   {all:.1} ns/call (+{:.1})", all - idle);
    println!("attached (another process): {other:.1} ns/call (+{:.1})", other - idle);
    let getppid: Vec<CallLatency> = counted.into_iter().filter(|c| syscall_name(c.nr) == "getppid").collect();
    print_top(&getppid, 1.0, 1);
    Ok(())
}
