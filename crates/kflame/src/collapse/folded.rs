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

/// Confidence (0-100) that `head` (whole lines) is folded stacks: most of its records (lines
/// other than comments and blank lines, up to 200) are `stack count`, and none is an indented
/// frame line. One bad record among stacks of several frames is allowed, so that a short file
/// with one malformed line is still recognised; a file of `# unit=`/`# event=` headers alone
/// (an empty profile written by kflame) is recognised with a low score, and so is a lone
/// one-frame record without a header, too weak to claim an input on.
pub fn detect(head: &[u8]) -> u8 {
    let (mut good, mut bad, mut framed, mut header) = (0u32, 0u32, 0u32, false);
    for (_, line) in lines(head, 1).take(200) {
        if line.is_empty() {
            continue;
        }
        if line[0] == b'#' {
            header |= Meta::default().apply_comment(line);
            continue;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            bad += 1;
            continue;
        }
        match parse_line(line) {
            Ok(Some(l)) => {
                good += 1;
                framed += u32::from(memchr::memchr(b';', l.stack).is_some());
            }
            Ok(None) => {}
            Err(_) => bad += 1,
        }
    }
    match (good, bad) {
        (0, 0) if header => 30,
        (0, _) => 0,
        // One line of text that ends in a number is no evidence of a profile (a log line
        // "... to 38000"): a lone record needs frames or kflame's header to be claimed.
        (1, 0) if framed == 0 && !header => 20,
        (_, 0) => 60,
        (g, b) if g >= 4 * b => 40,
        (_, 1) if framed >= 1 => 40,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_counts_records_and_allows_one_bad_one() {
        assert_eq!(detect(b"a;b 1\na;c 2\n"), 60);
        assert_eq!(detect(b"a;b 1\nnot a stack\na;c 2\n"), 40, "one bad record among three");
        assert_eq!(detect(b"not a stack\na;b 1\n"), 40);
        assert_eq!(detect(b"one 1\nnot a stack\n"), 0, "one single-frame line is not enough");
        assert_eq!(detect(b"a;b 1\nbad\nworse\n"), 0);
        assert_eq!(detect(b"# unit=bytes\n# event=kmem:mm_page_alloc\n"), 30);
        assert_eq!(detect(b"# just a comment\n"), 0);
        assert_eq!(detect(b"hello world\nthis is prose\n"), 0);
    }
}
