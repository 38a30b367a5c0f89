//! kflame's BPF programs and their loaders: blocked and waiting time, and system-call
//! latency, aggregated in the kernel.
//!
//! [`OffCpu`] loads `src/bpf/offcpu.bpf.c` (built by `build.rs` with clang, CO-RE against the
//! running kernel's BTF) and attaches it to the `sched_switch` and `sched_waking` raw
//! tracepoints, by name: no tracefs is needed, and no kprobe, fentry or trampoline is ever
//! used. A task switched out leaves its time, state and stacks in a map; switched in again,
//! the time it was away is added in the kernel under (task, state, its kernel and user stack
//! ids, and with wakers on, those of the task that woke it). [`OffCpu::drain`] reads and
//! clears that map once per interval: one record per distinct (task, stacks) with its total
//! ns and count, never one per switch. What the kernel could not keep (a full map, a stack not
//! taken) is counted ([`Lost`]), never silent.
//!
//! Three more programs time waits the same way, each summing them in the kernel under (task,
//! its kernel and user stack ids, what it waited on) and drained into the same record,
//! [`Waited`], with the same [`WaitOptions`] (`pid`, `min_ns`) and [`WaitLost`] counters:
//!
//! - [`Locks`] (`src/bpf/locks.bpf.c`): kernel lock contention, from the `contention_begin`
//!   and `contention_end` raw tracepoints, both in the waiter's context. The waiter's stacks and
//!   time are taken at the first begin (a mutex begins twice, spinning then sleeping; the
//!   flags kept are the latest); `on` is the lock's `LCB_F_*` flags, named by [`lock_kind`]
//!   as `perf lock contention` does (`rwsem:W`, `mutex`, `spinlock`, ...).
//! - [`Runq`] (`src/bpf/runq.bpf.c`): time runnable but not running, from `sched_wakeup`,
//!   `sched_wakeup_new` and `sched_switch` (a task switched out preempted or still runnable
//!   waits from then). Every switch keeps the stacks the task leaving the CPU had, the ones it
//!   will run again with; `on` is the CPU whose run queue it waited on.
//! - [`Bio`] (`src/bpf/bio.bpf.c`): block IO latency from issue to completion, by disk and
//!   by the task and stacks that submitted the IO (`block_bio_queue`, in submit_bio, the
//!   submitter's context), keyed by (whole disk, sector) to `block_rq_issue` and
//!   `block_rq_complete`; a request of several bios counts under the submitter of its first; IOs whose
//!   submitter was not seen count with tid 0 and no stacks. `on` is the disk as
//!   `major << 20 | minor`, named by [`device_name`].
//!
//! [`SyscallLatency`] (`src/bpf/syscalls.bpf.c`) times system calls from the `sys_enter` to
//! the `sys_exit` raw tracepoint of the calling thread and counts each in the kernel, in a
//! per-CPU histogram per call number in the buckets of [`kflame::latency`] (no atomics on the
//! hottest path), with the calls over [`SyscallOptions::slow_ns`] counted apart;
//! [`SyscallLatency::drain`] returns one [`CallLatency`] per number, the CPUs summed, named by
//! [`syscall_name`]. Threads' calls in progress are forgotten at `sched_process_exit` and
//! follow an exec (`sched_process_exec`).
//!
//! Every program also counts each wait in a latency histogram of its label (`src/bpf/hist.h`:
//! a per-CPU histogram under (label, generation) in the buckets of [`kflame::latency`], with
//! the largest wait, the sum and the waits over [`WaitOptions::slow_ns`]); each loader's
//! `histograms()` returns those taken at its drains as [`LabelHistogram`]s (the label: the
//! lock's flags, the disk, the CPU, the task state, the call's number). With
//! [`WaitOptions::histograms_only`] a program takes no stack and sums no wait per task: the
//! histograms are all it counts, what the watcher keeps always on.
//!
//! Each drain flips the generation the kernel counts under, waits for the programs running at
//! the flip to be done (an update of a map of maps, which the kernel returns from after an RCU
//! grace period: exact, where a fixed sleep is not on a host that pauses CPUs), reads and
//! deletes the older generation's keys and frees the stacks nothing refers to any more.
//!
//! Nothing is pinned: the programs, links and maps live in this process's file descriptors
//! and go when the loader ([`OffCpu`], [`Locks`], [`Runq`], [`Bio`], [`SyscallLatency`]) is dropped or the process
//! ends, whatever ends it.
//!
//! Addresses are raw: naming them (kallsyms, ELF symbols of the task's mappings) is the
//! caller's, as for every other recorder of kflame. [`record`] gives each loader to kflame's
//! recorder as an [`Aggregator`](kflame::record::Aggregator), and says what this kernel
//! allows for `kflame record --check`.

mod bio;
pub mod budget;
mod bytes;
mod drain;
mod locks;
mod offcpu;
pub mod record;
mod runq;
mod syscalls;

pub use bio::{Bio, device_name, device_numbers};
pub use drain::{LabelHistogram, WaitLost, WaitOptions, WaitOutlier, Waited};
pub use locks::{Locks, lock_kind};
pub use offcpu::{Blocked, Lost, OffCpu, OffCpuOptions, Waker};
pub use runq::Runq;
pub use syscalls::{
    CallLatency, Outlier, SyscallLatency, SyscallOptions, WAITING_CALLS, syscall_name, syscall_number,
    waiting_calls,
};

/// Why BPF cannot do it.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// The kernel refused to load or attach (no privilege, no BTF, an old kernel, a verifier
    /// refusal): the caller falls back to another path and says why.
    #[error("BPF {what} refused: {detail}")]
    Refused {
        /// What was tried (`load`, `attach sched:sched_switch`, ...).
        what: String,
        /// The kernel's or the loader's answer.
        detail: String,
    },
    /// A map could not be read.
    #[error("BPF map {map}: {detail}")]
    Map {
        /// Its name.
        map: &'static str,
        /// What failed.
        detail: String,
    },
}

pub(crate) fn refused(what: &str, e: impl std::fmt::Display) -> BpfError {
    BpfError::Refused { what: what.to_string(), detail: e.to_string() }
}

pub(crate) fn map_err(map: &'static str, e: impl std::fmt::Display) -> BpfError {
    BpfError::Map { map, detail: e.to_string() }
}
