//! The format registry: every input format kflame collapses, and content-based detection.

use std::fmt;

/// An input format. The CLI builds the matching collapser with its options.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Already folded stacks (`a;b;c 12`), merged and re-aggregated.
    Folded,
    /// `perf script` text (FlameGraph's `stackcollapse-perf.pl` input).
    PerfScript,
    /// ftrace `trace` / `trace_pipe` text with `<stack trace>` blocks.
    Ftrace,
    /// `trace-cmd report` text with `kernel_stack:` blocks.
    TraceCmd,
    /// function_graph tracer output (tracefs `trace` or `trace-cmd report`), latency in ns.
    FunctionGraph,
    /// A snapshot of every thread's `/proc/PID/task/TID/stack`, grouped by task state.
    ProcStacks,
    /// bpftrace map output with stack keys (`@[kstack]: N`).
    Bpftrace,
    /// bcc tool output (profile, offcputime, stackcount), multi-line or folded.
    Bcc,
    /// SystemTap `print_stack()` / `print_backtrace()` output followed by counts.
    Stap,
    /// Kernel logs (dmesg, /dev/kmsg, journalctl -k, syslog): one stack per report.
    KernelLog,
    /// `crash` utility `bt` / `foreach bt` output: one stack per task.
    Crash,
    /// perf.data recorded by `perf record`, read directly (binary; not line-based).
    PerfData,
    /// pprof `profile.proto`, gzipped or not (read whole by [`crate::import::pprof`]).
    Pprof,
    /// speedscope JSON (read whole by [`crate::import::speedscope`]).
    Speedscope,
    /// OTLP profiles, an `ExportProfilesServiceRequest` (read whole by [`crate::import::otlp`]).
    Otlp,
}

