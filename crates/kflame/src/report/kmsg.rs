//! Following the kernel log live through `/dev/kmsg`, and its record format.
//!
//! Each `read(2)` of `/dev/kmsg` returns one record:
//!
//! ```text
//! PRI,SEQ,TS_USEC,FLAGS[,caller=T123];MESSAGE
//!  KEY=VALUE
//!  KEY=VALUE
//! ```
//!
//! `PRI` is `facility << 3 | level`, `SEQ` the record's sequence number (a gap means records
//! were overwritten before they were read), `TS_USEC` the kernel's timestamp (microseconds
//! since boot of the printk clock, `local_clock()`: the time dmesg prints; close to
//! `CLOCK_MONOTONIC` but not the same clock, they drift apart by milliseconds over hours),
//! `FLAGS` `-` or `c` (a continuation).
//! Bytes of the message below space, above `~` and `\` itself are escaped as `\xNN` (a
//! multi-line message has `\x0a`); the optional continuation lines (the device dictionary,
//! `SUBSYSTEM=`, `DEVICE=`) start with a space.
//!
//! [`parse_record`] reads one record (pure), [`records`] splits a text of many (what
//! `cat /dev/kmsg` prints). [`KmsgReports`] feeds the records to the report extractor and
//! hands out each [`Report`] once it has ended: at its end marker, at the next report of
//! its printk caller, after 120 unrelated lines, or when the log has been quiet for a
//! while. The device itself is followed by
//! [`record::kmsg::Kmsg`](crate::record::kmsg::Kmsg) (live interfaces are `record`'s), and
//! [`record::kmsg::Follower`](crate::record::kmsg::Follower) yields the reports of the
//! device as they end.

use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{Report, ReportExtractor};

/// One record of the kernel log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Log level, 0 (`KERN_EMERG`) to 7 (`KERN_DEBUG`).
    pub level: u8,
    /// Syslog facility (0: the kernel; messages written to `/dev/kmsg` by programs: 1).
    pub facility: u32,
    /// Sequence number.
    pub seq: u64,
    /// Kernel timestamp, microseconds since boot (the printk clock, close to
    /// `CLOCK_MONOTONIC`).
    pub ts_usec: u64,
    /// `c` (or `+`): the record is part of a continued line (`-` otherwise).
    pub continuation: bool,
    /// The printk caller id (`T123` a task, `C1` a CPU), where the kernel adds it.
    pub caller: Option<String>,
    /// The message, `\xNN` escapes decoded (may hold several lines).
    pub message: Vec<u8>,
    /// The `KEY=VALUE` continuation lines, in order (values decoded).
    pub dict: Vec<(String, Vec<u8>)>,
}

impl Record {
    /// The lines of the message.
    pub fn lines(&self) -> impl Iterator<Item = &[u8]> {
        let m = self.message.strip_suffix(b"\n").unwrap_or(&self.message);
        m.split(|&b| b == b'\n')
    }

    /// The kernel timestamp in nanoseconds since boot. It can be taken as `CLOCK_MONOTONIC`
    /// (the clock of the recorder's samples, which
    /// [`WallClock`](crate::record::WallClock) turns into Unix time) to within the drift of
    /// the printk clock: a few milliseconds after hours of uptime on the machines measured.
    pub fn ts_ns(&self) -> u64 {
        self.ts_usec.saturating_mul(1000)
    }

    /// A line of the message as a raw record line (`PRI,SEQ,TS,FLAGS[,caller=X];line`): the
    /// form the report extractor takes with its time and caller id.
    fn extractor_line(&self, line: &[u8]) -> Vec<u8> {
        let pri = u64::from(self.facility) << 3 | u64::from(self.level);
        let flags = if self.continuation { 'c' } else { '-' };
        let mut out = format!("{pri},{},{},{flags}", self.seq, self.ts_usec).into_bytes();
        if let Some(c) = &self.caller {
            out.extend_from_slice(b",caller=");
            out.extend_from_slice(c.as_bytes());
        }
        out.push(b';');
        out.extend_from_slice(line);
        out
    }
}

