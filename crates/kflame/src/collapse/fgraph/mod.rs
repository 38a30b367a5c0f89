//! function_graph tracer output (raw tracefs `trace` and `trace-cmd report`) to a latency
//! flame graph: weights are nanoseconds of self time (or total time) per call path.
//!
//! Nesting is tracked per task when the task is known (`funcgraph-proc`, `trace-cmd
//! report`, or the `=> comm-pid` context-switch lines), per CPU otherwise. The call depth
//! is read from the indentation of the function text, so traces that begin inside calls
//! (orphan `}` exits at the buffer start) and traces with lost events still nest right:
//! missing callers become `[unknown]` placeholder frames (named from the `} /* func */`
//! tail when `funcgraph-tail` printed one), and frames whose exit never came are closed
//! without a self-time record. Nothing of that is an error; it is counted as notes.
//!
//! Weight choices (`--latency`):
//! - `self` (default): each call path weighs its own time minus its traced children. A
//!   frame's width in the flame graph is then the total time spent in it.
//! - `total`: each call path weighs its whole duration, children included. Widths of
//!   nested frames add up more than once: read the folded lines as a table of inclusive
//!   times per call path.
//!
//! `top`: only the N slowest top-level calls, each under a synthetic root frame
//! `[#01 2.345ms @123.456789]` (rank, duration, start time; `line N` when the trace has no
//! time column), so that an outlier can be seen alone; ranked as the paired spans of the
//! trace formats are (see [`crate::collapse::outliers`]).

mod events;
mod line;
mod track;

use std::collections::HashMap;

use super::events_json::{EventKind, EventLog, EventRecord, Frames};
use super::outliers::{Outlier, OutlierLog, TopN, rank_frame};
use super::{Collapse, Output, lines};
use crate::fold::{Meta, Unit, Weight};
use line::{Line, Task};
use track::{Fixups, TopCall, Track};

pub use super::outliers::format_duration;

/// Which time a call path weighs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Latency {
    /// Time in the function itself, children excluded (flame graph widths = total time).
    #[default]
    SelfTime,
    /// Whole duration of each call, children included.
    Total,
}

/// Options of the function_graph collapser.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Self or total time.
    pub latency: Latency,
    /// Keep only the N slowest top-level calls, each as its own group.
    pub top: Option<usize>,
    /// Root frame with the task name (`[unknown]` when the trace does not show it).
    pub comm: bool,
    /// Root frame `comm-pid`.
    pub pid: bool,
    /// Root frame `cpu-N`.
    pub cpu: bool,
}

/// Kinds of skipped lines and notes.
pub mod kinds {
    /// A line that is not function_graph output.
    pub const BAD_LINE: &str = "not a function_graph line";
    /// Frames closed without their exit (lost events or a cut trace).
    pub const UNTERMINATED: &str = "call without exit";
    /// Callers entered before the trace began (or whose entries were lost).
    pub const PLACEHOLDER: &str = "caller not in trace";
    /// `[LOST N EVENTS]` markers.
    pub const LOST: &str = "lost events";
    /// Other trace-cmd events between the function_graph ones.
    pub const OTHER_EVENT: &str = "other event";
    /// Calls still running when the trace ended.
    pub const OPEN_AT_END: &str = "call still open at end";
    /// A very long top-level call emitted in parts to bound memory.
    pub const LONG_CALL: &str = "long call";
}

/// Completed calls held per unfinished top-level call before they are emitted early.
const MAX_PENDING: usize = 1 << 16;

/// Where nesting is tracked: a task (pid > 0) or a CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Cpu(u32),
    Task(u32),
}

/// Identity of a track, for root frames and event records.
#[derive(Clone, Debug, Default)]
struct Who {
    cpu: u32,
    comm: Option<Box<[u8]>>,
    pid: Option<u32>,
}

/// Collapser for function_graph output. Sequential (nesting spans the whole input).
pub struct FunctionGraph {
    opts: Options,
    tracks: HashMap<Key, (Track, Who)>,
    /// Task currently running on each CPU, learnt from context-switch lines.
    running: HashMap<u32, (Box<[u8]>, u32)>,
    top: Option<TopN<(Who, TopCall)>>,
    events: Option<EventLog>,
    outliers: Option<OutlierLog>,
}

impl FunctionGraph {
    /// A collapser with these options.
    pub fn new(opts: Options) -> FunctionGraph {
        FunctionGraph {
            top: opts.top.map(TopN::new),
            opts,
            tracks: HashMap::new(),
            running: HashMap::new(),
            events: None,
            outliers: None,
        }
    }

    /// Also writes one JSON line per completed top-level call to `log` (the schema of
    /// [`crate::collapse::events_json`]; see the `events` module). Write errors are returned by
    /// [`EventLog::finish`].
    pub fn with_events(mut self, log: EventLog) -> FunctionGraph {
        self.events = Some(log);
        self
    }

    /// With `top`, also hands each kept call to `log` (its stacks, task and time), to be
    /// written on its own.
    pub fn with_outliers(mut self, log: OutlierLog) -> FunctionGraph {
        self.outliers = Some(log);
        self
    }

