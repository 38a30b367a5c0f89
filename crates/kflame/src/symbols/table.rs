//! A sorted symbol table with perf's rules for duplicates, missing sizes and lookups.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;

/// How a symbol is bound (ELF binding, or derived from the kallsyms type letter).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    /// File-local (`t`, `STB_LOCAL`).
    Local,
    /// Global (`T`, `STB_GLOBAL`).
    Global,
    /// Weak (`W`, `STB_WEAK`).
    Weak,
}

/// One symbol: `[start, end)` in the table's address space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// First address.
    pub(crate) start: u64,
    /// One past the last address (equal to `start` until sizes are fixed up).
    pub(crate) end: u64,
    /// Binding, used to choose between symbols at the same address.
    pub(crate) binding: Binding,
    /// The raw (mangled) name, in the table's [`Names`].
    pub(crate) name: NameRef,
}

/// Where a name lies in a [`Names`] (8 bytes, so that an [`Entry`] takes 32: a large table
/// has hundreds of thousands): in its buffer, or, with [`NameRef::IN_FILE`] set in `len`,
/// at offset `start` of its string table in the file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NameRef {
    start: u32,
    len: u32,
}

impl NameRef {
    /// The bit of `len` saying that the name is in the file (names are cut at 2 GiB).
    const IN_FILE: u32 = 1 << 31;
    const MAX_LEN: usize = (1usize << 31) - 1;

    fn in_file(self) -> bool {
        self.len & Self::IN_FILE != 0
    }

    fn len(self) -> usize {
        (self.len & !Self::IN_FILE) as usize
    }
}

/// A string table (`.strtab`, `.dynstr`) left in its file: `size` bytes at `offset`.
#[derive(Debug)]
pub(crate) struct StrTab {
    pub(crate) file: File,
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

/// The names of one table, stored end to end in one buffer owned by the table. A large
/// binary has hundreds of thousands of symbols: one allocation per name made loading and
/// freeing its table cost as much as reading it. The names are copies, not references into
/// the binary: a table kept for long (the watcher caches them) holds no mapping of a file
/// that may be truncated or rewritten under it (reading a truncated mapping is a SIGBUS).
///
/// Or, for tables kept for long whose names would take megabytes (a large C++ or Rust
/// library), the names stay in the file's string table, opened and read with `pread` when
/// a name is wanted ([`push_in_file`](Self::push_in_file)): a file truncated or rewritten
/// under the table then gives an error for that name, still never a SIGBUS.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    text: String,
    strtab: Option<Arc<StrTab>>,
}

impl Names {
    /// Names kept in `strtab`, read on demand (those [`push`](Self::push)ed are still kept).
    pub(crate) fn in_file(strtab: StrTab) -> Names {
        Names { text: String::new(), strtab: Some(Arc::new(strtab)) }
    }

    /// Stores `name` (cut at 2 GiB; text past 4 GiB is not stored).
    pub(crate) fn push(&mut self, name: &str) -> NameRef {
        let Ok(start) = u32::try_from(self.text.len()) else { return NameRef::default() };
        let mut len = name.len().min(NameRef::MAX_LEN);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        self.text.push_str(&name[..len]);
        NameRef { start, len: len as u32 }
    }

    /// The name of `len` bytes at `offset` of the string table given to
    /// [`in_file`](Self::in_file), without reading it now (a table without one: no name).
    pub(crate) fn push_in_file(&self, offset: u32, len: usize) -> NameRef {
        match &self.strtab {
            Some(_) if len <= NameRef::MAX_LEN => {
                NameRef { start: offset, len: len as u32 | NameRef::IN_FILE }
            }
            _ => NameRef::default(),
        }
    }

    /// Where the name `r` lies in the file's string table, if it was left there.
    pub(crate) fn file_offset(&self, r: NameRef) -> Option<u32> {
        r.in_file().then_some(r.start)
    }