/// Why a record or the device could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KmsgError {
    /// A record that is not `PRI,SEQ,TS_USEC,FLAGS;MESSAGE`.
    #[error("kmsg record {seq}: {what}")]
    Malformed {
        /// The record's sequence number if it could be read, else `?`.
        seq: String,
        /// What was expected and what was found.
        what: String,
    },
    /// The device could not be opened or read.
    #[error("{}: {what}{}", path.display(), hint(source))]
    Io {
        /// The device.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
}

fn hint(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            format!(": {e} (reading the kernel log needs root or CAP_SYSLOG, see kernel.dmesg_restrict)")
        }
        _ => format!(": {e}"),
    }
}

/// Parses one record (one `read` of `/dev/kmsg`, trailing newline optional).
pub fn parse_record(rec: &[u8]) -> Result<Record, KmsgError> {
    let malformed = |seq: Option<u64>, what: String| KmsgError::Malformed {
        seq: seq.map_or_else(|| "?".to_string(), |s| s.to_string()),
        what,
    };
    let first_end = memchr::memchr(b'\n', rec).unwrap_or(rec.len());
    let (first, rest) = (&rec[..first_end], rec.get(first_end + 1..).unwrap_or_default());
    let Some(semi) = memchr::memchr(b';', first) else {
        return Err(malformed(
            None,
            format!("expected `PRI,SEQ,TS_USEC,FLAGS;MESSAGE`, found no `;` in `{}`", shorten(first)),
        ));
    };
    let head = std::str::from_utf8(&first[..semi])
        .map_err(|_| malformed(None, format!("the header `{}` is not text", shorten(&first[..semi]))))?;
    let mut fields = head.split(',');
    let mut number = |name: &str, seq: Option<u64>| -> Result<u64, KmsgError> {
        let f = fields.next().unwrap_or("");
        f.parse::<u64>().map_err(|_| {
            malformed(seq, format!("expected {name} (a number) in the header `{head}`, found `{f}`"))
        })
    };
    let pri = number("the priority", None)?;
    let seq = number("the sequence number", None)?;
    let ts_usec = number("the timestamp", Some(seq))?;
    let continuation = match fields.next() {
        Some("c") | Some("+") => true, // `+`: a later fragment, on kernels before 4.9
        Some("-") => false,
        other => {
            return Err(malformed(
                Some(seq),
                format!(
                    "expected the flags `-` or `c` in the header `{head}`, found `{}`",
                    other.unwrap_or("")
                ),
            ));
        }
    };
    let caller = fields.find_map(|f| f.strip_prefix("caller=")).map(str::to_string);
    let level = (pri & 7) as u8;
    let facility = u32::try_from(pri >> 3)
        .map_err(|_| malformed(Some(seq), format!("priority {pri} is out of range")))?;
    let mut dict = Vec::new();
    for line in rest.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Some(kv) = line.strip_prefix(b" ") else {
            return Err(malformed(
                Some(seq),
                format!("expected ` KEY=VALUE` continuation lines, found `{}`", shorten(line)),
            ));
        };
        let eq = memchr::memchr(b'=', kv).unwrap_or(kv.len());
        let key = String::from_utf8_lossy(&kv[..eq]).into_owned();
        dict.push((key, unescape(kv.get(eq + 1..).unwrap_or_default())));
    }
    Ok(Record {
        level,
        facility,
        seq,
        ts_usec,
        continuation,
        caller,
        message: unescape(&first[semi + 1..]),
        dict,
    })
}

/// The records of a text holding many (`cat /dev/kmsg`): each header line with the
/// continuation lines (starting with a space) after it.
pub fn records(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let start = at;
        loop {
            match memchr::memchr(b'\n', &text[at..]) {
                Some(nl) => at += nl + 1,
                None => at = text.len(),
            }
            if at >= text.len() || text[at] != b' ' {
                break;
            }
        }
        Some(&text[start..at])
    })
}

/// Decodes the kernel's `\xNN` escapes (other backslashes are kept as they are).
pub fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\'
            && s.get(i + 1) == Some(&b'x')
            && let Some(v) = s.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok())
            && let Ok(b) = u8::from_str_radix(v, 16)
        {
            out.push(b);
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

fn shorten(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(80)]).into_owned();
    if b.len() > 80 { format!("{s}...") } else { s }
}

/// Kernel reports of a stream of kmsg records, each handed out once it has ended.
pub struct KmsgReports {
    x: ReportExtractor,
    quiet: Duration,
    last: Option<Instant>,
    lines: u64,
    /// The last [`KmsgReports::TEXT_LINES`] message lines, by line number: the text of a
    /// report ending now.
    recent: std::collections::VecDeque<(u64, String)>,
}

