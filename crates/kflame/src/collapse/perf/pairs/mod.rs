//! Syscall latency and off-CPU time from `perf script` tracepoint records.
//!
//! The default perf collapser counts samples of one event. Tracepoint records can say more
//! when they are paired: a `raw_syscalls:sys_enter` with the task's next `sys_exit` is a
//! syscall's duration, a `sched:sched_switch` away with the switch that puts the task back is
//! its time off-CPU, a `perf probe` entry with its `__return` probe is a function's
//! duration. This front end reads the records with the perf collapser's own line
//! parsers (`super::event`, `super::frame`), turns each into a [`TraceEvent`] and feeds
//! the format-independent pairers of [`crate::collapse::pairing`], exactly as the ftrace
//! front end does; the folded output is the same: weight = ns, root frame `syscall:NAME`,
//! `offcpu:STATE` or `probe:EVENT`, stack = the stack at entry / switch-out.
//!
//! ```text
//! perf record -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -a -g -- sleep 1
//! perf script --ns > calls.txt            # --ns: nanosecond timestamps (else µs)
//! kflame collapse --mode syscalls --events-json calls.jsonl calls.txt > latency.folded
//! perf record -e sched:sched_switch -a -g -- sleep 1 && perf script > sw.txt
//! kflame collapse --mode offcpu sw.txt > offcpu.folded
//! perf probe -x /usr/lib/x86_64-linux-gnu/libc.so.6 -a getcwd -a 'getcwd%return'
//! perf record -e probe_libc:getcwd -e probe_libc:getcwd__return -g -- CMD && perf script --ns > p.txt
//! kflame collapse --mode probes p.txt > getcwd.folded
//! ```
//!
//! The perf.data reader feeds its samples to the same pairing (`PerfPairs::feed_event`), so
//! `kflame collapse --mode M perf.data` gives this output without perf script.
//!
//! Pairs cross records, so this collapser is sequential. Records need their timestamp
//! (perf prints it by default); the CPU column is optional.

mod time;

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use super::bytes::{is_blank, trim_start};
use super::event::{self, EventLine};
use super::frame::{self, FrameStyle};
use super::kinds::{WEIRD_EVENT, WEIRD_STACK};
use crate::collapse::events_json::EventLog;
use crate::collapse::outliers::OutlierLog;
use crate::collapse::pairing::{
    OffCpuPairer, ProbePairer, SpanOutput, SyscallPairer, TaskFrames, TraceEvent, parse_probe_edge,
    parse_syscall_edge,
};
use crate::collapse::{Collapse, Output, lines};
use crate::fold::read::show;
use crate::fold::{Meta, Unit};

pub use time::parse_time_ns;

/// What the pairs measure.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PairMode {
    /// Syscall durations from `sys_enter`/`sys_exit` (or `sys_enter_X`/`sys_exit_X`) pairs.
    Syscalls,
    /// Off-CPU time from `sched_switch` out/in pairs.
    OffCpu,
    /// Function durations from uprobe/kprobe entry and return probes (`perf probe`).
    Probes,
}

/// Options of the pairing collapser.
#[derive(Clone, Debug)]
pub struct PerfPairsOptions {
    /// What to measure.
    pub mode: PairMode,
    /// Root frame with the task name.
    pub comm: bool,
    /// Root frame `comm-TID` (implies `comm`).
    pub pid: bool,
    /// Root frame `cpu-N`.
    pub cpu: bool,
    /// Suffix kernel frames with `_[k]`.
    pub annotate_kernel: bool,
    /// Suffix JIT frames with `_[j]`.
    pub annotate_jit: bool,
    /// `[module <addr>]` for frames without a symbol.
    pub include_addrs: bool,
    /// Suffix DWARF `(inlined)` frames with `_[i]`.
    pub mark_inlined: bool,
    /// Keep only the N longest intervals, each under its rank frame `[#01 2.345ms
    /// @512.100000]` ([`crate::collapse::outliers`]).
    pub top: Option<usize>,
}

