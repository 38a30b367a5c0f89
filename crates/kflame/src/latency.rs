//! Latency histograms: one bucket scheme for every latency kflame counts (system calls, block
//! IO, run queue, off-CPU, lock waits), so that what a BPF program counts in the kernel, what a
//! store keeps and what a page draws are the same buckets, and percentiles are read from them
//! the same way everywhere.
//!
//! Log-linear buckets, as HdrHistogram's with two significant bits: below 1024 ns, four
//! buckets of 256 ns; above, every power of two is split in four equal buckets. A bucket is
//! at most a quarter of its lower bound wide (a percentile read from it is within 25%, within
//! 12.5% once interpolated), from 256 ns up to 2^41 ns (about 36 minutes, the last bucket
//! open-ended). The kernel side computes [`slot_of`] with shifts only (`src/bpf/` of
//! `kflame-bpf` mirrors it).

/// Buckets of a histogram.
pub const SLOTS: usize = 128;

/// The width of the first buckets, as a shift: 256 ns.
const UNIT_SHIFT: u32 = 8;

/// The bucket of a latency of `ns` nanoseconds.
pub fn slot_of(ns: u64) -> usize {
    let v = ns >> UNIT_SHIFT;
    if v < 4 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= 2
    let sub = (v >> (msb - 2)) & 3;
    ((4 * (msb - 1) + sub as u32) as usize).min(SLOTS - 1)
}

/// The lowest latency (ns) of bucket `slot`.
pub fn slot_lower(slot: usize) -> u64 {
    let slot = slot.min(SLOTS - 1) as u64;
    if slot < 4 {
        return slot << UNIT_SHIFT;
    }
    let msb = slot / 4 + 1;
    let sub = slot % 4;
    ((1u64 << msb) + (sub << (msb - 2))) << UNIT_SHIFT
}

/// The latency just above bucket `slot` (ns): the next bucket's lower bound (the last one's
/// as if it had a next).
pub fn slot_upper(slot: usize) -> u64 {
    match slot + 1 < SLOTS {
        true => slot_lower(slot + 1),
        false => {
            let lo = slot_lower(SLOTS - 1);
            lo + lo / 4
        }
    }
}

/// A latency histogram over [`SLOTS`] buckets, with its largest value and the sum of what
/// it counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// Events per bucket.
    pub counts: Vec<u64>,
    /// The largest latency seen (ns), 0 when unknown.
    pub max_ns: u64,
    /// The latencies summed (ns): time waited, for rates such as `lock.wait`.
    pub sum_ns: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram { counts: vec![0; SLOTS], max_ns: 0, sum_ns: 0 }
    }
}

impl Histogram {
    /// Counts one latency.
    pub fn record(&mut self, ns: u64) {
        self.counts[slot_of(ns)] += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }

    /// The histogram of the values of a kernel map: [`SLOTS`] counts, the largest value and
    /// the sum, per CPU, added up (the largest of the largest).
    pub fn from_per_cpu<'a>(values: impl IntoIterator<Item = (&'a [u64], u64, u64)>) -> Histogram {
        let mut h = Histogram::default();
        for (counts, max_ns, sum_ns) in values {
            for (a, b) in h.counts.iter_mut().zip(counts) {
                *a += b;
            }
            h.max_ns = h.max_ns.max(max_ns);
            h.sum_ns = h.sum_ns.saturating_add(sum_ns);
        }
        h
    }

    /// Adds `other` to this one.
    pub fn add(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
    }

    /// Events counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Events of at least `ns` (those of the bucket holding `ns` counted when it starts at
    /// `ns` or above: a bucket is counted whole or not at all).
    pub fn at_least(&self, ns: u64) -> u64 {
        self.counts.iter().enumerate().filter(|(s, _)| slot_lower(*s) >= ns).map(|(_, c)| c).sum()
    }

    /// The `q` quantile (0 to 1) in ns, interpolated linearly within its bucket (as
    /// Prometheus' `histogram_quantile`), never above the largest value seen; `None` for an
    /// empty histogram.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut below = 0u64;
        for (slot, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            if (below + c) as f64 >= rank {
                let (lo, hi) = (slot_lower(slot) as f64, slot_upper(slot) as f64);
                let within = ((rank - below as f64) / c as f64).clamp(0.0, 1.0);
                let v = lo + (hi - lo) * within;
                return Some(match self.max_ns {
                    0 => v,
                    max => v.min(max as f64),
                });
            }
            below += c;
        }
        Some(self.max_ns as f64)
    }
}

/// Histograms summed elsewhere (in the kernel, by the BPF programs of `kflame-bpf`) and read
/// once a second: the source of the watcher's latency metrics, which calls it with every
/// read and drops it (detaching what it attached) when it stops.
pub trait LatencySource: Send {
    /// The histograms per label counted since the last call.
    fn read(&mut self) -> Result<Vec<LatencyReading>, String>;
    /// How it measures, for the log when the watcher starts.
    fn describe(&self) -> String;
    /// Events it could not count since it started (a full map in the kernel): reported,
    /// never silent.
    fn lost(&self) -> u64 {
        0
    }
}

/// What kind of latency a reading is: the family of its metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LatencyKind {
    /// System calls from entry to exit, per call name: `syscall.*`.
    Syscall,
    /// Block IO from issue to completion, per disk: `bio.*`.
    Bio,
    /// Time runnable before running, per CPU (`cpu0`): `runq.*`.
    Runq,
    /// Time blocked off-CPU, per task state (`S`, `D`, `I`): `offcpu.*`.
    OffCpu,
    /// Kernel lock waits, per lock kind (`mutex`, `rwsem:W`, `spinlock`): `lock.*`.
    Lock,
}

