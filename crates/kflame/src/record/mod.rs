//! Live recording through the kernel's own interfaces: `perf_event_open` for CPU samples,
//! tracepoints (with callchains) and context-switch records, tracefs (read-only) for
//! tracepoint ids and layouts, `/proc` for task names, mappings, symbols and kernel stacks,
//! `/dev/kmsg` for the kernel log ([`kmsg`]).
//! This module is the only code of the crate that touches them; its `sys` submodule holds the
//! only `unsafe` code.
//!
//! A [`Recorder`] runs a [`Config`] of one or several modes for a caller that owns the loop:
//! it polls ([`Recorder::poll`], with a timeout), asks for the stacks of the last window
//! whenever it wants ([`Recorder::take_window`]: a [`Window`], per mode a [`Recording`] of
//! named folded stacks with their [`fold::Meta`](crate::fold::Meta) and counters, and the
//! records lost meanwhile), and ends with [`Recorder::finish`] ([`Recordings`]: what no
//! window took, the counters of the whole recording, how a recorded command ended). The
//! perf-based modes share one session: their events are opened together, read from the same
//! ring buffers in one time order, and each sample is handed to the handler of its mode;
//! `/proc` snapshots are taken from the same loop. It never prints and installs no signal
//! handler: the caller stops it through a flag. Every perf event is closed, and a private
//! tracefs mount (made only when none is mounted) removed, whether the recording ends by
//! itself, by the flag, an error or a panic (the recorder is dropped).
//!
//! ```text
//! perf_event_open (per CPU) ─▶ ring buffers ─▶ parse ─▶ order by time ─▶ tasks (comm, maps)
//!                                   └─▶ Dispatch ─▶ one handler per mode ─▶ its Collector
//! each window: Collector ─▶ sym (kallsyms, ELF; names cached) ─▶ fold::StackCounts + events
//!                                                           (blocked: /proc snapshots)
//! ```
//!
//! Per-event records ([`Event`], kept when [`Config::keep_events`] is set) are lent to any
//! [`EventSink`](crate::events::EventSink) by [`Recording::send_events`]. For a recorder
//! that never stops, [`Config::keep_samples`] keeps instead a [`SampleRecord`] per sample
//! (time, CPU, task, cgroup, weight, and its stack as an index into the window's
//! [`Recording::sample_stacks`]); times are `CLOCK_MONOTONIC` and [`Window::clock`] (a
//! [`WallClock`]) turns them into Unix time. Samples then carry their task's cgroup (v2)
//! id where the kernel records it (`PERF_SAMPLE_CGROUP`, Linux 5.7), named by its path in
//! [`Recording::cgroups`].

mod aggregate;
mod blocked;
mod cgroups;
mod check;
mod clock;
mod duty;
pub mod features;
mod handlers;
pub mod json;
pub mod kmsg;
mod order;
mod parse;
pub mod proc_stacks;
mod run;
mod session;
mod stacks;
mod sym;
mod sys;
mod tasks;
mod tracefs;
mod unwind;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use aggregate::{Aggregate, AggregateEvent, AggregateLoss, AggregateTask, Aggregator};
pub use cgroups::{cgroup2_mount, usable_cgroup2};
pub use check::{Capability, check};
pub use clock::{WallClock, monotonic_now_ns};
pub use run::Recorder;
pub use session::Counters;
pub use stacks::{Event, Naming};
pub use sys::one_malloc_arena;
pub use unwind::UnwindStats;

use crate::events::{EventKind, EventSink};
use crate::fold::{Meta, StackCounts};

/// The fuzz target of ring buffer records and DWARF unwinding (see `unwind::fuzz_ring`).
pub(crate) fn fuzz_ring(data: &[u8]) {
    unwind::fuzz_ring(data)
}

/// Waits until `fd` is readable or `timeout` passed (a signal ends the wait early): for
/// followers of other kernel interfaces (`/dev/kmsg`).
fn wait_readable(fd: std::os::fd::RawFd, timeout: Duration) -> std::io::Result<()> {
    let ms = i32::try_from(timeout.as_millis().max(1)).unwrap_or(i32::MAX);
    sys::poll_readable(&[fd], ms)
}

