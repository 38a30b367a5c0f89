//! Inline frames of DWARF-unwound user frames, as perf 6.1 shows them.
//!
//! For each frame that `--call-graph dwarf` unwinding finds in a binary with a symbol,
//! perf asks `addr2line -i -f` (on the file the symbols came from: the binary, or its
//! `.build-id` debug file) for the functions at that address, innermost inlined function
//! first. Each becomes a frame line: a function whose (demangled) DWARF name equals the
//! symbol's name is the symbol itself, `SYMBOL+0xOFF (DSO)`; any other is printed
//! `NAME+0xOFF (inlined)`, the offset being the symbol's. So a binary built with `-g`
//! shows `mix (inlined)`, `churn (inlined)`, `hot_path (DSO)` for one address, and a gcc
//! clone `scaled.constprop.0` or glibc's `read` show their DWARF names `scaled`,
//! `__GI___libc_read` as `(inlined)` frames. Frame-pointer call chains get none of this
//! (perf 6.1 adds inline frames only while unwinding), nor do binaries without
//! `.debug_info`, which keep the per-symbol path of the resolver untouched.
//!
//! The folded text of all those lines (outermost first, `;`-joined, as stackcollapse
//! reverses perf's leaf-first lines) is one frame id, cached per (binary, address).

use std::fmt::Write as _;

use object::{Object, ObjectSegment};
use rustc_hash::FxHashMap;

use super::dso::{DsoId, Dsos};
use super::naming::{NameRules, fold_frame};
use crate::symbols::{DwarfNames, demangle};

/// The DWARF of one binary and how its file offsets map to the addresses DWARF uses.
struct DsoDwarf {
    names: DwarfNames,
    /// PT_LOAD segments of the recorded binary: (vaddr, file offset, file size).
    segments: Vec<(u64, u64, u64)>,
    /// Functions without a linkage name already looked up as the innermost function: the
    /// symbol name binutils gave them for good, or `None` (their plain name stays).
    renamed: FxHashMap<(u64, u64), Option<String>>,
}

impl DsoDwarf {
    /// The virtual address of file offset `rel` (perf's `map__rip_2objdump`).
    fn vaddr(&self, rel: u64) -> Option<u64> {
        let &(vaddr, off, _) = self.segments.iter().find(|&&(_, o, sz)| rel >= o && rel - o < sz)?;
        Some(vaddr + (rel - off))
    }
}

/// Per-binary DWARF (loaded on first use) and the frames named so far.
#[derive(Default)]
pub(crate) struct Inlines {
    dwarf: FxHashMap<DsoId, Option<DsoDwarf>>,
    cache: FxHashMap<(DsoId, u64, bool), Option<u32>>,
    by_text: FxHashMap<Box<[u8]>, u32>,
}

impl Inlines {
    /// The frame id of file offset `rel` of `dso` with its inline chain, or `None` when
    /// perf would name it from the symbol table alone (no symbol, no DWARF for it).
    /// New frame texts are appended to `frames` (the resolver's table).
    pub(crate) fn frame(
        &mut self,
        dsos: &mut Dsos,
        dso: DsoId,
        rel: u64,
        java: bool,
        rules: NameRules,
        frames: &mut Vec<Box<[u8]>>,
    ) -> Option<u32> {
        // Binaries without DWARF (most, in distributions) cost one lookup per frame.
        if self.dwarf.entry(dso).or_insert_with(|| load(dsos, dso)).is_none() {
            return None;
        }
        if let Some(&hit) = self.cache.get(&(dso, rel, java)) {
            return hit;
        }
        let id = self.name(dsos, dso, rel, java, rules).map(|text| self.intern(text, frames));
        self.cache.insert((dso, rel, java), id);
        id
    }

