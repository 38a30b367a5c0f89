//! ELF symbol tables of user-space binaries, keyed by file offset as perf does.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use object::elf::{SHF_ALLOC, SHF_EXECINSTR};
use object::read::elf::{ElfFile, FileHeader, SectionHeader, Sym};
use object::{
    Endianness, Object, ObjectSection, ObjectSegment, ObjectSymbol, ObjectSymbolTable, ReadRef, SectionFlags,
    SymbolKind,
};

use super::table::{Binding, Entry, Names, StrTab, SymbolTable};
use super::{Symbol, SymbolError};

/// The function and object symbols of one ELF file.
///
/// Addresses are *file offsets* (a symbol's value converted through the program header
/// that loads it), so that a sampled address `ip` in a mapping `[start, end)` of file
/// offset `pgoff` is looked up as `ip - start + pgoff`: the address `perf script` prints.
#[derive(Debug, Default)]
pub struct ElfSymbols {
    table: SymbolTable,
    build_id: Option<Vec<u8>>,
    symbols_from: Option<PathBuf>,
}

impl ElfSymbols {
    /// Reads the symbols of `path`. When the file has no `.symtab` (a stripped binary), its
    /// separate debug file `<debug_root>/usr/lib/debug/.build-id/xx/yyyy.debug` is used if
    /// present (pass `/` for the machine's own); otherwise `.dynsym`.
    ///
    /// The files are read, not mapped: only the ranges the symbols need (headers, symbol
    /// and string tables, notes), into buffers of this process, and the table keeps copies
    /// of its names. A binary truncated or rewritten while it is read gives an error or
    /// stale names, never a SIGBUS, and a table kept for long holds no file open.
    pub fn open(path: &Path, debug_root: &Path) -> Result<ElfSymbols, SymbolError> {
        Self::open_with(path, debug_root, None)
    }

    /// [`open`](Self::open), leaving the names of a string table larger than
    /// `names_in_file` bytes in the file (see [`FileSymbols`]).
    fn open_with(
        path: &Path,
        debug_root: &Path,
        names_in_file: Option<u64>,
    ) -> Result<ElfSymbols, SymbolError> {
        let io = |source| SymbolError::Io { path: path.to_path_buf(), source };
        let handle = open_file(path).map_err(io)?;
        let data = object::ReadCache::new(&handle);
        let file = parse(path, &data)?;
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        if !has_symtab(&file)
            && let Some(debug_path) = build_id.as_deref().map(|b| debug_file_path(debug_root, b))
            && let Ok(debug) = open_file(&debug_path)
        {
            let ddata = object::ReadCache::new(&debug);
            if let Ok(dfile) = object::File::parse(&ddata)
                && has_symtab(&dfile)
            {
                let table = read_symbols((&dfile, Some(&debug)), (&file, Some(&handle)), true, names_in_file);
                return Ok(ElfSymbols { table, build_id, symbols_from: Some(debug_path) });
            }
        }
        let table =
            read_symbols((&file, Some(&handle)), (&file, Some(&handle)), has_symtab(&file), names_in_file);
        Ok(ElfSymbols { table, build_id, symbols_from: Some(path.to_path_buf()) })
    }

    /// Reads the symbols of an ELF image in memory (`.symtab`, else `.dynsym`).
    pub fn parse(data: &[u8]) -> Result<ElfSymbols, SymbolError> {
        let file = parse(Path::new("<memory>"), data)?;
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let table = read_symbols((&file, None), (&file, None), has_symtab(&file), None);
        Ok(ElfSymbols { table, build_id, symbols_from: None })
    }

    /// Symbols given as `(start, size, name)`, kept as they are: no size is fixed and no
    /// duplicate removed (perf's rules for JIT perf map files).
    pub(crate) fn from_sized(entries: impl IntoIterator<Item = (u64, u64, Box<str>)>) -> ElfSymbols {
        let mut table = SymbolTable::default();
        let names = table.names_mut();
        let entries = entries
            .into_iter()
            .map(|(start, size, name)| Entry {
                start,
                end: start.saturating_add(size),
                binding: Binding::Global,
                name: names.push(&name),
            })
            .collect();
        table.add_sized(entries);
        ElfSymbols { table, build_id: None, symbols_from: None }
    }

