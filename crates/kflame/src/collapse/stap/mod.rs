//! SystemTap `print_stack()` / `print_backtrace()` output followed by a count, as printed by
//! the usual profiling script (`foreach (s in stacks) { print_stack(s); printf("\t%d\n",
//! @count(stacks[s])) }`):
//! ```text
//!  0xffffffff8103ce3b : native_safe_halt+0xb/0x10 [kernel]
//!  0xffffffff8101c6a3 : default_idle+0x53/0x1d0 [kernel]
//!     2404
//! ```
//! Frames are leaf first; the folded stack is root first with offsets and modules dropped
//! (`default_idle;native_safe_halt 2404`). A frame without a symbol keeps its address.

use super::{Collapse, Output, lines};
use crate::fold::read::show;
use crate::fold::{Meta, Weight};

/// Kinds of skipped lines.
pub mod kinds {
    /// A line that is neither a frame nor a count.
    pub const BAD_LINE: &str = "not SystemTap stack output";
    /// Frames that never got their count line.
    pub const NO_COUNT: &str = "stack without count";
    /// A count with no frames before it.
    pub const EMPTY_STACK: &str = "count without stack";
}

/// The placeholder frame for a count without frames.
pub const EMPTY_STACK: &str = "[empty stack]";

/// Collapser for SystemTap stack counts.
#[derive(Clone, Default)]
pub struct Stap {
    frames: Vec<Vec<u8>>,
    first_line: u64,
}

impl Stap {
    /// A SystemTap collapser.
    pub fn new() -> Stap {
        Stap::default()
    }

    fn line(&mut self, n: u64, line: &[u8], out: &mut Output) {
        let t = line.trim_ascii();
        if t.is_empty() {
            return;
        }
        if let Some(f) = frame(t) {
            if self.frames.is_empty() {
                self.first_line = n;
            }
            self.frames.push(f.to_vec());
        } else if t.iter().all(u8::is_ascii_digit) {
            self.count(n, t, out);
        } else {
            out.diag.skip(kinds::BAD_LINE, n, || {
                format!("`0xADDR : symbol+off/size [module]` or a count, found `{}`", show(t))
            });
        }
    }

    fn count(&mut self, n: u64, t: &[u8], out: &mut Output) {
        // A line of digits ends the record whether or not it reads as a count (a split
        // point is chosen on that alone): an unreadable one takes its frames with it.
        let Ok(w) = Weight::parse(t) else {
            let frames = std::mem::take(&mut self.frames).len();
            return out.diag.skip(kinds::BAD_LINE, n, || {
                format!("a count, found `{}` (its stack of {frames} frames left out)", show(t))
            });
        };
        if self.frames.is_empty() {
            out.diag.note(kinds::EMPTY_STACK, n, || format!("a count with no frames: kept as {EMPTY_STACK}"));
            out.stacks.add(EMPTY_STACK.as_bytes(), w);
            return;
        }
        let mut stack = Vec::new();
        for f in self.frames.drain(..).rev() {
            if !stack.is_empty() {
                stack.push(b';');
            }
            stack.extend(f.iter().map(|&b| if b == b';' { b':' } else { b }));
        }
        out.stacks.add(&stack, w);
    }
}

/// `0xffffffff8103ce3b : native_safe_halt+0xb/0x10 [kernel]` → `native_safe_halt`;
/// `0xffffffff8103ce3b` alone → the address.
fn frame(t: &[u8]) -> Option<&[u8]> {
    let hex = t.strip_prefix(b"0x")?;
    let digits = hex.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return None;
    }
    let rest = hex[digits..].trim_ascii();
    if rest.is_empty() {
        return Some(&t[..digits + 2]);
    }
    let sym = rest.strip_prefix(b":")?.trim_ascii();
    let sym = sym.split(|&b| b == b' ').next().unwrap_or(sym);
    let name = match sym.iter().position(|&b| b == b'+') {
        Some(p) if p > 0 => &sym[..p],
        _ => sym,
    };
    if name.is_empty() { Some(&t[..digits + 2]) } else { Some(name) }
}

impl Collapse for Stap {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            self.line(n, line, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        if !self.frames.is_empty() {
            self.frames.clear();
            out.diag.skip(kinds::NO_COUNT, self.first_line, || {
                "a count line after the frames, found none".into()
            });
        }
    }

    fn meta(&self) -> Meta {
        Meta::default()
    }

    /// Records end with a count line: cut after the last one.
    fn split_point(&self, buf: &[u8]) -> Option<usize> {
        let mut end = buf.len();
        while end > 0 {
            let start = memchr::memrchr(b'\n', &buf[..end - 1]).map_or(0, |i| i + 1);
            let t = buf[start..end].trim_ascii();
            if !t.is_empty() && t.iter().all(u8::is_ascii_digit) {
                return Some(end);
            }
            end = start;
        }
        None
    }

    fn fork(&self) -> Option<Box<dyn Collapse>> {
        Some(Box::new(Stap::new()))
    }
}

/// Confidence (0-100) that `head` is SystemTap stack output.
pub fn detect(head: &[u8]) -> u8 {
    let (mut frames, mut counts, mut other) = (0, 0, 0);
    for (_, l) in lines(head, 1).take(1000) {
        let t = l.trim_ascii();
        if t.is_empty() {
            continue;
        }
        if t.starts_with(b"0x") && memchr::memmem::find(t, b" : ").is_some() && frame(t).is_some() {
            frames += 1;
        } else if t.iter().all(u8::is_ascii_digit) {
            counts += 1;
        } else {
            other += 1;
        }
    }
    match (frames, counts) {
        (0, _) | (_, 0) => 0,
        (f, c) if f + c >= 5 * other => 85,
        (f, c) if f + c >= other => 40,
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
