//! Content detection of ftrace and trace-cmd text, and the choice of a mode from the events.

use super::line::{self, Body, Header, parse_header};
use super::{Mode, frames, is_trace_cmd_preamble, memory};
use crate::collapse::lines;
use crate::collapse::pairing::{ProbeEdge, parse_probe_edge, parse_syscall_edge};

/// Confidence that `head` is ftrace text: event lines with stacks or a `# tracer:` header.
/// function_graph output (another format) and `funcgraph_*` events are not claimed.
pub fn detect_ftrace(head: &[u8]) -> u8 {
    let s = survey(head);
    if s.funcgraph || s.events + s.stacks == 0 || s.trace_cmd {
        return 0;
    }
    match (s.tracer_header, s.bad * 4 <= s.events + s.stacks) {
        (true, true) => 90,
        (false, true) => 70,
        _ => 0,
    }
}

/// Confidence that `head` is `trace-cmd report` text with events and stacks.
pub fn detect_trace_cmd(head: &[u8]) -> u8 {
    let s = survey(head);
    if s.funcgraph || s.events + s.stacks == 0 || !s.trace_cmd || s.bad * 4 > s.events + s.stacks {
        return 0;
    }
    90
}

#[derive(Default)]
struct Survey {
    events: usize,
    stacks: usize,
    bad: usize,
    tracer_header: bool,
    trace_cmd: bool,
    funcgraph: bool,
}

fn survey(head: &[u8]) -> Survey {
    let mut s = Survey::default();
    for (n, l) in lines(head, 1).take(400) {
        let t = line::trim(l);
        if t.starts_with(b"# tracer:") {
            s.tracer_header = true;
            s.funcgraph |= t.ends_with(b"function_graph");
        }
        if n == 1 && is_trace_cmd_preamble(t) {
            s.trace_cmd = true;
        }
        if t.is_empty() || t[0] == b'#' || frames::frame_text(l).is_some() || is_trace_cmd_preamble(t) {
            continue;
        }
        match parse_header(l) {
            Ok(h) => match h.body {
                Body::Event { name, .. } => {
                    s.events += 1;
                    s.funcgraph |= name.starts_with(b"funcgraph_");
                    s.trace_cmd |= name == b"kernel_stack" || name == b"user_stack";
                }
                _ => s.stacks += 1,
            },
            Err(_) => s.bad += 1,
        }
        s.trace_cmd |= memchr::memmem::find(t, b"kernel_stack:").is_some();
    }
    s
}

/// Bytes of the input's head that [`guess_mode`] reads.
pub const GUESS_WINDOW: usize = 64 * 1024;

/// The mode whose events are most frequent in `head` (ties: alloc, syscalls, off-CPU,
/// probes; probe events are counted by their returns, whose `(site <- function)` payload is
/// distinctive, and probe entries that fetched a size count as allocations).
///
/// Only the first [`GUESS_WINDOW`] bytes are read, so that a caller holding that much of the
/// input (a format detector) guesses what the collapser would.
pub fn guess_mode(head: &[u8]) -> (Mode, String) {
    let head = &head[..head.len().min(GUESS_WINDOW)];
    let mut counts = [0usize; 4];
    for (_, l) in lines(head, 1) {
        if let Ok(Header { body: Body::Event { name, payload }, .. }) = parse_header(l) {
            let name = String::from_utf8_lossy(name);
            let payload = String::from_utf8_lossy(payload);
            if memory::is_alloc_event(&name, &payload) {
                counts[0] += 1;
            } else if parse_syscall_edge(&name, &payload).is_some() {
                counts[1] += 1;
            } else if name == "sched_switch" {
                counts[2] += 1;
            } else if let Some(ProbeEdge::Return(_)) = parse_probe_edge(&payload) {
                counts[3] += 2;
            }
        }
    }
    let modes = [
        (Mode::Alloc, "allocation"),
        (Mode::Syscalls, "syscall"),
        (Mode::OffCpu, "sched_switch"),
        (Mode::Probes, "probe entry/return"),
    ];
    let best = (0..4).fold(0, |b, i| if counts[i] > counts[b] { i } else { b });
    if counts[best] == 0 {
        return (
            Mode::Events,
            "no allocation, syscall, sched_switch or return-probe events at the start".into(),
        );
    }
    (modes[best].0, format!("{} {} events at the start", counts[best], modes[best].1))
}
