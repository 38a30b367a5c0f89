//! Reading folded text into a [`Profile`]: whole blocks are scanned for lines (no copy per
//! line), each line parsed by [`crate::fold::read::parse_line`]; malformed lines are counted.

use std::io::{BufRead, ErrorKind};

use super::{INVALID_UTF8, Profile, ReadError};
use crate::diag::Diagnostics;
use crate::fold::Meta;
use crate::fold::read::{self, FoldedLine};

struct LineReader<'a> {
    profile: &'a mut Profile,
    diag: &'a mut Diagnostics,
    meta: Meta,
    lineno: u64,
}

impl Profile {
    /// Reads one folded input. Malformed lines are skipped into `diag`; a unit that
    /// conflicts with earlier inputs is an error.
    pub fn read<R: BufRead>(&mut self, mut input: R, diag: &mut Diagnostics) -> Result<(), ReadError> {
        let mut r = LineReader { profile: self, diag, meta: Meta::default(), lineno: 0 };
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let block = match input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadError::Io(e)),
            };
            if block.is_empty() {
                break;
            }
            let mut pos = 0;
            while let Some(nl) = memchr::memchr(b'\n', &block[pos..]) {
                let line = &block[pos..pos + nl];
                if carry.is_empty() {
                    r.line(line);
                } else {
                    carry.extend_from_slice(line);
                    r.line(&carry);
                    carry.clear();
                }
                pos += nl + 1;
            }
            carry.extend_from_slice(&block[pos..]);
            let n = block.len();
            input.consume(n);
        }
        if !carry.is_empty() {
            r.line(&carry);
        }
        let meta = r.meta;
        self.meta.merge(&meta).map_err(ReadError::Units)
    }
}

impl LineReader<'_> {
    fn line(&mut self, line: &[u8]) {
        self.lineno += 1;
        if line.first() == Some(&b'#') {
            self.meta.apply_comment(line.strip_suffix(b"\r").unwrap_or(line));
            return;
        }
        match read::parse_line(line) {
            Ok(Some(l)) => self.add(l),
            Ok(None) => {}
            Err((kind, msg)) => self.diag.skip(kind, self.lineno, || msg),
        }
    }

    fn add(&mut self, line: FoldedLine<'_>) {
        let before = line.before.unwrap_or_default();
        if self.profile.add_bytes(line.stack, line.weight, before).is_ok() {
            self.profile.differential |= line.before.is_some();
        } else {
            self.diag.skip(INVALID_UTF8, self.lineno, || {
                format!("a UTF-8 stack, found invalid bytes in `{}`", read::show(line.stack))
            });
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
        p.read(BufReader::with_capacity(3, &text[..]), &mut diag).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.total(), crate::fold::Weight::from_u64(6));
        assert_eq!(diag.get(read::kinds::NO_COUNT).unwrap().first_line, 3);
        assert_eq!(p.meta.unit, crate::fold::Unit::Nanoseconds);
    }
}
