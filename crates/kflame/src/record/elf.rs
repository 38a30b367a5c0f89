//! The function symbols of an ELF64 little-endian file, read with positioned reads of just
//! the headers and tables needed, plus its loadable segments to turn a file offset into a
//! symbol address. Symbols come from the file's `.symtab`; for stripped files, from the
//! separate debug file found by build id (`/usr/lib/debug/.build-id/ab/cdef....debug`, as
//! installed by `-dbg`/`-dbgsym` packages), else from `.dynsym`.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const SHT_NOTE: u32 = 7;
const NT_GNU_BUILD_ID: u32 = 3;
const DEBUG_ROOT: &str = "/usr/lib/debug/.build-id";
const PT_LOAD: u32 = 1;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
/// Refuse absurd tables (a corrupt header must not make us allocate gigabytes).
const MAX_TABLE: u64 = 512 << 20;

/// A loadable segment: file bytes `[offset, offset+filesz)` live at `vaddr`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// Function symbols sorted by address; names stay in the string table until looked up.
#[derive(Debug, Default)]
pub(crate) struct ElfSymbols {
    segments: Vec<Segment>,
    /// (start, size, offset of the NUL-terminated name in `strings`)
    syms: Vec<(u64, u64, u32)>,
    strings: Vec<u8>,
}

impl ElfSymbols {
    /// Reads `path`; `None` when it is not a readable ELF64 LE file.
    pub(crate) fn load(path: &Path) -> Option<ElfSymbols> {
        let f = File::open(path).ok()?;
        let mut eh = [0u8; 64];
        f.read_exact_at(&mut eh, 0).ok()?;
        if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
            return None;
        }
        let segments = read_segments(&f, &eh)?;
        let (mut syms, mut strings) = read_symbols(&f, &eh, SHT_SYMTAB).unwrap_or_default();
        if syms.is_empty() {
            (syms, strings) = debug_file_symbols(&f, &eh).unwrap_or_default();
        }
        if syms.is_empty() {
            (syms, strings) = read_symbols(&f, &eh, SHT_DYNSYM).unwrap_or_default();
        }
        syms.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        syms.dedup_by_key(|s| s.0);
        Some(ElfSymbols { segments, syms, strings })
    }

    /// The symbol covering file offset `offset`.
    pub(crate) fn by_file_offset(&self, offset: u64) -> Option<&str> {
        let seg = self.segments.iter().find(|s| offset >= s.offset && offset - s.offset < s.filesz.max(1))?;
        self.by_vaddr((offset - seg.offset).wrapping_add(seg.vaddr))
    }

    fn by_vaddr(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (start, size, name) = self.syms[i];
        // Sized symbols must contain the address; unsized ones (hand-written assembly) are
        // accepted up to the next symbol.
        if size != 0 && addr - start >= size {
            return None;
        }
        let name = self.strings.get(name as usize..)?;
        let name = &name[..name.iter().position(|&b| b == 0)?];
        std::str::from_utf8(name).ok()
    }

    #[cfg(test)]
    fn names(&self) -> impl Iterator<Item = &str> {
        self.syms.iter().filter_map(|s| self.by_vaddr(s.0))
    }
}

fn u16_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 2).map_or(0, |v| u16::from_le_bytes([v[0], v[1]]) as u64)
}
fn u32_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 4).map_or(0, |v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]) as u64)
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|v| v.try_into().ok()).map_or(0, u64::from_le_bytes)
}

