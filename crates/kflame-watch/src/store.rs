//! The store the watcher writes through: `kflame_store`'s `Store` trait and row types,
//! re-exported, and `MemStore`, an in-memory store for tests (no database file).

use kflame::events::EventRecord;
use kflame::fold::Weight;
pub use kflame_store::{
    Bucket, CaptureId, CaptureStart, Kind, Maintenance, Metric, Policy, Sample, Store, StoreError,
    StoredReport, TriggerFired, TriggerId,
};

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
    /// cgroups of the samples.
    pub cgroups: Vec<Option<String>>,
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
    /// Events per capture: (capture, time UTC ns, event name).
    pub events: Vec<(CaptureId, Option<u64>, String)>,
    /// (kind, title, stack).
    pub reports: Vec<(String, String, String)>,
    /// Maintenance calls.
    pub maintained: u32,
    /// Refuse this many bucket writes with `DiskFull` (a full disk that is freed later).
    pub refuse_buckets: u32,
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
        if self.refuse_buckets > 0 {
            self.refuse_buckets -= 1;
            return Err(StoreError::DiskFull { path: "memory".into(), detail: "full for the test".into() });
        }
        self.buckets.push(MemBucket {
            kind: b.kind,
            start_ns: b.start_ns,
            end_ns: b.end_ns,
            capture: b.capture,
            samples: b
                .samples
                .iter()
                .map(|s| (s.time_ns, s.cpu, String::from_utf8_lossy(s.stack).into_owned(), s.weight))
                .collect(),
            cgroups: b.samples.iter().map(|s| s.cgroup.map(str::to_string)).collect(),
            aggregated: b
                .aggregated
                .iter()
                .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), *w))
                .collect(),
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
        for e in events {
            self.events.push((capture, e.ts_ns, e.event.to_string()));
        }
        Ok(())
    }

    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError> {
        self.reports.push((r.kind.into(), r.title.into(), r.stack.into()));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn maintain(&mut self, _policy: &Policy) -> Result<Maintenance, StoreError> {
        self.maintained += 1;
        Ok(Maintenance::default())
    }
}
