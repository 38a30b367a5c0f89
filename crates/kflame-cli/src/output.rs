//! The output policy: data to stdout or `-o FILE`, messages to stderr.
//!
//! A failed write is an error naming where the data was going (exit 1); only a closed pipe
//! (`kflame ... | head`) ends the run quietly (exit 0, see `main.rs`).

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// Opens the data output: `-o FILE` (created or truncated), or stdout when absent or `-`.
/// Write errors name the destination (`cannot write to out.svg: No space left on device`).
pub(crate) fn open(path: Option<&Path>) -> Result<Box<dyn Write>> {
    match path {
        Some(p) if p != Path::new("-") => {
            let f = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            let named = Named { inner: f, dest: p.display().to_string() };
            Ok(Box::new(BufWriter::with_capacity(1 << 16, named)))
        }
        _ => Ok(Box::new(BufWriter::with_capacity(1 << 16, stdout()))),
    }
}

/// Stdout as a writer whose errors say "cannot write to stdout".
pub(crate) fn stdout() -> impl Write {
    Named { inner: io::stdout().lock(), dest: "stdout".to_string() }
}

/// A writer whose errors name where the data was going. The error kind is kept, so that a
/// closed pipe is still recognised as one.
struct Named<W> {
    inner: W,
    dest: String,
}

impl<W> Named<W> {
    fn annotate(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("cannot write to {}: {e}", self.dest))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.annotate(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.annotate(e))
    }
}

/// Writes a message line to stderr (diagnostics, notes, warnings).
#[allow(clippy::print_stderr)]
pub(crate) fn message(text: impl AsRef<str>) {
    let text = text.as_ref();
    if text.is_empty() {
        return;
    }
    let mut err = io::stderr().lock();
    for line in text.lines() {
        let _ = writeln!(err, "kflame: {line}");
    }
}

/// True when stderr is a terminal (progress lines are drawn only then).
#[allow(dead_code)]
pub(crate) fn stderr_is_terminal() -> bool {
    io::stderr().is_terminal()
}
