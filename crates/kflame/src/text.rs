//! Line-oriented input: the one line length cap every reader applies, and a reader of lines
//! that keeps to it; [`lines`] numbers the lines of a block in memory.
//!
//! Every input kflame reads as text is cut into lines, and a line has to be held whole to be
//! parsed. Without a cap, one input without newlines (`/dev/zero`, a binary file, a corrupt
//! log) would be held in memory whole. So a line longer than [`MAX_LINE`] is not parsed: it
//! is read through to its end without being kept, counted under [`LINE_TOO_LONG`] with its
//! line number, and reading goes on with the next line. Memory stays bounded by the cap, not
//! by the input.

use std::io::{self, BufRead};

/// The longest line any reader parses: 16 MiB. A folded stack of 10,000 frames of 200-byte
/// C++ names is 2 MiB; nothing real comes near the cap, while it still bounds the memory one
/// line can take.
pub const MAX_LINE: usize = 16 << 20;

/// Diagnostic kind of a line longer than [`MAX_LINE`], skipped.
pub const LINE_TOO_LONG: &str = "line too long";

/// The diagnostic message of a line of `len` bytes (or more, when the input ended first)
/// that was skipped for being longer than [`MAX_LINE`].
pub fn line_too_long_message(len: u64) -> String {
    format!(
        "a line of at most {} MiB, found one of {} bytes (not parsed; reading went on with the \
         next line)",
        MAX_LINE >> 20,
        len
    )
}

/// Streams the lines of `input` to `each(number, line)`: 1-based numbers, the line without
/// its `\n` (a `\r` before it is left to the caller). A line longer than [`MAX_LINE`] is not
/// passed to `each`: `too_long(number, length)` is called instead, once the line has been
/// read through. Lines are taken from the reader's buffer without copying, except a line
/// that spans two buffer fills.
pub fn read_lines<R: BufRead, E: From<io::Error>>(
    mut input: R,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), E>,
    mut too_long: impl FnMut(u64, u64),
) -> Result<(), E> {
    let mut number = 0u64;
    // The start of a line that spans buffer fills.
    let mut carry: Vec<u8> = Vec::new();
    // Bytes of the current line dropped so far, once it is known to be too long.
    let mut dropped: Option<u64> = None;
    loop {
        let block = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        if block.is_empty() {
            break;
        }
        let mut pos = 0;
        while let Some(nl) = memchr::memchr(b'\n', &block[pos..]) {
            let line = &block[pos..pos + nl];
            number += 1;
            if let Some(d) = dropped.take() {
                too_long(number, d + line.len() as u64);
            } else if carry.is_empty() {
                if line.len() > MAX_LINE {
                    too_long(number, line.len() as u64);
                } else {
                    each(number, line)?;
                }
            } else if carry.len() + line.len() > MAX_LINE {
                too_long(number, (carry.len() + line.len()) as u64);
                carry.clear();
            } else {
                carry.extend_from_slice(line);
                each(number, &carry)?;
                carry.clear();
            }
            pos += nl + 1;
        }
        let rest = &block[pos..];
        match &mut dropped {
            Some(d) => *d += rest.len() as u64,
            None if carry.len() + rest.len() > MAX_LINE => {
                dropped = Some((carry.len() + rest.len()) as u64);
                carry = Vec::new();
            }
            None => carry.extend_from_slice(rest),
        }
        let n = block.len();
        input.consume(n);
    }
    if let Some(d) = dropped {
        too_long(number + 1, d);
    } else if !carry.is_empty() {
        each(number + 1, &carry)?;
    }
    Ok(())
}

/// One line handed out by [`LineReader`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// Line `number` (1-based), without its `\n` (a `\r` before it is left to the caller).
    Text(u64, &'a [u8]),
    /// Line `number` was longer than [`MAX_LINE`]: `length` bytes (or more, when the input
    /// ended first), read through without being kept.
    TooLong(u64, u64),
}

/// The pull form of [`read_lines`], for iterators that hand out one item at a time: the
/// same numbering and the same cap, each line copied once into a buffer it reuses.
#[derive(Debug)]
pub struct LineReader<R> {
    input: R,
    buf: Vec<u8>,
    number: u64,
}

impl<R: BufRead> LineReader<R> {
    /// Reads the lines of `input`.
    pub fn new(input: R) -> Self {
        LineReader { input, buf: Vec::new(), number: 0 }
    }

