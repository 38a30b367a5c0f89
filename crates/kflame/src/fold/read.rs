//! Reading folded files (one or two weight columns), streaming, with diagnostics.
//!
//! Accepted per line: `stack WEIGHT` or, for differential input, `stack BEFORE AFTER`
//! (FlameGraph's `difffolded.pl` output). Separators are spaces or tabs; a trailing CR is
//! dropped. Comment lines starting with `#` carry metadata ([`super::Meta`]); blank lines are
//! ignored. Anything else is skipped, counted by kind with the first line number.

use std::io::BufRead;

use super::{Meta, Weight};
use crate::diag::Diagnostics;

/// One parsed folded line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldedLine<'a> {
    /// Frames joined by `;`.
    pub stack: &'a [u8],
    /// The weight (for differential input: the *second* column, as FlameGraph draws it).
    pub weight: Weight,
    /// The first column of differential input.
    pub before: Option<Weight>,
}

/// Kinds of malformed folded lines.
pub mod kinds {
    /// No weight at the end of the line.
    pub const NO_COUNT: &str = "no count";
    /// A weight that is not a non-negative decimal.
    pub const BAD_COUNT: &str = "bad count";
    /// A weight but no frames.
    pub const EMPTY_STACK: &str = "empty stack";
    /// A NUL byte in the line.
    pub const NUL_BYTE: &str = "NUL byte";
}

/// Parses one line (without its newline). `Ok(None)` for blank lines.
pub fn parse_line(line: &[u8]) -> Result<Option<FoldedLine<'_>>, (&'static str, String)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let trimmed = trim_end(line);
    if trimmed.is_empty() {
        return Ok(None);
    }
    if memchr::memchr(0, trimmed).is_some() {
        return Err((kinds::NUL_BYTE, "a stack and a count, found a NUL byte".into()));
    }
    let (rest, last) = split_last_field(trimmed);
    if rest.is_empty() {
        return Err((kinds::NO_COUNT, format!("`stack count`, found `{}`", show(trimmed))));
    }
    let weight = match Weight::parse(last) {
        Ok(w) => w,
        Err(e) => {
            let kind = if looks_numeric(last) { kinds::BAD_COUNT } else { kinds::NO_COUNT };
            return Err((kind, format!("`stack count`, {e}: `{}`", show(last))));
        }
    };
    // A second numeric column makes this a differential line.
    let (stack, before) = {
        let (r2, prev) = split_last_field(trim_end(rest));
        match (r2.is_empty(), Weight::parse(prev)) {
            (false, Ok(b)) => (trim_end(r2), Some(b)),
            _ => (trim_end(rest), None),
        }
    };
    if stack.is_empty() {
        return Err((kinds::EMPTY_STACK, "frames before the count, found none".into()));
    }
    Ok(Some(FoldedLine { stack, weight, before }))
}

fn looks_numeric(s: &[u8]) -> bool {
    s.first().is_some_and(|b| b.is_ascii_digit() || *b == b'-' || *b == b'.')
}

fn trim_end(s: &[u8]) -> &[u8] {
    let end = s.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(0, |i| i + 1);
    &s[..end]
}

fn split_last_field(s: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memrchr2(b' ', b'\t', s) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (&[], s),
    }
}

/// A short printable excerpt of untrusted bytes for messages.
pub fn show(s: &[u8]) -> String {
    let mut t = String::from_utf8_lossy(&s[..s.len().min(80)]).into_owned();
    t.retain(|c| !c.is_control());
    if s.len() > 80 {
        t.push('…');
    }
    t
}

/// Streams a folded file, calling `each` for every valid line; metadata comments update
/// `meta`, malformed lines go to `diag`. Lines may be as long as [`crate::text::MAX_LINE`];
/// longer ones are skipped into `diag`.
pub fn read_folded<R: BufRead>(
    input: R,
    meta: &mut Meta,
    diag: &mut Diagnostics,
    mut each: impl FnMut(FoldedLine<'_>),
) -> std::io::Result<()> {
    read_folded_lines(input, meta, diag, |_, line, _| each(line))
}

/// [`read_folded`] for callers that report their own problems with a line: `each` also gets
/// the line number and the diagnostics. Lines are read through [`crate::text::read_lines`]:
/// a line longer than [`crate::text::MAX_LINE`] is skipped (counted under
/// [`crate::text::LINE_TOO_LONG`]) and the lines after it are still read.
pub fn read_folded_lines<R: BufRead>(
    input: R,
    meta: &mut Meta,
    diag: &mut Diagnostics,
    mut each: impl FnMut(u64, FoldedLine<'_>, &mut Diagnostics),
) -> std::io::Result<()> {
    let diag = std::cell::RefCell::new(diag);
    crate::text::read_lines(
        input,
        |lineno, line| {
            let diag = &mut **diag.borrow_mut();
            if line.first() == Some(&b'#') {
                meta.apply_comment(line.strip_suffix(b"\r").unwrap_or(line));
                return Ok::<(), std::io::Error>(());
            }
            match parse_line(line) {
                Ok(Some(l)) => each(lineno, l, diag),
                Ok(None) => {}
                Err((kind, msg)) => diag.skip(kind, lineno, || msg),
            }
            Ok(())
        },
        |lineno, len| {
            diag.borrow_mut()
                .skip(crate::text::LINE_TOO_LONG, lineno, || crate::text::line_too_long_message(len))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_double_columns() {
        let l = parse_line(b"a;b c 12\r").unwrap().unwrap();
        assert_eq!((l.stack, l.weight, l.before), (&b"a;b c"[..], Weight::from_u64(12), None));
        let d = parse_line(b"a;b 3 4").unwrap().unwrap();
        assert_eq!(
            (d.stack, d.before, d.weight),
            (&b"a;b"[..], Some(Weight::from_u64(3)), Weight::from_u64(4))
        );
        assert_eq!(parse_line(b"   ").unwrap(), None);
    }

    #[test]
    fn classifies_bad_lines() {
        assert_eq!(parse_line(b"a;b").unwrap_err().0, kinds::NO_COUNT);
        assert_eq!(parse_line(b"a;b -3").unwrap_err().0, kinds::BAD_COUNT);
        assert_eq!(parse_line(b"12").unwrap_err().0, kinds::NO_COUNT);
        assert_eq!(parse_line(b"a\0b 1").unwrap_err().0, kinds::NUL_BYTE);
    }

    #[test]
    fn streams_with_metadata() {
        let text = b"# unit=bytes\na;b 4096\nbogus\n\na 1\n";
        let mut meta = Meta::default();
        let mut diag = Diagnostics::new();
        let mut seen = Vec::new();
        read_folded(&text[..], &mut meta, &mut diag, |l| seen.push((l.stack.to_vec(), l.weight))).unwrap();
        assert_eq!(meta.unit, super::super::Unit::Bytes);
        assert_eq!(seen.len(), 2);
        assert_eq!(diag.get(kinds::NO_COUNT).unwrap().first_line, 3);
    }
}