/// Reads `len` bytes at `offset`, refusing ranges past the end of the file (a corrupt header
/// must not make us allocate more than the file holds).
fn read_table(f: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    let file_len = f.metadata().ok()?.len();
    if len > MAX_TABLE || offset.checked_add(len)? > file_len {
        return None;
    }
    let mut buf = vec![0u8; len as usize];
    f.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

/// The `.symtab` of the separate debug file of `f`, found by its GNU build id.
fn debug_file_symbols(f: &File, eh: &[u8]) -> Option<Table> {
    let id = build_id(f, eh)?;
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let path = Path::new(DEBUG_ROOT).join(&hex[..2]).join(format!("{}.debug", &hex[2..]));
    let dbg = File::open(path).ok()?;
    let mut deh = [0u8; 64];
    dbg.read_exact_at(&mut deh, 0).ok()?;
    read_symbols(&dbg, &deh, SHT_SYMTAB)
}

/// The descriptor of the `NT_GNU_BUILD_ID` note (in a `SHT_NOTE` section).
fn build_id(f: &File, eh: &[u8]) -> Option<Vec<u8>> {
    let (shoff, shentsize, shnum) = (u64_at(eh, 40), u16_at(eh, 58), u16_at(eh, 60));
    let sh = read_table(f, shoff, shentsize * shnum)?;
    for s in sh.chunks_exact(shentsize.max(1) as usize).filter(|s| u32_at(s, 4) == SHT_NOTE as u64) {
        let notes = read_table(f, u64_at(s, 24), u64_at(s, 32).min(1 << 16))?;
        if let Some(id) = find_build_id(&notes) {
            return Some(id);
        }
    }
    None
}

/// Walks `namesz, descsz, type, name, desc` notes (each part 4-byte aligned).
fn find_build_id(mut notes: &[u8]) -> Option<Vec<u8>> {
    let align = |n: u64| (n as usize).checked_add(3).map(|v| v & !3);
    while notes.len() >= 12 {
        let (namesz, descsz, kind) = (u32_at(notes, 0), u32_at(notes, 4), u32_at(notes, 8));
        let name_end = 12usize.checked_add(align(namesz)?)?;
        let desc_end = name_end.checked_add(align(descsz)?)?;
        let name = notes.get(12..12 + namesz as usize)?;
        if kind == NT_GNU_BUILD_ID as u64 && name == b"GNU\0" && descsz > 0 {
            return notes.get(name_end..name_end + descsz as usize).map(<[u8]>::to_vec);
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

fn read_segments(f: &File, eh: &[u8]) -> Option<Vec<Segment>> {
    let (phoff, phentsize, phnum) = (u64_at(eh, 32), u16_at(eh, 54), u16_at(eh, 56));
    let ph = read_table(f, phoff, phentsize * phnum)?;
    let segs = ph
        .chunks_exact(phentsize.max(1) as usize)
        .filter(|p| u32_at(p, 0) == PT_LOAD as u64)
        .map(|p| Segment { offset: u64_at(p, 8), vaddr: u64_at(p, 16), filesz: u64_at(p, 32) })
        .collect();
    Some(segs)
}

/// Function symbols of the first section of `kind`, and its string table.
type Table = (Vec<(u64, u64, u32)>, Vec<u8>);

fn read_symbols(f: &File, eh: &[u8], kind: u32) -> Option<Table> {
    let (shoff, shentsize, shnum) = (u64_at(eh, 40), u16_at(eh, 58), u16_at(eh, 60));
    let sh = read_table(f, shoff, shentsize * shnum)?;
    let sections: Vec<&[u8]> = sh.chunks_exact(shentsize.max(1) as usize).collect();
    let table = sections.iter().find(|s| u32_at(s, 4) == kind as u64)?;
    let strtab = sections.get(u32_at(table, 40) as usize)?;
    let symbols = read_table(f, u64_at(table, 24), u64_at(table, 32))?;
    let strings = read_table(f, u64_at(strtab, 24), u64_at(strtab, 32))?;
    let entsize = u64_at(table, 56).max(24) as usize;
    let out = symbols
        .chunks_exact(entsize)
        .filter_map(|s| {
            let kind = s[4] & 0xf;
            let value = u64_at(s, 8);
            if (kind != STT_FUNC && kind != STT_GNU_IFUNC) || value == 0 {
                return None;
            }
            let name = u32_at(s, 0);
            ((name as usize) < strings.len()).then_some((value, u64_at(s, 16), name as u32))
        })
        .collect();
    Some((out, strings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_test_binary_has_its_functions() {
        let exe = std::env::current_exe().unwrap();
        let syms = ElfSymbols::load(&exe).expect("test binary is ELF");
        assert!(syms.syms.len() > 100);
        assert!(syms.names().any(|s| s.contains("own_test_binary_has_its_functions")));
    }

    #[test]
    fn build_id_note_is_found() {
        let mut n = Vec::new();
        for (name, kind, desc) in
            [(&b"XYZ\0"[..], 1u32, &[9u8; 5][..]), (b"GNU\0", 3, &[0xab, 0xcd, 0xef, 1])]
        {
            n.extend_from_slice(&(name.len() as u32).to_le_bytes());
            n.extend_from_slice(&(desc.len() as u32).to_le_bytes());
            n.extend_from_slice(&kind.to_le_bytes());
            n.extend_from_slice(name);
            n.extend_from_slice(desc);
            n.resize(n.len().next_multiple_of(4), 0);
        }
        assert_eq!(find_build_id(&n), Some(vec![0xab, 0xcd, 0xef, 1]));
        assert_eq!(find_build_id(&n[..20]), None);
        assert_eq!(find_build_id(&[0xff; 12]), None);
    }

    /// A real ELF file with bytes overwritten all over its headers and tables: loading and
    /// looking up may find nothing, but never panic or allocate without bound.
    #[test]
    fn corrupted_elf_never_panics() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let dir = std::env::temp_dir().join(format!("kflame-elf-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.elf");
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..40 {
            let mut bytes = exe[..exe.len().min(1 << 20)].to_vec();
            for _ in 0..64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = if x % 2 == 0 { (x >> 8) as usize % 64 } else { (x >> 8) as usize % bytes.len() };
                bytes[at] = (x >> 40) as u8;
            }
            std::fs::write(&path, &bytes).unwrap();
            if let Some(syms) = ElfSymbols::load(&path) {
                for off in [0u64, 0x1000, 0x12345, u64::MAX] {
                    let _ = syms.by_file_offset(off);
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn non_elf_is_none() {
        assert!(ElfSymbols::load(Path::new("/proc/self/status")).is_none());
        assert!(ElfSymbols::load(Path::new("/nonexistent/file")).is_none());
    }
}