    /// The next line, `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buf.clear();
        // Bytes of the line dropped so far, once it is known to be too long.
        let mut dropped: Option<u64> = None;
        let mut seen = false;
        loop {
            let block = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if block.is_empty() {
                if !seen {
                    return Ok(None);
                }
                break;
            }
            seen = true;
            let (part, end) = match memchr::memchr(b'\n', block) {
                Some(nl) => (&block[..nl], Some(nl + 1)),
                None => (block, None),
            };
            match &mut dropped {
                Some(d) => *d += part.len() as u64,
                None if self.buf.len() + part.len() > MAX_LINE => {
                    dropped = Some((self.buf.len() + part.len()) as u64);
                    self.buf = Vec::new();
                }
                None => self.buf.extend_from_slice(part),
            }
            let used = end.unwrap_or(block.len());
            self.input.consume(used);
            if end.is_some() {
                break;
            }
        }
        self.number += 1;
        Ok(Some(match dropped {
            Some(len) => Line::TooLong(self.number, len),
            None => Line::Text(self.number, &self.buf),
        }))
    }
}

/// Iterates the lines of a block with their 1-based numbers, without the trailing `\n` or
/// `\r\n`.
pub fn lines(chunk: &[u8], first_line: u64) -> impl Iterator<Item = (u64, &[u8])> {
    let mut rest = chunk;
    let mut n = first_line;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        rest = next;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let num = n;
        n += 1;
        Some((num, line))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// The pull reader hands out what the push reader does, for every buffer size.
    #[test]
    fn line_reader_agrees_with_read_lines() {
        for cap in [1, 7, 4093, 1 << 16] {
            // The over-long line only with buffers that read it in reasonable time.
            let long = vec![b'x'; if cap > 1000 { MAX_LINE + 3 } else { 20 }];
            let mut input = b"a\r\n\nbb\n".to_vec();
            input.extend_from_slice(&long);
            input.extend_from_slice(b"\nlast");
            let want = std::cell::RefCell::new(Vec::new());
            read_lines::<_, io::Error>(
                BufReader::with_capacity(cap, &input[..]),
                |n, l| {
                    want.borrow_mut().push(format!("{n}:{}", String::from_utf8_lossy(l)));
                    Ok(())
                },
                |n, len| want.borrow_mut().push(format!("{n}:too long {len}")),
            )
            .unwrap();
            let want = want.into_inner();
            let mut got = Vec::new();
            let mut r = LineReader::new(BufReader::with_capacity(cap, &input[..]));
            while let Some(l) = r.next_line().unwrap() {
                got.push(match l {
                    Line::Text(n, l) => format!("{n}:{}", String::from_utf8_lossy(l)),
                    Line::TooLong(n, len) => format!("{n}:too long {len}"),
                });
            }
            assert_eq!(got, want, "buffer of {cap} bytes");
            assert_eq!(got.len(), 5);
        }
    }

    #[test]
    fn lines_strip_crlf_and_number() {
        let v: Vec<_> = lines(b"a\r\nb\n\nc", 10).collect();
        assert_eq!(v, vec![(10, &b"a"[..]), (11, &b"b"[..]), (12, &b""[..]), (13, &b"c"[..])]);
    }

    /// Numbered lines, and the numbers and lengths of the over-long ones.
    type Lines = (Vec<(u64, Vec<u8>)>, Vec<(u64, u64)>);

    fn collect(input: impl Read, cap: usize) -> Lines {
        let (mut lines, mut long) = (Vec::new(), Vec::new());
        read_lines::<_, io::Error>(
            BufReader::with_capacity(cap, input),
            |n, l| {
                lines.push((n, l.to_vec()));
                Ok(())
            },
            |n, len| long.push((n, len)),
        )
        .unwrap();
        (lines, long)
    }

    #[test]
    fn lines_across_buffer_fills_and_without_final_newline() {
        let (lines, long) = collect(&b"ab\ncdefgh\n\nlast"[..], 3);
        let want: Vec<(u64, Vec<u8>)> =
            vec![(1, b"ab".to_vec()), (2, b"cdefgh".to_vec()), (3, vec![]), (4, b"last".to_vec())];
        assert_eq!(lines, want);
        assert!(long.is_empty());
    }

    #[test]
    fn an_over_long_line_is_skipped_and_the_rest_read() {
        for cap in [1 << 16, MAX_LINE + 10] {
            let mut data = b"a;b 1\n".to_vec();
            data.resize(data.len() + MAX_LINE + 1, b'x');
            data.extend_from_slice(b"\nc;d 2\n");
            data.resize(data.len() + MAX_LINE + 5, b'y');
            let (lines, long) = collect(&data[..], cap);
            assert_eq!(lines, vec![(1, b"a;b 1".to_vec()), (3, b"c;d 2".to_vec())], "buffer {cap}");
            assert_eq!(long, vec![(2, MAX_LINE as u64 + 1), (4, MAX_LINE as u64 + 5)], "buffer {cap}");
        }
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_read() {
        let mut data = vec![b'z'; MAX_LINE];
        data.push(b'\n');
        let (lines, long) = collect(&data[..], 1 << 16);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].1.len(), MAX_LINE);
        assert!(long.is_empty());
    }
}
