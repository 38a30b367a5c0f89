//! Read-only memory-mapped files (binaries and perf.data can be hundreds of megabytes; only
//! the pages looked at are read).

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

/// A file mapped read-only into memory.
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps `path`.
    #[allow(unsafe_code)]
    pub fn open(path: &Path) -> io::Result<MappedFile> {
        let file = File::open(path)?;
        if file.metadata()?.is_dir() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "is a directory"));
        }
        // SAFETY: the mapping is read-only and private. If another process truncates or
        // rewrites the file while it is mapped, reads may see the new bytes or fault; the
        // same holds for every profiler reading binaries (perf, samply), and the parsers
        // treat every byte as untrusted anyway. What is kept for long does not hold a map:
        // ELF symbol tables read their files (`elf.rs`) and own their names; maps serve
        // one reading of a perf.data file and its binaries' DWARF and unwind tables.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(MappedFile { map })
    }

    /// An image already in memory (a vDSO read from a process), copied into read-only
    /// anonymous memory so that it is used like a mapped file. Its pages are not backed by
    /// a file: they must never be discarded.
    pub fn from_bytes(data: &[u8]) -> io::Result<MappedFile> {
        if data.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty image"));
        }
        let mut map = memmap2::MmapMut::map_anon(data.len())?;
        map.copy_from_slice(data);
        let map = map.make_read_only()?;
        Ok(MappedFile { map })
    }
}

impl MappedFile {
    /// Drops the whole pages inside `range` from this process's memory, for files read once
    /// front to back (a 100 MB perf.data need not stay resident once its records are
    /// consumed). The bytes stay readable: touching them again reads them back from the
    /// page cache or the file. Returns where the released part ends (`range.start` when
    /// no whole page was inside), to continue from there.
    #[cfg(unix)]
    #[allow(unsafe_code)]
    pub fn release(&self, range: std::ops::Range<usize>) -> usize {
        const PAGE: usize = 4096;
        let start = range.start.div_ceil(PAGE) * PAGE;
        let end = range.end.min(self.map.len()) / PAGE * PAGE;
        if end <= start {
            return range.start;
        }
        // SAFETY: the mapping is private and never written, so MADV_DONTNEED only unmaps
        // clean copies of file pages: a later read faults the same bytes back in from the
        // file (the caveat of `open` about files changed on disk is unchanged). No
        // reference sees different contents, so Rust's aliasing rules hold. Failure (an
        // old kernel) only means the pages stay resident.
        let _ = unsafe {
            self.map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
        end
    }

    /// Without `madvise`, pages stay resident.
    #[cfg(not(unix))]
    pub fn release(&self, range: std::ops::Range<usize>) -> usize {
        range.start
    }
}

impl Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedFile({} bytes)", self.map.len())
    }
}
