//! `perf script` text: a drop-in for FlameGraph's `stackcollapse-perf.pl` (as pinned by
//! inferno), for every `perf script` shape from perf 3.x to 6.x.
//!
//! A sample is an event line followed by stack lines (leaf first) and a blank line:
//!
//! ```text
//! dd 11940/11940 [001]  1976.378004:   10101010 cpu-clock:
//!         ffffffff81b6ff6d copy_folio_from_iter_atomic ([kernel.kallsyms])
//!         ffffffff8158c594 generic_perform_write ([kernel.kallsyms])
//!                    f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)
//!
//! ```
//!
//! becomes `dd;__GI___libc_write;generic_perform_write;copy_folio_from_iter_atomic 10101010`.
//!
//! Rules (the private modules `event`, `frame` and `tidy` hold each one):
//! - only samples of one event are folded: `--event-filter`, or the first event seen; a note
//!   counts the samples of other events that were skipped. Modifier suffixes do not make
//!   another event (`cycles:u` is `cycles`).
//! - weight: the period column when perf printed one (as the reference does), else 1;
//!   [`PerfWeight::Samples`] counts samples. For kmem allocation tracepoints
//!   (`kmem:mm_page_alloc`, `kmem:kmalloc`, ...) the default weight is the allocated bytes
//!   (`4096 << order`, `bytes_alloc=`), and the unit says so.
//! - the root frame is the comm (spaces become `_`), with `-PID` or `-PID/TID` on request
//!   (`?` when perf printed only the TID).
//! - lines that do not parse are counted per kind with their first line; samples of other
//!   events are counted in a note. Nothing is printed.
//!
//! Deliberate differences from the reference, each of which loses samples there silently:
//! - C++ `(anonymous namespace)::f` frames are kept (the reference takes every symbol that
//!   starts with `(` for a process name and drops it, and the sample when it was the only
//!   frame);
//! - samples without any frame are kept as their process name alone, with a note (perf
//!   counts them; the reference drops them);
//! - headers of exited tasks (`:-1  -1 [001] ...`) are read as comm `:-1`, tid `-1` (the
//!   reference mistakes the period for the tid and the modifiers for the event, and skips them).
//!
//! Parsing works on bytes (symbols and comms need not be UTF-8), allocates nothing per line,
//! and splits the input at blank lines so the engine runs it on several threads.

mod alloc;
mod bytes;
mod detect;
mod event;
pub(crate) mod frame;
pub mod pairs;
mod tidy;

pub use alloc::{PAGE_SIZE, is_alloc_event};
pub use detect::detect;

use super::{Collapse, Order, Output, lines};
use crate::diag::Severity;
use crate::fold::read::show;
use crate::fold::{Meta, Unit, Weight};
use bytes::{is_blank, trim_start};
use frame::FrameStyle;

/// Kinds of diagnostics of this format.
pub mod kinds {
    /// A line where an event (sample header) line was expected.
    pub const WEIRD_EVENT: &str = "weird event line";
    /// A line inside a sample that is not a stack frame.
    pub const WEIRD_STACK: &str = "weird stack line";
    /// Samples of events other than the one being folded (a note).
    pub const OTHER_EVENT: &str = "other events";
    /// A tracepoint sample without the allocation size the weight needs.
    pub const NO_SIZE: &str = "no allocation size";
    /// Samples without any frame (a note: perf recorded no call chain for them).
    pub const NO_FRAMES: &str = "samples without frames";
}

/// What a sample weighs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PerfWeight {
    /// The period column when present (else 1); allocated bytes for kmem allocation events.
    #[default]
    Auto,
    /// One per sample (`--counts`, `--weight count`).
    Samples,
    /// Allocated bytes from the tracepoint payload (`--weight bytes`).
    Bytes,
}

