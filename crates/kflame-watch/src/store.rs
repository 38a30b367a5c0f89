//! The store interface the watcher writes through: the agreed shape of `kflame_store`'s
//! `Store` trait and row types, kept here until that crate is part of the workspace, and
//! `MemStore`, an in-memory store for tests. Once `kflame-store` is merged this module
//! becomes a re-export of it.

use kflame::events::EventRecord;
use kflame::fold::{Meta, Weight};

/// Kinds of profile rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// CPU samples.
    Cpu,
    /// Off-CPU time.
    OffCpu,
    /// Page allocations (bytes).
    Mem,
    /// System-call latency.
    Syscalls,
    /// Blocked-task snapshots.
    Blocked,
}

impl Kind {
    /// `cpu`, `offcpu`, `mem`, `syscalls`, `blocked`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::OffCpu => "offcpu",
            Kind::Mem => "mem",
            Kind::Syscalls => "syscalls",
            Kind::Blocked => "blocked",
        }
    }
}

/// Id of a stored trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TriggerId(pub i64);

/// Id of a stored capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CaptureId(pub i64);

/// One sample with its own time.
#[derive(Clone, Debug)]
pub struct Sample<'a> {
    /// UTC nanoseconds since the epoch.
    pub time_ns: i64,
    /// CPU.
    pub cpu: u32,
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// cgroup path.
    pub cgroup: Option<&'a str>,
    /// Folded stack without count.
    pub stack: &'a str,
    /// Weight.
    pub weight: Weight,
}

/// A profile bucket.
#[derive(Clone, Debug)]
pub struct Bucket<'a> {
    /// Host.
    pub host: &'a str,
    /// Kind.
    pub kind: Kind,
    /// Start, UTC ns.
    pub start_ns: i64,
    /// End, UTC ns.
    pub end_ns: i64,
    /// The capture it belongs to (none: the always-on profile).
    pub capture: Option<CaptureId>,
    /// Unit and event.
    pub meta: &'a Meta,
    /// Samples with their time.
    pub samples: &'a [Sample<'a>],
    /// Stacks without per-sample times.
    pub aggregated: &'a [(&'a str, Weight)],
}

/// One metric value.
#[derive(Clone, Debug)]
pub struct Metric<'a> {
    /// Name.
    pub name: &'a str,
    /// Label.
    pub label: &'a str,
    /// Value.
    pub value: f64,
}

/// A trigger that fired.
#[derive(Clone, Debug)]
pub struct TriggerFired<'a> {
    /// Host.
    pub host: &'a str,
    /// When.
    pub time_ns: i64,
    /// The rule as written.
    pub rule: &'a str,
    /// The metric that crossed.
    pub metric: &'a str,
    /// Its value.
    pub value: f64,
    /// The threshold.
    pub threshold: f64,
}

/// A capture's start.
#[derive(Clone, Debug)]
pub struct CaptureStart<'a> {
    /// Host.
    pub host: &'a str,
    /// Kind.
    pub kind: Kind,
    /// Start.
    pub start_ns: i64,
    /// The trigger that started it.
    pub trigger: Option<TriggerId>,
    /// Unit and event.
    pub meta: &'a Meta,
}

/// A kernel report.
#[derive(Clone, Debug)]
pub struct StoredReport<'a> {
    /// Host.
    pub host: &'a str,
    /// When.
    pub time_ns: i64,
    /// Kind name.
    pub kind: &'a str,
    /// Title.
    pub title: &'a str,
    /// Folded stack.
    pub stack: &'a str,
    /// Lines.
    pub text: &'a str,
}

/// Retention, downsampling and disk budget.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Keep this long (ns).
    pub retain_ns: i64,
    /// Most bytes (0: none).
    pub disk_budget: u64,
}

/// What maintenance did.
#[derive(Clone, Debug, Default)]
pub struct Maintenance {
    /// Rows removed.
    pub removed: u64,
}