impl LatencyKind {
    /// Every kind, in their stored order.
    pub const ALL: [LatencyKind; 5] =
        [LatencyKind::Syscall, LatencyKind::Bio, LatencyKind::Runq, LatencyKind::OffCpu, LatencyKind::Lock];

    /// The prefix of its metrics, and its name in queries and stores: `syscall`, `bio`,
    /// `runq`, `offcpu`, `lock`.
    pub fn as_str(self) -> &'static str {
        match self {
            LatencyKind::Syscall => "syscall",
            LatencyKind::Bio => "bio",
            LatencyKind::Runq => "runq",
            LatencyKind::OffCpu => "offcpu",
            LatencyKind::Lock => "lock",
        }
    }

    /// The number a store keeps (never renumbered).
    pub fn code(self) -> u8 {
        match self {
            LatencyKind::Syscall => 0,
            LatencyKind::Bio => 1,
            LatencyKind::Runq => 2,
            LatencyKind::OffCpu => 3,
            LatencyKind::Lock => 4,
        }
    }

    /// The kind of a stored number.
    pub fn from_code(code: u8) -> Option<LatencyKind> {
        LatencyKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The kind named `name` (see [`LatencyKind::as_str`]).
    pub fn from_name(name: &str) -> Option<LatencyKind> {
        LatencyKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What one event of the kind is, for messages and pages.
    pub fn event(self) -> &'static str {
        match self {
            LatencyKind::Syscall => "system call",
            LatencyKind::Bio => "block IO",
            LatencyKind::Runq => "run-queue wait",
            LatencyKind::OffCpu => "off-CPU block",
            LatencyKind::Lock => "lock wait",
        }
    }
}

impl std::fmt::Display for LatencyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One label's histogram of one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyReading {
    /// The family.
    pub kind: LatencyKind,
    /// The label: a system call's name, a disk, `cpu3`, a task state, a lock kind.
    pub label: String,
    /// Latencies counted.
    pub histogram: Histogram,
    /// Events slower than the outlier threshold.
    pub slow: u64,
}

/// Adds `more` to `into`, label by label of each kind (for a source summing its drains until
/// they are taken, and a recording joining its windows); sorted by kind and label.
pub fn add_readings(into: &mut Vec<LatencyReading>, more: Vec<LatencyReading>) {
    for r in more {
        match into.iter_mut().find(|x| x.kind == r.kind && x.label == r.label) {
            Some(x) => {
                x.histogram.add(&r.histogram);
                x.slow += r.slow;
            }
            None => into.push(r),
        }
    }
    into.sort_by(|a, b| a.kind.cmp(&b.kind).then_with(|| natural(&a.label, &b.label)));
}

/// `cpu2` before `cpu10`: labels compared with their digits as numbers.
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| {
        let cut = s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        (s[..cut].to_string(), s[cut..].parse::<u64>().ok())
    };
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bucket starts where the one before ends, each at most a quarter of its lower
    /// bound wide past the first four, and each latency falls in the bucket whose bounds
    /// hold it.
    #[test]
    fn buckets_tile_the_line() {
        for s in 0..SLOTS - 1 {
            assert_eq!(slot_upper(s), slot_lower(s + 1));
            assert!(slot_lower(s) < slot_lower(s + 1));
            if s >= 4 {
                assert!((slot_upper(s) - slot_lower(s)) * 4 <= slot_lower(s), "slot {s}");
            }
        }
        for ns in (0..20_000u64).chain([999_999, 1_000_000, 2_000_000, 40_000_000, 1 << 40]) {
            let s = slot_of(ns);
            assert!(slot_lower(s) <= ns && (ns < slot_upper(s) || s == SLOTS - 1), "{ns} in slot {s}");
        }
        assert_eq!(slot_of(u64::MAX), SLOTS - 1);
        assert_eq!((slot_of(0), slot_of(255), slot_of(256), slot_of(1023), slot_of(1024)), (0, 0, 1, 3, 4));
    }

    /// Quantiles of 100 latencies of 1..=100 ms: p50 about 50 ms, p99 about 99 ms, within a
    /// bucket's error, never above the largest.
    #[test]
    fn quantiles_within_a_bucket() {
        let mut h = Histogram::default();
        for ms in 1..=100u64 {
            h.record(ms * 1_000_000);
        }
        assert_eq!(h.total(), 100);
        let p50 = h.quantile(0.5).expect("p50");
        let p99 = h.quantile(0.99).expect("p99");
        assert!((p50 - 50e6).abs() <= 0.125 * 50e6, "{p50}");
        assert!((p99 - 99e6).abs() <= 0.125 * 99e6 && p99 <= 100e6, "{p99}");
        assert_eq!(h.quantile(1.0), Some(100e6));
        assert_eq!(Histogram::default().quantile(0.5), None);
        // Whole buckets: 84 to 100 ms share the bucket of 90 ms ([83.9, 100.7) ms).
        let from = slot_lower(slot_of(90_000_000));
        assert_eq!(from, 83_886_080);
        assert_eq!(h.at_least(from), 17);
        let mut twice = h.clone();
        twice.add(&h);
        assert_eq!(twice.total(), 200);
        assert_eq!(twice.quantile(0.5), h.quantile(0.5));
    }
}
