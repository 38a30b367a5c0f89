//! bpftrace map output with stack keys: `@[kstack]: N`, `@name[ustack, comm]: N`, in the
//! indented (current) and unindented (old) layouts, `kstack(perf)` frames with addresses.
//!
//! ```text
//! Attaching 1 probe...
//! @bytes[
//!     __alloc_frozen_pages_noprof+619
//!     alloc_pages_bulk_noprof+735
//! ]: 4096
//! @wk[
//!     syscall_exit_work+188
//! ,
//!     __GI___write+16
//! ]: 1302
//! @[]: 791
//! ```
//! One map is collapsed: the one named by `map`, or else the first map with a stack in its
//! key; entries of other maps (histograms, scalars, other stack maps) are counted as notes.
//! Folded frames: scalar key parts (comm, pid) first as root frames, then the stacks root
//! first, offsets dropped; several stacks in one key are joined by a `-` frame, the last
//! key part outermost (so `@[kstack, ustack]` reads user;-;kernel). An empty stack
//! (`@[]: N`: samples taken in user mode for a kstack map) keeps its weight under
//! `[empty stack]`, so totals stay true.

use super::{Collapse, Output, lines};
use crate::fold::read::show;
use crate::fold::{Meta, Weight};

/// The placeholder frame for an empty stack.
pub const EMPTY_STACK: &str = "[empty stack]";

/// Kinds of skipped lines and notes.
pub mod kinds {
    /// An entry whose `]: N` value is not a non-negative number.
    pub const BAD_VALUE: &str = "bad map value";
    /// An entry cut before its `]: N` line.
    pub const TRUNCATED: &str = "truncated map entry";
    /// Entries of maps other than the one collapsed.
    pub const OTHER_MAP: &str = "other map";
    /// Lines outside map entries (probe messages, printf output, histograms).
    pub const OTHER_OUTPUT: &str = "not a map entry";
}

/// One part of a map key.
#[derive(Debug, Clone)]
enum Part {
    Scalar(Vec<u8>),
    Stack(Vec<Vec<u8>>),
}

/// The entries of one map, in input order.
#[derive(Debug)]
struct Map {
    name: Vec<u8>,
    /// Whether some key of the map holds a stack.
    has_stack: bool,
    entries: Vec<(Vec<u8>, Weight)>,
}

/// An entry being read.
#[derive(Debug)]
struct Open {
    map: Vec<u8>,
    parts: Vec<Part>,
    line: u64,
}

/// Collapser for bpftrace output. Sequential: the map choice needs the whole output.
#[derive(Default)]
pub struct Bpftrace {
    map: Option<Vec<u8>>,
    open: Option<Open>,
    /// Entries per map, in order of first appearance.
    maps: Vec<Map>,
    /// The map that was collapsed (known after `finish`).
    collapsed: Option<Vec<u8>>,
}

impl Bpftrace {
    /// A collapser for the map `map` (e.g. `@bytes`, `@` for the anonymous map), or the first
    /// map with a stack key when `None`.
    pub fn new(map: Option<&str>) -> Bpftrace {
        let map = map
            .map(|m| if m.starts_with('@') { m.as_bytes().to_vec() } else { format!("@{m}").into_bytes() });
        Bpftrace { map, ..Bpftrace::default() }
    }

    fn line(&mut self, n: u64, line: &[u8], out: &mut Output) {
        let t = line.trim_ascii();
        if line.starts_with(b"@") {
            if let Some(o) = self.open.take() {
                out.diag.skip(kinds::TRUNCATED, o.line, || {
                    "an entry ending in `]: N`, found the next entry".into()
                });
            }
            self.entry_start(n, t, out);
        } else if self.open.is_some() {
            self.entry_line(n, t, out);
        } else if !t.is_empty() && !is_chatter(t) {
            out.diag.note(kinds::OTHER_OUTPUT, n, || format!("ignored `{}`", show(t)));
        }
    }

