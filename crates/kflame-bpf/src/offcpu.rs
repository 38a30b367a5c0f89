//! The off-CPU program: blocks timed and summed in the kernel, with wakers.

use std::collections::HashSet;

use aya::GlobalData;

use crate::bytes::{comm, i32_at, u32_at};
use crate::drain::{LabelHistogram, Loaded};
use crate::{BpfError, WaitOptions};

/// The compiled off-CPU program.
static OFFCPU_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/offcpu.bpf.o"));

/// Bytes of the program's `key_t`.
const KEY_LEN: usize = 72;
/// Bytes of its `start_t` and `waker_t` (read to keep their stacks when the stack map is
/// trimmed).
const START_LEN: usize = 56; // ts, tgid, kstack, ustack, state, comm, last_ns, place
const WAKER_LEN: usize = 32;

/// Which blocks to count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpuOptions {
    /// Blocks shorter than this are not counted (ns).
    pub min_block_ns: u64,
    /// Blocks longer than this are not counted (ns).
    pub max_block_ns: u64,
    /// States whose blocks count: bit `s` for the state the kernel reports as index `s`
    /// (`__task_state_index`: 1 `S`, 2 `D`, 3 `T`, 4 `t`, 5 `X`, 6 `Z`, 7 `P`, 8 `I`, the
    /// `prev_state` bit of `sched_switch` shifted by one); bit 0: preempted while runnable
    /// (run-queue time, not a block).
    pub states: u64,
    /// Also count kernel threads waiting for work (asleep in `S` or `I`).
    pub idle_kthreads: bool,
    /// Keep the stacks of the task that woke each blocked one.
    pub wakers: bool,
    /// Only this process (`None`: every one).
    pub pid: Option<u32>,
    /// Blocks at least this long (ns) are counted as slow in their histogram (`u64::MAX`:
    /// none).
    pub slow_ns: u64,
    /// Count the latency histograms only: no stack taken, no block summed per task
    /// ([`OffCpu::drain`] then returns nothing).
    pub histograms_only: bool,
    /// Keep each uninterruptible block (`D`) at least `slow_ns` long as an outlier
    /// ([`OffCpu::outliers`]), at most this many per CPU and second (0: none). Sleeps in `S`
    /// are left out: mostly tasks waiting for work (poll, futex, nanosleep).
    pub max_outliers: u32,
    /// Task states (as [`Blocked::state`]) with a threshold of their own (ns).
    pub slow_labels: Vec<(u32, u64)>,
    /// A block of a user task whose last block was shorter than this (ns), in the same
    /// state and program, entering the kernel from the same place (system call, user
    /// instruction and stack pointer), is counted under that block's stacks instead of walking
    /// them again (one block in 64, drawn at random, walks them anyway); 0: every block walks
    /// its stacks. Walking them costs microseconds a switch: the watcher's always-on profile
    /// would otherwise cost a task switching at its highest rate a quarter of a CPU.
    pub reuse_stacks_under_ns: u64,
}

impl OffCpuOptions {
    /// `S`, `D` and `I` (states 1, 2 and 8).
    pub const SLEEPING: u64 = (1 << 1) | (1 << 2) | (1 << 8);
}

impl Default for OffCpuOptions {
    /// Every block in `S`, `D` or `I` of every task but kernel threads waiting for work,
    /// without wakers.
    fn default() -> Self {
        OffCpuOptions {
            min_block_ns: 1,
            max_block_ns: u64::MAX,
            states: Self::SLEEPING,
            idle_kthreads: false,
            wakers: false,
            pid: None,
            slow_ns: u64::MAX,
            histograms_only: false,
            max_outliers: 0,
            slow_labels: Vec::new(),
            reuse_stacks_under_ns: 0,
        }
    }
}

/// The task that woke a blocked one, and where it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waker {
    /// Its process.
    pub tgid: u32,
    /// Its thread.
    pub tid: u32,
    /// Its name.
    pub comm: Vec<u8>,
    /// Its kernel stack, leaf first (empty when not taken).
    pub kernel: Vec<u64>,
    /// Its user stack, leaf first (empty for a kernel thread or when not taken).
    pub user: Vec<u64>,
}

/// Time one task spent blocked with one pair of stacks over an interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// Its process.
    pub tgid: u32,
    /// Its thread.
    pub tid: u32,
    /// Its name when it was switched out.
    pub comm: Vec<u8>,
    /// The state it was switched out in (see [`OffCpuOptions::states`]).
    pub state: u32,
    /// Its kernel stack at the switch, leaf first (empty when not taken).
    pub kernel: Vec<u64>,
    /// Its user stack at the switch, leaf first (empty for a kernel thread or when not taken).
    pub user: Vec<u64>,
    /// Who woke it (with wakers on, when a wakeup was seen).
    pub waker: Option<Waker>,
    /// Time blocked, ns.
    pub ns: u64,
    /// Blocks.
    pub count: u64,
}

/// What the kernel side could not keep, since the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lost {
    /// Blocks not counted: the aggregation map was full.
    pub blocks: u64,
    /// Stacks not taken (the stack map full, or a walk that failed).
    pub stacks: u64,
    /// Switch-outs not timed: the map of blocked tasks was full.
    pub starts: u64,
    /// Blocks not in a latency histogram: the histogram map was full.
    pub histograms: u64,
    /// Slow blocks not kept as outliers: over the bound per second, or their ring buffer full.
    pub outliers: u64,
    /// Blocks whose end the tracepoint did not deliver (a task leaving the CPU again without
    /// a switch to it seen), timed from the task's run time since it came back: counted.
    pub ends_timed: u64,
    /// Blocks whose end was not delivered and could not be timed so (a task not of the fair
    /// class): not counted.
    pub ends_lost: u64,
}

