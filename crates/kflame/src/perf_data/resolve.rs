//! Addresses to folded frames: which object an address belongs to, which symbol, and the
//! frame name perf script would lead to (cached per object and address).

use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use super::dso::{DsoId, Dsos};
use super::frame_cache::FrameCache;
use super::machine::{Machine, Mode};
use super::naming::{NameRules, fold_frame};
use crate::symbols::{Kallsyms, demangle};

/// Where an address lies.
#[derive(Copy, Clone)]
enum Loc {
    /// In a user mapping (file offset), or a kernel ksymbol/module range (offset in it).
    Mapped { dso: DsoId, rel: u64, ksym: bool },
    /// In the kernel image.
    Kernel,
    /// Nowhere known.
    Unmapped,
}

const KERNEL_KEY: u32 = u32::MAX - 1;
const UNMAPPED_KEY: u32 = u32::MAX;

/// Kernel symbols and the relocation from recorded to file addresses.
pub(crate) struct KernelSymbols {
    pub(crate) syms: Option<Kallsyms>,
    /// Added to a recorded address to get the kallsyms address (KASLR of another boot).
    pub(crate) delta: u64,
}

impl KernelSymbols {
    /// Where kernel space ends for lookups: the recorded kernel map, extended to the last
    /// symbol (perf names init-text addresses past the recorded length).
    fn end(&self, recorded: u64) -> u64 {
        let syms = self.syms.as_ref().and_then(Kallsyms::end).map(|e| e.wrapping_sub(self.delta));
        syms.map_or(recorded, |e| e.max(recorded))
    }
}

/// Resolves and names frames.
pub(crate) struct Resolver {
    pub(crate) dsos: Dsos,
    pub(crate) kernel: KernelSymbols,
    rules: NameRules,
    /// DWARF inline frames of unwound user frames (`None`: `--no-inline`).
    inline: Option<super::inline::Inlines>,
    cache: FxHashMap<(u32, u64, bool), u32>,
    by_symbol: FxHashMap<SymbolKey, u32>,
    frames: Vec<Box<[u8]>>,
    text: String,
    recent: FrameCache,
    /// Name every frame at the end (`name_pending`) instead of when it is first seen.
    defer: bool,
    /// Frames named later.
    pending: Vec<Pending>,
}

impl Resolver {
    pub(crate) fn new(dsos: Dsos, kernel: KernelSymbols, rules: NameRules) -> Resolver {
        Resolver {
            dsos,
            kernel,
            rules,
            inline: rules.inline.then(super::inline::Inlines::default),
            cache: FxHashMap::default(),
            by_symbol: FxHashMap::default(),
            frames: Vec::new(),
            text: String::new(),
            recent: FrameCache::new(),
            defer: false,
            pending: Vec::new(),
        }
    }

    /// Empties the frame cache when the kernel layout changed (call before each sample).
    pub(crate) fn check_kernel(&mut self, m: &Machine) {
        self.recent.check_kernel(m.kernel_generation);
    }

    /// [`frame`](Self::frame) through a cache of recent addresses; `space_generation` is
    /// [`Machine::space_generation`] of `pid`.
    #[inline]
    pub(crate) fn frame_cached(
        &mut self,
        m: &Machine,
        pid: i32,
        space_generation: u64,
        ip: u64,
        mode: Mode,
        java: bool,
    ) -> u32 {
        let Some(tag) = FrameCache::tag(space_generation, mode, java) else {
            return self.frame(m, pid, ip, mode, java);
        };
        if let Some(id) = self.recent.get(ip, tag) {
            return id;
        }
        let id = self.frame(m, pid, ip, mode, java);
        self.recent.put(ip, tag, id);
        id
    }

    /// The folded text of frame `id` (may be empty: a skipped frame).
    pub(crate) fn text(&self, id: u32) -> &[u8] {
        &self.frames[id as usize]
    }

    /// The folded texts of all frames, by id.
    pub(crate) fn texts(&self) -> &[Box<[u8]>] {
        &self.frames
    }

