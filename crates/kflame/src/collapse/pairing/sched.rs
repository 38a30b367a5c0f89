//! Off-CPU time: pairs a task's `sched_switch` away (its stack at that moment) with the
//! `sched_switch` that puts it back on a CPU.

use rustc_hash::FxHashMap;

use super::{Span, TraceEvent, field};
use crate::diag::Diagnostics;

/// The fields of a `sched_switch` event that pairing needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedSwitch {
    /// Task leaving the CPU.
    pub prev_comm: String,
    /// Its pid.
    pub prev_pid: u32,
    /// Its state (`R`, `R+`, `S`, `D`, `I`...): `R` means preempted, others blocked.
    pub prev_state: String,
    /// Task entering the CPU.
    pub next_comm: String,
    /// Its pid.
    pub next_pid: u32,
}

/// Reads a `sched_switch` payload, in the kernel's format (`prev_comm=a b prev_pid=1
/// prev_prio=120 prev_state=S ==> next_comm=c next_pid=2 next_prio=120`) or trace-cmd's
/// (`a b:1 [120] S ==> c:2 [120]`). Comms may contain spaces.
pub fn parse_sched_switch(payload: &str) -> Option<SchedSwitch> {
    let (prev, next) = payload.split_once(" ==> ")?;
    if prev.trim_start().starts_with("prev_comm=") {
        let (prev_comm, prev_pid) = comm_pid_fields(prev, "prev_")?;
        let (next_comm, next_pid) = comm_pid_fields(next, "next_")?;
        let prev_state = field(prev, "prev_state")?.to_string();
        return Some(SchedSwitch { prev_comm, prev_pid, prev_state, next_comm, next_pid });
    }
    let (prev_comm, prev_pid, rest) = compact_task(prev)?;
    let (next_comm, next_pid, _) = compact_task(next)?;
    let prev_state = rest.split_whitespace().last()?.to_string();
    Some(SchedSwitch { prev_comm, prev_pid, prev_state, next_comm, next_pid })
}

/// `prev_comm=NAME WITH SPACES prev_pid=N` → (name, N).
fn comm_pid_fields(s: &str, prefix: &str) -> Option<(String, u32)> {
    let comm_key = format!("{prefix}comm=");
    let pid_key = format!(" {prefix}pid=");
    let start = s.find(&comm_key)? + comm_key.len();
    let end = start + s[start..].find(&pid_key)?;
    let pid = field(&s[end + 1..], &format!("{prefix}pid"))?.parse().ok()?;
    Some((s[start..end].to_string(), pid))
}

/// `name:pid [prio] rest` → (name, pid, rest).
fn compact_task(s: &str) -> Option<(String, u32, &str)> {
    let s = s.trim();
    let bracket = s.find(" [").unwrap_or(s.len());
    let (task, rest) = s.split_at(bracket);
    let colon = task.rfind(':')?;
    let pid = task[colon + 1..].parse().ok()?;
    Some((task[..colon].to_string(), pid, rest))
}

/// Diagnostic kinds of off-CPU pairing.
pub mod kinds {
    /// A `sched_switch` whose payload could not be read.
    pub const BAD_SWITCH: &str = "unreadable sched_switch";
    /// Tasks switched out and not back in before the trace ended.
    pub const STILL_OFF: &str = "task still off-CPU at end";
    /// A task switched out twice with no switch-in seen in between.
    pub const NO_SWITCH_IN: &str = "switch-out without switch-in";
}

/// Pairs switch-outs with switch-ins per task. Feed events in time order.
#[derive(Default, Debug)]
pub struct OffCpuPairer {
    open: FxHashMap<u32, (String, TraceEvent)>,
}

impl OffCpuPairer {
    /// A pairer with no task off-CPU.
    pub fn new() -> OffCpuPairer {
        OffCpuPairer::default()
    }