impl PerfPairsOptions {
    /// Options for `mode` with everything else off.
    pub fn new(mode: PairMode) -> PerfPairsOptions {
        PerfPairsOptions {
            mode,
            comm: false,
            pid: false,
            cpu: false,
            annotate_kernel: false,
            annotate_jit: false,
            include_addrs: false,
            mark_inlined: false,
            top: None,
        }
    }
}

/// Diagnostic kinds of this front end (pairing has its own, see the pairers).
pub mod kinds {
    /// A record without the timestamp pairing needs.
    pub const NO_TIME: &str = "record without timestamp";
    /// A record whose thread id does not fit.
    pub const BAD_TID: &str = "unreadable thread id";
    /// Records without a CPU column (CPU 0 is reported for them).
    pub const NO_CPU: &str = "record without CPU";
    pub use crate::collapse::pairing::OTHER_EVENTS;
    /// Given by the sample-counting collapser for tracepoints that pair (a note).
    pub const HINT: &str = "paired time available";
}

/// The record being read.
#[derive(Debug, Default)]
struct Pending {
    active: bool,
    /// Whether the record is used (else its frame lines are skipped).
    wanted: bool,
    java: bool,
    ev: TraceEvent,
    /// Rendered frames, leaf first, one group per stack line.
    frames: Vec<u8>,
    starts: Vec<usize>,
}

/// The `perf script` pairing collapser (sequential).
#[derive(Debug)]
pub struct PerfPairs {
    opts: PerfPairsOptions,
    style: FrameStyle,
    rec: Pending,
    syscalls: SyscallPairer,
    offcpu: OffCpuPairer,
    probes: ProbePairer,
    spans: SpanOutput,
    /// Interned comms (perf repeats a handful of names).
    comms: FxHashMap<Vec<u8>, String>,
}

impl PerfPairs {
    /// A collapser with `opts`; `events` receives one JSON line per paired interval.
    pub fn new(opts: PerfPairsOptions, events: Option<EventLog>) -> PerfPairs {
        let style = FrameStyle {
            kernel: opts.annotate_kernel,
            jit: opts.annotate_jit,
            addrs: opts.include_addrs,
            inlined: opts.mark_inlined,
        };
        let task = TaskFrames { comm: opts.comm, pid: opts.pid, cpu: opts.cpu };
        PerfPairs {
            spans: SpanOutput::new(task, opts.top, events),
            opts,
            style,
            rec: Pending::default(),
            syscalls: SyscallPairer::new(),
            offcpu: OffCpuPairer::new(),
            probes: ProbePairer::new(),
            comms: FxHashMap::default(),
        }
    }

    /// Same record structure as [`super::PerfScript`]: a header line, frame lines, a blank
    /// line (or the next header).
    fn line(&mut self, n: u64, line: &[u8], out: &mut Output) {
        let Some(&first) = line.first() else {
            return self.end_record(out);
        };
        if first == b'#' {
            return;
        }
        let blank = is_blank(first);
        if blank && trim_start(line).iter().all(|&b| b == b'\r') {
            return self.end_record(out);
        }
        if !self.rec.active {
            return match header(line) {
                Some(ev) => self.event_line(n, line, &ev, out),
                None => out.diag.skip(WEIRD_EVENT, n, || {
                    format!(
                        "a record header `comm [pid/]tid [cpu] time: event: fields`, found `{}`",
                        show(line)
                    )
                }),
            };
        }
        // Unindented lines (perf 3.x frames, records without stacks) and space-indented ones
        // (records without stacks, comm padded) may be the next header.
        let next = if blank { event::padded_header(line) } else { header(line) };
        match next.is_none().then(|| frame::parse(line, blank)).flatten() {
            Some(_) if !self.rec.wanted => {}
            Some(sl) => {
                let start = self.rec.frames.len();
                if frame::render(&sl, self.style, self.rec.java, &mut self.rec.frames) {
                    self.rec.starts.push(start);
                }
            }
            None => match next.or_else(|| header(line)) {
                Some(ev) => {
                    self.end_record(out);
                    self.event_line(n, line, &ev, out);
                }
                None => out.diag.skip(WEIRD_STACK, n, || {
                    format!("a frame `address symbol (dso)`, found `{}`", show(line))
                }),
            },
        }
    }

