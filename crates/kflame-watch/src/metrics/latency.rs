//! Latency metrics from histograms summed elsewhere (in the kernel, by the BPF programs of
//! `kflame-bpf`) and read once a second: percentiles, the largest value and the outliers per
//! second, per label, as metrics of the catalog (`syscall.lat.p99[write]`), so that charts,
//! queries and triggers take them like any other.

use kflame::latency::{Histogram, LatencyKind, LatencyReading};

use super::Value;

/// Labels kept per family each second, the busiest; the others are summed under `other`.
pub const BUSIEST: usize = 8;

/// The metric values of one second of readings (`secs`: the interval, for rates): per
/// family, the total (label `""`), the [`BUSIEST`] labels by count and `other` for the rest;
/// for each, p50, p99 and max in ms and the slow events per second.
pub(super) fn values(readings: Vec<LatencyReading>, secs: f64, out: &mut Vec<Value>) {
    let mut syscalls: Vec<LatencyReading> =
        readings.into_iter().filter(|r| r.kind == LatencyKind::Syscall && r.histogram.total() > 0).collect();
    if syscalls.is_empty() {
        return;
    }
    syscalls
        .sort_by(|a, b| b.histogram.total().cmp(&a.histogram.total()).then_with(|| a.label.cmp(&b.label)));
    let mut total = Histogram::default();
    let mut total_slow = 0;
    let mut other: Option<(Histogram, u64)> = None;
    let mut kept = Vec::new();
    for (i, r) in syscalls.into_iter().enumerate() {
        total.add(&r.histogram);
        total_slow += r.slow;
        if i < BUSIEST {
            kept.push(r);
        } else {
            let o = other.get_or_insert_with(|| (Histogram::default(), 0));
            o.0.add(&r.histogram);
            o.1 += r.slow;
        }
    }
    let mut push = |label: &str, h: &Histogram, slow: u64| {
        let ms = |q: f64| h.quantile(q).map(|ns| ns / 1e6);
        for (name, v) in [
            ("syscall.lat.p50", ms(0.5)),
            ("syscall.lat.p99", ms(0.99)),
            ("syscall.lat.max", Some(h.max_ns as f64 / 1e6)),
        ] {
            if let Some(value) = v {
                out.push(Value { name, label: label.to_string(), value });
            }
        }
        if secs > 0.0 {
            out.push(Value { name: "syscall.slow", label: label.to_string(), value: slow as f64 / secs });
        }
    };
    push("", &total, total_slow);
    for r in &kept {
        push(&r.label, &r.histogram, r.slow);
    }
    if let Some((h, slow)) = other {
        push("other", &h, slow);
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
        values(readings, 2.0, &mut out);
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
        let mut none = Vec::new();
        values(vec![reading("read", &[], 0)], 1.0, &mut none);
        assert!(none.is_empty(), "no calls, no values");
    }
}
