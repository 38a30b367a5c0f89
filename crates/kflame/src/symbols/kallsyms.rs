//! `/proc/kallsyms`: kernel symbols, read the way `perf` reads them.

use super::Symbol;
use super::table::{Binding, Entry, Names, SymbolTable};

/// Kernel symbols from a kallsyms file (`ADDRESS TYPE NAME [MODULE]` per line).
///
/// Only text, weak, data and bss symbols are kept (types `T W D B`, either case), module
/// symbols (`[module]` suffix) are set aside, and symbols without a size end where the next
/// one begins: the same table `perf script --kallsyms` builds, so lookups name the same
/// functions.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    table: SymbolTable,
    modules: SymbolTable,
    text: Option<u64>,
    skipped: u64,
}

impl Kallsyms {
    /// Parses kallsyms text. Malformed lines are counted ([`skipped`](Self::skipped)), not
    /// fatal.
    pub fn parse(data: &[u8]) -> Kallsyms {
        let mut entries = Vec::new();
        let mut modules = Vec::new();
        let (mut names, mut module_names) = (Names::default(), Names::default());
        let mut text = None;
        let mut skipped = 0;
        for line in data.split(|&b| b == b'\n') {
            if line.is_empty() {
                continue;
            }
            match parse_line(line) {
                Some((addr, ty, name, module)) => {
                    if name == "_text" && module.is_none() {
                        text = Some(addr);
                    }
                    if !matches!(ty.to_ascii_uppercase(), b'T' | b'W' | b'D' | b'B') {
                        continue;
                    }
                    let (list, arena) = if module.is_some() {
                        (&mut modules, &mut module_names)
                    } else {
                        (&mut entries, &mut names)
                    };
                    list.push(Entry { start: addr, end: addr, binding: binding(ty), name: arena.push(name) });
                }
                None => skipped += 1,
            }
        }
        Kallsyms {
            table: SymbolTable::new(entries, names),
            modules: SymbolTable::new(modules, module_names),
            text,
            skipped,
        }
    }

    /// The symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<Symbol<'_>> {
        let i = self.table.find(addr)?;
        self.table.get(i).map(|e| Symbol { name: self.table.name(e), start: e.start, index: i })
    }

    /// The index of the (non-module) symbol containing `addr` (what [`lookup`](Self::lookup)
    /// returns as [`Symbol::index`]).
    pub fn symbol_index(&self, addr: u64) -> Option<usize> {
        self.table.find(addr)
    }

    /// The module symbol (`name [module]` lines) containing `addr`.
    pub fn lookup_module(&self, addr: u64) -> Option<Symbol<'_>> {
        let i = self.modules.find(addr)?;
        self.modules.get(i).map(|e| Symbol { name: self.modules.name(e), start: e.start, index: i })
    }

    /// One past the last address covered by a (non-module) symbol.
    pub fn end(&self) -> Option<u64> {
        self.table.len().checked_sub(1).and_then(|i| self.table.get(i)).map(|e| e.end)
    }

    /// Address of `_text` (the kernel's relocation reference), if listed.
    pub fn text_address(&self) -> Option<u64> {
        self.text
    }

    /// Number of symbols kept.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no symbol was kept (e.g. an unprivileged read where every address is 0
    /// still has symbols; an empty or foreign file has none).
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Lines that did not look like `ADDRESS TYPE NAME`.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }
}

fn binding(ty: u8) -> Binding {
    match ty {
        b'W' => Binding::Weak,
        t if t.is_ascii_uppercase() => Binding::Global,
        _ => Binding::Local,
    }
}

type Line<'a> = (u64, u8, &'a str, Option<&'a str>);

fn parse_line(line: &[u8]) -> Option<Line<'_>> {
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_ascii_whitespace();
    let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
    let ty = parts.next()?;
    if ty.len() != 1 {
        return None;
    }
    let name = parts.next()?;
    let module = parts.next().map(|m| m.trim_start_matches('[').trim_end_matches(']'));
    Some((addr, ty.as_bytes()[0], name, module))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &[u8] = b"\
ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t helper
ffffffff81000200 A absolute_thing
ffffffff81000300 W weak_fn
ffffffffc0001000 t mod_fn\t[some_module]
not a line
ffffffff81001000 D some_data
";

    #[test]
    fn lookups_follow_perf_rules() {
        let k = Kallsyms::parse(SAMPLE);
        assert_eq!(k.skipped(), 1);
        assert_eq!(k.text_address(), Some(0xffffffff81000000));
        assert_eq!(k.lookup(0xffffffff81000010).unwrap().name, "_text");
        let s = k.lookup(0xffffffff81000250).unwrap();
        assert_eq!((s.name, s.start), ("helper", 0xffffffff81000100));
        assert_eq!(k.lookup(0xffffffff81000fff).unwrap().name, "weak_fn");
        // last symbol: up to the end of the next page
        assert_eq!(k.lookup(0xffffffff81001fff).unwrap().name, "some_data");
        assert!(k.lookup(0xffffffff81002000).is_none());
        assert!(k.lookup(0xffffffff80000000).is_none());
        assert!(k.lookup(0xffffffffc0001000).is_none());
        assert_eq!(k.lookup_module(0xffffffffc0001010).unwrap().name, "mod_fn");
    }

    #[test]
    fn garbage_is_counted_not_fatal() {
        let k = Kallsyms::parse(b"\xff\xfe\nzz T x\n12 TT y\n\n");
        assert!(k.is_empty());
        assert_eq!(k.skipped(), 3);
    }
}