    /// The symbol containing file offset `offset`.
    pub fn lookup(&self, offset: u64) -> Option<Symbol<'_>> {
        let i = self.table.find(offset)?;
        self.table.get(i).map(|e| Symbol { name: self.table.name(e), start: e.start, index: i })
    }

    /// The index of the symbol containing file offset `offset` (what [`lookup`](Self::lookup)
    /// returns as [`Symbol::index`], without choosing among aliases by name).
    pub fn symbol_index(&self, offset: u64) -> Option<usize> {
        self.table.find(offset)
    }

    /// The GNU build-id of the binary, if it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// The file the symbols were read from (the binary or its debug file).
    pub fn symbols_from(&self) -> Option<&Path> {
        self.symbols_from.as_deref()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when the file has no usable symbol.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// The symbols of an ELF file as a recorder that runs for days keeps them: addresses and
/// the offsets of names in memory (32 bytes a symbol, plus 8 for the search), the names
/// themselves left in the file's string table and read with `pread` when asked for, when
/// that table is larger than [`FileSymbols::NAMES_IN_MEMORY`] (a large C++ or Rust library
/// has tens of megabytes of names; the few a profile shows are read once each). The file
/// stays open while the table lives (a descriptor, no mapping): a file truncated or
/// rewritten under it gives an error for the names then asked for, never a SIGBUS, and a
/// file deleted (replaced by an upgrade) keeps its disk space until the table is dropped.
///
/// Lookups give what [`ElfSymbols::lookup`] of the same file gives: the same symbols, the
/// same names.
#[derive(Debug)]
pub struct FileSymbols {
    syms: ElfSymbols,
}

impl FileSymbols {
    /// String tables up to this size are copied into memory whole (a descriptor and a
    /// system call per name would cost more than they save).
    pub const NAMES_IN_MEMORY: u64 = 256 << 10;

    /// Reads the symbols of `path` as [`ElfSymbols::open`] does.
    pub fn open(path: &Path, debug_root: &Path) -> Result<FileSymbols, SymbolError> {
        Self::open_with(path, debug_root, Self::NAMES_IN_MEMORY)
    }

    /// Like [`open`](Self::open), with names left in the file when their string table is
    /// larger than `names_in_memory` bytes.
    pub fn open_with(
        path: &Path,
        debug_root: &Path,
        names_in_memory: u64,
    ) -> Result<FileSymbols, SymbolError> {
        ElfSymbols::open_with(path, debug_root, Some(names_in_memory)).map(|syms| FileSymbols { syms })
    }

    /// The index of the symbol containing file offset `offset`, a key for caching its name
    /// (see [`Symbol::index`]).
    pub fn symbol_index(&self, offset: u64) -> Option<usize> {
        self.syms.table.find(offset)
    }

    /// The start and raw (mangled) name of symbol `index` (from
    /// [`symbol_index`](Self::symbol_index)), the name read from the file if it was left
    /// there: an error if the file no longer holds it (truncated, rewritten).
    pub fn symbol(&self, index: usize) -> Option<(u64, std::io::Result<std::borrow::Cow<'_, str>>)> {
        let e = self.syms.table.get(index)?;
        Some((e.start, self.syms.table.read_name(e)))
    }

    /// Bytes of memory the table holds.
    pub fn heap_bytes(&self) -> usize {
        self.syms.table.heap_bytes() + self.syms.build_id.as_ref().map_or(0, Vec::capacity)
    }

    /// True when names are read from the file on demand (else copied into memory).
    pub fn names_in_file(&self) -> bool {
        self.syms.table.names_in_file()
    }

    /// The GNU build-id of the binary, if it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.syms.build_id()
    }

    /// The file the symbols were read from (the binary or its debug file).
    pub fn symbols_from(&self) -> Option<&Path> {
        self.syms.symbols_from()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when the file has no usable symbol.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

/// The GNU build-id note of an ELF image.
pub fn read_build_id(data: &[u8]) -> Option<Vec<u8>> {
    object::File::parse(data).ok()?.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// `<root>/usr/lib/debug/.build-id/ab/cdef….debug`, where debug packages install symbols.
pub fn debug_file_path(root: &Path, build_id: &[u8]) -> PathBuf {
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let (dir, rest) = hex.split_at(2.min(hex.len()));
    root.join("usr/lib/debug/.build-id").join(dir).join(format!("{rest}.debug"))
}

/// A regular file opened for reading (a directory is refused: reading it fails late).
fn open_file(path: &Path) -> std::io::Result<File> {
    let file = File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a directory"));
    }
    Ok(file)
}

fn parse<'d, R: ReadRef<'d>>(path: &Path, data: R) -> Result<object::File<'d, R>, SymbolError> {
    object::File::parse(data).map_err(|e| SymbolError::Format {
        path: path.to_path_buf(),
        message: format!("not a readable ELF file: {e}"),
    })
}

fn has_symtab<'d, R: ReadRef<'d>>(file: &object::File<'d, R>) -> bool {
    file.symbols().next().is_some()
}

/// Symbols of `syms` (`.symtab` when `symtab`, else `.dynsym`), converted to file offsets
/// through the loadable segments of `runtime` (the binary actually mapped), their names
/// copied into `names`. Each parsed file comes with the file it was read from, if any: names
/// are then taken from its string tables read in large chunks (see [`Strings`]).
fn read_symbols<'d, 'r, R: ReadRef<'d>, Q: ReadRef<'r>>(
    (syms, syms_file): (&object::File<'d, R>, Option<&File>),
    (runtime, runtime_file): (&object::File<'r, Q>, Option<&File>),
    symtab: bool,
    names_in_file: Option<u64>,
) -> SymbolTable {
    let segments: Vec<(u64, u64, u64)> =
        runtime.segments().map(|s| (s.address(), s.size(), s.file_range().0)).collect();
    let iter: Box<dyn Iterator<Item = object::Symbol<'d, '_, R>>> =
        if symtab { Box::new(syms.symbols()) } else { Box::new(syms.dynamic_symbols()) };
    let mut source = NameSource::new(syms, syms_file, !symtab);
    // Names of a string table larger than `names_in_file` stay in the file, which is kept
    // open (a second descriptor of it: the caller's closes).
    let mut names = match (names_in_file, source.range(), syms_file) {
        (Some(max), Some((offset, size)), Some(f)) if size > max => match f.try_clone() {
            Ok(file) => Names::in_file(StrTab { file, offset, size }),
            Err(_) => Names::default(),
        },
        _ => Names::default(),
    };
    // As many entries as the table has symbols at most (read already: no larger than the
    // file), so that a large table is not copied as it grows.
    let mut entries = Vec::with_capacity(source.count());
    for sym in iter {
        if let Some(e) = entry(syms, &sym, &segments, &mut source, &mut names) {
            entries.push(e);
        }
    }
    if names.has_file() {
        lengths_in_file(&mut entries, &mut source, &names);
    }
    drop(source);
    entries.shrink_to_fit();
    let mut table = SymbolTable::with_names(entries, names, super::demangle);
    let plt = plt_symbols(runtime, NameSource::new(runtime, runtime_file, true), table.names_mut());
    table.add_sized(plt);
    table.names_mut().shrink();
    table
}

/// The lengths of names left in the file, read in the order of the string table (each
/// chunk once: symbols do not list their names in order, and a large table would otherwise
/// be read whole); symbols whose name turns out empty or unreadable are removed, as
/// [`entry`] removes them when it reads names at once.
fn lengths_in_file(entries: &mut Vec<Entry>, source: &mut NameSource<'_, '_>, names: &Names) {
    let NameSource::File { strings, .. } = source else { return };
    let mut order: Vec<(u32, u32)> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Some((names.file_offset(e.name)?, u32::try_from(i).ok()?)))
        .collect();
    order.sort_unstable();
    let mut keep = vec![false; entries.len()];
    for (offset, i) in order {
        let i = i as usize;
        if let Some(name) = strings.get(offset).filter(|n| !n.is_empty()) {
            entries[i].name = names.push_in_file(offset, name.len());
            keep[i] = true;
        }
    }
    let mut keep = keep.into_iter();
    entries.retain(|_| keep.next().unwrap_or(false));
}

/// Where the names of a symbol table's symbols come from.
enum NameSource<'f, 'd> {
    /// Through `object`: an image in memory, read in place.
    Object,
    /// The table's string table in `strings`, at offsets (`st_name`) read from `raw`.
    File { raw: RawSymbols<'d>, strings: Strings<'f> },
}

impl<'f, 'd> NameSource<'f, 'd> {
    /// The names of `file`'s `.symtab` (`dynamic`: `.dynsym`), read from `handle` if given.
    fn new<R: ReadRef<'d>>(file: &object::File<'d, R>, handle: Option<&'f File>, dynamic: bool) -> Self {
        let Some(handle) = handle else { return NameSource::Object };
        let (raw, range) = match file {
            object::File::Elf32(f) => {
                let (syms, range) = raw_symbols(f, dynamic);
                (RawSymbols::Elf32(syms, f.endian()), range)
            }
            object::File::Elf64(f) => {
                let (syms, range) = raw_symbols(f, dynamic);
                (RawSymbols::Elf64(syms, f.endian()), range)
            }
            _ => return NameSource::Object,
        };
        NameSource::File { raw, strings: Strings::new(handle, range) }
    }

    /// The name of `sym`, a symbol of the table this source was made for (`None` where
    /// `object` would give an error).
    fn name<'s, R: ReadRef<'d>>(&'s mut self, sym: &object::Symbol<'d, '_, R>) -> Option<&'s [u8]> {
        match self {
            NameSource::Object => sym.name_bytes().ok(),
            NameSource::File { raw, strings } => strings.get(raw.st_name(sym.index().0)?),
        }
    }

    /// The offset of `sym`'s name in the string table, when names are read from the file.
    fn st_name<R: ReadRef<'d>>(&self, sym: &object::Symbol<'d, '_, R>) -> Option<u32> {
        match self {
            NameSource::Object => None,
            NameSource::File { raw, .. } => raw.st_name(sym.index().0),
        }
    }

    /// Symbols in the table (0 when not known).
    fn count(&self) -> usize {
        match self {
            NameSource::Object => 0,
            NameSource::File { raw: RawSymbols::Elf32(s, _), .. } => s.len(),
            NameSource::File { raw: RawSymbols::Elf64(s, _), .. } => s.len(),
        }
    }

    /// The string table's file range, when names are read from the file.
    fn range(&self) -> Option<(u64, u64)> {
        match self {
            NameSource::Object => None,
            NameSource::File { strings, .. } => Some((strings.offset, strings.size)),
        }
    }
}

/// The entries of a symbol table, as stored in the file.
#[derive(Clone, Copy)]
enum RawSymbols<'d> {
    Elf32(&'d [object::elf::Sym32<Endianness>], Endianness),
    Elf64(&'d [object::elf::Sym64<Endianness>], Endianness),
}

impl RawSymbols<'_> {
    /// `st_name` of symbol `index`: the offset of its name in the string table.
    fn st_name(self, index: usize) -> Option<u32> {
        match self {
            RawSymbols::Elf32(syms, endian) => syms.get(index).map(|s| s.st_name(endian)),
            RawSymbols::Elf64(syms, endian) => syms.get(index).map(|s| s.st_name(endian)),
        }
    }
}

/// The entries of `file`'s `.symtab` (`dynamic`: `.dynsym`) and the file range
/// `(offset, size)` of its string table (`None`: no string table).
fn raw_symbols<'d, Elf: FileHeader<Endian = Endianness>, R: ReadRef<'d>>(
    file: &ElfFile<'d, Elf, R>,
    dynamic: bool,
) -> (&'d [Elf::Sym], Option<(u64, u64)>) {
    let table = if dynamic { file.elf_dynamic_symbol_table() } else { file.elf_symbol_table() };
    let index = table.string_section();
    let range = (index.0 != 0)
        .then(|| file.elf_section_table().section(index).ok())
        .flatten()
        .map(|s| (s.sh_offset(file.endian()).into(), s.sh_size(file.endian()).into()));
    (table.symbols(), range)
}

/// A string table (`.strtab`, `.dynstr`) read from its file in chunks of [`CHUNK`](Self::CHUNK)
/// bytes, at most [`SLOTS`](Self::SLOTS) of them held at once: a name costs no system call
/// of its own (names are laid out in about the order of their symbols, so each chunk is
/// read once), and the memory taken stays bounded however large the table (tens of MB for
/// a large C++ library). Should the names be read out of order (more chunk reads than the
/// table has chunks, twice over), the table is read whole, once, instead.
struct Strings<'f> {
    file: &'f File,
    offset: u64,
    size: u64,
    /// `(chunk number, bytes)`; chunk `k` goes to slot `k % SLOTS`; `u64::MAX`: empty.
    slots: Vec<(u64, Vec<u8>)>,
    /// The whole table, once reading it by chunks proved wasteful.
    whole: Option<Vec<u8>>,
    reads: u64,
    /// A name that runs across chunks, put together.
    long: Vec<u8>,
}

