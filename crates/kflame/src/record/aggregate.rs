//! Time waited, aggregated outside the recorder (in the kernel, by a BPF program) and read
//! once per window: the [`Aggregator`] a mode can be served by instead of perf events.
//!
//! The core defines the interface and names what it is given, as it names its own samples:
//! the addresses are raw, the task's mappings are those of [`Tasks`] (kept from the
//! session's task and mapping records), and the folded line has the layout of the mode's
//! perf-based recording, so that both paths give the same output. A waker's stack follows a
//! `--` frame, leaf first, ending with the waker's name, as bcc's `offwaketime` folds it.

use super::stacks::RawStack;
use super::tasks::Tasks;
use crate::latency::LatencyReading;

/// `PERF_CONTEXT_KERNEL` and `PERF_CONTEXT_USER`, to build callchains as perf writes them.
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const CONTEXT_USER: u64 = -512i64 as u64;

/// A task and where it was: raw addresses, leaf first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AggregateTask {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Task name as the kernel had it.
    pub comm: Vec<u8>,
    /// Kernel stack, leaf first (empty when not taken).
    pub kernel: Vec<u64>,
    /// User stack, leaf first (empty for a kernel thread or when not taken).
    pub user: Vec<u64>,
}

/// Time one task spent waiting with one stack (and, for off-CPU with wakers, one waker),
/// summed over a window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Aggregate {
    /// The task that waited, and its stack while waiting.
    pub task: AggregateTask,
    /// A frame above the task's name (a device), if any.
    pub above: Option<String>,
    /// A frame after the stack's leaf (a lock's kind), if any.
    pub leaf: Option<String>,
    /// The task that woke it (off-CPU with wakers), when one was seen.
    pub waker: Option<AggregateTask>,
    /// Nanoseconds waited.
    pub ns: u64,
    /// Waits summed.
    pub count: u64,
    /// One wait with its own time (an outlier): kept as an event of the recording, not
    /// summed into its profile (the aggregator's waits already hold it).
    pub event: Option<AggregateEvent>,
}

/// When and where one wait of an [`Aggregate`] happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AggregateEvent {
    /// When it ended, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// The CPU it ended on.
    pub cpu: u32,
}

/// What an [`Aggregator`] could not keep, since it started: shown to the user, never
/// silent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AggregateLoss {
    /// Waits not counted (a full map).
    pub waits: u64,
    /// Stacks not taken (a full stack map, a walk that failed): their waits count with an
    /// empty stack.
    pub stacks: u64,
    /// Other losses, by what they are.
    pub other: Vec<(String, u64)>,
    /// Seconds its programs were detached to keep within a budget of CPU (nothing counted
    /// then).
    pub detached_secs: u64,
}

impl AggregateLoss {
    /// True when nothing was lost.
    pub fn is_empty(&self) -> bool {
        self.waits == 0
            && self.stacks == 0
            && self.detached_secs == 0
            && self.other.iter().all(|(_, n)| *n == 0)
    }
}

/// A source of waits aggregated elsewhere, serving one mode of a [`Recorder`](super::Recorder)
/// in place of perf events ([`Recorder::start_with`](super::Recorder::start_with)). It counts
/// from its creation; the recorder drains it at every window and drops it when recording
/// ends, which must detach everything it attached.
pub trait Aggregator: Send {
    /// Reads and clears what was aggregated since the last call.
    fn drain(&mut self) -> Result<Vec<Aggregate>, String>;
    /// What could not be kept since it started.
    fn lost(&self) -> AggregateLoss;
    /// How it records, for the first line of a recording (e.g. `BPF, aggregated in the
    /// kernel (raw tracepoints sched_switch, sched_waking)`).
    fn describe(&self) -> String;
    /// The latency histograms per label counted since the last call (every BPF program
    /// keeps them: per disk, per CPU, per lock kind, per task state).
    fn histograms(&mut self) -> Vec<LatencyReading> {
        Vec::new()
    }
    /// Whether its aggregates are single waits with their own time ([`Aggregate::event`]),
    /// each kept as an event of the recording whatever [`Config::keep_events`](super::Config)
    /// says (the system-call outliers).
    fn keeps_events(&self) -> bool {
        false
    }
}

/// The callchain of `t` as perf writes one: kernel frames then user frames, each part
/// after its context marker, leaf first.
fn chain(t: &AggregateTask) -> Box<[u64]> {
    let mut c = Vec::with_capacity(t.kernel.len() + t.user.len() + 2);
    if !t.kernel.is_empty() {
        c.push(CONTEXT_KERNEL);
        c.extend_from_slice(&t.kernel);
    }
    if !t.user.is_empty() {
        c.push(CONTEXT_USER);
        c.extend_from_slice(&t.user);
    }
    c.into()
}

