//! Differential folded stacks: two profiles → `stack BEFORE AFTER` lines, the format of
//! FlameGraph's `difffolded.pl`, which `kflame flamegraph` draws in red and blue.

use std::io::{self, BufRead, Write};

use super::read::read_folded;
use super::{Meta, StackCounts, Weight};
use crate::diag::Diagnostics;

/// How to compare.
#[derive(Copy, Clone, Debug, Default)]
pub struct DiffOptions {
    /// Scale the first profile so both have the same total (whole units, rounded down).
    pub normalize: bool,
    /// Replace hexadecimal addresses (`0x1f2e`) by `0x...`, so that stacks differing only
    /// in addresses compare equal.
    pub strip_hex: bool,
}

/// One output line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    /// Frames joined by `;`.
    pub stack: Box<[u8]>,
    /// Weight in the first profile (0 when absent).
    pub before: Weight,
    /// Weight in the second profile (0 when absent).
    pub after: Weight,
}

/// Reads one folded profile for comparison, summing duplicate stacks.
pub fn read_profile<R: BufRead>(
    input: R,
    opts: DiffOptions,
    meta: &mut Meta,
    diag: &mut Diagnostics,
) -> io::Result<StackCounts> {
    let mut counts = StackCounts::new();
    let mut scratch = Vec::new();
    read_folded(input, meta, diag, |line| {
        if opts.strip_hex {
            strip_hex(line.stack, &mut scratch);
            counts.add(&scratch, line.weight);
        } else {
            counts.add(line.stack, line.weight);
        }
    })?;
    Ok(counts)
}

/// Every stack of either profile with both weights, sorted by stack.
pub fn diff(before: &StackCounts, after: &StackCounts, opts: DiffOptions) -> Vec<DiffLine> {
    let (t1, t2) = (before.total(), after.total());
    let scale =
        |w: Weight| if opts.normalize && t1 != t2 && !t1.is_zero() { normalized(w, t1, t2) } else { w };
    let mut lines: Vec<DiffLine> = before
        .iter()
        .map(|(s, w)| DiffLine { stack: s.into(), before: scale(w), after: after.get(s).unwrap_or_default() })
        .collect();
    lines.extend(after.iter().filter(|(s, _)| before.get(s).is_none()).map(|(s, w)| DiffLine {
        stack: s.into(),
        before: Weight::ZERO,
        after: w,
    }));
    lines.sort_unstable_by(|a, b| a.stack.cmp(&b.stack));
    lines
}

/// `w * to / from`, rounded down to whole units.
fn normalized(w: Weight, from: Weight, to: Weight) -> Weight {
    let exact = w.raw().checked_mul(to.raw()).map(|p| p / from.raw() / Weight::ONE.raw());
    let whole = match exact {
        Some(v) => u64::try_from(v).unwrap_or(u64::MAX),
        None => (w.as_f64() * to.as_f64() / from.as_f64()).floor() as u64,
    };
    Weight::from_u64(whole)
}

/// Writes `stack before after` lines.
pub fn write_diff<W: Write>(out: &mut W, lines: &[DiffLine]) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 16);
    for l in lines {
        buf.extend_from_slice(&l.stack);
        buf.push(b' ');
        l.before.write_to(&mut buf);
        buf.push(b' ');
        l.after.write_to(&mut buf);
        buf.push(b'\n');
        if buf.len() > (1 << 16) - 1024 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

/// Copies `stack` into `out` with every `0x<hex digits>` replaced by `0x...`.
fn strip_hex(stack: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < stack.len() {
        if stack[i] == b'0' && stack.get(i + 1) == Some(&b'x') {
            let digits = stack[i + 2..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
            if digits > 0 {
                out.extend_from_slice(b"0x...");
                i += 2 + digits;
                continue;
            }
        }
        out.push(stack[i]);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_hex_addresses() {
        let mut out = Vec::new();
        strip_hex(b"a;0x234f2abc;b;0xF1BDE348;0x;c0x1", &mut out);
        assert_eq!(out, b"a;0x...;b;0x...;0x;c0x...");
    }

    #[test]
    fn normalizes_down() {
        assert_eq!(normalized(Weight::from_u64(11), Weight::from_u64(65), Weight::from_u64(80)).whole(), 13);
    }
}
