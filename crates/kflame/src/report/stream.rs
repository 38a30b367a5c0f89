//! [`reports`]: the reports of a log read from a stream, one at a time.

use std::io::{self, BufRead};

use super::{Report, ReportExtractor};
use crate::diag::Diagnostics;
use crate::text::{LINE_TOO_LONG, Line, LineReader, line_too_long_message};

/// The kernel reports of the log `input`, in the order they complete, each as soon as it
/// does; memory stays bounded as for [`ReportExtractor`]. A line longer than
/// [`MAX_LINE`](crate::text::MAX_LINE) is skipped and counted in
/// [`Reports::diagnostics`]. A read error ends the iteration after it is returned.
///
/// ```
/// let log = &b"[ 1.0] WARNING: CPU: 0 PID: 1 at fs/x.c:10 x_write+0x1/0x2\n\
///              [ 1.0] ---[ end trace 0000000000000000 ]---\n"[..];
/// let mut it = kflame::report::reports(log);
/// let titles: Vec<String> = it.by_ref().map(|r| r.map(|r| r.title)).collect::<Result<_, _>>()?;
/// assert_eq!(titles.len(), 1);
/// assert_eq!(it.diagnostics().skipped(), 0);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn reports<R: BufRead>(input: R) -> Reports<R> {
    Reports {
        lines: LineReader::new(input),
        x: ReportExtractor::new(),
        diag: Diagnostics::new(),
        ended: false,
    }
}

/// The iterator of [`reports`].
#[derive(Debug)]
pub struct Reports<R> {
    lines: LineReader<R>,
    x: ReportExtractor,
    diag: Diagnostics,
    ended: bool,
}

impl<R> Reports<R> {
    /// Lines skipped so far (too long to parse), with the first one's number.
    pub fn diagnostics(&self) -> &Diagnostics {
        &self.diag
    }
}

impl<R: BufRead> Iterator for Reports<R> {
    type Item = io::Result<Report>;

    fn next(&mut self) -> Option<io::Result<Report>> {
        loop {
            if let Some(r) = self.x.pop() {
                return Some(Ok(r));
            }
            if self.ended {
                return None;
            }
            match self.lines.next_line() {
                Ok(Some(Line::Text(n, line))) => {
                    self.x.push_line(n, line.strip_suffix(b"\r").unwrap_or(line))
                }
                Ok(Some(Line::TooLong(n, len))) => {
                    self.diag.skip(LINE_TOO_LONG, n, || line_too_long_message(len));
                }
                Ok(None) => {
                    self.x.finish();
                    self.ended = true;
                }
                Err(e) => {
                    self.ended = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