impl<'f> Strings<'f> {
    const CHUNK: u64 = 1 << 18;
    const SLOTS: usize = 16;

    fn new(file: &'f File, range: Option<(u64, u64)>) -> Self {
        let (offset, size) = range.unwrap_or((0, 0));
        Strings {
            file,
            offset,
            size,
            slots: vec![(u64::MAX, Vec::new()); Self::SLOTS],
            whole: None,
            reads: 0,
            long: Vec::new(),
        }
    }

    /// The slot holding chunk `k`, read unless held; `None` past the end or when the read
    /// fails (a file truncated meanwhile).
    fn chunk(&mut self, k: u64) -> Option<usize> {
        let start = k.checked_mul(Self::CHUNK).filter(|&s| s < self.size)?;
        let slot = (k % Self::SLOTS as u64) as usize;
        if self.slots[slot].0 != k {
            let len = usize::try_from((self.size - start).min(Self::CHUNK)).ok()?;
            let (held, buf) = &mut self.slots[slot];
            *held = u64::MAX;
            buf.resize(len, 0);
            self.file.read_exact_at(buf, self.offset.checked_add(start)?).ok()?;
            *held = k;
            self.reads += 1;
        }
        Some(slot)
    }

    /// Reads the table whole if chunks were read out of order; true when it is held whole.
    fn whole_if_wasteful(&mut self) -> bool {
        if self.whole.is_none() && self.reads > 2 * self.size.div_ceil(Self::CHUNK) + Self::SLOTS as u64 {
            let mut all = vec![0; usize::try_from(self.size).unwrap_or(0)];
            if self.file.read_exact_at(&mut all, self.offset).is_ok() {
                self.whole = Some(all);
                self.slots = Vec::new();
            }
        }
        self.whole.is_some()
    }

