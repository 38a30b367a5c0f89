//! Syscall latency: pairs each task's syscall entry with its exit.

use rustc_hash::FxHashMap;

use super::{Span, TraceEvent, syscall_name_x86_64};
use crate::diag::Diagnostics;

/// One side of a syscall, as read from an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyscallEdge {
    /// Entry into the named syscall.
    Enter(String),
    /// Exit from the named syscall.
    Exit(String),
}

/// Reads a syscall edge from `raw_syscalls` events (`sys_enter: NR 1 (...)`,
/// `sys_exit: NR 1 = 4096`; the name comes from the x86_64 table) or from `syscalls`
/// events (`sys_enter_write`, `sys_exit_write`), with or without the subsystem prefix
/// (`raw_syscalls:sys_enter` as perf prints it). `None` for other events.
pub fn parse_syscall_edge(name: &str, payload: &str) -> Option<SyscallEdge> {
    let name = super::event_name(name);
    match name {
        "sys_enter" => nr_name(payload).map(SyscallEdge::Enter),
        "sys_exit" => nr_name(payload).map(SyscallEdge::Exit),
        _ => {
            if let Some(s) = name.strip_prefix("sys_enter_") {
                Some(SyscallEdge::Enter(s.to_string()))
            } else {
                name.strip_prefix("sys_exit_").map(|s| SyscallEdge::Exit(s.to_string()))
            }
        }
    }
}

/// The name of an exit whose number was lost (`NR -1`, e.g. after `rt_sigreturn` restored
/// the registers): it closes whatever syscall the task had open.
pub const ANY_SYSCALL: &str = "?";

/// `NR 1 ...` → `write`; unknown numbers become `nr_N`, negative ones [`ANY_SYSCALL`].
fn nr_name(payload: &str) -> Option<String> {
    let rest = payload.trim_start().strip_prefix("NR")?.trim_start();
    let end = rest.find(|c: char| !c.is_ascii_digit() && c != '-').unwrap_or(rest.len());
    let nr: i64 = rest[..end].parse().ok()?;
    if nr < 0 {
        return Some(ANY_SYSCALL.to_string());
    }
    Some(match u32::try_from(nr).ok().and_then(syscall_name_x86_64) {
        Some(n) => n.to_string(),
        None => format!("nr_{nr}"),
    })
}

/// Diagnostic kinds of syscall pairing (notes: these happen in every real trace).
pub mod kinds {
    /// An exit whose entry was before the start of the trace (or lost).
    pub const EXIT_WITHOUT_ENTRY: &str = "syscall exit without entry";
    /// An entry never followed by its exit (still running at the end, or never returns).
    pub const ENTRY_WITHOUT_EXIT: &str = "syscall entry without exit";
    /// An exit from another syscall than the task's open entry (events were lost).
    pub const MISMATCH: &str = "syscall exit does not match entry";
}

/// Pairs syscall entries and exits per task. Feed events in time order.
#[derive(Default, Debug)]
pub struct SyscallPairer {
    open: FxHashMap<u32, (String, TraceEvent)>,
}

impl SyscallPairer {
    /// A pairer with nothing open.
    pub fn new() -> SyscallPairer {
        SyscallPairer::default()
    }

    /// Feeds one event; returns the syscall it closes, if any. Other events are ignored.
    pub fn feed(&mut self, ev: TraceEvent, diag: &mut Diagnostics) -> Option<Span> {
        match parse_syscall_edge(&ev.name, &ev.payload)? {
            SyscallEdge::Enter(name) => {
                if let Some((prev, p)) = self.open.insert(ev.pid, (name, ev)) {
                    diag.note(kinds::ENTRY_WITHOUT_EXIT, p.line, || {
                        format!("{prev} entered by pid {} never returned before its next syscall", p.pid)
                    });
                }
                None
            }
            SyscallEdge::Exit(name) => self.close(name, ev, diag),
        }
    }

