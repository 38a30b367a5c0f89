//! Blocked intervals per task, independent of where the events come from: opened when a task
//! leaves a CPU asleep, closed when the kernel reports it switched back in.
//!
//! A full ring buffer loses records, among them switch-ins. An interval whose switch-in is
//! missing ends at the first later sign that the task ran: its next switch out, or its exit.
//! And once records were lost anywhere, the next switch-in seen for an interval open at that
//! time may be a later one than its own. Either way the interval is only an upper bound of
//! the blocked time: such intervals are counted apart. (The kernel reports a loss only when
//! the full buffer has room again, so a switch-in seen on another CPU before that report
//! arrives still counts as exact.)

use rustc_hash::FxHashMap;

/// How a blocked interval ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// At the task's switch-in: the real blocked time.
    SwitchIn,
    /// The switch-in was (or may have been) lost: at the next sign that the task ran (a
    /// switch in or out, or its exit). Longer than the blocked time by however long the
    /// task ran before that.
    Bound,
}

/// A closed interval: task `tid` was off-CPU from `since` to `until` (ns), blocked in `stack`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Blocked<S> {
    pub(super) tid: u32,
    pub(super) since: u64,
    pub(super) until: u64,
    pub(super) stack: S,
    pub(super) end: End,
}

impl<S> Blocked<S> {
    /// The interval's length in ns.
    pub(super) fn ns(&self) -> u64 {
        self.until.saturating_sub(self.since)
    }
}

struct Open<S> {
    since: u64,
    cpu: u32,
    /// The switch-out record of the switch that opened the interval has been seen.
    out_record_seen: bool,
    /// Records were lost while the interval was open: its switch-in may be among them.
    lost: bool,
    stack: S,
}

/// The open intervals by thread id, and how many ended each way.
pub(super) struct Intervals<S> {
    open: FxHashMap<u32, Open<S>>,
    /// Intervals closed by their switch-in.
    pub(super) exact: u64,
    /// Intervals closed by a later sign of the task (switch-in lost, or maybe lost).
    pub(super) bounded: u64,
}

impl<S> Default for Intervals<S> {
    fn default() -> Self {
        Intervals { open: FxHashMap::default(), exact: 0, bounded: 0 }
    }
}

impl<S> Intervals<S> {
    /// Task `tid` left `cpu` asleep at `time`, blocked in `stack`. An interval of it still
    /// open lost its switch-in (the task ran since): it is closed here and returned.
    pub(super) fn blocked(&mut self, tid: u32, cpu: u32, time: u64, stack: S) -> Option<Blocked<S>> {
        let earlier = self.close(tid, time, End::Bound);
        self.open.insert(tid, Open { since: time, cpu, out_record_seen: false, lost: false, stack });
        earlier
    }

    /// Task `tid` left a CPU without sleeping (preempted, or exiting): it ran, so an
    /// interval of it still open lost its switch-in.
    pub(super) fn left_running(&mut self, tid: u32, time: u64) -> Option<Blocked<S>> {
        self.close(tid, time, End::Bound)
    }

    /// The switch-out record of `tid` on `cpu`. The first one on the CPU where the interval
    /// opened belongs to the switch that opened it; any other proves the task ran again.
    pub(super) fn switch_out_record(&mut self, tid: u32, cpu: u32, time: u64) -> Option<Blocked<S>> {
        let open = self.open.get_mut(&tid)?;
        if !open.out_record_seen && open.cpu == cpu {
            open.out_record_seen = true;
            return None;
        }
        self.close(tid, time, End::Bound)
    }

    /// Task `tid` was switched in at `time`.
    pub(super) fn switch_in(&mut self, tid: u32, time: u64) -> Option<Blocked<S>> {
        self.close(tid, time, End::SwitchIn)
    }

    /// The kernel lost records (of any CPU): the switch-in of any interval open now may be
    /// among them.
    pub(super) fn records_lost(&mut self) {
        for o in self.open.values_mut() {
            o.lost = true;
        }
    }

    /// Task `tid` exited at `time`: it ran since any interval still open (whose switch-in
    /// was lost), and its tid may be reused by a new task.
    pub(super) fn exited(&mut self, tid: u32, time: u64) -> Option<Blocked<S>> {
        self.close(tid, time, End::Bound)
    }

    /// Intervals still open (tasks still blocked).
    pub(super) fn open(&self) -> usize {
        self.open.len()
    }

