//! Unwinding a user stack copied at sample time (`PERF_SAMPLE_STACK_USER`, with the
//! registers of `PERF_SAMPLE_REGS_USER`) with the unwind tables of the binaries the process
//! maps: `.eh_frame` through its `.eh_frame_hdr` index, else `.debug_frame` (from the binary
//! or its separate debug file), by framehop. x86-64 only, as the registers are.
//!
//! Shared by the perf.data reader (recordings made with `perf record --call-graph dwarf`)
//! and the live recorders (`kflame record --call-graph dwarf`); each decides what a stack
//! that ends early looks like ([`End`]).
//!
//! The tables are copied out of their files (a few hundred KiB for a C library): what a
//! recorder keeps for days holds no file mapping, which a file truncated in place would
//! turn into a fault.

use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _};
use object::{Object, ObjectSection, ObjectSegment, ReadRef};

/// Bytes of one unwind section, owned and shared by every module built from it.
pub(crate) type Section = Arc<[u8]>;

/// The unwinder of one address space.
pub(crate) type Unwinder = UnwinderX86_64<Section>;

/// framehop's cache of unwind rules (shared by unwinders: its entries are keyed by the
/// modules' generation).
pub(crate) type Cache = CacheX86_64;

/// x86-64 perf register numbers (`arch/x86/include/uapi/asm/perf_regs.h`).
pub(crate) const REG_BP: u32 = 6;
pub(crate) const REG_SP: u32 = 7;
pub(crate) const REG_IP: u32 = 8;

/// The registers kflame asks for (`sample_regs_user`): enough to unwind by CFI.
pub(crate) const USER_REGS_MASK: u64 = 1 << REG_BP | 1 << REG_SP | 1 << REG_IP;

/// The unwind-relevant parts of one binary.
#[derive(Clone)]
pub(crate) struct Tables {
    info: ExplicitModuleSectionInfo<Section>,
    /// PT_LOAD segments: (vaddr, file offset, file size).
    segments: Vec<(u64, u64, u64)>,
    /// Bytes of the sections kept.
    bytes: usize,
}

impl Tables {
    /// The tables of the ELF image `data`; `.debug_frame` comes from `debug` (its separate
    /// debug file, by build id) when the image has neither `.eh_frame` nor `.debug_frame`.
    /// `None` when the image is no ELF file or has no unwind table at all.
    pub(crate) fn read<'d, R: ReadRef<'d>>(
        data: R,
        debug: impl FnOnce(&[u8]) -> Option<Section>,
    ) -> Option<Tables> {
        let obj = object::File::parse(data).ok()?;
        let copy = |name: &str| {
            let s = obj.section_by_name(name)?;
            let bytes = s.uncompressed_data().ok()?;
            Some((s.address()..s.address() + s.size(), Section::from(&*bytes)))
        };
        let svma = |name: &str| obj.section_by_name(name).map(|s| s.address()..s.address() + s.size());
        let (eh_frame_svma, eh_frame) = copy(".eh_frame").unzip();
        let (eh_frame_hdr_svma, eh_frame_hdr) = copy(".eh_frame_hdr").unzip();
        let mut debug_frame = copy(".debug_frame").map(|(_, d)| d);
        if eh_frame.is_none() && debug_frame.is_none() {
            debug_frame = obj.build_id().ok().flatten().and_then(debug);
        }
        if eh_frame.is_none() && debug_frame.is_none() {
            return None;
        }
        let bytes =
            [&eh_frame, &eh_frame_hdr, &debug_frame].iter().filter_map(|s| s.as_ref()).map(|s| s.len()).sum();
        let segments = obj.segments().map(|s| (s.address(), s.file_range().0, s.file_range().1)).collect();
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: svma(".text"),
            text: None,
            got_svma: svma(".got"),
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
        Some(Tables { info, segments, bytes })
    }

    /// False when the tables do not parse whole (a damaged or hostile binary): every CIE and
    /// FDE, every search-table entry and every rule row is read, so a caller that acts on it
    /// (the live unwinder, which does not unwind through such a binary: its callers would
    /// come from a fallback rule, not from the tables) asks once per binary.
    pub(crate) fn sound(&self) -> bool {
        let i = &self.info;
        let start = |r: &Option<std::ops::Range<u64>>| r.as_ref().map_or(0, |r| r.start);
        let bases = gimli::BaseAddresses::default()
            .set_eh_frame(start(&i.eh_frame_svma))
            .set_eh_frame_hdr(start(&i.eh_frame_hdr_svma))
            .set_text(start(&i.text_svma))
            .set_got(start(&i.got_svma));
        match (&i.eh_frame, &i.debug_frame) {
            (Some(eh), _) => eh_frame_sound(eh, i.eh_frame_hdr.as_deref(), &bases),
            (None, Some(debug)) => debug_frame_sound(debug, &bases),
            (None, None) => false,
        }
    }

    /// The `.debug_frame` of a separate debug file's image.
    pub(crate) fn debug_frame<'d, R: ReadRef<'d>>(data: R) -> Option<Section> {
        let obj = object::File::parse(data).ok()?;
        let s = obj.section_by_name(".debug_frame")?;
        Some(Section::from(&*s.uncompressed_data().ok()?))
    }

    /// Bytes the tables take.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The module of a mapping of this binary at `start..end` from file offset `pgoff`
    /// (`None` when no loadable segment holds that offset).
    pub(crate) fn module(&self, name: String, start: u64, end: u64, pgoff: u64) -> Option<Module<Section>> {
        let &(vaddr, off, _) =
            self.segments.iter().find(|&&(_, o, sz)| pgoff >= o && pgoff - o < sz.max(1))?;
        let svma = vaddr + (pgoff - off);
        let base_avma = start.wrapping_sub(svma);
        Some(Module::new(name, start..end, base_avma, self.info.clone()))
    }
}

