//! Live test (root, a kernel that loads raw-tracepoint BPF programs and has `BPF_ENABLE_STATS`)
//! of the always-on programs' CPU budget: with a budget far below what a process calling the
//! kernel without pause costs them, they are measured for a second, then detached (no call
//! counted any more while the process keeps calling), the seconds detached are said, and
//! nothing is left loaded when they go.

use std::time::{Duration, Instant};

use kflame::record::{Aggregator, Mode};
use kflame_bpf::record::{SlowThresholds, always_on};

/// The system calls counted by `a`'s drain now.
fn calls(a: &mut Box<dyn Aggregator>) -> u64 {
    a.drain().unwrap_or_else(|e| panic!("{e}"));
    a.histograms().iter().map(|r| r.histogram.total()).sum()
}

#[test]
fn programs_over_their_budget_are_detached_after_their_measurement() {
    let thresholds = SlowThresholds {
        syscall: 10_000_000,
        syscall_labels: Vec::new(),
        max_outliers: 0,
        bio: u64::MAX,
        runq: u64::MAX,
        offcpu: u64::MAX,
        lock: u64::MAX,
        labels: Vec::new(),
        // A millionth of a CPU: less than the programs cost in their measurement second alone.
        cpu_budget: 1e-6,
    };
    let (started, failed) = always_on(false, &thresholds);
    assert!(
        failed.is_empty(),
        "{:?}",
        failed.iter().map(|(m, e)| format!("{}: {e}", m.name())).collect::<Vec<_>>()
    );
    let mut syscalls =
        started.into_iter().find(|(m, _)| *m == Mode::Syscalls).expect("the system-call program").1;
    // Another process calling the kernel without pause (the program leaves out the calls of
    // the process that loaded it, a watcher's own): dd copying a byte at a time.
    let mut caller = std::process::Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", "status=none"])
        .spawn()
        .expect("dd");
    let start = Instant::now();
    // (seconds since the start, calls counted in the drain then), drained about every 200 ms.
    let mut seen = Vec::new();
    while start.elapsed() < Duration::from_millis(3500) {
        std::thread::sleep(Duration::from_millis(200));
        seen.push((start.elapsed().as_secs_f64(), calls(&mut syscalls)));
    }
    let _ = caller.kill();
    let _ = caller.wait();
    let first: u64 = seen.iter().filter(|(t, _)| *t < 1.0).map(|s| s.1).sum();
    assert!(first > 1000, "calls counted in the measurement second: {seen:?}");
    // Measured after 0.9 s at the drain that follows, then detached: nothing counted from
    // the drain after that one.
    let late: Vec<&(f64, u64)> = seen.iter().filter(|(t, _)| *t > 1.8).collect();
    assert!(!late.is_empty() && late.iter().all(|s| s.1 == 0), "calls counted once detached: {seen:?}");
    let lost = syscalls.lost();
    assert!(lost.detached_secs >= 1, "the seconds detached said: {lost:?}");
}
