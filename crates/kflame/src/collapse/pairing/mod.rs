//! Pairing of trace events into timed spans, independent of the text format that carried
//! them: syscall entry/exit (`raw_syscalls:sys_enter`/`sys_exit`, `syscalls:sys_enter_X`/
//! `sys_exit_X`) gives syscall latency, `sched:sched_switch` out/in gives off-CPU time, and
//! uprobe/kprobe entry + return probes give function durations.
//!
//! A front end (the ftrace text parser, later perf script) parses each event into a
//! [`TraceEvent`] with its stack already attached, and feeds the events **in time order**
//! to a [`SyscallPairer`] or [`OffCpuPairer`]; each returns a [`Span`] when an interval
//! closes. The payload text is the event's own print format, which ftrace, trace-cmd and
//! perf script all print the same way (`NR 1 (3, ...)`, `prev_comm=... ==> next_comm=...`);
//! trace-cmd's compact `comm:pid [prio] S ==> comm:pid [prio]` sched_switch form is
//! understood too. [`TaskFrames`] and the span output (`output.rs`) turn closed spans into
//! folded stacks alike for every front end, all of them or the `--top` N longest.

mod output;
pub mod probes;
pub mod sched;
pub mod syscalls;
mod syscalls_x86_64;

pub(crate) use output::SpanOutput;
pub use output::TaskFrames;
pub use probes::{ProbeEdge, ProbePairer, parse_probe_edge};
pub use sched::{OffCpuPairer, SchedSwitch, parse_sched_switch};
pub use syscalls::{SyscallEdge, SyscallPairer, parse_syscall_edge};
pub use syscalls_x86_64::syscall_name_x86_64;

use crate::events::{EventKind, EventRecord, Frames};

/// Diagnostic kind of the front ends for events the chosen pairing mode does not use (a
/// note: a trace usually carries more events than one mode needs).
pub const OTHER_EVENTS: &str = "events not used in this mode";

/// One trace event with its stack, as a front end parsed it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceEvent {
    /// Timestamp in nanoseconds (trace clock).
    pub ts_ns: u64,
    /// CPU the event was recorded on.
    pub cpu: u32,
    /// PID (thread id) of the task in whose context the event was recorded.
    pub pid: u32,
    /// Task name (comm) of that task.
    pub comm: String,
    /// Event name (`sys_enter`, `sched_switch`); a subsystem prefix (`raw_syscalls:sys_enter`)
    /// is accepted and ignored by the pairers.
    pub name: String,
    /// The event's printed fields (everything after `name: `).
    pub payload: String,
    /// The stack at the event, root first (user frames, then kernel frames); empty when the
    /// stack was not recorded or lost.
    pub stack: Vec<String>,
    /// 1-based input line of the event.
    pub line: u64,
}

/// A closed interval: a syscall from entry to exit, or a task's time off-CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// Start of the interval (entry, switch-out), ns.
    pub start_ns: u64,
    /// Length of the interval, ns.
    pub duration_ns: u64,
    /// CPU at the start.
    pub cpu: u32,
    /// Task.
    pub pid: u32,
    /// Task name at the start.
    pub comm: String,
    /// What the interval is (`syscall:write`, `offcpu:S`).
    pub label: String,
    /// Stack at the start, root first.
    pub stack: Vec<String>,
    /// Input line of the event that opened the interval.
    pub line: u64,
}

impl Span {
    /// The span as an event record: weighed by its duration, named by its label. The kind is
    /// the label's prefix (`syscall:`, `offcpu:`, `probe:`), as the pairers write them.
    pub fn record(&self) -> EventRecord<'_> {
        let kind = match self.label.split_once(':').map(|(k, _)| k) {
            Some("syscall") => EventKind::Syscall,
            Some("offcpu") => EventKind::OffCpu,
            _ => EventKind::Probe,
        };
        EventRecord {
            kind,
            ts_ns: Some(self.start_ns),
            duration_ns: Some(self.duration_ns),
            cpu: self.cpu,
            pid: Some(self.pid),
            tid: None,
            comm: Some(&self.comm),
            event: &self.label,
            weight: self.duration_ns,
            stack: Frames::Text(&self.stack),
        }
    }
}

/// `raw_syscalls:sys_enter` → `sys_enter`.
fn event_name(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

/// The value of `key=` in a `key=value key=value` payload (values end at a space).
pub fn field<'a>(payload: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = payload[from..].find(key) {
        let at = from + i;
        let after = at + key.len();
        let starts_word = at == 0 || payload.as_bytes()[at - 1] == b' ';
        if starts_word && payload.as_bytes().get(after) == Some(&b'=') {
            let value = &payload[after + 1..];
            return Some(value.split(' ').next().unwrap_or(value));
        }
        from = after;
    }
    None
}

/// An event for the pairers' tests: time `ts` (also its line number), process `pid`.
#[cfg(test)]
pub(crate) fn test_event(ts: u64, pid: u32, name: &str, payload: &str) -> TraceEvent {
    TraceEvent {
        ts_ns: ts,
        pid,
        name: name.into(),
        payload: payload.into(),
        line: ts,
        ..TraceEvent::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A span's kind comes from its label, as the pairers write it.
    #[test]
    fn span_records_have_the_kind_of_their_label() {
        for (label, kind) in [
            ("syscall:write", EventKind::Syscall),
            ("offcpu:D", EventKind::OffCpu),
            ("probe:f_in", EventKind::Probe),
        ] {
            let s = Span {
                start_ns: 1,
                duration_ns: 2,
                cpu: 0,
                pid: 3,
                comm: "c".into(),
                label: label.into(),
                stack: vec!["a".into()],
                line: 1,
            };
            let r = s.record();
            assert_eq!((r.kind, r.weight, r.ts_ns, r.event), (kind, 2, Some(1), label));
        }
    }

    #[test]
    fn field_matches_whole_keys_only() {
        let p = "call_site=x+0x1/0x2 ptr=00 bytes_req=408 bytes_alloc=512 gfp_flags=GFP_KERNEL";
        assert_eq!(field(p, "bytes_alloc"), Some("512"));
        assert_eq!(field(p, "bytes_req"), Some("408"));
        assert_eq!(field(p, "req"), None);
        assert_eq!(field(p, "gfp_flags"), Some("GFP_KERNEL"));
        assert_eq!(field("order=3", "order"), Some("3"));
    }
}
