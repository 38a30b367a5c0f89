//! `func+0x1a/0x80` → source line, through the symbol table and DWARF line tables of a
//! `vmlinux` (the `object` and `addr2line` crates).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use kflame::symbols::MappedFile;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use serde::Serialize;

use super::SourceError;

/// A source line of an address, with the functions inlined there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceLine {
    /// File (as DWARF names it, made relative to the tree when found there).
    pub file: String,
    /// Line (1-based).
    pub line: u32,
    /// The inline chain at the address, innermost first, `function (file:line)`; empty when
    /// nothing was inlined there.
    pub inlined: Vec<String>,
    /// The address looked up (the return address minus one for a caller's frame).
    pub address: String,
}

/// A kernel image with its symbols and DWARF.
pub struct Vmlinux {
    path: PathBuf,
    map: MappedFile,
}

impl std::fmt::Debug for Vmlinux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Vmlinux({})", self.path.display())
    }
}

fn bad(path: &Path, m: impl Into<String>) -> SourceError {
    SourceError::Tree(format!("{}: {}", path.display(), m.into()))
}

impl Vmlinux {
    /// Opens `path`: an ELF file with a symbol table and `.debug_info`.
    pub fn open(path: &Path) -> Result<Vmlinux, SourceError> {
        let map = MappedFile::open(path).map_err(|e| SourceError::Io(path.to_path_buf(), e))?;
        {
            let file = object::File::parse(&*map).map_err(|e| bad(path, format!("not an ELF file: {e}")))?;
            if file.section_by_name(".debug_info").is_none_or(|s| s.size() == 0) {
                return Err(bad(
                    path,
                    "has no DWARF (.debug_info): build with CONFIG_DEBUG_INFO, or give the debug vmlinux",
                ));
            }
            if file.symbols().next().is_none() {
                return Err(bad(path, "has no symbol table"));
            }
        }
        Ok(Vmlinux { path: path.to_path_buf(), map })
    }

    /// The source line of `function+offset` (`offset` as printed: `0x1a/0x80` or `0x1a`).
    /// The symbol of that name whose size is the printed size is used (static functions
    /// share names; a symbol of another size means a `vmlinux` of another build); `Ok(None)`
    /// when none is, or DWARF has no line there.
    /// The offset of a frame is a return address: the line is the call's, looked up one
    /// byte before it (an offset of 0 is looked up as is).
    pub fn locate(&self, function: &str, offset: &str) -> Result<Option<SourceLine>, SourceError> {
        let (off, size) =
            parse_offset(offset).ok_or_else(|| bad(&self.path, format!("bad offset `{offset}`")))?;
        let file = object::File::parse(&*self.map).map_err(|e| bad(&self.path, e.to_string()))?;
        let candidates: Vec<(u64, u64)> = file
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Text && s.name() == Ok(function))
            .map(|s| (s.address(), s.size()))
            .collect();
        // A printed size must match: a symbol of another size is another build's function.
        let start = match size {
            Some(sz) => match candidates.iter().find(|c| c.1 == sz) {
                Some(c) => c.0,
                None => return Ok(None),
            },
            None => match candidates.first() {
                Some(c) => c.0,
                None => return Ok(None),
            },
        };
        let addr = if off == 0 { start } else { start + off - 1 };
        let endian =
            if file.is_little_endian() { gimli::RunTimeEndian::Little } else { gimli::RunTimeEndian::Big };
        let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
            Ok(match file.section_by_name(id.name()) {
                Some(s) => s.uncompressed_data().unwrap_or(Cow::Borrowed(&[][..])),
                None => Cow::Borrowed(&[][..]),
            })
        };
        let owned = gimli::DwarfSections::load(load).map_err(|e| bad(&self.path, format!("DWARF: {e}")))?;
        let dwarf = owned.borrow(|s| gimli::EndianSlice::new(s, endian));
        let ctx =
            addr2line::Context::from_dwarf(dwarf).map_err(|e| bad(&self.path, format!("DWARF: {e}")))?;
        let mut inlined = Vec::new();
        let mut best: Option<(String, u32)> = None;
        if let Ok(mut frames) = ctx.find_frames(addr).skip_all_loads() {
            while let Ok(Some(f)) = frames.next() {
                let name = f.function.as_ref().and_then(|n| n.raw_name().ok()).map(|n| n.into_owned());
                let loc = f.location.as_ref().and_then(|l| Some((l.file?.to_string(), l.line?)));
                if best.is_none() {
                    best = loc.clone();
                }
                if let (Some(n), Some((file, line))) = (name, loc) {
                    inlined.push(format!("{n} ({file}:{line})"));
                }
            }
        }
        if best.is_none()
            && let Ok(Some(l)) = ctx.find_location(addr)
            && let (Some(f), Some(n)) = (l.file, l.line)
        {
            best = Some((f.to_string(), n));
        }
        let Some((file, line)) = best else { return Ok(None) };
        if inlined.len() <= 1 {
            inlined.clear();
        }
        Ok(Some(SourceLine { file, line, inlined, address: format!("{addr:#x}") }))
    }
}

/// `0x1a/0x80` → (0x1a, Some(0x80)); `0x1a` → (0x1a, None).
fn parse_offset(s: &str) -> Option<(u64, Option<u64>)> {
    let hex = |t: &str| u64::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok();
    match s.split_once('/') {
        Some((o, z)) => Some((hex(o)?, Some(hex(z)?))),
        None => Some((hex(s)?, None)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets() {
        assert_eq!(super::parse_offset("0x1a/0x80"), Some((0x1a, Some(0x80))));
        assert_eq!(super::parse_offset("0x1a"), Some((0x1a, None)));
        assert_eq!(super::parse_offset("zz"), None);
    }
}
