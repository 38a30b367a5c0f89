//! DWARF function names of an address, inline chain included (what `addr2line -i -f`
//! prints), read in-process with the `addr2line` crate (gimli).

use std::path::Path;
use std::sync::Arc;

use gimli::{EndianArcSlice, RunTimeEndian};
use object::{Object, ObjectSection};

use super::{MappedFile, SymbolError};

type Reader = EndianArcSlice<RunTimeEndian>;

/// The DWARF debug information of one ELF file (a binary built with `-g`, or its separate
/// debug file), parsed lazily: units are read on first lookup in their range.
pub struct DwarfNames {
    ctx: addr2line::Context<Reader>,
}

impl DwarfNames {
    /// Reads the DWARF sections of the ELF file at `path`. `Ok(None)` when it has no
    /// `.debug_info` (a binary without debug information).
    pub fn open(path: &Path) -> Result<Option<DwarfNames>, SymbolError> {
        let data =
            MappedFile::open(path).map_err(|source| SymbolError::Io { path: path.to_path_buf(), source })?;
        DwarfNames::parse(&data).map_err(|message| SymbolError::Format { path: path.to_path_buf(), message })
    }

    /// Reads the DWARF sections of an ELF image in memory (compressed sections are
    /// decompressed; the sections are copied, the image need not outlive the result).
    pub fn parse(data: &[u8]) -> Result<Option<DwarfNames>, String> {
        let file = object::File::parse(data).map_err(|e| format!("not a readable ELF file: {e}"))?;
        if file.section_by_name(".debug_info").is_none_or(|s| s.size() == 0) {
            return Ok(None);
        }
        let endian = if file.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let load = |id: gimli::SectionId| -> Result<Reader, String> {
            let section = if needed(id) { file.section_by_name(id.name()) } else { None };
            let bytes = match section {
                Some(s) => s.uncompressed_data().map_err(|e| format!("section {}: {e}", id.name()))?,
                None => std::borrow::Cow::Borrowed(&[][..]),
            };
            Ok(EndianArcSlice::new(Arc::from(&*bytes), endian))
        };
        let dwarf = gimli::Dwarf::load(load)?;
        let ctx = addr2line::Context::from_dwarf(dwarf).map_err(|e| format!("DWARF: {e}"))?;
        Ok(Some(DwarfNames { ctx }))
    }

    /// The raw (linkage, else plain) names of the functions at virtual address `addr`,
    /// innermost inlined function first and the function containing it last. Empty when
    /// no function's DWARF covers `addr` or the information is damaged.
    pub fn functions(&self, addr: u64) -> Vec<String> {
        let mut names = Vec::new();
        let Ok(mut frames) = self.ctx.find_frames(addr).skip_all_loads() else { return names };
        while let Ok(Some(frame)) = frames.next() {
            match frame.function.as_ref().map(|f| f.raw_name()) {
                Some(Ok(name)) => names.push(name.into_owned()),
                // A frame without a usable name: the chain cannot be named faithfully.
                _ => return Vec::new(),
            }
        }
        names
    }
}

/// The sections function names and inline chains are read from; the others (location
/// lists, macros, type units, indexes: most of the debug information of optimized code)
/// are neither copied nor decompressed.
fn needed(id: gimli::SectionId) -> bool {
    use gimli::SectionId as S;
    matches!(
        id,
        S::DebugAbbrev
            | S::DebugAddr
            | S::DebugAranges
            | S::DebugInfo
            | S::DebugLine
            | S::DebugLineStr
            | S::DebugRanges
            | S::DebugRngLists
            | S::DebugStr
            | S::DebugStrOffsets
    )
}

impl std::fmt::Debug for DwarfNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DwarfNames")
    }
}