    /// The name stored at `r`; empty for a name left in the file (see [`read`](Self::read)).
    pub(crate) fn get(&self, r: NameRef) -> &str {
        if r.in_file() {
            return "";
        }
        let start = r.start as usize;
        self.text.get(start..start + r.len()).unwrap_or_default()
    }

    /// The name at `r`, read from the file if it was left there (bytes that are not UTF-8
    /// replaced, as names kept in memory are). An error when the file no longer holds it:
    /// cut short, or rewritten (the bytes read are not one name ended by a NUL).
    pub(crate) fn read(&self, r: NameRef) -> std::io::Result<Cow<'_, str>> {
        if !r.in_file() {
            return Ok(Cow::Borrowed(self.get(r)));
        }
        let mut buf = Vec::new();
        self.read_into(r, &mut buf)?;
        Ok(match String::from_utf8(buf) {
            Ok(s) => Cow::Owned(s),
            Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        })
    }

    /// Reads the bytes of a name left in the file into `buf` (one `pread`).
    fn read_into(&self, r: NameRef, buf: &mut Vec<u8>) -> std::io::Result<()> {
        use std::io::{Error, ErrorKind};
        let Some(t) = &self.strtab else { return Err(Error::new(ErrorKind::NotFound, "no string table")) };
        let (start, len) = (u64::from(r.start), r.len());
        if start + len as u64 >= t.size {
            return Err(Error::new(ErrorKind::InvalidData, "name past the end of its string table"));
        }
        // The NUL after the name too: a file rewritten since has other bytes there.
        buf.clear();
        buf.resize(len + 1, 0);
        t.file.read_exact_at(buf, t.offset + start)?;
        if buf.pop() != Some(0) || memchr::memchr(0, buf).is_some() {
            return Err(Error::new(ErrorKind::InvalidData, "the string table changed since it was read"));
        }
        Ok(())
    }

    /// Frees the spare capacity of the buffer.
    pub(crate) fn shrink(&mut self) {
        self.text.shrink_to_fit();
    }

    /// Bytes of memory held (the buffer; not the names left in the file).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.strtab.as_ref().map_or(0, |_| std::mem::size_of::<StrTab>())
    }

    /// True when names are read from a file.
    pub(crate) fn has_file(&self) -> bool {
        self.strtab.is_some()
    }
}

/// How a name is shown (perf compares demangled names when it chooses between aliases).
pub(crate) type Display = fn(&str) -> Cow<'_, str>;

/// Symbols sorted by start address, without duplicates, each with an end.
///
/// Choosing between aliases at one address may need their demangled names (C++
/// constructors and destructors come in pairs of equal size): such a choice is made on the
/// first lookup of that address rather than for every alias of a large library up front.
#[derive(Clone, Debug)]
pub(crate) struct SymbolTable {
    entries: Vec<Entry>,
    /// The start of each entry: the binary search of [`find`](Self::find) runs over these
    /// (8 bytes each rather than a whole entry, so fewer cache misses on a large table).
    starts: Vec<u64>,
    names: Names,
    /// Same-address aliases of equal size whose choice depends on the names, by address;
    /// `entries` holds a nameless stand-in with the right start and end.
    undecided: FxHashMap<u64, Aliases>,
    display: Display,
}

/// Aliases at one address and, once looked up, the one perf would show.
#[derive(Clone, Debug)]
struct Aliases {
    candidates: Vec<Entry>,
    chosen: OnceLock<usize>,
}

impl Aliases {
    fn chosen(&self, names: &Names, display: Display) -> &Entry {
        let i = *self.chosen.get_or_init(|| best(&self.candidates, names, display));
        &self.candidates[i]
    }
}

impl Default for SymbolTable {
    fn default() -> Self {
        SymbolTable {
            entries: Vec::new(),
            starts: Vec::new(),
            names: Names::default(),
            undecided: FxHashMap::default(),
            display: as_is,
        }
    }
}