/// What to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `cpu-clock` samples at a frequency (Hz).
    Cpu {
        /// Samples per second per CPU.
        frequency: u32,
    },
    /// Page allocations (`kmem:mm_page_alloc`, `4096 << order` bytes), and with `kmalloc`
    /// also `kmem:kmalloc` (`bytes_alloc`).
    Mem {
        /// Also record `kmem:kmalloc`.
        kmalloc: bool,
    },
    /// Time blocked off-CPU per stack, from a task leaving the CPU asleep to its switch back
    /// in: through perf events, from its `sched:sched_switch` sample (the stack) to its
    /// context-switch record; or summed in the kernel by an [`Aggregator`] (BPF), which
    /// alone can name the wakers.
    OffCpu(OffCpuOptions),
    /// Latency of each system call, from `raw_syscalls:sys_enter`/`sys_exit` pairs.
    Syscalls,
    /// Kernel lock contention (`lock:contention_begin` to `_end`) by the waiter's stack, with
    /// the lock's kind as the leaf frame, in ns waited: summed in the kernel by an
    /// [`Aggregator`] (no perf path).
    Locks,
    /// Time runnable but not running (from a wakeup or a preemption to the switch in), by
    /// task and the stack it ran again with, in ns, with a log2 histogram per CPU: summed in
    /// the kernel by an [`Aggregator`] (no perf path).
    Runq,
    /// Block IO latency (issue to completion) by disk and by the stack that submitted the IO
    /// (taken in the submitter's context), in ns: summed in the kernel by an [`Aggregator`]
    /// (no perf path).
    Bio,
    /// Snapshots of every task's kernel stack from `/proc`, grouped by state: one every
    /// `every`, from the start; without `every`, one snapshot: at once when it is the only
    /// mode, else when recording stops (so a Ctrl-C during a stall catches the stall).
    Blocked {
        /// Interval between snapshots.
        every: Option<Duration>,
    },
}

impl Mode {
    /// A short name (`cpu`, `mem`, `offcpu`, `syscalls`, `locks`, `runq`, `bio`, `blocked`):
    /// for messages and the
    /// names of one output per mode.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Cpu { .. } => "cpu",
            Mode::Mem { .. } => "mem",
            Mode::OffCpu(_) => "offcpu",
            Mode::Syscalls => "syscalls",
            Mode::Locks => "locks",
            Mode::Runq => "runq",
            Mode::Bio => "bio",
            Mode::Blocked { .. } => "blocked",
        }
    }

    /// The kind of the events this mode records.
    pub fn event_kind(&self) -> EventKind {
        match self {
            Mode::Cpu { .. } => EventKind::Sample,
            Mode::Mem { .. } => EventKind::Event,
            Mode::OffCpu(_) => EventKind::OffCpu,
            Mode::Syscalls => EventKind::Syscall,
            Mode::Locks | Mode::Runq | Mode::Bio => EventKind::Wait,
            Mode::Blocked { .. } => EventKind::Snapshot,
        }
    }
}

/// Which blocks an off-CPU recording counts, and whether with the task that woke each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpuOptions {
    /// Fold each block with the stack of the task that woke it, after a `--` frame (bcc
    /// `offwaketime`'s layout): needs an [`Aggregator`].
    pub wakers: bool,
    /// The states whose blocks count (the state the task left the CPU in).
    pub states: TaskStates,
    /// Blocks shorter than this are not counted.
    pub min_block: Duration,
    /// Also count kernel threads waiting for work (asleep in state `S` or `I`: an idle
    /// kworker, ksoftirqd, a journal thread between commits), left out by default: they
    /// wait all the time and bury the waits of the tasks being looked at.
    pub idle_kthreads: bool,
}

impl Default for OffCpuOptions {
    /// Blocks in `S`, `D` or `I` of any length, without wakers, idle kernel threads left out.
    fn default() -> OffCpuOptions {
        OffCpuOptions {
            wakers: false,
            states: TaskStates::SLEEPING,
            min_block: Duration::ZERO,
            idle_kthreads: false,
        }
    }
}

/// A set of task states, with the bits `sched:sched_switch` reports them in (`prev_state`):
/// `S` 0x01, `D` 0x02, `T` 0x04, `t` 0x08, `X` 0x10, `Z` 0x20, `P` 0x40, `I` 0x80.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskStates(pub u16);