/// Options of the perf collapser; all off by default.
#[derive(Clone, Debug, Default)]
pub struct PerfOptions {
    /// Root frame `comm-PID`.
    pub include_pid: bool,
    /// Root frame `comm-PID/TID` (implies the PID).
    pub include_tid: bool,
    /// Suffix kernel frames with `_[k]`.
    pub annotate_kernel: bool,
    /// Suffix JIT frames (`/tmp/perf-*.map`, `jitted-*.so`) with `_[j]`.
    pub annotate_jit: bool,
    /// `[module <addr>]` instead of `[module]` for frames without a symbol.
    pub include_addrs: bool,
    /// Suffix DWARF `(inlined)` frames with `_[i]`.
    pub mark_inlined: bool,
    /// Fold only this event (modifier suffixes ignored); default: the first event seen.
    pub event_filter: Option<String>,
    /// Sample weight.
    pub weight: PerfWeight,
}

/// How weights are computed once the event is known.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Mode {
    Period,
    Samples,
    Bytes,
}

/// The `perf script` collapser.
#[derive(Clone, Debug)]
pub struct PerfScript {
    opts: PerfOptions,
    style: FrameStyle,
    /// Key of the event being folded ([`event::event_key`]).
    filter: Option<Vec<u8>>,
    /// Name of that event as first printed (for the metadata).
    event_name: Option<String>,
    /// Whether the first sample of that event carried a period.
    first_has_period: Option<bool>,
    mode: Mode,
    /// A note for events that measure more when paired (`--mode syscalls|offcpu`).
    hint: Option<&'static str>,
    rec: Record,
}

/// The sample being read.
#[derive(Clone, Debug, Default)]
struct Record {
    active: bool,
    /// Line of the sample header.
    line: u64,
    skip: bool,
    java: bool,
    weight: Weight,
    /// The sample's time stamp in ns, when perf printed one.
    time: Option<u64>,
    root: Vec<u8>,
    /// Rendered frames, leaf first, one group per stack line.
    frames: Vec<u8>,
    starts: Vec<usize>,
    /// The folded stack being assembled.
    stack: Vec<u8>,
}

impl PerfScript {
    /// A collapser with these options.
    pub fn new(opts: PerfOptions) -> PerfScript {
        let style = FrameStyle {
            kernel: opts.annotate_kernel,
            jit: opts.annotate_jit,
            addrs: opts.include_addrs,
            inlined: opts.mark_inlined,
        };
        let filter = opts.event_filter.as_ref().map(|f| event::event_key(f.as_bytes()).to_vec());
        let event_name = opts.event_filter.clone();
        let mut p = PerfScript {
            opts,
            style,
            filter,
            event_name,
            first_has_period: None,
            mode: Mode::Period,
            hint: None,
            rec: Record::default(),
        };
        p.resolve_mode();
        p
    }

    fn resolve_mode(&mut self) {
        let alloc = self.filter.as_deref().is_some_and(is_alloc_event);
        self.hint = self.filter.as_deref().and_then(pairs::pairing_hint);
        self.mode = match self.opts.weight {
            PerfWeight::Samples => Mode::Samples,
            PerfWeight::Bytes => Mode::Bytes,
            PerfWeight::Auto if alloc => Mode::Bytes,
            PerfWeight::Auto => Mode::Period,
        };
    }

    fn line(&mut self, n: u64, line: &[u8], out: &mut Output) {
        let Some(&first) = line.first() else {
            return self.end_record(out);
        };
        if first == b'#' {
            return;
        }
        if self.rec.active && first == b'\t' {
            // The hot path: a frame in perf's own layout.
            if let Some(sl) = frame::parse_aligned(line) {
                if !self.rec.skip {
                    self.push_frame(&sl);
                }
                return;
            }
        }
        let blank = is_blank(first);
        if blank && trim_start(line).iter().all(|&b| b == b'\r') {
            return self.end_record(out);
        }
        if !self.rec.active {
            match event::parse(line) {
                Some(ev) => self.event_line(n, ev, out),
                None => out.diag.skip(kinds::WEIRD_EVENT, n, || {
                    format!("a sample header `comm [pid/]tid ... event:`, found `{}`", show(line))
                }),
            }
            return;
        }
        if !blank {
            // perf 3.x prints unindented frames; a header without a blank line before it
            // (samples without stacks) starts the next sample.
            if let Some(ev) = event::parse(line).filter(|e| e.event.is_some()) {
                self.end_record(out);
                return self.event_line(n, ev, out);
            }
        }
        self.stack_line(n, line, blank, out);
    }

