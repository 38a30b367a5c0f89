//! The system-call latency program: each call's time from `sys_enter` to `sys_exit` counted
//! in the kernel into a per-CPU histogram per call number, in the buckets of
//! [`kflame::latency`].

use aya::GlobalData;
use kflame::latency::Histogram;

use crate::BpfError;
use crate::drain::{Loaded, WaitLost, WaitOptions};

/// The compiled system-call latency program.
static SYSCALLS_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/syscalls.bpf.o"));

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
        let wait = WaitOptions { pid: opts.pid, slow_ns: opts.slow_ns, ..WaitOptions::default() };
        let skip_tgid = opts.skip_pid.unwrap_or(0);
        let extra = vec![("skip_tgid", GlobalData::from(&skip_tgid))];
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