impl TaskStates {
    /// The letters of the states, in bit order, as `ps` and the kernel print them.
    const LETTERS: &'static [u8; 8] = b"SDTtXZPI";
    /// `S`, `D` and `I`: a task asleep (perf's off-CPU profile counts the same).
    pub const SLEEPING: TaskStates = TaskStates(0x01 | 0x02 | 0x80);
    /// `S` alone: interruptible sleep.
    pub const INTERRUPTIBLE: TaskStates = TaskStates(0x01);
    /// `I` alone: an idle kernel thread (`TASK_IDLE`).
    pub const IDLE: TaskStates = TaskStates(0x80);

    /// Parses letters (`D`, `SD`, `S,D`; `R` is refused: a preempted task is runnable, not
    /// blocked).
    pub fn parse(text: &str) -> Result<TaskStates, String> {
        let mut bits = 0u16;
        for c in text.bytes().filter(|c| !matches!(c, b',' | b' ')) {
            match Self::LETTERS.iter().position(|&l| l == c) {
                Some(i) => bits |= 1 << i,
                None => {
                    return Err(format!(
                        "unknown task state `{}` in `{text}`: expected letters of S (sleeping), D \
                         (uninterruptible), I (idle kernel thread), T (stopped), t (traced), P (parked)",
                        c as char
                    ));
                }
            }
        }
        if bits == 0 {
            return Err("no task state given: expected letters such as D or SD".into());
        }
        Ok(TaskStates(bits))
    }

    /// True when the state reported as `prev_state` is in the set.
    pub fn contains(self, prev_state: u64) -> bool {
        prev_state & u64::from(self.0) != 0
    }

    /// The letters of the set, in bit order.
    pub fn letters(self) -> String {
        (0..8).filter(|i| self.0 & (1 << i) != 0).map(|i| Self::LETTERS[i] as char).collect()
    }
}

/// Whose activity to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every task on every CPU.
    All,
    /// These processes (and the threads and children they create while recorded). A thread
    /// id stands for its whole process, as with `perf record -p`.
    Pids(Vec<u32>),
    /// These threads only (not the threads or processes they create), as `perf record -t`.
    Threads(Vec<u32>),
    /// Start this command and record until it exits: only it and its children, or every
    /// task when `system_wide` (`perf record -a -- sleep 10`).
    Command {
        /// Program and arguments.
        argv: Vec<OsString>,
        /// Record every task, not only the command's.
        system_wide: bool,
    },
}

/// Which parts of each stack to keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StackParts {
    /// Kernel and user frames.
    #[default]
    Both,
    /// Kernel frames only (CPU samples taken in user mode are dropped by the kernel).
    KernelOnly,
    /// User frames only (CPU samples taken in kernel mode are dropped by the kernel).
    UserOnly,
}

/// How the user part of each stack is found (`--call-graph`, perf's words and meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// The kernel walks the chain of saved frame pointers: cheap, and broken where the
    /// binaries were built without them (`-fomit-frame-pointer`, the default of `-O2` on
    /// x86-64 and of most distributions' packages), which lose the callers of the function
    /// sampled.
    FramePointers,
    /// Each sample carries the user registers and a copy of the top `stack_bytes` of the
    /// user stack, unwound here with the unwind tables of the binaries (`.eh_frame`,
    /// `.debug_frame`): right for every binary, at the cost of the copy (the kernel writes it
    /// into the ring buffer) and of the unwinding. Stacks deeper than the copy end with a
    /// `[stack copy ended]` frame.
    Dwarf {
        /// Bytes copied per sample: a multiple of 8, at most [`CallGraph::MAX_STACK_BYTES`].
        stack_bytes: u32,
    },
}

impl CallGraph {
    /// perf's default copy: 8 KiB.
    pub const DEFAULT_STACK_BYTES: u32 = 8192;
    /// The largest copy the kernel takes (a sample record is at most 64 KiB).
    pub const MAX_STACK_BYTES: u32 = 65528;

    /// DWARF unwinding of perf's default copy size.
    pub const DWARF: CallGraph = CallGraph::Dwarf { stack_bytes: CallGraph::DEFAULT_STACK_BYTES };

