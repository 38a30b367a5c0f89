//! The recorders' view of [`crate::symbols`]: kernel addresses through `/proc/kallsyms`,
//! user addresses through the mapping that contained them and the ELF symbols of the mapped
//! file (loaded once per file, as the process sees it), JIT code through
//! `/tmp/perf-PID.map`. Names follow perf's rules and are demangled as perf shows them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::symbols::{self, FileSymbols, Kallsyms, PerfMap};

/// One executable mapping of a process (from `/proc/PID/maps` or a `MMAP2` record); the
/// object is the mapped path.
pub(crate) type Mapping = symbols::Mapping<Vec<u8>>;

/// Resolves addresses to function names, caching the symbol tables of ELF files within a
/// budget of bytes.
pub(crate) struct Symbolizer {
    /// Shared by the recorders of this process that read the same text ([`shared_kallsyms`]).
    kernel: Arc<Kallsyms>,
    /// False when kallsyms shows no address (`kptr_restrict`, or unreadable).
    kernel_visible: bool,
    /// Why kallsyms could not be read (then kernel frames go unnamed).
    kallsyms_error: Option<String>,
    /// Symbols of each file (by path), with the names asked for so far.
    files: FxHashMap<Vec<u8>, File>,
    /// Bytes held by `files` (tables, names, keys).
    bytes: usize,
    /// Bytes `files` may hold: past it, the least recently used tables are dropped whole.
    budget: usize,
    /// Tables of `files` that keep their file open (names read on demand).
    open_files: usize,
    /// Lookups made (the clock of least recent use).
    tick: u64,
    /// Names of string tables larger than this stay in their files.
    names_in_memory: u64,
    /// `/tmp/perf-PID.map` of each process (JIT compilers write them).
    jit: FxHashMap<u32, PerfMap>,
    /// Windows named so far.
    window: u64,
    /// Kernel addresses no symbol covered since kallsyms was read (a module loaded or a BPF
    /// program attached since), those that no symbol covered after it was read again either
    /// (never named: not counted again), and the window it was read in.
    kernel_missed: std::cell::RefCell<FxHashSet<u64>>,
    kernel_unnamed: FxHashSet<u64>,
    kernel_read_at: u64,
    /// Times kallsyms was read again.
    pub(crate) kallsyms_reloads: u64,
    /// Files forgotten so far (unused for long, or to keep within the budget).
    pub(crate) pruned_files: u64,
    /// Names that could not be read from their file (truncated or rewritten since its
    /// table was read; the table is dropped and read again when next used).
    pub(crate) unreadable_names: u64,
    /// A table was read or dropped since the window began (see [`Symbolizer::churned`]).
    churned: bool,
}

/// One file's symbols (or the failure to read them) as the symbolizer keeps them.
struct File {
    /// Shared with the other recorders of this process that use the same file
    /// ([`load`]).
    syms: Option<Arc<FileSymbols>>,
    /// The window that last used it.
    used: u64,
    /// The lookup that last used it.
    tick: u64,
    /// Demangled names of its symbols looked up so far, by symbol index (one lookup in the
    /// file, one demangling, for every process that maps it).
    names: FxHashMap<u32, Box<str>>,
    /// Bytes held, the path that keys it included.
    bytes: usize,
}

impl File {
    /// What an entry of `names` costs besides its text (key, box, hash table slot).
    const NAME_OVERHEAD: usize = 32;
    /// What a file costs besides its table and names.
    const OVERHEAD: usize = 128;
}

/// `/proc/kallsyms` (an error when `KFLAME_MASK_FEATURES` masks it).
pub(crate) fn read_kallsyms() -> std::io::Result<String> {
    use super::features::{Feature, masked, masked_error};
    if masked(Feature::Kallsyms) {
        return Err(masked_error(Feature::Kallsyms));
    }
    std::fs::read_to_string("/proc/kallsyms")
}

impl Default for Symbolizer {
    fn default() -> Symbolizer {
        Symbolizer::with_budget(Symbolizer::DEFAULT_BUDGET)
    }
}

