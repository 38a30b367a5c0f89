//! The off-CPU program: blocks timed and summed in the kernel, with wakers.

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, StackTraceMap};
use aya::programs::RawTracePoint;
use aya::{Ebpf, EbpfLoader};

use crate::bytes::{comm, i32_at, u32_at};
use crate::drain::GracePeriod;
use crate::{BpfError, map_err, refused};

/// The compiled off-CPU program.
static OFFCPU_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/offcpu.bpf.o"));

/// Bytes of the program's `key_t`.
const KEY_LEN: usize = 72;
/// Bytes of its `start_t` and `waker_t` (read to keep their stacks when the stack map is
/// trimmed).
const START_LEN: usize = 40;
const WAKER_LEN: usize = 32;

/// Which blocks to count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

/// The off-CPU program, loaded and attached.
#[derive(Debug)]
pub struct OffCpu {
    ebpf: Ebpf,
    /// The generation the kernel counts under now.
    generation: u32,
    grace: GracePeriod,
}

impl OffCpu {
    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &OffCpuOptions) -> Result<OffCpu, BpfError> {
        let with_wakers = u32::from(opts.wakers);
        let idle_kthreads = u32::from(opts.idle_kthreads);
        let only_tgid = opts.pid.unwrap_or(0);
        let mut ebpf = EbpfLoader::new()
            .override_global("min_ns", &opts.min_block_ns.max(1), true)
            .override_global("max_ns", &opts.max_block_ns, true)
            .override_global("state_mask", &opts.states, true)
            .override_global("with_wakers", &with_wakers, true)
            .override_global("idle_kthreads", &idle_kthreads, true)
            .override_global("only_tgid", &only_tgid, true)
            .load(OFFCPU_OBJ)
            .map_err(|e| refused("load", e))?;
        let mut names = vec![("on_switch", "sched_switch")];
        if opts.wakers {
            names.push(("on_wakeup", "sched_waking"));
        }
        for (prog, tp) in names {
            let p: &mut RawTracePoint = ebpf
                .program_mut(prog)
                .ok_or_else(|| refused("load", format!("no program {prog} in the object")))?
                .try_into()
                .map_err(|e| refused("load", e))?;
            p.load().map_err(|e| refused(&format!("load of {prog}"), e))?;
            p.attach(tp).map_err(|e| refused(&format!("attach to the raw tracepoint {tp}"), e))?;
        }
        let grace = GracePeriod::take(&mut ebpf)?;
        Ok(OffCpu { ebpf, generation: 0, grace })
    }

    /// Reads and clears what was aggregated since the last call, and the stacks no block in
    /// progress still refers to. Takes an RCU grace period at least (milliseconds: see the
    /// generation below).
    pub fn drain(&mut self) -> Result<Vec<Blocked>, BpfError> {
        // The kernel counts under a generation: flipped, the earlier ones are no longer
        // written once the programs running at the flip are done (waited for: an RCU grace
        // period), and their keys are read and deleted without losing an increment.
        self.generation = self.generation.wrapping_add(1);
        {
            let map = self.ebpf.map_mut("control").ok_or_else(|| map_err("control", "missing"))?;
            let mut control: Array<&mut MapData, u32> =
                Array::try_from(map).map_err(|e| map_err("control", e))?;
            control.set(0, self.generation, 0).map_err(|e| map_err("control", e))?;
        }
        self.grace.wait()?;
        let mut found: Vec<([u8; KEY_LEN], [u64; 2])> = Vec::new();
        // Stack ids the map still refers to after this drain (keys of the new generation).
        let mut held: std::collections::HashSet<i32> = std::collections::HashSet::new();
        {
            let map = self.ebpf.map_mut("blocked").ok_or_else(|| map_err("blocked", "missing"))?;
            let mut counts: BpfHashMap<&mut MapData, [u8; KEY_LEN], [u64; 2]> =
                BpfHashMap::try_from(map).map_err(|e| map_err("blocked", e))?;
            let keys: Vec<[u8; KEY_LEN]> = counts.keys().filter_map(Result::ok).collect();
            for k in keys {
                if u32_at(&k, 36) == self.generation {
                    held.extend([i32_at(&k, 8), i32_at(&k, 12), i32_at(&k, 28), i32_at(&k, 32)]);
                    continue;
                }
                if let Ok(v) = counts.get(&k, 0) {
                    found.push((k, v));
                }
                let _ = counts.remove(&k);
            }
        }
        // Stack ids still held by tasks switched out (or their wakers) stay in the map: a
        // `start_t` holds its stack ids at bytes 12 and 16, a `waker_t` at 8 and 12.
        held_by::<START_LEN>(&self.ebpf, "start", 12, &mut held)?;
        held_by::<WAKER_LEN>(&self.ebpf, "wakers", 8, &mut held)?;
        let map = self.ebpf.map_mut("stacks").ok_or_else(|| map_err("stacks", "missing"))?;
        let mut stacks: StackTraceMap<&mut MapData> =
            StackTraceMap::try_from(map).map_err(|e| map_err("stacks", e))?;
        let frames_of = |id: i32| -> Vec<u64> {
            let Ok(id) = u32::try_from(id) else { return Vec::new() };
            match stacks.get(&id, 0) {
                Ok(t) => t.frames().iter().map(|f| f.ip).collect(),
                Err(_) => Vec::new(),
            }
        };
        let mut out = Vec::with_capacity(found.len());
        for (k, v) in &found {
            let waker_tid = u32_at(k, 24);
            let waker_kstack = i32_at(k, 28);
            let waker_ustack = i32_at(k, 32);
            let waker = (waker_tid != 0 || waker_kstack >= 0).then(|| Waker {
                tgid: u32_at(k, 20),
                tid: waker_tid,
                comm: comm(&k[56..72]),
                kernel: frames_of(waker_kstack),
                user: frames_of(waker_ustack),
            });
            out.push(Blocked {
                tgid: u32_at(k, 0),
                tid: u32_at(k, 4),
                kernel: frames_of(i32_at(k, 8)),
                user: frames_of(i32_at(k, 12)),
                state: u32_at(k, 16),
                comm: comm(&k[40..56]),
                waker,
                ns: v[0],
                count: v[1],
            });
        }
        // Every other stack goes: those just read, and any no block refers to any more (a
        // waker's stack replaced by a later wakeup, a task that never ran again).
        let ids: Vec<u32> = stacks.stack_ids().filter_map(Result::ok).collect();
        for id in ids {
            if !held.contains(&(id as i32)) {
                let _ = stacks.remove(&id);
            }
        }
        Ok(out)
    }

    /// What the kernel side could not keep since the start, summed over the CPUs.
    pub fn lost(&self) -> Result<Lost, BpfError> {
        let map = self.ebpf.map("lost").ok_or_else(|| map_err("lost", "missing"))?;
        let lost: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(map).map_err(|e| map_err("lost", e))?;
        let sum = |i: u32| -> Result<u64, BpfError> {
            let v = lost.get(&i, 0).map_err(|e| map_err("lost", e))?;
            Ok(v.iter().sum())
        };
        Ok(Lost { blocks: sum(0)?, stacks: sum(1)?, starts: sum(2)? })
    }
}

/// Adds to `held` the kernel and user stack ids (at `at` and `at + 4` of each value) that the
/// task map `name`, of values of `N` bytes, refers to.
fn held_by<const N: usize>(
    ebpf: &Ebpf,
    name: &'static str,
    at: usize,
    held: &mut std::collections::HashSet<i32>,
) -> Result<(), BpfError> {
    let map = ebpf.map(name).ok_or_else(|| map_err(name, "missing"))?;
    let tasks: BpfHashMap<&MapData, u32, [u8; N]> =
        BpfHashMap::try_from(map).map_err(|e| map_err(name, e))?;
    for (_, v) in tasks.iter().filter_map(Result::ok) {
        held.extend([i32_at(&v, at), i32_at(&v, at + 4)]);
    }
    Ok(())
}