    /// Parses perf's `--call-graph` words: `fp`, `dwarf` or `dwarf,SIZE` (bytes, rounded
    /// up to a multiple of 8).
    pub fn parse(s: &str) -> Result<CallGraph, String> {
        let (kind, size) = match s.split_once(',') {
            Some((k, sz)) => (k, Some(sz)),
            None => (s, None),
        };
        match (kind, size) {
            ("fp", None) => Ok(CallGraph::FramePointers),
            ("dwarf", None) => Ok(CallGraph::DWARF),
            ("dwarf", Some(sz)) => {
                let n: u64 = sz.trim().parse().map_err(|_| format!("`{sz}` is not a number of bytes"))?;
                let n = n.div_ceil(8) * 8;
                match u32::try_from(n) {
                    Ok(n) if (8..=CallGraph::MAX_STACK_BYTES).contains(&n) => {
                        Ok(CallGraph::Dwarf { stack_bytes: n })
                    }
                    _ => Err(format!(
                        "the stack copy must be 8 to {} bytes, not {sz}",
                        CallGraph::MAX_STACK_BYTES
                    )),
                }
            }
            ("fp", Some(_)) => Err("fp takes no size".into()),
            _ => Err(format!("`{s}`: expected fp, dwarf or dwarf,SIZE")),
        }
    }
}

/// Record during `active` at the start of every `every` period (costly events on hot paths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DutyCycle {
    /// Period length.
    pub every: Duration,
    /// Recording time at the start of each period.
    pub active: Duration,
}

/// A recording request.
#[derive(Clone, Debug)]
pub struct Config {
    /// What to record: one or several modes, each giving its own [`Recording`]. The
    /// perf-based ones share one session (one set of events per CPU and one ring buffer each,
    /// one time order), so their recordings cover the same interval; at most one of each.
    pub modes: Vec<Mode>,
    /// Whose activity.
    pub target: Target,
    /// Stop after this long (also stops when the command or all target processes exit).
    pub duration: Option<Duration>,
    /// Kernel, user or both parts of the stacks.
    pub parts: StackParts,
    /// Optional duty cycle.
    pub duty: Option<DutyCycle>,
    /// Frame naming.
    pub naming: Naming,
    /// Keep every event (for a JSON event stream), not only the aggregated stacks.
    pub keep_events: bool,
    /// Keep a compact record of every sample or paired event ([`SampleRecord`]: time, CPU,
    /// task, cgroup, weight and the index of its stack in [`Recording::sample_stacks`]),
    /// cheap enough for a recorder that never stops; `Mode::Blocked` snapshots have none.
    pub keep_samples: bool,
    /// Bytes the caches kept from one window to the next may take.
    pub caches: CacheBudget,
    /// How user stacks are found; `None`: DWARF for CPU samples (a copy of
    /// [`CallGraph::DEFAULT_STACK_BYTES`]), frame pointers for tracepoint events (which can
    /// fire a million times a second, each copy 8 KiB). Stacks taken by BPF programs (the
    /// aggregated blocked-time modes) always walk frame pointers.
    pub call_graph: Option<CallGraph>,
}

/// Bytes the caches of a recorder may take, whatever runs on the machine (a recorder that
/// samples programs linked to large libraries keeps their symbol tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheBudget {
    /// Symbol tables of the files sampled, with the names looked up in them (names of
    /// large string tables stay in their files): past it, the least recently used tables
    /// are dropped whole (one table larger than this is kept alone while used).
    pub symbols: usize,
    /// Frame names by address: emptied when they grow past it.
    pub names: usize,
    /// Unwind tables of the binaries sampled (`--call-graph dwarf`): past it, the least
    /// recently used are dropped.
    pub unwind: usize,
}

impl Default for CacheBudget {
    /// 24 MiB of symbol tables, 8 MiB of frame names, 64 MiB of unwind tables.
    fn default() -> CacheBudget {
        CacheBudget {
            symbols: sym::Symbolizer::DEFAULT_BUDGET,
            names: stacks::NameCache::BUDGET,
            unwind: unwind::UserUnwinder::BUDGET,
        }
    }
}

impl Default for Config {
    /// CPU samples at 99 Hz of every task, kernel and user frames, named as
    /// `stackcollapse-perf.pl` names them, until stopped; nothing but the aggregated stacks
    /// kept.
    fn default() -> Config {
        Config {
            modes: vec![Mode::Cpu { frequency: 99 }],
            target: Target::All,
            duration: None,
            parts: StackParts::Both,
            duty: None,
            naming: Naming::default(),
            keep_events: false,
            keep_samples: false,
            caches: CacheBudget::default(),
            call_graph: None,
        }
    }
}

