//! Latency metrics from histograms summed elsewhere (in the kernel, by the BPF programs of
//! `kflame-bpf`) and read once a second: percentiles, the largest value and the outliers per
//! second, per label, as metrics of the catalog (`syscall.lat.p99[write]`), so that charts,
//! queries and triggers take them like any other.

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

/// The metric values of one second of readings (`secs`: the interval, for rates): per
/// family, the total (label `""`), the [`BUSIEST`] labels by count and `other` for the rest;
/// for each, p50, p99 and max in ms, the slow events per second and, for waits that add up
/// (run queue, off-CPU, locks), the ms waited per second. The histograms the values were read
/// from, under the same labels, go into `kept` (what a store keeps for heat maps).
pub(super) fn values(
    readings: Vec<LatencyReading>,
    secs: f64,
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
            push(family, &r, secs, out);
            kept.push(r);
        }
    }
}

/// The values of one label of a family.
fn push(family: &Family, r: &LatencyReading, secs: f64, out: &mut Vec<Value>) {
    let h = &r.histogram;
    // As a store computes them from the histogram it keeps (`derived`): a value read back is
    // the value a rule saw.
    let of = |stat| derived::value(stat, h);
    for (name, v) in [(family.p50, of(Stat::P50)), (family.p99, of(Stat::P99)), (family.max, of(Stat::Max))] {
        if let Some(value) = v {
            out.push(Value { name, label: r.label.clone(), value });
        }
    }
    if secs > 0.0 {
        out.push(Value { name: family.slow, label: r.label.clone(), value: r.slow as f64 / secs });
        if let Some(wait) = family.wait {
            out.push(Value { name: wait, label: r.label.clone(), value: h.sum_ns as f64 / 1e6 / secs });
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
        values(readings, 2.0, &mut out, &mut kept);
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
        values(vec![reading("read", &[], 0)], 1.0, &mut none, &mut kept);
        assert!(none.is_empty(), "no calls, no values");
    }

    /// Every family has its metrics, each in the catalog; a family whose waits add up has
    /// its wait rate: 3 waits of 100 ms on a run queue over 2 s are 150 ms/s.
    #[test]
    fn every_family_in_the_catalog_and_wait_rates() {
        for f in &FAMILIES {
            for name in [f.p50, f.p99, f.max, f.slow].into_iter().chain(f.wait) {
                assert!(crate::metrics::info(name).is_some(), "{name} is not in the catalog");
                assert!(name.starts_with(f.kind.as_str()), "{name}");
            }
        }
        let mut histogram = Histogram::default();
        for _ in 0..3 {
            histogram.record(100_000_000);
        }
        let r = LatencyReading { kind: LatencyKind::Runq, label: "cpu1".into(), histogram, slow: 3 };
        let (mut out, mut kept) = (Vec::new(), Vec::new());
        values(vec![r], 2.0, &mut out, &mut kept);
        assert_eq!(get(&out, "runq.wait", "cpu1"), Some(150.0));
        assert_eq!(get(&out, "runq.wait", ""), Some(150.0));
        assert_eq!(get(&out, "runq.slow", "cpu1"), Some(1.5));
        assert_eq!(get(&out, "runq.lat.max", ""), Some(100.0));
    }
}
