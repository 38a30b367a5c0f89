//! Metrics read from the latency histograms, not stored twice: `FAMILY.lat.p50`,
//! `FAMILY.lat.p99` and `FAMILY.lat.max` (ms) of every label are functions of its histogram
//! of the second (or, in hours no longer recent, of its 10 s), and the rates `FAMILY.slow`
//! (slow events per second) and, for the waits that add up (run queue, off-CPU, locks),
//! `FAMILY.wait` (ms waited per second) functions of the histogram, its slow count and the
//! milliseconds it covers (its span, stored with it). A store keeps the histogram and computes
//! them when they are asked for. The watcher computes the live values for its triggers with the
//! same function ([`value`]), so a value read back is the value a rule saw.
//!
//! Both backends answer [`crate::Query::series_many`] through [`series_many`], which reads
//! the stored names with the backend's own query and these from its latency histograms. Files
//! written before the rates were derived hold them as stored values: where a series has one,
//! it is answered, and the histogram covering its time gives none ([`series_many`]).

use std::collections::{BTreeSet, HashMap};

use kflame::latency::{Histogram, LatencyKind};

use crate::{LatencyQuery, LatencySeries, Point, Series, SeriesQuery, StoreError, stored_metric_value};

/// What a derived metric reads of a histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// The median (ms).
    P50,
    /// The 99th percentile (ms).
    P99,
    /// The largest latency (ms).
    Max,
    /// Events over the outlier threshold per second of the histogram's span.
    Slow,
    /// Milliseconds waited per second of the span (the latencies' sum over the span): the
    /// families whose waits add up to a cost alone ([`stats`]).
    Wait,
}

impl Stat {
    /// The metric name's suffix after `FAMILY.`.
    pub fn suffix(self) -> &'static str {
        match self {
            Stat::P50 => "lat.p50",
            Stat::P99 => "lat.p99",
            Stat::Max => "lat.max",
            Stat::Slow => "slow",
            Stat::Wait => "wait",
        }
    }

    /// Whether it is a rate over the span (stored as a metric by writers before it was
    /// derived).
    pub fn is_rate(self) -> bool {
        matches!(self, Stat::Slow | Stat::Wait)
    }
}

const KINDS: [LatencyKind; 5] =
    [LatencyKind::Syscall, LatencyKind::Bio, LatencyKind::Runq, LatencyKind::OffCpu, LatencyKind::Lock];

/// The derived metrics of a family: every family's percentiles, maximum and slow rate; the
/// wait rate of run-queue, off-CPU and lock waits (a system call or an IO waited is no cost
/// of the machine's that adds up).
pub fn stats(kind: LatencyKind) -> &'static [Stat] {
    match kind {
        LatencyKind::Runq | LatencyKind::OffCpu | LatencyKind::Lock => {
            &[Stat::P50, Stat::P99, Stat::Max, Stat::Slow, Stat::Wait]
        }
        _ => &[Stat::P50, Stat::P99, Stat::Max, Stat::Slow],
    }
}

/// The family and statistic of a derived metric's name (`syscall.lat.p99`), `None` for a
/// stored metric.
pub fn derived(name: &str) -> Option<(LatencyKind, Stat)> {
    let (family, stat) = name.split_once('.')?;
    let kind = KINDS.into_iter().find(|k| k.as_str() == family)?;
    let stat = stats(kind).iter().copied().find(|s| s.suffix() == stat)?;
    Some((kind, stat))
}

/// The name of a family's statistic (`syscall.lat.p99`), as the metric catalog has it.
pub fn name(kind: LatencyKind, stat: Stat) -> String {
    format!("{}.{}", kind.as_str(), stat.suffix())
}

