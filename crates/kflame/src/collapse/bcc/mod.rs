//! bcc tool output: `profile`, `offcputime`, `stackcount` (and the like), both the folded
//! form (`-f`) and the default multi-line form.
//!
//! Multi-line form: frames leaf first, one per indented line, an optional `--` line between
//! the kernel and the user stack (`-d`), then the process (`-   comm (pid)` for profile and
//! offcputime, `comm [pid]` for stackcount -P), then the count on its own line:
//! ```text
//!     __vfs_write
//!     entry_SYSCALL_64_fastpath
//!     --
//!     __write
//!     -                dd (25036)
//!         1
//! ```
//! becomes `dd;__write;-;entry_SYSCALL_64_fastpath;__vfs_write 1`, exactly what the tool
//! prints with `-f -d`. offwaketime's pairs (`waker:` name and stack, `-   -`, the blocked
//! stack, `target:` name) become `target;blocked stack;-;waker stack;waker`. Folded lines are read as they are; the same stack on several lines
//! is summed. `[Missed User Stack]` / `[Missed Kernel Stack]` stay as frames, so totals
//! stay true.
//!
//! Units: bcc's off-CPU style tools print microseconds (`Tracing off-CPU time (us)`); those
//! counts are converted to nanoseconds (unit `ns`), so that they add up with the other
//! latency inputs. `profile` counts samples, `stackcount` events. The header line tells
//! which; folded output has no header, so [`Unit`] can be given.

use super::{Collapse, Output, lines};
use crate::fold::read::{parse_line, show};
use crate::fold::{Meta, Unit as FoldUnit, Weight};

/// What the counts of a bcc output mean.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Unit {
    /// Decide from the header line (samples when there is none).
    #[default]
    Auto,
    /// Samples (`profile`).
    Samples,
    /// Microseconds (`offcputime`, `offwaketime`, `wakeuptime`): converted to ns.
    Micros,
    /// Event counts (`stackcount`).
    Events,
}

/// Options of the bcc collapser.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Unit of the counts.
    pub unit: Unit,
    /// Keep the PID of the multi-line process line in the root frame (`comm-PID`).
    pub pid: bool,
}

/// Kinds of skipped lines.
pub mod kinds {
    /// A line that is neither a frame, a count nor a folded line.
    pub const BAD_LINE: &str = "not bcc output";
    /// Frames that never got their count line.
    pub const NO_COUNT: &str = "stack without count";
    /// A count line with no frames before it (kept under [`super::EMPTY_STACK`]).
    pub const EMPTY_STACK: &str = "count without stack";
}

/// The placeholder frame for a count without frames.
pub const EMPTY_STACK: &str = "[empty stack]";

/// Collapser for bcc output. Sequential when multi-line records may span chunks.
#[derive(Clone, Default)]
pub struct Bcc {
    opts: Options,
    unit: Unit,
    frames: Vec<Vec<u8>>,
    first_line: u64,
}

impl Bcc {
    /// A collapser with these options.
    pub fn new(opts: Options) -> Bcc {
        Bcc { unit: opts.unit, opts, ..Bcc::default() }
    }

    fn line(&mut self, n: u64, line: &[u8], out: &mut Output) {
        let t = line.trim_ascii();
        if t.is_empty() || is_chatter(t) {
            self.flush_incomplete(out);
        } else if line[0] == b' ' || line[0] == b'\t' {
            self.indented(n, t, out);
        } else {
            self.flush_incomplete(out);
            self.folded(n, line, out);
        }
    }

    fn indented(&mut self, n: u64, t: &[u8], out: &mut Output) {
        if t.iter().all(u8::is_ascii_digit) {
            let frames = std::mem::take(&mut self.frames);
            match Weight::parse(t) {
                Ok(w) if frames.is_empty() => {
                    out.diag.note(kinds::EMPTY_STACK, n, || {
                        format!("a count with no frames: kept as {EMPTY_STACK}")
                    });
                    out.stacks.add(EMPTY_STACK.as_bytes(), self.scale(w));
                }
                Ok(w) => out.stacks.add(&self.fold(frames), self.scale(w)),
                Err(e) => out.diag.skip(kinds::BAD_LINE, n, || format!("a count, {e}: `{}`", show(t))),
            }
            return;
        }
        if self.frames.is_empty() {
            self.first_line = n;
        }
        self.frames.push(t.to_vec());
    }

