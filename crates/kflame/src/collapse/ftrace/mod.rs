//! ftrace `trace` / `trace_pipe` text and `trace-cmd report` output: trace events with their
//! stacks (`stacktrace` trigger, `options/stacktrace`, `options/userstacktrace`,
//! `trace-cmd record -T`), collapsed in one of four modes:
//!
//! - [`Mode::Alloc`]: memory flame graph; `mm_page_alloc` weighs `4096 << order` bytes,
//!   `kmalloc*`/`kmem_cache_alloc*` weigh `bytes_alloc`, kprobe/uprobe events weigh the size
//!   their fetched arguments give (`order=`, else `bytes=`, `size=` or `request=`; see
//!   `memory.rs`), or 1 each with [`WeightBy::Count`].
//! - [`Mode::Syscalls`]: syscall latency from `sys_enter`/`sys_exit` pairs; weight = the
//!   duration in ns, stack = the stack at entry, root frame `syscall:NAME`.
//! - [`Mode::OffCpu`]: off-CPU time from `sched_switch`; weight = ns until the task is
//!   switched back in, stack = its stack when it left, root frame `offcpu:STATE`.
//! - [`Mode::Probes`]: function durations from uprobe/kprobe entry + return probe pairs;
//!   weight = ns from entry to return, stack = the stack at entry, root frame
//!   `probe:ENTRY_EVENT`.
//! - [`Mode::Events`]: every event counts 1, root frame = the event name.
//!
//! Without a mode, the most frequent kind of event in the head of the input decides
//! ([`guess_mode`]).
//! Stacks without their event (the buffer overwrote it, or the trigger fired on a filtered
//! event) and events without a stack are normal: the first are counted in a note, the second
//! keep their weight under a `[no stack]` frame so that totals stay true. The tracing
//! machinery's own frames at the leaf (`trace_event_raw_event_*`, `__traceiter_*`) are
//! dropped. Pairing lives in [`crate::collapse::pairing`], shared with other trace formats.
//!
//! Capturing (as root, in a private instance so that nothing else is disturbed):
//!
//! ```text
//! cd /sys/kernel/tracing && mkdir instances/mine && cd instances/mine
//! echo 1 > events/kmem/mm_page_alloc/enable         # or raw_syscalls, sched/sched_switch
//! echo 1 > options/stacktrace                       # kernel stack after every event
//! echo 1 > options/userstacktrace                   # optional: user stack too
//! sleep 10; echo 0 > tracing_on; cat trace > alloc.txt
//! cd .. && rmdir mine
//! kflame collapse alloc.txt --pid --order > alloc.folded     # # unit=bytes
//! kflame collapse --mode syscalls --events-json calls.jsonl trace.txt > latency.folded
//! ```
//!
//! `trace-cmd record -e kmem:mm_page_alloc -T` followed by `trace-cmd report` works the same.

mod detect;
mod frames;
mod line;
mod memory;
mod queue;

pub use detect::{GUESS_WINDOW, detect_ftrace, detect_trace_cmd, guess_mode};

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use self::line::{Body, Header, parse_header};
use self::queue::{Queue, Record, Target};
use super::events_json::{EventKind, EventLog, EventRecord, Frames};
use super::outliers::OutlierLog;
use super::pairing::{
    OffCpuPairer, ProbePairer, SpanOutput, SyscallPairer, TaskFrames, TraceEvent, parse_probe_edge,
    parse_syscall_edge,
};
use super::{Collapse, Output, lines};
use crate::fold::{Meta, Unit, Weight};

/// What the collapse measures (serde names as on the command line: `alloc`, `syscalls`,
/// `offcpu`, `probes`, `events`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Bytes allocated (allocation events only).
    Alloc,
    /// Syscall durations.
    Syscalls,
    /// Off-CPU durations.
    #[serde(rename = "offcpu")]
    OffCpu,
    /// Function durations from uprobe/kprobe entry and return probes.
    Probes,
    /// Event counts (all events).
    Events,
}

