//! DWARF function names of an address, inline chain included (what `addr2line -i -f`
//! prints), read in-process with the `addr2line` crate (gimli).

use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use gimli::RunTimeEndian;
use object::{CompressionFormat, Object, ObjectSection};

use super::{MappedFile, SymbolError};

type Reader = gimli::EndianReader<RunTimeEndian, Bytes>;

/// The bytes of one DWARF section: a range of the mapped file when it is stored
/// uncompressed (the usual case: no copy of debug files that run to hundreds of MB), else
/// decompressed (or copied) into memory of its own.
#[derive(Clone, Debug)]
enum Bytes {
    Mapped(Arc<MappedFile>, Range<usize>),
    Owned(Arc<[u8]>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(file, range) => file.get(range.clone()).unwrap_or_default(),
            Bytes::Owned(bytes) => bytes,
        }
    }
}

// SAFETY: the bytes a `Bytes` derefs to live in a memory map or a shared buffer that its
// `Arc` keeps alive and that never moves: moving or cloning the `Bytes` value leaves the
// address of the bytes unchanged, which is what these marker traits promise to gimli.
#[allow(unsafe_code)]
unsafe impl gimli::StableDeref for Bytes {}
#[allow(unsafe_code)]
unsafe impl gimli::CloneStableDeref for Bytes {}

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
        let data = Arc::new(data);
        DwarfNames::load(&data, Some(&data))
            .map_err(|message| SymbolError::Format { path: path.to_path_buf(), message })
    }

    /// Reads the DWARF sections of an ELF image in memory (compressed sections are
    /// decompressed; the sections are copied, the image need not outlive the result).
    pub fn parse(data: &[u8]) -> Result<Option<DwarfNames>, String> {
        DwarfNames::load(data, None)
    }

    /// The DWARF of `data`; its uncompressed sections are read in place when `data` is
    /// the mapped file `mapped`.
    fn load(data: &[u8], mapped: Option<&Arc<MappedFile>>) -> Result<Option<DwarfNames>, String> {
        let file = object::File::parse(data).map_err(|e| format!("not a readable ELF file: {e}"))?;
        if file.section_by_name(".debug_info").is_none_or(|s| s.size() == 0) {
            return Ok(None);
        }
        let endian = if file.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let load = |id: gimli::SectionId| -> Result<Reader, String> {
            let Some(section) = file.section_by_name(id.name()).filter(|_| needed(id)) else {
                return Ok(Reader::new(Bytes::Owned(Arc::from(&[][..])), endian));
            };
            let in_place =
                section.compressed_file_range().ok().filter(|r| r.format == CompressionFormat::None);
            let bytes = match (mapped, in_place) {
                (Some(map), Some(r)) => {
                    let start = usize::try_from(r.offset).map_err(|e| e.to_string())?;
                    let end = usize::try_from(r.offset + r.uncompressed_size).map_err(|e| e.to_string())?;
                    if end > map.len() {
                        return Err(format!("section {} runs past the end of the file", id.name()));
                    }
                    Bytes::Mapped(Arc::clone(map), start..end)
                }
                _ => {
                    let data =
                        section.uncompressed_data().map_err(|e| format!("section {}: {e}", id.name()))?;
                    Bytes::Owned(Arc::from(&*data))
                }
            };
            Ok(Reader::new(bytes, endian))
        };
        let dwarf = gimli::Dwarf::load(load)?;
        let ctx = addr2line::Context::from_dwarf(dwarf).map_err(|e| format!("DWARF: {e}"))?;
        Ok(Some(DwarfNames { ctx }))
    }

    /// The raw (linkage, else plain) names of the functions at virtual address `addr`,
    /// innermost inlined function first and the function containing it last. Empty when
    /// no function's DWARF covers `addr` or the information is damaged.
    pub fn functions(&self, addr: u64) -> Vec<String> {
        self.frames(addr).into_iter().map(|f| f.name).collect()
    }

    /// The functions at virtual address `addr` with what symbolizers that fall back on
    /// the symbol table need to know about them (see [`DwarfFrame`]), innermost first.
    pub fn frames(&self, addr: u64) -> Vec<DwarfFrame> {
        // No range ends past the last address: none covers it (and the lookup would compute
        // the end of a one-byte range there, which overflows).
        if addr == u64::MAX {
            return Vec::new();
        }
        let unit = self.ctx.find_dwarf_and_unit(addr).skip_all_loads();
        let mut out = Vec::new();
        let Ok(mut frames) = self.ctx.find_frames(addr).skip_all_loads() else { return out };
        while let Ok(Some(frame)) = frames.next() {
            let Some(Ok(name)) = frame.function.as_ref().map(|f| f.raw_name()) else {
                // A frame without a usable name: the chain cannot be named faithfully.
                return Vec::new();
            };
            let name = name.into_owned();
            let language = frame.function.as_ref().and_then(|f| f.language);
            let die = frame.dw_die_offset.zip(unit.as_ref());
            let entry = die.and_then(|(off, unit)| first_address(unit, off));
            let unit_offset = unit.as_ref().map(|u| u.header.offset().0);
            let id = (unit_offset.unwrap_or(0) as u64, frame.dw_die_offset.map_or(u64::MAX, |o| o.0 as u64));
            let linkage = is_linkage_name(&name, language);
            out.push(DwarfFrame { name, linkage, entry, id });
        }
        out
    }
}

/// One function (or inlined instance) at an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DwarfFrame {
    /// `DW_AT_linkage_name`, else `DW_AT_name` (following abstract origins).
    pub name: String,
    /// Whether `name` is the symbol-level name: a mangled linkage name, or any name in a
    /// language without mangling (C). A plain `DW_AT_name` of C++ or Rust is not: binutils
    /// then names the function after the symbol table.
    pub linkage: bool,
    /// The first address of the DIE's first range (its `low_pc`).
    pub entry: Option<u64>,
    /// Identifies the DIE within the file (unit offset, DIE offset in the unit).
    pub id: (u64, u64),
}

/// binutils' rule: names of languages with a mangling scheme count as linkage names only
/// when mangled.
fn is_linkage_name(name: &str, language: Option<gimli::DwLang>) -> bool {
    use gimli::constants as c;
    let mangled_language = matches!(
        language,
        Some(
            c::DW_LANG_C_plus_plus
                | c::DW_LANG_C_plus_plus_03
                | c::DW_LANG_C_plus_plus_11
                | c::DW_LANG_C_plus_plus_14
                | c::DW_LANG_Rust
                | c::DW_LANG_D
                | c::DW_LANG_ObjC_plus_plus
                | c::DW_LANG_Java
        )
    );
    !mangled_language || name.starts_with("_Z") || name.starts_with("_R")
}

/// The start of the first address range of the DIE at `offset`.
fn first_address(unit: &gimli::UnitRef<'_, Reader>, offset: gimli::UnitOffset) -> Option<u64> {
    let entry = unit.entry(offset).ok()?;
    let mut ranges = unit.die_ranges(&entry).ok()?;
    ranges.next().ok().flatten().map(|r| r.begin)
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
