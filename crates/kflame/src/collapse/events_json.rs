//! Per-event records as JSON lines, a side channel of the trace collapsers.
//!
//! Besides folded stacks, a trace collapser can write one JSON object per event or per
//! paired call (syscall, off-CPU interval), one per line, for latency scatter plots:
//!
//! ```text
//! {"ts":2664.872806000,"cpu":0,"pid":2713,"comm":"burn-fp","duration_ns":5000,"stack":["main","write"],"event":"syscall:write","weight":5000}
//! ```
//!
//! `ts` is in seconds of the trace clock (exact decimal, 9 fraction digits), `duration_ns`
//! is `null` for single events, `stack` is root first, `weight` is what the event adds to
//! the folded output (bytes, ns or 1); `ts`, `pid` and `comm` are `null` when the input
//! does not know them. Every JSON event stream of kflame (trace collapsers, function_graph
//! calls, `kflame record` samples) is written by [`format_record`], with these keys in this
//! order. The writer is shared: the caller keeps a clone of the [`EventLog`] it gives the
//! collapser and calls [`EventLog::finish`] after the run to flush and learn about write
//! errors (the collapse itself never fails on them).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// One event or call to write; `S` is a frame name (`String`, `&[u8]`, ...).
#[derive(Clone, Debug)]
pub struct EventRecord<'a, S = String> {
    /// Start (or event) time, ns (`None` when the input has no time).
    pub ts_ns: Option<u64>,
    /// CPU.
    pub cpu: u32,
    /// Task pid (`None` when unknown).
    pub pid: Option<u32>,
    /// Task name (`None` when unknown).
    pub comm: Option<&'a str>,
    /// Length of the call, ns (`None` for single events).
    pub duration_ns: Option<u64>,
    /// Stack, root first (invalid UTF-8 is replaced when written).
    pub stack: &'a [S],
    /// Event or call name.
    pub event: &'a str,
    /// Weight in the folded output.
    pub weight: u64,
}

impl<'a> EventRecord<'a> {
    /// The record of a paired span (syscall, off-CPU interval, probed call): weighed by its
    /// duration, named by its label.
    pub fn span(s: &'a crate::collapse::pairing::Span) -> EventRecord<'a> {
        EventRecord {
            ts_ns: Some(s.start_ns),
            cpu: s.cpu,
            pid: Some(s.pid),
            comm: Some(&s.comm),
            duration_ns: Some(s.duration_ns),
            stack: &s.stack,
            event: &s.label,
            weight: s.duration_ns,
        }
    }
}

/// A shared JSON-lines writer (cheap to clone; all clones write to the same output).
#[derive(Clone)]
pub struct EventLog {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    out: Box<dyn Write + Send>,
    error: Option<io::Error>,
    written: u64,
    line: String,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventLog")
    }
}

impl EventLog {
    /// A log writing to `out` (wrap files in a `BufWriter`).
    pub fn new(out: impl Write + Send + 'static) -> EventLog {
        let inner = Inner { out: Box::new(out), error: None, written: 0, line: String::new() };
        EventLog { inner: Arc::new(Mutex::new(inner)) }
    }

    /// Writes one record. After the first write error, later records are dropped and the
    /// error is returned by [`finish`](EventLog::finish).
    pub fn write<S: AsRef<[u8]>>(&self, rec: &EventRecord<'_, S>) {
        let Ok(mut guard) = self.inner.lock() else { return };
        let inner = &mut *guard;
        if inner.error.is_some() {
            return;
        }
        inner.line.clear();
        format_record(&mut inner.line, rec);
        match inner.out.write_all(inner.line.as_bytes()) {
            Ok(()) => inner.written += 1,
            Err(e) => inner.error = Some(e),
        }
    }

    /// Flushes the output; returns the number of records written or the first error.
    pub fn finish(&self) -> io::Result<u64> {
        let Ok(mut inner) = self.inner.lock() else {
            return Err(io::Error::other("events log poisoned by a panic"));
        };
        if let Some(e) = inner.error.take() {
            return Err(e);
        }
        inner.out.flush()?;
        Ok(inner.written)
    }
}

/// Appends one JSON line (with its `\n`) for `rec` to `s`.
pub fn format_record<S: AsRef<[u8]>>(s: &mut String, rec: &EventRecord<'_, S>) {
    s.push_str("{\"ts\":");
    match rec.ts_ns {
        Some(ts) => {
            let _ = write!(s, "{}.{:09}", ts / 1_000_000_000, ts % 1_000_000_000);
        }
        None => s.push_str("null"),
    }
    let _ = write!(s, ",\"cpu\":{},\"pid\":", rec.cpu);
    match rec.pid {
        Some(pid) => {
            let _ = write!(s, "{pid}");
        }
        None => s.push_str("null"),
    }
    s.push_str(",\"comm\":");
    match rec.comm {
        Some(comm) => json_string(s, comm.as_bytes()),
        None => s.push_str("null"),
    }
    match rec.duration_ns {
        Some(d) => {
            let _ = write!(s, ",\"duration_ns\":{d}");
        }
        None => s.push_str(",\"duration_ns\":null"),
    }
    s.push_str(",\"stack\":[");
    for (i, f) in rec.stack.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        json_string(s, f.as_ref());
    }
    s.push_str("],\"event\":");
    json_string(s, rec.event.as_bytes());
    let _ = writeln!(s, ",\"weight\":{}}}", rec.weight);
}

/// Appends `v` as a JSON string literal: invalid UTF-8 replaced, quotes, backslashes and
/// control characters escaped (and U+2028/U+2029, which break JavaScript parsers).
pub fn json_string(s: &mut String, v: &[u8]) {
    s.push('"');
    for c in String::from_utf8_lossy(v).chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_formats() {
        let stack = vec!["a\"b".to_string(), "c\\d\u{1}".to_string()];
        let rec = EventRecord {
            ts_ns: Some(2_664_872_806_000),
            cpu: 1,
            pid: Some(42),
            comm: Some("tmux: server"),
            duration_ns: Some(5),
            stack: &stack,
            event: "syscall:write",
            weight: 5,
        };
        let mut s = String::new();
        format_record(&mut s, &rec);
        assert_eq!(
            s,
            "{\"ts\":2664.872806000,\"cpu\":1,\"pid\":42,\"comm\":\"tmux: server\",\"duration_ns\":5,\
             \"stack\":[\"a\\\"b\",\"c\\\\d\\u0001\"],\"event\":\"syscall:write\",\"weight\":5}\n"
        );
    }

    #[test]
    fn unknown_fields_are_null_and_bytes_are_escaped() {
        let stack: [&[u8]; 2] = [b"a\n\xff", b"\xe2\x80\xa8b"];
        let rec = EventRecord {
            ts_ns: None,
            cpu: 3,
            pid: None,
            comm: None,
            duration_ns: None,
            stack: &stack,
            event: "function_graph",
            weight: 1,
        };
        let mut s = String::new();
        format_record(&mut s, &rec);
        assert_eq!(
            s,
            "{\"ts\":null,\"cpu\":3,\"pid\":null,\"comm\":null,\"duration_ns\":null,\
             \"stack\":[\"a\\n\u{fffd}\",\"\\u2028b\"],\"event\":\"function_graph\",\"weight\":1}\n"
        );
    }

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
            ts_ns: Some(0),
            cpu: 0,
            pid: Some(0),
            comm: Some(""),
            duration_ns: None,
            stack: &[] as &[String],
            event: "e",
            weight: 1,
        };
        log.clone().write(&rec);
        assert_eq!(log.finish().unwrap_err().to_string(), "disk full");
    }
}
