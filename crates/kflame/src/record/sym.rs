//! The recorders' view of [`crate::symbols`]: kernel addresses through `/proc/kallsyms`,
//! user addresses through the mapping that contained them and the ELF symbols of the mapped
//! file (loaded once per file, as the process sees it), JIT code through
//! `/tmp/perf-PID.map`. Names follow perf's rules and are demangled as perf shows them.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::symbols::{self, ElfSymbols, Kallsyms, PerfMap};

/// One executable mapping of a process (from `/proc/PID/maps` or a `MMAP2` record); the
/// object is the mapped path.
pub(crate) type Mapping = symbols::Mapping<Vec<u8>>;

/// Resolves addresses to function names, caching ELF files.
#[derive(Default)]
pub(crate) struct Symbolizer {
    kernel: Kallsyms,
    /// False when kallsyms shows no address (`kptr_restrict`, or unreadable).
    kernel_visible: bool,
    /// Symbols of each file (by path), and the window that last used them.
    files: FxHashMap<Vec<u8>, (Option<ElfSymbols>, u64)>,
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
    /// Files forgotten so far.
    pub(crate) pruned_files: u64,
}

impl Symbolizer {
    /// Loads `/proc/kallsyms` (an unreadable file leaves kernel frames `[unknown]`).
    pub(crate) fn new() -> Symbolizer {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        Symbolizer::with_kallsyms(text)
    }

    /// A symbolizer for the given kallsyms text.
    pub(crate) fn with_kallsyms(text: String) -> Symbolizer {
        let kernel = Kallsyms::parse(text.as_bytes());
        let kernel_visible = addresses_shown(&text);
        Symbolizer { kernel, kernel_visible, ..Symbolizer::default() }
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
        self.kernel = Kallsyms::default();
        self.kernel = Kallsyms::parse(text.as_bytes());
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
    pub(crate) fn user(&mut self, pid: u32, map: &Mapping, addr: u64) -> Option<Cow<'_, str>> {
        if !map.object.starts_with(b"/") {
            return None; // [vdso], anonymous memory, ...
        }
        let window = self.window;
        if !self.files.contains_key(&map.object) {
            let path = PathBuf::from(String::from_utf8_lossy(&map.object).into_owned());
            self.files.insert(map.object.clone(), (load(pid, &path), window));
        }
        let entry = self.files.get_mut(&map.object)?;
        entry.1 = window;
        let syms = entry.0.as_ref()?;
        Some(symbols::demangle(syms.lookup(map.file_offset(addr))?.name))
    }

    /// Files whose symbols are kept at most.
    pub(crate) const FILES: usize = 4096;
    /// Windows a file's symbols are kept without being used.
    pub(crate) const IDLE_WINDOWS: u64 = 60;

    /// Starts naming a new window: forgets the JIT maps read so far (JIT compilers append
    /// to them while they run, so each window reads them again) and the symbols of files
    /// no stack used in the last [`Symbolizer::IDLE_WINDOWS`] windows (of programs that
    /// ran once, or libraries replaced by an upgrade); past [`Symbolizer::FILES`] files,
    /// the least recently used go first.
    pub(crate) fn next_window(&mut self) {
        self.jit.clear();
        self.window += 1;
        let before = self.files.len();
        let oldest = self.window.saturating_sub(Self::IDLE_WINDOWS);
        self.files.retain(|_, (_, used)| *used >= oldest);
        if self.files.len() > Self::FILES {
            let mut used: Vec<u64> = self.files.values().map(|(_, u)| *u).collect();
            used.sort_unstable();
            let keep_from = used[used.len() - Self::FILES];
            self.files.retain(|_, (_, u)| *u >= keep_from);
        }
        self.pruned_files += (before - self.files.len()) as u64;
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
fn load(pid: u32, path: &Path) -> Option<ElfSymbols> {
    let rel = path.strip_prefix("/").unwrap_or(path);
    let in_root = Path::new("/proc").join(pid.to_string()).join("root").join(rel);
    let debug_root = Path::new("/");
    ElfSymbols::open(&in_root, debug_root).or_else(|_| ElfSymbols::open(path, debug_root)).ok()
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