impl Symbolizer {
    /// Loads `/proc/kallsyms` (an unreadable file leaves kernel frames `[unknown]`).
    pub(crate) fn new() -> Symbolizer {
        match read_kallsyms() {
            Ok(text) => Symbolizer::with_kallsyms(text),
            Err(e) => {
                Symbolizer { kallsyms_error: Some(e.to_string()), ..Symbolizer::with_kallsyms(String::new()) }
            }
        }
    }

    /// Why `/proc/kallsyms` could not be read when the symbolizer was made, if it could not.
    pub(crate) fn kallsyms_error(&self) -> Option<&str> {
        self.kallsyms_error.as_deref()
    }

    /// A symbolizer for the given kallsyms text.
    pub(crate) fn with_kallsyms(text: String) -> Symbolizer {
        let kernel = shared_kallsyms(&text);
        let kernel_visible = addresses_shown(&text);
        Symbolizer { kernel, kernel_visible, ..Symbolizer::default() }
    }

    /// Bytes the symbol tables of files and their names take at most by default: the two
    /// largest libraries of a Rust toolchain (`librustc_driver`, `libLLVM`, 340k symbols)
    /// take some 17 MiB with their names left in their files.
    pub(crate) const DEFAULT_BUDGET: usize = 24 << 20;

    /// Tables that keep their file open at most (a descriptor each).
    pub(crate) const OPEN_FILES: usize = 256;

    /// A symbolizer without kernel symbols whose file tables take at most `budget` bytes
    /// (a single table larger than that is kept alone while it is used).
    pub(crate) fn with_budget(budget: usize) -> Symbolizer {
        Symbolizer {
            kernel: Arc::default(),
            kernel_visible: false,
            kallsyms_error: None,
            files: FxHashMap::default(),
            bytes: 0,
            budget,
            open_files: 0,
            tick: 0,
            names_in_memory: FileSymbols::NAMES_IN_MEMORY,
            jit: FxHashMap::default(),
            window: 0,
            kernel_missed: Default::default(),
            kernel_unnamed: FxHashSet::default(),
            kernel_read_at: 0,
            kallsyms_reloads: 0,
            pruned_files: 0,
            unreadable_names: 0,
            churned: false,
        }
    }