fn as_is(name: &str) -> Cow<'_, str> {
    Cow::Borrowed(name)
}

impl SymbolTable {
    /// Builds a table from symbols in file order. Symbols at the same address are reduced to
    /// one as perf does (sized over unsized, non-weak over weak, global over local, fewer
    /// leading underscores, longer name, then the first); a symbol without a size ends
    /// where the next one starts (the last one at the end of the next page).
    pub(crate) fn new(entries: Vec<Entry>, names: Names) -> SymbolTable {
        Self::with_names(entries, names, as_is)
    }

    /// Like [`new`](Self::new), comparing names as `display` shows them (perf compares
    /// demangled names when it chooses between aliases).
    pub(crate) fn with_names(mut entries: Vec<Entry>, names: Names, display: Display) -> SymbolTable {
        entries.sort_by_key(|e| e.start); // stable: file order among equal starts
        // perf fixes the ends first, then removes duplicates (so the last unsized symbol of
        // a group at one address, the only one with a length, wins).
        fix_ends(&mut entries);
        let mut table = SymbolTable {
            entries: Vec::new(),
            starts: Vec::new(),
            names,
            undecided: FxHashMap::default(),
            display,
        };
        // Each group of aliases is reduced in place (no second vector of every symbol while
        // a large table is built).
        let (mut kept, mut i) = (0, 0);
        while i < entries.len() {
            let start = entries[i].start;
            let len = entries[i..].iter().take_while(|e| e.start == start).count();
            let e = table.reduce_group(&entries[i..i + len]);
            entries[kept] = e;
            kept += 1;
            i += len;
        }
        entries.truncate(kept);
        entries.shrink_to_fit();
        table.entries = entries;
        table.index_starts();
        table
    }

    fn index_starts(&mut self) {
        self.starts = self.entries.iter().map(|e| e.start).collect();
    }

    /// Reduces the aliases of one address to one entry (or a stand-in, when the choice
    /// needs names and cannot change the extent).
    fn reduce_group(&mut self, group: &[Entry]) -> Entry {
        if group.len() <= 1 {
            return group[0].clone();
        }
        let same_extent = group.iter().all(|e| e.end == group[0].end);
        if same_extent && needs_names(group) {
            let (start, end, binding) = (group[0].start, group[0].end, group[0].binding);
            self.undecided.insert(start, Aliases { candidates: group.to_vec(), chosen: OnceLock::new() });
            Entry { start, end, binding, name: NameRef::default() }
        } else {
            group[best(group, &self.names, self.display)].clone()
        }
    }

    /// Adds symbols after the fixups (perf adds PLT entries this way): they keep their
    /// sizes and never replace an existing symbol. Their names must be in the table's
    /// [`Names`] (see [`names_mut`](Self::names_mut)).
    pub(crate) fn add_sized(&mut self, extra: Vec<Entry>) {
        if extra.is_empty() {
            return;
        }
        // Stand-ins are found by address: settle those an extra symbol would share.
        for e in &extra {
            if let Some(aliases) = self.undecided.remove(&e.start) {
                let i = self.entries.partition_point(|x| x.start < e.start);
                self.entries[i] = aliases.chosen(&self.names, self.display).clone();
            }
        }
        // Exactly: a large table would otherwise double its capacity for a few PLT entries.
        self.entries.reserve_exact(extra.len());
        self.entries.extend(extra);
        self.entries.sort_by_key(|e| e.start);
        self.index_starts();
    }

    /// Where names of symbols for [`add_sized`](Self::add_sized) are stored.
    pub(crate) fn names_mut(&mut self) -> &mut Names {
        &mut self.names
    }

    /// The index of the symbol containing `addr`, if any.
    pub(crate) fn find(&self, addr: u64) -> Option<usize> {
        let i = self.starts.partition_point(|&start| start <= addr).checked_sub(1)?;
        // Symbols may nest (a sized symbol inside a larger one): look back a little.
        (i.saturating_sub(8)..=i).rev().find(|&j| contains(&self.entries[j], addr))
    }