/// A report and its lines as the kernel printed them (messages without the record
/// headers), from its first line to its last frame, then the lines that close the trace
/// (`</TASK>`, `</IRQ>`, ...) and an `---[ end trace` right after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportText {
    /// The report.
    pub report: Report,
    /// Its lines, at most [`KmsgReports::TEXT_BYTES`].
    pub text: String,
}

impl KmsgReports {
    /// The default quiet period after which an open report is taken as ended.
    pub const QUIET: Duration = Duration::from_secs(5);

    /// Reports of records fed with [`push`](KmsgReports::push); a report still open when no
    /// record came for `quiet` is ended by [`idle`](KmsgReports::idle).
    pub fn new(quiet: Duration) -> KmsgReports {
        KmsgReports { x: ReportExtractor::new(), quiet, last: None, lines: 0, recent: Default::default() }
    }

    /// Message lines kept for the reports' texts (of a report longer than this, only the
    /// lines still kept).
    pub const TEXT_LINES: usize = 2048;
    /// The most bytes of one report's text.
    pub const TEXT_BYTES: usize = 64 << 10;

    /// Feeds a record that arrived at `now`. Reports take their line numbers from the
    /// lines fed so far (1-based) and their time from the records' timestamps.
    pub fn push(&mut self, r: &Record, now: Instant) {
        for line in r.lines() {
            self.lines += 1;
            self.x.push_line(self.lines, &r.extractor_line(line));
            if self.recent.len() == Self::TEXT_LINES {
                self.recent.pop_front();
            }
            self.recent.push_back((self.lines, String::from_utf8_lossy(line).into_owned()));
        }
        self.last = Some(now);
    }

    /// Ends the open reports if no record came for the quiet period before `now`.
    pub fn idle(&mut self, now: Instant) {
        if self.last.is_some_and(|t| now.duration_since(t) >= self.quiet) && self.x.has_open() {
            self.x.finish();
            self.last = None;
        }
    }

    /// Ends every open report (the end of the stream).
    pub fn finish(&mut self) {
        self.x.finish();
    }

    /// The next report that has ended.
    pub fn pop(&mut self) -> Option<Report> {
        self.x.pop()
    }

    /// The next report that has ended, with its text (see [`ReportText`]).
    pub fn pop_with_text(&mut self) -> Option<ReportText> {
        let report = self.x.pop()?;
        let text = self.text_of(&report);
        Some(ReportText { report, text })
    }