/// One sample or paired event of a window, as kept by [`Config::keep_samples`]: plain
/// numbers (48 bytes), its stack by index into [`Recording::sample_stacks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRecord {
    /// When it happened (a paired event: when it began), `CLOCK_MONOTONIC` nanoseconds;
    /// [`Window::clock`] converts it to wall-clock time.
    pub ts: u64,
    /// The CPU.
    pub cpu: u32,
    /// Process id (`u32::MAX`: a task the kernel could no longer name).
    pub pid: u32,
    /// Thread id (likewise).
    pub tid: u32,
    /// The task's cgroup id (cgroup v2: the inode number of its directory), when the kernel
    /// records it (`PERF_SAMPLE_CGROUP`); its path is in [`Recording::cgroups`].
    pub cgroup: Option<u64>,
    /// The weight it added to its stack (1 for a CPU sample, bytes, nanoseconds).
    pub weight: u64,
    /// Index of its folded stack in [`Recording::sample_stacks`].
    pub stack: u32,
}

const _: () = assert!(std::mem::size_of::<SampleRecord>() == 48);

/// Counters of one mode's recording (of the whole recording in [`Recordings`], of the
/// window in a [`Window`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Samples or paired events that were added to the stacks (tasks for `Blocked`, one per
    /// task and snapshot).
    pub samples: u64,
    /// Events that could not be paired (an exit without its entry, a task still blocked or
    /// inside a system call when recording stopped).
    pub unpaired: u64,
    /// Tasks whose stack could not be read (`Blocked`: EPERM or exited while reading).
    pub unreadable_tasks: u64,
    /// Snapshots taken (`Blocked`).
    pub snapshots: u64,
    /// In a window: paired events begun and not yet ended when the window was taken (a task
    /// asleep, a thread inside a system call); each is added to the window where it ends. In
    /// [`Recordings`] always 0: those still open when recording stopped are `unpaired`.
    pub open: u64,
    /// Waits an [`Aggregator`] could not count (its map in the kernel was full).
    pub lost: u64,
    /// Seconds an [`Aggregator`]'s programs were detached to keep within a budget of CPU.
    pub detached_secs: u64,
}

impl Stats {
    /// The counters since `then` (both totals): what happened in between; `open` is now's.
    fn since(&self, then: &Stats) -> Stats {
        let failed = |s: &Stats| s.unpaired.saturating_sub(s.open);
        Stats {
            samples: self.samples.saturating_sub(then.samples),
            unpaired: failed(self).saturating_sub(failed(then)),
            unreadable_tasks: self.unreadable_tasks.saturating_sub(then.unreadable_tasks),
            snapshots: self.snapshots.saturating_sub(then.snapshots),
            open: self.open,
            lost: self.lost.saturating_sub(then.lost),
            detached_secs: self.detached_secs.saturating_sub(then.detached_secs),
        }
    }
}

/// The caches a [`Recorder`] keeps from one window to the next ([`Recorder::caches`]),
/// bounded for recordings that run for days: tasks are forgotten a window after they exit,
/// a file's symbols after [`Recorder::FILE_IDLE_WINDOWS`] windows unused (or sooner, least
/// recently used first, to keep them within [`CacheBudget::symbols`] bytes), and a cache
/// that still outgrows its bound (exits lost with a full ring buffer; frame names past
/// [`CacheBudget::names`] bytes) starts over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caches {
    /// Thread names kept.
    pub threads: usize,
    /// Process address spaces (mappings of one process generation) kept.
    pub address_spaces: usize,
    /// Files whose symbols are kept.
    pub files: usize,
    /// Frame names kept (by address).
    pub names: usize,
    /// Cgroup ids kept (named, or known to be missing).
    pub cgroups: usize,
    /// Walks of the cgroup2 mount to name cgroup ids (the others were named by the
    /// kernel's `PERF_RECORD_CGROUP`).
    pub cgroup_walks: u64,
    /// Thread names forgotten since recording started (the threads exited).
    pub forgotten_threads: u64,
    /// Address spaces forgotten (their process exited: its generations before the exit,
    /// those before an `execve` too).
    pub forgotten_address_spaces: u64,
    /// Files forgotten (unused for a while, or to keep their tables within
    /// [`CacheBudget::symbols`]).
    pub forgotten_files: u64,
    /// Bytes taken by the symbol tables of files and the names looked up in them.
    pub symbol_bytes: usize,
    /// Bytes taken by the frame names kept.
    pub name_bytes: usize,
    /// Names that could not be read from their file (truncated or rewritten since its
    /// symbols were read; the frames are named `[file]`, the table read again).
    pub unreadable_names: u64,
    /// Times a cache was emptied for outgrowing its bound.
    pub resets: u64,
    /// The user stacks unwound from stack copies (`--call-graph dwarf`) and their tables.
    pub unwind: UnwindStats,
    /// Times `/proc/kallsyms` was read again: kernel addresses had gone unnamed (a module
    /// loaded, a BPF program attached); at most once every 60 windows.
    pub kallsyms_reloads: u64,
}

