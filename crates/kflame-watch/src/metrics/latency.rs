//! Latency metrics from histograms summed elsewhere (in the kernel, by the BPF programs of
//! `kflame-bpf`) and read once a second: percentiles, the largest value, the outliers and the
//! time waited per second, per label, as metrics of the catalog (`syscall.lat.p99[write]`), so
//! that charts, queries and triggers take them like any other. Every one is a function of the
//! histogram, its slow count and its span (`kflame_store::derived`): the store keeps the
//! histograms and answers the metrics from them, and the live values here are computed with the
//! same function, from the span the store keeps (the interval to the millisecond).

use crate::store::derived::{self, Stat};
use kflame::latency::{Histogram, LatencyKind, LatencyReading};

use super::Value;

/// Labels kept per family each second, the busiest; the others are summed under `other`.
pub const BUSIEST: usize = 8;

/// The metric names of one latency family.
struct Family {
    kind: LatencyKind,
    p50: &'static str,
    p99: &'static str,
    max: &'static str,
    slow: &'static str,
    /// Time waited per second (ms/s), for the families whose waits add up to a cost.
    wait: Option<&'static str>,
}

const FAMILIES: [Family; 5] = [
    Family {
        kind: LatencyKind::Syscall,
        p50: "syscall.lat.p50",
        p99: "syscall.lat.p99",
        max: "syscall.lat.max",
        slow: "syscall.slow",
        wait: None,
    },
    Family {
        kind: LatencyKind::Bio,
        p50: "bio.lat.p50",
        p99: "bio.lat.p99",
        max: "bio.lat.max",
        slow: "bio.slow",
        wait: None,
    },
    Family {
        kind: LatencyKind::Runq,
        p50: "runq.lat.p50",
        p99: "runq.lat.p99",
        max: "runq.lat.max",
        slow: "runq.slow",
        wait: Some("runq.wait"),
    },
    Family {
        kind: LatencyKind::OffCpu,
        p50: "offcpu.lat.p50",
        p99: "offcpu.lat.p99",
        max: "offcpu.lat.max",
        slow: "offcpu.slow",
        wait: Some("offcpu.wait"),
    },
    Family {
        kind: LatencyKind::Lock,
        p50: "lock.lat.p50",
        p99: "lock.lat.p99",
        max: "lock.lat.max",
        slow: "lock.slow",
        wait: Some("lock.wait"),
    },
];

impl Family {
    /// The metric name of `stat` in this family, if it has it.
    fn name(&self, stat: Stat) -> Option<&'static str> {
        match stat {
            Stat::P50 => Some(self.p50),
            Stat::P99 => Some(self.p99),
            Stat::Max => Some(self.max),
            Stat::Slow => Some(self.slow),
            Stat::Wait => self.wait,
        }
    }
}

/// The span of a read `secs` long, as a store keeps it (whole milliseconds), which the rates
/// are read over.
pub(super) fn span_ms(secs: f64) -> u32 {
    (secs * 1e3).round().clamp(0.0, f64::from(u32::MAX)) as u32
}

/// The metric values of one second of readings (`span_ms`: the interval, for rates): per
/// family, the total (label `""`), the [`BUSIEST`] labels by count and `other` for the rest;
/// for each, p50, p99 and max in ms, the slow events per second and, for waits that add up
/// (run queue, off-CPU, locks), the ms waited per second. The histograms the values were read
/// from, under the same labels, go into `kept` (what a store keeps, with the span, and reads
/// the values back from).
pub(super) fn values(
    readings: Vec<LatencyReading>,
    span_ms: u32,
    out: &mut Vec<Value>,
    kept: &mut Vec<LatencyReading>,
) {
    for family in &FAMILIES {
        let mut of: Vec<&LatencyReading> =
            readings.iter().filter(|r| r.kind == family.kind && r.histogram.total() > 0).collect();
        if of.is_empty() {
            continue;
        }
        of.sort_by(|a, b| b.histogram.total().cmp(&a.histogram.total()).then_with(|| a.label.cmp(&b.label)));
        let mut total = LatencyReading {
            kind: family.kind,
            label: String::new(),
            histogram: Histogram::default(),
            slow: 0,
        };
        let mut other: Option<LatencyReading> = None;
        let mut busiest = Vec::new();
        for (i, r) in of.into_iter().enumerate() {
            total.histogram.add(&r.histogram);
            total.slow += r.slow;
            if i < BUSIEST {
                busiest.push(r.clone());
            } else {
                let o = other.get_or_insert_with(|| LatencyReading {
                    kind: family.kind,
                    label: "other".into(),
                    histogram: Histogram::default(),
                    slow: 0,
                });
                o.histogram.add(&r.histogram);
                o.slow += r.slow;
            }
        }
        for r in std::iter::once(total).chain(busiest).chain(other) {
            push(family, &r, span_ms, out);
            kept.push(r);
        }
    }
}