    /// Sets the budget of the file tables (see [`with_budget`](Self::with_budget)).
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        self.shrink_to_budget(None);
    }

    /// True when kernel addresses can be named.
    pub(crate) fn has_kernel_symbols(&self) -> bool {
        self.kernel_visible && !self.kernel.is_empty()
    }

    /// The kernel function at `addr` (module symbols first: as in perf, the kernel image's
    /// map ends where the modules begin).
    pub(crate) fn kernel(&self, addr: u64) -> Option<&str> {
        if !self.kernel_visible {
            return None;
        }
        let found = self.kernel.lookup_module(addr).or_else(|| self.kernel.lookup(addr)).map(|s| s.name);
        if found.is_none() && !self.kernel_unnamed.contains(&addr) {
            let mut missed = self.kernel_missed.borrow_mut();
            if missed.len() < Self::MISSED_MAX {
                missed.insert(addr);
            }
        }
        found
    }

    /// Unnamed kernel addresses remembered at most.
    const MISSED_MAX: usize = 1 << 16;

    /// Windows between two readings of kallsyms at most.
    pub(crate) const KALLSYMS_EVERY: u64 = 60;

    /// True when kallsyms should be read again: kernel addresses went unnamed since it was
    /// read (modules loaded, BPF programs attached while recording), and it was read at
    /// least [`Symbolizer::KALLSYMS_EVERY`] windows ago.
    pub(crate) fn kernel_stale(&self) -> bool {
        self.kernel_visible
            && !self.kernel_missed.borrow().is_empty()
            && self.window >= self.kernel_read_at + Self::KALLSYMS_EVERY
    }

    /// Takes a new kallsyms text (the kernel's symbols now).
    pub(crate) fn reload_kernel(&mut self, text: &str) {
        // The old table goes first: with the new one and the text, the three made the
        // recorder's largest transient (some 25 MB for 120k kernel symbols).
        self.kernel = Arc::default();
        self.kernel = shared_kallsyms(text);
        self.kernel_visible = addresses_shown(text);
        // Addresses unnamed before: if the new symbols do not name them either, they never
        // will be (not kernel text), and do not make kallsyms stale again.
        let missed = std::mem::take(&mut *self.kernel_missed.borrow_mut());
        if self.kernel_unnamed.len() + missed.len() > Self::MISSED_MAX {
            self.kernel_unnamed.clear();
        }
        self.kernel_unnamed.extend(missed);
        self.kernel_read_at = self.window;
        self.kallsyms_reloads += 1;
    }

    /// The function at user address `addr` inside `map` of process `pid`, demangled.
    pub(crate) fn user(&mut self, pid: u32, map: &Mapping, addr: u64) -> Option<&str> {
        if !map.object.starts_with(b"/") {
            return None; // [vdso], anonymous memory, ...
        }
        self.tick += 1;
        let (window, tick) = (self.window, self.tick);
        if !self.files.contains_key(&map.object) {
            let path = PathBuf::from(String::from_utf8_lossy(&map.object).into_owned());
            let syms = load(pid, &path, self.names_in_memory);
            self.churned = true;
            let table = syms.as_deref().map_or(0, FileSymbols::heap_bytes);
            let bytes = table + map.object.len() + File::OVERHEAD;
            self.open_files += usize::from(syms.as_deref().is_some_and(FileSymbols::names_in_file));
            self.bytes += bytes;
            self.files.insert(
                map.object.clone(),
                File { syms, used: window, tick, names: FxHashMap::default(), bytes },
            );
            self.shrink_to_budget(Some(&map.object));
        }
        let file = self.files.get_mut(&map.object)?;
        (file.used, file.tick) = (window, tick);
        let syms = file.syms.as_ref()?;
        let index = syms.symbol_index(map.file_offset(addr))?;
        let key = u32::try_from(index).ok()?;
        if let std::collections::hash_map::Entry::Vacant(slot) = file.names.entry(key) {
            let Ok(raw) = syms.symbol(index)?.1 else {
                // Truncated or rewritten under the table: read it again next time.
                self.unreadable_names += 1;
                let object = map.object.clone();
                self.drop_file(&object);
                return None;
            };
            let name: Box<str> = symbols::demangle(&raw).into();
            let bytes = name.len() + File::NAME_OVERHEAD;
            slot.insert(name);
            file.bytes += bytes;
            self.bytes += bytes;
            let object = map.object.clone();
            self.shrink_to_budget(Some(&object));
        }
        self.files.get(&map.object)?.names.get(&key).map(|n| &**n)
    }

    /// Forgets the file of `path` (its table, its names).
    fn drop_file(&mut self, path: &[u8]) {
        if let Some(f) = self.files.remove(path) {
            self.churned = true;
            self.bytes -= f.bytes;
            self.open_files -= usize::from(f.syms.as_deref().is_some_and(FileSymbols::names_in_file));
            self.pruned_files += 1;
        }
    }

    /// Drops the least recently used tables, whole, while the tables take more than the
    /// budget or keep more than [`Symbolizer::OPEN_FILES`] files open; never `keep` (the
    /// table in use).
    fn shrink_to_budget(&mut self, keep: Option<&[u8]>) {
        while self.bytes > self.budget || self.open_files > Self::OPEN_FILES {
            let over_files = self.open_files > Self::OPEN_FILES;
            let victim = self
                .files
                .iter()
                .filter(|(k, _)| Some(k.as_slice()) != keep)
                .filter(|(_, f)| !over_files || f.syms.as_deref().is_some_and(FileSymbols::names_in_file))
                .min_by_key(|(_, f)| f.tick)
                .map(|(k, _)| k.clone());
            match victim {
                Some(path) => self.drop_file(&path),
                None => break,
            }
        }
    }

    /// Bytes the file tables and their names take.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Files whose symbols are kept at most.
    pub(crate) const FILES: usize = 4096;
    /// Windows a file's symbols are kept without being used.
    pub(crate) const IDLE_WINDOWS: u64 = 60;

    /// Starts naming a new window: forgets the JIT maps read so far (JIT compilers append
    /// to them while they run, so each window reads them again) and the symbols of files
    /// no stack used in the last [`Symbolizer::IDLE_WINDOWS`] windows (of programs that
    /// ran once, or libraries replaced by an upgrade); past [`Symbolizer::FILES`] files,
    /// the least recently used go first (as they do past the budget of bytes).
    pub(crate) fn next_window(&mut self) {
        self.churned = false;
        self.jit.clear();
        self.window += 1;
        let oldest = self.window.saturating_sub(Self::IDLE_WINDOWS);
        let mut old: Vec<(u64, Vec<u8>)> = self.files.iter().map(|(k, f)| (f.used, k.clone())).collect();
        old.sort_unstable();
        let excess = old.len().saturating_sub(Self::FILES);
        for (i, (used, path)) in old.into_iter().enumerate() {
            if used >= oldest && i >= excess {
                break;
            }
            self.drop_file(&path);
        }
    }

    /// True when a table was read or dropped since the window began: the memory that reading
    /// it took, or the table itself, was freed.
    pub(crate) fn churned(&self) -> bool {
        self.churned
    }

    /// Files whose symbols (or failure to read them) are kept.
    pub(crate) fn files(&self) -> usize {
        self.files.len()
    }

    /// The JIT-compiled function at `addr` of `pid`, from `/tmp/perf-PID.map`.
    pub(crate) fn jit(&mut self, pid: u32, addr: u64) -> Option<&str> {
        let map = self
            .jit
            .entry(pid)
            .or_insert_with(|| PerfMap::open(Path::new(&format!("/tmp/perf-{pid}.map"))).unwrap_or_default());
        map.lookup(addr)
    }
}