impl Mode {
    /// The name used on the command line (`alloc`, `syscalls`, `offcpu`, `events`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Alloc => "alloc",
            Mode::Syscalls => "syscalls",
            Mode::OffCpu => "offcpu",
            Mode::Probes => "probes",
            Mode::Events => "events",
        }
    }

    /// Durations of paired spans (syscalls, off-CPU intervals, probed calls).
    pub fn spans(self) -> bool {
        matches!(self, Mode::Syscalls | Mode::OffCpu | Mode::Probes)
    }
}

/// How single events are weighed (alloc and events modes; `--weight`, serde names as on
/// the command line: `count`, `bytes`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WeightBy {
    /// One per event or sample.
    Count,
    /// Allocated bytes (events without a size are skipped).
    Bytes,
}

impl WeightBy {
    /// As on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WeightBy::Count => "count",
            WeightBy::Bytes => "bytes",
        }
    }
}

/// Options of the ftrace collapser (all off by default).
#[derive(Clone, Debug, Default)]
pub struct FtraceOptions {
    /// Mode; chosen from the content when `None`.
    pub mode: Option<Mode>,
    /// Why `mode` was chosen, when the caller chose it from the content with [`guess_mode`]
    /// (to check its options against it first): reported in the same note as the
    /// collapser's own guess.
    pub mode_reason: Option<String>,
    /// Weighing of single events; default bytes in alloc mode, count in events mode.
    pub weight: Option<WeightBy>,
    /// Root frame with the task name.
    pub comm: bool,
    /// Root frame `comm-pid` (implies `comm`).
    pub pid: bool,
    /// Root frame `cpu-N`.
    pub cpu: bool,
    /// Root frame `order-N` for page allocations.
    pub order: bool,
    /// Root frames with the migrate type and the GFP flags of allocations.
    pub page_type: bool,
    /// Syscalls, off-CPU and probes modes: keep only the N longest spans, each under its
    /// rank frame `[#01 2.345ms @512.100000]` ([`crate::collapse::outliers`]). Other modes
    /// ignore it.
    pub top: Option<usize>,
}

/// Diagnostic kinds of this format.
pub mod kinds {
    /// A line that is neither a comment, a frame, nor an event/stack line.
    pub const BAD_LINE: &str = "unreadable trace line";
    /// A stack block whose event is not there (normal at the start of a buffer).
    pub const ORPHAN_STACK: &str = "stack without event";
    /// Frame lines with no `<stack trace>` line before them (stream cut mid-stack).
    pub const HEADLESS_FRAMES: &str = "frames without stack header";
    /// An allocation event whose size could not be read.
    pub const NO_SIZE: &str = "allocation without size";
    pub use crate::collapse::pairing::OTHER_EVENTS;
    /// Events lost by the kernel (`[LOST N EVENTS]`).
    pub const LOST: &str = "events lost by the kernel";
    /// How the mode was chosen.
    pub const MODE: &str = "mode";
    /// `--order`/`--page-type` given while the chosen mode measures durations (a note).
    pub const UNUSED_OPTION: &str = "option not used in this mode";
}

/// The ftrace / trace-cmd collapser (sequential: records depend on each other).
pub struct Ftrace {
    opts: FtraceOptions,
    mode: Mode,
    mode_note: Option<String>,
    /// Options the chosen mode ignores, reported once.
    option_note: Option<String>,
    queue: Queue,
    target: Target,
    syscalls: SyscallPairer,
    offcpu: OffCpuPairer,
    probes: ProbePairer,
    spans: SpanOutput,
    events: Option<EventLog>,
    used_events: BTreeSet<String>,
    stack: Vec<u8>,
    comms: FxHashMap<u32, String>,
}

impl Ftrace {
    /// A collapser with `opts`; `events` receives one JSON line per event or call.
    pub fn new(opts: FtraceOptions, events: Option<EventLog>) -> Ftrace {
        let task = TaskFrames { comm: opts.comm, pid: opts.pid, cpu: opts.cpu };
        Ftrace {
            spans: SpanOutput::new(task, opts.top, events.clone()),
            mode: opts.mode.unwrap_or(Mode::Events),
            opts,
            mode_note: None,
            option_note: None,
            queue: Queue::default(),
            target: Target::None,
            syscalls: SyscallPairer::new(),
            offcpu: OffCpuPairer::new(),
            probes: ProbePairer::new(),
            events,
            used_events: BTreeSet::new(),
            stack: Vec::new(),
            comms: FxHashMap::default(),
        }
    }