/// The values of one label of a family.
fn push(family: &Family, r: &LatencyReading, span_ms: u32, out: &mut Vec<Value>) {
    // As a store computes them from the histogram it keeps (`derived`): a value read back is
    // the value a rule saw.
    for &stat in derived::stats(family.kind) {
        if let (Some(name), Some(value)) =
            (family.name(stat), derived::value(stat, &r.histogram, r.slow, span_ms))
        {
            out.push(Value { name, label: r.label.clone(), value });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(label: &str, ms: &[u64], slow: u64) -> LatencyReading {
        let mut histogram = Histogram::default();
        for &m in ms {
            histogram.record(m * 1_000_000);
        }
        LatencyReading { kind: LatencyKind::Syscall, label: label.into(), histogram, slow }
    }

    fn get(out: &[Value], name: &str, label: &str) -> Option<f64> {
        out.iter().find(|v| v.name == name && v.label == label).map(|v| v.value)
    }

    /// Per call and in total: percentiles within a bucket's error, the max exact, slow calls
    /// as a rate over the interval; past the busiest calls, the rest under `other`.
    #[test]
    fn percentiles_per_call_and_the_rest_as_other() {
        let writes: Vec<u64> = (1..=100).collect(); // 1..=100 ms
        let mut readings = vec![reading("write", &writes, 12)];
        for i in 0..BUSIEST + 2 {
            // Less busy calls: 20 - i calls of 1 ms each (the least busy go to `other`).
            readings.push(reading(&format!("call{i}"), &vec![1; 20 - i], 0));
        }
        let mut out = Vec::new();
        let mut kept = Vec::new();
        values(readings, 2000, &mut out, &mut kept);
        let p99 = get(&out, "syscall.lat.p99", "write").expect("p99[write]");
        assert!((p99 - 99.0).abs() <= 0.125 * 99.0, "{p99}");
        assert_eq!(get(&out, "syscall.lat.max", "write"), Some(100.0));
        assert_eq!(get(&out, "syscall.slow", "write"), Some(6.0));
        assert_eq!(get(&out, "syscall.slow", ""), Some(6.0));
        assert_eq!(get(&out, "syscall.lat.max", ""), Some(100.0));
        // write and the 7 busiest others are kept; call7, call8 and call9 go to `other`.
        assert!(get(&out, "syscall.lat.p50", "call6").is_some());
        assert!(get(&out, "syscall.lat.p50", "call7").is_none());
        assert!(get(&out, "syscall.lat.p50", "other").is_some());
        let labels: std::collections::BTreeSet<&str> = out.iter().map(|v| v.label.as_str()).collect();
        assert_eq!(labels.len(), 1 + BUSIEST + 1);
        // The histograms kept are those of the labels the values have.
        let kept_labels: std::collections::BTreeSet<&str> = kept.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(kept_labels, labels);
        assert_eq!(kept.iter().find(|r| r.label.is_empty()).map(|r| r.histogram.total()), Some(100 + 155));
        let mut none = Vec::new();
        values(vec![reading("read", &[], 0)], 1000, &mut none, &mut kept);
        assert!(none.is_empty(), "no calls, no values");
    }

    /// Every family has its metrics, each in the catalog and derived from the histograms by
    /// the store (the family's every derived metric, no other); a family whose waits add up
    /// has its wait rate: 3 waits of 100 ms on a run queue over 2 s are 150 ms/s.
    #[test]
    fn every_family_in_the_catalog_and_wait_rates() {
        for f in &FAMILIES {
            for name in [f.p50, f.p99, f.max, f.slow].into_iter().chain(f.wait) {
                assert!(crate::metrics::info(name).is_some(), "{name} is not in the catalog");
                assert!(name.starts_with(f.kind.as_str()), "{name}");
                let (kind, stat) = derived::derived(name).expect("derived");
                assert_eq!((kind, f.name(stat)), (f.kind, Some(name)));
            }
            for &stat in derived::stats(f.kind) {
                assert!(f.name(stat).is_some(), "{:?} of {}", stat, f.kind.as_str());
            }
            assert_eq!(f.wait.is_some(), derived::stats(f.kind).contains(&Stat::Wait));
        }
        let mut histogram = Histogram::default();
        for _ in 0..3 {
            histogram.record(100_000_000);
        }
        let r = LatencyReading { kind: LatencyKind::Runq, label: "cpu1".into(), histogram, slow: 3 };
        let (mut out, mut kept) = (Vec::new(), Vec::new());
        values(vec![r], 2000, &mut out, &mut kept);
        assert_eq!(get(&out, "runq.wait", "cpu1"), Some(150.0));
        assert_eq!(get(&out, "runq.wait", ""), Some(150.0));
        assert_eq!(get(&out, "runq.slow", "cpu1"), Some(1.5));
        assert_eq!(get(&out, "runq.lat.max", ""), Some(100.0));
    }

    /// A read's interval to the millisecond, as the store keeps it: the rates a rule sees are
    /// those read back.
    #[test]
    fn spans_to_the_millisecond() {
        assert_eq!(span_ms(1.0), 1000);
        assert_eq!(span_ms(0.99), 990);
        assert_eq!(span_ms(1.0004), 1000);
        assert_eq!(span_ms(0.0), 0);
        assert_eq!(span_ms(1e12), u32::MAX);
        let r = reading("write", &[20, 20, 20], 3);
        let (mut out, mut kept) = (Vec::new(), Vec::new());
        values(vec![r], span_ms(0.99), &mut out, &mut kept);
        assert_eq!(
            get(&out, "syscall.slow", "write"),
            derived::value(Stat::Slow, &kept[1].histogram, 3, 990)
        );
        assert_eq!(get(&out, "syscall.slow", "write"), Some(3.03));
        let (mut none, mut kept) = (Vec::new(), Vec::new());
        values(vec![reading("write", &[20], 1)], 0, &mut none, &mut kept);
        assert!(get(&none, "syscall.slow", "write").is_none(), "no interval, no rate");
        assert!(get(&none, "syscall.lat.max", "write").is_some());
    }
}