    /// `@name[...` or `@name: value`.
    fn entry_start(&mut self, n: u64, t: &[u8], out: &mut Output) {
        let name_len = 1 + t[1..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        let (map, rest) = t.split_at(name_len);
        let Some(rest) = rest.strip_prefix(b"[") else {
            out.diag.note(kinds::OTHER_MAP, n, || format!("map `{}` has no stack key", show(map)));
            return;
        };
        self.open = Some(Open { map: map.to_vec(), parts: Vec::new(), line: n });
        self.key_text(n, rest, out);
    }

    /// Text after `[` or after a `,` line: scalar parts, possibly the end `]: N`.
    fn key_text(&mut self, n: u64, text: &[u8], out: &mut Output) {
        let Some(o) = self.open.as_mut() else { return };
        if let Some(end) = memchr::memmem::rfind(text, b"]: ") {
            o.parts.extend(scalars(&text[..end]));
            let value = &text[end + 3..];
            self.finish_entry(n, value, out);
            return;
        }
        o.parts.extend(scalars(text));
        o.parts.push(Part::Stack(Vec::new()));
    }

    fn entry_line(&mut self, n: u64, t: &[u8], out: &mut Output) {
        if let Some(value) = t.strip_prefix(b"]: ") {
            self.finish_entry(n, value, out);
        } else if let Some(rest) = t.strip_prefix(b",") {
            self.key_text(n, rest.trim_ascii(), out);
        } else if let Some(Part::Stack(frames)) = self.open.as_mut().and_then(|o| o.parts.last_mut())
            && !t.is_empty()
        {
            frames.push(frame(t).to_vec());
        }
    }

    fn finish_entry(&mut self, n: u64, value: &[u8], out: &mut Output) {
        let Some(o) = self.open.take() else { return };
        let w = match Weight::parse(value.trim_ascii()) {
            Ok(w) => w,
            Err(e) => {
                return out
                    .diag
                    .skip(kinds::BAD_VALUE, n, || format!("`]: N` with a count, {e}: `{}`", show(value)));
            }
        };
        let has_stack = o.parts.iter().any(|p| matches!(p, Part::Stack(_))) || o.parts.is_empty();
        let stack = fold(&o.parts);
        match self.maps.iter_mut().find(|m| m.name == o.map) {
            Some(m) => {
                m.has_stack |= has_stack;
                m.entries.push((stack, w));
            }
            None => self.maps.push(Map { name: o.map, has_stack, entries: vec![(stack, w)] }),
        }
    }

    /// The index of the map to collapse.
    fn chosen(&self) -> Option<usize> {
        match &self.map {
            Some(m) => self.maps.iter().position(|map| map.name == *m),
            None => self.maps.iter().position(|map| map.has_stack),
        }
    }
}

/// Probe attach messages and other bpftrace chatter that is not data.
fn is_chatter(t: &[u8]) -> bool {
    t.starts_with(b"Attaching ") || t.starts_with(b"Attached ") || t == b"^C"
}

/// `comm, 123, ` → scalar parts.
fn scalars(text: &[u8]) -> impl Iterator<Item = Part> + '_ {
    text.split(|&b| b == b',')
        .map(|s| s.trim_ascii())
        .filter(|s| !s.is_empty())
        .map(|s| Part::Scalar(s.to_vec()))
}

/// `ffffffffb4019501 do_mmap+1` or `do_mmap+1` or `main+317 (/bin/x)` → `do_mmap`.
fn frame(t: &[u8]) -> &[u8] {
    let mut f = t;
    if let Some(sp) = memchr::memchr(b' ', f) {
        let first = &f[..sp];
        if first.len() >= 8 && first.iter().all(u8::is_ascii_hexdigit) {
            f = f[sp + 1..].trim_ascii();
        }
    }
    if let Some(paren) = memchr::memmem::find(f, b" (") {
        f = &f[..paren];
    }
    match f.iter().rposition(|&b| b == b'+') {
        Some(p) if p > 0 && f[p + 1..].iter().all(|b| b.is_ascii_hexdigit() || *b == b'x') => &f[..p],
        _ => f,
    }
}

/// Folds key parts: scalars first, then stacks (last part outermost), root first.
fn fold(parts: &[Part]) -> Vec<u8> {
    let mut out = Vec::new();
    let push = |out: &mut Vec<u8>, f: &[u8]| {
        if !out.is_empty() {
            out.push(b';');
        }
        out.extend(f.iter().map(|&b| if b == b';' { b':' } else { b }));
    };
    for p in parts {
        if let Part::Scalar(s) = p {
            push(&mut out, s);
        }
    }
    let stacks: Vec<&Vec<Vec<u8>>> =
        parts.iter().rev().filter_map(|p| if let Part::Stack(s) = p { Some(s) } else { None }).collect();
    for (i, s) in stacks.iter().enumerate() {
        if i > 0 {
            push(&mut out, b"-");
        }
        if s.is_empty() {
            push(&mut out, EMPTY_STACK.as_bytes());
        }
        for f in s.iter().rev() {
            push(&mut out, f);
        }
    }
    if out.is_empty() {
        out.extend_from_slice(EMPTY_STACK.as_bytes());
    }
    out
}

impl Collapse for Bpftrace {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            self.line(n, line, out);
        }
    }

    fn finish(&mut self, out: &mut Output) {
        if let Some(o) = self.open.take() {
            out.diag.skip(kinds::TRUNCATED, o.line, || {
                "an entry ending in `]: N`, found the end of input".into()
            });
        }
        let chosen = self.chosen();
        for (i, Map { name: map, entries, .. }) in std::mem::take(&mut self.maps).into_iter().enumerate() {
            if Some(i) == chosen {
                self.collapsed = Some(map.clone());
                for (stack, w) in entries {
                    out.stacks.add(&stack, w);
                }
            } else {
                let msg =
                    || format!("entries of map `{}` were not collapsed (one map at a time)", show(&map));
                out.diag.add(crate::diag::Severity::Note, kinds::OTHER_MAP, 0, entries.len() as u64, msg);
            }
        }
    }

    fn meta(&self) -> Meta {
        let event = self.collapsed.as_ref().map(|m| format!("bpftrace {}", String::from_utf8_lossy(m)));
        Meta { event, ..Meta::default() }
    }
}

/// Confidence (0-100) that `head` is bpftrace output with stack maps.
pub fn detect(head: &[u8]) -> u8 {
    let (mut starts, mut ends, mut attach) = (0, 0, false);
    for (_, l) in lines(head, 1).take(2000) {
        let t = l.trim_ascii();
        attach |= t.starts_with(b"Attaching ") && t.ends_with(b"...");
        if l.starts_with(b"@") && memchr::memchr(b'[', l).is_some() {
            starts += 1;
        }
        if t.starts_with(b"]: ") || (l.starts_with(b"@") && memchr::memmem::find(l, b"]: ").is_some()) {
            ends += 1;
        }
    }
    match (starts, ends) {
        (0, _) | (_, 0) => 0,
        _ if attach => 95,
        (s, e) if s >= 2 || e >= 2 => 85,
        _ => 50,
    }
}

#[cfg(test)]
mod tests;
