//! System metrics from `/proc`, as `mpstat`, `vmstat` and `iostat -x` compute them.
//!
//! Every file is read under a root directory (`/` on a live system, a fixture folder in
//! tests). Rates and percentages need two reads: [`Sampler::read`] keeps the previous one
//! and returns nothing that needs a difference on its first call. The interval of a rate is
//! the difference of `/proc/uptime` between the two reads (as iostat does), so fixtures carry
//! their own interval.

mod diskstats;
mod latency;
mod loadavg;
mod meminfo;
mod pressure;
mod stat;

use std::path::{Path, PathBuf};

pub use diskstats::DiskStats;
pub use kflame::latency::{LatencyKind, LatencyReading, LatencySource};
pub use latency::BUSIEST;
pub use stat::CpuTimes;

/// One metric value: a name from [`METRICS`] (the catalog of `kflame-store-api`), a label (`""` for the machine as a whole,
/// `cpu3` for one CPU, `sda` for one device) and the value in the unit of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// A name of [`METRICS`].
    pub name: &'static str,
    /// `""` for the total, else the CPU or device.
    pub label: String,
    /// In the metric's unit.
    pub value: f64,
}

pub use kflame_store::metrics::{METRICS, MetricInfo, info, table};

/// A file that could not be read or understood. The other files of the read are still used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// Its line (1-based), 0 for the whole file.
    pub line: usize,
    /// What was expected.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file.display(), self.message),
            n => write!(f, "{}:{}: {}", self.file.display(), n, self.message),
        }
    }
}

/// The metrics of one read.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// Every value.
    pub values: Vec<Value>,
    /// Files that could not be read or had malformed lines (skipped, the rest kept).
    pub problems: Vec<Problem>,
    /// The latency histograms the latency values were read from, per family and label (the
    /// total as label `""`, the busiest labels, `other`): what a store keeps, and reads the
    /// latency values back from.
    pub histograms: Vec<LatencyReading>,
    /// The milliseconds the histograms cover (the interval since the previous read, 1 s on the
    /// first), which their rates are per second of.
    pub latency_span_ms: u32,
}

impl Reading {
    /// The value of `name` with `label`.
    pub fn get(&self, name: &str, label: &str) -> Option<f64> {
        self.values.iter().find(|v| v.name == name && v.label == label).map(|v| v.value)
    }

    /// The latency histograms as a store keeps them, each over the read's span.
    pub fn latency_rows(&self) -> Vec<crate::store::LatencyRow<'_>> {
        self.histograms
            .iter()
            .map(|h| crate::store::LatencyRow {
                kind: h.kind,
                label: &h.label,
                histogram: &h.histogram,
                slow: h.slow,
                span_ms: self.latency_span_ms,
            })
            .collect()
    }
}

/// Latency histograms handed over by another thread (the watcher's always-on blocked-time
/// recorder, whose BPF programs count them) and read with the metrics: a [`LatencySource`]
/// over a shared list, emptied by each read.
#[derive(Clone, Debug, Default)]
pub struct Tap(pub std::sync::Arc<std::sync::Mutex<Vec<LatencyReading>>>);

impl Tap {
    /// Adds `more` to what the next read returns.
    pub fn put(&self, more: Vec<LatencyReading>) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kflame::latency::add_readings(&mut held, more);
    }
}

impl LatencySource for Tap {
    fn read(&mut self) -> Result<Vec<LatencyReading>, String> {
        Ok(std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner())))
    }

    fn describe(&self) -> String {
        "system call, block IO, run-queue, off-CPU and lock-wait latency histograms summed in the \
         kernel by BPF, read every second"
            .into()
    }
}

/// What the sampler reads.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Also report partitions, loop and ram devices, and devices that never did IO.
    pub all_devices: bool,
}

/// The counters of one read, kept for the next.
#[derive(Clone, Debug, Default)]
struct Counters {
    uptime: Option<f64>,
    stat: Option<stat::Stat>,
    disks: Option<Vec<DiskStats>>,
}

/// Reads the metrics under a root directory, keeping the previous read for rates, and the
/// latency metrics of a [`LatencySource`] when it has one.
#[derive(Debug)]
pub struct Sampler {
    root: PathBuf,
    options: Options,
    prev: Counters,
    latency: Vec<Latency>,
}

/// A [`LatencySource`], and its losses when last read.
struct Latency(Box<dyn LatencySource>, u64);

impl std::fmt::Debug for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Latency({})", self.0.describe())
    }
}

impl Sampler {
    /// A sampler reading `ROOT/proc/...`.
    pub fn new(root: impl Into<PathBuf>, options: Options) -> Sampler {
        Sampler { root: root.into(), options, prev: Counters::default(), latency: Vec::new() }
    }

    /// Reads the latency metrics of `source` too with every read from now on.
    pub fn add_latency(&mut self, source: Box<dyn LatencySource>) {
        self.latency.push(Latency(source, 0));
    }

    /// What each latency source measures with.
    pub fn latency_descriptions(&self) -> Vec<String> {
        self.latency.iter().map(|l| l.0.describe()).collect()
    }