    /// The symbol at `index` (from [`find`](Self::find)).
    pub(crate) fn get(&self, index: usize) -> Option<&Entry> {
        let e = self.entries.get(index)?;
        if self.undecided.is_empty() {
            return Some(e);
        }
        Some(self.undecided.get(&e.start).map_or(e, |a| a.chosen(&self.names, self.display)))
    }

    /// The (raw) name of an entry of this table; empty for a name left in the file (see
    /// [`read_name`](Self::read_name)).
    pub(crate) fn name(&self, e: &Entry) -> &str {
        self.names.get(e.name)
    }

    /// The (raw) name of an entry of this table, read from the file if it was left there.
    pub(crate) fn read_name(&self, e: &Entry) -> std::io::Result<Cow<'_, str>> {
        self.names.read(e.name)
    }

    /// Bytes of memory the table holds (its vectors and names; a small overhead per
    /// undecided alias group is estimated).
    pub(crate) fn heap_bytes(&self) -> usize {
        let aliases: usize = self
            .undecided
            .values()
            .map(|a| a.candidates.capacity() * size_of::<Entry>() + size_of::<(u64, Aliases)>() + 8)
            .sum();
        self.entries.capacity() * size_of::<Entry>()
            + self.starts.capacity() * size_of::<u64>()
            + self.names.heap_bytes()
            + aliases
    }

    /// True when names are read from the file on demand.
    pub(crate) fn names_in_file(&self) -> bool {
        self.names.has_file()
    }

    /// Number of symbols.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table has no symbol.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The alias perf keeps among `group` (same address, file order): a fold of
/// [`first_is_better`].
fn best(group: &[Entry], names: &Names, display: Display) -> usize {
    let mut w = 0;
    for i in 1..group.len() {
        if !first_is_better(&group[w], &group[i], names, display) {
            w = i;
        }
    }
    w
}

/// Whether choosing among `group` reaches the comparison of names.
fn needs_names(group: &[Entry]) -> bool {
    let mut w = 0;
    for i in 1..group.len() {
        match by_kind(&group[w], &group[i]) {
            Some(true) => {}
            Some(false) => w = i,
            None => return true,
        }
    }
    false
}

fn contains(e: &Entry, addr: u64) -> bool {
    (e.start <= addr && addr < e.end) || (e.start == addr && e.end == addr)
}

/// Sizes are fixed after duplicates are removed, like perf: an unsized symbol ends where the
/// next begins; the last unsized one ends one page after its page.
fn fix_ends(v: &mut [Entry]) {
    for i in 1..v.len() {
        if v[i - 1].end == v[i - 1].start {
            v[i - 1].end = v[i].start;
        }
    }
    if let Some(last) = v.last_mut()
        && last.end == last.start
    {
        last.end = last.start.div_ceil(4096).saturating_mul(4096).saturating_add(4096);
    }
}

/// perf's `choose_best_symbol`: true when `a` (earlier in order) wins over `b`.
fn first_is_better(a: &Entry, b: &Entry, names: &Names, display: Display) -> bool {
    if let Some(first) = by_kind(a, b) {
        return first;
    }
    // A name left in a file that can no longer be read compares as no name.
    let (ra, rb) = (names.read(a.name).unwrap_or_default(), names.read(b.name).unwrap_or_default());
    let (na, nb) = (display(&ra), display(&rb));
    let (ua, ub) = (underscores(&na), underscores(&nb));
    if ua != ub {
        return ua < ub;
    }
    na.len() >= nb.len()
}

/// The rules of `choose_best_symbol` before names: size, then weak, then global; `None`
/// when they tie.
fn by_kind(a: &Entry, b: &Entry) -> Option<bool> {
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if la > 0 && lb == 0 {
        return Some(true);
    }
    if la == 0 && lb > 0 {
        return Some(false);
    }
    let (wa, wb) = (a.binding == Binding::Weak, b.binding == Binding::Weak);
    if wa != wb {
        return Some(wb);
    }
    let (ga, gb) = (a.binding == Binding::Global, b.binding == Binding::Global);
    if ga != gb {
        return Some(ga);
    }
    None
}

