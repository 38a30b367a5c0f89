//! Symbolization behind one small interface: kernel addresses through `/proc/kallsyms`,
//! user addresses through the mapping that contained them and the ELF symbol table of the
//! mapped file (loaded once per file). A shared symbolization layer can replace the
//! internals of [`Symbolizer`] without touching the recorders.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::elf::ElfSymbols;

/// One executable mapping of a process (from `/proc/PID/maps` or a `MMAP2` record).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) pgoff: u64,
    pub(crate) path: Vec<u8>,
}

impl Mapping {
    /// Parses one `/proc/PID/maps` line; only executable mappings are kept.
    pub(crate) fn parse_maps_line(line: &str) -> Option<Mapping> {
        let mut it = line.split_ascii_whitespace();
        let (range, perms, off) = (it.next()?, it.next()?, it.next()?);
        if !perms.contains('x') {
            return None;
        }
        let (_dev, _inode) = (it.next()?, it.next()?);
        let path = it.collect::<Vec<_>>().join(" ");
        let (s, e) = range.split_once('-')?;
        Some(Mapping {
            start: u64::from_str_radix(s, 16).ok()?,
            end: u64::from_str_radix(e, 16).ok()?,
            pgoff: u64::from_str_radix(off, 16).ok()?,
            path: path.into_bytes(),
        })
    }

    /// The file name without directories (`[libc.so.6]`-style frames use it).
    pub(crate) fn basename(&self) -> &[u8] {
        let p = self.path.strip_suffix(b" (deleted)").unwrap_or(&self.path);
        p.rsplit(|&b| b == b'/').next().unwrap_or(p)
    }
}

/// Kernel symbols: sorted (address, name range in `text`).
#[derive(Debug, Default)]
pub(crate) struct Kallsyms {
    text: String,
    syms: Vec<(u64, u32, u32)>,
}

impl Kallsyms {
    /// Parses `/proc/kallsyms` text (text symbols only; `[module]` suffixes dropped).
    pub(crate) fn parse(text: String) -> Kallsyms {
        let base = text.as_ptr() as usize;
        let mut syms: Vec<(u64, u32, u32)> = text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_ascii_whitespace();
                let addr = u64::from_str_radix(it.next()?, 16).ok()?;
                let kind = it.next()?;
                let name = it.next()?;
                let start = (name.as_ptr() as usize - base) as u32;
                let wanted = addr != 0 && matches!(kind, "t" | "T" | "w" | "W");
                wanted.then_some((addr, start, start + name.len() as u32))
            })
            .collect();
        syms.sort_unstable_by_key(|s| s.0);
        Kallsyms { text, syms }
    }

    /// True when no usable symbol was found (e.g. addresses hidden by `kptr_restrict`).
    pub(crate) fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The function containing `addr`.
    pub(crate) fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (_, start, end) = self.syms[i];
        self.text.get(start as usize..end as usize)
    }
}

/// Resolves addresses to function names, caching ELF files.
#[derive(Default)]
pub(crate) struct Symbolizer {
    kernel: Kallsyms,
    files: FxHashMap<Vec<u8>, Option<ElfSymbols>>,
    /// `/tmp/perf-PID.map` of each process (JIT compilers write them), sorted.
    jit: FxHashMap<u32, Vec<(u64, u64, String)>>,
}

impl Symbolizer {
    /// Loads `/proc/kallsyms` (an unreadable file leaves kernel frames `[unknown]`).
    pub(crate) fn new() -> Symbolizer {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        Symbolizer::with_kallsyms(text)
    }

    /// A symbolizer for the given kallsyms text.
    pub(crate) fn with_kallsyms(text: String) -> Symbolizer {
        Symbolizer { kernel: Kallsyms::parse(text), ..Symbolizer::default() }
    }

    /// True when kernel addresses can be named.
    pub(crate) fn has_kernel_symbols(&self) -> bool {
        !self.kernel.is_empty()
    }

    /// The kernel function at `addr`.
    pub(crate) fn kernel(&self, addr: u64) -> Option<&str> {
        self.kernel.lookup(addr)
    }