    fn close(&mut self, tid: u32, until: u64, end: End) -> Option<Blocked<S>> {
        let o = self.open.remove(&tid)?;
        let end = if o.lost { End::Bound } else { end };
        match end {
            End::SwitchIn => self.exact += 1,
            End::Bound => self.bounded += 1,
        }
        Some(Blocked { tid, since: o.since, until, stack: o.stack, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(
        tid: u32,
        since: u64,
        until: u64,
        stack: &'static str,
        end: End,
    ) -> Option<Blocked<&'static str>> {
        Some(Blocked { tid, since, until, stack, end })
    }

    #[test]
    fn switch_in_closes_with_the_real_blocked_time() {
        let mut iv = Intervals::default();
        assert_eq!(iv.blocked(7, 0, 1_000, "nanosleep"), None);
        assert_eq!(iv.switch_out_record(7, 0, 1_002), None, "the same switch");
        assert_eq!(iv.switch_in(7, 21_000), closed(7, 1_000, 21_000, "nanosleep", End::SwitchIn));
        assert_eq!(iv.switch_in(7, 30_000), None, "nothing open any more");
        assert_eq!((iv.exact, iv.bounded, iv.open()), (1, 0, 0));
    }

    #[test]
    fn lost_switch_in_ends_at_the_next_switch_out() {
        let mut iv = Intervals::default();
        iv.blocked(7, 0, 1_000, "a");
        iv.switch_out_record(7, 0, 1_001);
        // Switch-in lost; the task ran and blocked again on CPU 1.
        assert_eq!(iv.blocked(7, 1, 5_000, "b"), closed(7, 1_000, 5_000, "a", End::Bound));
        iv.switch_out_record(7, 1, 5_001);
        assert_eq!(iv.switch_in(7, 9_000), closed(7, 5_000, 9_000, "b", End::SwitchIn));
        assert_eq!((iv.exact, iv.bounded), (1, 1));
    }

    #[test]
    fn lost_switch_in_ends_at_a_preemption_or_a_second_switch_out_record() {
        let mut iv = Intervals::default();
        iv.blocked(7, 0, 1_000, "a");
        iv.switch_out_record(7, 0, 1_001);
        assert_eq!(iv.left_running(7, 4_000), closed(7, 1_000, 4_000, "a", End::Bound));
        // Switch-out sample of the next block lost as well: only its record shows the run.
        iv.blocked(7, 0, 6_000, "b");
        iv.switch_out_record(7, 0, 6_001);
        assert_eq!(iv.switch_out_record(7, 0, 8_000), closed(7, 6_000, 8_000, "b", End::Bound));
        // A switch-out record on another CPU than the one the task blocked on is a later run.
        iv.blocked(7, 0, 10_000, "c");
        assert_eq!(iv.switch_out_record(7, 1, 12_000), closed(7, 10_000, 12_000, "c", End::Bound));
        assert_eq!((iv.exact, iv.bounded, iv.open()), (0, 3, 0));
    }

    #[test]
    fn a_switch_in_after_lost_records_is_only_a_bound() {
        let mut iv = Intervals::default();
        iv.blocked(7, 0, 1_000, "a");
        iv.blocked(8, 1, 2_000, "b");
        iv.records_lost(); // perhaps with 7's real switch-in, and its next block
        iv.blocked(9, 0, 3_000, "c");
        assert_eq!(iv.switch_in(7, 9_000), closed(7, 1_000, 9_000, "a", End::Bound));
        assert_eq!(iv.switch_out_record(8, 0, 9_500), closed(8, 2_000, 9_500, "b", End::Bound));
        assert_eq!(iv.switch_in(9, 10_000), closed(9, 3_000, 10_000, "c", End::SwitchIn));
        assert_eq!((iv.exact, iv.bounded, iv.open()), (1, 2, 0));
    }

    #[test]
    fn exit_closes_an_interval_whose_switch_in_was_lost_and_frees_the_tid() {
        let mut iv = Intervals::default();
        iv.blocked(7, 0, 1_000, "a");
        assert_eq!(iv.exited(7, 3_000), closed(7, 1_000, 3_000, "a", End::Bound));
        // A new task with the recycled tid: its switch-in closes nothing of the old one.
        assert_eq!(iv.switch_in(7, 4_000), None);
        assert_eq!(iv.open(), 0);
    }

    #[test]
    fn tasks_are_independent_and_still_open_ones_are_counted() {
        let mut iv = Intervals::default();
        iv.blocked(7, 0, 1_000, "a");
        iv.blocked(8, 1, 1_500, "b");
        assert_eq!(iv.switch_in(8, 2_000), closed(8, 1_500, 2_000, "b", End::SwitchIn));
        assert_eq!(iv.left_running(9, 2_500), None);
        assert_eq!(iv.open(), 1);
    }
}