    fn event_line(&mut self, n: u64, ev: event::EventLine<'_>, out: &mut Output) {
        let rec = &mut self.rec;
        rec.active = true;
        rec.skip = false;
        rec.line = n;
        let weight = if self.selected(n, &ev, out) { self.weight(n, &ev, out) } else { None };
        if let Some(hint) = self.hint {
            out.diag.note(pairs::kinds::HINT, n, || hint.into());
        }
        let Some(weight) = weight else {
            self.rec.skip = true;
            return;
        };
        self.rec.weight = weight;
        self.rec.time = ev.time.and_then(pairs::parse_time_ns);
        self.set_root(&ev);
        if self.mode != Mode::Bytes && !ev.trailer.is_empty() {
            // A sample with one frame may carry it on the header line.
            if let Some(sl) = frame::parse(ev.trailer, false).filter(|s| bytes::all_hex(s.pc)) {
                self.push_frame(&sl);
                self.end_record(out);
            }
        }
    }

    /// Whether the sample is of the event being folded (adopting the first event seen when
    /// none was chosen); samples of other events are counted in a note.
    fn selected(&mut self, n: u64, ev: &event::EventLine<'_>, out: &mut Output) -> bool {
        let Some(name) = ev.event else { return true };
        let key = event::event_key(name);
        match &self.filter {
            None => {
                self.filter = Some(key.to_vec());
                self.event_name = Some(String::from_utf8_lossy(name).into_owned());
                self.resolve_mode();
            }
            Some(f) if f.as_slice() != key => {
                let folded = self.event_name.as_deref().unwrap_or("?");
                out.diag.add(Severity::Note, kinds::OTHER_EVENT, n, 1, || {
                    format!(
                        "samples of events other than `{folded}` were skipped (first: `{}`); \
                         choose the event with --event-filter",
                        show(name)
                    )
                });
                return false;
            }
            Some(_) => {}
        }
        self.first_has_period.get_or_insert(ev.period.is_some());
        true
    }

    /// The sample's weight, or `None` (reported) when the payload lacks the size.
    fn weight(&self, n: u64, ev: &event::EventLine<'_>, out: &mut Output) -> Option<Weight> {
        match self.mode {
            Mode::Samples => Some(Weight::ONE),
            Mode::Period => Some(ev.period.map_or(Weight::ONE, Weight::from_u64)),
            Mode::Bytes => match alloc::bytes(ev.trailer) {
                Ok(b) => Some(Weight::from_u64(b)),
                Err(msg) => {
                    out.diag.skip(kinds::NO_SIZE, n, || msg);
                    None
                }
            },
        }
    }

    fn set_root(&mut self, ev: &event::EventLine<'_>) {
        let root = &mut self.rec.root;
        root.clear();
        root.extend(ev.comm.iter().map(|&b| if b == b' ' { b'_' } else { b }));
        self.rec.java = root == b"java";
        if self.opts.include_pid || self.opts.include_tid {
            root.push(b'-');
            root.extend_from_slice(ev.pid.unwrap_or(b"?"));
            if self.opts.include_tid {
                root.push(b'/');
                root.extend_from_slice(ev.tid);
            }
        }
    }

    fn stack_line(&mut self, n: u64, line: &[u8], indented: bool, out: &mut Output) {
        if let Some(ev) = event::padded_header(line) {
            self.end_record(out);
            return self.event_line(n, ev, out);
        }
        if self.rec.skip && indented {
            return;
        }
        match frame::parse(line, indented) {
            Some(sl) => self.push_frame(&sl),
            None if indented && event::parse(line).is_some_and(|e| e.event.is_some()) => {
                // A tab-indented header (space-indented ones, perf's padded comms, are
                // taken above even when they also read as frames).
                self.end_record(out);
                if let Some(ev) = event::parse(line) {
                    self.event_line(n, ev, out);
                }
            }
            None => out.diag.skip(kinds::WEIRD_STACK, n, || {
                format!("a frame `address symbol (dso)`, found `{}`", show(line))
            }),
        }
    }

