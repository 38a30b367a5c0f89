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
        // treat every byte as untrusted anyway.
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
