//! Off-CPU time: a `sched:sched_switch` sample is taken in the context of the task leaving
//! the CPU, so its callchain is where that task blocked. When the same task is later
//! switched in (it is `next_pid` of a switch), the time in between is added to that stack.
//! Tasks switched out while still runnable (preempted, state R) are not blocked and are not
//! counted.
//!
//! Some kernels drop the `sched_switch` samples taken while the idle task leaves the CPU
//! (seen on this project's test VMs: `perf record -e sched:sched_switch -a` misses most
//! switches *from* swapper too), so the switch back into a task that slept on an idle CPU
//! may never arrive. The task's next switch-out proves it ran again: its blocked interval is
//! then closed there, which over-counts by the time it ran in between (for a task that
//! blocks again at once, microseconds). Such intervals are counted and reported.

use rustc_hash::FxHashMap;

use super::{Handler, Sample, tracepoint_spec};
use crate::fold::{Meta, Unit};
use crate::record::stacks::{Collector, RawStack};
use crate::record::tasks::Tasks;
use crate::record::tracefs::{Field, Tracefs};
use crate::record::{RecordError, StackParts};

const SCHED_SWITCH: &str = "sched:sched_switch";

pub(super) fn build(
    tfs: &Tracefs,
    parts: StackParts,
) -> Result<(Vec<super::EventSpec>, Box<dyn Handler>), RecordError> {
    let tp = tfs.tracepoint(SCHED_SWITCH)?;
    let h = OffCpu {
        prev_state: tp.field("prev_state")?,
        next_pid: tp.field("next_pid")?,
        out_since: FxHashMap::default(),
        added: 0,
        closed_late: 0,
    };
    Ok((vec![tracepoint_spec(tp.id, SCHED_SWITCH, parts)], Box::new(h)))
}

struct OffCpu {
    prev_state: Field,
    next_pid: Field,
    /// Blocked tasks by tid: when they left the CPU and where.
    out_since: FxHashMap<u32, (u64, RawStack)>,
    added: u64,
    /// Intervals closed at the task's next switch-out (its switch-in was not recorded).
    closed_late: u64,
}

impl OffCpu {
    /// Adds the blocked interval of the task whose switch-out was at `since`.
    fn close(&mut self, since: u64, stack: RawStack, now: u64, out: &mut Collector) {
        let blocked = now.saturating_sub(since);
        out.add(since, stack, blocked, Some(blocked));
        self.added += 1;
    }
}

impl Handler for OffCpu {
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        if let Some(next) = self.next_pid.read(&s.raw)
            && let Some((since, stack)) = self.out_since.remove(&(next as u32))
        {
            self.close(since, stack, s.time, out);
        }
        // The task leaving the CPU ran, so any blocked interval of it still open has ended.
        if s.tid != 0
            && let Some((since, stack)) = self.out_since.remove(&s.tid)
        {
            self.closed_late += 1;
            self.close(since, stack, s.time, out);
        }
        let state = self.prev_state.read(&s.raw).unwrap_or(0);
        if state & 0xff != 0 && s.tid != 0 && tasks.wanted(s.pid) {
            let stack = out.raw(tasks, s.pid, s.tid, s.cpu, &s.chain);
            self.out_since.insert(s.tid, (s.time, stack));
        }
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Nanoseconds, event: Some(SCHED_SWITCH.into()) }
    }

    fn unpaired(&self) -> u64 {
        self.out_since.len() as u64
    }

    fn added(&self) -> u64 {
        self.added
    }

    fn notes(&self) -> Vec<String> {
        if self.closed_late == 0 {
            return Vec::new();
        }
        vec![format!(
            "{} of {} blocked intervals ended at the task's next switch-out: the kernel did not \
             report the switch back in (sched_switch from the idle task); they include the short \
             time the task ran before blocking again",
            self.closed_late, self.added
        )]
    }
}
