//! Read-only memory-mapped files (binaries and perf.data can be hundreds of megabytes; only
//! the pages looked at are read).

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;

/// A file mapped read-only into memory (or an image already in memory, such as a vDSO
/// read from a process).
pub struct MappedFile {
    map: Bytes,
}

enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
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
        Ok(MappedFile { map: Bytes::Mapped(map) })
    }

    /// An image already in memory, used like a mapped file.
    pub fn from_bytes(data: Vec<u8>) -> MappedFile {
        MappedFile { map: Bytes::Owned(data) }
    }
}

impl Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.map {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedFile({} bytes)", self.len())
    }
}
