//! Per-event records, one shape for every producer, and where they go.
//!
//! Besides folded stacks, kflame can hand over every event or paired call it saw: a CPU
//! sample, an allocation, a system call, an off-CPU wait, a probed call, a function_graph
//! call, a task in a stack snapshot. Every producer (the trace collapsers, the perf.data
//! pairing, `record`) describes each one as a borrowed [`EventRecord`] and gives it to an
//! [`EventSink`]. [`JsonLines`] is the sink of `--events-json` and of `record`'s `.json`
//! output; a store or a scatter-plot page are other sinks.
//!
//! This module depends on nothing else of the crate, so that any consumer can implement a
//! sink without pulling in a parser or the recorder.
//!
//! The JSON-lines form, one object per line, keys in this order:
//!
//! ```text
//! {"ts":2664.872806000,"cpu":0,"pid":2713,"comm":"burn-fp","duration_ns":5000,"stack":["main","write"],"event":"syscall:write","weight":5000}
//! ```
//!
//! `ts` is in seconds of the producer's clock (exact decimal, 9 fraction digits),
//! `duration_ns` is `null` for single events, `stack` is root first, `weight` is what the
//! event adds to the folded output (bytes, ns or 1); `ts`, `pid` and `comm` are `null` when
//! the input does not know them. The kind and the thread id are not written (the event name
//! says the kind).

use std::fmt::Write as _;
use std::io::{self, Write};

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A CPU sample (`cpu-clock`).
    Sample,
    /// A single traced event (an allocation, any tracepoint), weighed by bytes or 1.
    Event,
    /// A system call, from entry to exit.
    Syscall,
    /// A task blocked off-CPU, from switch-out to switch-in.
    OffCpu,
    /// A probed call, from entry probe to return probe.
    Probe,
    /// A function_graph call.
    Call,
    /// A task seen in a snapshot of every task's kernel stack.
    Snapshot,
}

impl EventKind {
    /// A short name: `sample`, `event`, `syscall`, `offcpu`, `probe`, `call`, `snapshot`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Sample => "sample",
            EventKind::Event => "event",
            EventKind::Syscall => "syscall",
            EventKind::OffCpu => "offcpu",
            EventKind::Probe => "probe",
            EventKind::Call => "call",
            EventKind::Snapshot => "snapshot",
        }
    }
}

/// The frames of an event's stack, root first, borrowed in whichever form the producer holds
/// them (frame names are bytes: not always UTF-8).
#[derive(Clone, Copy, Debug)]
pub enum Frames<'a> {
    /// Frames as strings.
    Text(&'a [String]),
    /// Frames as byte slices.
    Bytes(&'a [&'a [u8]]),
    /// Frames as byte vectors.
    Owned(&'a [Vec<u8>]),
}

impl<'a> Frames<'a> {
    /// Number of frames.
    pub fn len(&self) -> usize {
        match self {
            Frames::Text(f) => f.len(),
            Frames::Bytes(f) => f.len(),
            Frames::Owned(f) => f.len(),
        }
    }

    /// True without frames.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frames, root first.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let (text, bytes, owned): (&'a [String], &'a [&'a [u8]], &'a [Vec<u8>]) = match *self {
            Frames::Text(f) => (f, &[], &[]),
            Frames::Bytes(f) => (&[], f, &[]),
            Frames::Owned(f) => (&[], &[], f),
        };
        let text = text.iter().map(|s| s.as_bytes());
        let owned = owned.iter().map(Vec::as_slice);
        text.chain(bytes.iter().copied()).chain(owned)
    }
}

impl<'a> From<&'a [String]> for Frames<'a> {
    fn from(f: &'a [String]) -> Frames<'a> {
        Frames::Text(f)
    }
}

impl<'a> From<&'a Vec<String>> for Frames<'a> {
    fn from(f: &'a Vec<String>) -> Frames<'a> {
        Frames::Text(f)
    }
}

impl<'a> From<&'a [&'a [u8]]> for Frames<'a> {
    fn from(f: &'a [&'a [u8]]) -> Frames<'a> {
        Frames::Bytes(f)
    }
}

impl<'a> From<&'a [Vec<u8>]> for Frames<'a> {
    fn from(f: &'a [Vec<u8>]) -> Frames<'a> {
        Frames::Owned(f)
    }
}

