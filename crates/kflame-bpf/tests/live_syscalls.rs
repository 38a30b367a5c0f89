//! Live tests (root, a kernel that loads raw-tracepoint BPF programs) of the system-call
//! latency program: a thread sleeping 5 ms forty times shows forty calls of about 5 ms in its
//! sleep call's histogram, counted as slow over a threshold of 2 ms and not over one of 50 ms;
//! synchronous 64 KiB writes to a file on the disk show in `write`'s histogram; and nothing is
//! left loaded after the loader is gone.
//!
//! The process is filtered on itself, so nothing else of it may sleep with nanosleep while a
//! test counts: the tests run one at a time, and wait for the kernel with a channel's timeout
//! (a futex), never with a sleep.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;

use common::leaves_nothing;
use kflame::latency::{Histogram, slot_of, slot_upper};
use kflame_bpf::{CallLatency, SyscallLatency, SyscallOptions, syscall_name};

/// The tests of this file one at a time: each counts the calls of the whole process.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Waits `d` on a futex (a channel's timeout), not in nanosleep.
fn pause(d: Duration) {
    let (_tx, rx) = mpsc::channel::<()>();
    let _ = rx.recv_timeout(d);
}

/// Starts the program for this process: this kind of machine (root, BTF, raw tracepoints)
/// loads it, so a refusal fails the test.
fn start(slow_ns: u64) -> SyscallLatency {
    let opts = SyscallOptions { pid: Some(std::process::id()), slow_ns, ..SyscallOptions::default() };
    SyscallLatency::start(&opts).unwrap_or_else(|e| panic!("{e}"))
}

/// The histogram and slow count of the calls named one of `names`, gathered over drains until
/// `want` holds, at most 10 s.
fn gather(
    p: &mut SyscallLatency,
    names: &[&str],
    want: impl Fn(&Histogram, u64) -> bool,
) -> (Histogram, u64) {
    let end = Instant::now() + Duration::from_secs(10);
    let mut h = Histogram::default();
    let mut slow = 0;
    while Instant::now() < end {
        let drained: Vec<CallLatency> = p.drain().unwrap();
        for c in drained.iter().filter(|c| names.contains(&syscall_name(c.nr).as_str())) {
            h.add(&c.histogram);
            slow += c.slow;
        }
        if want(&h, slow) {
            break;
        }
        pause(Duration::from_millis(50));
    }
    (h, slow)
}

const SLEEP: Duration = Duration::from_millis(5);
const SLEEPS: u64 = 40;
const SLEEP_CALLS: &[&str] = &["nanosleep", "clock_nanosleep"];

/// A thread sleeping [`SLEEP`] [`SLEEPS`] times, joined; how long each sleep took, timed
/// around the call (a call lasts no longer than that, whatever the machine's load adds).
fn sleeper() -> Vec<u64> {
    std::thread::spawn(|| {
        (0..SLEEPS)
            .map(|_| {
                let t = Instant::now();
                std::thread::sleep(SLEEP);
                t.elapsed().as_nanos() as u64
            })
            .collect()
    })
    .join()
    .unwrap()
}

#[test]
fn sleeps_of_5_ms_in_their_calls_histogram() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut p = start(u64::MAX);
    let mut timed = sleeper();
    timed.sort_unstable();
    let (h, _) = gather(&mut p, SLEEP_CALLS, |h, _| h.total() >= SLEEPS);
    let five = SLEEP.as_nanos() as u64;
    assert!(h.total() >= SLEEPS, "{} sleeps counted: {h:?}", h.total());
    // Each sleep lasted 5 ms at least: no count in a bucket that ends at 5 ms or below.
    let short: u64 =
        h.counts.iter().enumerate().filter(|(s, _)| slot_upper(*s) <= five).map(|(_, c)| c).sum();
    assert_eq!(short, 0, "sleeps shorter than {five} ns: {h:?}");
    assert!(h.max_ns >= five, "max {} ns", h.max_ns);
    // The largest call is in the highest bucket counted: the kernel's buckets are these.
    let top = h.counts.iter().rposition(|&c| c > 0).unwrap();
    assert_eq!(slot_of(h.max_ns), top, "max {} ns in bucket {top}", h.max_ns);
    // The median: within a bucket's 25% of 5 ms, in a bucket that holds latencies over 5 ms
    // and none over the median of the sleeps as timed around their calls (5 ms and the
    // scheduler's delay, which the machine's load sets).
    let p50 = h.quantile(0.5).unwrap();
    let timed_p50 = timed[timed.len() / 2];
    assert!(p50 >= 0.75 * five as f64, "p50 {p50} ns: {h:?}");
    let s = slot_of(p50 as u64);
    assert!(
        slot_upper(s) > five && s <= slot_of(timed_p50),
        "p50 {p50} ns in bucket {s}; timed around the calls, a median of {timed_p50} ns: {h:?}"
    );
    let lost = p.lost().unwrap();
    assert_eq!((lost.waits, lost.starts), (0, 0), "{lost:?}");
}