/// Store errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The disk is full.
    #[error("{0}: disk full")]
    DiskFull(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// Where the watcher writes.
pub trait Store: Send {
    /// Metrics of one time.
    fn append_metrics(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) -> Result<(), StoreError>;
    /// A profile bucket.
    fn append_bucket(&mut self, bucket: &Bucket<'_>) -> Result<(), StoreError>;
    /// A trigger.
    fn append_trigger(&mut self, t: &TriggerFired<'_>) -> Result<TriggerId, StoreError>;
    /// A capture's start.
    fn begin_capture(&mut self, c: &CaptureStart<'_>) -> Result<CaptureId, StoreError>;
    /// A capture's end.
    fn end_capture(&mut self, id: CaptureId, end_ns: i64, note: &str) -> Result<(), StoreError>;
    /// Per-event records of a capture.
    fn append_events(&mut self, capture: CaptureId, events: &[EventRecord<'_>]) -> Result<(), StoreError>;
    /// A kernel report.
    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError>;
    /// Retention and budget.
    fn maintain(&mut self, policy: &Policy) -> Result<Maintenance, StoreError>;
}

/// An owned bucket row of [`MemStore`].
#[derive(Clone, Debug)]
pub struct MemBucket {
    /// Kind.
    pub kind: Kind,
    /// Range.
    pub start_ns: i64,
    /// Range end.
    pub end_ns: i64,
    /// Capture.
    pub capture: Option<CaptureId>,
    /// (time, cpu, stack, weight).
    pub samples: Vec<(i64, u32, String, Weight)>,
    /// Aggregated stacks.
    pub aggregated: Vec<(String, Weight)>,
}

/// A capture row of [`MemStore`].
#[derive(Clone, Debug)]
pub struct MemCapture {
    /// Kind.
    pub kind: Kind,
    /// Start.
    pub start_ns: i64,
    /// Trigger.
    pub trigger: Option<TriggerId>,
    /// End, once ended.
    pub end_ns: Option<i64>,
    /// Note.
    pub note: String,
}

/// Everything written, in memory.
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    /// (time, name, label, value).
    pub metrics: Vec<(i64, String, String, f64)>,
    /// Buckets.
    pub buckets: Vec<MemBucket>,
    /// (rule, metric, value, threshold).
    pub triggers: Vec<(String, String, f64, f64)>,
    /// Captures.
    pub captures: Vec<MemCapture>,
    /// Events per capture.
    pub events: Vec<(CaptureId, usize)>,
    /// (kind, title, stack).
    pub reports: Vec<(String, String, String)>,
    /// Maintenance calls.
    pub maintained: u32,
    /// Fail bucket writes with `DiskFull` while set.
    pub full: bool,
}

impl Store for MemStore {
    fn append_metrics(
        &mut self,
        _host: &str,
        time_ns: i64,
        metrics: &[Metric<'_>],
    ) -> Result<(), StoreError> {
        for m in metrics {
            self.metrics.push((time_ns, m.name.to_string(), m.label.to_string(), m.value));
        }
        Ok(())
    }

    fn append_bucket(&mut self, b: &Bucket<'_>) -> Result<(), StoreError> {
        if self.full {
            return Err(StoreError::DiskFull("memory".into()));
        }
        self.buckets.push(MemBucket {
            kind: b.kind,
            start_ns: b.start_ns,
            end_ns: b.end_ns,
            capture: b.capture,
            samples: b.samples.iter().map(|s| (s.time_ns, s.cpu, s.stack.to_string(), s.weight)).collect(),
            aggregated: b.aggregated.iter().map(|(s, w)| (s.to_string(), *w)).collect(),
        });
        Ok(())
    }

    fn append_trigger(&mut self, t: &TriggerFired<'_>) -> Result<TriggerId, StoreError> {
        self.triggers.push((t.rule.into(), t.metric.into(), t.value, t.threshold));
        Ok(TriggerId(self.triggers.len() as i64))
    }

    fn begin_capture(&mut self, c: &CaptureStart<'_>) -> Result<CaptureId, StoreError> {
        self.captures.push(MemCapture {
            kind: c.kind,
            start_ns: c.start_ns,
            trigger: c.trigger,
            end_ns: None,
            note: String::new(),
        });
        Ok(CaptureId(self.captures.len() as i64))
    }

    fn end_capture(&mut self, id: CaptureId, end_ns: i64, note: &str) -> Result<(), StoreError> {
        if let Some(c) = usize::try_from(id.0 - 1).ok().and_then(|i| self.captures.get_mut(i)) {
            c.end_ns = Some(end_ns);
            c.note = note.to_string();
        }
        Ok(())
    }

    fn append_events(&mut self, capture: CaptureId, events: &[EventRecord<'_>]) -> Result<(), StoreError> {
        self.events.push((capture, events.len()));
        Ok(())
    }

    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError> {
        self.reports.push((r.kind.into(), r.title.into(), r.stack.into()));
        Ok(())
    }

    fn maintain(&mut self, _policy: &Policy) -> Result<Maintenance, StoreError> {
        self.maintained += 1;
        Ok(Maintenance::default())
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
    fn maintain(&mut self, policy: &Policy) -> Result<Maintenance, StoreError> {
        (**self).maintain(policy)
    }
}
