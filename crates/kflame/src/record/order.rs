//! Putting records of all CPUs back in time order before they are interpreted.
//!
//! Each CPU has its own ring buffer, so a task's `sys_enter` and `sys_exit`, a `FORK` and the
//! child's first sample, or the `sched_switch` sample of a task going to sleep and the
//! context-switch record of its wake-up, can sit in different buffers. Samples and side-band
//! records are one stream: records are held until every buffer has been read past their time
//! stamp (minus a margin for records being written while we read), then released sorted
//! (a stable sort: records of one buffer with equal time stamps keep the kernel's order).
//! This is perf's "ordered events" scheme.

use super::parse::Record;

/// How far behind the read time released records must be (ns).
const MARGIN_NS: u64 = 20_000_000;

/// Records waiting for older ones that may still arrive from another CPU.
#[derive(Default)]
pub(crate) struct Reorder {
    pending: Vec<Record>,
}

impl Reorder {
    /// Adds records read from one or more buffers.
    pub(crate) fn push(&mut self, records: &mut Vec<Record>) {
        self.pending.append(records);
    }

    /// Releases, in time order, every record older than `read_started - MARGIN_NS`
    /// (`read_started`: the clock when this round of buffer reads began).
    pub(crate) fn release(&mut self, read_started: u64) -> Vec<Record> {
        self.pending.sort_by_key(Record::time);
        let limit = read_started.saturating_sub(MARGIN_NS);
        let n = self.pending.partition_point(|r| r.time() < limit);
        self.pending.drain(..n).collect()
    }

    /// Releases everything (after the last read).
    pub(crate) fn finish(&mut self) -> Vec<Record> {
        self.pending.sort_by_key(Record::time);
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(time: u64) -> Record {
        Record::Other { time }
    }

    #[test]
    fn releases_old_records_sorted_and_keeps_recent_ones() {
        let mut q = Reorder::default();
        q.push(&mut vec![other(50_000_000), other(1), other(30_000_000)]);
        q.push(&mut vec![other(2)]);
        let out: Vec<u64> = q.release(40_000_000).iter().map(Record::time).collect();
        assert_eq!(out, vec![1, 2]);
        let rest: Vec<u64> = q.finish().iter().map(Record::time).collect();
        assert_eq!(rest, vec![30_000_000, 50_000_000]);
    }
}