    /// The lines of `r` still kept: from its first line through the last one holding one of
    /// its frames (or its first line alone), then an `---[ end trace` line if one follows.
    fn text_of(&self, r: &Report) -> String {
        let frames: std::collections::HashSet<&str> = r
            .frames
            .iter()
            .chain(r.extra_stacks.iter().flat_map(|e| &e.frames))
            .map(|f| f.raw.as_str())
            .collect();
        let from = self.recent.partition_point(|(n, _)| *n < r.line);
        let mut end = from;
        for (i, (_, l)) in self.recent.iter().enumerate().skip(from) {
            if frames.contains(l.trim()) {
                end = i;
            }
        }
        // The lines that close a trace after its last frame, through the end marker.
        let closing = |l: &str| {
            let t = l.trim();
            ["</TASK>", "</IRQ>", "</NMI>", "<EOI>", "</SOFTIRQ>"].contains(&t)
        };
        while self.recent.get(end + 1).is_some_and(|(_, l)| closing(l)) {
            end += 1;
        }
        if self.recent.get(end + 1).is_some_and(|(_, l)| l.contains("---[ end trace")) {
            end += 1;
        }
        let mut text = String::new();
        for (_, l) in self.recent.iter().skip(from).take((end + 1).saturating_sub(from)) {
            if text.len() + l.len() + 1 > Self::TEXT_BYTES {
                break;
            }
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(l);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report's text is its lines as printed, the task and kernel line and the end marker
    /// included, nothing of the boot messages around it (KernelCI's boot log).
    #[test]
    fn a_report_keeps_its_lines_as_printed() {
        let log = include_bytes!("../../tests/data/kernel-log/kmsg/kernelci-boot-005.kmsg.txt");
        let mut x = KmsgReports::new(Duration::from_secs(5));
        for rec in records(log) {
            if let Ok(r) = parse_record(rec) {
                x.push(&r, Instant::now());
            }
        }
        x.finish();
        let first = x.pop_with_text().expect("a report");
        let t = &first.text;
        assert!(
            t.starts_with("WARNING: CPU: 0 PID: 0 at arch/x86/kernel/alternative.c:730 apply_returns"),
            "{t}"
        );
        assert!(t.contains("\nCPU: 0 PID: 0 Comm: swapper/0 Not tainted 5.10.219-rc1 #1\n"), "{t}");
        assert!(
            t.ends_with(" secondary_startup_64_no_verify+0xac/0xbb\n---[ end trace b82bbb4bc35dba80 ]---"),
            "{t}"
        );
        assert_eq!(t.lines().count(), 28, "{t}");
        // Read again, the text gives the same report.
        let again = crate::report::ReportExtractor::extract_all(t.as_bytes());
        assert_eq!(
            (again[0].title.as_str(), again[0].kernel.as_deref()),
            (first.report.title.as_str(), Some("5.10.219-rc1"))
        );
    }

    #[test]
    fn parses_header_message_escapes_and_dictionary() {
        let r = parse_record(
            b"6,339,5140900,-,caller=T1;NET: Registered\\x09PF_INET6 protocol family\\x0aline 2\n \
              SUBSYSTEM=net\n DEVICE=+net:lo\n",
        )
        .expect("a record");
        assert_eq!((r.level, r.facility, r.seq, r.ts_usec, r.continuation), (6, 0, 339, 5_140_900, false));
        assert_eq!(r.caller.as_deref(), Some("T1"));
        assert_eq!(r.message, b"NET: Registered\tPF_INET6 protocol family\nline 2");
        assert_eq!(
            r.lines().collect::<Vec<_>>(),
            [&b"NET: Registered\tPF_INET6 protocol family"[..], b"line 2"]
        );
        assert_eq!(
            r.dict,
            [("SUBSYSTEM".to_string(), b"net".to_vec()), ("DEVICE".to_string(), b"+net:lo".to_vec())]
        );
        assert_eq!(r.ts_ns(), 5_140_900_000);
        // A program's message (facility 1, user) and a continuation.
        let r = parse_record(b"12,7,1,c;kflame test").expect("a record");
        assert_eq!((r.level, r.facility, r.continuation), (4, 1, true));
        assert_eq!(r.extractor_line(b"x"), b"12,7,1,c;x");
    }

    #[test]
    fn malformed_records_say_what_was_expected() {
        let err = |b: &[u8]| parse_record(b).expect_err("malformed").to_string();
        assert_eq!(
            err(b"no header here"),
            "kmsg record ?: expected `PRI,SEQ,TS_USEC,FLAGS;MESSAGE`, found no `;` in `no header here`"
        );
        assert_eq!(
            err(b"6,x,1,-;m"),
            "kmsg record ?: expected the sequence number (a number) in the header `6,x,1,-`, found `x`"
        );
        assert_eq!(
            err(b"6,9,1;m"),
            "kmsg record 9: expected the flags `-` or `c` in the header `6,9,1`, found ``"
        );
        assert_eq!(
            err(b"6,9,1,-;m\nSUBSYSTEM=net\n"),
            "kmsg record 9: expected ` KEY=VALUE` continuation lines, found `SUBSYSTEM=net`"
        );
    }

    #[test]
    fn splits_a_text_of_records() {
        let text = b"6,1,0,-;a\n SUBSYSTEM=x\n DEVICE=y\n4,2,5,-;b\n4,3,6,-;c";
        let recs: Vec<&[u8]> = records(text).collect();
        assert_eq!(recs, [&b"6,1,0,-;a\n SUBSYSTEM=x\n DEVICE=y\n"[..], b"4,2,5,-;b\n", b"4,3,6,-;c"]);
        assert_eq!(records(b"").count(), 0);
    }

    #[test]
    fn unescapes_only_valid_escapes() {
        assert_eq!(unescape(b"a\\x5cb\\x0"), b"a\\b\\x0");
        assert_eq!(unescape(b"\\xzz\\"), b"\\xzz\\");
    }
}