/// Why a recording ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The caller's stop flag was set, or the caller stopped it ([`Recorder::stop`]).
    Stopped,
    /// [`Config::duration`] passed.
    Duration,
    /// The command exited ([`Recordings::command`] says how).
    CommandExited,
    /// Every target process or thread exited.
    TargetsExited,
    /// The one snapshot of `Mode::Blocked` alone was taken.
    Snapshot,
}

/// What [`Recorder::poll`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Still recording.
    Running,
    /// The recording has ended, for this reason.
    Ended(End),
}

/// The stacks of one window of a recording ([`Recorder::take_window`]).
#[derive(Debug)]
pub struct Window {
    /// When the window began, since recording started (the end of the previous window).
    pub start: Duration,
    /// When it ended, since recording started.
    pub end: Duration,
    /// One per mode of [`Config::modes`], in the same order: the stacks added in this window
    /// (already named), its counters, and its events when [`Config::keep_events`] is set.
    pub kinds: Vec<Recording>,
    /// Records read, lost by the kernel (ring buffer full) and undecodable in this window.
    pub ring: Counters,
    /// Wall-clock offset read when the window was taken: converts the `CLOCK_MONOTONIC`
    /// time stamps of its samples and events to Unix time.
    pub clock: WallClock,
}

/// The end of a recording ([`Recorder::finish`]): one [`Recording`] per mode, and what
/// concerns them all.
#[derive(Debug, Default)]
pub struct Recordings {
    /// One per mode of [`Config::modes`], in the same order.
    pub kinds: Vec<Recording>,
    /// Ring-buffer counters (records read, lost, malformed) of the session the perf-based
    /// modes shared.
    pub ring: Counters,
    /// Wall time spent recording.
    pub elapsed: Duration,
    /// Remarks on the whole recording (hidden kernel symbols, a thread id taken for its
    /// process, ...); each recording has its own too.
    pub notes: Vec<String>,
    /// How the recorded command ended, if one was started.
    pub command: Option<CommandEnd>,
    /// Wall-clock offset read when the recording finished: converts the `CLOCK_MONOTONIC`
    /// time stamps of the samples and events above to Unix time.
    pub clock: WallClock,
}

/// What one mode recorded.
#[derive(Debug)]
pub struct Recording {
    /// The mode.
    pub mode: Mode,
    /// Folded stacks.
    pub stacks: StackCounts,
    /// Unit and event of the weights.
    pub meta: Meta,
    /// Every event, when [`Config::keep_events`] was set.
    pub events: Vec<Event>,
    /// Every sample, in the order they were added, when [`Config::keep_samples`] was set.
    pub samples: Vec<SampleRecord>,
    /// The folded stacks (without count) of [`Recording::samples`], each once, indexed by
    /// [`SampleRecord::stack`]; the same lines as the keys of [`Recording::stacks`].
    pub sample_stacks: Vec<Box<[u8]>>,
    /// The path (relative to the cgroup v2 root, `/system.slice/ssh.service`) of each
    /// cgroup id of [`Recording::samples`] that could be named; shared with later windows.
    pub cgroups: BTreeMap<u64, Arc<str>>,
    /// Counters.
    pub stats: Stats,
    /// Remarks for the user on this mode's events (how they were paired, ...).
    pub notes: Vec<String>,
    /// Latency histograms per label of the aggregated modes (per disk, CPU, lock kind, task
    /// state), summed over the recording's windows.
    pub histograms: Vec<crate::latency::LatencyReading>,
}