    fn close(&mut self, name: String, ev: TraceEvent, diag: &mut Diagnostics) -> Option<Span> {
        let Some((open_name, enter)) = self.open.remove(&ev.pid) else {
            diag.note(kinds::EXIT_WITHOUT_ENTRY, ev.line, || {
                format!("exit from {name} by pid {} whose entry is not in the trace", ev.pid)
            });
            return None;
        };
        if (open_name != name && name != ANY_SYSCALL) || ev.ts_ns < enter.ts_ns {
            diag.note(kinds::MISMATCH, ev.line, || {
                format!("exit from {name} by pid {} while {open_name} was open (lost events?)", ev.pid)
            });
            return None;
        }
        Some(Span {
            start_ns: enter.ts_ns,
            duration_ns: ev.ts_ns - enter.ts_ns,
            cpu: enter.cpu,
            pid: enter.pid,
            comm: enter.comm,
            label: format!("syscall:{open_name}"),
            stack: enter.stack,
            line: enter.line,
        })
    }

    /// End of input: counts the syscalls that never returned.
    pub fn finish(&mut self, diag: &mut Diagnostics) {
        let mut left: Vec<_> = self.open.drain().map(|(_, (n, e))| (e.line, n, e.pid)).collect();
        left.sort();
        for (line, name, pid) in left {
            diag.note(kinds::ENTRY_WITHOUT_EXIT, line, || {
                format!("{name} entered by pid {pid} had not returned at the end of the trace")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collapse::pairing::test_event as ev;

    #[test]
    fn edges_from_raw_and_named_events() {
        assert_eq!(
            parse_syscall_edge("sys_enter", "NR 1 (3, 7ffe, 1000)"),
            Some(SyscallEdge::Enter("write".into()))
        );
        assert_eq!(parse_syscall_edge("sys_exit", "NR 0 = 4096"), Some(SyscallEdge::Exit("read".into())));
        assert_eq!(parse_syscall_edge("sys_exit", "NR 9999 = 1"), Some(SyscallEdge::Exit("nr_9999".into())));
        assert_eq!(
            parse_syscall_edge("sys_enter_openat", "dfd: 0"),
            Some(SyscallEdge::Enter("openat".into()))
        );
        assert_eq!(parse_syscall_edge("sched_switch", "prev_comm=a"), None);
        assert_eq!(
            parse_syscall_edge("raw_syscalls:sys_enter", "NR 1 (3)"),
            Some(SyscallEdge::Enter("write".into()))
        );
        assert_eq!(
            parse_syscall_edge("syscalls:sys_exit_read", "0x0"),
            Some(SyscallEdge::Exit("read".into()))
        );
        assert_eq!(parse_syscall_edge("sys_enter", "garbage"), None);
    }

    #[test]
    fn pairs_per_task_and_reports_loose_ends() {
        let mut p = SyscallPairer::new();
        let mut d = Diagnostics::new();
        assert!(p.feed(ev(5, 7, "sys_exit", "NR 1 = 0"), &mut d).is_none());
        assert!(p.feed(ev(10, 1, "sys_enter", "NR 1 (0)"), &mut d).is_none());
        assert!(p.feed(ev(12, 2, "sys_enter", "NR 0 (0)"), &mut d).is_none());
        let s = p.feed(ev(25, 1, "sys_exit", "NR 1 = 1"), &mut d).unwrap();
        assert_eq!((s.start_ns, s.duration_ns, s.label.as_str()), (10, 15, "syscall:write"));
        assert!(p.feed(ev(30, 2, "sys_exit", "NR 1 = 1"), &mut d).is_none());
        assert!(p.feed(ev(40, 3, "sys_enter", "NR 60 (0)"), &mut d).is_none());
        assert!(p.feed(ev(50, 4, "sys_enter", "NR 15 (0)"), &mut d).is_none());
        let s = p.feed(ev(52, 4, "sys_exit", "NR -1 = 0"), &mut d).unwrap();
        assert_eq!((s.duration_ns, s.label.as_str()), (2, "syscall:rt_sigreturn"));
        p.finish(&mut d);
        assert_eq!(d.get(kinds::EXIT_WITHOUT_ENTRY).unwrap().count, 1);
        assert_eq!(d.get(kinds::MISMATCH).unwrap().count, 1);
        assert_eq!(d.get(kinds::ENTRY_WITHOUT_EXIT).unwrap().count, 1);
        assert!(d.get(kinds::ENTRY_WITHOUT_EXIT).unwrap().message.contains("exit"));
        assert_eq!(d.skipped(), 0);
    }
}
