//! The interface of kflame's history stores: continuous profiles, metrics, triggers,
//! captures and kernel reports of one or more hosts, queried by time range.
//!
//! Writers (the watcher) go through the [`Store`] trait, readers (`kflame query`, a web
//! server, an MCP tool) through [`Query`]. Backends implement them in crates of their own:
//! `kflame-store` on one SQLite file, `kflame-clickhouse` on a ClickHouse server or cluster.
//! This crate holds no backend, so that one backend never links another's database: every
//! row is `(host, time, kind, stack id, weight)` or a metric `(host, name, label, time,
//! value)`, which maps onto a file's tables and onto columnar tables alike.
//!
//! Times are UTC nanoseconds since the Unix epoch (`i64`); [`time`] reads and prints them,
//! and holds kflame's one duration grammar. Weights are exact ([`Weight`]). Stacks are bytes
//! (folded lines without their count: `comm;frame;...;leaf`), stored once and referred to by
//! id.
//!
//! The library never prints: every failure is a [`StoreError`] naming the store.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use kflame::events::EventRecord;
use kflame::fold::tree::StackTree;
use kflame::fold::{Meta, Stacks, Unit, Weight};
pub use kflame::latency::{Histogram, LatencyKind};

pub mod derived;
pub mod heatmap;
pub mod labels;
pub mod metrics;
pub mod reports;
pub mod time;

/// Decimals a metric value keeps in a store (see [`stored_metric_value`]).
pub const METRIC_DECIMALS: i32 = 2;

/// A metric value as stored and read back: rounded to [`METRIC_DECIMALS`] decimals when
/// finite and small enough for that to be exact in an f64 (all the watcher's are), else kept
/// as it is. Every backend stores this value, so that they answer alike.
pub fn stored_metric_value(v: f64) -> f64 {
    round_metric(v, METRIC_DECIMALS)
}

/// `v` rounded to `decimals` decimals when finite and below 10^13 in magnitude (where the
/// rounding is exact in an f64), else `v`; never `-0.0`.
pub fn round_metric(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    if v.is_finite() && v.abs() < 1e13 {
        let q = (v * f).round() / f;
        if q == 0.0 { 0.0 } else { q }
    } else {
        v
    }
}

/// What a profile measures; each kind is a separate history (its own unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// On-CPU samples (the always-on profile and triggered CPU captures).
    Cpu,
    /// Off-CPU time (ns blocked).
    OffCpu,
    /// Page allocations, weighted by bytes.
    Mem,
    /// System-call latency (ns).
    Syscalls,
    /// Snapshots of blocked (D-state) tasks' stacks.
    Blocked,
    /// Kernel lock waits (ns waited).
    Locks,
}

impl Kind {
    /// Every kind, in their stored order.
    pub const ALL: [Kind; 6] =
        [Kind::Cpu, Kind::OffCpu, Kind::Mem, Kind::Syscalls, Kind::Blocked, Kind::Locks];

    /// Whether the kind has an always-on profile beside its captures (CPU: the watcher's
    /// low-rate profile runs all the time, a capture samples the same CPUs at its own,
    /// higher rate; off-CPU and lock waits: summed in the kernel all the time). A range's
    /// profile of such a kind is the always-on one; its captures are kept apart (asked for
    /// by id), since adding both would count the capture's seconds twice. The other kinds
    /// exist only as captures.
    pub fn has_always_on(self) -> bool {
        matches!(self, Kind::Cpu | Kind::OffCpu | Kind::Locks)
    }

    /// `cpu`, `offcpu`, `mem`, `syscalls`, `blocked`, `locks`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::OffCpu => "offcpu",
            Kind::Mem => "mem",
            Kind::Syscalls => "syscalls",
            Kind::Blocked => "blocked",
            Kind::Locks => "locks",
        }
    }

    /// The number stored in the database (never renumbered: the schema depends on it).
    pub fn code(self) -> i64 {
        match self {
            Kind::Cpu => 0,
            Kind::OffCpu => 1,
            Kind::Mem => 2,
            Kind::Syscalls => 3,
            Kind::Blocked => 4,
            Kind::Locks => 5,
        }
    }

    /// The kind of a stored number.
    pub fn from_code(code: i64) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.code() == code)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind name that is none of `cpu`, `offcpu`, `mem`, `syscalls`, `blocked`, `locks`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile kind {0:?} (expected cpu, offcpu, mem, syscalls, blocked or locks)")]
pub struct UnknownKind(pub String);

impl FromStr for Kind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Kind, UnknownKind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownKind(s.to_string()))
    }
}

/// Id of a stored trigger firing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TriggerId(pub i64);

/// Id of a stored capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CaptureId(pub i64);

/// Id of a stored stack (the same stack text always has the same id in one database; the id
/// of a stack deleted by maintenance is not given to another).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub i64);

