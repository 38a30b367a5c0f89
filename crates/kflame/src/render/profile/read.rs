//! Reading folded text into a [`Profile`] through [`crate::fold::read::read_folded_lines`];
//! malformed lines are counted.

use std::io::BufRead;

use super::{INVALID_UTF8, Profile, ReadError};
use crate::diag::Diagnostics;
use crate::fold::Meta;
use crate::fold::read::{self, FoldedLine};

impl Profile {
    /// Reads one folded input and returns how many of its lines were stacks. Malformed
    /// lines are skipped into `diag`; a unit that conflicts with earlier inputs is an error.
    pub fn read<R: BufRead>(&mut self, input: R, diag: &mut Diagnostics) -> Result<u64, ReadError> {
        let (meta, stacks) = self.read_stacks(input, diag).map_err(ReadError::Io)?;
        self.inputs += 1;
        if self.inputs == 1 {
            self.meta = meta;
        } else {
            self.meta.merge(&meta).map_err(ReadError::Units)?;
        }
        Ok(stacks)
    }

    /// Reads one folded input's stacks like [`Profile::read`] but leaves [`Profile::meta`]
    /// alone: returns the input's own metadata, and how many of its lines were stacks, for
    /// callers that combine the units of named inputs themselves ([`crate::fold::MetaMerge`]).
    pub fn read_stacks<R: BufRead>(
        &mut self,
        input: R,
        diag: &mut Diagnostics,
    ) -> std::io::Result<(Meta, u64)> {
        let mut meta = Meta::default();
        let mut stacks = 0;
        read::read_folded_lines(input, &mut meta, diag, |lineno, line, diag| {
            stacks += u64::from(self.add_line(lineno, line, diag));
        })?;
        Ok((meta, stacks))
    }

    /// Adds one line; false when it was skipped.
    fn add_line(&mut self, lineno: u64, line: FoldedLine<'_>, diag: &mut Diagnostics) -> bool {
        let before = line.before.unwrap_or_default();
        if self.add_bytes(line.stack, line.weight, before).is_ok() {
            self.differential |= line.before.is_some();
            true
        } else {
            diag.skip(INVALID_UTF8, lineno, || {
                format!("a UTF-8 stack, found invalid bytes in `{}`", read::show(line.stack))
            });
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn lines_across_block_boundaries() {
        let text = b"# unit=ns\na;b;c 1\nbad\na;b 2\r\nlast;line 3";
        let mut p = Profile::new(true, false);
        let mut diag = Diagnostics::new();
        assert_eq!(p.read(BufReader::with_capacity(3, &text[..]), &mut diag).unwrap(), 3);
        assert_eq!(p.len(), 3);
        assert_eq!(p.total(), crate::fold::Weight::from_u64(6));
        assert_eq!(diag.get(read::kinds::NO_COUNT).unwrap().first_line, 3);
        assert_eq!(p.meta.unit, crate::fold::Unit::Nanoseconds);
    }

    #[test]
    fn an_over_long_line_is_skipped_and_the_rest_read() {
        let mut text = b"a;b 1\n".to_vec();
        text.resize(text.len() + crate::text::MAX_LINE + 1, b'x');
        text.extend_from_slice(b" 5\nc 2\n");
        let mut p = Profile::new(false, false);
        let mut diag = Diagnostics::new();
        p.read(BufReader::new(&text[..]), &mut diag).unwrap();
        p.finish();
        assert_eq!(p.len(), 2);
        assert_eq!(p.total(), crate::fold::Weight::from_u64(3));
        let long = diag.get(crate::text::LINE_TOO_LONG).expect("reported");
        assert_eq!((long.count, long.first_line), (1, 2));
        assert_eq!(diag.skipped(), 1);
    }
}
