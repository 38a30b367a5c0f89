//! The lock contention program: waits for kernel locks timed and summed in the kernel.

use std::collections::HashSet;

use crate::BpfError;
use crate::drain::{LabelHistogram, Loaded, WaitLost, WaitOptions, Waited};

/// The compiled lock contention program.
static LOCKS_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/locks.bpf.o"));

/// Bytes of the program's `start_t` (read to keep its stacks when the stack map is trimmed).
const START_LEN: usize = 32;

/// The `contention_begin` flags (the kernel's `include/trace/events/lock.h`).
const LCB_F_SPIN: u32 = 1 << 0;
const LCB_F_READ: u32 = 1 << 1;
const LCB_F_WRITE: u32 = 1 << 2;
const LCB_F_RT: u32 = 1 << 3;
const LCB_F_PERCPU: u32 = 1 << 4;
const LCB_F_MUTEX: u32 = 1 << 5;

/// The kind of lock a [`Waited::on`] of [`Locks`] names, from its `LCB_F_*` flags, with the
/// names `perf lock contention` shows: `spinlock`, `rwlock:R`/`:W` (spinning rwlocks),
/// `rwsem:R`/`:W`, `percpu-rwsem:R`/`:W`, `mutex` (a wait that slept), `mutex-spin` (a mutex
/// wait that only spun: the flags kept are the last of a wait), `rtmutex`, `rwlock-rt:R`/`:W`
/// (rt rwsems and rwlocks), `semaphore` (no flag); `unknown` for any other combination. Bits
/// above the six the kernel defines are ignored.
pub fn lock_kind(flags: u32) -> &'static str {
    const R: u32 = LCB_F_READ;
    const W: u32 = LCB_F_WRITE;
    match flags & 0x3f {
        0 => "semaphore",
        LCB_F_SPIN => "spinlock",
        f if f == LCB_F_SPIN | R => "rwlock:R",
        f if f == LCB_F_SPIN | W => "rwlock:W",
        R => "rwsem:R",
        W => "rwsem:W",
        f if f == LCB_F_PERCPU | R => "percpu-rwsem:R",
        f if f == LCB_F_PERCPU | W => "percpu-rwsem:W",
        LCB_F_MUTEX => "mutex",
        f if f == LCB_F_MUTEX | LCB_F_SPIN => "mutex-spin",
        LCB_F_RT => "rtmutex",
        f if f == LCB_F_RT | R => "rwlock-rt:R",
        f if f == LCB_F_RT | W => "rwlock-rt:W",
        _ => "unknown",
    }
}

/// The lock contention program, loaded and attached to the `contention_begin` and
/// `contention_end` raw tracepoints.
#[derive(Debug)]
pub struct Locks {
    loaded: Loaded,
}

impl Locks {
    /// Its programs, for a [`crate::budget::Governed`] to attach and detach.
    pub(crate) fn loaded_mut(&mut self) -> &mut Loaded {
        &mut self.loaded
    }

    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &WaitOptions) -> Result<Locks, BpfError> {
        // The end first: a wait whose begin is seen has its end seen.
        let attach = [("on_contention_end", "contention_end"), ("on_contention_begin", "contention_begin")];
        Ok(Locks { loaded: Loaded::start(LOCKS_OBJ, opts, Vec::new(), &attach)? })
    }

    /// Reads and clears the waits summed since the last call (`on`: the lock's flags), and the
    /// stacks no wait in progress still refers to. Takes an RCU grace period at least (milliseconds).
    pub fn drain(&mut self) -> Result<Vec<Waited>, BpfError> {
        self.loaded.flip()?;
        let mut held = HashSet::new();
        let found = self.loaded.take_waited(&mut held)?;
        // A `start_t` holds its stack ids at bytes 16 and 20.
        self.loaded.held_by::<4, START_LEN>("start", 16, &mut held)?;
        self.loaded.finish(&found, &held)
    }

    /// The slow waits kept as outliers (with [`WaitOptions::max_outliers`]) read at the
    /// drains since the last call, in the order they were written.
    pub fn outliers(&mut self) -> Vec<crate::WaitOutlier> {
        self.loaded.take_outliers()
    }

    /// The latency histograms (label: the lock's flags, see [`lock_kind`]) taken at the drains since the last call.
    pub fn histograms(&mut self) -> Vec<LabelHistogram> {
        self.loaded.take_histograms()
    }

    /// What the kernel side could not keep since the start, summed over the CPUs.
    pub fn lost(&self) -> Result<WaitLost, BpfError> {
        self.loaded.lost(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_kinds_from_the_flags_each_lock_reports() {
        // What kernel/locking/* pass to trace_contention_begin.
        assert_eq!(lock_kind(LCB_F_SPIN), "spinlock");
        assert_eq!(lock_kind(LCB_F_SPIN | LCB_F_READ), "rwlock:R");
        assert_eq!(lock_kind(LCB_F_SPIN | LCB_F_WRITE), "rwlock:W");
        assert_eq!(lock_kind(LCB_F_READ), "rwsem:R");
        assert_eq!(lock_kind(LCB_F_WRITE), "rwsem:W");
        assert_eq!(lock_kind(LCB_F_PERCPU | LCB_F_READ), "percpu-rwsem:R");
        assert_eq!(lock_kind(LCB_F_PERCPU | LCB_F_WRITE), "percpu-rwsem:W");
        assert_eq!(lock_kind(LCB_F_MUTEX), "mutex");
        assert_eq!(lock_kind(LCB_F_MUTEX | LCB_F_SPIN), "mutex-spin");
        assert_eq!(lock_kind(LCB_F_RT), "rtmutex");
        assert_eq!(lock_kind(LCB_F_RT | LCB_F_READ), "rwlock-rt:R");
        assert_eq!(lock_kind(LCB_F_RT | LCB_F_WRITE), "rwlock-rt:W");
        assert_eq!(lock_kind(0), "semaphore");
        // The raw numbers, as a map holds them.
        assert_eq!(lock_kind(0x3), "rwlock:R");
        assert_eq!(lock_kind(0x21), "mutex-spin");
        assert_eq!(lock_kind(0x14), "percpu-rwsem:W");
    }

    #[test]
    fn other_combinations_are_unknown_and_higher_bits_ignored() {
        assert_eq!(lock_kind(LCB_F_READ | LCB_F_WRITE), "unknown");
        assert_eq!(lock_kind(LCB_F_MUTEX | LCB_F_READ), "unknown");
        assert_eq!(lock_kind(LCB_F_PERCPU), "unknown");
        assert_eq!(lock_kind(LCB_F_RT | LCB_F_SPIN), "unknown");
        assert_eq!(lock_kind(0x40 | LCB_F_WRITE), "rwsem:W");
        assert_eq!(lock_kind(u32::MAX), "unknown");
    }
}
