//! Live tests' helpers (they may read the host): kernel symbols, the calling thread's id, the
//! check that a loader leaves nothing loaded.

#![allow(dead_code)] // each test file uses some

use std::time::{Duration, Instant};

/// The kernel's symbols from /proc/kallsyms (a live test may read the host), read once.
pub(crate) struct Kallsyms(Vec<(u64, String)>);

impl Kallsyms {
    pub(crate) fn read() -> Kallsyms {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let mut syms: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let a = u64::from_str_radix(it.next()?, 16).ok()?;
                let _kind = it.next()?;
                Some((a, it.next()?.to_string()))
            })
            .filter(|(a, _)| *a != 0)
            .collect();
        syms.sort_unstable();
        Kallsyms(syms)
    }

    /// The symbol of each address.
    pub(crate) fn names(&self, addrs: &[u64]) -> Vec<String> {
        addrs
            .iter()
            .map(|&a| match self.0.partition_point(|s| s.0 <= a) {
                0 => format!("{a:#x}"),
                i => self.0[i - 1].1.clone(),
            })
            .collect()
    }
}

pub(crate) fn gettid() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// The calling thread's accounting by the kernel: ns on the CPU (its CPU-time clock, which
/// reads the running slice too), ns runnable on a run queue (schedstat's run_delay) and
/// voluntary context switches (blocks) so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ThreadAcct {
    pub(crate) on_cpu: u64,
    pub(crate) runnable: u64,
    pub(crate) blocks: u64,
}

impl ThreadAcct {
    #[allow(unsafe_code)] // the thread's CPU-time clock, which std does not read
    pub(crate) fn now() -> ThreadAcct {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        let on_cpu = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        let sched = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let runnable = sched.split_whitespace().nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
        let blocks = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|x| x.trim().parse().ok())
            .unwrap_or(0);
        ThreadAcct { on_cpu, runnable, blocks }
    }

    /// Blocks and ns blocked (neither on the CPU nor runnable) between `self` and `later`,
    /// `wall` ns apart.
    pub(crate) fn blocked_until(&self, later: &ThreadAcct, wall: u64) -> (u64, u64) {
        let busy = (later.on_cpu - self.on_cpu) + (later.runnable - self.runnable);
        (later.blocks - self.blocks, wall.saturating_sub(busy))
    }
}

/// The ids of the programs this process holds (through their descriptors or their links'),
/// from /proc/self/fdinfo.
pub(crate) fn held_programs() -> std::collections::BTreeSet<u32> {
    let mut ids = std::collections::BTreeSet::new();
    for e in std::fs::read_dir("/proc/self/fdinfo").unwrap().filter_map(Result::ok) {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        ids.extend(text.lines().filter_map(|l| l.strip_prefix("prog_id:")?.trim().parse::<u32>().ok()));
    }
    ids
}

/// The ids of the loaded programs (`bpftool prog list`); `None` without bpftool.
pub(crate) fn listed_programs() -> Option<std::collections::BTreeSet<u32>> {
    let out = std::process::Command::new("bpftool").args(["prog", "list"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter(|l| !l.starts_with(char::is_whitespace))
            .filter_map(|l| l.split(':').next()?.trim().parse().ok())
            .collect(),
    )
}

/// Loads with `start`, checks its `programs` are loaded, drops it, and waits (bounded) until
/// `bpftool` lists none of them.
pub(crate) fn leaves_nothing<T>(start: impl FnOnce() -> T, programs: usize) {
    let Some(_) = listed_programs() else { return }; // no bpftool: nothing to look with
    let before = held_programs();
    assert!(before.is_empty(), "programs held before the start: {before:?}");
    let p = start();
    let ours = held_programs();
    assert_eq!(ours.len(), programs, "programs held while loaded: {ours:?}");
    let listed = listed_programs().unwrap_or_default();
    assert!(ours.is_subset(&listed), "{ours:?} not all listed: {listed:?}");
    drop(p);
    assert!(held_programs().is_empty(), "descriptors left after the drop");
    // The kernel frees a program when its last reference goes.
    let end = Instant::now() + Duration::from_secs(10);
    let mut left = ours.clone();
    while Instant::now() < end && !left.is_empty() {
        std::thread::sleep(Duration::from_millis(50));
        let now = listed_programs().unwrap_or_default();
        left.retain(|id| now.contains(id));
    }
    assert!(left.is_empty(), "still loaded: {left:?} of {ours:?}");
}