    /// The frame id of address `ip` sampled in `mode` in process `pid`.
    pub(crate) fn frame(&mut self, m: &Machine, pid: i32, ip: u64, mode: Mode, java: bool) -> u32 {
        let kernel_end = self.kernel.end(m.kernel_end);
        let loc = locate(m, pid, ip, mode, kernel_end);
        let key = match loc {
            Loc::Mapped { dso, rel, .. } => (dso, rel, java),
            Loc::Kernel => (KERNEL_KEY, ip, java),
            Loc::Unmapped => (UNMAPPED_KEY, if self.rules.include_addrs { ip } else { 0 }, java),
        };
        if let Some(&id) = self.cache.get(&key) {
            return id;
        }
        if let Loc::Mapped { dso, ksym: false, .. } = loc
            && self.defer
            && !self.dsos.symbols_ready(dso)
        {
            let id = self.later(loc, ip, java, None);
            self.cache.insert(key, id);
            return id;
        }
        // Many addresses share a symbol: name each symbol once.
        let sym_key = self.symbol_key(&loc, ip, java);
        if let Some(&id) = self.by_symbol.get(&sym_key) {
            self.cache.insert(key, id);
            return id;
        }
        let id = if self.defer {
            self.later(loc, ip, java, Some(sym_key))
        } else {
            let folded = self.folded(&loc, ip, java);
            self.frames.push(folded);
            self.frames.len() as u32 - 1
        };
        self.cache.insert(key, id);
        self.by_symbol.insert(sym_key, id);
        id
    }

    /// A new frame id whose text [`name_pending`](Self::name_pending) writes.
    fn later(&mut self, loc: Loc, ip: u64, java: bool, key: Option<SymbolKey>) -> u32 {
        let id = self.frames.len() as u32;
        self.frames.push(Box::default());
        self.pending.push(Pending { id, loc, ip, java, key });
        id
    }

    /// Lets [`frame`](Self::frame) name frames later, at the end and on all cores: when its
    /// binary's symbol table is still being read, so that reading records never waits for
    /// it, and otherwise too (naming, demangling above all, costs more than finding the
    /// symbol). Only for callers that read frame texts after
    /// [`name_pending`](Self::name_pending), not during the reading.
    pub(crate) fn set_deferred_naming(&mut self, on: bool) {
        self.defer = on;
    }

    /// Whether frames may be named later (then symbol tables are read when first needed,
    /// not for every executable mapping ahead).
    pub(crate) fn defers_naming(&self) -> bool {
        self.defer
    }

    /// Names the frames left for later (waiting for their symbol tables now). A frame of a
    /// symbol named meanwhile gets the same text, so folded stacks merge as before.
    pub(crate) fn name_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for p in &pending {
            self.load_symbols(&p.loc);
        }
        let namer = self.namer();
        // Symbols first, on all cores (lookups in large tables)...
        let keys: Vec<SymbolKey> = crate::par::map_chunks(&pending, |share| {
            share
                .iter()
                .map(|p| p.key.unwrap_or_else(|| namer.symbol_key(&p.loc, p.ip, p.java)))
                .collect::<Vec<_>>()
        })
        .concat();
        // ...then each symbol's text once (demangling is most of the cost), on all cores.
        let mut first: FxHashMap<SymbolKey, u32> = FxHashMap::default();
        let mut unique: Vec<usize> = Vec::new();
        let which: Vec<u32> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                *first.entry(*key).or_insert_with(|| {
                    unique.push(i);
                    unique.len() as u32 - 1
                })
            })
            .collect();
        let texts: Vec<Box<[u8]>> = crate::par::map_chunks(&unique, |share| {
            let mut text = String::new();
            share
                .iter()
                .map(|&i| {
                    let p = &pending[i];
                    namer.folded(&p.loc, p.ip, p.java, &mut text)
                })
                .collect::<Vec<_>>()
        })
        .concat();
        for ((p, key), u) in pending.iter().zip(keys).zip(which) {
            self.by_symbol.entry(key).or_insert(p.id);
            self.frames[p.id as usize] = texts[u as usize].clone();
        }
    }

    /// The frame id of a user address found by DWARF unwinding: with the inline chain of
    /// its binary's DWARF when there is one (perf shows inline frames only there).
    pub(crate) fn unwound_frame(&mut self, m: &Machine, pid: i32, ip: u64, java: bool) -> u32 {
        if let Some(inline) = self.inline.as_mut()
            && let Some(map) = m.space(pid).and_then(|s| s.maps.find(ip))
            && let Some(id) = inline.frame(
                &mut self.dsos,
                map.object,
                map.file_offset(ip),
                java,
                self.rules,
                &mut self.frames,
            )
        {
            return id;
        }
        self.frame(m, pid, ip, Mode::User, java)
    }

    /// What the name of a frame depends on (see [`Namer::symbol_key`]), loading the
    /// symbol table of its binary if needed.
    fn symbol_key(&mut self, loc: &Loc, ip: u64, java: bool) -> SymbolKey {
        self.load_symbols(loc);
        self.namer().symbol_key(loc, ip, java)
    }

    /// The folded text of the frame at `loc`, loading the symbol table of its binary if needed.
    fn folded(&mut self, loc: &Loc, ip: u64, java: bool) -> Box<[u8]> {
        self.load_symbols(loc);
        let mut text = std::mem::take(&mut self.text);
        let folded = self.namer().folded(loc, ip, java, &mut text);
        self.text = text;
        folded
    }

    fn load_symbols(&mut self, loc: &Loc) {
        if let Loc::Mapped { dso, ksym: false, .. } = *loc {
            let _ = self.dsos.symbols(dso);
        }
    }

    fn namer(&self) -> Namer<'_> {
        Namer { dsos: &self.dsos, kernel: &self.kernel, rules: self.rules }
    }
}