/// The kallsyms table of `text`: the one another recorder of this process parsed from the
/// same text while it is still in use (a watcher's capture beside its always-on recorder:
/// one copy of some 10 MB, not two), else parsed now and offered to the next.
fn shared_kallsyms(text: &str) -> Arc<Kallsyms> {
    /// The table parsed last, by its text's length and hash.
    static LAST: Mutex<Option<(usize, u64, Weak<Kallsyms>)>> = Mutex::new(None);
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        text.hash(&mut h);
        h.finish()
    };
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((len, h, table)) = last.as_ref()
        && (*len, *h) == (text.len(), hash)
        && let Some(table) = table.upgrade()
    {
        return table;
    }
    let table = Arc::new(Kallsyms::parse(text.as_bytes()));
    *last = Some((text.len(), hash, Arc::downgrade(&table)));
    table
}

/// True when some kallsyms line has a non-zero address (all zero: hidden by
/// `kptr_restrict` for this reader).
fn addresses_shown(text: &str) -> bool {
    text.lines().any(|l| {
        let addr = l.split_ascii_whitespace().next().and_then(|a| u64::from_str_radix(a, 16).ok());
        addr.is_some_and(|a| a != 0)
    })
}

/// The file as the process sees it (its root may differ), else as we see it. Separate debug
/// files are looked up by build id on this machine.
///
/// A table another recorder of this process holds for the same file (device, inode, size
/// and modification time) is shared rather than read again: a watcher's capture names the
/// same programs as its always-on recorder, and the large tables (a toolchain's libraries)
/// are then in memory once. Each recorder still counts the table in its own budget.
fn load(pid: u32, path: &Path, names_in_memory: u64) -> Option<Arc<FileSymbols>> {
    use std::os::unix::fs::MetadataExt;
    /// The identity of a file as opened, and the names-in-memory threshold of its table.
    type Key = (u64, u64, u64, i64, i64, u64);
    /// Tables held by some recorder of this process.
    static SHARED: Mutex<Option<FxHashMap<Key, Weak<FileSymbols>>>> = Mutex::new(None);
    let rel = path.strip_prefix("/").unwrap_or(path);
    let in_root = Path::new("/proc").join(pid.to_string()).join("root").join(rel);
    let debug_root = Path::new("/");
    for p in [in_root.as_path(), path] {
        let Ok(m) = std::fs::metadata(p) else { continue };
        let key = (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec(), names_in_memory);
        let lock = || SHARED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(table) = lock().as_ref().and_then(|t| t.get(&key)).and_then(Weak::upgrade) {
            return Some(table);
        }
        let Ok(table) = FileSymbols::open_with(p, debug_root, names_in_memory) else { continue };
        let table = Arc::new(table);
        let mut shared = lock();
        let map = shared.get_or_insert_with(FxHashMap::default);
        map.retain(|_, t| t.strong_count() > 0);
        map.insert(key, Arc::downgrade(&table));
        return Some(table);
    }
    None
}