/// One profile sample with its own time. Its task is named by the stack's first frame (the
/// command) and its cgroup; process and thread ids are not kept: in a day of history they
/// would cost more than the stacks (see ARCHITECTURE.md, "The history store").
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// UTC ns since the epoch.
    pub time_ns: i64,
    /// CPU it was taken on.
    pub cpu: u32,
    /// Cgroup path (`/system.slice/nginx.service`), when the kernel recorded it.
    pub cgroup: Option<&'a str>,
    /// The folded stack without its count: `comm;frame;...;leaf` (bytes: names are not
    /// always UTF-8).
    pub stack: &'a [u8],
    /// What the sample adds (1 sample, a period, bytes, ns).
    pub weight: Weight,
}

/// One time bucket of one profile kind of one host: what the watcher writes every few
/// seconds.
#[derive(Clone, Copy, Debug)]
pub struct Bucket<'a> {
    /// Host name.
    pub host: &'a str,
    /// What the profile measures.
    pub kind: Kind,
    /// Start of the bucket (inclusive), UTC ns.
    pub start_ns: i64,
    /// End of the bucket (exclusive), UTC ns; every sample's time is in `[start_ns, end_ns)`.
    pub end_ns: i64,
    /// The triggered capture this bucket belongs to (`None`: the always-on profile).
    pub capture: Option<CaptureId>,
    /// Unit and event of the weights.
    pub meta: &'a Meta,
    /// Samples with their own time, in any order (the store sorts them).
    pub samples: &'a [Sample<'a>],
    /// Stacks whose samples have no individual time (aggregated), may be empty.
    pub aggregated: &'a [(&'a [u8], Weight)],
}

/// One metric value; the time and host are given to [`Store::append_metrics`].
#[derive(Clone, Copy, Debug)]
pub struct Metric<'a> {
    /// `cpu.usr`, `mem.available`, `io.util`, `psi.io.some`, `load1`.
    pub name: &'a str,
    /// `""` for the total, `cpu3`, `sda`.
    pub label: &'a str,
    /// The value.
    pub value: f64,
}

/// A trigger rule that fired.
#[derive(Clone, Copy, Debug)]
pub struct TriggerFired<'a> {
    /// Host name.
    pub host: &'a str,
    /// When it fired, UTC ns.
    pub time_ns: i64,
    /// The rule as written (`cpu > 80% for 5s => cpu 30s`).
    pub rule: &'a str,
    /// The metric it watched (`cpu`).
    pub metric: &'a str,
    /// The metric's value when it fired.
    pub value: f64,
    /// The rule's threshold.
    pub threshold: f64,
}

/// A capture that starts (triggered, or asked for).
#[derive(Clone, Copy, Debug)]
pub struct CaptureStart<'a> {
    /// Host name.
    pub host: &'a str,
    /// What it records.
    pub kind: Kind,
    /// When it starts, UTC ns.
    pub start_ns: i64,
    /// The trigger that started it, if any.
    pub trigger: Option<TriggerId>,
    /// Unit and event of its profile.
    pub meta: &'a Meta,
}

/// A kernel report (oops, WARNING, hung task, lockup, RCU stall, OOM kill, sanitizer).
#[derive(Clone, Copy, Debug)]
pub struct StoredReport<'a> {
    /// Host name.
    pub host: &'a str,
    /// When it was logged, UTC ns.
    pub time_ns: i64,
    /// The report kind (`oops`, `warning`, `hung_task`, ...).
    pub kind: &'a str,
    /// Its title line.
    pub title: &'a str,
    /// Its stack, folded (root first, `;`-separated).
    pub stack: &'a str,
    /// The report's lines.
    pub text: &'a str,
}

/// What [`Store::maintain`] enforces. Durations in ns; `None` leaves that rule off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// "Now", UTC ns: ages are measured from it.
    pub now_ns: i64,
    /// Delete everything older than this (`--retain 7d`).
    pub retain_ns: Option<i64>,
    /// Profile buckets older than this lose their per-sample times and are merged into
    /// buckets of `downsample_to_ns` (counts per stack).
    pub downsample_after_ns: Option<i64>,
    /// The length of a downsampled bucket (default 60 s).
    pub downsample_to_ns: i64,
    /// Delete the oldest data until the file is at most this many bytes.
    pub max_bytes: Option<u64>,
}

impl Policy {
    /// No rule, downsampled buckets of one minute.
    pub fn new(now_ns: i64) -> Policy {
        Policy {
            now_ns,
            retain_ns: None,
            downsample_after_ns: None,
            downsample_to_ns: 60_000_000_000,
            max_bytes: None,
        }
    }
}

