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
        let dwarf = self.dwarf.get(&dso)?.as_ref()?;
        let functions = dwarf.functions_at(rel)?;
        let sym = dsos.symbols(dso)?.lookup(rel)?;
        let (sym_name, off) = (demangle(sym.name).into_owned(), rel - sym.start);
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
            let mut part = Vec::new();
            fold_frame(&mut part, &line, rel, java, rules);
            if inlined && rules.mark_inlined && !part.is_empty() {
                part.extend_from_slice(b"_[i]");
            }
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
    /// The DWARF function names at file offset `rel`, innermost first; `None` when DWARF
    /// does not cover it.
    fn functions_at(&self, rel: u64) -> Option<Vec<String>> {
        let names = self.names.functions(self.vaddr(rel)?);
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
    Some(DsoDwarf { names, segments })
}