fn underscores(name: &str) -> usize {
    name.bytes().take_while(|&b| b == b'_').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    type Sym<'a> = (u64, u64, Binding, &'a str);

    /// Entries (start, size, binding, name) and their names.
    fn entries(list: &[Sym<'_>]) -> (Vec<Entry>, Names) {
        let mut names = Names::default();
        let v = list
            .iter()
            .map(|&(start, size, binding, name)| Entry {
                start,
                end: start + size,
                binding,
                name: names.push(name),
            })
            .collect();
        (v, names)
    }

    fn table(list: &[Sym<'_>]) -> SymbolTable {
        let (v, names) = entries(list);
        SymbolTable::new(v, names)
    }

    fn name_at(t: &SymbolTable, addr: u64) -> &str {
        t.name(t.get(t.find(addr).unwrap()).unwrap())
    }

    #[test]
    fn duplicates_and_ends_follow_perf() {
        let t = table(&[
            (0x2000, 0, Binding::Global, "b"),
            (0x1000, 0, Binding::Global, "_stext"),
            (0x1000, 0, Binding::Global, "srso_alias"),
            (0x1000, 0, Binding::Weak, "weakling"),
            (0x1000, 0, Binding::Local, "last_wins"),
            (0x3000, 0x10, Binding::Local, "sized"),
        ]);
        assert_eq!(t.len(), 3);
        assert_eq!(name_at(&t, 0x1fff), "last_wins");
        assert_eq!(name_at(&t, 0x2fff), "b");
        assert_eq!(name_at(&t, 0x300f), "sized");
        assert_eq!(t.find(0x3010), None);
        assert_eq!(t.find(0xfff), None);
    }

    /// An entry stays 32 bytes; names are stored end to end.
    #[test]
    fn names_and_entries_stay_small() {
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        let mut names = Names::default();
        let r = names.push("déjà");
        let e = names.push("elsewhere");
        assert_eq!((names.get(r), names.get(e)), ("déjà", "elsewhere"));
    }

    #[test]
    fn nested_symbols_are_found() {
        let t = table(&[(0x100, 0x100, Binding::Global, "outer"), (0x120, 0x10, Binding::Local, "in")]);
        assert_eq!(name_at(&t, 0x125), "in");
        assert_eq!(name_at(&t, 0x140), "outer");
    }

    #[test]
    fn aliases_are_chosen_by_demangled_name_on_lookup() {
        // Raw names would pick `c` (no leading underscore); demangled, `a::b` ties on
        // underscores and wins by length, as perf chooses.
        let list = [
            (0x100, 0x10, Binding::Global, "_ZN1a1bEv"),
            (0x100, 0x10, Binding::Global, "c"),
            (0x200, 0x10, Binding::Global, "d"),
        ];
        let (v, names) = entries(&list);
        let t = SymbolTable::with_names(v, names, crate::symbols::demangle);
        assert_eq!(name_at(&t, 0x105), "_ZN1a1bEv");
        assert_eq!(t.find(0x110), None);
        assert_eq!(name_at(&table(&list), 0x105), "c");
        // A PLT-like symbol added at the same address settles the choice first.
        let (v, names) = entries(&list);
        let mut t = SymbolTable::with_names(v, names, crate::symbols::demangle);
        let name = t.names_mut().push("p@plt");
        t.add_sized(vec![Entry { start: 0x100, end: 0x110, binding: Binding::Global, name }]);
        let all: Vec<&str> = (0..t.len()).map(|i| t.name(t.get(i).unwrap())).collect();
        assert_eq!(all, ["_ZN1a1bEv", "p@plt", "d"]);
    }
}
