//! The run-queue program: time runnable but not running, summed in the kernel, with a log2
//! histogram per CPU.

use std::collections::HashSet;

use aya::maps::{MapData, PerCpuArray, PerCpuValues};

use crate::drain::{Loaded, WaitLost, WaitOptions, Waited};
use crate::{BpfError, map_err};

/// The compiled run-queue program.
static RUNQ_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/runq.bpf.o"));

/// Slots of a run-queue histogram: slot `s` counts waits of `2^s` to `2^(s+1) - 1` µs (slot 0
/// also those under 1 µs), the last one every longer wait, as bcc's `runqlat`.
pub const RUNQ_SLOTS: usize = 32;

/// What [`Runq::drain`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunqDrain {
    /// Time each task waited runnable with the stacks it left the CPU with (`on`: the CPU
    /// whose run queue it waited on; stacks empty when it had not been switched out since the
    /// start).
    pub waited: Vec<Waited>,
    /// The waits of each CPU's run queue over the interval, indexed by CPU (every possible
    /// CPU), in log2 µs slots (see [`RUNQ_SLOTS`]).
    pub histograms: Vec<[u64; RUNQ_SLOTS]>,
}

/// The run-queue program, loaded and attached to the `sched_wakeup`, `sched_wakeup_new` and
/// `sched_switch` raw tracepoints.
#[derive(Debug)]
pub struct Runq {
    loaded: Loaded,
}

impl Runq {
    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &WaitOptions) -> Result<Runq, BpfError> {
        let attach = [
            ("on_switch", "sched_switch"),
            ("on_wakeup", "sched_wakeup"),
            ("on_wakeup_new", "sched_wakeup_new"),
        ];
        Ok(Runq { loaded: Loaded::start(RUNQ_OBJ, opts, Vec::new(), &attach)? })
    }

    /// Reads and clears the waits and histograms summed since the last call, and the stacks
    /// no task refers to any more. Takes an RCU grace period at least (milliseconds).
    pub fn drain(&mut self) -> Result<RunqDrain, BpfError> {
        self.loaded.flip()?;
        let mut held = HashSet::new();
        let found = self.loaded.take_waited(&mut held)?;
        // Each task's `left_t` holds the stack ids it left the CPU with, at bytes 0 and 4.
        self.loaded.held_by::<4, 8>("left", 0, &mut held)?;
        let histograms = self.take_histograms()?;
        let waited = self.loaded.finish(&found, &held)?;
        Ok(RunqDrain { waited, histograms })
    }

    /// Reads and zeroes the histogram slots of the generation before the current one.
    fn take_histograms(&mut self) -> Result<Vec<[u64; RUNQ_SLOTS]>, BpfError> {
        let old = (self.loaded.generation.wrapping_sub(1) & 1) as usize * RUNQ_SLOTS;
        let map = self.loaded.ebpf.map_mut("hist").ok_or_else(|| map_err("hist", "missing"))?;
        let mut hist: PerCpuArray<&mut MapData, u64> =
            PerCpuArray::try_from(map).map_err(|e| map_err("hist", e))?;
        let cpus = aya::util::nr_cpus().map_err(|(what, e)| map_err("hist", format!("{what}: {e}")))?;
        let mut out = vec![[0u64; RUNQ_SLOTS]; cpus];
        for (slot, at) in (old..old + RUNQ_SLOTS).enumerate() {
            let at = at as u32;
            let per_cpu = hist.get(&at, 0).map_err(|e| map_err("hist", e))?;
            if per_cpu.iter().all(|&n| n == 0) {
                continue;
            }
            for (cpu, &n) in per_cpu.iter().enumerate().take(cpus) {
                out[cpu][slot] = n;
            }
            let zeros = PerCpuValues::try_from(vec![0u64; cpus]).map_err(|e| map_err("hist", e))?;
            hist.set(at, zeros, 0).map_err(|e| map_err("hist", e))?;
        }
        Ok(out)
    }

    /// What the kernel side could not keep since the start, summed over the CPUs.
    pub fn lost(&self) -> Result<WaitLost, BpfError> {
        self.loaded.lost(0)
    }
}
