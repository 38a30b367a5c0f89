//! Off-CPU time, as `perf record --off-cpu` measures it: for every time a task leaves a CPU
//! asleep, how long until it is switched back in, added to the stack where it blocked.
//!
//! Two sources per CPU share one ring buffer. `sched:sched_switch` samples are taken in the
//! context of the task leaving the CPU: their callchain is where it blocked, `prev_state` says
//! whether it sleeps (`S`, `D`, `I`: counted) or stays runnable (`R`, `R+`: preempted, not
//! counted; nor are stopped or dying tasks). A software dummy event with `context_switch` makes
//! the kernel write a `PERF_RECORD_SWITCH_CPU_WIDE` record at every switch in and out; the
//! switch-in of the sleeping task ends its interval. The session hands both to the handler
//! merged in time order across CPUs (`record/order.rs`).
//!
//! The switch-in is taken from those records, not from `sched_switch`'s `next_pid`: some
//! kernels drop most `sched_switch` samples taken while the idle task leaves a CPU (seen on
//! this project's 6.18 test VMs), so the switch back into a task that slept on an idle CPU is
//! often missing there, while the switch records are complete. A switch-in record can still be
//! lost when a ring buffer fills up: the task's next switch out or its exit then ends the
//! interval, and an interval open when records were lost ends at the next sign of its task,
//! which may be a later switch-in than its own (both upper bounds: they include the time the
//! task ran in between). The note at the end says how many intervals ended each way.
//!
//! The [`OffCpuOptions`] filters apply as the in-kernel path applies them: the state the
//! task left in, the minimum length, and kernel threads asleep in `S` or `I` (waiting for
//! work) left out unless asked for.

mod intervals;

use intervals::{Blocked, Intervals};

use super::{EventSpec, Handler, Record, Sample, base_attr, tracepoint_spec};
use crate::fold::{Meta, Unit};
use crate::record::stacks::{Collector, RawStack};
use crate::record::sys::attr::{SW_DUMMY, TYPE_SOFTWARE, flag};
use crate::record::tasks::Tasks;
use crate::record::tracefs::{Field, Tracefs};
use crate::record::{OffCpuOptions, RecordError, StackParts};
use rustc_hash::FxHashMap;

const SCHED_SWITCH: &str = "sched:sched_switch";

/// `prev_state` bits of a kernel thread waiting for work: `S` or `I`.
const WAITING_FOR_WORK: u64 = 0x01 | 0x80;

/// `PF_KTHREAD` in a task's flags (`/proc/PID/stat`'s ninth field).
const PF_KTHREAD: u64 = 0x0020_0000;

pub(super) fn build(
    tfs: &Tracefs,
    parts: StackParts,
    opts: OffCpuOptions,
) -> Result<(Vec<EventSpec>, Box<dyn Handler>), RecordError> {
    let tp = tfs.tracepoint(SCHED_SWITCH)?;
    let h = OffCpu::new(tp.field("prev_state")?, opts);
    Ok((vec![switch_records_spec(), tracepoint_spec(tp.id, SCHED_SWITCH, parts)], Box::new(h)))
}

/// A software dummy event: it counts and samples nothing, but with `context_switch` the kernel
/// writes a record at every context switch on its CPU. Opened first, it also carries the
/// task and mapping records.
fn switch_records_spec() -> EventSpec {
    let mut attr = base_attr(TYPE_SOFTWARE, SW_DUMMY, 1 << 20);
    attr.flags |= flag::CONTEXT_SWITCH;
    EventSpec { name: "context-switch records (software dummy event)".into(), attr }
}

struct OffCpu {
    prev_state: Field,
    intervals: Intervals<RawStack>,
    opts: OffCpuOptions,
    /// Whether each process seen asleep is a kernel thread.
    kthreads: FxHashMap<u32, bool>,
    /// Blocks left out for being shorter than `--min-block`.
    short: u64,
}

impl OffCpu {
    fn new(prev_state: Field, opts: OffCpuOptions) -> OffCpu {
        OffCpu { prev_state, intervals: Intervals::default(), opts, kthreads: FxHashMap::default(), short: 0 }
    }

    fn add(&mut self, closed: Option<Blocked<RawStack>>, out: &mut Collector) {
        if let Some(b) = closed {
            let ns = b.ns();
            if ns < self.opts.min_block.as_nanos() as u64 {
                self.short += 1;
                return;
            }
            out.add(b.since, b.stack, ns, Some(ns));
        }
    }

    /// True when a task leaving in `state` is counted.
    fn counts(&mut self, pid: u32, state: u64) -> bool {
        if !self.opts.states.contains(state) {
            return false;
        }
        if self.opts.idle_kthreads || state & WAITING_FOR_WORK == 0 {
            return true;
        }
        !*self.kthreads.entry(pid).or_insert_with(|| is_kernel_thread(pid))
    }
}

/// True when process `pid` is a kernel thread (`PF_KTHREAD`), from `/proc/PID/stat`.
fn is_kernel_thread(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| stat_flags(&s))
        .is_some_and(|f| f & PF_KTHREAD != 0)
}

/// The flags of a `/proc/PID/stat` line (the ninth field; the name, second, may hold spaces
/// and parentheses: the fields after it are counted from its last `)`).
fn stat_flags(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(6)?.parse().ok()
}

impl Handler for OffCpu {
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        if s.tid == 0 {
            return; // the idle task
        }
        let state = self.prev_state.read(&s.raw).unwrap_or(0) as u64;
        let closed = if self.counts(s.pid, state) && tasks.wanted(s.pid, s.tid) {
            let mut stack = out.raw(tasks, s);
            stack.trim_tracing = true;
            self.intervals.blocked(s.tid, s.cpu, s.time, stack)
        } else {
            self.intervals.left_running(s.tid, s.time)
        };
        self.add(closed, out);
    }

    fn side_band(&mut self, r: &Record, out: &mut Collector) {
        let closed = match r {
            Record::Switch(sw) if sw.out => self.intervals.switch_out_record(sw.tid, sw.cpu, sw.time),
            Record::Switch(sw) => self.intervals.switch_in(sw.tid, sw.time),
            Record::Exit { tid, time, .. } => self.intervals.exited(*tid, *time),
            Record::Lost { .. } => {
                self.intervals.records_lost();
                None
            }
            _ => None,
        };
        self.add(closed, out);
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Nanoseconds, event: Some(SCHED_SWITCH.into()) }
    }

    fn unpaired(&self) -> u64 {
        self.intervals.open() as u64
    }

    fn open(&self) -> u64 {
        self.intervals.open() as u64
    }

    fn added(&self) -> u64 {
        (self.intervals.exact + self.intervals.bounded).saturating_sub(self.short)
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = vec![format!(
            "off-CPU: {} blocked intervals ended at the task's switch-in, {} only at a later sign \
             that it ran (switch-in lost to a full ring buffer: an upper bound)",
            self.intervals.exact, self.intervals.bounded
        )];
        if self.short > 0 {
            notes.push(format!(
                "off-CPU: {} blocks shorter than --min-block {:?} left out",
                self.short, self.opts.min_block
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests;
