//! Differential folded stacks: two profiles → `stack BEFORE AFTER` lines, the format of
//! FlameGraph's `difffolded.pl`, which `kflame flamegraph` draws in red and blue.

use std::io::{self, BufRead, Write};

use super::read::read_folded;
use super::{Meta, StackCounts, Weight};
use crate::diag::Diagnostics;

/// How to compare.
#[derive(Copy, Clone, Debug, Default)]
pub struct DiffOptions {
    /// Scale the first profile so that both have the same total. The scaled weights are
    /// exact to [`Weight::FRACTION_DIGITS`] decimals and add up to the second total exactly
    /// (each is rounded to the nearest 1e-9, the last units of rounding going to the largest
    /// remainders). FlameGraph's `difffolded.pl -n` and inferno's `diff-folded -n` instead
    /// round each weight down to a whole number, so that 10 and 5 scaled to a total of 25
    /// become 16 and 8 (total 24) there, 16.666666667 and 8.333333333 here.
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
    let mut lines: Vec<DiffLine> = before
        .iter()
        .map(|(s, w)| DiffLine { stack: s.into(), before: w, after: after.get(s).unwrap_or_default() })
        .collect();
    lines.extend(after.iter().filter(|(s, _)| before.get(s).is_none()).map(|(s, w)| DiffLine {
        stack: s.into(),
        before: Weight::ZERO,
        after: w,
    }));
    lines.sort_unstable_by(|a, b| a.stack.cmp(&b.stack));
    if opts.normalize && t1 != t2 && !t1.is_zero() {
        normalize(&mut lines, t1, t2);
    }
    lines
}

/// Scales every `before` weight by `to / from` (`from` being their sum): each is rounded to
/// the nearest representable weight so that the sum is exactly `to` (largest remainders
/// first, ties in stack order).
fn normalize(lines: &mut [DiffLine], from: Weight, to: Weight) {
    let mut w: Vec<Weight> = lines.iter().map(|l| l.before).collect();
    scale(&mut w, from, to);
    for (l, w) in lines.iter_mut().zip(w) {
        l.before = w;
    }
}

/// Scales `weights` (summing to `from`, not zero) by `to / from`: each rounded to the nearest
/// representable weight so that the sum is exactly `to` (largest remainders first, ties in
/// order).
pub(crate) fn scale(weights: &mut [Weight], from: Weight, to: Weight) {
    let mut remainders = Vec::with_capacity(weights.len());
    let mut sum: u128 = 0;
    for (i, w) in weights.iter_mut().enumerate() {
        // w <= from, so the quotient is at most `to` and fits.
        let (q, r) = mul_div(w.raw(), to.raw(), from.raw());
        *w = Weight::from_raw(q);
        sum = sum.saturating_add(q);
        if r != 0 {
            remainders.push((r, i));
        }
    }
    // Each quotient lost less than one unit: the deficit is below the number of remainders.
    let deficit = usize::try_from(to.raw().saturating_sub(sum)).unwrap_or(usize::MAX).min(remainders.len());
    if deficit > 0 {
        remainders.select_nth_unstable_by(deficit - 1, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in &remainders[..deficit] {
            weights[i] = Weight::from_raw(weights[i].raw() + 1);
        }
    }
}

/// `a * b / c` and its remainder, with a 256-bit product. The quotient must fit in a `u128`
/// (it does when `a <= c`); `c` must not be zero.
fn mul_div(a: u128, b: u128, c: u128) -> (u128, u128) {
    if let Some(p) = a.checked_mul(b) {
        return (p / c, p % c);
    }
    let (hi, lo) = mul_wide(a, b);
    // Long division, one bit at a time, of the 256-bit product by c.
    let (mut q, mut r) = (0u128, 0u128);
    for i in (0..256).rev() {
        let bit = if i >= 128 { (hi >> (i - 128)) & 1 } else { (lo >> i) & 1 };
        let carry = r >> 127;
        r = (r << 1) | bit;
        q <<= 1;
        if carry == 1 || r >= c {
            r = r.wrapping_sub(c);
            q |= 1;
        }
    }
    (q, r)
}

/// The full 256-bit product of `a` and `b`, as (high, low) halves.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = u64::MAX as u128;
    let (a1, a0) = (a >> 64, a & MASK);
    let (b1, b0) = (b >> 64, b & MASK);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 64) + (p01 & MASK) + (p10 & MASK);
    let lo = (p00 & MASK) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
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

    fn counts(lines: &[(&str, &str)]) -> StackCounts {
        let mut c = StackCounts::new();
        for (s, w) in lines {
            c.add(s.as_bytes(), Weight::parse(w.as_bytes()).unwrap());
        }
        c
    }

    fn normalized(before: &[(&str, &str)], after: &[(&str, &str)]) -> Vec<String> {
        let opts = DiffOptions { normalize: true, strip_hex: false };
        diff(&counts(before), &counts(after), opts).iter().map(|l| l.before.to_string()).collect()
    }

    #[test]
    fn normalizes_exactly_and_keeps_the_total() {
        // 10 and 5 scaled to a total of 25: 16 and 8 when rounded down (difffolded.pl, inferno).
        let n = normalized(&[("a", "10"), ("b", "5")], &[("a", "20"), ("c", "5")]);
        assert_eq!(n, ["16.666666667", "8.333333333", "0"]);
        // Exact quotients stay exact; 65 -> 80 scales 11 by 16/13.
        assert_eq!(normalized(&[("a", "3"), ("b", "1")], &[("a", "2")]), ["1.5", "0.5"]);
        let n = normalized(&[("a", "11"), ("b", "54")], &[("a", "80")]);
        assert_eq!(n, ["13.538461538", "66.461538462"]);
        // Three equal remainders: the missing unit goes to the first stack.
        let n = normalized(&[("a", "1"), ("b", "1"), ("c", "1")], &[("x", "1")]);
        assert_eq!(n, ["0.333333334", "0.333333333", "0.333333333", "0"]);
    }

    #[test]
    fn normalizes_huge_weights_without_overflow() {
        let big = u64::MAX.to_string();
        let after = [("a", big.as_str()), ("b", big.as_str()), ("c", big.as_str())];
        let before = [("a", "1"), ("b", "2")];
        let lines =
            diff(&counts(&before), &counts(&after), DiffOptions { normalize: true, strip_hex: false });
        let sum: Weight = lines.iter().map(|l| l.before).sum();
        assert_eq!(sum, counts(&after).total());
        // a: 3 * u64::MAX / 3 exactly.
        assert_eq!(lines[0].before, Weight::from_u64(u64::MAX));
        assert_eq!(mul_div(u128::MAX, u128::MAX, u128::MAX), (u128::MAX, 0));
        // (2^128 - 1) * 2^64 = 2^192 - 2^64: divided by 2^65, 2^127 - 1 remains 2^64.
        assert_eq!(mul_div(u128::MAX, 1 << 64, 1 << 65), (u128::MAX / 2, 1 << 64));
    }
}
