//! A latency heat map: time across, latency buckets up, the count of events in each cell (as
//! latency heat maps are drawn since Gregg's), from the histograms a store keeps. The rows are
//! the buckets of [`kflame::latency`], only those from the lowest to the highest holding an
//! event, so that a map of system calls between 1 µs and 40 ms is some forty rows.

use kflame::latency::{Histogram, slot_lower, slot_upper};

use crate::LatencySeries;

/// Time × latency counts over a range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeatMap {
    /// Start of the first column (inclusive), UTC ns.
    pub from_ns: i64,
    /// End of the last column (exclusive), UTC ns.
    pub to_ns: i64,
    /// Width of a column, ns.
    pub step_ns: i64,
    /// Lower bounds of the rows' buckets, ns, lowest first.
    pub lower_ns: Vec<u64>,
    /// Upper bound of the highest row's bucket, ns.
    pub upper_ns: u64,
    /// `counts[column][row]`.
    pub counts: Vec<Vec<u64>>,
    /// Events in the map.
    pub total: u64,
    /// Events over the outlier threshold.
    pub slow: u64,
    /// The largest latency of the range, ns.
    pub max_ns: u64,
    /// Every histogram of the range summed (for its percentiles).
    pub summed: Histogram,
}

/// The heat map of `series` (any hosts and labels, summed) over `[from_ns, to_ns)` in
/// `columns` columns of equal width (at least one, and at least 1 ns wide).
pub fn heatmap(series: &[LatencySeries], from_ns: i64, to_ns: i64, columns: usize) -> HeatMap {
    let to_ns = to_ns.max(from_ns + 1);
    let columns = columns.clamp(1, 10_000);
    let span = (to_ns - from_ns) as i128;
    let step_ns = ((span + columns as i128 - 1) / columns as i128).max(1) as i64;
    let mut summed = Histogram::default();
    let mut cells = vec![vec![0u64; summed.counts.len()]; columns];
    let mut slow = 0;
    for p in series.iter().flat_map(|s| &s.points) {
        if p.time_ns < from_ns || p.time_ns >= to_ns {
            continue;
        }
        let col = (((p.time_ns - from_ns) / step_ns) as usize).min(columns - 1);
        for (c, n) in cells[col].iter_mut().zip(&p.histogram.counts) {
            *c += n;
        }
        summed.add(&p.histogram);
        slow += p.slow;
    }
    let used: Vec<usize> = (0..summed.counts.len()).filter(|&s| summed.counts[s] > 0).collect();
    let (lo, hi) = match (used.first(), used.last()) {
        (Some(&lo), Some(&hi)) => (lo, hi + 1),
        _ => (0, 0),
    };
    HeatMap {
        from_ns,
        to_ns,
        step_ns,
        lower_ns: (lo..hi).map(slot_lower).collect(),
        upper_ns: if hi > 0 { slot_upper(hi - 1) } else { 0 },
        counts: cells.into_iter().map(|c| c[lo..hi].to_vec()).collect(),
        total: summed.total(),
        slow,
        max_ns: summed.max_ns,
        summed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LatencyKind, LatencyPoint};

    fn point(t: i64, ns: &[u64]) -> LatencyPoint {
        let mut histogram = Histogram::default();
        for &n in ns {
            histogram.record(n);
        }
        LatencyPoint { time_ns: t, histogram, slow: 0, span_ms: 1000 }
    }

    /// Two columns of one second each; rows from the lowest bucket used to the highest;
    /// points outside the range left out; hosts summed.
    #[test]
    fn columns_and_rows_of_the_range() {
        let s = |host: &str, points| LatencySeries {
            host: host.into(),
            kind: LatencyKind::Syscall,
            label: "write".into(),
            points,
        };
        let series = [
            s(
                "a",
                vec![
                    point(0, &[2_000, 2_000]),
                    point(1_500_000_000, &[1_000_000]),
                    point(2_000_000_000, &[9]),
                ],
            ),
            s("b", vec![point(999_999_999, &[2_040])]),
        ];
        let m = heatmap(&series, 0, 2_000_000_000, 2);
        assert_eq!(m.step_ns, 1_000_000_000);
        assert_eq!(m.total, 4);
        assert_eq!(m.lower_ns.first(), Some(&slot_lower(kflame::latency::slot_of(2_000))));
        assert_eq!(m.lower_ns.last(), Some(&slot_lower(kflame::latency::slot_of(1_000_000))));
        assert_eq!(m.counts.len(), 2);
        assert_eq!(m.counts[0].iter().sum::<u64>(), 3);
        assert_eq!(m.counts[0][0], 3, "2000 and 2040 ns share a bucket");
        assert_eq!(m.counts[1].last(), Some(&1));
        assert_eq!(m.max_ns, 1_000_000);
        let empty = heatmap(&[], 0, 10, 3);
        assert_eq!((empty.total, empty.lower_ns.len(), empty.counts.len()), (0, 0, 3));
    }
}
