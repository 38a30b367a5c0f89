//! The output policy: data to stdout or `-o FILE`, messages to stderr.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::{Context, Result};

/// Opens the data output: `-o FILE` (created or truncated), or stdout when absent or `-`.
pub(crate) fn open(path: Option<&Path>) -> Result<Box<dyn Write>> {
    match path {
        Some(p) if p != Path::new("-") => {
            let f = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            Ok(Box::new(BufWriter::with_capacity(1 << 16, f)))
        }
        _ => Ok(Box::new(BufWriter::with_capacity(1 << 16, io::stdout().lock()))),
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
