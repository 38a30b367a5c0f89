//! One recorded binary's symbols read from its file: where the file is, and why a binary
//! gave none. A leaf: the DSO table, the prefetch thread and the special objects use it.

use std::path::{Path, PathBuf};

use crate::symbols::ElfSymbols;

/// Why a binary gave no symbols (reported once per binary as a note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    NotFound,
    BuildIdMismatch,
    Unreadable(String),
}

/// Where the file of a DSO named `name` is under `root` (absolute paths only).
pub(crate) fn file_path(root: &Path, name: &str) -> Option<PathBuf> {
    let p = root.join(name.strip_prefix('/')?);
    p.is_file().then_some(p)
}

/// The symbols of the binary perf calls `name`, if it is there and is the recorded one.
pub(crate) fn load_symbols(root: &Path, name: &str, build_id: Option<&[u8]>) -> Result<ElfSymbols, Missing> {
    let path = file_path(root, name).ok_or(Missing::NotFound)?;
    let s = ElfSymbols::open(&path, root).map_err(|e| Missing::Unreadable(e.to_string()))?;
    if build_id.is_some_and(|w| s.build_id().is_some_and(|got| got != w)) {
        return Err(Missing::BuildIdMismatch);
    }
    Ok(s)
}