    /// Takes the latency sources back (to move them to another sampler).
    pub fn take_latency(&mut self) -> Vec<Box<dyn LatencySource>> {
        std::mem::take(&mut self.latency).into_iter().map(|Latency(source, _)| source).collect()
    }

    /// Reads from another root from now on, keeping the previous read: for replaying saved
    /// reads (fixtures) one after the other.
    pub fn set_root(&mut self, root: impl Into<PathBuf>) {
        self.root = root.into();
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether PSI files exist (`/proc/pressure`): kernels without `CONFIG_PSI` (or booted
    /// with `psi=0`) have none, and the `psi.*` metrics are not reported.
    pub fn has_pressure(&self) -> bool {
        has_pressure(&self.root)
    }

    /// Reads every file once. Values needing a difference (CPU shares, rates) come from the
    /// second call on.
    pub fn read(&mut self) -> Reading {
        let mut out = Reading::default();
        let now = Counters {
            uptime: self.read_file("proc/uptime", &mut out, uptime),
            stat: self.read_file("proc/stat", &mut out, stat::parse),
            disks: self.read_file("proc/diskstats", &mut out, diskstats::parse),
        };
        let interval = match (self.prev.uptime, now.uptime) {
            (Some(a), Some(b)) if b > a => Some(b - a),
            _ => None,
        };
        if let (Some(prev), Some(cur)) = (&self.prev.stat, &now.stat) {
            stat::values(prev, cur, interval, &mut out.values);
        }
        if let Some(cur) = &now.stat {
            stat::instant(cur, &mut out.values);
        }
        if let (Some(prev), Some(cur), Some(secs)) = (&self.prev.disks, &now.disks, interval) {
            diskstats::values(prev, cur, secs, self.options.all_devices, &mut out.values);
        }
        if let Some(m) = self.read_file("proc/meminfo", &mut out, meminfo::parse) {
            m.values(&mut out.values);
        }
        if let Some(l) = self.read_file("proc/loadavg", &mut out, loadavg::parse) {
            out.values.extend(l);
        }
        if self.has_pressure() {
            for (file, name) in [("cpu", "cpu"), ("memory", "mem"), ("io", "io")] {
                let path = format!("proc/pressure/{file}");
                if !self.root.join(&path).exists() {
                    continue;
                }
                if let Some(p) = self.read_file(&path, &mut out, pressure::parse) {
                    p.values(name, &mut out.values);
                }
            }
        }
        let mut readings = Vec::new();
        for Latency(source, lost_then) in &mut self.latency {
            let what = PathBuf::from(format!("({})", source.describe()));
            match source.read() {
                Ok(r) => readings.extend(r),
                Err(e) => out.problems.push(Problem {
                    file: what.clone(),
                    line: 0,
                    message: format!("cannot read the latency histograms: {e}"),
                }),
            }
            let lost = source.lost();
            if lost > *lost_then {
                out.problems.push(Problem {
                    file: what,
                    line: 0,
                    message: format!(
                        "{} events could not be counted since the last read (a full map in the kernel): \
                         the latency metrics of this second miss them",
                        lost - *lost_then
                    ),
                });
                *lost_then = lost;
            }
        }
        if !readings.is_empty() {
            out.latency_span_ms = latency::span_ms(interval.unwrap_or(1.0));
            latency::values(readings, out.latency_span_ms, &mut out.values, &mut out.histograms);
        }
        self.prev = now;
        out
    }

    /// Reads `ROOT/rel` and parses it; a problem is recorded and `None` returned when the file
    /// cannot be read or parsed at all. `parse` gets the text, the path (for messages) and
    /// the list of problems for malformed lines it skips.
    fn read_file<T>(
        &self,
        rel: &str,
        out: &mut Reading,
        parse: impl Fn(&str, &Path, &mut Vec<Problem>) -> Option<T>,
    ) -> Option<T> {
        let path = self.root.join(rel);
        match std::fs::read_to_string(&path) {
            Ok(text) => parse(&text, &path, &mut out.problems),
            Err(e) => {
                out.problems.push(Problem { file: path, line: 0, message: format!("cannot read: {e}") });
                None
            }
        }
    }
}

/// `/proc/uptime`: seconds since boot, the first field.
fn uptime(text: &str, file: &Path, problems: &mut Vec<Problem>) -> Option<f64> {
    match text.split_whitespace().next().and_then(|s| s.parse::<f64>().ok()) {
        Some(v) => Some(v),
        None => {
            problems.push(Problem {
                file: file.to_path_buf(),
                line: 1,
                message: "expected seconds since boot (`12345.67 ...`)".into(),
            });
            None
        }
    }
}

/// A malformed-line problem.
fn bad(file: &Path, line: usize, message: impl Into<String>) -> Problem {
    Problem { file: file.to_path_buf(), line, message: message.into() }
}

/// Whether the system under `root` has PSI files (`proc/pressure`), unless
/// `KFLAME_MASK_FEATURES` masks them: what [`Sampler::has_pressure`] and `watch --check` say.
pub fn has_pressure(root: &Path) -> bool {
    use kflame::record::features::{Feature, masked};
    !masked(Feature::Psi) && root.join("proc/pressure/cpu").exists()
}