    /// Feeds one event; returns the off-CPU interval it closes, if any. The stack of a
    /// `sched_switch` event (`sched:sched_switch` accepted too) is the stack of the task
    /// leaving the CPU. The idle task (pid 0) is never tracked. Other events are ignored.
    pub fn feed(&mut self, ev: TraceEvent, diag: &mut Diagnostics) -> Option<Span> {
        if super::event_name(&ev.name) != "sched_switch" {
            return None;
        }
        let Some(sw) = parse_sched_switch(&ev.payload) else {
            diag.skip(kinds::BAD_SWITCH, ev.line, || {
                format!("`prev_comm=... prev_pid=N ... ==> next_comm=... next_pid=M`, found `{}`", ev.payload)
            });
            return None;
        };
        let span = self.open.remove(&sw.next_pid).and_then(|(state, out)| close(state, out, ev.ts_ns));
        if sw.prev_pid != 0 {
            let mut out = ev;
            out.comm = sw.prev_comm;
            out.pid = sw.prev_pid;
            if let Some((_, lost)) = self.open.insert(sw.prev_pid, (sw.prev_state, out)) {
                diag.note(kinds::NO_SWITCH_IN, lost.line, || {
                    format!(
                        "pid {} was switched out again with no switch-in in between (a filter on \
                         prev_* only, or lost events): that interval is not counted",
                        lost.pid
                    )
                });
            }
        }
        span
    }

    /// End of input: counts the tasks that were still off-CPU (their time is unknown).
    pub fn finish(&mut self, diag: &mut Diagnostics) {
        let n = self.open.len() as u64;
        if n > 0 {
            let first = self.open.values().map(|(_, e)| e.line).min().unwrap_or(0);
            diag.add(crate::diag::Severity::Note, kinds::STILL_OFF, first, n, || {
                "tasks switched out and not switched back in before the end of the trace \
                 (their off-CPU time is not counted)"
                    .into()
            });
            self.open.clear();
        }
    }
}

fn close(state: String, out: TraceEvent, end_ns: u64) -> Option<Span> {
    let duration_ns = end_ns.checked_sub(out.ts_ns)?;
    Some(Span {
        start_ns: out.ts_ns,
        duration_ns,
        cpu: out.cpu,
        pid: out.pid,
        comm: out.comm,
        label: format!("offcpu:{state}"),
        stack: out.stack,
        line: out.line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_payload_forms() {
        let k = "prev_comm=lto cgu.1 prev_pid=3876 prev_prio=120 prev_state=R+ ==> \
                 next_comm=rcu_preempt next_pid=15 next_prio=120";
        let s = parse_sched_switch(k).unwrap();
        assert_eq!((s.prev_comm.as_str(), s.prev_pid, s.prev_state.as_str()), ("lto cgu.1", 3876, "R+"));
        assert_eq!((s.next_comm.as_str(), s.next_pid), ("rcu_preempt", 15));
        let t = parse_sched_switch("kworker/0:1:0 [120] R ==> trace-cmd:2603 [120]").unwrap();
        assert_eq!((t.prev_comm.as_str(), t.prev_pid, t.prev_state.as_str()), ("kworker/0:1", 0, "R"));
        assert_eq!((t.next_comm.as_str(), t.next_pid), ("trace-cmd", 2603));
        assert_eq!(parse_sched_switch("prev_comm=a prev_pid=x ==> next_comm=b next_pid=2"), None);
        assert_eq!(parse_sched_switch("nothing here"), None);
    }

    fn switch(ts: u64, prev: u32, next: u32) -> TraceEvent {
        TraceEvent {
            ts_ns: ts,
            name: if ts.is_multiple_of(2) { "sched_switch" } else { "sched:sched_switch" }.into(),
            payload: format!(
                "prev_comm=t{prev} prev_pid={prev} prev_prio=120 prev_state=S ==> \
                 next_comm=t{next} next_pid={next} next_prio=120"
            ),
            stack: vec![format!("f{prev}")],
            line: ts,
            ..TraceEvent::default()
        }
    }

    #[test]
    fn pairs_out_with_in() {
        let mut p = OffCpuPairer::new();
        let mut d = Diagnostics::new();
        assert!(p.feed(switch(100, 5, 0), &mut d).is_none());
        assert!(p.feed(switch(151, 6, 7), &mut d).is_none());
        let s = p.feed(switch(400, 0, 5), &mut d).unwrap();
        assert_eq!((s.start_ns, s.duration_ns, s.pid), (100, 300, 5));
        assert_eq!(
            (s.comm.as_str(), s.label.as_str(), s.stack.clone()),
            ("t5", "offcpu:S", vec!["f5".to_string()])
        );
        p.finish(&mut d);
        assert_eq!(d.get(kinds::STILL_OFF).unwrap().count, 1);
    }
}
