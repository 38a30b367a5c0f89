//! Resampling metric series for charts, and the summaries that let a wide range skip
//! decoding its values (or reading them).
//!
//! A chart of 24 h asks a point per pixel (about 80 s each): decoding the day's 86,400
//! values of each series is the cost (the metric codec spends about 100 ns a value). A
//! [`SeriesCache`] keeps, per metric row and series, a summary of every [`SLOT_NS`] of its
//! values (min, max, sum, count); a range whose points are at least [`SUMMARY_MIN_WIDTH_NS`]
//! wide reads the rows it reaches from their summaries only, on a grid of cells of whole
//! slots aligned on the epoch: the range grows to the cells its ends fall in. Each point is
//! then exactly the min, max, mean and count of the values of its cell (a slot never
//! straddles two cells), the first and last cells included, whole; only the grid differs
//! from the one a range decoded value by value would get. Rows are keyed by their id, which
//! a writer never gives twice (see [`Row`]): a row summarized already is not even read.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::Point;

/// The span of a summary slot.
pub(crate) const SLOT_NS: i64 = 20_000_000_000;
/// Points at least this wide are read from summaries.
pub(crate) const SUMMARY_MIN_WIDTH_NS: i64 = 60_000_000_000;
/// Series rows kept at most (each about 180 slots of 40 bytes: some 58 MB).
const MAX_ENTRIES: usize = 8192;

/// A part of a series: one value (min = max = sum, count 1) or a slot's summary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Piece {
    pub(crate) time_ns: i64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) sum: f64,
    pub(crate) count: u32,
}

impl Piece {
    pub(crate) fn value(time_ns: i64, v: f64) -> Piece {
        Piece { time_ns, min: v, max: v, sum: v, count: 1 }
    }
}

/// A metric row as the cache knows it. A writer gives every row it writes (a new one, or
/// one that replaces rows) an id above all the ids in the table, so a row's content never
/// changes under its id; the file's identity, the row's time span and its length are in
/// the key as well, so that another file under the same name, or a row of another writer
/// that reused an id, is another key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Row {
    /// The file's (device, inode).
    pub(crate) file: (u64, u64),
    pub(crate) host: i64,
    pub(crate) start: i64,
    pub(crate) id: i64,
    pub(crate) end: i64,
    pub(crate) len: i64,
}

/// The key of one series in one row: the row and the series id.
type Key = (Row, i64);

/// Summaries of metric rows, shared by the connections of a reader (`kflame serve`).
#[derive(Debug, Default)]
pub struct SeriesCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    map: FxHashMap<Key, (Arc<[Piece]>, u64)>,
    clock: u64,
}

impl SeriesCache {
    /// An empty cache.
    pub fn new() -> SeriesCache {
        SeriesCache::default()
    }

    /// Series rows summarized.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.map.len())
    }

    /// True when nothing is summarized.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn get(&self, key: Key) -> Option<Arc<[Piece]>> {
        let mut inner = self.inner.lock().ok()?;
        inner.clock += 1;
        let now = inner.clock;
        let e = inner.map.get_mut(&key)?;
        e.1 = now;
        Some(e.0.clone())
    }

    pub(crate) fn put(&self, key: Key, slots: Arc<[Piece]>) {
        let Ok(mut inner) = self.inner.lock() else { return };
        if inner.map.len() >= MAX_ENTRIES {
            // The least recently used half goes.
            let mut used: Vec<u64> = inner.map.values().map(|e| e.1).collect();
            used.sort_unstable();
            let keep_from = used[used.len() / 2];
            inner.map.retain(|_, e| e.1 >= keep_from);
        }
        inner.clock += 1;
        let now = inner.clock;
        inner.map.insert(key, (slots, now));
    }
}

/// The slots of `values` (time-ordered): a piece per [`SLOT_NS`] (aligned on the epoch)
/// that holds values.
pub(crate) fn slots(values: &[(i64, f64)]) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for &(t, v) in values {
        let start = t.div_euclid(SLOT_NS) * SLOT_NS;
        match out.last_mut() {
            Some(p) if p.time_ns == start => add(p, &Piece::value(t, v)),
            _ => out.push(Piece { time_ns: start, ..Piece::value(t, v) }),
        }
    }
    out
}

fn add(p: &mut Piece, q: &Piece) {
    p.min = p.min.min(q.min);
    p.max = p.max.max(q.max);
    p.sum += q.sum;
    p.count += q.count;
}