impl Recording {
    /// Lends every kept event to `sink`, in the order they were recorded, named by the
    /// recording's event ([`Meta::event`]). Does not call [`EventSink::finish`].
    pub fn send_events(&self, sink: &mut dyn EventSink) {
        let name = self.meta.event.as_deref().unwrap_or("");
        for e in &self.events {
            sink.event(&e.record(name));
        }
    }

    /// The cgroup path of a sample, if it has a cgroup that could be named.
    pub fn cgroup_path(&self, sample: &SampleRecord) -> Option<&str> {
        self.cgroups.get(&sample.cgroup?).map(|p| &**p)
    }

    /// The folded stack of a sample (without count).
    pub fn sample_stack(&self, sample: &SampleRecord) -> &[u8] {
        self.sample_stacks.get(sample.stack as usize).map_or(&[], |s| &**s)
    }

    /// Puts a later window of the same mode after this one, so that a long recording keeps
    /// only named stacks between windows: the stacks' weights are summed, the events and the
    /// samples appended in their order (each folded stack of [`Recording::sample_stacks`]
    /// still once), the cgroup names joined. The counters and the notes stay this
    /// recording's: a caller that joins windows knows which totals it wants.
    pub fn append(&mut self, later: Recording) {
        debug_assert_eq!(self.mode, later.mode);
        self.stacks.merge(later.stacks);
        if self.events.is_empty() {
            self.events = later.events;
        } else {
            self.events.extend(later.events);
        }
        if !later.samples.is_empty() {
            // The later window's stacks are each once in it: each is one of ours, or new.
            let ours: rustc_hash::FxHashMap<&[u8], u32> =
                (0u32..).zip(&self.sample_stacks).map(|(i, s)| (&**s, i)).collect();
            let mut fresh = Vec::new();
            let next = self.sample_stacks.len();
            let renumber: Vec<u32> = later
                .sample_stacks
                .into_iter()
                .map(|s| {
                    ours.get(&*s).copied().unwrap_or_else(|| {
                        fresh.push(s);
                        u32::try_from(next + fresh.len() - 1).unwrap_or(u32::MAX)
                    })
                })
                .collect();
            drop(ours);
            self.sample_stacks.extend(fresh);
            self.samples.extend(later.samples.into_iter().map(|mut s| {
                s.stack = renumber.get(s.stack as usize).copied().unwrap_or(u32::MAX);
                s
            }));
        }
        self.cgroups.extend(later.cgroups);
        crate::latency::add_readings(&mut self.histograms, later.histograms);
    }

    /// An empty recording of `mode`.
    pub fn new(mode: Mode, meta: Meta) -> Recording {
        Recording {
            mode,
            stacks: StackCounts::new(),
            meta,
            events: Vec::new(),
            samples: Vec::new(),
            sample_stacks: Vec::new(),
            cgroups: BTreeMap::new(),
            stats: Stats::default(),
            notes: Vec::new(),
            histograms: Vec::new(),
        }
    }
}

/// How a recorded command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandEnd {
    /// It exited by itself with this status.
    Exited(i32),
    /// This signal killed it (not the recorder).
    Killed(i32),
    /// It was still running when recording stopped (duration over, SIGINT or SIGTERM): the
    /// recorder stopped it with SIGTERM. A command killed by SIGINT or SIGTERM while the
    /// recorder itself was told to stop (Ctrl-C reaches both) counts as stopped too.
    Stopped,
}

/// Where a recording stands ([`Recorder::progress`]), for a progress line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// Time since recording started.
    pub elapsed: Duration,
    /// Samples or events so far.
    pub samples: u64,
    /// Records lost so far.
    pub lost: u64,
    /// False while a duty cycle pauses recording.
    pub active: bool,
}

