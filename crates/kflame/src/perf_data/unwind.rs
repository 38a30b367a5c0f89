//! `--call-graph dwarf` samples: the user stack copied at sample time, unwound in-process
//! with the binaries' `.eh_frame` / `.debug_frame` tables (framehop), as perf does with
//! libdw. Caller frames are looked up at `return address - 1`, the address perf prints.

use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use linux_perf_data::linux_perf_event_reader::SampleRecord;
use object::{Object, ObjectSection, ObjectSegment};
use rustc_hash::FxHashMap;

use super::dso::DsoId;
use super::machine::Machine;
use super::resolve::Resolver;
use crate::symbols::MappedFile;

/// A section of a mapped binary, owned (framehop keeps it).
#[derive(Clone)]
struct Section {
    file: Arc<MappedFile>,
    range: Range<usize>,
}

impl Deref for Section {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.file.get(self.range.clone()).unwrap_or(&[])
    }
}

/// The unwind-relevant parts of one binary.
#[derive(Clone)]
struct UnwindInfo {
    info: ExplicitModuleSectionInfo<Section>,
    /// PT_LOAD segments: (vaddr, file offset, file size).
    segments: Vec<(u64, u64, u64)>,
}

/// Per-process unwinders (rebuilt when the process maps something new) and per-binary
/// unwind tables.
#[derive(Default)]
pub(crate) struct Unwinders {
    per_pid: FxHashMap<i32, (u64, UnwinderX86_64<Section>)>,
    tables: FxHashMap<DsoId, Option<UnwindInfo>>,
    cache: Option<Box<CacheX86_64>>,
}

/// x86_64 perf register numbers.
const REG_BP: u64 = 6;
const REG_SP: u64 = 7;
const REG_IP: u64 = 8;

impl Unwinders {
    /// Appends the user frames of a DWARF sample to `frames`, at most `max` of them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn unwind(
        &mut self,
        s: &SampleRecord<'_>,
        pid: i32,
        java: bool,
        machine: &Machine,
        resolver: &mut Resolver,
        frames: &mut Vec<u32>,
        max: usize,
    ) {
        let (Some(regs), Some((stack, dyn_size))) = (&s.user_regs, &s.user_stack) else { return };
        let (Some(ip), Some(sp), Some(bp)) = (regs.get(REG_IP), regs.get(REG_SP), regs.get(REG_BP)) else {
            return;
        };
        let stack = stack.as_slice();
        let stack = &stack[..(*dyn_size as usize).min(stack.len())];
        self.ensure_unwinder(pid, machine, resolver);
        let Some((_, unwinder)) = self.per_pid.get(&pid) else { return };
        let cache = self.cache.get_or_insert_with(|| Box::new(CacheX86_64::new()));
        let outside = std::cell::Cell::new(false);
        let mut read = |addr: u64| {
            let (word, inside) = read_stack(stack, sp, addr);
            outside.set(outside.get() || !inside);
            Ok(word)
        };
        let mut iter = unwinder.iter_frames(ip, UnwindRegsX86_64::new(ip, sp, bp), cache, &mut read);
        let mut n = 0;
        loop {
            let addr = match iter.next() {
                Ok(Some(FrameAddress::InstructionPointer(ip))) => ip,
                Ok(Some(FrameAddress::ReturnAddress(ra))) => ra.get() - 1,
                // A return address outside the copied stack reads as 0, and perf (libdw)
                // still reports that frame, at address 0 - 1.
                Err(framehop::Error::ReturnAddressIsNull) => u64::MAX,
                Ok(None) if outside.get() => u64::MAX,
                Ok(None) | Err(_) => break,
            };
            if n >= max {
                break;
            }
            n += 1;
            frames.push(resolver.unwound_frame(machine, pid, addr, java));
            if addr == u64::MAX {
                break;
            }
        }
    }

    fn ensure_unwinder(&mut self, pid: i32, machine: &Machine, resolver: &mut Resolver) {
        let Some(space) = machine.space(pid) else { return };
        if self.per_pid.get(&pid).is_some_and(|(g, _)| *g == space.generation) {
            return;
        }
        let mut unwinder = UnwinderX86_64::new();
        for m in space.maps.mappings() {
            let Some(info) = self.table(m.object, resolver) else { continue };
            let Some(&(vaddr, off, _)) =
                info.segments.iter().find(|&&(_, o, sz)| m.pgoff >= o && m.pgoff - o < sz.max(1))
            else {
                continue;
            };
            let svma = vaddr + (m.pgoff - off);
            let base_avma = m.start.wrapping_sub(svma);
            let name = resolver.dsos.get(m.object).name.clone();
            unwinder.add_module(Module::new(name, m.start..m.end, base_avma, info.info.clone()));
        }
        self.per_pid.insert(pid, (space.generation, unwinder));
    }

    fn table(&mut self, dso: DsoId, resolver: &mut Resolver) -> Option<UnwindInfo> {
        if let Some(t) = self.tables.get(&dso) {
            return t.clone();
        }
        let t = resolver.dsos.image(dso).and_then(unwind_info);
        self.tables.insert(dso, t.clone());
        t
    }
}

/// A word of the copied user stack and whether it was inside it; outside, 0 (as perf's
/// libdw callback answers).
fn read_stack(stack: &[u8], sp: u64, addr: u64) -> (u64, bool) {
    let word = addr
        .checked_sub(sp)
        .and_then(|off| usize::try_from(off).ok())
        .and_then(|off| stack.get(off..off.checked_add(8)?))
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes);
    (word.unwrap_or(0), word.is_some())
}

fn unwind_info(file: Arc<MappedFile>) -> Option<UnwindInfo> {
    let obj = object::File::parse(&**file).ok()?;
    let section = |name: &str| {
        let s = obj.section_by_name(name)?;
        let (off, size) = s.file_range()?;
        let range = usize::try_from(off).ok()?..usize::try_from(off + size).ok()?;
        Some((s.address()..s.address() + s.size(), Section { file: file.clone(), range }))
    };
    let (text_svma, text) = section(".text").unzip();
    let (eh_frame_svma, eh_frame) = section(".eh_frame").unzip();
    let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr").unzip();
    let (got_svma, _) = section(".got").unzip();
    let debug_frame = section(".debug_frame").map(|(_, d)| d);
    let segments = obj.segments().map(|s| (s.address(), s.file_range().0, s.file_range().1)).collect();
    let info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text,
        got_svma,
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        debug_frame,
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        text_segment_svma: None,
        text_segment: None,
    };
    Some(UnwindInfo { info, segments })
}