/// Writes `n` blocks of 64 KiB with O_DSYNC to a file of `/var/tmp` (on the disk).
fn dsync_writes(n: u64) {
    let dir = std::path::Path::new("/var/tmp").join(format!("kflame-syscalls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("written");
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .custom_flags(libc::O_DSYNC)
            .open(&path)?;
        let block = vec![0x5au8; 64 << 10];
        for _ in 0..n {
            f.write_all(&block)?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    written.unwrap();
}

/// Slow calls are kept as outliers with the caller's user stack and the kernel stack of
/// their longest block (where a synchronous write waited for the disk), with a threshold of
/// their own (`write` over 20 µs, nothing else slow), at most the bound per CPU and second
/// (the rest counted).
#[test]
fn slow_writes_are_outliers_with_where_they_waited() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let write = kflame_bpf::syscall_number("write").expect("write has a number");
    let opts = SyscallOptions {
        pid: Some(std::process::id()),
        slow_ns: u64::MAX,
        thresholds: vec![(write, 20_000)],
        max_outliers: 1000,
        wait_min_ns: 10_000,
        ..SyscallOptions::default()
    };
    let mut p = SyscallLatency::start(&opts).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.takes_waits(), "this kernel takes the stacks of tasks switched in (BTF tracepoints)");
    const WRITES: u64 = 32;
    dsync_writes(WRITES);
    let mut all = Vec::new();
    let (h, slow) = gather(&mut p, &["write"], |h, _| h.total() >= WRITES);
    all.extend(p.outliers());
    assert!(h.total() >= WRITES, "{h:?}");
    // Every slow write is an outlier (none over the bound), and only writes are.
    assert!(slow >= WRITES / 2, "{slow} of {} writes over 20 us: {h:?}", h.total());
    assert_eq!(all.len() as u64, slow, "{all:#?}");
    assert!(all.iter().all(|o| o.nr == write && o.tgid == std::process::id() && o.ns >= 20_000));
    assert!(all.windows(2).all(|w| w[0].end_ns <= w[1].end_ns));
    assert!(all.iter().all(|o| !o.user.is_empty()), "each with the caller's user stack");
    // Where they waited: the write path of the kernel, below the block.
    let k = common::Kallsyms::read();
    let waited: Vec<&kflame_bpf::Outlier> = all.iter().filter(|o| o.wait_ns >= 10_000).collect();
    assert!(waited.len() as u64 >= slow / 2, "{} of {slow} with a wait stack", waited.len());
    for o in &waited {
        assert!(o.wait_ns <= o.ns, "{o:?}");
        let names = k.names(&o.wait);
        assert!(names.iter().any(|n| n.contains("write")), "{names:?}");
    }
    let lost = p.lost().unwrap();
    assert_eq!((lost.outliers, lost.starts), (0, 0), "{lost:?}");
}

#[test]
fn synchronous_writes_to_the_disk_in_writes_histogram() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut p = start(u64::MAX);
    const WRITES: u64 = 32;
    dsync_writes(WRITES);
    let (h, _) = gather(&mut p, &["write"], |h, _| h.total() >= WRITES);
    assert!(h.total() >= WRITES, "{} writes counted: {h:?}", h.total());
    let p50 = h.quantile(0.5).unwrap();
    let p99 = h.quantile(0.99).unwrap();
    assert!(p50 > 0.0 && p99 >= p50, "p50 {p50} ns, p99 {p99} ns: {h:?}");
    assert!(h.max_ns > 0 && h.max_ns as f64 >= p99, "max {} ns, p99 {p99} ns", h.max_ns);
    let lost = p.lost().unwrap();
    assert_eq!((lost.waits, lost.starts), (0, 0), "{lost:?}");
}

#[test]
fn sleeps_over_the_threshold_are_slow() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut p = start(2_000_000);
    let _ = sleeper();
    let (h, slow) = gather(&mut p, SLEEP_CALLS, |h, slow| h.total() >= SLEEPS && slow >= SLEEPS);
    assert!(slow >= SLEEPS && h.total() >= SLEEPS, "{slow} slow of {} sleeps", h.total());
    // Every sleep of the process was over 2 ms.
    assert_eq!(slow, h.total(), "{h:?}");
    drop(p);
    let mut p = start(50_000_000);
    let timed = sleeper();
    let (h, slow) = gather(&mut p, SLEEP_CALLS, |h, _| h.total() >= SLEEPS);
    assert!(h.total() >= SLEEPS, "{} sleeps counted", h.total());
    // None, unless the machine held a sleeper off the CPU for 50 ms.
    let timed_slow = timed.iter().filter(|&&t| t >= 50_000_000).count() as u64;
    assert!(
        slow <= timed_slow,
        "{slow} slow sleeps over 50 ms, {timed_slow} as timed around the calls: {h:?}"
    );
}

#[test]
fn nothing_stays_loaded_after_the_loader_is_dropped() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    leaves_nothing(|| SyscallLatency::start(&SyscallOptions::default()).unwrap_or_else(|e| panic!("{e}")), 4);
    // With outliers kept: the BTF sched_switch program too.
    let opts = SyscallOptions { max_outliers: 8, ..SyscallOptions::default() };
    leaves_nothing(|| SyscallLatency::start(&opts).unwrap_or_else(|e| panic!("{e}")), 5);
}