/// The metric's value for one histogram (`slow`: its events over the outlier threshold;
/// `span_ms`: the milliseconds it covers), rounded as stored metrics are; `None` when it
/// counted nothing, or, for a rate, covers no time.
pub fn value(stat: Stat, h: &Histogram, slow: u64, span_ms: u32) -> Option<f64> {
    if h.total() == 0 || (stat.is_rate() && span_ms == 0) {
        return None;
    }
    let secs = f64::from(span_ms) / 1e3;
    let v = match stat {
        Stat::P50 => h.quantile(0.5)? / 1e6,
        Stat::P99 => h.quantile(0.99)? / 1e6,
        Stat::Max => h.max_ns as f64 / 1e6,
        Stat::Slow => slow as f64 / secs,
        Stat::Wait => h.sum_ns as f64 / 1e6 / secs,
    };
    Some(stored_metric_value(v))
}

/// [`value`] of a stored histogram.
pub fn point_value(stat: Stat, p: &crate::LatencyPoint) -> Option<f64> {
    value(stat, &p.histogram, p.slow, p.span_ms)
}

/// The series of `names` over `q`, in the order of `names`: the stored ones from `stored`
/// (the backend's query of its metric rows, asked once for all of them with `q`), the derived
/// ones from `latency` (its histograms), resampled as `q.points` asks (cells of equal width
/// from the range's start, each with min, max, mean and count; a series of at most `points`
/// values keeps every value).
///
/// A rate (`FAMILY.slow`, `FAMILY.wait`) is also asked of `stored`, every value (`points`
/// `None`): writers before it was derived stored it. A value stored in a series wins over the
/// histogram whose span holds its time, so that a range over both old and new rows has one
/// point per second: the stored one where there is one, the derived one elsewhere.
pub fn series_many(
    names: &[&str],
    q: &SeriesQuery<'_>,
    stored: impl Fn(&[&str], &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError>,
    latency: impl Fn(&LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError>,
) -> Result<Vec<Series>, StoreError> {
    let plain: Vec<&str> = names.iter().copied().filter(|n| derived(n).is_none()).collect();
    if plain.len() == names.len() {
        return stored(names, q);
    }
    let mut by_name: HashMap<String, Vec<Series>> = HashMap::new();
    if !plain.is_empty() {
        for s in stored(&plain, q)? {
            by_name.entry(s.name.clone()).or_default().push(s);
        }
    }
    let mut rates: Vec<&str> =
        names.iter().copied().filter(|n| derived(n).is_some_and(|(_, s)| s.is_rate())).collect();
    rates.sort_unstable();
    rates.dedup();
    let mut old: Old = HashMap::new();
    if !rates.is_empty() {
        for s in stored(&rates, &SeriesQuery { points: None, ..*q })? {
            let values = s.points.iter().map(|p| (p.time_ns, p.avg)).collect();
            old.insert((s.name, s.host, s.label), values);
        }
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for &n in names {
        if !done.insert(n) {
            continue;
        }
        match derived(n) {
            Some((kind, stat)) => out.extend(derived_series(n, kind, stat, q, &latency, &mut old)?),
            None => out.extend(by_name.remove(n).unwrap_or_default()),
        }
    }
    Ok(out)
}

/// Values stored under derived names by older writers, per (name, host, label), in time order.
type Old = HashMap<(String, String, String), Vec<(i64, f64)>>;

/// Histogram times are kept to the millisecond: a value stored with a histogram's read is
/// at its time or within the millisecond after.
const TIME_UNIT_NS: i64 = 1_000_000;

/// One derived metric's series per host and label, the values `old` holds of it merged in.
fn derived_series(
    name: &str,
    kind: LatencyKind,
    stat: Stat,
    q: &SeriesQuery<'_>,
    latency: &impl Fn(&LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError>,
    old: &mut Old,
) -> Result<Vec<Series>, StoreError> {
    let found =
        latency(&LatencyQuery { kind, label: q.label, host: q.host, from_ns: q.from_ns, to_ns: q.to_ns })?;
    let mut out: Vec<Series> = Vec::with_capacity(found.len());
    for s in found {
        let stored = old.remove(&(name.to_string(), s.host.clone(), s.label.clone())).unwrap_or_default();
        let mut values: Vec<(i64, f64)> = s
            .points
            .iter()
            .filter(|p| !covered(&stored, p.time_ns, p.span_ms))
            .filter_map(|p| Some((p.time_ns, point_value(stat, p)?)))
            .collect();
        if !stored.is_empty() {
            values.extend(stored);
            values.sort_by_key(|v| v.0);
        }
        out.push(Series {
            host: s.host,
            name: name.to_string(),
            label: s.label,
            points: resample(&values, q.from_ns, q.to_ns, q.points),
        });
    }
    // Stored values of series without histograms in the range.
    let left: Vec<(String, String, String)> = old.keys().filter(|k| k.0 == name).cloned().collect();
    for key in left {
        let values = old.remove(&key).unwrap_or_default();
        let (_, host, label) = key;
        out.push(Series {
            host,
            name: name.to_string(),
            label,
            points: resample(&values, q.from_ns, q.to_ns, q.points),
        });
    }
    out.retain(|s| !s.points.is_empty());
    out.sort_by(|a, b| (&a.host, &a.label).cmp(&(&b.host, &b.label)));
    Ok(out)
}

/// Whether one of `stored` (times in order) lies in the span of a histogram read at `time_ns`
/// covering `span_ms`: `(time_ns - span, time_ns]`, to the millisecond.
fn covered(stored: &[(i64, f64)], time_ns: i64, span_ms: u32) -> bool {
    let from = time_ns.saturating_sub(i64::from(span_ms).saturating_mul(TIME_UNIT_NS));
    let i = stored.partition_point(|&(t, _)| t <= from);
    stored.get(i).is_some_and(|&(t, _)| t < time_ns.saturating_add(TIME_UNIT_NS))
}

/// `values` (in time order) as points: each value alone, or, when there are more than
/// `points`, cells of equal width from `from_ns` with min, max, mean and count (a cell of one
/// value is that value at its own time).
pub fn resample(values: &[(i64, f64)], from_ns: i64, to_ns: i64, points: Option<usize>) -> Vec<Point> {
    let one = |&(time_ns, v): &(i64, f64)| Point { time_ns, min: v, max: v, avg: v, count: 1 };
    let n = match points {
        Some(n) if n > 0 && values.len() > n => n,
        _ => return values.iter().map(one).collect(),
    };
    let width = (((to_ns as i128 - from_ns as i128).max(1) + n as i128 - 1) / n as i128).max(1) as i64;
    let mut out: Vec<Point> = Vec::new();
    let mut cell_of_last = None;
    for &(t, v) in values {
        let cell =
            from_ns.saturating_add((t.saturating_sub(from_ns)).div_euclid(width).saturating_mul(width));
        match out.last_mut() {
            Some(p) if cell_of_last == Some(cell) => {
                p.min = p.min.min(v);
                p.max = p.max.max(v);
                p.avg += (v - p.avg) / f64::from(p.count + 1);
                p.count += 1;
                p.time_ns = cell;
            }
            _ => {
                out.push(Point { time_ns: t, min: v, max: v, avg: v, count: 1 });
                cell_of_last = Some(cell);
            }
        }
    }
    out
}

/// The derived metrics' (name, label) pairs of the families and labels a store has
/// histograms for (what [`crate::Query::metric_names`] adds to the stored names).
pub fn names(labels: &[(LatencyKind, String)]) -> Vec<(String, String)> {
    labels
        .iter()
        .flat_map(|(kind, label)| stats(*kind).iter().map(move |&s| (name(*kind, s), label.clone())))
        .collect()
}

/// `stored` (sorted (name, label) pairs) with the derived metrics of `labels` added, sorted,
/// each once.
pub fn with_names(stored: Vec<(String, String)>, labels: &[(LatencyKind, String)]) -> Vec<(String, String)> {
    let mut all: BTreeSet<(String, String)> = stored.into_iter().collect();
    all.extend(names(labels));
    all.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LatencyPoint;

    fn hist(ms: &[u64]) -> Histogram {
        let mut h = Histogram::default();
        for &m in ms {
            h.record(m * 1_000_000);
        }
        h
    }

    /// Every derived name is in the metric catalog, every latency family's metric of the
    /// catalog is derived, and no other name is.
    #[test]
    fn derived_names_are_the_catalogs_latency_metrics() {
        for kind in KINDS {
            for &stat in stats(kind) {
                let n = name(kind, stat);
                assert_eq!(derived(&n), Some((kind, stat)));
                assert!(crate::metrics::METRICS.iter().any(|m| m.name == n), "{n} not in the catalog");
            }
        }
        for m in crate::metrics::METRICS {
            let family = KINDS.iter().any(|k| m.name.starts_with(&format!("{}.", k.as_str())));
            assert_eq!(derived(m.name).is_some(), family, "{}", m.name);
        }
        for n in ["syscall.wait", "bio.wait", "cpu.usr", "syscall.lat", "lat.p99", "syscall.lat.p98", "slow"]
        {
            assert_eq!(derived(n), None, "{n}");
        }
    }

    fn point(time_ns: i64, histogram: &Histogram, slow: u64, span_ms: u32) -> LatencyPoint {
        LatencyPoint { time_ns, histogram: histogram.clone(), slow, span_ms }
    }

    /// Rates over the span: 3 slow events and 120 ms waited in 1.5 s are 2/s and 80 ms/s;
    /// nothing counted or no span, no value.
    #[test]
    fn rates_over_the_span() {
        let h = hist(&[40, 40, 40]);
        assert_eq!(value(Stat::Slow, &h, 3, 1500), Some(2.0));
        assert_eq!(value(Stat::Wait, &h, 3, 1500), Some(80.0));
        assert_eq!(value(Stat::Wait, &h, 3, 990), Some(stored_metric_value(120.0 / 0.99)));
        assert_eq!(value(Stat::Slow, &h, 3, 0), None);
        assert_eq!(value(Stat::Max, &h, 3, 0), Some(40.0));
        assert_eq!(value(Stat::Slow, &Histogram::default(), 0, 1000), None);
    }

    /// Stored names come from the backend, derived ones from its histograms, in the order
    /// asked; values as the watcher computes them; empty seconds leave no point.
    #[test]
    fn series_from_histograms_in_the_order_asked() {
        let writes = hist(&[1, 2, 40]);
        let latency = |q: &LatencyQuery<'_>| -> Result<Vec<LatencySeries>, StoreError> {
            assert_eq!(q.kind, LatencyKind::Syscall);
            Ok(vec![LatencySeries {
                host: "web1".into(),
                kind: q.kind,
                label: "write".into(),
                points: vec![point(1_000, &writes, 1, 1000), point(2_000, &Histogram::default(), 0, 1000)],
            }])
        };
        let asked = std::cell::RefCell::new(Vec::new());
        let stored = |names: &[&str], q: &SeriesQuery<'_>| -> Result<Vec<Series>, StoreError> {
            asked.borrow_mut().push((names.join(","), q.points));
            Ok(names
                .iter()
                .filter(|n| **n == "cpu.usr")
                .map(|n| Series {
                    host: "web1".into(),
                    name: n.to_string(),
                    label: "".into(),
                    points: vec![],
                })
                .collect())
        };
        let q =
            SeriesQuery { name: "", label: None, host: None, from_ns: 0, to_ns: 10_000, points: Some(100) };
        let got = series_many(
            &["syscall.lat.max", "cpu.usr", "syscall.slow", "syscall.lat.p50"],
            &q,
            stored,
            latency,
        )
        .unwrap();
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["syscall.lat.max", "cpu.usr", "syscall.slow", "syscall.lat.p50"]);
        assert_eq!(got[0].points.len(), 1);
        assert_eq!(got[0].points[0].avg, 40.0);
        assert_eq!(got[2].points[0].avg, 1.0);
        assert_eq!(got[3].points[0].avg, value(Stat::P50, &writes, 1, 1000).unwrap());
        // The stored names with the query's resampling; the rates, every value, for the
        // values older writers stored.
        assert_eq!(*asked.borrow(), [("cpu.usr".to_string(), Some(100)), ("syscall.slow".to_string(), None)]);
    }

    /// A range over the seconds an older writer stored the rate of and those it is derived
    /// in: one point per second, the stored value where there is one; a series with stored
    /// values alone is answered too.
    #[test]
    fn stored_rates_win_over_the_histograms_covering_them() {
        const S: i64 = 1_000_000_000;
        let h = hist(&[20, 30]);
        let latency = |q: &LatencyQuery<'_>| -> Result<Vec<LatencySeries>, StoreError> {
            assert_eq!(q.kind, LatencyKind::Lock);
            // Seconds 1 to 6, the first three also stored (old writer), 1 s each; then a
            // 10-s histogram of a folded hour holding second 20's stored value.
            let mut points: Vec<LatencyPoint> = (1..=6).map(|i| point(i * S, &h, 2, 1000)).collect();
            points.push(point(30 * S - 1_000_000, &h, 2, 10_000));
            Ok(vec![LatencySeries { host: "web1".into(), kind: q.kind, label: "mutex".into(), points }])
        };
        let stored = |names: &[&str], q: &SeriesQuery<'_>| -> Result<Vec<Series>, StoreError> {
            assert_eq!(names, ["lock.wait"]);
            assert_eq!(q.points, None);
            let one = |t: i64, v: f64| Point { time_ns: t, min: v, max: v, avg: v, count: 1 };
            Ok(vec![
                Series {
                    host: "web1".into(),
                    name: "lock.wait".into(),
                    label: "mutex".into(),
                    // Stored within the millisecond of the histogram's time, as a writer did.
                    points: vec![
                        one(S + 300_000, 49.0),
                        one(2 * S, 49.0),
                        one(3 * S, 49.0),
                        one(25 * S, 7.0),
                    ],
                },
                Series {
                    host: "web1".into(),
                    name: "lock.wait".into(),
                    label: "spinlock".into(),
                    points: vec![one(S, 3.0)],
                },
            ])
        };
        let q = SeriesQuery { name: "", label: None, host: None, from_ns: 0, to_ns: 40 * S, points: None };
        let got = series_many(&["lock.wait"], &q, stored, latency).unwrap();
        assert_eq!(got.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["mutex", "spinlock"]);
        let mutex: Vec<(i64, f64)> = got[0].points.iter().map(|p| (p.time_ns, p.avg)).collect();
        let derived = value(Stat::Wait, &h, 2, 1000).unwrap();
        assert_eq!(derived, 50.0);
        assert_eq!(
            mutex,
            [
                (S + 300_000, 49.0),
                (2 * S, 49.0),
                (3 * S, 49.0),
                (4 * S, derived),
                (5 * S, derived),
                (6 * S, derived),
                (25 * S, 7.0),
            ]
        );
        assert_eq!(got[1].points.len(), 1);
    }

    /// More values than points: cells of equal width from the range's start.
    #[test]
    fn resampled_into_cells() {
        let values: Vec<(i64, f64)> = (0..10).map(|i| (i * 10, i as f64)).collect();
        assert_eq!(resample(&values, 0, 100, Some(20)).len(), 10);
        let cells = resample(&values, 0, 100, Some(2));
        assert_eq!(cells.len(), 2);
        assert_eq!(
            (cells[0].time_ns, cells[0].min, cells[0].max, cells[0].avg, cells[0].count),
            (0, 0.0, 4.0, 2.0, 5)
        );
        assert_eq!((cells[1].time_ns, cells[1].count), (50, 5));
    }
}
