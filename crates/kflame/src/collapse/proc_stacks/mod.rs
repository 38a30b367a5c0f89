//! Snapshots of `/proc/PID/task/TID/stack`: where every thread sits in the kernel right now,
//! grouped by task state (the live view of blocked tasks).
//!
//! The snapshot text (what [`write_thread`] produces and `record::proc_stacks` takes live):
//! ```text
//! # snapshot at 2026-11-21 23:43:39 uptime=3488.25
//! ==> pid=9651 tid=9651 comm=jbd2/loop0-8 state=D wchan=kjournald2
//! [<0>] kjournald2+0x30c/0x340
//! [<0>] kthread+0xf8/0x220
//! ```
//! Each thread weighs 1, under root frames `state:D` then the comm, then its kernel stack
//! root first, offsets dropped. A thread with an empty stack (running in user mode) keeps
//! its weight on the comm frame. The parsers here are pure (bytes in, values out).

use super::{Collapse, Output, lines};
use crate::fold::read::show;
use crate::fold::{Meta, Weight};

/// The fields of `/proc/PID/status` a snapshot needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// `Name:` (the comm, up to 15 bytes, may contain spaces).
    pub name: Vec<u8>,
    /// The one-letter state of `State:` (`R`, `S`, `D`, `T`, `t`, `Z`, `X`, `I`).
    pub state: u8,
    /// `Tgid:` (process id).
    pub tgid: u32,
    /// `Pid:` (thread id).
    pub pid: u32,
}

/// Reads `/proc/PID/status` content; `None` when `Name:` or `State:` is missing.
pub fn parse_status(text: &[u8]) -> Option<Status> {
    let mut s = Status::default();
    let (mut has_name, mut has_state) = (false, false);
    for (_, line) in lines(text, 1) {
        let Some(colon) = memchr::memchr(b':', line) else { continue };
        let value = line[colon + 1..].trim_ascii_start();
        match &line[..colon] {
            b"Name" => (s.name, has_name) = (value.to_vec(), true),
            b"State" => {
                s.state = *value.first()?;
                has_state = true;
            }
            b"Tgid" => s.tgid = parse_u32(value)?,
            b"Pid" => s.pid = parse_u32(value)?,
            _ => {}
        }
    }
    (has_name && has_state).then_some(s)
}

/// The function names of `/proc/.../stack` content (leaf first), offsets dropped. Lines
/// that are not `[<addr>] symbol+off/size` are returned as `Err` with their 1-based number.
pub fn parse_proc_stack(text: &[u8]) -> Vec<Result<&[u8], u64>> {
    lines(text, 1).filter(|(_, l)| !l.trim_ascii().is_empty()).map(|(n, l)| stack_frame(l).ok_or(n)).collect()
}

/// `[<0>] kthreadd+0x2f0/0x310` → `kthreadd`.
fn stack_frame(line: &[u8]) -> Option<&[u8]> {
    let rest = line.trim_ascii().strip_prefix(b"[<")?;
    let close = memchr::memmem::find(rest, b">]")?;
    let sym = rest[close + 2..].trim_ascii();
    let sym = sym.split(|&b| b == b' ').next().unwrap_or(sym);
    let name = match sym.iter().rposition(|&b| b == b'+') {
        Some(plus) if plus > 0 => &sym[..plus],
        _ => sym,
    };
    (!name.is_empty()).then_some(name)
}

/// One thread of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Thread name.
    pub comm: Vec<u8>,
    /// One-letter state.
    pub state: u8,
    /// Content of `/proc/.../wchan` (`0` when running).
    pub wchan: Vec<u8>,
    /// Content of `/proc/.../stack`, as read.
    pub stack: Vec<u8>,
}

