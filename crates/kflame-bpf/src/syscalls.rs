//! The system-call latency program: each call's time from `sys_enter` to `sys_exit` counted
//! in the kernel into a per-CPU histogram per call number, in the buckets of
//! [`kflame::latency`].

use std::collections::BTreeMap;

use aya::GlobalData;
use kflame::latency::{Histogram, SLOTS};

use crate::BpfError;
use crate::bytes::u32_at;
use crate::drain::{Loaded, WaitLost, WaitOptions};

/// The compiled system-call latency program.
static SYSCALLS_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/syscalls.bpf.o"));

/// Bytes of the program's `call_key` (nr, generation).
const KEY_LEN: usize = 8;

/// The program's `call_hist`: [`SLOTS`] counts, then the largest ns.
type CallHist = [u64; SLOTS + 1];

/// Which calls to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallOptions {
    /// Only this process (`None`: every one).
    pub pid: Option<u32>,
    /// Calls at least this long (ns) are also counted in [`CallLatency::slow`] (`u64::MAX`:
    /// none).
    pub slow_ns: u64,
    /// Leave out this process (the recorder itself: its drains wait for an RCU grace period
    /// in `bpf()`, which would show as slow calls).
    pub skip_pid: Option<u32>,
}

impl Default for SyscallOptions {
    /// Every call of every process; slow from 10 ms.
    fn default() -> Self {
        SyscallOptions { pid: None, slow_ns: 10_000_000, skip_pid: None }
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
#[derive(Debug)]
pub struct SyscallLatency {
    loaded: Loaded,
}

impl SyscallLatency {
    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &SyscallOptions) -> Result<SyscallLatency, BpfError> {
        let wait = WaitOptions { pid: opts.pid, min_ns: 1 };
        let skip_tgid = opts.skip_pid.unwrap_or(0);
        let extra =
            vec![("slow_ns", GlobalData::from(&opts.slow_ns)), ("skip_tgid", GlobalData::from(&skip_tgid))];
        // What ends a call or a thread first, the start of a call last: a call whose entry
        // is seen has its end (or its thread's) seen.
        let attach = [
            ("on_process_exit", "sched_process_exit"),
            ("on_process_exec", "sched_process_exec"),
            ("on_sys_exit", "sys_exit"),
            ("on_sys_enter", "sys_enter"),
        ];
        Ok(SyscallLatency { loaded: Loaded::start(SYSCALLS_OBJ, &wait, extra, &attach)? })
    }

    /// Reads and clears the calls counted since the last call, one [`CallLatency`] per call
    /// number, by number. Takes an RCU grace period at least (milliseconds).
    pub fn drain(&mut self) -> Result<Vec<CallLatency>, BpfError> {
        self.loaded.flip()?;
        let mut by_nr: BTreeMap<u32, CallLatency> = BTreeMap::new();
        for (k, per_cpu) in self.loaded.take_per_cpu::<KEY_LEN, CallHist>("latency", 4)? {
            let mut h = Histogram::default();
            for v in &per_cpu {
                for (a, b) in h.counts.iter_mut().zip(&v[..SLOTS]) {
                    *a += b;
                }
                h.max_ns = h.max_ns.max(v[SLOTS]);
            }
            // Keys of two old generations (a drain that failed half way) add up.
            call(&mut by_nr, u32_at(&k, 0)).histogram.add(&h);
        }
        for (k, per_cpu) in self.loaded.take_per_cpu::<KEY_LEN, u64>("slow", 4)? {
            call(&mut by_nr, u32_at(&k, 0)).slow += per_cpu.iter().sum::<u64>();
        }
        Ok(by_nr.into_values().collect())
    }

    /// What the kernel side could not keep since the start, summed over the CPUs: `starts`,
    /// calls not timed (the map of threads' calls in progress was full); `waits`, calls
    /// timed but not counted (a histogram map full).
    pub fn lost(&self) -> Result<WaitLost, BpfError> {
        self.loaded.lost(0)
    }
}

/// The record of `nr` in `by_nr`, added empty when missing.
fn call(by_nr: &mut BTreeMap<u32, CallLatency>, nr: u32) -> &mut CallLatency {
    by_nr.entry(nr).or_insert_with(|| CallLatency { nr, histogram: Histogram::default(), slow: 0 })
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