    fn name(
        &mut self,
        dsos: &mut Dsos,
        dso: DsoId,
        rel: u64,
        java: bool,
        rules: NameRules,
    ) -> Option<Vec<u8>> {
        let sym = dsos.symbols(dso)?.lookup(rel)?;
        let (raw_sym, off) = (sym.name.to_string(), rel - sym.start);
        let dwarf = self.dwarf.get_mut(&dso)?.as_mut()?;
        let functions = dwarf.functions_at(rel, &raw_sym, sym.start)?;
        let sym_name = demangle(&raw_sym).into_owned();
        let dso_name = &dsos.get(dso).name;
        // perf's lines, innermost first; stackcollapse puts the outermost first.
        let mut parts: Vec<Vec<u8>> = Vec::with_capacity(functions.len());
        let mut line = String::new();
        for raw in &functions {
            let name = demangle(raw);
            line.clear();
            let inlined = *name != *sym_name;
            if inlined {
                let _ = write!(line, "{name}+0x{off:x} (inlined)");
            } else {
                let _ = write!(line, "{sym_name}+0x{off:x} ({dso_name})");
            }
            // `--inline` marks the `(inlined)` lines `_[i]`, as the perf script collapser does.
            let mut part = Vec::new();
            fold_frame(&mut part, &line, rel, java, rules);
            parts.push(part);
        }
        let mut text = Vec::new();
        for part in parts.iter().rev().filter(|p| !p.is_empty()) {
            if !text.is_empty() {
                text.push(b';');
            }
            text.extend_from_slice(part);
        }
        Some(text)
    }

    fn intern(&mut self, text: Vec<u8>, frames: &mut Vec<Box<[u8]>>) -> u32 {
        if let Some(&id) = self.by_text.get(&text[..]) {
            return id;
        }
        let id = frames.len() as u32;
        let text = text.into_boxed_slice();
        frames.push(text.clone());
        self.by_text.insert(text, id);
        id
    }
}

impl DsoDwarf {
    /// The raw function names addr2line prints at file offset `rel`, innermost first, for
    /// an address in symbol `sym` (raw name) starting at file offset `sym_start`; `None`
    /// when DWARF does not cover it.
    ///
    /// binutils names a function that has only a plain `DW_AT_name` in C++ or Rust (no
    /// linkage name: gcc's internal-linkage functions) after the symbol table when it is
    /// the innermost function of a lookup, and from then on keeps that symbol name if the
    /// symbol starts where the function does, else the plain name, also where it appears
    /// as the caller of inlined code. perf sends its lookups in sample order, as they are
    /// made here, so the same state gives the same names.
    fn functions_at(&mut self, rel: u64, sym: &str, sym_start: u64) -> Option<Vec<String>> {
        let frames = self.names.frames(self.vaddr(rel)?);
        let sym_vaddr = self.vaddr(sym_start);
        let mut names = Vec::with_capacity(frames.len());
        for (i, f) in frames.into_iter().enumerate() {
            let name = match self.renamed.get(&f.id) {
                _ if f.linkage => f.name,
                Some(Some(symbol)) => symbol.clone(),
                Some(None) => f.name,
                None if i > 0 => f.name,
                None => {
                    let keep = (f.entry.is_some() && f.entry == sym_vaddr).then(|| sym.to_string());
                    self.renamed.insert(f.id, keep);
                    sym.to_string()
                }
            };
            names.push(name);
        }
        (!names.is_empty()).then_some(names)
    }
}

/// The DWARF of the file `dso`'s symbols came from, with the segments of the recorded
/// binary; `None` when either is missing or there is no `.debug_info`.
fn load(dsos: &mut Dsos, dso: DsoId) -> Option<DsoDwarf> {
    let from = dsos.symbols(dso)?.symbols_from()?.to_path_buf();
    let image = dsos.image(dso)?;
    let file = object::File::parse(&**image).ok()?;
    let segments = file.segments().map(|s| (s.address(), s.file_range().0, s.file_range().1)).collect();
    let names = crate::symbols::DwarfNames::open(&from).ok().flatten()?;
    Some(DsoDwarf { names, segments, renamed: FxHashMap::default() })
}