/// Writes one thread in the snapshot text format.
pub fn write_thread(out: &mut Vec<u8>, t: &Thread) {
    let clean = |s: &[u8]| -> Vec<u8> { s.iter().map(|&b| if b == b'\n' { b' ' } else { b }).collect() };
    out.extend_from_slice(format!("==> pid={} tid={} comm=", t.pid, t.tid).as_bytes());
    out.extend_from_slice(&clean(&t.comm));
    out.extend_from_slice(b" state=");
    out.push(if t.state.is_ascii_graphic() { t.state } else { b'?' });
    out.extend_from_slice(b" wchan=");
    out.extend_from_slice(&clean(t.wchan.trim_ascii()));
    out.push(b'\n');
    for (_, l) in lines(&t.stack, 1).filter(|(_, l)| !l.is_empty()) {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
}

/// Kinds of skipped lines.
pub mod kinds {
    /// A stack line that is not `[<addr>] symbol+off/size`.
    pub const BAD_FRAME: &str = "bad stack line";
    /// A `==>` header without pid, comm or state.
    pub const BAD_HEADER: &str = "bad thread header";
    /// Stack lines before any thread header.
    pub const ORPHAN_FRAME: &str = "stack line without thread";
}

/// Collapser for snapshot text. Threads are independent, so it runs in parallel.
#[derive(Default, Clone)]
pub struct ProcStacks {
    current: Option<(Vec<u8>, Vec<Vec<u8>>)>,
}

impl ProcStacks {
    /// A snapshot collapser.
    pub fn new() -> ProcStacks {
        ProcStacks::default()
    }

    fn flush(&mut self, out: &mut Output) {
        if let Some((root, frames)) = self.current.take() {
            let mut stack = root;
            for f in frames.iter().rev() {
                stack.push(b';');
                stack.extend_from_slice(f);
            }
            out.stacks.add(&stack, Weight::ONE);
        }
    }

    fn header(&mut self, n: u64, line: &[u8], out: &mut Output) {
        self.flush(out);
        match parse_header(line) {
            Some((comm, state)) => {
                let mut root = state_frame(state);
                root.push(b';');
                root.extend(comm_frame(comm));
                self.current = Some((root, Vec::new()));
            }
            None => out.diag.skip(kinds::BAD_HEADER, n, || {
                format!("`==> pid=N tid=N comm=NAME state=S wchan=W`, found `{}`", show(line))
            }),
        }
    }
}

/// The root frame of a thread in state `state`: `state:D` (so blocked tasks sort first).
/// Live `record --blocked` and collapsed snapshots both name threads this way.
pub fn state_frame(state: u8) -> Vec<u8> {
    let mut f = b"state:".to_vec();
    f.push(state);
    f
}

/// The comm as a frame: spaces kept, `;` (the frame separator) turned into `:`.
pub fn comm_frame(comm: &[u8]) -> Vec<u8> {
    comm.iter().map(|&b| if b == b';' { b':' } else { b }).collect()
}

/// `==> pid=2 tid=2 comm=kthreadd state=S wchan=kthreadd`: comm (may hold spaces) and state.
fn parse_header(line: &[u8]) -> Option<(&[u8], u8)> {
    let comm_at = memchr::memmem::find(line, b" comm=")? + 6;
    let state_at = memchr::memmem::rfind(line, b" state=")?;
    if state_at < comm_at {
        return None;
    }
    let state = *line.get(state_at + 7).filter(|b| b.is_ascii_alphabetic())?;
    Some((&line[comm_at..state_at], state))
}

fn parse_u32(s: &[u8]) -> Option<u32> {
    std::str::from_utf8(s.trim_ascii()).ok()?.parse().ok()
}

impl Collapse for ProcStacks {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            if line.starts_with(b"==>") {
                self.header(n, line, out);
            } else if line.trim_ascii().is_empty() || line.starts_with(b"#") {
                continue;
            } else if let Some(f) = stack_frame(line) {
                match self.current.as_mut() {
                    Some((_, frames)) => frames.push(f.to_vec()),
                    None => out.diag.skip(kinds::ORPHAN_FRAME, n, || {
                        format!("a `==> pid=...` thread header before `{}`", show(line))
                    }),
                }
            } else {
                out.diag.skip(kinds::BAD_FRAME, n, || {
                    format!("`[<addr>] symbol+off/size` or `==> pid=...`, found `{}`", show(line))
                });
            }
        }
    }

    fn finish(&mut self, out: &mut Output) {
        self.flush(out);
    }

    fn meta(&self) -> Meta {
        Meta { event: Some("proc-stacks".into()), ..Meta::default() }
    }

    fn split_point(&self, buf: &[u8]) -> Option<usize> {
        let at = memchr::memmem::rfind(buf, b"\n==>")? + 1;
        (at > 0).then_some(at)
    }

    fn fork(&self) -> Option<Box<dyn Collapse>> {
        Some(Box::new(ProcStacks::new()))
    }
}

/// Confidence (0-100) that `head` is a snapshot: `==> pid=` headers and `[<` frames.
pub fn detect(head: &[u8]) -> u8 {
    let (mut headers, mut frames, mut other) = (0, 0, 0);
    for (_, l) in lines(head, 1).take(400) {
        if l.starts_with(b"==> pid=") && parse_header(l).is_some() {
            headers += 1;
        } else if stack_frame(l).is_some() {
            frames += 1;
        } else if !l.trim_ascii().is_empty() && !l.starts_with(b"#") {
            other += 1;
        }
    }
    match (headers, frames + headers, other) {
        (0, _, _) => 0,
        (_, good, bad) if good >= 10 * bad => 90,
        (_, good, bad) if good >= 2 * bad => 50,
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
