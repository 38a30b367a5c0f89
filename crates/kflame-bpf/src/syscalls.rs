//! The system-call latency program: each call's time from `sys_enter` to `sys_exit` counted
//! in the kernel into a per-CPU histogram per call number, in the buckets of
//! [`kflame::latency`].

use aya::maps::{Array, MapData, RingBuf};
use aya::programs::BtfTracePoint;
use aya::{Btf, GlobalData};
use kflame::latency::Histogram;

use crate::bytes::{comm, u32_at};
use crate::drain::{Loaded, WaitLost, WaitOptions};
use crate::{BpfError, map_err};

/// The compiled system-call latency program.
static SYSCALLS_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/syscalls.bpf.o"));

/// Which calls to count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyscallOptions {
    /// Only this process (`None`: every one).
    pub pid: Option<u32>,
    /// Calls at least this long (ns) are also counted in [`CallLatency::slow`] (`u64::MAX`:
    /// none).
    pub slow_ns: u64,
    /// Leave out this process (the recorder itself: its drains wait for an RCU grace period
    /// in `bpf()`, which would show as slow calls).
    pub skip_pid: Option<u32>,
    /// Thresholds of their own: (call number, ns; `u64::MAX`: never slow). [`waiting_calls`]
    /// are the calls a watcher gives `u64::MAX`: their purpose is to wait.
    pub thresholds: Vec<(u32, u64)>,
    /// Slow calls kept as [`Outlier`]s per CPU and second at most (the rest counted in
    /// [`WaitLost::outliers`]); 0: none kept.
    pub max_outliers: u32,
    /// Blocks inside a call at least this long have their stack kept for its outlier.
    pub wait_min_ns: u64,
}

impl Default for SyscallOptions {
    /// Every call of every process; slow from 10 ms; no outlier kept.
    fn default() -> Self {
        SyscallOptions {
            pid: None,
            slow_ns: 10_000_000,
            skip_pid: None,
            thresholds: Vec::new(),
            max_outliers: 0,
            wait_min_ns: 1_000_000,
        }
    }
}

/// The system calls whose purpose is to wait (for events, time, a child, a signal, a lock
/// word): a slow one is the program waiting as asked, not a latency outlier.
pub const WAITING_CALLS: &[&str] = &[
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "nanosleep",
    "clock_nanosleep",
    "futex",
    "futex_waitv",
    "wait4",
    "waitid",
    "pause",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "io_getevents",
    "io_pgetevents",
    "msgrcv",
    "semtimedop",
    "semop",
];

/// The numbers of [`WAITING_CALLS`] on this architecture.
pub fn waiting_calls() -> Vec<u32> {
    (0..NR_MAX).filter(|&nr| WAITING_CALLS.contains(&syscall_name(nr).as_str())).collect()
}

/// The number of the call named `name` on this architecture.
pub fn syscall_number(name: &str) -> Option<u32> {
    (0..NR_MAX).find(|&nr| syscall_name(nr) == name)
}

/// Call numbers the program's `slow_of` holds thresholds for (`NR_MAX` in the C).
const NR_MAX: u32 = 1024;
/// Frames kept of an outlier's stacks (`WAIT_DEPTH`, `USER_DEPTH` in the C).
const WAIT_DEPTH: usize = 32;
const USER_DEPTH: usize = 64;
/// Bytes of the program's `outlier_t`.
const OUTLIER_LEN: usize = 72 + 8 * (WAIT_DEPTH + USER_DEPTH);

/// One call slower than its threshold, as the kernel kept it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outlier {
    /// When it returned, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// How long it took, ns.
    pub ns: u64,
    /// Its process.
    pub tgid: u32,
    /// Its thread.
    pub tid: u32,
    /// Its number (named by [`syscall_name`]).
    pub nr: u32,
    /// The CPU it returned on.
    pub cpu: u32,
    /// The thread's name.
    pub comm: Vec<u8>,
    /// Its longest block with a stack kept, ns (0: none: it did not block that long, or the
    /// kernel cannot take the stack of a task switched in).
    pub wait_ns: u64,
    /// The kernel stack of that block, leaf first: where it waited.
    pub wait: Vec<u64>,
    /// The caller's user stack, leaf first: where the call was made.
    pub user: Vec<u64>,
}

/// The `n`-byte count of `len` at `at`, as frames of `max` at most (a failed walk: none).
fn frames(data: &[u8], at: usize, len: i64, max: usize) -> Vec<u64> {
    let n = usize::try_from(len).map_or(0, |l| (l / 8).min(max));
    (0..n).map(|i| u64_at(data, at + 8 * i)).filter(|&ip| ip != 0).collect()
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    data.get(at..at + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
}

impl Outlier {
    /// Reads a record of the ring buffer; `None` for one of another size.
    fn read(data: &[u8]) -> Option<Outlier> {
        if data.len() < OUTLIER_LEN {
            return None;
        }
        let i64_at = |at| u64_at(data, at) as i64;
        Some(Outlier {
            end_ns: u64_at(data, 0),
            ns: u64_at(data, 8),
            tgid: u32_at(data, 16),
            tid: u32_at(data, 20),
            nr: u32_at(data, 24),
            cpu: u32_at(data, 28),
            wait_ns: u64_at(data, 32),
            wait: frames(data, 72, i64_at(40), WAIT_DEPTH),
            user: frames(data, 72 + 8 * WAIT_DEPTH, i64_at(48), USER_DEPTH),
            comm: comm(&data[56..72]),
        })
    }
}

/// The calls of one system call over an interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallLatency {
    /// Its number, as the kernel's `sys_enter` gives it (named by [`syscall_name`]).
    pub nr: u32,
    /// Its latencies (the CPUs' summed, the largest of theirs).
    pub histogram: Histogram,
    /// Calls at least [`SyscallOptions::slow_ns`] long.
    pub slow: u64,
}

