//! Live tests (root, a kernel that loads raw-tracepoint BPF programs): a thread blocked in a known
//! place shows up with its time, its stacks and, with wakers on, the thread that woke it; and
//! nothing is left loaded after the loader is gone.

use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;

use common::{Kallsyms, ThreadAcct, gettid};
use kflame_bpf::{Blocked, OffCpu, OffCpuOptions};

/// Kernel symbols of `addrs`.
fn kernel_names(addrs: &[u64]) -> Vec<String> {
    Kallsyms::read().names(addrs)
}

/// The tests of this file one at a time: each counts the programs it loaded.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts the program: this kind of machine (root, BTF, raw tracepoints) loads it.
fn start(opts: &OffCpuOptions) -> Option<OffCpu> {
    Some(OffCpu::start(opts).unwrap_or_else(|e| panic!("{e}")))
}

/// Drains until `want` holds for what was gathered, at most `limit`.
fn gather(p: &mut OffCpu, limit: Duration, want: impl Fn(&[Blocked]) -> bool) -> Vec<Blocked> {
    let end = Instant::now() + limit;
    let mut all = Vec::new();
    while Instant::now() < end {
        all.extend(p.drain().unwrap());
        if want(&all) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    all
}

#[test]
fn a_sleeping_thread_is_counted_with_its_kernel_stack() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let Some(mut p) = start(&OffCpuOptions { pid: Some(pid), ..OffCpuOptions::default() }) else { return };
    let (tx, rx) = mpsc::channel();
    let sleeper = std::thread::spawn(move || {
        let (before, start) = (ThreadAcct::now(), Instant::now());
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let wall = start.elapsed().as_nanos() as u64;
        tx.send((gettid(), before.blocked_until(&ThreadAcct::now(), wall))).unwrap();
    });
    // What the kernel accounted for the sleeps: a sleep preempted as it went to sleep and
    // runnable until its timer fired never blocks, now and then on a loaded machine.
    let (tid, (blocks, blocked)) = rx.recv().unwrap();
    sleeper.join().unwrap();
    assert!(blocks >= 10 && blocked >= 100_000_000, "{blocks} blocks, {blocked} ns of 20 sleeps of 10 ms");
    let all = gather(&mut p, Duration::from_secs(10), |b| {
        b.iter().filter(|x| x.tid == tid).map(|x| x.count).sum::<u64>() >= blocks
    });
    let mine: Vec<&Blocked> = all.iter().filter(|b| b.tid == tid).collect();
    let ns: u64 = mine.iter().map(|b| b.ns).sum();
    let count: u64 = mine.iter().map(|b| b.count).sum();
    let lost = p.lost().unwrap();
    assert!(
        count >= blocks,
        "{count} blocks of the sleeper seen of {blocks} ({blocked} ns), lost {lost:?}: {mine:?}"
    );
    assert!(ns * 100 >= blocked * 98, "{ns} ns of the {blocked} ns the kernel says the sleeps blocked");
    let sleep = mine.iter().max_by_key(|b| b.ns).unwrap();
    assert_eq!(sleep.tgid, pid);
    assert_eq!(sleep.state, 1, "TASK_INTERRUPTIBLE");
    let names = kernel_names(&sleep.kernel);
    assert!(names.iter().any(|n| n.contains("nanosleep")), "{names:?}");
    assert!(!sleep.user.is_empty(), "the user stack of a user thread");
    assert!(mine.iter().all(|b| b.waker.is_none()), "no wakers asked");
    assert_eq!(p.lost().unwrap().blocks, 0);
    // A block whose end the tracepoint did not deliver (a few under load) is timed from the
    // thread's run time: a thread of the fair class loses none.
    assert_eq!(lost.ends_lost, 0);
}

