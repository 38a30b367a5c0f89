//! Folded input (`a;b;c 12`): re-aggregates and merges already collapsed stacks.

use super::{Collapse, Output, lines};
use crate::fold::Meta;
use crate::fold::read::parse_line;

/// Collapser for folded files. Differential (two-column) lines keep their second column.
#[derive(Default, Clone)]
pub struct Folded {
    meta: Meta,
}

impl Folded {
    /// A folded-input collapser.
    pub fn new() -> Folded {
        Folded::default()
    }
}

impl Collapse for Folded {
    fn collapse(&mut self, chunk: &[u8], first_line: u64, out: &mut Output) {
        for (n, line) in lines(chunk, first_line) {
            if line.first() == Some(&b'#') {
                self.meta.apply_comment(line);
                continue;
            }
            match parse_line(line) {
                Ok(Some(l)) => out.stacks.add(l.stack, l.weight),
                Ok(None) => {}
                Err((kind, msg)) => out.diag.skip(kind, n, || msg),
            }
        }
    }

    fn finish(&mut self, _out: &mut Output) {}

    fn meta(&self) -> Meta {
        self.meta.clone()
    }

    fn prepare(&mut self, head: &[u8]) {
        for (_, line) in lines(head, 1).take_while(|(_, l)| l.first() == Some(&b'#')) {
            self.meta.apply_comment(line);
        }
    }

    fn split_point(&self, buf: &[u8]) -> Option<usize> {
        memchr::memrchr(b'\n', buf).map(|i| i + 1)
    }

    fn fork(&self) -> Option<Box<dyn Collapse>> {
        Some(Box::new(self.clone()))
    }
}

/// Confidence (0-100) that `head` is folded stacks: most non-comment lines end in a count
/// after a space and contain no tab-indented frame lines.
pub fn detect(head: &[u8]) -> u8 {
    let mut good = 0;
    let mut bad = 0;
    for (_, line) in lines(head, 1).take(200) {
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            bad += 1;
            continue;
        }
        match parse_line(line) {
            Ok(Some(_)) => good += 1,
            _ => bad += 1,
        }
    }
    match (good, bad) {
        (0, _) => 0,
        (_, 0) => 60,
        (g, b) if g >= 4 * b => 40,
        _ => 0,
    }
}