/// A frame to name later: its id, where its address lies, the address, the Java rule,
/// and its symbol key when its symbol table was there to find it.
struct Pending {
    id: u32,
    loc: Loc,
    ip: u64,
    java: bool,
    key: Option<SymbolKey>,
}

/// What a frame's name depends on: the object, the symbol (or, when unknown, the printed
/// address if addresses are shown), the Java rule, and whether the symbol is unknown.
type SymbolKey = (u32, u64, bool, bool);

/// Naming with the symbol tables already loaded: read-only, so that the frames left for
/// later are named on several threads at once.
struct Namer<'r> {
    dsos: &'r Dsos,
    kernel: &'r KernelSymbols,
    rules: NameRules,
}

impl Namer<'_> {
    /// What the name of a frame depends on: the object, the symbol (or, when unknown, the
    /// printed address if addresses are shown), and the Java rule.
    fn symbol_key(&self, loc: &Loc, ip: u64, java: bool) -> SymbolKey {
        let unknown = |pc: u64, addrs: bool| if addrs { pc } else { 0 };
        let addrs = self.rules.include_addrs;
        match *loc {
            Loc::Mapped { dso, rel, ksym: false } => {
                match self.dsos.loaded_symbols(dso).and_then(|s| s.symbol_index(rel)) {
                    Some(index) => (dso, index as u64, java, false),
                    None => (dso, unknown(rel, addrs), java, true),
                }
            }
            // Module and BPF ranges are few: key them by address.
            Loc::Mapped { dso, .. } => (dso, ip, java, true),
            Loc::Kernel => {
                let addr = ip.wrapping_add(self.kernel.delta);
                match self.kernel.syms.as_ref().and_then(|k| k.symbol_index(addr)) {
                    Some(index) => (KERNEL_KEY, index as u64, java, false),
                    None => (KERNEL_KEY, unknown(ip, addrs), java, true),
                }
            }
            Loc::Unmapped => (UNMAPPED_KEY, unknown(ip, addrs), java, true),
        }
    }

    /// The folded frame text of a location (`text`: scratch space).
    fn folded(&self, loc: &Loc, ip: u64, java: bool, text: &mut String) -> Box<[u8]> {
        let pc = self.describe(loc, ip, text);
        let mut folded = Vec::new();
        fold_frame(&mut folded, text, pc, java, self.rules);
        folded.into_boxed_slice()
    }

    /// perf script's `SYMBOL+0xOFF (DSO)` for a location into `text`; returns the address
    /// it prints.
    fn describe(&self, loc: &Loc, ip: u64, text: &mut String) -> u64 {
        text.clear();
        match *loc {
            Loc::Mapped { dso, rel, ksym: true } => {
                let name = &self.dsos.get(dso).name;
                if name.starts_with('[') {
                    // A kernel module: its symbols are the `[module]` lines of kallsyms.
                    let addr = ip.wrapping_add(self.kernel.delta);
                    match self.kernel.syms.as_ref().and_then(|k| k.lookup_module(addr)) {
                        Some(sym) => {
                            let _ = write!(text, "{}+0x{:x} ({name})", sym.name, addr - sym.start);
                        }
                        None => {
                            let _ = write!(text, "[unknown] ({name})");
                        }
                    }
                } else {
                    // A BPF program or other ksymbol: one symbol spanning the range.
                    let _ = write!(text, "{name}+0x{rel:x} ({name})");
                }
                ip
            }
            Loc::Mapped { dso, rel, ksym: false } => {
                match self.dsos.loaded_symbols(dso).and_then(|s| s.lookup(rel)) {
                    Some(sym) => {
                        let _ = write!(text, "{}+0x{:x}", demangle(sym.name), rel - sym.start);
                    }
                    None => text.push_str("[unknown]"),
                }
                let _ = write!(text, " ({})", self.dsos.get(dso).name);
                rel
            }
            Loc::Kernel => {
                let addr = ip.wrapping_add(self.kernel.delta);
                match self.kernel.syms.as_ref().and_then(|k| k.lookup(addr)) {
                    Some(sym) => {
                        let _ = write!(text, "{}+0x{:x} ([kernel.kallsyms])", sym.name, addr - sym.start);
                    }
                    None => text.push_str("[unknown] ([kernel.kallsyms])"),
                }
                ip
            }
            Loc::Unmapped => {
                text.push_str("[unknown] ([unknown])");
                ip
            }
        }
    }
}