/// With histograms only (the watcher's always-on latency), no block is summed per task and no
/// stack taken, and the blocks are in the histogram of their state: twenty sleeps of 10 ms of
/// this process in `S`'s, each that blocked whole in a bucket from 10 ms, counted slow over
/// 5 ms.
#[test]
fn histograms_only_counts_blocks_per_state_without_stacks() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let opts = OffCpuOptions {
        pid: Some(pid),
        slow_ns: 5_000_000,
        histograms_only: true,
        ..OffCpuOptions::default()
    };
    let Some(mut p) = start(&opts) else { return };
    let sleeper = std::thread::spawn(|| {
        let (before, start) = (ThreadAcct::now(), Instant::now());
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(10));
        }
        before.blocked_until(&ThreadAcct::now(), start.elapsed().as_nanos() as u64)
    });
    // The sleeps that blocked, as the kernel accounted for them (see above).
    let (blocks, blocked) = sleeper.join().unwrap();
    assert!(blocks >= 10, "{blocks} blocks of 20 sleeps of 10 ms");
    let end = Instant::now() + Duration::from_secs(10);
    let mut s = kflame::latency::Histogram::default();
    let mut slow = 0;
    while Instant::now() < end {
        assert!(p.drain().unwrap().is_empty(), "no block summed per task");
        for h in p.histograms().into_iter().filter(|h| h.label == 1) {
            s.add(&h.histogram);
            slow += h.slow;
        }
        if slow >= blocks {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The process's other threads block in S too (the harness, this one joining the sleeper).
    assert!(slow >= blocks, "{slow} slow blocks in S of the sleeper's {blocks}: {s:?}");
    let from_10ms = s.at_least(kflame::latency::slot_lower(kflame::latency::slot_of(10_000_000)));
    assert!(from_10ms + 1 >= blocks, "{from_10ms} blocks from 10 ms of {blocks}: {s:?}");
    assert!(s.sum_ns * 100 >= blocked * 98 && s.max_ns >= 10_000_000, "{s:?} of {blocked} ns blocked");
    let lost = p.lost().unwrap();
    assert_eq!((lost.stacks, lost.histograms), (0, 0), "{lost:?}");
}

#[test]
fn a_blocked_reader_names_the_writer_that_woke_it() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let opts = OffCpuOptions { pid: Some(pid), wakers: true, ..OffCpuOptions::default() };
    let Some(mut p) = start(&opts) else { return };
    let (tx, rx) = mpsc::sync_channel::<u32>(0);
    let (tid_tx, tid_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        tid_tx.send(gettid()).unwrap();
        while rx.recv().is_ok() {}
    });
    let reader_tid = tid_rx.recv().unwrap();
    let writer_tid = gettid();
    for i in 0..30 {
        std::thread::sleep(Duration::from_millis(5));
        tx.send(i).unwrap();
    }
    drop(tx);
    reader.join().unwrap();
    let all = gather(&mut p, Duration::from_secs(10), |b| {
        b.iter().any(|x| x.tid == reader_tid && x.waker.as_ref().is_some_and(|w| w.tid == writer_tid))
    });
    // The reader's waits on the channel (asleep in S, in a futex): the writer wakes those.
    // (It may also block elsewhere, e.g. in D on a page fault, ended by an interrupt.)
    let syms = Kallsyms::read();
    let on_channel = |b: &Blocked| {
        b.tid == reader_tid && b.state == 1 && syms.names(&b.kernel).iter().any(|n| n.contains("futex"))
    };
    let woken: u64 = all
        .iter()
        .filter(|b| on_channel(b) && b.waker.as_ref().is_some_and(|w| w.tid == writer_tid))
        .map(|b| b.ns)
        .sum();
    let total: u64 = all.iter().filter(|b| on_channel(b)).map(|b| b.ns).sum();
    assert!(total > 0, "the reader blocked on the channel");
    let by_waker: Vec<(Option<u32>, u32, u64, u64)> = all
        .iter()
        .filter(|b| b.tid == reader_tid)
        .map(|b| (b.waker.as_ref().map(|w| w.tid), b.state, b.ns, b.count))
        .collect();
    assert!(woken * 10 >= total * 8, "{woken} of {total} ns under the writer {writer_tid}: {by_waker:?}");
    // The writer's wakeups carry its whole context. (Some other block of the reader may have
    // been ended from an interrupt on an idle CPU: its waker is then the idle task, tid 0.)
    let b = all
        .iter()
        .find(|b| b.tid == reader_tid && b.waker.as_ref().is_some_and(|w| w.tid == writer_tid))
        .unwrap();
    let w = b.waker.as_ref().unwrap();
    assert_eq!(w.tgid, pid);
    for b in all.iter().filter(|b| b.tid == reader_tid) {
        if let Some(w) = b.waker.as_ref().filter(|w| w.tid != writer_tid) {
            assert!(w.tid == 0 || w.tgid != 0, "a waker thread has its process: {w:?}");
        }
    }
    assert!(!w.kernel.is_empty(), "the waker's kernel stack");
    assert!(!w.user.is_empty(), "the waker's user stack (sched_waking runs in its context)");
    let names = kernel_names(&w.kernel);
    assert!(names.iter().any(|n| n.contains("wake")), "{names:?}");
}