    fn folded(&mut self, n: u64, line: &[u8], out: &mut Output) {
        match parse_line(line) {
            Ok(Some(l)) => out.stacks.add(l.stack, self.scale(l.weight)),
            Ok(None) => {}
            Err(_) => out.diag.skip(kinds::BAD_LINE, n, || {
                format!("indented frames and a count, or a folded `stack count` line, found `{}`", show(line))
            }),
        }
    }

    /// Frames (leaf first, process line last) to a folded stack, root first.
    fn fold(&self, mut frames: Vec<Vec<u8>>) -> Vec<u8> {
        let mut stack = Vec::new();
        if let Some(comm) = frames.last().and_then(|l| process(l, self.opts.pid)) {
            stack.extend_from_slice(&comm);
            frames.pop();
        }
        for f in frames.iter().rev() {
            if !stack.is_empty() {
                stack.push(b';');
            }
            stack.extend(frame_name(f).iter().map(|&b| if b == b';' { b':' } else { b }));
        }
        stack
    }

    fn scale(&self, w: Weight) -> Weight {
        if self.unit == Unit::Micros { w.saturating_mul(1000) } else { w }
    }

    fn flush_incomplete(&mut self, out: &mut Output) {
        if !self.frames.is_empty() {
            let line = self.first_line;
            self.frames.clear();
            out.diag.skip(kinds::NO_COUNT, line, || "a count line after the frames, found none".into());
        }
    }

    fn apply_header(&mut self, t: &[u8]) {
        if self.opts.unit == Unit::Auto
            && let Some(u) = header_unit(t)
        {
            self.unit = u;
        }
    }
}

/// The unit a tool's header line announces.
fn header_unit(t: &[u8]) -> Option<Unit> {
    let has = |s: &[u8]| memchr::memmem::find(t, s).is_some();
    if t.starts_with(b"Tracing ") && has(b"(us)") {
        Some(Unit::Micros)
    } else if t.starts_with(b"Sampling at ") {
        Some(Unit::Samples)
    } else if t.starts_with(b"Tracing ") && has(b" functions for ") {
        Some(Unit::Events)
    } else {
        None
    }
}

/// Tool messages that are not data.
fn is_chatter(t: &[u8]) -> bool {
    const PREFIXES: &[&[u8]] =
        &[b"Sampling at ", b"Tracing ", b"^C", b"Detaching", b"WARNING:", b"Hit Ctrl-C", b"# "];
    PREFIXES.iter().any(|p| t.starts_with(p))
}

/// A frame line as a folded frame: `--` and `-    -` delimiters become `-`, a leading
/// address (`ffffffff8137897c blk_mq_complete_request`, older bcc and `-v`) is dropped, and
/// offwaketime's `waker:  name` / `target:  name` keep the name.
fn frame_name(f: &[u8]) -> &[u8] {
    if f.len() >= 2 && f.iter().all(|&b| b == b'-' || b == b' ') {
        return b"-";
    }
    if let Some(rest) = f.strip_prefix(b"waker:").or_else(|| f.strip_prefix(b"target:")) {
        return rest.trim_ascii();
    }
    match memchr::memchr(b' ', f) {
        Some(sp) if sp >= 8 && f[..sp].iter().all(u8::is_ascii_hexdigit) => f[sp + 1..].trim_ascii(),
        _ => f,
    }
}

