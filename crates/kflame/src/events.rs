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
//! says the kind). Strings are JSON strings (invalid UTF-8 replaced by U+FFFD, U+2028 and
//! U+2029 escaped); the lines are written by serde_json.

use std::io::{self, Write};

use serde::{Serialize, Serializer};
use serde_json::ser::{CharEscape, Formatter};

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
    /// Waits of one task with one stack summed in the kernel over a window (lock
    /// contention, run queue, block IO): weight in ns, no duration of its own.
    Wait,
}

impl EventKind {
    /// A short name: `sample`, `event`, `syscall`, `offcpu`, `probe`, `call`, `snapshot`,
    /// `wait`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Sample => "sample",
            EventKind::Event => "event",
            EventKind::Syscall => "syscall",
            EventKind::OffCpu => "offcpu",
            EventKind::Probe => "probe",
            EventKind::Call => "call",
            EventKind::Snapshot => "snapshot",
            EventKind::Wait => "wait",
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
    line: Vec<u8>,
    written: u64,
    error: Option<io::Error>,
}

impl<W: Write> JsonLines<W> {
    /// Writes to `out` (wrap files in a `BufWriter`).
    pub fn new(out: W) -> JsonLines<W> {
        JsonLines { out, line: Vec::new(), written: 0, error: None }
    }
}

impl<W: Write> EventSink for JsonLines<W> {
    fn event(&mut self, e: &EventRecord<'_>) {
        if self.error.is_some() {
            return;
        }
        self.line.clear();
        format_json(&mut self.line, e);
        match self.out.write_all(&self.line) {
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

/// Appends one JSON line (with its `\n`) for `rec` to `out`.
pub fn format_json(out: &mut Vec<u8>, rec: &EventRecord<'_>) {
    let line = Line {
        ts: rec.ts_ns.map(Seconds),
        cpu: rec.cpu,
        pid: rec.pid,
        comm: rec.comm,
        duration_ns: rec.duration_ns,
        stack: Stack(rec.stack),
        event: rec.event,
        weight: rec.weight,
    };
    // Writing into a Vec does not fail, and a line holds no map (whose keys could be
    // refused): serializing cannot fail.
    let _ = line.serialize(&mut serde_json::Serializer::with_formatter(&mut *out, LineFormatter));
    out.push(b'\n');
}

/// One JSON line, its fields in the documented order.
#[derive(Serialize)]
struct Line<'a> {
    ts: Option<Seconds>,
    cpu: u32,
    pid: Option<u32>,
    comm: Option<&'a str>,
    duration_ns: Option<u64>,
    stack: Stack<'a>,
    event: &'a str,
    weight: u64,
}

/// A time in ns, written by [`LineFormatter`] as a JSON number of seconds with exactly 9
/// decimals (`1700000000.123456789`: exact, where an f64 would round).
///
/// It reaches the formatter as the line's one `u128` (serde has no fixed-point number):
/// another serializer writes the plain ns.
struct Seconds(u64);

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u128(u128::from(self.0))
    }
}

/// The frames of a stack as strings, invalid UTF-8 replaced by U+FFFD.
struct Stack<'a>(Frames<'a>);

impl Serialize for Stack<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|f| String::from_utf8_lossy(f)))
    }
}

/// Compact JSON as the event lines have always been written: `\"`, `\\`, `\n`, `\r`,
/// `\t`, other control characters and the line separators U+2028/U+2029 (which break
/// JavaScript parsers) as `\u` escapes; a `u128` is a [`Seconds`].
struct LineFormatter;

