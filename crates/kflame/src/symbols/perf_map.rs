//! Perf map files (`/tmp/perf-PID.map`): the symbols JIT compilers (V8, the JVM with
//! perf-map-agent, LuaJIT, .NET...) write for code they generate in anonymous memory.

use std::path::Path;

use super::SymbolError;

/// The entries of one perf map file, sorted by start address.
#[derive(Clone, Debug, Default)]
pub struct PerfMap {
    entries: Vec<(u64, u64, Box<str>)>,
}

impl PerfMap {
    /// Parses `START SIZE NAME` lines (hexadecimal, `0x` optional); lines that do not have
    /// that shape or name nothing are ignored.
    pub fn parse(text: &str) -> PerfMap {
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let mut entries: Vec<_> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.splitn(3, ' ');
                let (start, size, name) = (hex(it.next()?)?, hex(it.next()?)?, it.next()?.trim());
                (!name.is_empty()).then(|| (start, size, name.into()))
            })
            .collect();
        entries.sort_by_key(|e| e.0);
        PerfMap { entries }
    }

    /// Reads and parses the perf map file at `path`.
    pub fn open(path: &Path) -> Result<PerfMap, SymbolError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| SymbolError::Io { path: path.to_path_buf(), source })?;
        Ok(PerfMap::parse(&text))
    }

    /// The name of the code containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.entries.partition_point(|e| e.0 <= addr).checked_sub(1)?;
        let (start, size, name) = &self.entries[i];
        (addr - start < *size).then_some(&**name)
    }

    /// The entries as a symbol table keyed by address, looked up as perf does (an entry
    /// covers `[start, start + size)`, an empty one its start address only).
    pub fn to_symbols(&self) -> super::ElfSymbols {
        super::ElfSymbols::from_sized(self.entries.iter().cloned())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the map names nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_map_of_a_jit() {
        let m = PerfMap::parse("7f00001000 40 LazyCompile:~main app.js:1\n0x7f00000000 10 stub\nbad line\n");
        assert_eq!(m.len(), 2);
        assert_eq!(m.lookup(0x7f00000000), Some("stub"));
        assert_eq!(m.lookup(0x7f00001020), Some("LazyCompile:~main app.js:1"));
        assert_eq!(m.lookup(0x7f00001040), None);
        assert_eq!(m.lookup(0x10), None);
        assert!(PerfMap::open(Path::new("/nonexistent/perf-1.map")).is_err());
        let syms = m.to_symbols();
        assert_eq!(
            syms.lookup(0x7f00001020).map(|s| (s.name, s.start)),
            Some(("LazyCompile:~main app.js:1", 0x7f00001000))
        );
        assert_eq!(syms.lookup(0x7f00001040), None);
        let empty = PerfMap::parse("1000 0 zero\n").to_symbols();
        assert_eq!(empty.lookup(0x1000).map(|s| s.name), Some("zero"));
        assert_eq!(empty.lookup(0x1001), None);
    }
}