fn locate(m: &Machine, pid: i32, ip: u64, mode: Mode, kernel_end: u64) -> Loc {
    if mode == Mode::Other {
        return Loc::Unmapped;
    }
    if mode == Mode::User
        && let Some(map) = m.space(pid).and_then(|s| s.maps.find(ip))
    {
        return Loc::Mapped { dso: map.object, rel: map.file_offset(ip), ksym: false };
    }
    // A user-mode address outside the user mappings is unknown, wherever it points: the
    // call chain's context says what is user code (garbage frame pointers included), not
    // the recorded kernel map (perf 3.x recorded maps starting far below the kernel).
    // perf 6.1 names such addresses `[unknown]` too, also in kernel space.
    if mode == Mode::User {
        return Loc::Unmapped;
    }
    if let Some(map) = m.ksyms.find(ip) {
        return Loc::Mapped { dso: map.object, rel: ip - map.start, ksym: true };
    }
    match m.kernel_start {
        Some(start) if ip >= start && ip < kernel_end => Loc::Kernel,
        _ => Loc::Unmapped,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::perf_data::binary::load_symbols;
    use crate::perf_data::prefetch::Prefetch;

    const BIN: &str = "/opt/kflame-demo/bin/workload-fp";
    const START: u64 = 0x5555_0000_0000;

    fn symfs() -> PathBuf {
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/perf-data/symfs"))
    }

    fn resolver(prefetch: Option<Prefetch>) -> (Resolver, Machine) {
        let mut dsos = Dsos::new(Some(symfs()), false);
        let dso = dsos.intern(BIN, None);
        if let Some(p) = prefetch {
            dsos.set_prefetch(p);
        }
        let mut m = Machine::default();
        m.map(7, START, 0x10000, 0, dso);
        let kernel = KernelSymbols { syms: None, delta: 0 };
        (Resolver::new(dsos, kernel, NameRules::default()), m)
    }

    /// In deferred mode frames are named at the end, with the text they get without
    /// waiting, whether their symbol table was still being read (one id per address) or
    /// already there (one id per symbol); `spin+0x2b` and `spin+0x10` are one function.
    #[test]
    fn deferred_frames_are_named_as_if_waited_for() {
        let (mut direct, m) = resolver(None);
        let expected = direct.frame(&m, 7, START + 0x12ab, Mode::User, false);
        let expected = direct.text(expected).to_vec();
        assert_eq!(expected, b"spin");

        let (prefetch, tx) = Prefetch::by_hand(&[BIN]);
        let (mut r, m) = resolver(Some(prefetch));
        r.set_deferred_naming(true);
        let early = r.frame(&m, 7, START + 0x12ab, Mode::User, false);
        assert!(r.text(early).is_empty(), "not named while the table is being read");
        assert_eq!(r.frame(&m, 7, START + 0x12ab, Mode::User, false), early, "cached");
        let other = r.frame(&m, 7, START + 0x12f9, Mode::User, false);
        tx.send((BIN.to_string(), load_symbols(&symfs(), BIN, None))).unwrap();
        let later = r.frame(&m, 7, START + 0x1290, Mode::User, false);
        assert!(r.text(later).is_empty(), "named at the end even when the table is there");
        assert_eq!(r.frame(&m, 7, START + 0x12a0, Mode::User, false), later, "same symbol, same id");
        r.name_pending();
        assert_eq!(r.text(early), &expected[..]);
        assert_eq!(r.text(later), &expected[..]);
        assert_eq!(r.text(other), b"level1", "a symbol first named at the end");
    }
}