impl Formatter for LineFormatter {
    /// `ns` as seconds, a decimal point and exactly 9 digits of ns.
    fn write_u128<W: ?Sized + Write>(&mut self, w: &mut W, ns: u128) -> io::Result<()> {
        let secs = ns / 1_000_000_000;
        match u64::try_from(secs) {
            Ok(secs) => self.write_u64(w, secs)?,
            Err(_) => write!(w, "{secs}")?,
        }
        let mut frac = (ns % 1_000_000_000) as u32;
        let mut digits = *b".000000000";
        for d in digits[1..].iter_mut().rev() {
            *d = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        w.write_all(&digits)
    }

    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        // Both separators are encoded E2 80 A8/A9: most fragments hold no E2 at all.
        if !fragment.as_bytes().contains(&0xe2) {
            return w.write_all(fragment.as_bytes());
        }
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if matches!(c, '\u{2028}' | '\u{2029}') {
                w.write_all(&fragment.as_bytes()[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        let byte = match escape {
            CharEscape::Quote => return w.write_all(b"\\\""),
            CharEscape::ReverseSolidus => return w.write_all(b"\\\\"),
            CharEscape::Solidus => return w.write_all(b"/"),
            CharEscape::LineFeed => return w.write_all(b"\\n"),
            CharEscape::CarriageReturn => return w.write_all(b"\\r"),
            CharEscape::Tab => return w.write_all(b"\\t"),
            CharEscape::Backspace => 0x08,
            CharEscape::FormFeed => 0x0c,
            CharEscape::AsciiControl(b) => b,
        };
        const HEX: &[u8; 16] = b"0123456789abcdef";
        w.write_all(&[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]])
    }
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
        let mut s = Vec::new();
        format_json(&mut s, &record((&stack).into()));
        assert_eq!(
            String::from_utf8(s).unwrap(),
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
        let mut s = Vec::new();
        format_json(&mut s, &rec);
        assert_eq!(
            String::from_utf8(s).unwrap(),
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
        let lines: Vec<Vec<u8>> = [Frames::Text(&text), Frames::Bytes(&bytes), Frames::Owned(&owned)]
            .into_iter()
            .map(|f| {
                assert_eq!(f.len(), 2);
                let mut s = Vec::new();
                format_json(&mut s, &record(f));
                s
            })
            .collect();
        assert_eq!(lines[0], lines[1]);
        assert_eq!(lines[0], lines[2]);
        assert!(Frames::Owned(&[]).is_empty());
    }

    /// A produced line as its fields' JSON texts, read back by serde_json.
    fn fields(line: &[u8]) -> std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> {
        let text = std::str::from_utf8(line).unwrap();
        assert!(text.ends_with('\n') && text.matches('\n').count() == 1, "{text:?}");
        serde_json::from_str(text).unwrap()
    }

    /// The time stamp of a large epoch value is a JSON number with exactly its 9 decimals
    /// (an f64 would round it), and reads back as the ns given.
    #[test]
    fn time_is_an_exact_number_of_seconds() {
        let stack = vec!["x".to_string()];
        for (ns, text) in [
            (1_700_000_000_123_456_789, "1700000000.123456789"),
            (12_000_000_001, "12.000000001"),
            (0, "0.000000000"),
            (u64::MAX, "18446744073.709551615"),
        ] {
            let mut line = Vec::new();
            format_json(&mut line, &EventRecord { ts_ns: Some(ns), ..record((&stack).into()) });
            let f = fields(&line);
            assert_eq!(f["ts"].get(), text);
            let number: serde_json::Number = serde_json::from_str(f["ts"].get()).unwrap();
            assert!(number.is_f64(), "a number, not a string: {number}");
            let (secs, frac) = f["ts"].get().split_once('.').unwrap();
            assert_eq!(secs.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap(), ns);
        }
    }

    /// Invalid UTF-8 is replaced, separators and controls are escaped, and every field reads
    /// back as what was given.
    #[test]
    fn lines_read_back_as_the_record() {
        let frames: Vec<Vec<u8>> = vec![
            b"ok\xff\xfe".to_vec(),
            "sep\u{2028}and\u{2029}".into(),
            (0u8..0x20).chain([0x7f, b'"', b'\\', b'/']).collect(),
            "</script>&é".into(),
        ];
        let rec = EventRecord {
            comm: Some("tmux\u{2028}: \"x\""),
            event: "syscall:\u{2029}write",
            stack: Frames::Owned(&frames),
            ..record(Frames::Owned(&[]))
        };
        let mut line = Vec::new();
        format_json(&mut line, &rec);
        let text = std::str::from_utf8(&line).unwrap();
        assert!(!text.contains('\u{2028}') && !text.contains('\u{2029}'), "{text}");
        assert!(text.contains("\\u2028") && text.contains("\\u0008\\t\\n\\u000b\\u000c\\r"), "{text}");
        let f = fields(&line);
        let keys: Vec<&str> = f.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 8, "{keys:?}");
        let stack: Vec<String> = serde_json::from_str(f["stack"].get()).unwrap();
        let expected: Vec<String> = frames.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        assert_eq!(stack, expected);
        assert_eq!(stack[0], "ok\u{fffd}\u{fffd}");
        assert_eq!(serde_json::from_str::<String>(f["comm"].get()).unwrap(), "tmux\u{2028}: \"x\"");
        assert_eq!(serde_json::from_str::<String>(f["event"].get()).unwrap(), "syscall:\u{2029}write");
        for (key, value) in [("cpu", "1"), ("pid", "42"), ("duration_ns", "5"), ("weight", "5")] {
            assert_eq!(f[key].get(), value, "{key}");
        }
        // The keys in their documented order.
        let order: Vec<usize> = [
            "\"ts\"",
            "\"cpu\"",
            "\"pid\"",
            "\"comm\"",
            "\"duration_ns\"",
            "\"stack\"",
            "\"event\"",
            "\"weight\"",
        ]
        .iter()
        .map(|k| text.find(k).unwrap())
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
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

    /// Speed of the JSON-lines sink: one million records of a 16-frame stack. Run by hand:
    /// `cargo test -p kflame --release --lib events::tests::json_lines_speed -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, run by hand in release"]
    #[allow(clippy::print_stderr)] // the figure is what it is for
    fn json_lines_speed() {
        let frames: Vec<Vec<u8>> =
            (0..16).map(|i| format!("kernel_function_number_{i}+0x1a/0x40").into_bytes()).collect();
        let frames: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let mut best = std::time::Duration::MAX;
        for _ in 0..5 {
            let mut sink = JsonLines::new(io::sink());
            let t = std::time::Instant::now();
            for i in 0..1_000_000u64 {
                sink.event(&EventRecord {
                    kind: EventKind::Syscall,
                    ts_ns: Some(1_700_000_000_123_456_789 + i * 1_000),
                    duration_ns: Some(i % 50_000),
                    cpu: (i % 8) as u32,
                    pid: Some(4242),
                    tid: Some(4243),
                    comm: Some("postgres: writer"),
                    event: "syscall:write",
                    weight: i % 50_000,
                    stack: Frames::Bytes(&frames[..4 + (i % 12) as usize]),
                });
            }
            assert_eq!(sink.finish().unwrap(), 1_000_000);
            best = best.min(t.elapsed());
        }
        eprintln!("1,000,000 event lines: best of 5 {best:?}");
    }
}