/// Every CIE and FDE of an `.eh_frame` parses and every row of its rules evaluates, and
/// every entry of its `.eh_frame_hdr` search table points to an FDE.
fn eh_frame_sound(eh: &[u8], hdr: Option<&[u8]>, bases: &gimli::BaseAddresses) -> bool {
    use gimli::{EhFrame, EhFrameHdr, LittleEndian, UnwindSection};
    let eh_frame = EhFrame::new(eh, LittleEndian);
    if !cfi_sound(&eh_frame, bases) {
        return false;
    }
    let Some(hdr) = hdr else { return true };
    let Ok(parsed) = EhFrameHdr::new(hdr, LittleEndian).parse(bases, 8) else { return false };
    let Some(table) = parsed.table() else { return true };
    let mut iter = table.iter(bases);
    loop {
        match iter.next() {
            Ok(None) => return true,
            Ok(Some((_, fde))) => {
                let fde = table
                    .pointer_to_offset(fde)
                    .and_then(|offset| eh_frame.fde_from_offset(bases, offset, EhFrame::cie_from_offset));
                if fde.is_err() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
}

fn debug_frame_sound(debug: &[u8], bases: &gimli::BaseAddresses) -> bool {
    let mut frame = gimli::DebugFrame::new(debug, gimli::LittleEndian);
    frame.set_address_size(8);
    cfi_sound(&frame, bases)
}

/// Walks every entry of a CFI section and evaluates every row of every FDE.
fn cfi_sound<'d, S: gimli::UnwindSection<gimli::EndianSlice<'d, gimli::LittleEndian>>>(
    section: &S,
    bases: &gimli::BaseAddresses,
) -> bool
where
    S::Offset: gimli::UnwindOffset<usize>,
{
    let mut ctx = Box::new(gimli::UnwindContext::new());
    let mut entries = section.entries(bases);
    loop {
        match entries.next() {
            Ok(None) => return true,
            Ok(Some(gimli::CieOrFde::Cie(_))) => {}
            Ok(Some(gimli::CieOrFde::Fde(partial))) => {
                let Ok(fde) = partial.parse(S::cie_from_offset) else { return false };
                let Ok(mut rows) = fde.rows(section, bases, &mut ctx) else { return false };
                loop {
                    match rows.next_row() {
                        Ok(None) => break,
                        Ok(Some(_)) => {}
                        Err(_) => return false,
                    }
                }
            }
            Err(_) => return false,
        }
    }
}

/// The user registers of a sample that unwinding needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Regs {
    pub(crate) ip: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
}

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// At the outermost frame (the tables say the caller is undefined, as they do for
    /// `_start` and the thread entry), or at the frame limit.
    Complete,
    /// A return address of 0 was found.
    NullReturn,
    /// The unwinder could not go on (the stack pointer went backwards, a rule could not be
    /// evaluated, ...).
    Failed,
}

/// The end of a walk, and whether it read words past the end of the stack copy (read as 0:
/// the copy was too small for this stack, and the last frames are lost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Walked {
    pub(crate) end: End,
    pub(crate) outside: bool,
}

/// Walks the stack copy `stack` (taken at `regs.sp`) and calls `frame` with the address of
/// each frame, leaf first: the sampled instruction, then each caller's `return address - 1`
/// (inside the call instruction, the address perf prints and the one whose line and
/// function are the caller's). At most `max` frames; `frame` returns false to stop there
/// (the walk then ends [`End::Complete`]).
pub(crate) fn walk(
    unwinder: &Unwinder,
    cache: &mut Cache,
    regs: Regs,
    stack: &[u8],
    max: usize,
    mut frame: impl FnMut(u64) -> bool,
) -> Walked {
    let outside = std::cell::Cell::new(false);
    let mut read = |addr: u64| {
        let (word, inside) = read_stack(stack, regs.sp, addr);
        outside.set(outside.get() || !inside);
        Ok(word)
    };
    let mut iter =
        unwinder.iter_frames(regs.ip, UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp), cache, &mut read);
    let end = |end| Walked { end, outside: outside.get() };
    for _ in 0..max {
        let addr = match iter.next() {
            Ok(Some(FrameAddress::InstructionPointer(ip))) => ip,
            Ok(Some(FrameAddress::ReturnAddress(ra))) => ra.get() - 1,
            Ok(None) => return end(End::Complete),
            Err(framehop::Error::ReturnAddressIsNull) => return end(End::NullReturn),
            Err(_) => return end(End::Failed),
        };
        if !frame(addr) {
            break;
        }
    }
    end(End::Complete)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_words_outside_the_copy_read_as_zero() {
        let stack: Vec<u8> = (0u8..16).collect();
        assert_eq!(
            read_stack(&stack, 0x1000, 0x1008),
            (u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]), true)
        );
        assert_eq!(read_stack(&stack, 0x1000, 0x1009), (0, false));
        assert_eq!(read_stack(&stack, 0x1000, 0xff8), (0, false));
        assert_eq!(read_stack(&stack, u64::MAX - 2, 2), (0, false));
    }

    #[test]
    fn garbage_is_no_binary() {
        assert!(Tables::read(&b"\x7fELF garbage"[..], |_| None).is_none());
        assert!(Tables::read(&[][..], |_| None).is_none());
    }
}