/// What one [`Store::maintain`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Rows deleted for retention (buckets, metric blocks, events).
    pub expired_rows: u64,
    /// Profile buckets merged into downsampled ones.
    pub downsampled_buckets: u64,
    /// Profile buckets of closed hours merged into one bucket each (their samples kept).
    pub compacted_buckets: u64,
    /// Rows deleted to keep to the disk budget.
    pub budget_rows: u64,
    /// Rows of always-on outliers fewer, folded into the row of their closed span.
    pub folded_event_rows: u64,
    /// Latency and metric rows fewer, folded into one row of their closed hour (a writer
    /// stopped within the hour leaves them as seconds or spans of 10 minutes).
    pub folded_hour_rows: u64,
    /// Stacks no longer referred to, deleted.
    pub orphan_stacks: u64,
    /// File size before and after, bytes (main file plus WAL).
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

/// Why the store failed. Every variant names the store: a database file, or a server's URL
/// (without its password), as messages show it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file is not a SQLite database at all, or a SQLite database of another program.
    #[error("{}: not a kflame history database ({detail})", store)]
    NotADatabase {
        /// The store (file or URL).
        store: String,
        /// What was found instead.
        detail: String,
    },
    /// The file is a database but damaged (truncated, corrupt pages).
    #[error("{}: the database is corrupt ({detail}); it was left as it is", store)]
    Corrupt {
        /// The store (file or URL).
        store: String,
        /// SQLite's message.
        detail: String,
    },
    /// Written by a newer kflame: this one does not know its schema.
    #[error(
        "{}: schema version {found} is newer than this kflame knows (up to {supported}); \
         use a newer kflame to read it (nothing was written)",
        store
    )]
    FutureVersion {
        /// The store (file or URL).
        store: String,
        /// The file's schema version.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// The disk (or the file system's quota) is full. Nothing of the failed append was
    /// stored; the store stays usable: free space (`maintain` with a budget) and retry.
    #[error("{}: disk full, nothing of this write was stored ({detail})", store)]
    DiskFull {
        /// The store (file or URL).
        store: String,
        /// SQLite's message.
        detail: String,
    },
    /// Another writer (another `kflame watch`) has the database open: a database has one
    /// writer, two would corrupt it. Readers are not refused.
    #[error(
        "{}: already opened for writing by {} (the lock {} is held); a database has one writer: \
         stop that one or give this one another file (nothing was written)",
        store,
        pid.map_or_else(|| "another process".to_string(), |p| format!("process {p}")),
        lock.display()
    )]
    Locked {
        /// The database file.
        store: String,
        /// The lock file beside it.
        lock: PathBuf,
        /// The process holding it, as it wrote it into the lock file.
        pid: Option<u32>,
    },
    /// Input the store refuses (a weight out of range, a bucket ending before it starts).
    #[error("{}: {detail}", store)]
    Invalid {
        /// The store (file or URL).
        store: String,
        /// What is wrong.
        detail: String,
    },
    /// Anything else (I/O error, locked too long).
    #[error("{}: {detail}", store)]
    Other {
        /// The store (file or URL).
        store: String,
        /// What happened.
        detail: String,
    },
}

impl StoreError {
    /// True for [`StoreError::DiskFull`]: the writer keeps running and retries later.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::DiskFull { .. })
    }
}

