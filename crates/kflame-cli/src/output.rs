//! The output policy: data to stdout or `-o FILE`, messages to stderr.
//!
//! A failed write is an error naming where the data was going (exit 1); only a closed pipe
//! (`kflame ... | head`) ends the run quietly (exit 0, see `main.rs`).

use std::fs::{self, File};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

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

/// The data output of a command that reads all its input first: `-o FILE` is written to a
/// temporary file beside it and renamed over it by [`Sink::finish`], so that a run that
/// fails (bad input, a write error) leaves an existing file as it was and no partial one.
/// stdout, and a `-o` naming something other than a regular file (`/dev/null`, a pipe), are
/// written directly.
pub(crate) struct Sink {
    out: BufWriter<Box<dyn Write>>,
    /// The temporary file and the file it becomes.
    rename: Option<(PathBuf, PathBuf)>,
}

/// Opens the data output as a [`Sink`]: `-o FILE`, or stdout when absent or `-`.
pub(crate) fn create(path: Option<&Path>) -> Result<Sink> {
    let Some(dest) = path.filter(|p| *p != Path::new("-")) else {
        return Ok(Sink { out: BufWriter::with_capacity(1 << 16, Box::new(stdout())), rename: None });
    };
    let cannot = || format!("cannot create {}", dest.display());
    // A symbolic link stays one: the file it points to is replaced.
    let target = match fs::symlink_metadata(dest) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(dest).unwrap_or_else(|_| dest.to_path_buf()),
        _ => dest.to_path_buf(),
    };
    let existing = fs::metadata(&target).ok();
    let special = [dest, target.as_path()].iter().any(|p| p.starts_with("/dev") || p.starts_with("/proc"));
    if special || existing.as_ref().is_some_and(|m| !m.is_file()) {
        let f = File::create(&target).with_context(cannot)?;
        let named = Named { inner: f, dest: dest.display().to_string() };
        return Ok(Sink { out: BufWriter::with_capacity(1 << 16, Box::new(named)), rename: None });
    }
    let file_name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = target.with_file_name(format!(".{file_name}.kflame-{}.tmp", std::process::id()));
    let f = File::create(&temp).with_context(cannot)?;
    if let Some(m) = existing {
        // The replaced file keeps its mode.
        let _ = f.set_permissions(m.permissions());
    }
    let named = Named { inner: f, dest: dest.display().to_string() };
    Ok(Sink { out: BufWriter::with_capacity(1 << 16, Box::new(named)), rename: Some((temp, target)) })
}

impl Sink {
    /// Completes the output: flushes it and puts the file in place.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.out.flush()?;
        if let Some((temp, target)) = self.rename.take()
            && let Err(e) = fs::rename(&temp, &target)
        {
            let _ = fs::remove_file(&temp);
            return Err(e).with_context(|| format!("cannot write {}", target.display()));
        }
        Ok(())
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Not finished: the run failed; the temporary file goes, the target stays as it was.
        if let Some((temp, _)) = self.rename.take() {
            let _ = fs::remove_file(temp);
        }
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

/// `1 trigger`, `2 triggers`, `0 triggers`: a count and its noun (plural with an `s`).
pub(crate) fn count(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kflame-sink-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn an_unfinished_output_leaves_the_file_as_it_was() {
        let d = dir("unfinished");
        let f = d.join("keep.svg");
        fs::write(&f, "old").unwrap();
        let mut sink = create(Some(&f)).unwrap();
        sink.write_all(b"half a graph").unwrap();
        drop(sink);
        assert_eq!(fs::read_to_string(&f).unwrap(), "old");
        assert_eq!(entries(&d), ["keep.svg"], "no temporary file left");
        let mut sink = create(Some(&d.join("new.svg"))).unwrap();
        sink.write_all(b"x").unwrap();
        drop(sink);
        assert_eq!(entries(&d), ["keep.svg"], "no empty file created");
    }

    #[test]
    fn a_finished_output_replaces_the_file_keeping_its_mode_and_links() {
        let d = dir("finished");
        let f = d.join("out.folded");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("link.folded");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let mut sink = create(Some(&link)).unwrap();
        sink.write_all(b"new").unwrap();
        sink.finish().unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(entries(&d), ["link.folded", "out.folded"]);
    }

    #[test]
    fn devices_are_written_directly() {
        let mut sink = create(Some(Path::new("/dev/null"))).unwrap();
        assert!(sink.rename.is_none());
        sink.write_all(b"gone").unwrap();
        sink.finish().unwrap();
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "still a device");
    }
}
