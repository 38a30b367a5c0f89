//! A sorted symbol table with perf's rules for duplicates, missing sizes and lookups.

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
    /// The raw (mangled) name.
    pub(crate) name: Box<str>,
}

/// Symbols sorted by start address, without duplicates, each with an end.
#[derive(Clone, Debug, Default)]
pub(crate) struct SymbolTable {
    entries: Vec<Entry>,
}

impl SymbolTable {
    /// Builds a table from symbols in file order. Symbols at the same address are reduced to
    /// one as perf does (sized over unsized, non-weak over weak, global over local, fewer
    /// leading underscores, longer name, then the first); a symbol without a size ends
    /// where the next one starts (the last one at the end of the next page).
    pub(crate) fn new(entries: Vec<Entry>) -> SymbolTable {
        Self::with_names(entries, |n| std::borrow::Cow::Borrowed(n))
    }

    /// Like [`new`](Self::new), comparing names as `display` shows them (perf compares
    /// demangled names when it chooses between aliases).
    pub(crate) fn with_names(
        mut entries: Vec<Entry>,
        display: impl Fn(&str) -> std::borrow::Cow<'_, str>,
    ) -> SymbolTable {
        entries.sort_by_key(|e| e.start); // stable: file order among equal starts
        // perf fixes the ends first, then removes duplicates (so the last unsized symbol of
        // a group at one address, the only one with a length, wins).
        fix_ends(&mut entries);
        let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
        for e in entries {
            match out.last_mut() {
                Some(last) if last.start == e.start => {
                    if !first_is_better(last, &e, &display) {
                        *last = e;
                    }
                }
                _ => out.push(e),
            }
        }
        SymbolTable { entries: out }
    }

    /// Adds symbols after the fixups (perf adds PLT entries this way): they keep their
    /// sizes and never replace an existing symbol.
    pub(crate) fn add_sized(&mut self, extra: Vec<Entry>) {
        if extra.is_empty() {
            return;
        }
        self.entries.extend(extra);
        self.entries.sort_by_key(|e| e.start);
    }

    /// The index of the symbol containing `addr`, if any.
    pub(crate) fn find(&self, addr: u64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.start <= addr).checked_sub(1)?;
        // Symbols may nest (a sized symbol inside a larger one): look back a little.
        (i.saturating_sub(8)..=i).rev().find(|&j| contains(&self.entries[j], addr))
    }

    /// The symbol at `index` (from [`find`](Self::find)).
    pub(crate) fn get(&self, index: usize) -> Option<&Entry> {
        self.entries.get(index)
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
fn first_is_better(a: &Entry, b: &Entry, display: &impl Fn(&str) -> std::borrow::Cow<'_, str>) -> bool {
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if la > 0 && lb == 0 {
        return true;
    }
    if la == 0 && lb > 0 {
        return false;
    }
    let (wa, wb) = (a.binding == Binding::Weak, b.binding == Binding::Weak);
    if wa != wb {
        return wb;
    }
    let (ga, gb) = (a.binding == Binding::Global, b.binding == Binding::Global);
    if ga != gb {
        return ga;
    }
    let (na, nb) = (display(&a.name), display(&b.name));
    let (ua, ub) = (underscores(&na), underscores(&nb));
    if ua != ub {
        return ua < ub;
    }
    na.len() >= nb.len()
}

fn underscores(name: &str) -> usize {
    name.bytes().take_while(|&b| b == b'_').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(start: u64, size: u64, binding: Binding, name: &str) -> Entry {
        Entry { start, end: start + size, binding, name: name.into() }
    }

    #[test]
    fn duplicates_and_ends_follow_perf() {
        let t = SymbolTable::new(vec![
            e(0x2000, 0, Binding::Global, "b"),
            e(0x1000, 0, Binding::Global, "_stext"),
            e(0x1000, 0, Binding::Global, "srso_alias"),
            e(0x1000, 0, Binding::Weak, "weakling"),
            e(0x1000, 0, Binding::Local, "last_wins"),
            e(0x3000, 0x10, Binding::Local, "sized"),
        ]);
        assert_eq!(t.len(), 3);
        assert_eq!(&*t.get(t.find(0x1fff).unwrap()).unwrap().name, "last_wins");
        assert_eq!(&*t.get(t.find(0x2fff).unwrap()).unwrap().name, "b");
        assert_eq!(&*t.get(t.find(0x300f).unwrap()).unwrap().name, "sized");
        assert_eq!(t.find(0x3010), None);
        assert_eq!(t.find(0xfff), None);
    }

    #[test]
    fn nested_symbols_are_found() {
        let t = SymbolTable::new(vec![
            e(0x100, 0x100, Binding::Global, "outer"),
            e(0x120, 0x10, Binding::Local, "in"),
        ]);
        assert_eq!(&*t.get(t.find(0x125).unwrap()).unwrap().name, "in");
        assert_eq!(&*t.get(t.find(0x140).unwrap()).unwrap().name, "outer");
    }
}
