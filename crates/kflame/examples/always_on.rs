//! The always-on profile of a continuous profiler, through the library alone: CPU samples of
//! every CPU at a low rate (19 Hz by default) with a compact record per sample
//! (`keep_samples`: time, CPU, task, cgroup, stack index), named in windows (1 s by
//! default), for a duration (60 s by default); then prints what it cost this process: CPU
//! time from `/proc/self/stat` (utime + stime) and `/proc/self/schedstat`, peak RSS, and
//! what it recorded. Needs root (or CAP_PERFMON and CAP_SYSLOG):
//!
//! ```text
//! cargo run --release -p kflame --example always_on -- [SECONDS [HZ [WINDOW_SECONDS]]]
//! ```
//!
//! `bench/recorder-always-on.sh` runs it on an idle and on a busy machine.

#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use kflame::record::{Config, Mode, Recorder, Status};

fn arg(n: usize, default: f64) -> Result<f64, String> {
    match std::env::args().nth(n) {
        Some(s) => s.parse().map_err(|_| format!("`{s}`: expected a number")),
        None => Ok(default),
    }
}

/// utime + stime of this process in seconds (`/proc/self/stat` fields 14 and 15, in the
/// kernel's USER_HZ of 100 ticks a second).
fn stat_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    let after = stat.rsplit_once(')').map_or("", |(_, a)| a);
    let f: Vec<u64> = after.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // After `)`: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

/// Time this process ran on a CPU, seconds (`/proc/self/schedstat`, ns).
fn schedstat_cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0) as f64 / 1e9
}

/// A `/proc/self/status` field in KiB (`VmHWM`: peak RSS, `VmRSS`: RSS now).
fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = s.lines().find(|l| l.starts_with(field)).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds = arg(1, 60.0)?;
    let hz = arg(2, 19.0)? as u32;
    let window = Duration::from_secs_f64(arg(3, 1.0)?);
    let config = Config {
        modes: vec![Mode::Cpu { frequency: hz }],
        duration: Some(Duration::from_secs_f64(seconds)),
        keep_samples: true,
        ..Config::default()
    };
    let (cpu0, sched0) = (stat_cpu(), schedstat_cpu());
    let started = Instant::now();
    let mut recorder = Recorder::start(&config, Arc::new(AtomicBool::new(false)))?;
    let rss_started = status_kib("VmRSS:");
    let mut rss_first = 0;
    let (mut samples, mut records, mut stacks, mut windows) = (0u64, 0u64, 0u64, 0u64);
    let mut cgroups = BTreeSet::new();
    let mut next = window;
    // CPU time and wall time once the first window is named (kallsyms read, tasks listed).
    let mut first: Option<(f64, f64)> = None;
    loop {
        let ended = matches!(recorder.poll(Duration::from_millis(100))?, Status::Ended(_));
        if ended || recorder.progress().elapsed >= next {
            let w = recorder.take_window();
            for r in &w.kinds {
                samples += r.stats.samples;
                records += r.samples.len() as u64;
                stacks += r.sample_stacks.len() as u64;
                cgroups.extend(r.cgroups.values().cloned());
            }
            windows += 1;
            next += window;
            if first.is_none() {
                first = Some((schedstat_cpu(), started.elapsed().as_secs_f64()));
                rss_first = status_kib("VmRSS:");
            }
        }
        if ended {
            break;
        }
    }
    let caches = recorder.caches();
    let rest = recorder.finish()?;
    let wall = started.elapsed().as_secs_f64();
    let (cpu, sched) = (stat_cpu() - cpu0, schedstat_cpu() - sched0);
    println!(
        "recorded {wall:.1} s at {hz} Hz on every CPU, windows of {:.1} s ({windows})",
        window.as_secs_f64()
    );
    println!(
        "samples {samples} ({records} sample records, {:.1} distinct stacks a window), lost {}, cgroups {}",
        stacks as f64 / windows.max(1) as f64,
        rest.ring.lost,
        cgroups.len()
    );
    println!(
        "CPU time: {cpu:.2} s by /proc/self/stat, {sched:.3} s by schedstat = {:.3}% of one CPU",
        100.0 * sched / wall
    );
    if let Some((sched1, wall1)) = first {
        let (steady, span) = (schedstat_cpu() - sched1, wall - wall1);
        println!(
            "  of which starting and the first window {:.3} s; then {steady:.3} s in {span:.1} s = {:.3}% of one CPU",
            sched1 - sched0,
            100.0 * steady / span
        );
    }
    println!(
        "RSS: {rss_started} KiB once started, {rss_first} KiB after the first window, {} KiB at the end, peak {} KiB",
        status_kib("VmRSS:"),
        status_kib("VmHWM:")
    );
    println!("caches at the end: {caches:?}");
    for n in rest.notes {
        println!("note: {n}");
    }
    Ok(())
}
