//! kflame's BPF programs and their loader: blocked time aggregated in the kernel.
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
//! Nothing is pinned: the programs, links and maps live in this process's file descriptors
//! and go when the [`OffCpu`] is dropped or the process ends, whatever ends it.
//!
//! Addresses are raw: naming them (kallsyms, ELF symbols of the task's mappings) is the
//! caller's, as for every other recorder of kflame.

mod bio;
mod bytes;
mod drain;
mod locks;
mod offcpu;
mod runq;

pub use bio::{Bio, device_name, device_numbers};
pub use drain::{WaitLost, WaitOptions, Waited};
pub use locks::{Locks, lock_kind};
pub use offcpu::{Blocked, Lost, OffCpu, OffCpuOptions, Waker};
pub use runq::{RUNQ_SLOTS, Runq, RunqDrain};

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