/// The writing side: what a collector appends. Every call is one transaction: it is stored
/// whole or not at all.
pub trait Store: Send {
    /// Metric values of one host at one time. The percentiles, maxima and rates of latency
    /// ([`derived::derived`]: `syscall.lat.p99`, `syscall.slow`, `lock.wait`, ...) are read
    /// from the latency histograms ([`Store::append_latency`]): values appended under those
    /// names are not kept.
    fn append_metrics(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) -> Result<(), StoreError>;
    /// One profile bucket.
    fn append_bucket(&mut self, bucket: &Bucket<'_>) -> Result<(), StoreError>;
    /// A trigger that fired.
    fn append_trigger(&mut self, t: &TriggerFired<'_>) -> Result<TriggerId, StoreError>;
    /// A capture that starts; its buckets name the returned id.
    fn begin_capture(&mut self, c: &CaptureStart<'_>) -> Result<CaptureId, StoreError>;
    /// The end of a capture, with a note (`done`, `stopped`, `failed: ...`).
    fn end_capture(&mut self, id: CaptureId, end_ns: i64, note: &str) -> Result<(), StoreError>;
    /// Per-event records of a capture (syscall latencies, off-CPU waits) for the scatter
    /// plot. Their `ts_ns` must already be UTC ns since the epoch; records without a time
    /// are refused.
    fn append_events(&mut self, capture: CaptureId, events: &[EventRecord<'_>]) -> Result<(), StoreError>;
    /// A kernel report.
    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError>;
    /// Latency histograms of one host read at one time (the end of their second).
    fn append_latency(&mut self, host: &str, time_ns: i64, rows: &[LatencyRow<'_>])
    -> Result<(), StoreError>;
    /// Latency outliers of one host (slow events kept with their stacks, always on), of one
    /// family; each record's `ts_ns` UTC ns since the epoch (records without a time are
    /// refused). Stored as the events of a capture are, under [`outlier_capture`].
    fn append_outliers(
        &mut self,
        host: &str,
        kind: LatencyKind,
        events: &[EventRecord<'_>],
    ) -> Result<(), StoreError>;
    /// Writes what is buffered (metric blocks in progress). Also done on drop.
    fn flush(&mut self) -> Result<(), StoreError>;
    /// Retention, downsampling, disk budget; cheap to call every minute; never blocks
    /// readers for long (each step is a short transaction).
    fn maintain(&mut self, policy: &Policy) -> Result<Maintenance, StoreError>;
    /// What the store has to say since the last call (a remote database gone or back, a
    /// spool filling), for the writer's log. Nothing by default.
    fn notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

impl<S: Store + ?Sized> Store for Box<S> {
    fn append_metrics(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) -> Result<(), StoreError> {
        (**self).append_metrics(host, time_ns, metrics)
    }
    fn append_bucket(&mut self, bucket: &Bucket<'_>) -> Result<(), StoreError> {
        (**self).append_bucket(bucket)
    }
    fn append_trigger(&mut self, t: &TriggerFired<'_>) -> Result<TriggerId, StoreError> {
        (**self).append_trigger(t)
    }
    fn begin_capture(&mut self, c: &CaptureStart<'_>) -> Result<CaptureId, StoreError> {
        (**self).begin_capture(c)
    }
    fn end_capture(&mut self, id: CaptureId, end_ns: i64, note: &str) -> Result<(), StoreError> {
        (**self).end_capture(id, end_ns, note)
    }
    fn append_events(&mut self, capture: CaptureId, events: &[EventRecord<'_>]) -> Result<(), StoreError> {
        (**self).append_events(capture, events)
    }
    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError> {
        (**self).append_report(r)
    }
    fn append_latency(
        &mut self,
        host: &str,
        time_ns: i64,
        rows: &[LatencyRow<'_>],
    ) -> Result<(), StoreError> {
        (**self).append_latency(host, time_ns, rows)
    }
    fn append_outliers(
        &mut self,
        host: &str,
        kind: LatencyKind,
        events: &[EventRecord<'_>],
    ) -> Result<(), StoreError> {
        (**self).append_outliers(host, kind, events)
    }
    fn flush(&mut self) -> Result<(), StoreError> {
        (**self).flush()
    }
    fn maintain(&mut self, policy: &Policy) -> Result<Maintenance, StoreError> {
        (**self).maintain(policy)
    }
    fn notes(&mut self) -> Vec<String> {
        (**self).notes()
    }
}

/// How a unit is stored in a unit column: its name, `""` for a headerless profile's
/// (`Unit::from_name("")` reads it back as unspecified).
pub fn stored_unit_name(unit: &Unit) -> &str {
    if *unit == Unit::Unspecified { "" } else { unit.name() }
}

/// A shared or boxed reader is a reader (a server shares one remote store between requests).
macro_rules! delegate_query {
    ($t:ty) => {
        impl<Q: Query + ?Sized> Query for $t {
            fn profile(&self, q: &ProfileQuery<'_>) -> Result<Profile, StoreError> {
                (**self).profile(q)
            }
            fn profile_tree(&self, q: &ProfileQuery<'_>) -> Result<ProfileTree, StoreError> {
                (**self).profile_tree(q)
            }
            fn stacks_tree(&self, stacks: &[(StackId, Weight)]) -> Result<StackTree, StoreError> {
                (**self).stacks_tree(stacks)
            }
            fn samples(&self, q: &ProfileQuery<'_>) -> Result<Vec<SamplePoint>, StoreError> {
                (**self).samples(q)
            }
            fn stack_text(&self, id: StackId) -> Result<Vec<u8>, StoreError> {
                (**self).stack_text(id)
            }
            fn stack_texts(&self, ids: &[StackId]) -> Result<Vec<Vec<u8>>, StoreError> {
                (**self).stack_texts(ids)
            }
            fn series(&self, q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
                (**self).series(q)
            }
            fn latency(&self, q: &LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError> {
                (**self).latency(q)
            }
            fn outliers(
                &self,
                kind: LatencyKind,
                from_ns: i64,
                to_ns: i64,
                host: Option<&str>,
            ) -> Result<Vec<StoredEvent>, StoreError> {
                (**self).outliers(kind, from_ns, to_ns, host)
            }
            fn latency_labels(
                &self,
                host: Option<&str>,
                from_ns: i64,
                to_ns: i64,
            ) -> Result<Vec<(LatencyKind, String)>, StoreError> {
                (**self).latency_labels(host, from_ns, to_ns)
            }
            fn series_many(&self, names: &[&str], q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
                (**self).series_many(names, q)
            }
            fn metric_names(&self, host: Option<&str>) -> Result<Vec<(String, String)>, StoreError> {
                (**self).metric_names(host)
            }
            fn events(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
                (**self).events(from_ns, to_ns, host)
            }
            fn capture_events(
                &self,
                capture: CaptureId,
                from_ns: i64,
                to_ns: i64,
            ) -> Result<Vec<StoredEvent>, StoreError> {
                (**self).capture_events(capture, from_ns, to_ns)
            }
            fn capture_event_count(&self, capture: CaptureId) -> Result<u64, StoreError> {
                (**self).capture_event_count(capture)
            }
            fn capture(&self, id: CaptureId) -> Result<Option<Event>, StoreError> {
                (**self).capture(id)
            }
            fn reports(
                &self,
                from_ns: i64,
                to_ns: i64,
                host: Option<&str>,
            ) -> Result<Vec<Event>, StoreError> {
                (**self).reports(from_ns, to_ns, host)
            }
            fn hosts(&self) -> Result<Vec<String>, StoreError> {
                (**self).hosts()
            }
            fn host_labels(&self) -> Result<Vec<(String, String)>, StoreError> {
                (**self).host_labels()
            }
            fn host_label_spans(
                &self,
                from_ns: i64,
                to_ns: i64,
            ) -> Result<Vec<labels::LabelSpan>, StoreError> {
                (**self).host_label_spans(from_ns, to_ns)
            }
            fn time_bounds(&self) -> Result<Option<(i64, i64)>, StoreError> {
                (**self).time_bounds()
            }
            fn host_shares(&self, q: &ProfileQuery<'_>, frame: &str) -> Result<Vec<HostShare>, StoreError> {
                (**self).host_shares(q, frame)
            }
        }
    };
}
delegate_query!(Box<Q>);
delegate_query!(std::sync::Arc<Q>);

/// A store read through [`Query`] alone and shared between threads (a ClickHouse reader),
/// with its name for messages: what a server reads instead of a SQLite file.
#[derive(Clone)]
pub struct RemoteStore {
    /// The store.
    pub store: std::sync::Arc<dyn Query + Send + Sync>,
    /// Its name in messages (a URL without password).
    pub name: String,
}

impl fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteStore({})", self.name)
    }
}

/// One host's part of a profile: the weight of its samples whose stack holds a frame, and
/// of all its samples (what "which hosts spend time in `shrink_slab`" asks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostShare {
    /// Host name.
    pub host: String,
    /// Weight of the samples whose stack holds the frame.
    pub frame: Weight,
    /// Weight of all its samples of the query.
    pub total: Weight,
}

/// True when the folded stack `stack` (`a;b;c`) has the frame `frame`.
pub fn stack_has_frame(stack: &[u8], frame: &[u8]) -> bool {
    !frame.is_empty() && stack.split(|&b| b == b';').any(|f| f == frame)
}

/// Which profile samples to merge.
#[derive(Clone, Copy, Debug)]
pub struct ProfileQuery<'a> {
    /// The profile kind.
    pub kind: Kind,
    /// Start (inclusive), UTC ns.
    pub from_ns: i64,
    /// End (exclusive), UTC ns.
    pub to_ns: i64,
    /// Only this host (`None`: every host).
    pub host: Option<&'a str>,
    /// Only these hosts (`None`: every host; with `host` too, both must hold).
    pub hosts: Option<&'a [String]>,
    /// Only this capture. `None`: the always-on profile of a kind that has one
    /// ([`Kind::has_always_on`], CPU; its captures are kept apart), every capture of the
    /// others.
    pub capture: Option<CaptureId>,
    /// Only samples of this cgroup (a path; a sample matches when its cgroup is this path
    /// or below it).
    pub cgroup: Option<&'a str>,
}

impl<'a> ProfileQuery<'a> {
    /// Every host and cgroup; the always-on profile (or, for kinds without one, every
    /// capture).
    pub fn new(kind: Kind, from_ns: i64, to_ns: i64) -> ProfileQuery<'a> {
        ProfileQuery { kind, from_ns, to_ns, host: None, hosts: None, capture: None, cgroup: None }
    }
}

/// A merged profile.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Stack → summed weight (sorted when written).
    pub stacks: Stacks,
    /// Unit and event (the first bucket's; buckets of other units are counted in
    /// `mixed_units` and left out).
    pub meta: Meta,
    /// Samples merged (timed and untimed entries).
    pub samples: u64,
    /// Buckets read.
    pub buckets: u64,
    /// Buckets left out because their unit differs from the first one's.
    pub mixed_units: u64,
}

/// A merged profile as a tree of frames ([`Query::profile_tree`]): what a page draws.
#[derive(Clone, Debug)]
pub struct ProfileTree {
    /// The stacks merged by prefix; weights summed (AFTER weights).
    pub tree: StackTree,
    /// As [`Profile::meta`].
    pub meta: Meta,
    /// As [`Profile::samples`].
    pub samples: u64,
    /// As [`Profile::buckets`].
    pub buckets: u64,
    /// As [`Profile::mixed_units`].
    pub mixed_units: u64,
}

impl From<Profile> for ProfileTree {
    fn from(p: Profile) -> ProfileTree {
        ProfileTree {
            tree: StackTree::from_stacks(&p.stacks, None, false, true),
            meta: p.meta,
            samples: p.samples,
            buckets: p.buckets,
            mixed_units: p.mixed_units,
        }
    }
}

/// One sample for a heat map: when, where, which stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplePoint {
    /// UTC ns (at the stored resolution).
    pub time_ns: i64,
    /// CPU.
    pub cpu: u32,
    /// The stack (texts through [`Query::stack_texts`]).
    pub stack: StackId,
    /// Weight.
    pub weight: Weight,
}

/// Which metric series to read.
#[derive(Clone, Copy, Debug)]
pub struct SeriesQuery<'a> {
    /// Metric name (`cpu.usr`).
    pub name: &'a str,
    /// Label (`""` the total, `cpu3`); `None`: every label of the name.
    pub label: Option<&'a str>,
    /// Only this host.
    pub host: Option<&'a str>,
    /// Start (inclusive), UTC ns.
    pub from_ns: i64,
    /// End (exclusive), UTC ns.
    pub to_ns: i64,
    /// Resample to at most this many points of equal width (min, max, average of each);
    /// `None` keeps every value. Through a [`SeriesCache`], points of a minute or more are
    /// cells of whole 20-s slots aligned on the epoch, and the first and last cells are
    /// whole: they may hold values just outside `[from_ns, to_ns)`.
    pub points: Option<usize>,
}

/// One point of a series: a single value (min = max = avg, count 1) or a resampled span.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Time of the value, or start of the span, UTC ns.
    pub time_ns: i64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean value.
    pub avg: f64,
    /// Values in the span.
    pub count: u32,
}

/// A metric's values over a range.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Host name.
    pub host: String,
    /// Metric name.
    pub name: String,
    /// Label.
    pub label: String,
    /// Points in time order.
    pub points: Vec<Point>,
}

/// One label's latency histogram of one second, as the watcher writes it
/// ([`Store::append_latency`]).
#[derive(Clone, Copy, Debug)]
pub struct LatencyRow<'a> {
    /// The family (`syscall`, `bio`, `runq`, `offcpu`, `lock`).
    pub kind: LatencyKind,
    /// `""` for the total of the family, else the call, disk, CPU, state or lock kind
    /// (`other`: the labels past the busiest).
    pub label: &'a str,
    /// The latencies counted.
    pub histogram: &'a Histogram,
    /// Events over the family's outlier threshold.
    pub slow: u64,
    /// The milliseconds the histogram covers (the interval since the previous read), which
    /// the rates `FAMILY.slow` and `FAMILY.wait` are read over ([`derived`]).
    pub span_ms: u32,
}

/// Why a batch of per-event records cannot be stored, naming the first bad one (`what`: `event`,
/// `outlier`): one without a time, or with a time or weight past `i64::MAX`. Every backend
/// refuses such a batch whole.
pub fn unstorable_events(events: &[EventRecord<'_>], what: &str) -> Option<String> {
    let i = events
        .iter()
        .position(|ev| ev.ts_ns.is_none_or(|t| t > i64::MAX as u64) || ev.weight > i64::MAX as u64)?;
    Some(format!(
        "{what} {} of {} has no time or a weight out of range: nothing of the batch stored",
        i + 1,
        events.len()
    ))
}

/// The capture id the outliers of a family are stored under, beside the events of captures
/// (negative: no capture has it): -1 for system calls, -2 block IO, ...
pub fn outlier_capture(kind: LatencyKind) -> CaptureId {
    CaptureId(-1 - i64::from(kind.code()))
}

/// Which latency histograms to read.
#[derive(Clone, Copy, Debug)]
pub struct LatencyQuery<'a> {
    /// The family.
    pub kind: LatencyKind,
    /// The label (`""`: the family's total); `None`: every label.
    pub label: Option<&'a str>,
    /// Only this host.
    pub host: Option<&'a str>,
    /// Start (inclusive), UTC ns.
    pub from_ns: i64,
    /// End (exclusive), UTC ns.
    pub to_ns: i64,
}

/// One stored latency histogram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencyPoint {
    /// When it was read (the end of its second), UTC ns.
    pub time_ns: i64,
    /// The latencies of the second.
    pub histogram: Histogram,
    /// Events over the outlier threshold.
    pub slow: u64,
    /// The milliseconds the histogram covers: the interval of its read, or the sum of those
    /// of the reads summed into it (10 s in hours no longer recent); for histograms stored
    /// before spans were (SQLite latency rows of format 2 and older), 1 s, or 10 s in rows
    /// of a folded hour.
    pub span_ms: u32,
}

/// The latency histograms of one host and label over a range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySeries {
    /// Host name.
    pub host: String,
    /// The family.
    pub kind: LatencyKind,
    /// The label.
    pub label: String,
    /// Points in time order.
    pub points: Vec<LatencyPoint>,
}