    fn push_frame(&mut self, sl: &frame::StackLine<'_>) {
        let rec = &mut self.rec;
        let start = rec.frames.len();
        if frame::render(sl, self.style, rec.java, &mut rec.frames) {
            rec.starts.push(start);
        }
    }

    /// Emits the pending sample and resets the record state. A sample without any frame
    /// (perf recorded an empty call chain) is kept as its root frame alone, so that totals
    /// stay equal to what perf counted; a note counts them.
    fn end_record(&mut self, out: &mut Output) {
        let rec = &mut self.rec;
        if rec.active && !rec.skip {
            if rec.starts.is_empty() {
                out.diag.add(Severity::Note, kinds::NO_FRAMES, rec.line, 1, || {
                    "a sample without frames was kept as its process name alone".into()
                });
            }
            rec.stack.clear();
            rec.stack.extend_from_slice(&rec.root);
            let mut end = rec.frames.len();
            for &s in rec.starts.iter().rev() {
                rec.stack.push(b';');
                rec.stack.extend_from_slice(&rec.frames[s..end]);
                end = s;
            }
            match rec.time {
                // In time order the sample keeps its time (for OTLP's per-sample times).
                Some(t) => out.stacks.add_at(&rec.stack, rec.weight, t),
                None => out.stacks.add(&rec.stack, rec.weight),
            }
        }
        rec.active = false;
        rec.skip = false;
        rec.frames.clear();
        rec.starts.clear();
    }
}

impl Collapse for PerfScript {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            self.line(n, line, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        self.end_record(out);
    }

    fn meta(&self) -> Meta {
        let unit = match self.mode {
            Mode::Bytes => Unit::Bytes,
            Mode::Period if self.first_has_period == Some(true) => Unit::Period,
            _ => return Meta::default(),
        };
        Meta { unit, event: self.event_name.clone() }
    }

    /// Finds the event to fold (when not given) the way the sequential parse would, so that
    /// every worker folds the same event.
    fn prepare(&mut self, head: &[u8]) {
        let whole = memchr::memrchr(b'\n', head).map_or(0, |i| i + 1);
        let mut probe = self.clone();
        let mut sink = Output::new(Order::Sorted);
        for (n, line) in lines(&head[..whole], 1) {
            probe.line(n, line, &mut sink);
            if probe.filter.is_some() && probe.first_has_period.is_some() {
                break;
            }
        }
        self.filter = probe.filter;
        self.event_name = probe.event_name;
        self.first_has_period = probe.first_has_period;
        self.resolve_mode();
    }

    /// After the last blank line; without one (samples without stacks), before the last
    /// header line (perf pads those with spaces on the left).
    fn split_point(&self, buf: &[u8]) -> Option<usize> {
        if let Some(i) = memchr::memmem::rfind(buf, b"\n\n") {
            return Some(i + 2);
        }
        if let Some(i) = memchr::memmem::rfind(buf, b"\n\r\n") {
            return Some(i + 3);
        }
        // Only the last 64 KiB are searched, so that a long input without any boundary
        // costs linear time while the engine grows its block.
        let floor = buf.len().saturating_sub(1 << 16);
        let mut end = buf.len().checked_sub(1)?;
        while let Some(i) = memchr::memrchr(b'\n', &buf[floor..end]).map(|i| floor + i) {
            let line = &buf[i + 1..end];
            let header = match line.first() {
                Some(&b) if !is_blank(b) && b != b'#' => {
                    event::parse(line).is_some_and(|e| e.event.is_some())
                }
                _ => event::padded_header(line).is_some(),
            };
            if header {
                return Some(i + 1);
            }
            end = i;
        }
        None
    }

    fn fork(&self) -> Option<Box<dyn Collapse>> {
        // Workers must agree on the event; without one in the head, stay sequential.
        self.filter.as_ref()?;
        let mut c = self.clone();
        c.rec = Record::default();
        Some(Box::new(c))
    }
}
