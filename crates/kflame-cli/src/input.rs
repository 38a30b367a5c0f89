//! Opening inputs: files or stdin (`-`), with the first bytes available for format
//! detection without losing them.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use anyhow::{Context, Result};

/// Bytes looked at to detect a format.
pub(crate) const HEAD_LEN: usize = 64 * 1024;

/// An opened input: its display name, its head, and a reader positioned at the start.
pub(crate) struct Input {
    /// File name or `<stdin>`, used in every message about this input.
    pub(crate) name: String,
    /// Path of a regular file (None for stdin); binary formats (perf.data) reopen it.
    pub(crate) path: Option<PathBuf>,
    /// The first bytes (up to [`HEAD_LEN`]).
    pub(crate) head: Vec<u8>,
    rest: Box<dyn Read + Send>,
}

impl Input {
    /// Opens `path` (`-` for stdin) and reads its head.
    pub(crate) fn open(path: &str) -> Result<Input> {
        let (name, file_path, mut reader): (String, Option<PathBuf>, Box<dyn Read + Send>) = if path == "-" {
            ("<stdin>".into(), None, Box::new(io::stdin()))
        } else {
            let f = File::open(path).with_context(|| format!("cannot open {path}"))?;
            if f.metadata().is_ok_and(|m| m.is_dir()) {
                anyhow::bail!("{path} is a directory, expected a file");
            }
            (path.to_string(), Some(PathBuf::from(path)), Box::new(f))
        };
        let mut head = Vec::with_capacity(HEAD_LEN);
        (&mut reader)
            .take(HEAD_LEN as u64)
            .read_to_end(&mut head)
            .with_context(|| format!("cannot read {name}"))?;
        Ok(Input { name, path: file_path, head, rest: reader })
    }

    /// The whole input as a reader, head included.
    pub(crate) fn reader(self) -> impl Read + Send {
        io::Cursor::new(self.head).chain(self.rest)
    }
}

/// The inputs named on the command line; stdin when none.
pub(crate) fn paths_or_stdin(files: &[String]) -> Vec<String> {
    if files.is_empty() { vec!["-".to_string()] } else { files.to_vec() }
}