    /// The function at user address `addr` inside `map` of process `pid` (Rust symbols
    /// demangled, without their hash).
    pub(crate) fn user(&mut self, pid: u32, map: &Mapping, addr: u64) -> Option<Cow<'_, str>> {
        if !map.path.starts_with(b"/") {
            return None; // [vdso], anonymous memory, ...
        }
        if !self.files.contains_key(&map.path) {
            let path = PathBuf::from(String::from_utf8_lossy(&map.path).into_owned());
            self.files.insert(map.path.clone(), load(pid, &path));
        }
        let syms = self.files.get(&map.path)?.as_ref()?;
        let name = syms.by_file_offset(addr.wrapping_sub(map.start).wrapping_add(map.pgoff))?;
        Some(match rustc_demangle::try_demangle(name) {
            Ok(d) => Cow::Owned(format!("{d:#}")),
            Err(_) => Cow::Borrowed(name),
        })
    }
}

impl Symbolizer {
    /// The JIT-compiled function at `addr` of `pid`, from `/tmp/perf-PID.map`.
    pub(crate) fn jit(&mut self, pid: u32, addr: u64) -> Option<&str> {
        let table = self.jit.entry(pid).or_insert_with(|| {
            let text = std::fs::read_to_string(format!("/tmp/perf-{pid}.map")).unwrap_or_default();
            parse_perf_map(&text)
        });
        let i = table.partition_point(|e| e.0 <= addr).checked_sub(1)?;
        let (start, size, name) = &table[i];
        (addr - start < *size).then_some(name.as_str())
    }
}

/// `START SIZE NAME` lines (hex, `0x` optional), as written for perf by JIT compilers.
fn parse_perf_map(text: &str) -> Vec<(u64, u64, String)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let mut v: Vec<_> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let (start, size, name) = (hex(it.next()?)?, hex(it.next()?)?, it.next()?.trim());
            (!name.is_empty()).then(|| (start, size, name.to_string()))
        })
        .collect();
    v.sort_by_key(|e| e.0);
    v
}

/// The file as the process sees it (its root may differ), else as we see it.
fn load(pid: u32, path: &Path) -> Option<ElfSymbols> {
    let rel = path.strip_prefix("/").unwrap_or(path);
    ElfSymbols::load(&Path::new("/proc").join(pid.to_string()).join("root").join(rel))
        .or_else(|| ElfSymbols::load(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lookup() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _stext\nffffffff81000100 t do_thing\n0000000000000000 A fixed\n\
             ffffffff81000200 d data_sym\nffffffff81000300 T mod_fn\t[ext4]\n"
                .to_string(),
        );
        assert_eq!(k.lookup(0xffffffff81000150), Some("do_thing"));
        assert_eq!(k.lookup(0xffffffff81000250), Some("do_thing"));
        assert_eq!(k.lookup(0xffffffff81000300), Some("mod_fn"));
        assert_eq!(k.lookup(0x1000), None);
        assert!(Kallsyms::parse("0000000000000000 T hidden\n".to_string()).is_empty());
    }

    #[test]
    fn perf_map_of_a_jit() {
        let t = parse_perf_map("7f00001000 40 LazyCompile:~main app.js:1\n0x7f00000000 10 stub\nbad line\n");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0], (0x7f00000000, 0x10, "stub".to_string()));
        assert_eq!(t[1].2, "LazyCompile:~main app.js:1");
        let mut s = Symbolizer::default();
        s.jit.insert(1, t);
        assert_eq!(s.jit(1, 0x7f00001020), Some("LazyCompile:~main app.js:1"));
        assert_eq!(s.jit(1, 0x7f00001040), None);
        assert_eq!(s.jit(1, 0x10), None);
    }

    #[test]
    fn maps_line() {
        let m = Mapping::parse_maps_line(
            "7f0e1c028000-7f0e1c1bd000 r-xp 00028000 fe:01 1837   /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!((m.start, m.end, m.pgoff), (0x7f0e1c028000, 0x7f0e1c1bd000, 0x28000));
        assert_eq!(m.basename(), b"libc.so.6");
        assert!(Mapping::parse_maps_line("7f0e1c000000-7f0e1c028000 r--p 00000000 fe:01 1 /x").is_none());
        assert!(Mapping::parse_maps_line("garbage").is_none());
    }

    #[test]
    fn own_function_is_found_through_own_maps() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let addr = own_function_is_found_through_own_maps as *const () as usize as u64;
        let map = maps
            .lines()
            .filter_map(Mapping::parse_maps_line)
            .find(|m| addr >= m.start && addr < m.end)
            .expect("mapping of our own code");
        let mut s = Symbolizer::default();
        let name = s.user(std::process::id(), &map, addr).expect("symbol");
        assert!(name.ends_with("sym::tests::own_function_is_found_through_own_maps"), "{name}");
    }
}