/// The grid of a summarized range of `points` at most over `[from, to)`: a width of whole
/// slots such that the points it touches, aligned on the epoch, are at most `points`.
pub(crate) fn slot_width(from: i64, to: i64, points: usize) -> i64 {
    let points = points.max(1) as i64;
    let span = (to - from).max(1);
    let mut w = (span + points - 1) / points;
    w = (w + SLOT_NS - 1) / SLOT_NS * SLOT_NS;
    while (to - 1).div_euclid(w) - from.div_euclid(w) + 1 > points {
        w += SLOT_NS;
    }
    w
}

/// `[from, to)` grown to the cells of `width` (aligned on the epoch) its ends fall in.
pub(crate) fn whole_cells(from: i64, to: i64, width: i64) -> (i64, i64) {
    (from.div_euclid(width) * width, (to - 1).div_euclid(width) * width + width)
}

/// Points of width `width` whose starts are `origin` plus multiples of it, from pieces in
/// time order: each point's min, max, mean and count of the pieces it holds.
pub(crate) fn aggregate(pieces: &[Piece], origin: i64, width: i64) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    let mut acc: Option<Piece> = None;
    let flush = |a: Piece, out: &mut Vec<Point>| {
        out.push(Point {
            time_ns: a.time_ns,
            min: a.min,
            max: a.max,
            avg: a.sum / f64::from(a.count),
            count: a.count,
        });
    };
    for p in pieces {
        let start = origin + (p.time_ns - origin).div_euclid(width) * width;
        match &mut acc {
            Some(a) if a.time_ns == start => add(a, p),
            _ => {
                if let Some(a) = acc.take() {
                    flush(a, &mut out);
                }
                acc = Some(Piece { time_ns: start, ..*p });
            }
        }
    }
    if let Some(a) = acc {
        flush(a, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_from_slots_are_those_of_the_values() {
        // 2 h of values every second (with gaps), over a grid of whole slots: the same
        // points from the values and from their slots.
        let t0 = 1_700_000_000 * 1_000_000_000i64;
        let values: Vec<(i64, f64)> = (0..7200i64)
            .filter(|i| i % 97 != 0)
            .map(|i| (t0 + i * 1_000_000_000 + 3_000_000, ((i * 7919) % 1000) as f64 / 10.0))
            .collect();
        let (from, to) = (t0, t0 + 7200 * 1_000_000_000);
        let w = slot_width(from, to, 100);
        assert_eq!(w % SLOT_NS, 0);
        assert!(w >= (to - from) / 100);
        let direct = aggregate(&values.iter().map(|&(t, v)| Piece::value(t, v)).collect::<Vec<_>>(), 0, w);
        let summed = aggregate(&slots(&values), 0, w);
        assert!(direct.len() <= 100, "{} points", direct.len());
        assert_eq!(direct.len(), summed.len());
        for (a, b) in direct.iter().zip(&summed) {
            assert_eq!((a.time_ns, a.min, a.max, a.count), (b.time_ns, b.min, b.max, b.count));
            assert!((a.avg - b.avg).abs() < 1e-9, "{} {}", a.avg, b.avg);
        }
        assert_eq!(direct.iter().map(|p| p.count).sum::<u32>() as usize, values.len());
    }

    #[test]
    fn the_grid_never_passes_the_points_asked() {
        let t0 = 1_764_000_000 * 1_000_000_000i64 + 7_000_000_000;
        for points in [1, 2, 3, 50, 1000, 1100] {
            for span_s in [3600i64, 86_399, 86_400, 100_000] {
                let (from, to) = (t0, t0 + span_s * 1_000_000_000);
                let w = slot_width(from, to, points);
                let touched = (to - 1).div_euclid(w) - from.div_euclid(w) + 1;
                assert!(touched <= points as i64, "{points} points over {span_s} s: {touched}");
            }
        }
    }

    #[test]
    fn the_cache_forgets_the_least_used_half_when_full() {
        let c = SeriesCache::new();
        let one: Arc<[Piece]> = Arc::from(vec![Piece::value(0, 1.0)]);
        let key = |start: i64| (Row { file: (1, 2), host: 1, start, id: start, end: start + 1, len: 10 }, 7);
        for i in 0..MAX_ENTRIES as i64 {
            c.put(key(i), one.clone());
        }
        assert!(c.get(key(0)).is_some()); // used again: kept
        c.put(key(-1), one.clone());
        assert!(c.len() <= MAX_ENTRIES / 2 + 2);
        assert!(c.get(key(0)).is_some());
        assert!(c.get(key(-1)).is_some());
        assert!(c.get(key(1)).is_none());
    }
}