    /// With [`FtraceOptions::top`], also hands each kept span to `log`.
    pub fn with_outliers(mut self, log: OutlierLog) -> Ftrace {
        self.spans.set_outliers(log);
        self
    }

    /// The mode in effect (after [`Collapse::prepare`] when it was chosen from content).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn weight_by(&self) -> WeightBy {
        self.opts.weight.unwrap_or(if self.mode == Mode::Alloc { WeightBy::Bytes } else { WeightBy::Count })
    }

    fn line(&mut self, n: u64, line: &[u8], out: &mut Output) {
        if let Some(raw) = frames::frame_text(line) {
            return self.frame(n, raw, out);
        }
        self.target = Target::None;
        let t = line::trim(line);
        if t.is_empty() || t[0] == b'#' || is_trace_cmd_preamble(t) {
            return;
        }
        if let Some(lost) = lost_events(t) {
            out.diag.add(crate::diag::Severity::Note, kinds::LOST, n, lost, || {
                "the kernel dropped events (ring buffer full): totals are a lower bound".into()
            });
            return;
        }
        match parse_header(line) {
            Ok(h) => self.header(n, h, out),
            Err(why) => out.diag.skip(kinds::BAD_LINE, n, || {
                format!("`COMM-PID [CPU] FLAGS TIMESTAMP: event: fields` ({why}), found `{}`", show(line))
            }),
        }
    }

    fn frame(&mut self, n: u64, raw: &[u8], out: &mut Output) {
        match self.target {
            Target::Record { user, .. } => {
                if let Some(f) = frames::clean_frame(raw, user) {
                    self.queue.push_frame(self.target, f);
                }
            }
            Target::Orphan | Target::Ignored => {}
            Target::None => {
                out.diag.note(kinds::HEADLESS_FRAMES, n, || {
                    "stack frames with no `<stack trace>` line before them (input starts or was cut \
                     inside a stack): ignored"
                        .into()
                });
                self.target = Target::Orphan;
            }
        }
    }

    fn header(&mut self, n: u64, h: Header<'_>, out: &mut Output) {
        self.queue.saw_time(h.ts_ns);
        self.learn_comm(h.pid, h.comm);
        self.release(out, false);
        match h.body {
            Body::Event { name, payload } if !self.wants(name, payload) => {
                self.other_event(&String::from_utf8_lossy(name), n, out);
                self.queue.push_ignored(h.cpu, h.pid);
            }
            Body::Event { name, payload } => self.queue.push(TraceEvent {
                ts_ns: h.ts_ns,
                cpu: h.cpu,
                pid: h.pid,
                comm: String::from_utf8_lossy(h.comm).into_owned(),
                name: String::from_utf8_lossy(name).into_owned(),
                payload: String::from_utf8_lossy(payload).into_owned(),
                stack: Vec::new(),
                line: n,
            }),
            Body::KernelStack | Body::UserStack => {
                self.target = self.queue.open_stack(h.cpu, h.pid, h.body == Body::UserStack);
                if self.target == Target::Orphan {
                    out.diag.note(kinds::ORPHAN_STACK, n, || {
                        "stacks whose event line is not in the input (overwritten, filtered out, or \
                         before the start of the capture): ignored"
                            .into()
                    });
                }
            }
        }
    }

    /// Remembers the task name of `pid`, to name lines printed as `<...>-PID` (ftrace's comm
    /// cache missed them).
    fn learn_comm(&mut self, pid: u32, comm: &[u8]) {
        if comm == UNKNOWN_COMM || self.comms.get(&pid).is_some_and(|c| c.as_bytes() == comm) {
            return;
        }
        self.comms.insert(pid, String::from_utf8_lossy(comm).into_owned());
    }

    /// Dispatches the records that can no longer change (all of them with `all`).
    fn release(&mut self, out: &mut Output, all: bool) {
        loop {
            let r = if all { self.queue.pop() } else { self.queue.pop_ready() };
            let Some(r) = r else { break };
            self.dispatch(r, out);
        }
    }

    fn dispatch(&mut self, r: Record, out: &mut Output) {
        let mut ev = assemble(r);
        if ev.comm.as_bytes() == UNKNOWN_COMM
            && let Some(c) = self.comms.get(&ev.pid)
        {
            ev.comm.clone_from(c);
        }
        match self.mode {
            Mode::Alloc | Mode::Events => self.single(ev, out),
            Mode::Syscalls => {
                if let Some(span) = self.syscalls.feed(ev, &mut out.diag) {
                    self.spans.span(span, out);
                }
            }
            Mode::OffCpu => {
                if let Some(span) = self.offcpu.feed(ev, &mut out.diag) {
                    self.spans.span(span, out);
                }
            }
            Mode::Probes => {
                if let Some(span) = self.probes.feed(ev, &mut out.diag) {
                    self.spans.span(span, out);
                }
            }
        }
    }

    /// Whether the mode uses events of this kind (others are skipped early, stacks and all).
    fn wants(&self, name: &[u8], payload: &[u8]) -> bool {
        match self.mode {
            Mode::Alloc => {
                memory::is_alloc_event(&String::from_utf8_lossy(name), &String::from_utf8_lossy(payload))
            }
            Mode::Syscalls => {
                let name = String::from_utf8_lossy(name);
                parse_syscall_edge(&name, &String::from_utf8_lossy(payload)).is_some()
            }
            Mode::OffCpu => name == b"sched_switch",
            Mode::Probes => parse_probe_edge(&String::from_utf8_lossy(payload)).is_some(),
            Mode::Events => true,
        }
    }

    fn other_event(&self, name: &str, line: u64, out: &mut Output) {
        let mode = self.mode;
        out.diag.note(kinds::OTHER_EVENTS, line, || {
            format!("`{name}` events are not used in {} mode (choose another with --mode)", mode.name())
        });
    }

    /// One event, weighed by count or bytes (alloc and events modes).
    fn single(&mut self, ev: TraceEvent, out: &mut Output) {
        let bytes = match memory::alloc_bytes(&ev.name, &ev.payload) {
            Ok(b) => b,
            Err(msg) => return out.diag.skip(kinds::NO_SIZE, ev.line, || msg),
        };
        if self.mode == Mode::Alloc && bytes.is_none() {
            return self.other_event(&ev.name, ev.line, out);
        }
        let weight = match (self.weight_by(), bytes) {
            (WeightBy::Count, _) => 1,
            (WeightBy::Bytes, Some(b)) => b,
            (WeightBy::Bytes, None) => return self.other_event(&ev.name, ev.line, out),
        };
        let roots = self.event_roots(&ev);
        if !self.used_events.contains(&ev.name) {
            self.used_events.insert(ev.name.clone());
        }
        self.emit(&roots, &ev.stack, weight, out);
        self.log(EventRecord {
            kind: EventKind::Event,
            ts_ns: Some(ev.ts_ns),
            duration_ns: None,
            cpu: ev.cpu,
            pid: Some(ev.pid),
            tid: None,
            comm: Some(&ev.comm),
            event: &ev.name,
            weight,
            stack: Frames::Text(&ev.stack),
        });
    }

    /// Synthetic root frames of a single event: event name (events mode), task, CPU, order,
    /// page type.
    fn event_roots(&self, ev: &TraceEvent) -> Vec<String> {
        let mut roots = Vec::new();
        if self.mode == Mode::Events {
            roots.push(ev.name.clone());
        }
        self.task_roots(&mut roots, &ev.comm, ev.pid, ev.cpu);
        if self.opts.order
            && let Some(o) = memory::order(&ev.name, &ev.payload)
        {
            roots.push(format!("order-{o}"));
        }
        if self.opts.page_type {
            roots.extend(memory::page_type_frames(&ev.name, &ev.payload));
        }
        roots
    }

    fn task_roots(&self, roots: &mut Vec<String>, comm: &str, pid: u32, cpu: u32) {
        let task = TaskFrames { comm: self.opts.comm, pid: self.opts.pid, cpu: self.opts.cpu };
        roots.extend(task.names(comm, pid, cpu));
    }

    fn emit(&mut self, roots: &[String], stack: &[String], weight: u64, out: &mut Output) {
        self.stack.clear();
        let placeholder = [String::from("[no stack]")];
        let stack = if stack.is_empty() { &placeholder[..] } else { stack };
        for f in roots.iter().chain(stack) {
            if !self.stack.is_empty() {
                self.stack.push(b';');
            }
            self.stack.extend_from_slice(f.as_bytes());
        }
        out.stacks.add(&self.stack, Weight::from_u64(weight));
    }

    fn log(&self, rec: EventRecord<'_>) {
        if let Some(log) = &self.events {
            log.write(&rec);
        }
    }
}