    /// The string at `offset` in the table, up to its NUL (`None` past the end of the
    /// table or with no NUL before it, as `object` reads strings).
    fn get(&mut self, offset: u32) -> Option<&[u8]> {
        let offset = u64::from(offset);
        if offset >= self.size {
            return None;
        }
        if self.whole_if_wasteful() {
            let rest = self.whole.as_deref()?.get(usize::try_from(offset).ok()?..)?;
            return rest.get(..memchr::memchr(0, rest)?);
        }
        let mut k = offset / Self::CHUNK;
        let pos = (offset % Self::CHUNK) as usize;
        let slot = self.chunk(k)?;
        if let Some(n) = memchr::memchr(0, &self.slots[slot].1[pos..]) {
            return Some(&self.slots[slot].1[pos..pos + n]);
        }
        self.long.clear();
        self.long.extend_from_slice(&self.slots[slot].1[pos..]);
        loop {
            k += 1;
            let slot = self.chunk(k)?;
            let bytes = &self.slots[slot].1;
            match memchr::memchr(0, bytes) {
                Some(n) => {
                    self.long.extend_from_slice(&bytes[..n]);
                    return Some(&self.long);
                }
                None => self.long.extend_from_slice(bytes),
            }
        }
    }
}

/// perf's synthesized PLT symbols: one `NAME@plt` per `.rela.plt` entry, laid out after the
/// `.plt` header, `sh_entsize` bytes each, at file offsets. `dynstr` gives the names of
/// `file`'s `.dynsym`.
fn plt_symbols<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    mut dynstr: NameSource<'_, 'd>,
    names: &mut Names,
) -> Vec<Entry> {
    let (Some(rela), Some(plt)) = (file.section_by_name(".rela.plt"), file.section_by_name(".plt")) else {
        return Vec::new();
    };
    let (Ok(data), Some(dynsyms)) = (rela.data(), file.dynamic_symbol_table()) else { return Vec::new() };
    let entsize =
        if file.architecture() == object::Architecture::Aarch64 { 16 } else { plt_entsize(file, &plt) };
    let header = if file.architecture() == object::Architecture::Aarch64 { 32 } else { entsize };
    let Some((plt_offset, _)) = plt.file_range() else { return Vec::new() };
    // A damaged file's offset and entry size can pass the address space: the entries end
    // there.
    let Some(mut offset) = plt_offset.checked_add(header) else { return Vec::new() };
    let mut out = Vec::new();
    for rel in data.chunks_exact(24) {
        let Some(end) = offset.checked_add(entsize) else { break };
        let info = u64::from_le_bytes(rel[8..16].try_into().unwrap_or_default());
        let index = object::SymbolIndex((info >> 32) as usize);
        let sym = dynsyms.symbol_by_index(index).ok();
        let name = sym.as_ref().and_then(|s| dynstr.name(s)).and_then(|n| std::str::from_utf8(n).ok());
        let name = format!("{}@plt", super::demangle(name.unwrap_or("")));
        let name = names.push(&name);
        out.push(Entry { start: offset, end, binding: Binding::Global, name });
        offset = end;
    }
    out
}