/// Why recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// `perf_event_open` refused an event.
    #[error("cannot open perf event {event} on CPU {cpu}{}", open_hint(source))]
    Open {
        /// The event.
        event: String,
        /// The CPU.
        cpu: u32,
        /// The kernel's answer.
        source: std::io::Error,
    },
    /// tracefs could not be found or mounted.
    #[error(
        "cannot use tracefs at {} (reading tracepoint formats needs root, and a kernel with tracefs, 4.1, \
         or debugfs's tracing directory)",
        path.display()
    )]
    Tracefs {
        /// Where it was looked for or mounted.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A tracepoint is missing or has an unexpected layout.
    #[error("tracepoint {name}: {message}")]
    Tracepoint {
        /// `group:name`.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The command could not be started.
    #[error("cannot start {command}")]
    Spawn {
        /// The program.
        command: String,
        /// The error.
        source: std::io::Error,
    },
    /// A target process does not exist.
    #[error("no process with pid {0}")]
    NoSuchProcess(u32),
    /// A target thread does not exist.
    #[error("no thread with tid {0}")]
    NoSuchThread(u32),
    /// Another system-call failure.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The configuration cannot be recorded.
    #[error("{0}")]
    Unsupported(String),
}

fn open_hint(e: &std::io::Error) -> &'static str {
    match features::errno_of(e) {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            " (needs root, CAP_PERFMON, or kernel.perf_event_paranoid <= 1 for system-wide events)"
        }
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
            " (this kernel or machine does not provide this event; see `kflame record --check`)"
        }
        Some(libc::EMFILE) => " (too many open files: raise `ulimit -n`)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window counts what happened in it: samples added and pairings that failed since the
    /// previous window; events still open are not failures until recording stops.
    #[test]
    fn window_counters_are_differences_of_totals() {
        let then = Stats {
            samples: 10,
            unpaired: 7,
            open: 5,
            snapshots: 1,
            unreadable_tasks: 2,
            lost: 3,
            detached_secs: 0,
        };
        // Three of the five open ones ended (added), one more failed, two new ones opened.
        let now = Stats {
            samples: 13,
            unpaired: 7,
            open: 4,
            snapshots: 3,
            unreadable_tasks: 2,
            lost: 5,
            detached_secs: 4,
        };
        let w = now.since(&then);
        assert_eq!(
            w,
            Stats {
                samples: 3,
                unpaired: 1,
                open: 4,
                snapshots: 2,
                unreadable_tasks: 0,
                lost: 2,
                detached_secs: 4
            }
        );
        assert_eq!(now.since(&now), Stats { open: 4, ..Stats::default() });
    }

    fn window(samples: &[(u64, &str)]) -> Recording {
        let mut r = Recording::new(
            Mode::OffCpu(OffCpuOptions::default()),
            Meta::with_unit(crate::fold::Unit::Nanoseconds),
        );
        for &(ts, stack) in samples {
            let index = match r.sample_stacks.iter().position(|s| &**s == stack.as_bytes()) {
                Some(i) => i,
                None => {
                    r.sample_stacks.push(stack.as_bytes().into());
                    r.sample_stacks.len() - 1
                }
            };
            let stack_index = u32::try_from(index).expect("few stacks");
            r.samples.push(SampleRecord {
                ts,
                cpu: 0,
                pid: 1,
                tid: 1,
                cgroup: None,
                weight: 10,
                stack: stack_index,
            });
            r.stacks.add(stack.as_bytes(), 10.into());
        }
        r
    }

    /// Joined windows are one recording: weights summed, samples in order, each folded stack
    /// once and every sample still pointing at its own.
    #[test]
    fn appended_windows_keep_every_sample_on_its_stack() {
        let mut whole = window(&[(1, "a;b"), (2, "a;c"), (3, "a;b")]);
        whole.append(window(&[(4, "a;d"), (5, "a;b"), (6, "a;d")]));
        whole.append(window(&[]));
        whole.append(window(&[(7, "a;c")]));
        let named: Vec<(u64, &[u8])> = whole.samples.iter().map(|s| (s.ts, whole.sample_stack(s))).collect();
        let expected: Vec<(u64, &[u8])> =
            vec![(1, b"a;b"), (2, b"a;c"), (3, b"a;b"), (4, b"a;d"), (5, b"a;b"), (6, b"a;d"), (7, b"a;c")];
        assert_eq!(named, expected);
        assert_eq!(whole.sample_stacks.len(), 3, "each stack once");
        assert_eq!(whole.stacks.get(b"a;b"), Some(30.into()));
        assert_eq!(whole.stacks.get(b"a;c"), Some(20.into()));
        assert_eq!(whole.stacks.total(), 70.into());
    }
}