impl Format {
    /// Every format, in detection priority order (earlier wins ties).
    pub const ALL: &'static [Format] = &[
        Format::Folded,
        Format::PerfScript,
        Format::Ftrace,
        Format::TraceCmd,
        Format::FunctionGraph,
        Format::ProcStacks,
        Format::Bpftrace,
        Format::Bcc,
        Format::Stap,
        Format::KernelLog,
        Format::Crash,
        Format::PerfData,
        Format::Pprof,
        Format::Speedscope,
        Format::Otlp,
    ];

    /// The name used by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::PerfScript => "perf-script",
            Format::Ftrace => "ftrace",
            Format::TraceCmd => "trace-cmd",
            Format::FunctionGraph => "function-graph",
            Format::ProcStacks => "proc-stacks",
            Format::Bpftrace => "bpftrace",
            Format::Bcc => "bcc",
            Format::Stap => "stap",
            Format::KernelLog => "kernel-log",
            Format::Crash => "crash",
            Format::PerfData => "perf-data",
            Format::Pprof => "pprof",
            Format::Speedscope => "speedscope",
            Format::Otlp => "otlp",
        }
    }

    /// Other accepted names.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Format::Folded => &["collapsed", "stackcollapse"],
            Format::PerfScript => &["perf"],
            Format::Ftrace => &["trace_pipe", "tracefs"],
            Format::TraceCmd => &["tracecmd", "trace-cmd-report"],
            Format::FunctionGraph => &["function_graph", "funcgraph", "fgraph"],
            Format::ProcStacks => &["proc-stack", "procstacks"],
            Format::Bpftrace => &[],
            Format::Bcc => &["bcc-profile", "bcc-offcputime", "bcc-stackcount"],
            Format::Stap => &["systemtap"],
            Format::KernelLog => &["dmesg", "kmsg", "kern.log", "oops"],
            Format::Crash => &["crash-bt"],
            Format::PerfData => &["perf.data", "perfdata"],
            Format::Pprof => &["pb.gz", "profile.proto"],
            Format::Speedscope => &[],
            Format::Otlp => &["opentelemetry"],
        }
    }

    /// One line for `--help` and error messages.
    pub fn summary(self) -> &'static str {
        match self {
            Format::Folded => "folded stacks `frame;frame;... count` (FlameGraph)",
            Format::PerfScript => "`perf script` text (samples with call stacks)",
            Format::Ftrace => "ftrace trace/trace_pipe events with `<stack trace>` blocks",
            Format::TraceCmd => "`trace-cmd report` events with `kernel_stack:` blocks",
            Format::FunctionGraph => "ftrace function_graph output, raw or `trace-cmd report` (latency, ns)",
            Format::ProcStacks => "snapshot of /proc/*/task/*/stack (`==> pid= comm= state=` blocks)",
            Format::Bpftrace => "bpftrace maps keyed by stacks (`@[kstack]: N`, `@x[ustack, comm]: N`)",
            Format::Bcc => "bcc profile/offcputime/stackcount output, multi-line or folded (`-f`)",
            Format::Stap => "SystemTap print_stack()/print_backtrace() output with counts",
            Format::KernelLog => {
                "kernel log with oopses, warnings, hung tasks, lockups... (dmesg, kmsg, syslog)"
            }
            Format::Crash => "crash utility `bt -a` / `foreach bt` output",
            Format::PerfData => "perf.data from `perf record`, symbolized in-process (no perf needed)",
            Format::Pprof => "pprof profile.proto, gzipped (.pb.gz) or not: Go, Pyroscope, Parca",
            Format::Speedscope => "speedscope JSON (sampled and evented profiles)",
            Format::Otlp => "OpenTelemetry profiles: OTLP ExportProfilesServiceRequest protobuf",
        }
    }

    /// Confidence 0-100 that `head` (the first bytes of an input) is in this format.
    pub fn detect(self, head: &[u8]) -> u8 {
        match self {
            Format::Folded => super::folded::detect(head),
            Format::PerfScript => super::perf::detect(head),
            Format::Ftrace => super::ftrace::detect_ftrace(head),
            Format::TraceCmd => super::ftrace::detect_trace_cmd(head),
            Format::FunctionGraph => super::fgraph::detect(head),
            Format::ProcStacks => super::proc_stacks::detect(head),
            Format::Bpftrace => super::bpftrace::detect(head),
            Format::Bcc => super::bcc::detect(head),
            Format::Stap => super::stap::detect(head),
            Format::KernelLog => super::kernel_log::detect(head),
            Format::Crash => super::crash::detect(head),
            Format::PerfData => {
                if is_perf_data(head) {
                    100
                } else {
                    0
                }
            }
            Format::Pprof => crate::import::pprof::detect(head),
            Format::Speedscope => crate::import::speedscope::detect(head),
            Format::Otlp => crate::import::otlp::detect(head),
        }
    }

    /// Looks a format up by name or alias.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name || f.aliases().contains(&name))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The most likely format of `head`, if any format is at least fairly confident (score ≥ 30).
///
/// `head` is the start of the input cut at a line boundary (or the whole input): detectors
/// judge whole records, so a last line cut short by the end of a byte window would count
/// against the format. The CLI reads at least 64 KiB and at least a few whole lines, however
/// long they are (up to [`crate::text::MAX_LINE`]).
pub fn detect(head: &[u8]) -> Option<Format> {
    let mut best: Option<(u8, Format)> = None;
    for &f in Format::ALL {
        let score = f.detect(head);
        if score >= 30 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, f));
        }
    }
    best.map(|(_, f)| f)
}

/// What an input is, by its first bytes, beyond the formats kflame collapses: what to tell a
/// user whose input gave no stacks. See [`content`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// No bytes at all.
    Empty,
    /// gzip-compressed (`1f 8b`).
    Gzip,
    /// zstd-compressed (`28 b5 2f fd`).
    Zstd,
    /// xz-compressed (`fd 37 7a 58 5a 00`).
    Xz,
    /// bzip2-compressed (`BZh` and a block size digit).
    Bzip2,
    /// perf.data from `perf record` (`PERFILE2`, either byte order, or the older `PERFFILE`).
    PerfData,
    /// trace-cmd's binary `trace.dat` (`17 08 44 tracing`), read with `trace-cmd report`.
    TraceCmdDat,
    /// Not text: many NUL or other control bytes.
    Binary,
    /// Text, in the given format if one is detected.
    Text(Option<Format>),
}

