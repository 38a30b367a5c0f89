//! Reassembly of events and their stacks, released in input (time) order.
//!
//! A stack block belongs to the event line before it **on the same CPU and task**: the
//! kernel writes the stack entry right after the event, on the same CPU, but lines of other
//! CPUs may come in between in the merged `trace` output. Each CPU has at most one open
//! record. A record is complete when its CPU logs another event, or when the trace clock has
//! moved [`WINDOW_NS`] past it (a quiet CPU); records leave the queue in the order of their
//! event lines, so that pairing (syscall entry/exit, switch out/in) sees them in time order.
//! Memory is bounded by the events of one window.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::collapse::pairing::TraceEvent;

/// How long after its event a stack may still arrive (trace clock, ns). Stacks observed in
/// real traces come within 0.2 ms.
pub(crate) const WINDOW_NS: u64 = 50_000_000;

/// An event with the stacks attached so far (leaf first, as printed).
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) ev: TraceEvent,
    pub(crate) kernel: Option<Vec<String>>,
    pub(crate) user: Option<Vec<String>>,
    complete: bool,
}

/// Which stack of which record frame lines go to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// No stack block is open.
    None,
    /// A block whose event is not in the queue (stack without event).
    Orphan,
    /// A block of an event the mode does not use: its frames are dropped silently.
    Ignored,
    /// The kernel (`user == false`) or user stack of record `seq`.
    Record { seq: u64, user: bool },
}

/// The last event line of a CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Open {
    /// Record `seq` of the queue.
    Record(u64),
    /// An ignored event of this pid.
    Ignored(u32),
}

/// The reorder queue.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    items: VecDeque<Record>,
    base: u64,
    open: FxHashMap<u32, Open>,
    latest_ts: u64,
}

impl Queue {
    /// Advances the trace clock (call before [`pop_ready`](Queue::pop_ready)). A jump back
    /// by more than the window (concatenated traces, a new capture on one stream) ends the
    /// earlier segment: all its records are complete.
    pub(crate) fn saw_time(&mut self, ts: u64) {
        if ts.saturating_add(WINDOW_NS) < self.latest_ts {
            self.items.iter_mut().for_each(|r| r.complete = true);
            self.latest_ts = ts;
        }
        self.latest_ts = self.latest_ts.max(ts);
    }

    /// Adds an event line: the CPU's previous record is complete.
    pub(crate) fn push(&mut self, ev: TraceEvent) {
        let cpu = ev.cpu;
        self.close_cpu(cpu);
        let seq = self.base + self.items.len() as u64;
        self.open.insert(cpu, Open::Record(seq));
        self.items.push_back(Record { ev, kernel: None, user: None, complete: false });
    }

    /// An event line that is not kept: the CPU's previous record is complete, and the stacks
    /// that follow for `pid` are dropped.
    pub(crate) fn push_ignored(&mut self, cpu: u32, pid: u32) {
        self.close_cpu(cpu);
        self.open.insert(cpu, Open::Ignored(pid));
    }

    fn close_cpu(&mut self, cpu: u32) {
        if let Some(Open::Record(prev)) = self.open.get(&cpu).copied()
            && let Some(r) = self.get_mut(prev)
        {
            r.complete = true;
        }
    }

    /// Opens a stack block of `pid` on `cpu`: the target of the frame lines that follow.
    pub(crate) fn open_stack(&mut self, cpu: u32, pid: u32, user: bool) -> Target {
        let seq = match self.open.get(&cpu).copied() {
            Some(Open::Record(seq)) => seq,
            Some(Open::Ignored(p)) if p == pid => return Target::Ignored,
            _ => return Target::Orphan,
        };
        let Some(r) = self.get_mut(seq) else { return Target::Orphan };
        let slot = if user { &mut r.user } else { &mut r.kernel };
        if r.ev.pid != pid || slot.is_some() {
            return Target::Orphan;
        }
        *slot = Some(Vec::new());
        Target::Record { seq, user }
    }

    /// Appends a frame to the target's stack.
    pub(crate) fn push_frame(&mut self, target: Target, frame: String) {
        if let Target::Record { seq, user } = target
            && let Some(r) = self.get_mut(seq)
        {
            let slot = if user { &mut r.user } else { &mut r.kernel };
            slot.get_or_insert_with(Vec::new).push(frame);
        }
    }

    /// The next record that can no longer receive a stack, in input order.
    pub(crate) fn pop_ready(&mut self) -> Option<Record> {
        let head = self.items.front()?;
        if !head.complete && head.ev.ts_ns.saturating_add(WINDOW_NS) >= self.latest_ts {
            return None;
        }
        self.pop()
    }

    /// The next record regardless of completeness (end of input).
    pub(crate) fn pop(&mut self) -> Option<Record> {
        let r = self.items.pop_front()?;
        if self.open.get(&r.ev.cpu) == Some(&Open::Record(self.base)) {
            self.open.remove(&r.ev.cpu);
        }
        self.base += 1;
        Some(r)
    }

    fn get_mut(&mut self, seq: u64) -> Option<&mut Record> {
        let i = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        self.items.get_mut(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: u64, cpu: u32, pid: u32) -> TraceEvent {
        TraceEvent { ts_ns: ts, cpu, pid, ..TraceEvent::default() }
    }

    #[test]
    fn stacks_go_to_the_same_cpu_and_task() {
        let mut q = Queue::default();
        q.push(ev(1, 0, 10));
        q.push(ev(2, 1, 20));
        let t = q.open_stack(0, 10, false);
        assert_eq!(t, Target::Record { seq: 0, user: false });
        q.push_frame(t, "f".into());
        assert_eq!(q.open_stack(0, 10, false), Target::Orphan, "second kernel stack");
        assert_eq!(q.open_stack(1, 99, false), Target::Orphan, "other task");
        assert_eq!(q.open_stack(5, 10, false), Target::Orphan, "other cpu");
        assert!(q.pop_ready().is_none(), "cpu 0 record still open");
        q.push(ev(3, 0, 10));
        let r = q.pop_ready().unwrap();
        assert_eq!((r.ev.ts_ns, r.kernel), (1, Some(vec!["f".to_string()])));
        assert!(q.pop_ready().is_none(), "cpu 1 record waits for its window");
        q.saw_time(2 + WINDOW_NS + 1);
        assert_eq!(q.pop_ready().unwrap().ev.ts_ns, 2);
        assert_eq!(q.open_stack(1, 20, true), Target::Orphan, "released records take no stack");
        assert_eq!(q.pop().unwrap().ev.ts_ns, 3);
        assert!(q.pop().is_none());
        q.push_ignored(0, 10);
        assert_eq!(q.open_stack(0, 10, false), Target::Ignored);
        assert_eq!(q.open_stack(0, 11, false), Target::Orphan);
    }
}