#[cfg(test)]
impl Symbolizer {
    /// Uses `map` as the perf map of process `pid`.
    pub(crate) fn set_jit_map(&mut self, pid: u32, map: PerfMap) {
        self.jit.insert(pid, map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lookup() {
        let s = Symbolizer::with_kallsyms(
            "ffffffff81000000 T _stext\nffffffff81000100 t do_thing\n0000000000000000 A fixed\n\
             ffffffff81000200 d data_sym\nffffffffc0000300 T mod_fn\t[ext4]\n"
                .to_string(),
        );
        assert!(s.has_kernel_symbols());
        assert_eq!(s.kernel(0xffffffff81000150), Some("do_thing"));
        // Data symbols end the function before them, as in perf's kallsyms table.
        assert_eq!(s.kernel(0xffffffff81000250), Some("data_sym"));
        assert_eq!(s.kernel(0xffffffffc0000310), Some("mod_fn"));
        assert_eq!(s.kernel(0x1000), None);
        let hidden = Symbolizer::with_kallsyms("0000000000000000 T hidden\n0000000000000000 t x\n".into());
        assert!(!hidden.has_kernel_symbols());
        assert_eq!(hidden.kernel(0x10), None);
        assert!(!Symbolizer::with_kallsyms(String::new()).has_kernel_symbols());
    }

    /// A file's symbols are kept while windows use them, forgotten after
    /// `IDLE_WINDOWS` windows without.
    #[test]
    fn unused_files_are_forgotten() {
        let mut s = Symbolizer::default();
        let map = |object: &[u8]| Mapping { start: 0x1000, end: 0x2000, pgoff: 0, object: object.to_vec() };
        // Files that do not exist: their failure to load is cached the same way.
        assert!(s.user(0, &map(b"/nonexistent/a"), 0x1100).is_none());
        assert!(s.user(0, &map(b"/nonexistent/b"), 0x1100).is_none());
        assert_eq!(s.files(), 2);
        for _ in 0..Symbolizer::IDLE_WINDOWS {
            s.next_window();
            s.user(0, &map(b"/nonexistent/a"), 0x1100);
        }
        assert_eq!(s.files(), 2, "b was used {} windows ago", Symbolizer::IDLE_WINDOWS);
        s.next_window();
        assert_eq!(s.files(), 1);
        assert!(s.files.contains_key(&b"/nonexistent/a"[..]));
        assert_eq!(s.pruned_files, 1);
    }

    /// Two recorders naming addresses of the same file share one table of it; a file
    /// changed since is read again.
    #[test]
    fn recorders_share_the_table_of_a_file() {
        let dir = std::env::temp_dir().join(format!("kflame-sym-share-{}", std::process::id()));
        let files = fixture_files(&dir, 1);
        let (path, named) = &files[0];
        let (offset, name) = &named[0];
        let map = Mapping { start: 0x1000, end: u64::MAX, pgoff: 0, object: path.clone() };
        let (mut a, mut b) = (Symbolizer::default(), Symbolizer::default());
        assert_eq!(a.user(0, &map, offset + 0x1000), Some(name.as_str()));
        assert_eq!(b.user(0, &map, offset + 0x1000), Some(name.as_str()));
        let table = |s: &Symbolizer| s.files[path].syms.clone().unwrap();
        assert!(Arc::ptr_eq(&table(&a), &table(&b)));
        // Both count it in their budgets.
        assert_eq!(a.bytes(), b.bytes());
        // Rewritten (another inode): a third recorder reads it anew.
        let p = std::path::PathBuf::from(String::from_utf8(path.clone()).unwrap());
        let copy = dir.join("copy");
        std::fs::copy(&p, &copy).unwrap();
        std::fs::rename(&copy, &p).unwrap();
        let mut c = Symbolizer::default();
        assert_eq!(c.user(0, &map, offset + 0x1000), Some(name.as_str()));
        assert!(!Arc::ptr_eq(&table(&a), &table(&c)));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A file's path and the start and demangled name of each of its symbols.
    type Named = (Vec<u8>, Vec<(u64, String)>);

    /// Copies of the fixture binaries under distinct paths, with the names (demangled)
    /// and start of every symbol, as tables with names in memory give them.
    fn fixture_files(dir: &Path, copies: usize) -> Vec<Named> {
        let bin =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data/symfs/opt/kflame-demo/bin");
        std::fs::create_dir_all(dir).unwrap();
        let mut out = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(&bin).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for c in 0..copies {
            for src in &entries {
                let path = dir.join(format!("{}-{c}", src.file_name().unwrap().to_str().unwrap()));
                std::fs::copy(src, &path).unwrap();
                let syms = symbols::ElfSymbols::open(&path, Path::new("/nonexistent")).unwrap();
                let mut named = Vec::new();
                let mut offset = 0u64;
                while let Some(next) = next_symbol(&syms, offset) {
                    let sym = syms.lookup(next).unwrap();
                    named.push((next, symbols::demangle(sym.name).into_owned()));
                    offset = next + 1;
                }
                out.push((path.to_str().unwrap().as_bytes().to_vec(), named));
            }
        }
        out
    }

    /// The first file offset at or after `from` where a symbol starts (by lookups).
    fn next_symbol(syms: &symbols::ElfSymbols, from: u64) -> Option<u64> {
        (from..from + 0x10000).find(|&o| syms.lookup(o).is_some_and(|s| s.start == o))
    }

    /// Tables dropped to keep within a small budget, and read again when used, name every
    /// address as before; the bytes held never pass the budget (no one table here is larger).
    #[test]
    fn eviction_under_a_small_budget_keeps_names_right() {
        let dir = std::env::temp_dir().join(format!("kflame-sym-evict-{}", std::process::id()));
        let files = fixture_files(&dir, 2);
        for names_in_memory in [0, FileSymbols::NAMES_IN_MEMORY] {
            // Room for about three of the fixture tables.
            let mut s = Symbolizer::with_budget(3 * 8 * 1024);
            s.names_in_memory = names_in_memory;
            for round in 0..3 {
                for (path, named) in &files {
                    let map = Mapping { start: 0x1000, end: u64::MAX, pgoff: 0, object: path.clone() };
                    for (offset, name) in named {
                        let got = s.user(0, &map, offset + 0x1000).map(str::to_string);
                        assert_eq!(got.as_deref(), Some(name.as_str()), "round {round}");
                        assert!(s.bytes() <= 3 * 8 * 1024, "{} bytes", s.bytes());
                    }
                }
                s.next_window();
            }
            assert!(s.pruned_files > 10, "{} tables dropped", s.pruned_files);
            assert!(s.files() < files.len());
            assert_eq!(s.unreadable_names, 0);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Tables and names held stay within the budget for any number of files, and a table
    /// larger than the budget alone is kept, alone, while it is used.
    #[test]
    fn memory_of_many_tables_stays_under_the_budget() {
        let dir = std::env::temp_dir().join(format!("kflame-sym-many-{}", std::process::id()));
        let files = fixture_files(&dir, 6);
        let budget = 20 * 1024;
        let mut s = Symbolizer::with_budget(budget);
        let mut unbounded = Symbolizer::with_budget(usize::MAX);
        for (path, named) in &files {
            let map = Mapping { start: 0x1000, end: u64::MAX, pgoff: 0, object: path.clone() };
            for (offset, _) in named {
                s.user(0, &map, offset + 0x1000);
                unbounded.user(0, &map, offset + 0x1000);
            }
            assert!(s.bytes() <= budget, "{} > {budget}", s.bytes());
        }
        assert!(unbounded.bytes() > 4 * budget, "{} bytes unbounded", unbounded.bytes());
        assert_eq!(unbounded.files(), files.len());
        s.set_budget(1);
        assert_eq!(s.files(), 0, "nothing in use is kept");
        let (path, named) = &files[0];
        let map = Mapping { start: 0x1000, end: u64::MAX, pgoff: 0, object: path.clone() };
        assert_eq!(s.user(0, &map, named[0].0 + 0x1000), Some(named[0].1.as_str()));
        assert_eq!(s.files(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An address no kernel symbol covers (a module loaded after kallsyms was read) makes
    /// kallsyms stale once enough windows have passed; read again, it is named.
    #[test]
    fn kallsyms_is_read_again_after_unnamed_kernel_addresses() {
        let mut s =
            Symbolizer::with_kallsyms("ffffffff81000000 T _stext\nffffffff81000100 T do_thing\n".into());
        assert_eq!(s.kernel(0xffffffff81000150), Some("do_thing"));
        assert!(!s.kernel_stale());
        assert_eq!(s.kernel(0xffffffffc0000310), None); // in a module not loaded then
        for _ in 0..Symbolizer::KALLSYMS_EVERY - 1 {
            s.next_window();
            assert!(!s.kernel_stale(), "read again before {} windows", Symbolizer::KALLSYMS_EVERY);
        }
        s.next_window();
        assert!(s.kernel_stale());
        s.reload_kernel("ffffffff81000000 T _stext\nffffffffc0000300 T mod_fn\t[ext4]\n");
        assert_eq!(s.kernel(0xffffffffc0000310), Some("mod_fn"));
        assert!(!s.kernel_stale());
        assert_eq!(s.kallsyms_reloads, 1);
        // An address no symbol names, before or after reading again, never makes kallsyms
        // stale again (it would be read every minute for nothing).
        assert_eq!(s.kernel(0x1), None);
        for _ in 0..2 * Symbolizer::KALLSYMS_EVERY {
            s.next_window();
        }
        assert!(s.kernel_stale(), "0x1 was new");
        s.reload_kernel("ffffffff81000000 T _stext\nffffffffc0000300 T mod_fn\t[ext4]\n");
        assert_eq!(s.kernel(0x1), None);
        for _ in 0..2 * Symbolizer::KALLSYMS_EVERY {
            s.next_window();
        }
        assert!(!s.kernel_stale(), "0x1 is known to be unnamed");
    }

    #[test]
    fn jit_map_of_a_process() {
        let mut s = Symbolizer::default();
        s.jit.insert(1, PerfMap::parse("7f00001000 40 LazyCompile:~main app.js:1\n"));
        assert_eq!(s.jit(1, 0x7f00001020), Some("LazyCompile:~main app.js:1"));
        assert_eq!(s.jit(1, 0x7f00001040), None);
        // A pid without a map file names nothing.
        assert_eq!(s.jit(u32::MAX, 0x10), None);
    }

    /// Live test: reads this process's own memory map.
    #[test]
    fn live_own_function_is_found_through_own_maps() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let addr = live_own_function_is_found_through_own_maps as *const () as usize as u64;
        let map = maps
            .lines()
            .filter_map(symbols::parse_proc_maps_line)
            .find(|m| addr >= m.start && addr < m.end)
            .expect("mapping of our own code");
        let mut s = Symbolizer::default();
        let name = s.user(std::process::id(), &map, addr).expect("symbol");
        assert!(name.ends_with("sym::tests::live_own_function_is_found_through_own_maps"), "{name}");
    }
}