    fn event_line(&mut self, n: u64, line: &[u8], ev: &EventLine<'_>, out: &mut Output) {
        let rec = &mut self.rec;
        rec.active = true;
        rec.wanted = false;
        rec.java = ev.comm == b"java";
        let name = String::from_utf8_lossy(ev.event.unwrap_or_default());
        let mut payload = String::from_utf8_lossy(ev.trailer);
        if self.opts.mode == PairMode::Probes {
            payload = ftrace_return_order(payload);
        }
        if !self.wants(&name, &payload) {
            let mode = self.opts.mode;
            return out.diag.note(kinds::OTHER_EVENTS, n, || {
                format!(
                    "`{name}` records are not used in {} mode (choose another with --mode)",
                    mode_name(mode)
                )
            });
        }
        let Some(ts_ns) = ev.time.and_then(parse_time_ns) else {
            return out.diag.skip(kinds::NO_TIME, n, || {
                format!("a timestamp `SECONDS.FRACTION:` before the event name, found `{}`", show(line))
            });
        };
        let tid = match event::parse_u64(ev.tid).and_then(|t| u32::try_from(t).ok()) {
            Some(t) => t,
            // A thread perf could not name (it exited): sched_switch names its tasks itself.
            None if ev.tid == b"-1" && self.opts.mode == PairMode::OffCpu => 0,
            None => {
                return out.diag.skip(kinds::BAD_TID, n, || {
                    format!("a thread id (`-1`: perf did not know the thread), found `{}`", show(ev.tid))
                });
            }
        };
        let cpu = ev.cpu.and_then(event::parse_u64).and_then(|c| u32::try_from(c).ok());
        if cpu.is_none() {
            out.diag.note(kinds::NO_CPU, n, || {
                "records without a `[CPU]` column: their CPU is reported as 0".into()
            });
        }
        let comm = self.comm(ev.comm);
        let rec = &mut self.rec;
        rec.wanted = true;
        rec.ev = TraceEvent {
            ts_ns,
            cpu: cpu.unwrap_or(0),
            pid: tid,
            comm,
            name: name.into_owned(),
            payload: payload.into_owned(),
            stack: Vec::new(),
            line: n,
        };
    }

    fn wants(&self, name: &str, payload: &str) -> bool {
        match self.opts.mode {
            PairMode::Syscalls => parse_syscall_edge(name, payload).is_some(),
            PairMode::OffCpu => name.rsplit(':').next() == Some("sched_switch"),
            PairMode::Probes => parse_probe_edge(payload).is_some(),
        }
    }

    fn comm(&mut self, raw: &[u8]) -> String {
        if let Some(c) = self.comms.get(raw) {
            return c.clone();
        }
        let c = String::from_utf8_lossy(raw).into_owned();
        self.comms.insert(raw.to_vec(), c.clone());
        c
    }

    /// Completes the pending record and feeds it to the pairer.
    fn end_record(&mut self, out: &mut Output) {
        let rec = &mut self.rec;
        let used = rec.active && rec.wanted;
        rec.active = false;
        rec.wanted = false;
        if used {
            let mut ev = std::mem::take(&mut rec.ev);
            ev.stack = root_first(&rec.frames, &rec.starts);
            self.pair(ev, out);
        }
        self.rec.frames.clear();
        self.rec.starts.clear();
    }

    fn pair(&mut self, ev: TraceEvent, out: &mut Output) {
        let span = match self.opts.mode {
            PairMode::Syscalls => self.syscalls.feed(ev, &mut out.diag),
            PairMode::OffCpu => self.offcpu.feed(ev, &mut out.diag),
            PairMode::Probes => self.probes.feed(ev, &mut out.diag),
        };
        if let Some(s) = span {
            self.spans.span(s, out);
        }
    }