/// The comm of a process line: `-    comm (pid)` or `comm [pid]`.
fn process(line: &[u8], keep_pid: bool) -> Option<Vec<u8>> {
    let (body, open, close) = match line.strip_prefix(b"- ") {
        Some(rest) => (rest.trim_ascii(), b'(', b')'),
        None => (line, b'[', b']'),
    };
    let inner = body.strip_suffix(&[close])?;
    let at = inner.iter().rposition(|&b| b == open)?;
    let pid = &inner[at + 1..];
    if pid.is_empty() || !pid.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut comm = inner[..at].trim_ascii().to_vec();
    if keep_pid {
        comm.push(b'-');
        comm.extend_from_slice(pid);
    }
    Some(comm.iter().map(|&b| if b == b';' { b':' } else { b }).collect())
}

impl Collapse for Bcc {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            self.line(n, line, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        self.flush_incomplete(out);
    }

    fn meta(&self) -> Meta {
        let unit = match self.unit {
            Unit::Micros => FoldUnit::Nanoseconds,
            Unit::Events => FoldUnit::Events,
            // Sample counts: no header, as FlameGraph's tools write them.
            Unit::Auto | Unit::Samples => FoldUnit::Unspecified,
        };
        Meta { unit, event: None }
    }

    /// The unit is decided here, from the header at the top, once: a header further down
    /// does not change it (the result must not depend on how the input is split).
    fn prepare(&mut self, head: &[u8]) {
        for (_, l) in lines(head, 1).take(50) {
            self.apply_header(l.trim_ascii());
        }
    }

    /// Records end after a count line, a blank line or a folded line: cut after the last one.
    fn split_point(&self, buf: &[u8]) -> Option<usize> {
        let mut end = buf.len();
        while end > 0 {
            let start = memchr::memrchr(b'\n', &buf[..end - 1]).map_or(0, |i| i + 1);
            let line = &buf[start..end];
            let t = line.trim_ascii();
            let indented = line.first().is_some_and(|b| *b == b' ' || *b == b'\t');
            if t.is_empty() || !indented || t.iter().all(u8::is_ascii_digit) {
                return Some(end);
            }
            end = start;
        }
        None
    }

    fn fork(&self) -> Option<Box<dyn Collapse>> {
        Some(Box::new(Bcc { frames: Vec::new(), ..self.clone() }))
    }
}

/// Confidence (0-100) that `head` is bcc output.
///
/// bcc prints its stacks indented (frames, `-  comm (pid)`, the count) or folded, and little
/// else: its own messages (`Sampling at ...`, `^C`, `WARNING: ...`). Text that is mostly
/// other unindented lines is not bcc output, whatever few lines of it look like counts
/// (a kernel log without timestamps has indented numbers and command lines).
pub fn detect(head: &[u8]) -> u8 {
    let (mut counts, mut procs, mut header, mut folded_dash, mut folded) = (0, 0, false, 0, 0);
    let (mut lines_seen, mut foreign) = (0u32, 0u32);
    for (_, l) in lines(head, 1).take(1000) {
        let t = l.trim_ascii();
        if t.is_empty() {
            continue;
        }
        lines_seen += 1;
        header |= header_unit(t).is_some();
        let indented = l.first().is_some_and(|b| *b == b' ' || *b == b'\t');
        if indented && t.iter().all(u8::is_ascii_digit) {
            counts += 1;
        } else if indented && process(t, false).is_some() {
            procs += 1;
        } else if !indented && parse_line(l).is_ok_and(|x| x.is_some()) {
            folded += 1;
            let s = l.rsplit(|&b| b == b' ').nth(1).unwrap_or(l);
            if memchr::memmem::find(s, b";-;").is_some() || memchr::memmem::find(s, b"[Missed ").is_some() {
                folded_dash += 1;
            }
        } else if !indented && !is_chatter(t) {
            foreign += 1;
        }
    }
    if foreign > 3 && foreign * 10 > lines_seen {
        return 0;
    }
    match () {
        _ if counts >= 1 && (header || procs >= 1) => 90,
        _ if counts >= 3 => 60,
        _ if folded_dash >= 1 && folded_dash * 20 >= folded => 62,
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
