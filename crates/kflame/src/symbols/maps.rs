//! Address spaces: which mapping (file, offset) covers a user address.

/// One mapping of a process: `[start, end)` maps to file offset `pgoff` of `object`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping<T> {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset mapped at `start`.
    pub pgoff: u64,
    /// What is mapped (a file or object id chosen by the caller).
    pub object: T,
}

impl<T> Mapping<T> {
    /// The file offset of `addr` (which must lie in this mapping): the address perf prints
    /// for user frames and the one symbol tables of this crate are keyed by.
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr.wrapping_sub(self.start).wrapping_add(self.pgoff)
    }
}

/// The mappings of one process, non-overlapping, sorted by address. A new mapping replaces
/// whatever it overlaps (like `mmap` over an existing range, and like perf's map fixups).
#[derive(Clone, Debug)]
pub struct AddressSpace<T> {
    maps: Vec<Mapping<T>>,
}

impl<T> Default for AddressSpace<T> {
    fn default() -> Self {
        AddressSpace { maps: Vec::new() }
    }
}

impl<T: Clone> AddressSpace<T> {
    /// An empty address space.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a mapping, cutting away the overlapped parts of older ones. Empty or inverted
    /// ranges are ignored.
    pub fn insert(&mut self, m: Mapping<T>) {
        if m.end <= m.start {
            return;
        }
        let first = self.maps.partition_point(|x| x.end <= m.start);
        let mut last = first;
        let mut keep = Vec::new();
        while last < self.maps.len() && self.maps[last].start < m.end {
            let old = &self.maps[last];
            if old.start < m.start {
                keep.push(Mapping { end: m.start, ..old.clone() });
            }
            if old.end > m.end {
                let pgoff = old.pgoff.wrapping_add(m.end - old.start);
                keep.push(Mapping { start: m.end, pgoff, ..old.clone() });
            }
            last += 1;
        }
        let mut replacement = Vec::with_capacity(keep.len() + 1);
        replacement.extend(keep.iter().filter(|k| k.start < m.start).cloned());
        let new_end = m.end;
        replacement.push(m);
        replacement.extend(keep.into_iter().filter(|k| k.start >= new_end));
        self.maps.splice(first..last, replacement);
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping<T>> {
        let i = self.maps.partition_point(|x| x.end <= addr);
        self.maps.get(i).filter(|m| m.start <= addr)
    }

    /// All mappings in address order.
    pub fn mappings(&self) -> &[Mapping<T>] {
        &self.maps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, object: u32) -> Mapping<u32> {
        Mapping { start, end, pgoff, object }
    }

    #[test]
    fn overlaps_are_cut() {
        let mut a = AddressSpace::new();
        a.insert(m(0x1000, 0x5000, 0, 1));
        a.insert(m(0x8000, 0x9000, 0, 3));
        a.insert(m(0x2000, 0x3000, 0x100, 2));
        assert_eq!(
            a.mappings(),
            &[
                m(0x1000, 0x2000, 0, 1),
                m(0x2000, 0x3000, 0x100, 2),
                m(0x3000, 0x5000, 0x2000, 1),
                m(0x8000, 0x9000, 0, 3)
            ]
        );
        assert_eq!(a.find(0x3500).unwrap().file_offset(0x3500), 0x2500);
        assert!(a.find(0x6000).is_none());
        a.insert(m(0x0, 0x10000, 0, 4));
        assert_eq!(a.mappings(), &[m(0, 0x10000, 0, 4)]);
        a.insert(m(5, 5, 0, 9));
        assert_eq!(a.mappings().len(), 1);
    }
}