/// With stacks reused (the watcher's always-on profile), a thread blocking briefly in two
/// places in turn, a 50 us sleep and a read of a pipe another thread writes, has each block
/// under its own place's stack: no more blocks under the sleep than it slept, none under the
/// read more than it read, and every block of the thread counted.
#[test]
fn reused_stacks_keep_each_place_its_blocks() {
    use std::io::{Read, Write};
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let opts = OffCpuOptions { pid: Some(pid), reuse_stacks_under_ns: 1_000_000, ..OffCpuOptions::default() };
    let Some(mut p) = start(&opts) else { return };
    let (mut r, mut w) = std::io::pipe().unwrap();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        for () in go_rx {
            w.write_all(b"x").unwrap();
        }
    });
    const ROUNDS: u64 = 300;
    let subject = std::thread::spawn(move || {
        let (before, start) = (ThreadAcct::now(), Instant::now());
        let mut byte = [0u8; 1];
        for _ in 0..ROUNDS {
            std::thread::sleep(Duration::from_micros(50));
            go_tx.send(()).unwrap();
            r.read_exact(&mut byte).unwrap();
        }
        let acct = before.blocked_until(&ThreadAcct::now(), start.elapsed().as_nanos() as u64);
        (gettid(), acct)
    });
    let (tid, (blocks, _)) = subject.join().unwrap();
    writer.join().unwrap();
    let all = gather(&mut p, Duration::from_secs(10), |b| {
        b.iter().filter(|x| x.tid == tid).map(|x| x.count).sum::<u64>() >= blocks
    });
    let kallsyms = Kallsyms::read();
    let (mut slept, mut read, mut other, mut count) = (0, 0, Vec::new(), 0);
    for b in all.iter().filter(|b| b.tid == tid) {
        count += b.count;
        let names = kallsyms.names(&b.kernel);
        if names.iter().any(|n| n.contains("nanosleep")) {
            slept += b.count;
        } else if names.iter().any(|n| n.contains("pipe_read")) {
            read += b.count;
        } else {
            other.push((names, b.count));
        }
    }
    assert!(count >= blocks, "{count} blocks of the thread seen of the kernel's {blocks}");
    assert!(
        slept <= ROUNDS && read <= ROUNDS,
        "{slept} blocks under the sleep, {read} under the read of {ROUNDS} each"
    );
    assert!(slept >= ROUNDS / 2, "{slept} blocks under the sleep of {ROUNDS}: {other:?}");
    assert_eq!(p.lost().unwrap().blocks, 0);
}

/// The ids of the loaded programs named as ours (`bpftool prog list`); `None` without bpftool.
fn our_programs() -> Option<std::collections::BTreeSet<u32>> {
    let out = std::process::Command::new("bpftool").args(["prog", "list"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter(|l| {
                ["on_switch", "on_switch_state", "on_wakeup", "on_exit", "on_exec"]
                    .iter()
                    .any(|n| l.contains(&format!(" name {n} ")))
            })
            .filter_map(|l| l.split(':').next()?.trim().parse().ok())
            .collect(),
    )
}

#[test]
fn nothing_stays_loaded_after_the_loader_is_dropped() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(before) = our_programs() else { return }; // no bpftool: nothing to look with
    let opts = OffCpuOptions { wakers: true, reuse_stacks_under_ns: 1_000_000, ..OffCpuOptions::default() };
    let Some(p) = start(&opts) else { return };
    let during = our_programs().unwrap_or_default();
    let new: Vec<u32> = during.difference(&before).copied().collect();
    assert!(new.len() >= 4, "the four programs listed while loaded: {during:?} (before: {before:?})");
    drop(p);
    // The kernel frees a program when its last reference goes (bounded wait).
    let end = Instant::now() + Duration::from_secs(10);
    let mut left = new.clone();
    while Instant::now() < end && !left.is_empty() {
        std::thread::sleep(Duration::from_millis(50));
        let now = our_programs().unwrap_or_default();
        left.retain(|id| now.contains(id));
    }
    assert!(left.is_empty(), "still loaded: {left:?} of {new:?}");
}