/// One event or call, borrowed from its producer.
#[derive(Clone, Copy, Debug)]
pub struct EventRecord<'a> {
    /// What it is.
    pub kind: EventKind,
    /// Start (or event) time, ns of the producer's clock (`None` when the input has no time).
    pub ts_ns: Option<u64>,
    /// Length of the call or wait, ns (`None` for single events).
    pub duration_ns: Option<u64>,
    /// CPU (at the start).
    pub cpu: u32,
    /// Process id (`None` when unknown).
    pub pid: Option<u32>,
    /// Thread id (`None` when unknown or not recorded).
    pub tid: Option<u32>,
    /// Task name (`None` when unknown).
    pub comm: Option<&'a str>,
    /// Event or call name (`syscall:write`, `offcpu:S`, `cpu-clock`, `function_graph`).
    pub event: &'a str,
    /// Weight in the folded output (unit of the output it belongs to).
    pub weight: u64,
    /// Stack, root first.
    pub stack: Frames<'a>,
}

/// Where per-event records go. A producer calls [`event`](EventSink::event) for each record,
/// in its order (time order for a recording; input order for a trace), and the owner calls
/// [`finish`](EventSink::finish) once at the end.
pub trait EventSink {
    /// Takes one record. A sink that fails (a full disk) keeps the first error for
    /// [`finish`](EventSink::finish) and may drop later records: producing never fails.
    fn event(&mut self, e: &EventRecord<'_>);

    /// Flushes; returns the number of records taken, or the first error.
    fn finish(&mut self) -> io::Result<u64>;
}

/// The JSON-lines sink: one object per line (see the [module](self) documentation).
#[derive(Debug)]
pub struct JsonLines<W: Write> {
    out: W,
    line: String,
    written: u64,
    error: Option<io::Error>,
}

impl<W: Write> JsonLines<W> {
    /// Writes to `out` (wrap files in a `BufWriter`).
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines { out, line: String::new(), written: 0, error: None }
    }
}

impl<W: Write> EventSink for JsonLines<W> {
    fn event(&mut self, e: &EventRecord<'_>) {
        if self.error.is_some() {
            return;
        }
        self.line.clear();
        format_json(&mut self.line, e);
        match self.out.write_all(self.line.as_bytes()) {
            Ok(()) => self.written += 1,
            Err(err) => self.error = Some(err),
        }
    }

    fn finish(&mut self) -> io::Result<u64> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.written)
    }
}

/// Appends one JSON line (with its `\n`) for `rec` to `s`.
pub fn format_json(s: &mut String, rec: &EventRecord<'_>) {
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
        json_string(s, f);
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

    fn record<'a>(stack: Frames<'a>) -> EventRecord<'a> {
        EventRecord {
            kind: EventKind::Syscall,
            ts_ns: Some(2_664_872_806_000),
            duration_ns: Some(5),
            cpu: 1,
            pid: Some(42),
            tid: Some(43),
            comm: Some("tmux: server"),
            event: "syscall:write",
            weight: 5,
            stack,
        }
    }

    #[test]
    fn escapes_and_formats() {
        let stack = vec!["a\"b".to_string(), "c\\d\u{1}".to_string()];
        let mut s = String::new();
        format_json(&mut s, &record((&stack).into()));
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
            kind: EventKind::Call,
            ts_ns: None,
            duration_ns: None,
            cpu: 3,
            pid: None,
            tid: None,
            comm: None,
            event: "function_graph",
            weight: 1,
            stack: Frames::Bytes(&stack),
        };
        let mut s = String::new();
        format_json(&mut s, &rec);
        assert_eq!(
            s,
            "{\"ts\":null,\"cpu\":3,\"pid\":null,\"comm\":null,\"duration_ns\":null,\
             \"stack\":[\"a\\n\u{fffd}\",\"\\u2028b\"],\"event\":\"function_graph\",\"weight\":1}\n"
        );
    }

    /// The three forms of frames are the same stack.
    #[test]
    fn frames_in_any_form_are_the_same_stack() {
        let text = vec!["main".to_string(), "f".to_string()];
        let bytes: [&[u8]; 2] = [b"main", b"f"];
        let owned = vec![b"main".to_vec(), b"f".to_vec()];
        let lines: Vec<String> = [Frames::Text(&text), Frames::Bytes(&bytes), Frames::Owned(&owned)]
            .into_iter()
            .map(|f| {
                assert_eq!(f.len(), 2);
                let mut s = String::new();
                format_json(&mut s, &record(f));
                s
            })
            .collect();
        assert_eq!(lines[0], lines[1]);
        assert_eq!(lines[0], lines[2]);
        assert!(Frames::Owned(&[]).is_empty());
    }

    #[test]
    fn json_lines_counts_and_keeps_the_first_error() {
        let mut out = Vec::new();
        let mut sink = JsonLines::new(&mut out);
        let stack = vec!["x".to_string()];
        sink.event(&record((&stack).into()));
        sink.event(&record((&stack).into()));
        assert_eq!(sink.finish().unwrap(), 2);
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);

        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink = JsonLines::new(Broken);
        sink.event(&record((&stack).into()));
        sink.event(&record((&stack).into()));
        assert_eq!(sink.finish().unwrap_err().to_string(), "disk full");
    }
}