/// How ftrace prints a task whose name it did not record.
const UNKNOWN_COMM: &[u8] = b"<...>";

/// The event with its stack root first: user frames, then kernel frames.
fn assemble(r: Record) -> TraceEvent {
    let mut ev = r.ev;
    let mut stack = Vec::new();
    if let Some(user) = r.user {
        stack.extend(user.into_iter().rev());
    }
    if let Some(mut kernel) = r.kernel {
        frames::strip_trace_frames(&mut kernel);
        stack.extend(kernel.into_iter().rev());
    }
    ev.stack = stack;
    ev
}

impl Collapse for Ftrace {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        if let Some(note) = self.mode_note.take() {
            out.diag.note(kinds::MODE, 0, || note);
        }
        if let Some(note) = self.option_note.take() {
            out.diag.note(kinds::UNUSED_OPTION, 0, || note);
        }
        for (n, line) in lines(chunk, first_line) {
            self.line(n, line, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        self.release(out, true);
        self.target = Target::None;
        self.syscalls.finish(&mut out.diag);
        self.offcpu.finish(&mut out.diag);
        self.probes.finish(&mut out.diag);
        self.spans.finish(out);
    }

    fn meta(&self) -> Meta {
        let unit = match (self.mode, self.weight_by()) {
            (Mode::Syscalls | Mode::OffCpu | Mode::Probes, _) => Unit::Nanoseconds,
            (_, WeightBy::Bytes) => Unit::Bytes,
            (_, WeightBy::Count) => Unit::Events,
        };
        let event = match self.mode {
            Mode::OffCpu => Some("sched_switch".to_string()),
            Mode::Syscalls => Some("syscalls".to_string()),
            Mode::Probes => Some("probes".to_string()),
            _ if self.used_events.len() == 1 => self.used_events.first().cloned(),
            _ => None,
        };
        Meta { unit, event }
    }

    fn prepare(&mut self, head: &[u8]) {
        let why = match (&self.opts.mode, &self.opts.mode_reason) {
            (None, _) => {
                let (mode, why) = guess_mode(head);
                self.mode = mode;
                Some(why)
            }
            (Some(_), why) => why.clone(),
        };
        if let Some(why) = why {
            self.mode_note =
                Some(format!("{why}; collapsing in {} mode (set it with --mode)", self.mode.name()));
        }
        let span_mode = matches!(self.mode, Mode::Syscalls | Mode::OffCpu | Mode::Probes);
        if span_mode && (self.opts.order || self.opts.page_type) {
            self.option_note = Some(format!(
                "--order and --page-type add allocation frames; {} mode measures durations and ignores them",
                self.mode.name()
            ));
        }
    }
}

/// `cpus=2`, `version = 6` and similar lines at the top of `trace-cmd report`.
pub(crate) fn is_trace_cmd_preamble(t: &[u8]) -> bool {
    t.starts_with(b"cpus=")
        || t.starts_with(b"version =")
        || t.starts_with(b"CPU ") && t.ends_with(b"is empty")
}

/// `CPU:1 [LOST 123 EVENTS]` → 123.
fn lost_events(t: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(t).ok()?;
    let i = s.find("[LOST ")?;
    let rest = &s[i + 6..];
    rest.split(' ').next()?.parse().ok()
}

fn show(line: &[u8]) -> String {
    crate::fold::read::show(line)
}

#[cfg(test)]
mod tests;