    fn line(&mut self, n: u64, text: &[u8], out: &mut Output) {
        match line::parse(text) {
            Ok(Line::Call { cpu, task, ts, depth, call }) => {
                let (key, who) = self.key(cpu, task);
                let mut fix = Fixups::default();
                let entry = self.tracks.entry(key).or_insert_with(|| (Track::default(), who.clone()));
                entry.1 = who;
                let done = entry.0.apply(depth, &call, ts, n, &mut fix);
                note_fixups(out, n, fix);
                if let Some(c) = done {
                    self.completed(key, c, out);
                } else if self.opts.top.is_none() && entry.0.pending() >= MAX_PENDING {
                    let part = entry.0.drain();
                    let who = entry.1.clone();
                    out.diag.note(kinds::LONG_CALL, n, || {
                        format!("a top-level call with over {MAX_PENDING} nested calls: emitted in parts")
                    });
                    self.emit(&who, &part, None, out);
                }
            }
            Ok(Line::Switch { cpu, from, to }) => self.switch(cpu, from, to),
            Ok(Line::Ignored) => {}
            Ok(Line::OtherEvent) => {
                out.diag.note(kinds::OTHER_EVENT, n, || "events other than funcgraph_* were ignored".into())
            }
            Ok(Line::Lost) => out.diag.note(kinds::LOST, n, || {
                "the tracer lost events here: calls around it may be cut or misnested".into()
            }),
            Err(msg) => out
                .diag
                .skip(kinds::BAD_LINE, n, || format!("{msg}, found `{}`", crate::fold::read::show(text))),
        }
    }

    /// The track key and identity of a call line.
    fn key(&self, cpu: u32, task: Option<Task<'_>>) -> (Key, Who) {
        let known = task.map(|t| (Box::from(t.comm), t.pid)).or_else(|| self.running.get(&cpu).cloned());
        match known {
            Some((comm, pid)) if pid != 0 => (Key::Task(pid), Who { cpu, comm: Some(comm), pid: Some(pid) }),
            Some((comm, pid)) => (Key::Cpu(cpu), Who { cpu, comm: Some(comm), pid: Some(pid) }),
            None => (Key::Cpu(cpu), Who { cpu, comm: None, pid: None }),
        }
    }

    /// A context switch: the CPU's anonymous track so far belonged to `from`.
    fn switch(&mut self, cpu: u32, from: Option<Task<'_>>, to: Task<'_>) {
        if let Some(f) = from.filter(|f| f.pid != 0)
            && !self.running.contains_key(&cpu)
            && !self.tracks.contains_key(&Key::Task(f.pid))
            && let Some((t, mut who)) = self.tracks.remove(&Key::Cpu(cpu))
        {
            who.comm = Some(Box::from(f.comm));
            who.pid = Some(f.pid);
            self.tracks.insert(Key::Task(f.pid), (t, who));
        }
        self.running.insert(cpu, (Box::from(to.comm), to.pid));
    }

    fn completed(&mut self, key: Key, call: TopCall, out: &mut Output) {
        let Some(who) = self.tracks.get(&key).map(|(_, w)| w.clone()) else { return };
        self.write_event(&who, &call);
        match (&mut self.top, call.duration_ns) {
            (Some(top), Some(duration)) => top.offer(duration, (who, call)),
            (Some(_), None) => {}
            (None, _) => self.emit(&who, &call, None, out),
        }
    }

    fn write_event(&self, who: &Who, call: &TopCall) {
        let (Some(d), Some(log)) = (call.duration_ns, &self.events) else { return };
        let weight = call.records.iter().map(|r| self.weight_of(r)).fold(0u64, u64::saturating_add);
        let stack: Vec<&[u8]> = call.root.iter().map(|&id| frame_name(call, id)).collect();
        let comm = who.comm.as_deref().map(String::from_utf8_lossy);
        log.write(&EventRecord {
            kind: EventKind::Call,
            ts_ns: call.start_ns,
            duration_ns: Some(d),
            cpu: who.cpu,
            pid: who.pid,
            tid: None,
            comm: comm.as_deref(),
            event: "function_graph",
            weight,
            stack: Frames::Bytes(&stack),
        });
    }

    /// Adds the call's records to the output under the root frames.
    fn emit(&self, who: &Who, call: &TopCall, group: Option<&[u8]>, out: &mut Output) {
        self.stacks_of(who, call, group, |stack, w| out.stacks.add(stack, w));
    }

    /// The folded stacks of the call's records under the root frames.
    fn stacks_of(&self, who: &Who, call: &TopCall, group: Option<&[u8]>, mut add: impl FnMut(&[u8], Weight)) {
        let mut prefix = Vec::new();
        if let Some(g) = group {
            push_frame(&mut prefix, g);
        }
        self.root_frames(who, &mut prefix);
        let mut stack = Vec::with_capacity(256);
        for r in &call.records {
            let ns = self.weight_of(r);
            if ns == 0 {
                continue;
            }
            stack.clear();
            stack.extend_from_slice(&prefix);
            for &id in &r.path {
                push_frame(&mut stack, frame_name(call, id));
            }
            add(&stack, Weight::from_u64(ns));
        }
    }