/// Identifies `head` (the first bytes of an input, whole lines for text) by magic numbers,
/// then as binary or text; text is run through [`detect`].
///
/// Binary means that at least a tenth of the bytes are NUL or control characters other than
/// tab, newline, carriage return, form feed and escape (kernel logs carry colour escapes, and
/// may hold some NUL bytes after an unclean shutdown without being binary), or that at least
/// a quarter are not valid UTF-8.
pub fn content(head: &[u8]) -> Content {
    if head.is_empty() {
        Content::Empty
    } else if let Some(c) = magic(head) {
        c
    } else if control_heavy(head) {
        Content::Binary
    } else {
        Content::Text(detect(head))
    }
}

/// True when `head` is not text: [`content`] would say it is compressed, perf.data, a
/// trace-cmd .dat file or binary. Cheaper than [`content`] (no format detection).
pub fn looks_binary(head: &[u8]) -> bool {
    magic(head).is_some() || control_heavy(head)
}

/// The binary kinds recognised by their first bytes.
fn magic(head: &[u8]) -> Option<Content> {
    const MAGIC: &[(&[u8], Content)] = &[
        (b"\x1f\x8b", Content::Gzip),
        (b"\x28\xb5\x2f\xfd", Content::Zstd),
        (b"\xfd7zXZ\x00", Content::Xz),
        (b"PERFFILE", Content::PerfData),
        (b"\x17\x08\x44tracing", Content::TraceCmdDat),
    ];
    if let Some((_, c)) = MAGIC.iter().find(|(m, _)| head.starts_with(m)) {
        return Some(*c);
    }
    if is_perf_data(head) {
        return Some(Content::PerfData);
    }
    if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
        return Some(Content::Bzip2);
    }
    None
}

/// In the first 64 KiB, at least a tenth of the bytes are control bytes other than text's,
/// or at least a quarter are not valid UTF-8 (text in a legacy 8-bit encoding has far fewer;
/// compressed or random bytes about half).
fn control_heavy(head: &[u8]) -> bool {
    let sample = &head[..head.len().min(64 * 1024)];
    let control = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f)
        .count();
    let invalid: usize = sample.utf8_chunks().map(|c| c.invalid().len()).sum();
    !sample.is_empty() && (control * 10 >= sample.len() || invalid * 4 >= sample.len())
}

/// True when `head` starts with a perf.data magic (`PERFILE2`, either byte order).
pub fn is_perf_data(head: &[u8]) -> bool {
    // `PERFFILE`: version 1, which the reader names in its refusal.
    head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP") || head.starts_with(b"PERFFILE")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn detects_folded_and_rejects_noise() {
        assert_eq!(detect(b"a;b 1\na;c 2\n"), Some(Format::Folded));
        assert_eq!(detect(b"hello world\nthis is prose\n"), None);
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"PERFILE2\x68\0\0\0\0\0\0\0"), Some(Format::PerfData));
    }

    #[test]
    fn content_by_magic_then_text() {
        assert_eq!(content(b""), Content::Empty);
        assert_eq!(content(b"\x1f\x8b\x08\x00"), Content::Gzip);
        assert_eq!(content(b"\x17\x08\x44tracing6\0"), Content::TraceCmdDat);
        assert_eq!(content(b"BZh91AY&SY"), Content::Bzip2);
        assert_eq!(content(&[0u8; 4096]), Content::Binary);
        // High bytes that are no UTF-8, without control bytes: binary too.
        let high: Vec<u8> = (0..4096u32).map(|i| 0x80 + (i * 7 % 0x7f) as u8).collect();
        assert_eq!(content(&high), Content::Binary);
        // Latin-1 text with a few accented letters is text.
        assert!(matches!(content(b"caf\xe9 na\xefve;r\xe9sum\xe9 1\n"), Content::Text(_)));
        assert_eq!(content(b"a;b 1\n"), Content::Text(Some(Format::Folded)));
        assert_eq!(content(b"hello\n"), Content::Text(None));
        // A kernel log with a run of NUL bytes and colour escapes is still text.
        let mut log = b"\x1b[1m[    1.000000] Linux version 6.1.0\x1b[0m\n".repeat(100);
        log.extend_from_slice(&[0u8; 256]);
        assert!(matches!(content(&log), Content::Text(_)));
    }
}
