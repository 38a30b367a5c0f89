//! Per-event records of the trace collapsers (`--events-json`), handed to an
//! [`EventSink`](crate::events::EventSink).
//!
//! Besides folded stacks, a trace collapser can report every event or paired call (syscall,
//! off-CPU interval, probed call, function_graph call) as an
//! [`EventRecord`](crate::events::EventRecord), for latency scatter plots. Collapsers run on
//! several threads (the engine forks them), so they share one sink through an [`EventLog`]:
//! the caller keeps a clone of the log it gives the collapser and calls [`EventLog::finish`]
//! after the run to flush and learn about write errors (the collapse itself never fails on
//! them). [`EventLog::new`] writes JSON lines ([`crate::events::JsonLines`], the format
//! described in [`crate::events`]); [`EventLog::with_sink`] takes any other sink.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};

pub use crate::events::{EventKind, EventRecord, Frames};
use crate::events::{EventSink, JsonLines};

/// A sink shared by the threads of one collapse (cheap to clone; all clones feed the same
/// sink).
#[derive(Clone)]
pub struct EventLog {
    inner: Arc<Mutex<Box<dyn EventSink + Send>>>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventLog")
    }
}

impl EventLog {
    /// A log writing JSON lines to `out` (wrap files in a `BufWriter`).
    pub fn new(out: impl Write + Send + 'static) -> EventLog {
        EventLog::with_sink(JsonLines::new(out))
    }

    /// A log feeding `sink`.
    pub fn with_sink(sink: impl EventSink + Send + 'static) -> EventLog {
        EventLog { inner: Arc::new(Mutex::new(Box::new(sink))) }
    }

    /// Hands one record to the sink. After the first write error, later records are dropped
    /// and the error is returned by [`finish`](EventLog::finish).
    pub fn write(&self, rec: &EventRecord<'_>) {
        if let Ok(mut sink) = self.inner.lock() {
            sink.event(rec);
        }
    }

    /// Flushes the sink; returns the number of records written or the first error.
    pub fn finish(&self) -> io::Result<u64> {
        let Ok(mut sink) = self.inner.lock() else {
            return Err(io::Error::other("events log poisoned by a panic"));
        };
        sink.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_writer_reports_errors() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let log = EventLog::new(Broken);
        let rec = EventRecord {
            kind: EventKind::Event,
            ts_ns: Some(0),
            duration_ns: None,
            cpu: 0,
            pid: Some(0),
            tid: None,
            comm: Some(""),
            event: "e",
            weight: 1,
            stack: Frames::Text(&[]),
        };
        log.clone().write(&rec);
        assert_eq!(log.finish().unwrap_err().to_string(), "disk full");
    }

    /// Any sink can take the records: here one that counts them by kind.
    #[test]
    fn another_sink_gets_the_same_records() {
        #[derive(Default)]
        struct Kinds(Arc<Mutex<Vec<EventKind>>>);
        impl EventSink for Kinds {
            fn event(&mut self, e: &EventRecord<'_>) {
                self.0.lock().unwrap().push(e.kind);
            }
            fn finish(&mut self) -> io::Result<u64> {
                Ok(self.0.lock().unwrap().len() as u64)
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = EventLog::with_sink(Kinds(seen.clone()));
        let rec = EventRecord {
            kind: EventKind::OffCpu,
            ts_ns: Some(1),
            duration_ns: Some(2),
            cpu: 0,
            pid: Some(3),
            tid: Some(3),
            comm: Some("c"),
            event: "offcpu:S",
            weight: 2,
            stack: Frames::Text(&[]),
        };
        log.clone().write(&rec);
        assert_eq!(log.finish().unwrap(), 1);
        assert_eq!(*seen.lock().unwrap(), [EventKind::OffCpu]);
    }
}