/// Something that happened: a trigger, a capture, a kernel report.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A trigger fired.
    Trigger {
        /// Its id.
        id: TriggerId,
        /// Host name.
        host: String,
        /// UTC ns.
        time_ns: i64,
        /// The rule.
        rule: String,
        /// The metric watched.
        metric: String,
        /// Its value.
        value: f64,
        /// The threshold.
        threshold: f64,
    },
    /// A capture.
    Capture {
        /// Its id.
        id: CaptureId,
        /// Host name.
        host: String,
        /// What it recorded.
        kind: Kind,
        /// Start, UTC ns.
        start_ns: i64,
        /// End (`None` while running, or when the writer died).
        end_ns: Option<i64>,
        /// The trigger that started it.
        trigger: Option<TriggerId>,
        /// The end note.
        note: Option<String>,
    },
    /// A kernel report.
    Report {
        /// Host name.
        host: String,
        /// UTC ns.
        time_ns: i64,
        /// Report kind.
        kind: String,
        /// Title line.
        title: String,
        /// Folded stack.
        stack: String,
        /// Its lines.
        text: String,
    },
}

impl Event {
    /// When it happened (a capture: its start).
    pub fn time_ns(&self) -> i64 {
        match self {
            Event::Trigger { time_ns, .. } | Event::Report { time_ns, .. } => *time_ns,
            Event::Capture { start_ns, .. } => *start_ns,
        }
    }

