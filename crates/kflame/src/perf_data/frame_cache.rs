//! A small direct-mapped cache in front of [`Resolver::frame`](super::resolve::Resolver):
//! most sampled addresses repeat, and finding one here costs a multiply and a compare
//! instead of a map lookup, a binary search over the process's mappings and a hash lookup.
//!
//! An entry is valid for one state of the address space it was resolved in: user addresses
//! are tagged with the generation of their process's mappings (which changes with every
//! new mapping and every fork), kernel addresses with none; the whole cache is emptied when
//! the kernel-side layout (modules, BPF programs) changes. A stale entry can therefore never
//! answer: it simply misses.

use super::resolve::Mode;

/// log2 of the number of entries (256Ki entries of 24 bytes: 6 MiB).
const BITS: u32 = 18;
/// The tag of an empty slot (no real tag reaches it: generations are far below 2^61).
const EMPTY: u64 = u64::MAX;

#[derive(Copy, Clone)]
struct Slot {
    ip: u64,
    tag: u64,
    id: u32,
}

/// Frame ids by (address, address-space generation, mode, Java rule).
pub(crate) struct FrameCache {
    slots: Box<[Slot]>,
    /// The kernel-layout generation the entries were made under.
    kernel_generation: u64,
}

impl FrameCache {
    pub(crate) fn new() -> FrameCache {
        let empty = Slot { ip: 0, tag: EMPTY, id: 0 };
        FrameCache { slots: vec![empty; 1 << BITS].into_boxed_slice(), kernel_generation: 0 }
    }

    /// Forgets everything if the kernel layout changed since the entries were made.
    pub(crate) fn check_kernel(&mut self, generation: u64) {
        if generation != self.kernel_generation {
            self.slots.fill(Slot { ip: 0, tag: EMPTY, id: 0 });
            self.kernel_generation = generation;
        }
    }

    /// The tag of an address resolved in `mode` with the Java rule `java`, in an address
    /// space at `space_generation` (0: the process has no mappings). Kernel addresses do
    /// not depend on the process.
    pub(crate) fn tag(space_generation: u64, mode: Mode, java: bool) -> u64 {
        let (generation, mode) = match mode {
            Mode::Kernel => (0, 0),
            Mode::User => (space_generation, 1),
            Mode::Other => (0, 2),
        };
        (generation << 3) | (mode << 1) | u64::from(java)
    }

    fn index(ip: u64, tag: u64) -> usize {
        let h = (ip ^ tag.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - BITS)) as usize
    }

    /// The cached frame id of `ip` under `tag`.
    #[inline]
    pub(crate) fn get(&self, ip: u64, tag: u64) -> Option<u32> {
        let s = &self.slots[Self::index(ip, tag)];
        (s.ip == ip && s.tag == tag).then_some(s.id)
    }

    /// Remembers the frame id of `ip` under `tag` (replacing whatever shared its slot).
    pub(crate) fn put(&mut self, ip: u64, tag: u64, id: u32) {
        self.slots[Self::index(ip, tag)] = Slot { ip, tag, id };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_answer_only_their_own_tag() {
        let mut c = FrameCache::new();
        let user = FrameCache::tag(7, Mode::User, false);
        c.put(0x1234, user, 5);
        assert_eq!(c.get(0x1234, user), Some(5));
        assert_eq!(c.get(0x1234, FrameCache::tag(8, Mode::User, false)), None);
        assert_eq!(c.get(0x1234, FrameCache::tag(7, Mode::User, true)), None);
        assert_eq!(c.get(0x1234, FrameCache::tag(7, Mode::Kernel, false)), None);
        assert_eq!(c.get(0x1235, user), None);
        c.check_kernel(0);
        assert_eq!(c.get(0x1234, user), Some(5));
        c.check_kernel(1);
        assert_eq!(c.get(0x1234, user), None);
    }
}