/// The raw stack of task `t` (its name as the kernel gave it, else as [`Tasks`] knows it);
/// `each`: the stack keeps its thread (events or samples are kept per task).
fn raw_task(t: &AggregateTask, tasks: &mut Tasks, tid: bool) -> RawStack {
    let comm: Box<[u8]> = match t.comm.is_empty() {
        true => tasks.comm(t.pid, t.tid),
        false => t.comm.as_slice().into(),
    };
    let generation = tasks.generation_alive(t.pid);
    if !t.user.is_empty() && generation == tasks.generation(t.pid) {
        tasks.maps_of(t.pid); // read now if the session has not seen the process yet
    }
    RawStack {
        pid: t.pid,
        generation,
        tid: if tid { t.tid } else { 0 },
        cpu: 0,
        comm,
        prefix: None,
        chain: chain(t),
        cgroup: 0,
        leaf: None,
        waker: None,
        trim_tracing: true,
    }
}

/// The raw stack an aggregate is added to: the task's, with its frame above and after the
/// leaf, and its waker's after a `--` frame. `tid`: keep thread ids (the naming asks for
/// them, or every event is kept).
pub(crate) fn raw_stack(a: &Aggregate, tasks: &mut Tasks, tid: bool) -> RawStack {
    let mut raw = raw_task(&a.task, tasks, tid);
    raw.prefix = a.above.as_ref().map(|s| s.as_bytes().into());
    raw.leaf = a.leaf.as_ref().map(|s| s.as_bytes().into());
    raw.waker = a.waker.as_ref().map(|w| Box::new(raw_task(w, tasks, tid)));
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventKind;
    use crate::record::Naming;
    use crate::record::parse::Record;
    use crate::record::stacks::{Collector, NameCache};
    use crate::record::sym::Symbolizer;

    fn task(pid: u32, tid: u32, comm: &str, kernel: &[u64], user: &[u64]) -> AggregateTask {
        AggregateTask { pid, tid, comm: comm.into(), kernel: kernel.to_vec(), user: user.to_vec() }
    }

    /// A block with its waker folds as bcc's offwaketime folds it: the blocked task's name,
    /// its user then kernel frames root first, `--`, the waker's kernel then user frames leaf
    /// first, the waker's name; a lock's kind after the leaf, a device above the task. The
    /// same stacks in two aggregates add up; without a waker, no separator. The frames of the
    /// BPF program that took a stack (and of the tracepoint that ran it) are left out.
    #[test]
    fn a_block_and_its_waker_meet_at_the_separator() {
        let mut tasks = Tasks::new(None);
        for pid in [7, 9] {
            tasks.apply(&Record::Mmap {
                time: 0,
                pid,
                start: 0x1000,
                len: 0x1000,
                pgoff: 0,
                path: b"/nonexistent/app".to_vec(),
            });
        }
        let kallsyms = "ffff0000 T schedule\nffff0100 T pipe_read\nffff0200 T try_to_wake_up\nffff0300 T pipe_write\n\
                        ffff0400 t bpf_prog_6202fc04d6e80fbe_on_switch\nffff0500 T bpf_trace_run4\n";
        let mut sym = Symbolizer::with_kallsyms(kallsyms.into());
        // As taken inside the program: its own frame and the tracepoint's first.
        let blocked = task(7, 8, "reader", &[0xffff_0410, 0xffff_0510, 0xffff_0010, 0xffff_0110], &[0x1100]);
        let waker = task(9, 10, "writer", &[0xffff_0210, 0xffff_0310], &[0x1200]);
        let with = Aggregate {
            task: blocked.clone(),
            waker: Some(waker),
            ns: 700,
            count: 7,
            ..Aggregate::default()
        };
        let lock = Aggregate {
            task: blocked.clone(),
            leaf: Some("[rwsem:W]".into()),
            above: Some("vda".into()),
            ns: 5,
            count: 1,
            ..Aggregate::default()
        };
        let alone = Aggregate { task: blocked, ns: 30, count: 3, ..Aggregate::default() };
        let mut c = Collector::new(Naming::default(), false, false);
        for a in [&with, &with, &lock, &alone] {
            c.add(0, raw_stack(a, &mut tasks, false), a.ns, None);
        }
        let d = c.drain(EventKind::OffCpu, &tasks, &mut sym, &mut NameCache::default());
        let mut lines: Vec<(String, u64)> = d
            .stacks
            .sorted()
            .into_iter()
            .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole()))
            .collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                ("reader;[app];pipe_read;schedule".to_string(), 30),
                (
                    "reader;[app];pipe_read;schedule;--;try_to_wake_up;pipe_write;[app];writer".to_string(),
                    1400
                ),
                ("vda;reader;[app];pipe_read;schedule;[rwsem:W]".to_string(), 5),
            ]
        );
    }
}