    /// Its host.
    pub fn host(&self) -> &str {
        match self {
            Event::Trigger { host, .. } | Event::Capture { host, .. } | Event::Report { host, .. } => host,
        }
    }
}

/// A stored per-event record (for the scatter plot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// The capture it belongs to.
    pub capture: CaptureId,
    /// Start, UTC ns.
    pub time_ns: i64,
    /// Length, ns (`None` for single events).
    pub duration_ns: Option<u64>,
    /// Process id (0 unknown).
    pub pid: u32,
    /// Thread id (0 unknown).
    pub tid: u32,
    /// Task name.
    pub comm: String,
    /// CPU.
    pub cpu: u32,
    /// Event kind name (`syscall`, `offcpu`, ...).
    pub kind: String,
    /// Event name (`syscall:write`).
    pub event: String,
    /// The stack.
    pub stack: StackId,
    /// Weight.
    pub weight: u64,
}

/// The reading side. Every call is one read transaction: it sees the database as of its
/// start, whatever a writer does meanwhile.
pub trait Query {
    /// The merged profile of `[from, to)`: buckets partly in the range are cut by sample
    /// time. Untimed (aggregated or downsampled) entries of a bucket count when the
    /// bucket's start is in the range, so that adjacent ranges never count them twice.
    fn profile(&self, q: &ProfileQuery<'_>) -> Result<Profile, StoreError>;
    /// [`Query::profile`] as a tree of frames: what a page draws, without a stack's text.
    /// This default builds it from the profile's texts; a backend that keeps stacks as
    /// frame ids builds it from them.
    fn profile_tree(&self, q: &ProfileQuery<'_>) -> Result<ProfileTree, StoreError> {
        Ok(self.profile(q)?.into())
    }
    /// The tree of stored stacks with their weights (an id may repeat: weights add up).
    /// This default reads their texts ([`Query::stack_texts`]).
    fn stacks_tree(&self, stacks: &[(StackId, Weight)]) -> Result<StackTree, StoreError> {
        let ids: Vec<StackId> = stacks.iter().map(|s| s.0).collect();
        let mut counts = kflame::fold::StackCounts::new();
        for (text, &(_, w)) in self.stack_texts(&ids)?.iter().zip(stacks) {
            counts.add(text, w);
        }
        Ok(StackTree::from_stacks(&Stacks::Counts(counts), None, false, true))
    }
    /// Per-sample (time, CPU, stack, weight) of a range, in time order, for heat maps
    /// (downsampled buckets have none).
    fn samples(&self, q: &ProfileQuery<'_>) -> Result<Vec<SamplePoint>, StoreError>;
    /// The text of a stored stack.
    fn stack_text(&self, id: StackId) -> Result<Vec<u8>, StoreError>;
    /// The texts of stored stacks, in the order of `ids`: one read of the storage for all
    /// (stacks are stored in compressed chunks: use this, not `stack_text` in a loop).
    fn stack_texts(&self, ids: &[StackId]) -> Result<Vec<Vec<u8>>, StoreError> {
        ids.iter().map(|&id| self.stack_text(id)).collect()
    }
    /// Metric series of a range.
    fn series(&self, q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError>;
    /// Latency histograms of a range, one series per host and label, points in time order.
    fn latency(&self, q: &LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError>;
    /// The latency outliers of a family in a range (of one host), in time order; their
    /// `capture` is [`outlier_capture`].
    fn outliers(
        &self,
        kind: LatencyKind,
        from_ns: i64,
        to_ns: i64,
        host: Option<&str>,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    /// The families and labels that have latency histograms in a range, sorted.
    fn latency_labels(
        &self,
        host: Option<&str>,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<(LatencyKind, String)>, StoreError>;
    /// The series of several names over one range (`q.name` ignored), in the order of
    /// `names`: what a chart of several metrics asks, read once where a backend can.
    fn series_many(&self, names: &[&str], q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        let mut out = Vec::new();
        for &name in names {
            out.extend(self.series(&SeriesQuery { name, ..*q })?);
        }
        Ok(out)
    }
    /// Every stored (metric name, label), sorted.
    fn metric_names(&self, host: Option<&str>) -> Result<Vec<(String, String)>, StoreError>;
    /// Triggers, captures and reports of `[from, to)`, in time order.
    fn events(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError>;
    /// Per-event records of a capture in `[from, to)`, in time order.
    fn capture_events(
        &self,
        capture: CaptureId,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<StoredEvent>, StoreError>;
    /// How many per-event records a capture has (what a list of captures shows). This
    /// default reads them all; a backend counts them where they are.
    fn capture_event_count(&self, capture: CaptureId) -> Result<u64, StoreError> {
        Ok(self.capture_events(capture, i64::MIN, i64::MAX)?.len() as u64)
    }
    /// The kernel reports ([`Event::Report`]) of `[from, to)`, in time order: what a report's
    /// page asks by its time. This default filters [`Query::events`]; a backend reads the
    /// reports alone.
    fn reports(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
        let all = self.events(from_ns, to_ns, host)?;
        Ok(all.into_iter().filter(|e| matches!(e, Event::Report { .. })).collect())
    }
    /// One capture ([`Event::Capture`]) by its id, `None` when no capture has it. This
    /// default reads every event of the store; a backend looks the id up.
    fn capture(&self, id: CaptureId) -> Result<Option<Event>, StoreError> {
        let all = self.events(i64::MIN, i64::MAX, None)?;
        Ok(all.into_iter().find(|e| matches!(e, Event::Capture { id: c, .. } if *c == id)))
    }
    /// Every host name, sorted.
    fn hosts(&self) -> Result<Vec<String>, StoreError>;
    /// Every host name with its labels (`key=value,...`, as the writer was given them;
    /// empty when it had none), sorted by name.
    fn host_labels(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self.hosts()?.into_iter().map(|h| (h, String::new())).collect())
    }
    /// Every host's labels over `[from_ns, to_ns)`, stretch by stretch
    /// ([`labels::spans`]): what a question about the hosts of a label at a time reads. This
    /// default gives each host its labels of today over the whole range; a backend that
    /// keeps the labels' history gives it.
    fn host_label_spans(&self, from_ns: i64, to_ns: i64) -> Result<Vec<labels::LabelSpan>, StoreError> {
        let rows = self.host_labels()?.into_iter().map(|(h, l)| (h, i64::MIN, l)).collect();
        Ok(labels::spans(rows, from_ns, to_ns))
    }
    /// The first and last time of anything stored (`None` when empty).
    fn time_bounds(&self) -> Result<Option<(i64, i64)>, StoreError>;
    /// Each host's weight in stacks that hold `frame`, and its total, over the query's range
    /// (its own host selection applies), the hosts with most in the frame first. Backends
    /// that can aggregate by host do it in one statement; this default merges one profile
    /// per host.
    fn host_shares(&self, q: &ProfileQuery<'_>, frame: &str) -> Result<Vec<HostShare>, StoreError> {
        let mut out = Vec::new();
        for host in self.hosts()? {
            if q.host.is_some_and(|h| h != host) || q.hosts.is_some_and(|l| !l.contains(&host)) {
                continue;
            }
            let p = self.profile(&ProfileQuery { host: Some(&host), ..*q })?;
            let total = p.stacks.total();
            let mut inside = Weight::ZERO;
            for (stack, w) in p.stacks.in_output_order() {
                if stack_has_frame(stack, frame.as_bytes()) {
                    inside += w;
                }
            }
            if p.buckets > 0 {
                out.push(HostShare { host, frame: inside, total });
            }
        }
        out.sort_by(|a, b| b.frame.cmp(&a.frame).then_with(|| a.host.cmp(&b.host)));
        Ok(out)
    }
}