/// The off-CPU program, loaded and attached.
#[derive(Debug)]
pub struct OffCpu {
    loaded: Loaded,
}

impl OffCpu {
    /// Its programs, for a [`crate::budget::Governed`] to attach and detach.
    pub(crate) fn loaded_mut(&mut self) -> &mut Loaded {
        &mut self.loaded
    }

    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &OffCpuOptions) -> Result<OffCpu, BpfError> {
        let with_wakers = u32::from(opts.wakers);
        let idle_kthreads = u32::from(opts.idle_kthreads);
        let common = WaitOptions {
            pid: opts.pid,
            min_ns: opts.min_block_ns,
            slow_ns: opts.slow_ns,
            histograms_only: opts.histograms_only,
            max_outliers: opts.max_outliers,
            slow_labels: opts.slow_labels.clone(),
            reuse_stacks_under_ns: opts.reuse_stacks_under_ns,
            stack_walks_per_sec: 0,
        };
        let extra = || {
            vec![
                ("max_ns", GlobalData::from(&opts.max_block_ns)),
                ("state_mask", GlobalData::from(&opts.states)),
                ("with_wakers", GlobalData::from(&with_wakers)),
                ("idle_kthreads", GlobalData::from(&idle_kthreads)),
                ("reuse_stacks_under_ns", GlobalData::from(&opts.reuse_stacks_under_ns)),
            ]
        };
        let attach = |switch| {
            let mut attach = vec![(switch, "sched_switch")];
            if opts.reuse_stacks_under_ns > 0 {
                // Entries are kept while tasks run: a task leaving or changing program drops its.
                attach.push(("on_exit", "sched_process_exit"));
                attach.push(("on_exec", "sched_process_exec"));
            }
            if opts.wakers {
                attach.push(("on_wakeup", "sched_waking"));
            }
            attach
        };
        // The state a task blocked in, as the tracepoint passes it (Linux 5.18), or as read
        // from the task at the switch on older kernels, which refuse the first program's
        // attachment (see offcpu.bpf.c).
        let loaded = Loaded::start(OFFCPU_OBJ, &common, extra(), &attach("on_switch_state"))
            .or_else(|_| Loaded::start(OFFCPU_OBJ, &common, extra(), &attach("on_switch")))?;
        Ok(OffCpu { loaded })
    }

    /// Reads and clears what was aggregated since the last call, and the stacks no block in
    /// progress still refers to. Takes an RCU grace period at least (milliseconds: see the
    /// generation below).
    pub fn drain(&mut self) -> Result<Vec<Blocked>, BpfError> {
        // The kernel counts under a generation: flipped, the earlier ones are no longer
        // written once the programs running at the flip are done (waited for: an RCU grace
        // period), and their keys are read and deleted without losing an increment.
        self.loaded.flip()?;
        // Stack ids the maps still refer to after this drain: keys of the new generation (a
        // `key_t` holds its task's stack ids at bytes 8 and 12, its waker's at 28 and 32),
        // tasks switched out (a `start_t` at 12 and 16) and their wakers (a `waker_t` at 8
        // and 12).
        let mut held = HashSet::new();
        let found = self.loaded.take_keys::<KEY_LEN>("blocked", 36, &[8, 12, 28, 32], &mut held)?;
        self.loaded.held_by::<4, START_LEN>("start", 12, &mut held)?;
        self.loaded.held_by::<4, WAKER_LEN>("wakers", 8, &mut held)?;
        self.loaded.with_stacks(&held, |frames_of| {
            found
                .iter()
                .map(|(k, v)| {
                    let waker_tid = u32_at(k, 24);
                    let waker_kstack = i32_at(k, 28);
                    let waker = (waker_tid != 0 || waker_kstack >= 0).then(|| Waker {
                        tgid: u32_at(k, 20),
                        tid: waker_tid,
                        comm: comm(&k[56..72]),
                        kernel: frames_of(waker_kstack),
                        user: frames_of(i32_at(k, 32)),
                    });
                    Blocked {
                        tgid: u32_at(k, 0),
                        tid: u32_at(k, 4),
                        kernel: frames_of(i32_at(k, 8)),
                        user: frames_of(i32_at(k, 12)),
                        state: u32_at(k, 16),
                        comm: comm(&k[40..56]),
                        waker,
                        ns: v[0],
                        count: v[1],
                    }
                })
                .collect()
        })
    }

    /// The slow waits kept as outliers (with [`OffCpuOptions::max_outliers`]) read at the
    /// drains since the last call, in the order they were written.
    pub fn outliers(&mut self) -> Vec<crate::WaitOutlier> {
        self.loaded.take_outliers()
    }

    /// The latency histograms (label: the state a block began in, see [`Blocked::state`]) taken at the drains since the last call.
    pub fn histograms(&mut self) -> Vec<LabelHistogram> {
        self.loaded.take_histograms()
    }

    /// What the kernel side could not keep since the start, summed over the CPUs.
    pub fn lost(&self) -> Result<Lost, BpfError> {
        let l = self.loaded.lost(0)?;
        Ok(Lost {
            blocks: l.waits,
            stacks: l.stacks,
            starts: l.starts,
            histograms: l.histograms,
            outliers: l.outliers,
            ends_timed: self.loaded.lost_count(7)?,
            ends_lost: self.loaded.lost_count(6)?,
        })
    }
}