    /// The weight of one completed call in the folded output.
    fn weight_of(&self, r: &track::Record) -> u64 {
        match self.opts.latency {
            Latency::SelfTime => r.self_ns,
            Latency::Total => r.total_ns,
        }
    }

    fn root_frames(&self, who: &Who, stack: &mut Vec<u8>) {
        let comm = who.comm.as_deref().unwrap_or(b"[unknown]");
        if self.opts.pid {
            let mut f = comm.to_vec();
            if let Some(p) = who.pid {
                f.extend_from_slice(format!("-{p}").as_bytes());
            }
            push_frame(stack, &f);
        } else if self.opts.comm {
            push_frame(stack, comm);
        }
        if self.opts.cpu {
            push_frame(stack, format!("cpu-{}", who.cpu).as_bytes());
        }
    }

    /// Emits the kept slowest calls, ranked, each under its own root frame (and hands them
    /// to the outlier log).
    fn emit_top(&mut self, out: &mut Output) {
        let Some(top) = &mut self.top else { return };
        let n = top.n();
        let kept = top.take_ranked();
        for (i, (duration, (who, call))) in kept.iter().enumerate() {
            let label = rank_frame(i + 1, n, *duration, call.start_ns, call.first_line);
            let mut stacks = Vec::new();
            self.stacks_of(who, call, Some(label.as_bytes()), |s, w| {
                out.stacks.add(s, w);
                stacks.push((s.to_vec(), w));
            });
            if let Some(log) = &self.outliers {
                let what = call.root.last().map_or(&b"[unknown]"[..], |&id| frame_name(call, id));
                log.push(Outlier {
                    rank: i + 1,
                    duration_ns: *duration,
                    start_ns: call.start_ns,
                    line: call.first_line,
                    cpu: who.cpu,
                    pid: who.pid,
                    comm: who.comm.as_deref().map(|c| String::from_utf8_lossy(c).into_owned()),
                    what: String::from_utf8_lossy(what).into_owned(),
                    stacks,
                });
            }
        }
    }
}

fn note_fixups(out: &mut Output, n: u64, fix: Fixups) {
    if fix.unterminated > 0 {
        let msg = || "a call whose exit line never came (lost events): closed without a self time".into();
        out.diag.add(crate::diag::Severity::Note, kinds::UNTERMINATED, n, fix.unterminated, msg);
    }
    if fix.placeholders > 0 {
        let msg = || "calls entered before the trace began: `[unknown]` caller frames".into();
        out.diag.add(crate::diag::Severity::Note, kinds::PLACEHOLDER, n, fix.placeholders, msg);
    }
}

fn frame_name(call: &TopCall, id: u32) -> &[u8] {
    call.names.get(id as usize).and_then(|n| n.as_deref()).unwrap_or(b"[unknown]")
}

/// Appends `;frame` (no separator before the first); `;` inside a name becomes `:`.
fn push_frame(stack: &mut Vec<u8>, name: &[u8]) {
    if !stack.is_empty() {
        stack.push(b';');
    }
    stack.extend(name.iter().map(|&b| if b == b';' || b == b'\n' { b':' } else { b }));
}

impl Collapse for FunctionGraph {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, text) in lines(chunk, first_line) {
            self.line(n, text, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        let mut keys: Vec<Key> = self.tracks.keys().copied().collect();
        keys.sort_by_key(|k| match *k {
            Key::Cpu(c) => (0, c),
            Key::Task(p) => (1, p),
        });
        for key in keys {
            let Some((t, who)) = self.tracks.get_mut(&key) else { continue };
            let open = t.depth() as u64;
            let who = who.clone();
            if open > 0 {
                let msg = || "calls still running when the trace ended: their children are kept".into();
                out.diag.add(crate::diag::Severity::Note, kinds::OPEN_AT_END, 0, open, msg);
            }
            if let Some(partial) = t.flush_partial()
                && self.opts.top.is_none()
            {
                self.emit(&who, &partial, None, out);
            }
        }
        self.tracks.clear();
        self.running.clear();
        self.emit_top(out);
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Nanoseconds, event: Some("function_graph".into()) }
    }
}

/// Confidence (0-100) that `head` is function_graph output.
pub fn detect(head: &[u8]) -> u8 {
    if memchr::memmem::find(head, b"# tracer: function_graph").is_some() {
        return 95;
    }
    let (mut calls, mut bad, mut report) = (0u32, 0u32, false);
    for (_, l) in lines(head, 1).take(300) {
        match line::parse(l) {
            Ok(Line::Call { .. }) => {
                calls += 1;
                report |= memchr::memmem::find(l, b"funcgraph_").is_some();
            }
            Ok(Line::Switch { .. }) => calls += 1,
            Ok(Line::Ignored) => {}
            Ok(Line::OtherEvent) | Err(_) => bad += 1,
            Ok(Line::Lost) => {}
        }
    }
    match (calls, bad) {
        (0, _) => 0,
        _ if report && calls >= bad => 90,
        (c, b) if c >= 4 * b && c >= 2 => 85,
        (c, b) if c >= b => 40,
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