/// The name of system call `nr` of this architecture (`read`, `clock_nanosleep`, ...),
/// `sys_NNN` when unknown.
pub fn syscall_name(nr: u32) -> String {
    #[cfg(target_arch = "x86_64")]
    if let Some(name) = kflame::collapse::pairing::syscall_name_x86_64(nr) {
        return name.to_string();
    }
    format!("sys_{nr}")
}

/// The system-call latency program, loaded and attached to the `sys_enter`, `sys_exit`,
/// `sched_process_exit` and `sched_process_exec` raw tracepoints.
pub struct SyscallLatency {
    loaded: Loaded,
    /// The slow calls' records (when outliers are kept).
    ring: Option<RingBuf<MapData>>,
    /// Whether the stacks of blocks are taken (the BTF sched_switch program loaded).
    waits: bool,
}

impl std::fmt::Debug for SyscallLatency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyscallLatency")
            .field("outliers", &self.ring.is_some())
            .field("waits", &self.waits)
            .finish()
    }
}

impl SyscallLatency {
    /// Its programs, for a [`crate::budget::Governed`] to attach and detach.
    pub(crate) fn loaded_mut(&mut self) -> &mut Loaded {
        &mut self.loaded
    }

    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &SyscallOptions) -> Result<SyscallLatency, BpfError> {
        let wait = WaitOptions { pid: opts.pid, slow_ns: opts.slow_ns, ..WaitOptions::default() };
        let skip_tgid = opts.skip_pid.unwrap_or(0);
        let extra = vec![
            ("skip_tgid", GlobalData::from(&skip_tgid)),
            ("max_outliers", GlobalData::from(&opts.max_outliers)),
            ("wait_min_ns", GlobalData::from(&opts.wait_min_ns)),
        ];
        // What ends a call or a thread first, the start of a call last: a call whose entry
        // is seen has its end (or its thread's) seen.
        let attach = [
            ("on_process_exit", "sched_process_exit"),
            ("on_process_exec", "sched_process_exec"),
            ("on_sys_exit", "sys_exit"),
            ("on_sys_enter", "sys_enter"),
        ];
        let mut loaded = Loaded::start(SYSCALLS_OBJ, &wait, extra, &attach)?;
        {
            let map = loaded.ebpf.map_mut("slow_of").ok_or_else(|| map_err("slow_of", "missing"))?;
            let mut slow_of: Array<&mut MapData, u64> =
                Array::try_from(map).map_err(|e| map_err("slow_of", e))?;
            for &(nr, ns) in opts.thresholds.iter().filter(|(nr, _)| *nr < NR_MAX) {
                slow_of.set(nr, ns.max(1), 0).map_err(|e| map_err("slow_of", e))?;
            }
        }
        let (ring, waits) = match opts.max_outliers {
            0 => (None, false),
            _ => {
                let map = loaded.ebpf.take_map("outliers").ok_or_else(|| map_err("outliers", "missing"))?;
                let ring = RingBuf::try_from(map).map_err(|e| map_err("outliers", e))?;
                // Where a block waited needs a BTF tracepoint and bpf_get_task_stack (Linux
                // 5.9); without them the outliers come without it.
                let btf_tps =
                    !kflame::record::features::masked(kflame::record::features::Feature::BtfTracepoints);
                let link = Btf::from_sys_fs().ok().filter(|_| btf_tps).and_then(|btf| {
                    let p: &mut BtfTracePoint = loaded.ebpf.program_mut("on_switch")?.try_into().ok()?;
                    p.load("sched_switch", &btf).ok()?;
                    p.attach().ok()
                });
                let waits = link.is_some();
                if let Some(link) = link {
                    loaded.attached_btf("on_switch", link);
                }
                (Some(ring), waits)
            }
        };
        Ok(SyscallLatency { loaded, ring, waits })
    }

    /// Whether outliers carry the stack of their longest block.
    pub fn takes_waits(&self) -> bool {
        self.waits
    }

    /// The slow calls kept since the last call, oldest first (with
    /// [`SyscallOptions::max_outliers`] set).
    pub fn outliers(&mut self) -> Vec<Outlier> {
        let mut out = Vec::new();
        if let Some(ring) = &mut self.ring {
            while let Some(item) = ring.next() {
                if let Some(o) = Outlier::read(&item) {
                    out.push(o);
                }
            }
        }
        out.sort_by_key(|o| o.end_ns);
        out
    }

    /// Reads and clears the calls counted since the last call, one [`CallLatency`] per call
    /// number, by number. Takes an RCU grace period at least (milliseconds).
    pub fn drain(&mut self) -> Result<Vec<CallLatency>, BpfError> {
        self.loaded.flip()?;
        Ok(self
            .loaded
            .take_histograms()
            .into_iter()
            .map(|h| CallLatency { nr: h.label, histogram: h.histogram, slow: h.slow })
            .collect())
    }

    /// What the kernel side could not keep since the start, summed over the CPUs: `starts`,
    /// calls not timed (the map of threads' calls in progress was full); `waits`, calls
    /// timed but not counted (a histogram map full).
    pub fn lost(&self) -> Result<WaitLost, BpfError> {
        self.loaded.lost(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_calls_and_of_unknown_numbers() {
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(syscall_name(0), "read");
            assert_eq!(syscall_name(230), "clock_nanosleep");
        }
        assert_eq!(syscall_name(100_000), "sys_100000");
    }
}
