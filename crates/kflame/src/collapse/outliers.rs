//! Latency outliers (`--top N`): the N slowest calls or events of a latency collapse, each
//! kept as its own tower under a root frame naming its rank, duration and start,
//! `[#01 2.345ms @512.100000]` (`line N` instead of the time when the input has none).
//!
//! Shared by the function_graph collapser (top-level calls) and the paired spans of the
//! trace front ends (syscalls, off-CPU intervals, probed calls; see
//! [`crate::collapse::pairing::SpanOutput`]), so that both rank alike and read alike.
//! Ranking: longest first; among equal durations, the one seen first.
//!
//! Besides the shared graph, a caller can ask for each outlier on its own (one graph per
//! outlier, with its task and time): give the collapser an [`OutlierLog`] and read it after
//! the run.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use crate::fold::Weight;

/// `850ns`, `12.345us`, `2.345ms`, `1.234s`: three decimals in the largest fitting unit
/// (truncated, never rounded up into the next unit).
pub fn format_duration(ns: u64) -> String {
    let (div, unit) = match ns {
        0..1_000 => return format!("{ns}ns"),
        1_000..1_000_000 => (1_000, "us"),
        1_000_000..1_000_000_000 => (1_000_000, "ms"),
        _ => (1_000_000_000, "s"),
    };
    format!("{}.{:03}{unit}", ns / div, ns % div * 1000 / div)
}

/// The N longest items seen so far (memory: N items).
#[derive(Debug)]
pub(crate) struct TopN<T> {
    n: usize,
    seq: u64,
    heap: BinaryHeap<Ranked<T>>,
}

#[derive(Debug)]
struct Ranked<T> {
    duration: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Ranked<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.duration, self.seq) == (o.duration, o.seq)
    }
}
impl<T> Eq for Ranked<T> {}
impl<T> PartialOrd for Ranked<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Ranked<T> {
    /// Smaller = better rank (longer, then earlier), so the heap's max is the worst kept.
    fn cmp(&self, o: &Self) -> Ordering {
        o.duration.cmp(&self.duration).then(self.seq.cmp(&o.seq))
    }
}

impl<T> TopN<T> {
    /// Keeps the `n` longest.
    pub(crate) fn new(n: usize) -> TopN<T> {
        TopN { n, seq: 0, heap: BinaryHeap::new() }
    }

    /// How many are kept at most.
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// Offers an item that lasted `duration` (any unit, compared only).
    pub(crate) fn offer(&mut self, duration: u64, item: T) {
        self.seq += 1;
        let r = Ranked { duration, seq: self.seq, item };
        if self.heap.len() < self.n {
            self.heap.push(r);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && r < *worst
        {
            *worst = r;
        }
    }

    /// The kept items, best first, with their durations; the ranking starts over.
    pub(crate) fn take_ranked(&mut self) -> Vec<(u64, T)> {
        let heap = std::mem::take(&mut self.heap);
        heap.into_sorted_vec().into_iter().map(|r| (r.duration, r.item)).collect()
    }
}

/// The root frame of outlier `rank` (1-based) of `n`: `[#01 2.345ms @512.100000]`, the
/// rank zero-padded to the width of `n` so that frames sort by rank; the start as seconds
/// and microseconds of the trace clock, or `line N` when the input has no time.
pub fn rank_frame(rank: usize, n: usize, duration_ns: u64, start_ns: Option<u64>, line: u64) -> String {
    let width = n.max(1).to_string().len();
    let when = match start_ns {
        Some(ns) => format!("@{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000),
        None => format!("line {line}"),
    };
    format!("[#{rank:0width$} {} {when}]", format_duration(duration_ns))
}

/// One outlier, as handed to an [`OutlierLog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outlier {
    /// 1-based rank in its input (1 = the longest).
    pub rank: usize,
    /// Its duration, ns.
    pub duration_ns: u64,
    /// Its start (trace clock, ns), when the input has times.
    pub start_ns: Option<u64>,
    /// 1-based input line where it started.
    pub line: u64,
    /// CPU it started on.
    pub cpu: u32,
    /// Task, when known.
    pub pid: Option<u32>,
    /// Task name, when known.
    pub comm: Option<String>,
    /// What it was: `syscall:write`, `offcpu:D`, `probe:doio_entry`, or the function of a
    /// top-level function_graph call.
    pub what: String,
    /// Its folded stacks exactly as added to the shared output (under its rank frame).
    pub stacks: Vec<(Vec<u8>, Weight)>,
}

/// Receives the outliers of a collapse, for writing each one on its own. Cheap to clone: all
/// clones share one list.
#[derive(Clone, Debug, Default)]
pub struct OutlierLog {
    inner: Arc<Mutex<Vec<Outlier>>>,
}

impl OutlierLog {
    /// An empty log.
    pub fn new() -> OutlierLog {
        OutlierLog::default()
    }

    pub(crate) fn push(&self, o: Outlier) {
        if let Ok(mut v) = self.inner.lock() {
            v.push(o);
        }
    }

    /// The outliers received so far, in the order they came (each input's in rank order);
    /// the log is emptied.
    pub fn take(&self) -> Vec<Outlier> {
        self.inner.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(format_duration(850), "850ns");
        assert_eq!(format_duration(12_345), "12.345us");
        assert_eq!(format_duration(2_345_678), "2.345ms");
        assert_eq!(format_duration(33_998_590_000), "33.998s");
    }

    #[test]
    fn keeps_the_longest_earliest_first_on_ties() {
        let mut t = TopN::new(3);
        for (d, name) in [(5, "a"), (9, "b"), (5, "c"), (1, "d"), (9, "e"), (7, "f")] {
            t.offer(d, name);
        }
        assert_eq!(t.take_ranked(), [(9, "b"), (9, "e"), (7, "f")]);
        assert!(t.take_ranked().is_empty());
        let mut none = TopN::new(0);
        none.offer(1, ());
        assert!(none.take_ranked().is_empty());
    }

    #[test]
    fn rank_frames_sort_by_rank() {
        assert_eq!(rank_frame(1, 2, 1_500_000, None, 28), "[#1 1.500ms line 28]");
        assert_eq!(rank_frame(2, 10, 750, Some(512_100_003_000), 0), "[#02 750ns @512.100003]");
        assert_eq!(rank_frame(7, 100, 2_000_000_000, Some(5), 0), "[#007 2.000s @0.000000]");
    }
}
