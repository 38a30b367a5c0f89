//! Function durations from entry/return probe pairs (uprobes and kprobes with their
//! `uretprobe`/`kretprobe`), matched per task by the probed function.
//!
//! Entry events print the probed location, return events print `(return site <- function)`:
//!
//! ```text
//! doio_entry: (0x5645642053d0)                   uprobe entry
//! doio_ret: (0x5645642051dd <- 0x5645642053d0)   uretprobe: returns from 0x5645642053d0
//! open_entry: (do_sys_openat2+0x0/0x2c0) dfd=... kprobe entry
//! open_ret: (do_sys_open+0x5a/0x90 <- do_sys_openat2) arg1=0x3
//! ```

use rustc_hash::FxHashMap;

use super::{Span, TraceEvent};
use crate::diag::Diagnostics;

/// One side of a probed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeEdge {
    /// Entry into the function (normalized address or symbol).
    Entry(String),
    /// Return from the function.
    Return(String),
}

/// Reads a probe payload `(LOCATION)` or `(RETURN_SITE <- FUNCTION)`, optionally followed by
/// fetched arguments. `None` when the payload is not shaped like that.
pub fn parse_probe_edge(payload: &str) -> Option<ProbeEdge> {
    let inner = payload.trim_start().strip_prefix('(')?;
    let inner = &inner[..inner.find(')')?];
    match inner.split_once(" <- ") {
        Some((_, func)) => Some(ProbeEdge::Return(location(func)?)),
        None => Some(ProbeEdge::Entry(location(inner)?)),
    }
}

/// `0x00005645642053d0` → `5645642053d0`; `do_sys_openat2+0x0/0x2c0` → `do_sys_openat2`.
fn location(s: &str) -> Option<String> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x") {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let t = hex.trim_start_matches('0').to_ascii_lowercase();
        return Some(if t.is_empty() { "0".into() } else { t });
    }
    let name = s.split('+').next().unwrap_or(s);
    let ok = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.$".contains(&b));
    ok.then(|| name.to_string())
}

/// Diagnostic kinds of probe pairing.
pub mod kinds {
    /// A return whose entry is not in the trace.
    pub const RETURN_WITHOUT_ENTRY: &str = "probe return without entry";
    /// An entry never followed by its return.
    pub const ENTRY_WITHOUT_RETURN: &str = "probe entry without return";
}

/// Calls deeper than this per task are not tracked (the oldest entry is dropped).
const MAX_DEPTH: usize = 256;

/// Pairs probe entries and returns per task (nested and recursive calls included). Feed
/// events in time order.
#[derive(Default, Debug)]
pub struct ProbePairer {
    open: FxHashMap<u32, Vec<(String, TraceEvent)>>,
}

impl ProbePairer {
    /// A pairer with no call open.
    pub fn new() -> ProbePairer {
        ProbePairer::default()
    }

    /// Feeds one event; returns the call it closes, if any. Events whose payload is not a
    /// probe location are ignored.
    pub fn feed(&mut self, ev: TraceEvent, diag: &mut Diagnostics) -> Option<Span> {
        match parse_probe_edge(&ev.payload)? {
            ProbeEdge::Entry(func) => {
                let calls = self.open.entry(ev.pid).or_default();
                if calls.len() == MAX_DEPTH {
                    let (_, lost) = calls.remove(0);
                    unreturned(diag, &lost);
                }
                calls.push((func, ev));
                None
            }
            ProbeEdge::Return(func) => self.close(&func, ev, diag),
        }
    }

    fn close(&mut self, func: &str, ev: TraceEvent, diag: &mut Diagnostics) -> Option<Span> {
        let calls = self.open.get_mut(&ev.pid);
        let Some(at) = calls.as_ref().and_then(|c| c.iter().rposition(|(f, _)| f == func)) else {
            diag.note(kinds::RETURN_WITHOUT_ENTRY, ev.line, || {
                format!("return from {func} in pid {} whose entry is not in the trace", ev.pid)
            });
            return None;
        };
        let calls = calls?;
        for (_, lost) in calls.drain(at + 1..) {
            unreturned(diag, &lost);
        }
        let (_, entry) = calls.pop()?;
        Some(Span {
            start_ns: entry.ts_ns,
            duration_ns: ev.ts_ns.checked_sub(entry.ts_ns)?,
            cpu: entry.cpu,
            pid: entry.pid,
            comm: entry.comm,
            label: format!("probe:{}", entry.name),
            stack: entry.stack,
            line: entry.line,
        })
    }

    /// End of input: counts the calls still open.
    pub fn finish(&mut self, diag: &mut Diagnostics) {
        let mut left: Vec<TraceEvent> =
            self.open.drain().flat_map(|(_, c)| c.into_iter().map(|(_, e)| e)).collect();
        left.sort_by_key(|e| e.line);
        for e in &left {
            unreturned(diag, e);
        }
    }
}

fn unreturned(diag: &mut Diagnostics, e: &TraceEvent) {
    diag.note(kinds::ENTRY_WITHOUT_RETURN, e.line, || {
        format!("{} in pid {} has no return in the trace (still running, or lost)", e.name, e.pid)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collapse::pairing::test_event as ev;

    #[test]
    fn edges() {
        assert_eq!(parse_probe_edge("(0x5645642053d0)"), Some(ProbeEdge::Entry("5645642053d0".into())));
        let ret = "(0x5645642051dd <- 0x00005645642053D0)";
        assert_eq!(parse_probe_edge(ret), Some(ProbeEdge::Return("5645642053d0".into())));
        let k = "(do_sys_openat2+0x0/0x2c0) dfd=0xffffff9c";
        assert_eq!(parse_probe_edge(k), Some(ProbeEdge::Entry("do_sys_openat2".into())));
        let kr = "(do_sys_open+0x5a/0x90 <- do_sys_openat2) arg1=0x3";
        assert_eq!(parse_probe_edge(kr), Some(ProbeEdge::Return("do_sys_openat2".into())));
        assert_eq!(parse_probe_edge("NR 1 (3, 4)"), None);
        assert_eq!(parse_probe_edge("(a b c)"), None);
        assert_eq!(parse_probe_edge("(0x)"), None);
    }

    #[test]
    fn nested_and_recursive_calls() {
        let mut p = ProbePairer::new();
        let mut d = Diagnostics::new();
        assert!(p.feed(ev(1, 1, "f_in", "(0x10)"), &mut d).is_none());
        assert!(p.feed(ev(2, 1, "f_in", "(0x10)"), &mut d).is_none());
        assert!(p.feed(ev(3, 1, "g_in", "(0x20)"), &mut d).is_none());
        let inner = p.feed(ev(5, 1, "f_out", "(0x99 <- 0x10)"), &mut d).unwrap();
        assert_eq!((inner.start_ns, inner.duration_ns, inner.label.as_str()), (2, 3, "probe:f_in"));
        let outer = p.feed(ev(9, 1, "f_out", "(0x99 <- 0x10)"), &mut d).unwrap();
        assert_eq!((outer.start_ns, outer.duration_ns), (1, 8));
        assert!(p.feed(ev(10, 1, "f_out", "(0x99 <- 0x10)"), &mut d).is_none());
        p.finish(&mut d);
        assert_eq!(d.get(kinds::ENTRY_WITHOUT_RETURN).unwrap().count, 1, "g never returned");
        assert_eq!(d.get(kinds::RETURN_WITHOUT_ENTRY).unwrap().count, 1);
    }
}