    /// With [`PerfPairsOptions::top`], also hands each kept interval to `log`.
    pub fn with_outliers(mut self, log: OutlierLog) -> PerfPairs {
        self.spans.set_outliers(log);
        self
    }

    /// Feeds one event another front end read (a perf.data sample), its payload printed as
    /// perf script prints it and its stack attached; the closed interval, if any, goes to
    /// `out` exactly as from the text. Returns `false` (nothing done) for an event this mode
    /// does not use.
    pub(crate) fn feed_event(&mut self, mut ev: TraceEvent, out: &mut Output) -> bool {
        if self.opts.mode == PairMode::Probes {
            ev.payload = ftrace_return_order(Cow::Owned(ev.payload)).into_owned();
        }
        if !self.wants(&ev.name, &ev.payload) {
            return false;
        }
        self.pair(ev, out);
        true
    }
}

/// The folded frames of a record (groups leaf first, each group `;`-joined root first) as a
/// root-first list.
fn root_first(frames: &[u8], starts: &[usize]) -> Vec<String> {
    let mut stack = Vec::with_capacity(starts.len());
    let mut end = frames.len();
    for &s in starts.iter().rev() {
        for f in frames[s..end].split(|&b| b == b';') {
            stack.push(String::from_utf8_lossy(f).into_owned());
        }
        end = s;
    }
    stack
}

/// perf prints a return probe as `(FUNCTION <- RETURN_SITE)` (the event's print format:
/// `__probe_func`, then `__probe_ret_ip`); ftrace's own text, which the probe pairer reads,
/// prints `(RETURN_SITE <- FUNCTION)`. Swaps the two; other payloads are returned as they are.
fn ftrace_return_order(payload: Cow<'_, str>) -> Cow<'_, str> {
    let swapped = payload.trim_start().strip_prefix('(').and_then(|inner| {
        let close = inner.find(')')?;
        let (func, ret) = inner[..close].split_once(" <- ")?;
        Some(format!("({ret} <- {func}){}", &inner[close + 1..]))
    });
    swapped.map_or(payload, Cow::Owned)
}

/// A header line with an event name.
fn header(line: &[u8]) -> Option<EventLine<'_>> {
    event::parse(line).filter(|e| e.event.is_some())
}

fn mode_name(mode: PairMode) -> &'static str {
    match mode {
        PairMode::Syscalls => "syscalls",
        PairMode::OffCpu => "offcpu",
        PairMode::Probes => "probes",
    }
}

/// The note the sample-counting collapser gives when its event is one that pairs: the text
/// names the `--mode` that measures time instead. `None` for other events.
pub(crate) fn pairing_hint(event_key: &[u8]) -> Option<&'static str> {
    let name = std::str::from_utf8(event_key).ok()?;
    let (subsystem, ev) = name.split_once(':')?;
    let syscall = matches!(subsystem, "raw_syscalls" | "syscalls")
        && (ev == "sys_enter"
            || ev == "sys_exit"
            || ev.starts_with("sys_enter_")
            || ev.starts_with("sys_exit_"));
    if syscall {
        Some(
            "these are syscall entry/exit tracepoints, counted one per sample; `--mode syscalls` pairs them into syscall latency (ns)",
        )
    } else if name == "sched:sched_switch" {
        Some(
            "these are sched_switch tracepoints, counted one per sample; `--mode offcpu` pairs them into off-CPU time (ns)",
        )
    } else {
        None
    }
}

impl Collapse for PerfPairs {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            self.line(n, line, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        self.end_record(out);
        self.syscalls.finish(&mut out.diag);
        self.offcpu.finish(&mut out.diag);
        self.probes.finish(&mut out.diag);
        self.spans.finish(out);
    }

    fn meta(&self) -> Meta {
        let event = match self.opts.mode {
            PairMode::Syscalls => "syscalls",
            PairMode::OffCpu => "sched_switch",
            PairMode::Probes => "probes",
        };
        Meta { unit: Unit::Nanoseconds, event: Some(event.to_string()) }
    }
}

#[cfg(test)]
mod tests;
