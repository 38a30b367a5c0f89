//! The run-queue program: time runnable but not running, summed in the kernel, with a latency
//! histogram per CPU.

use std::collections::HashSet;

use crate::BpfError;
use crate::drain::{LabelHistogram, Loaded, WaitLost, WaitOptions, Waited};

/// The compiled run-queue program.
static RUNQ_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/runq.bpf.o"));

/// The run-queue program, loaded and attached to the `sched_wakeup`, `sched_wakeup_new` and
/// `sched_switch` raw tracepoints.
#[derive(Debug)]
pub struct Runq {
    loaded: Loaded,
}

impl Runq {
    /// Its programs, for a [`crate::budget::Governed`] to attach and detach.
    pub(crate) fn loaded_mut(&mut self) -> &mut Loaded {
        &mut self.loaded
    }

    /// Loads the program with `opts` and attaches it.
    pub fn start(opts: &WaitOptions) -> Result<Runq, BpfError> {
        let attach = [
            ("on_switch", "sched_switch"),
            ("on_wakeup", "sched_wakeup"),
            ("on_wakeup_new", "sched_wakeup_new"),
            // Each task's entry is kept while it lives: its exit removes it.
            ("on_exit", "sched_process_exit"),
        ];
        Ok(Runq { loaded: Loaded::start(RUNQ_OBJ, opts, Vec::new(), &attach)? })
    }

    /// Reads and clears the waits summed since the last call (each task's time runnable
    /// with the stacks it left the CPU with; `on`: the CPU whose run queue it waited on;
    /// stacks empty when it had not been switched out since the start), and the stacks no task
    /// refers to any more. Takes an RCU grace period at least (milliseconds).
    pub fn drain(&mut self) -> Result<Vec<Waited>, BpfError> {
        self.loaded.flip()?;
        let mut held = HashSet::new();
        let found = self.loaded.take_waited(&mut held)?;
        // Each task's `left_t` holds the stack ids it left the CPU with, at bytes 0 and 4.
        self.loaded.held_by::<4, 8>("left", 0, &mut held)?;
        self.loaded.finish(&found, &held)
    }

    /// The slow waits kept as outliers (with [`WaitOptions::max_outliers`]) read at the
    /// drains since the last call, in the order they were written.
    pub fn outliers(&mut self) -> Vec<crate::WaitOutlier> {
        self.loaded.take_outliers()
    }

    /// The latency histograms of each CPU's run queue (label: the CPU) taken at the drains
    /// since the last call.
    pub fn histograms(&mut self) -> Vec<LabelHistogram> {
        self.loaded.take_histograms()
    }

    /// What the kernel side could not keep since the start, summed over the CPUs.
    pub fn lost(&self) -> Result<WaitLost, BpfError> {
        self.loaded.lost(0)
    }
}
