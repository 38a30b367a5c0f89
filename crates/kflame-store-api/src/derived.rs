//! Metrics read from the latency histograms, not stored twice: `FAMILY.lat.p50`,
//! `FAMILY.lat.p99` and `FAMILY.lat.max` (ms) of every label are functions of its histogram
//! of the second (or, in hours no longer recent, of its 10 s), so a store keeps the histogram
//! and computes them when they are asked for. The watcher computes the live values for its
//! triggers with the same function ([`value`]), so a value read back is the value a rule saw.
//! Rates (`FAMILY.slow`, `FAMILY.wait`) need the interval each reading covered and stay
//! stored as metrics.
//!
//! Both backends answer [`crate::Query::series_many`] through [`series_many`], which reads
//! the stored names with the backend's own query and these from its latency histograms.

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
}

impl Stat {
    /// The metric name's suffix after `FAMILY.`.
    pub fn suffix(self) -> &'static str {
        match self {
            Stat::P50 => "lat.p50",
            Stat::P99 => "lat.p99",
            Stat::Max => "lat.max",
        }
    }
}

const KINDS: [LatencyKind; 5] =
    [LatencyKind::Syscall, LatencyKind::Bio, LatencyKind::Runq, LatencyKind::OffCpu, LatencyKind::Lock];
const STATS: [Stat; 3] = [Stat::P50, Stat::P99, Stat::Max];

/// The family and statistic of a derived metric's name (`syscall.lat.p99`), `None` for a
/// stored metric.
pub fn derived(name: &str) -> Option<(LatencyKind, Stat)> {
    let (family, stat) = name.split_once('.')?;
    let kind = KINDS.into_iter().find(|k| k.as_str() == family)?;
    let stat = STATS.into_iter().find(|s| s.suffix() == stat)?;
    Some((kind, stat))
}

/// The name of a family's statistic (`syscall.lat.p99`), as the metric catalog has it.
pub fn name(kind: LatencyKind, stat: Stat) -> String {
    format!("{}.{}", kind.as_str(), stat.suffix())
}

/// The metric's value for one histogram, in ms as stored metrics are rounded; `None` when it
/// counted nothing.
pub fn value(stat: Stat, h: &Histogram) -> Option<f64> {
    if h.total() == 0 {
        return None;
    }
    let ns = match stat {
        Stat::P50 => h.quantile(0.5)?,
        Stat::P99 => h.quantile(0.99)?,
        Stat::Max => h.max_ns as f64,
    };
    Some(stored_metric_value(ns / 1e6))
}

/// The series of `names` over `q`, in the order of `names`: the stored ones from `stored`
/// (the backend's query of its metric rows, asked once for all of them), the derived ones
/// from `latency` (its histograms), resampled as `q.points` asks (cells of equal width from
/// the range's start, each with min, max, mean and count; a series of at most `points`
/// values keeps every value).
pub fn series_many(
    names: &[&str],
    q: &SeriesQuery<'_>,
    stored: impl FnOnce(&[&str]) -> Result<Vec<Series>, StoreError>,
    latency: impl Fn(&LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError>,
) -> Result<Vec<Series>, StoreError> {
    let plain: Vec<&str> = names.iter().copied().filter(|n| derived(n).is_none()).collect();
    if plain.len() == names.len() {
        return stored(names);
    }
    let mut by_name: HashMap<String, Vec<Series>> = HashMap::new();
    if !plain.is_empty() {
        for s in stored(&plain)? {
            by_name.entry(s.name.clone()).or_default().push(s);
        }
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for &n in names {
        if !done.insert(n) {
            continue;
        }
        match derived(n) {
            Some((kind, stat)) => out.extend(derived_series(n, kind, stat, q, &latency)?),
            None => out.extend(by_name.remove(n).unwrap_or_default()),
        }
    }
    Ok(out)
}

/// One derived metric's series per host and label.
fn derived_series(
    name: &str,
    kind: LatencyKind,
    stat: Stat,
    q: &SeriesQuery<'_>,
    latency: &impl Fn(&LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError>,
) -> Result<Vec<Series>, StoreError> {
    let found =
        latency(&LatencyQuery { kind, label: q.label, host: q.host, from_ns: q.from_ns, to_ns: q.to_ns })?;
    let mut out: Vec<Series> = found
        .into_iter()
        .map(|s| {
            let values: Vec<(i64, f64)> =
                s.points.iter().filter_map(|p| Some((p.time_ns, value(stat, &p.histogram)?))).collect();
            Series {
                host: s.host,
                name: name.to_string(),
                label: s.label,
                points: resample(&values, q.from_ns, q.to_ns, q.points),
            }
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    out.sort_by(|a, b| (&a.host, &a.label).cmp(&(&b.host, &b.label)));
    Ok(out)
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
        .flat_map(|(kind, label)| STATS.into_iter().map(move |s| (name(*kind, s), label.clone())))
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

    /// Every derived name is in the metric catalog, and no stored name is derived.
    #[test]
    fn derived_names_are_the_catalogs_percentiles() {
        for kind in KINDS {
            for stat in STATS {
                let n = name(kind, stat);
                assert_eq!(derived(&n), Some((kind, stat)));
                assert!(crate::metrics::METRICS.iter().any(|m| m.name == n), "{n} not in the catalog");
            }
        }
        for n in ["syscall.slow", "runq.wait", "cpu.usr", "syscall.lat", "lat.p99", "syscall.lat.p98"] {
            assert_eq!(derived(n), None, "{n}");
        }
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
                points: vec![
                    LatencyPoint { time_ns: 1_000, histogram: writes.clone(), slow: 1 },
                    LatencyPoint { time_ns: 2_000, histogram: Histogram::default(), slow: 0 },
                ],
            }])
        };
        let stored = |names: &[&str]| -> Result<Vec<Series>, StoreError> {
            assert_eq!(names, ["syscall.slow"]);
            Ok(vec![Series {
                host: "web1".into(),
                name: "syscall.slow".into(),
                label: "write".into(),
                points: vec![],
            }])
        };
        let q = SeriesQuery { name: "", label: None, host: None, from_ns: 0, to_ns: 10_000, points: None };
        let got = series_many(&["syscall.lat.max", "syscall.slow", "syscall.lat.p50"], &q, stored, latency)
            .unwrap();
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["syscall.lat.max", "syscall.slow", "syscall.lat.p50"]);
        assert_eq!(got[0].points.len(), 1);
        assert_eq!(got[0].points[0].avg, 40.0);
        assert_eq!(got[2].points[0].avg, value(Stat::P50, &writes).unwrap());
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
