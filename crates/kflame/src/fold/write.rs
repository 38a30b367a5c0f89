//! Writing folded output.

use std::io::{self, Write};

use super::{Meta, Stacks, Weight};

/// Writes `meta`'s header (if any) then every stack as `stack weight\n`, sorted for counts,
/// in time order for ordered stacks. Output is buffered in large blocks.
pub fn write_folded<W: Write>(out: &mut W, stacks: &Stacks, meta: &Meta) -> io::Result<()> {
    out.write_all(meta.header().as_bytes())?;
    write_lines(out, stacks.in_output_order().into_iter())
}

/// Writes `stack weight\n` lines.
pub fn write_lines<'a, W: Write>(
    out: &mut W,
    lines: impl Iterator<Item = (&'a [u8], Weight)>,
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 16);
    for (stack, weight) in lines {
        buf.extend_from_slice(stack);
        buf.push(b' ');
        weight.write_to(&mut buf);
        buf.push(b'\n');
        if buf.len() >= (1 << 16) - 512 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::{StackCounts, Unit};

    #[test]
    fn writes_sorted_with_header() {
        let mut c = StackCounts::new();
        c.add(b"z;y", Weight::from_u64(2));
        c.add(b"a", Weight::parse(b"1.5").unwrap());
        let mut out = Vec::new();
        write_folded(&mut out, &Stacks::Counts(c), &Meta::with_unit(Unit::Bytes)).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "# unit=bytes\na 1.5\nz;y 2\n");
    }
}