/// `sh_entsize` of the `.plt` section.
fn plt_entsize<'d, R: ReadRef<'d>>(file: &object::File<'d, R>, plt: &object::Section<'d, '_, R>) -> u64 {
    use object::read::elf::SectionHeader;
    let endian = if file.is_little_endian() { object::Endianness::Little } else { object::Endianness::Big };
    let ent = match file {
        object::File::Elf64(f) => {
            f.section_by_index(plt.index()).ok().map(|s| s.elf_section_header().sh_entsize(endian))
        }
        object::File::Elf32(f) => {
            f.section_by_index(plt.index()).ok().map(|s| u64::from(s.elf_section_header().sh_entsize(endian)))
        }
        _ => None,
    };
    // perf uses sh_entsize as is: 0 (lld output) makes every PLT symbol empty.
    ent.unwrap_or(16)
}

fn entry<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    sym: &object::Symbol<'d, '_, R>,
    segments: &[(u64, u64, u64)],
    source: &mut NameSource<'_, 'd>,
    names: &mut Names,
) -> Option<Entry> {
    if sym.is_undefined() {
        return None;
    }
    let section = sym.section_index().and_then(|i| file.section_by_index(i).ok())?;
    let flags = match section.flags() {
        SectionFlags::Elf { sh_flags } => sh_flags,
        _ => 0,
    };
    if flags & u64::from(SHF_ALLOC) == 0 {
        return None;
    }
    match sym.kind() {
        SymbolKind::Text | SymbolKind::Data => {}
        SymbolKind::Unknown | SymbolKind::Label if flags & u64::from(SHF_EXECINSTR) != 0 => {}
        _ => return None,
    }
    let value = sym.address();
    let &(vaddr, _, offset) = segments.iter().find(|&&(a, size, _)| value >= a && value - a < size)?;
    // A damaged file's offsets and sizes can reach past the address space: such a symbol is
    // left out, and one whose size does is cut at its end.
    let start = (value - vaddr).checked_add(offset)?;
    let binding = if sym.is_weak() {
        Binding::Weak
    } else if sym.is_global() {
        Binding::Global
    } else {
        Binding::Local
    };
    let end = start.saturating_add(sym.size());
    if names.has_file()
        && let Some(offset) = source.st_name(sym)
    {
        // Left in the file, its length read afterwards (`lengths_in_file`); read (and made
        // UTF-8 the same way) when asked for.
        return Some(Entry { start, end, binding, name: names.push_in_file(offset, 0) });
    }
    // The name last: symbols kept out above need none.
    let name = source.name(sym).filter(|n| !n.is_empty())?;
    // Names are nearly always UTF-8 (checked much faster than `from_utf8_lossy` does).
    let name = match std::str::from_utf8(name) {
        Ok(name) => names.push(name),
        Err(_) => names.push(&String::from_utf8_lossy(name)),
    };
    Some(Entry { start, end, binding, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline_cxx() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/perf-data/symfs/opt/kflame-demo/bin/inline-cxx")
    }

    /// The symbols read from a file name the same functions as those of the same bytes in
    /// memory.
    #[test]
    fn file_and_memory_give_the_same_symbols() {
        let bin = inline_cxx();
        let read = ElfSymbols::open(&bin, Path::new("/nonexistent")).unwrap();
        let copied = ElfSymbols::parse(&std::fs::read(&bin).unwrap()).unwrap();
        assert!(read.len() > 10, "{}", read.len());
        assert_eq!(read.len(), copied.len());
        for i in 0..read.len() {
            let (a, b) = (read.table.get(i).unwrap(), copied.table.get(i).unwrap());
            assert_eq!((a.start, a.end), (b.start, b.end));
            assert_eq!(read.table.name(a), copied.table.name(b));
        }
    }

    /// A binary truncated in place after its symbols were read (a package upgrade writing
    /// over it, a build rewriting its output) while a symbol table of it is kept, as the
    /// watcher keeps them: symbolizing afterwards still works, from the table's own copies
    /// (a table that kept the file mapped died of SIGBUS here). Reading the truncated file
    /// again is an error, not a crash.
    #[test]
    fn truncated_binary_is_no_sigbus() {
        let dir = std::env::temp_dir().join(format!("kflame-elf-truncate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("inline-cxx");
        std::fs::copy(inline_cxx(), &copy).unwrap();
        let syms = ElfSymbols::open(&copy, Path::new("/nonexistent")).unwrap();
        let before: Vec<(u64, String)> = (0..syms.len())
            .map(|i| syms.table.get(i).unwrap())
            .map(|e| (e.start, syms.table.name(e).to_string()))
            .collect();
        // Truncate the very file (same inode), as an in-place rewrite does.
        std::fs::OpenOptions::new().write(true).open(&copy).unwrap().set_len(0).unwrap();
        for (start, name) in &before {
            let sym = syms.lookup(*start).expect("symbol still found");
            assert_eq!(sym.start, *start);
            assert!(!sym.name.is_empty(), "{name}");
        }
        assert!(ElfSymbols::open(&copy, Path::new("/nonexistent")).is_err());
        std::fs::write(&copy, b"\x7fELF").unwrap();
        assert!(ElfSymbols::open(&copy, Path::new("/nonexistent")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Every fixture binary with its names left in the file (any string table) names every
    /// symbol as the table with its names in memory does, PLT names (kept in memory)
    /// included; tables of small string tables keep names in memory by default.
    #[test]
    fn names_read_from_the_file_are_those_copied() {
        let bin = inline_cxx().parent().unwrap().to_path_buf();
        let mut seen = 0;
        for f in std::fs::read_dir(&bin).unwrap() {
            let path = f.unwrap().path();
            let copied = ElfSymbols::open(&path, Path::new("/nonexistent")).unwrap();
            let lazy = FileSymbols::open_with(&path, Path::new("/nonexistent"), 0).unwrap();
            assert!(lazy.names_in_file(), "{}", path.display());
            assert!(!FileSymbols::open(&path, Path::new("/nonexistent")).unwrap().names_in_file());
            assert_eq!(copied.len(), lazy.len());
            for i in 0..copied.len() {
                let e = copied.table.get(i).unwrap();
                let (start, name) = lazy.symbol(i).unwrap();
                assert_eq!((start, &*name.unwrap()), (e.start, copied.table.name(e)), "{}", path.display());
                // Lookups inside the symbol find the same one.
                let at = e.start + (e.end - e.start) / 2;
                assert_eq!(lazy.symbol_index(at), copied.lookup(at).map(|s| s.index));
            }
            assert!(lazy.heap_bytes() < copied.table.heap_bytes() + 64, "{}", path.display());
            seen += 1;
        }
        assert!(seen >= 5, "{seen} binaries");
    }

    /// A table whose names stay in the file, truncated or rewritten under it: its names are
    /// errors, never a SIGBUS, and never other bytes taken for names.
    #[test]
    fn names_in_a_truncated_or_rewritten_file_are_errors() {
        let dir = std::env::temp_dir().join(format!("kflame-elf-lazy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("inline-cxx");
        std::fs::copy(inline_cxx(), &copy).unwrap();
        let syms = FileSymbols::open_with(&copy, Path::new("/nonexistent"), 0).unwrap();
        let names: Vec<String> = (0..syms.len()).map(|i| syms.symbol(i).unwrap().1.unwrap().into()).collect();
        // PLT names are made up (`name@plt`), kept in memory: they stay.
        let in_file = |i: &usize| !names[*i].ends_with("@plt");
        assert!((0..syms.len()).filter(in_file).count() > 10);
        // Rewritten in place with other bytes (same inode, same length).
        let len = std::fs::metadata(&copy).unwrap().len();
        std::fs::write(&copy, vec![b'x'; len as usize]).unwrap();
        for (i, before) in names.iter().enumerate() {
            let (_, name) = syms.symbol(i).unwrap();
            match in_file(&i) {
                true => assert!(name.is_err(), "symbol {i}: {name:?}"),
                false => assert_eq!(&name.unwrap(), before),
            }
        }
        // Truncated.
        std::fs::OpenOptions::new().write(true).open(&copy).unwrap().set_len(0).unwrap();
        for i in (0..syms.len()).filter(in_file) {
            assert!(syms.symbol(i).unwrap().1.is_err());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Names read by chunks are those of the table in memory: across chunk ends too, with
    /// each chunk read once when read in order; read out of order, the table is read whole
    /// once and gives the same names. Past the end, or with no NUL before it: no name.
    #[test]
    fn strings_by_chunks() {
        let chunk = Strings::CHUNK as usize;
        let mut table = vec![0u8];
        let mut offsets = Vec::new();
        for i in 0.. {
            if table.len() > 40 * chunk {
                break;
            }
            offsets.push(table.len());
            table.extend_from_slice(format!("name{i}_{}", "x".repeat(i % 500)).as_bytes());
            table.push(0);
            if i == 1000 {
                // One name longer than two chunks.
                offsets.push(table.len());
                table.extend(std::iter::repeat_n(b'y', 2 * chunk + 100));
                table.push(0);
            }
        }
        let unterminated = table.len();
        table.extend_from_slice(b"tail");
        let name = |o: usize| table[o..].split(|&b| b == 0).next().unwrap();

        let dir = std::env::temp_dir().join(format!("kflame-elf-strings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("strtab");
        let mut bytes = vec![b'j'; 100];
        bytes.extend_from_slice(&table);
        bytes.extend_from_slice(b"after\0");
        std::fs::write(&path, &bytes).unwrap();
        let file = File::open(&path).unwrap();
        let range = Some((100, table.len() as u64));

        let mut strings = Strings::new(&file, range);
        for &o in &offsets {
            assert_eq!(strings.get(o as u32), Some(name(o)), "at {o}");
        }
        assert_eq!(strings.reads, (table.len() as u64).div_ceil(Strings::CHUNK));
        assert!(strings.whole.is_none());
        assert_eq!(strings.get(unterminated as u32), None);
        assert_eq!(strings.get(table.len() as u32), None);

        let mut strings = Strings::new(&file, range);
        for j in 0..offsets.len() {
            let o = offsets[j * 7919 % offsets.len()];
            assert_eq!(strings.get(o as u32), Some(name(o)), "at {o}");
        }
        assert!(strings.whole.is_some());
        assert_eq!(strings.get(unterminated as u32), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
