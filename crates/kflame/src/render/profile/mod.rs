//! The renderer's input model: folded stacks read from any number of inputs, with frame
//! names interned and each stack stored as a run of `u32` name ids in one arena.
//!
//! This keeps memory proportional to the number of *frames* (4 bytes each) rather than to
//! the text of the stacks, which matters for profiles with hundreds of thousands of
//! distinct stacks. Stacks are then ordered the way FlameGraph orders them (bytewise, as if
//! the frames were joined by `;`), or kept in input order for flame charts.

mod frames;
mod read;

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::str::Utf8Error;

use rustc_hash::FxHashMap;

use crate::fold::{Meta, Stacks, Weight};
use frames::PrevStack;

/// Kind of a line skipped because its stack is not valid UTF-8.
pub const INVALID_UTF8: &str = "invalid UTF-8";

/// One stack: a range of the id arena and its weights.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StackRef {
    pub(crate) start: u32,
    pub(crate) len: u32,
    /// The weight drawn (for differential input, the second column).
    pub(crate) weight: Weight,
    /// The first column of differential input (zero otherwise).
    pub(crate) before: Weight,
}

/// Folded stacks ready for layout.
#[derive(Debug, Default)]
pub struct Profile {
    names: Vec<Box<str>>,
    ids: FxHashMap<Box<str>, u32>,
    arena: Vec<u32>,
    pub(crate) stacks: Vec<StackRef>,
    /// Unit and event, from `# unit=` / `# event=` headers.
    pub meta: Meta,
    /// True when at least one line had two weight columns.
    pub differential: bool,
    time_order: bool,
    reverse: bool,
    /// Inputs read by [`Profile::read`] (the first one sets the unit).
    inputs: u32,
    scratch: Vec<u32>,
    prev: PrevStack,
    /// Sorted mode: the distinct stacks read so far, by the hash of their frame ids: the
    /// index of the latest stack with that hash; `chain` links to earlier ones (collisions).
    by_hash: FxHashMap<u64, u32>,
    chain: Vec<u32>,
}

/// End of a `chain` of stacks with equal hashes.
const NO_STACK: u32 = u32::MAX;

impl Profile {
    /// An empty profile. `time_order` keeps input order (flame charts), merging only
    /// identical consecutive stacks; `reverse` flips every stack (leaf becomes root).
    pub fn new(time_order: bool, reverse: bool) -> Profile {
        Profile { time_order, reverse, ..Profile::default() }
    }

    /// A finished profile of stacks already in memory (a recording, stacks collapsed by the
    /// library), without writing them out as folded text and reading that back: summed
    /// stacks ([`Stacks::Counts`]) in the FlameGraph order, time-ordered ones
    /// ([`Stacks::Ordered`]) in their order (a flame chart). `reverse` flips every stack.
    ///
    /// Frame names that are not UTF-8 are decoded lossily (invalid bytes become U+FFFD), as
    /// the HTML viewer shows them: stacks in memory come from a collapser or recorder, not
    /// from a file whose bad lines a user could fix, so none is dropped. (Reading folded
    /// *text* with [`Profile::read`] instead skips such lines and counts them.)
    pub fn from_stacks(stacks: &Stacks, meta: &Meta, reverse: bool) -> Profile {
        let mut profile = Profile::new(matches!(stacks, Stacks::Ordered(_)), reverse);
        for (stack, weight) in stacks.in_output_order() {
            match std::str::from_utf8(stack) {
                Ok(s) => profile.add(s, weight, Weight::ZERO),
                Err(_) => profile.add(&String::from_utf8_lossy(stack), weight, Weight::ZERO),
            }
        }
        profile.meta = meta.clone();
        profile.finish();
        profile
    }

    /// Adds one stack (frames joined by `;`).
    pub fn add(&mut self, stack: &str, weight: Weight, before: Weight) {
        // A `&str` is valid UTF-8 throughout.
        let _ = self.add_bytes(stack.as_bytes(), weight, before);
    }

    /// Adds one stack given as bytes; fails (adding nothing) when a frame is not UTF-8.
    fn add_bytes(&mut self, stack: &[u8], weight: Weight, before: Weight) -> Result<(), Utf8Error> {
        let mut ids = std::mem::take(&mut self.scratch);
        let result = self.frame_ids(stack, &mut ids);
        if result.is_ok() {
            if self.reverse {
                ids.reverse();
            }
            self.push_ids(&ids, weight, before);
        }
        self.scratch = ids;
        result
    }

    /// Adds the weights of one stack: to the same stack read before (sorted mode: memory
    /// grows with distinct stacks, not with input lines), or to the previous one when it is
    /// the same (time order), else as a new stack.
    fn push_ids(&mut self, ids: &[u32], weight: Weight, before: Weight) {
        if self.time_order {
            if let Some(last) = self.stacks.last_mut() {
                let s = last.start as usize;
                if self.arena[s..s + last.len as usize] == *ids {
                    last.weight += weight;
                    last.before += before;
                    return;
                }
            }
            self.push_new(ids, weight, before);
            return;
        }
        if self.chain.len() != self.stacks.len() {
            // Stacks added after `finish`: index them again.
            self.by_hash.clear();
            self.chain.clear();
            for i in 0..self.stacks.len() {
                let hash = ids_hash(self.frames(&self.stacks[i]));
                let previous = self.by_hash.insert(hash, i as u32).unwrap_or(NO_STACK);
                self.chain.push(previous);
            }
        }
        let hash = ids_hash(ids);
        let mut at = self.by_hash.get(&hash).copied().unwrap_or(NO_STACK);
        while let Some(s) = self.stacks.get_mut(at as usize) {
            let start = s.start as usize;
            if self.arena[start..start + s.len as usize] == *ids {
                s.weight += weight;
                s.before += before;
                return;
            }
            at = self.chain.get(at as usize).copied().unwrap_or(NO_STACK);
        }
        let index = u32::try_from(self.stacks.len()).unwrap_or(NO_STACK);
        let previous = self.by_hash.insert(hash, index).unwrap_or(NO_STACK);
        self.chain.push(previous);
        self.push_new(ids, weight, before);
    }

    fn push_new(&mut self, ids: &[u32], weight: Weight, before: Weight) {
        let start = u32::try_from(self.arena.len()).unwrap_or(u32::MAX);
        self.arena.extend_from_slice(ids);
        let len = ids.len() as u32;
        self.stacks.push(StackRef { start, len, weight, before });
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// Orders the stacks for layout: bytewise by joined text and with duplicates summed
    /// (the FlameGraph order), unless the profile keeps time order.
    pub fn finish(&mut self) {
        if self.time_order {
            return;
        }
        // Every stack is distinct already; the index is not needed any more.
        self.by_hash = FxHashMap::default();
        self.chain = Vec::new();
        let mut stacks = std::mem::take(&mut self.stacks);
        stacks.sort_unstable_by(|a, b| self.compare(a, b));
        // In place: `later` is dropped after being added to `kept`.
        stacks.dedup_by(|later, kept| {
            let same = self.frames(later) == self.frames(kept);
            if same {
                kept.weight += later.weight;
                kept.before += later.before;
            }
            same
        });
        self.stacks = stacks;
    }

    /// Compares two stacks as their `;`-joined texts would compare.
    fn compare(&self, a: &StackRef, b: &StackRef) -> Ordering {
        let (fa, fb) = (self.frames(a), self.frames(b));
        for (i, (x, y)) in fa.iter().zip(fb).enumerate() {
            if x == y {
                continue;
            }
            let (na, nb) = (self.name(*x).as_bytes(), self.name(*y).as_bytes());
            let n = na.len().min(nb.len());
            return match na[..n].cmp(&nb[..n]) {
                Ordering::Equal if na.len() < nb.len() => next_byte(fa, i).cmp(&Some(nb[n])),
                Ordering::Equal => Some(na[n]).cmp(&next_byte(fb, i)),
                other => other,
            };
        }
        fa.len().cmp(&fb.len())
    }

    /// The frame ids of one stack, root first.
    pub(crate) fn frames(&self, s: &StackRef) -> &[u32] {
        &self.arena[s.start as usize..(s.start + s.len) as usize]
    }

    /// The name of an interned frame.
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |s| s)
    }

    /// Number of stacks (distinct after [`Profile::finish`], runs for time order).
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    /// True when no stack was read.
    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Sum of the drawn weights.
    pub fn total(&self) -> Weight {
        self.stacks.iter().map(|s| s.weight).sum()
    }
}

/// The hash of a stack's frame ids.
fn ids_hash(ids: &[u32]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    ids.hash(&mut h);
    h.finish()
}

/// The byte following frame `i` in the joined text: `;` when more frames follow, none at
/// the end (which sorts first).
fn next_byte(frames: &[u32], i: usize) -> Option<u8> {
    (i + 1 < frames.len()).then_some(b';')
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The input could not be read.
    #[error(transparent)]
    Io(std::io::Error),
    /// The input's `# unit=` differs from an earlier input's.
    #[error("{0}")]
    Units(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Diagnostics;

    fn joined(p: &Profile) -> Vec<String> {
        p.stacks
            .iter()
            .map(|s| p.frames(s).iter().map(|&i| p.name(i)).collect::<Vec<_>>().join(";"))
            .collect()
    }

    #[test]
    fn orders_like_joined_text() {
        let mut p = Profile::new(false, false);
        for s in ["a;foo;x", "a;foo-bar", "a;foo", "a;foo;x", "a", "b;c", "a;fo"] {
            p.add(s, Weight::ONE, Weight::ZERO);
        }
        p.finish();
        let mut expect = vec!["a", "a;fo", "a;foo", "a;foo-bar", "a;foo;x", "b;c"];
        expect.sort();
        assert_eq!(joined(&p), expect);
        assert_eq!(p.stacks[4].weight, Weight::from_u64(2));
    }

    #[test]
    fn prefix_reuse_keeps_frames_exact() {
        let seq = ["a;b;c", "a;b;cd", "a;bx;c", "a;b;c", "a", "a;b", "ab;b", "ab;b", "a;;c", "a;;c;", ";"];
        let mut p = Profile::new(true, false);
        for (i, s) in seq.iter().enumerate() {
            p.add(s, Weight::from_u64(i as u64 + 1), Weight::ZERO);
        }
        let mut expect: Vec<&str> = seq.to_vec();
        expect.dedup();
        assert_eq!(joined(&p), expect);
    }

    #[test]
    fn duplicates_are_summed_while_reading() {
        let mut p = Profile::new(false, false);
        for s in ["a;b", "c", "a;b", "c;d", "a;b", "c"] {
            p.add(s, Weight::ONE, Weight::from_u64(2));
        }
        assert_eq!(p.len(), 3, "one entry per distinct stack, before finish");
        p.finish();
        // Stacks added after `finish` are still summed with the same ones.
        p.add("c", Weight::ONE, Weight::ZERO);
        p.add("e", Weight::ONE, Weight::ZERO);
        assert_eq!(p.len(), 4);
        p.finish();
        assert_eq!(joined(&p), ["a;b", "c", "c;d", "e"]);
        let weights: Vec<u64> = p.stacks.iter().map(|s| s.weight.whole()).collect();
        assert_eq!(weights, [3, 3, 1, 1]);
        assert_eq!(p.stacks[0].before, Weight::from_u64(6));
    }

    #[test]
    fn time_order_merges_only_consecutive() {
        let mut p = Profile::new(true, false);
        for s in ["a;b", "a;b", "c", "a;b"] {
            p.add(s, Weight::ONE, Weight::ZERO);
        }
        assert_eq!(joined(&p), ["a;b", "c", "a;b"]);
        assert_eq!(p.stacks[0].weight, Weight::from_u64(2));
    }

    #[test]
    fn units_of_several_inputs() {
        let mut diag = Diagnostics::new();
        let mut p = Profile::new(false, false);
        p.read(&b"a 1\n"[..], &mut diag).unwrap();
        p.read(&b"# unit=samples\nb 1\n"[..], &mut diag).unwrap();
        assert_eq!(p.meta.unit, crate::fold::Unit::Samples);
        let e = p.read(&b"# unit=bytes\nc 1\n"[..], &mut diag).unwrap_err();
        assert!(e.to_string().contains("unit samples and unit bytes"), "{e}");
        let mut p = Profile::new(false, false);
        p.read(&b"a 1\n"[..], &mut diag).unwrap();
        assert!(p.read(&b"# unit=ns\nc 1\n"[..], &mut diag).is_err(), "no header, then ns");
    }

    #[test]
    fn from_stacks_matches_reading_the_same_folded_text() {
        use crate::fold::{OrderedStacks, StackCounts, Unit};
        let lines: [(&[u8], u64); 5] = [(b"a;b", 3), (b"c", 1), (b"a;b", 2), (b"a;b;d", 4), (b"a", 1)];
        let meta = Meta { unit: Unit::Bytes, event: Some("kmem:kmalloc".into()) };
        let (mut counts, mut ordered) = (StackCounts::new(), OrderedStacks::new());
        let mut text = meta.header();
        for (stack, w) in lines {
            counts.add(stack, Weight::from_u64(w));
            ordered.push(stack, Weight::from_u64(w));
            text.push_str(&format!("{} {w}\n", std::str::from_utf8(stack).unwrap()));
        }
        for (stacks, chart) in [(Stacks::Counts(counts), false), (Stacks::Ordered(ordered), true)] {
            for reverse in [false, true] {
                let direct = Profile::from_stacks(&stacks, &meta, reverse);
                let mut read = Profile::new(chart, reverse);
                read.read(text.as_bytes(), &mut Diagnostics::new()).unwrap();
                read.finish();
                assert_eq!(joined(&direct), joined(&read), "chart {chart} reverse {reverse}");
                let weights = |p: &Profile| p.stacks.iter().map(|s| s.weight).collect::<Vec<_>>();
                assert_eq!(weights(&direct), weights(&read));
                assert_eq!(direct.meta, read.meta);
                assert_eq!(direct.total(), Weight::from_u64(11));
            }
        }
    }

    #[test]
    fn from_stacks_keeps_non_utf8_frames_lossily() {
        let mut counts = crate::fold::StackCounts::new();
        counts.add(b"main;f\xff", Weight::from_u64(2));
        counts.add(b"main;g", Weight::ONE);
        let p = Profile::from_stacks(&Stacks::Counts(counts), &Meta::default(), false);
        assert_eq!(joined(&p), ["main;f\u{fffd}", "main;g"]);
        assert_eq!(p.total(), Weight::from_u64(3));
    }

    #[test]
    fn skips_bad_lines_and_reverses() {
        let text = b"# unit=bytes\na;b 3\nno-count\nx;\xff 2\nc;d -1\n\0 1\n 4\n";
        let mut p = Profile::new(false, true);
        let mut diag = Diagnostics::new();
        p.read(&text[..], &mut diag).unwrap();
        p.finish();
        assert_eq!(joined(&p), ["b;a"]);
        assert_eq!(diag.skipped(), 5);
        assert_eq!(diag.get(INVALID_UTF8).unwrap().first_line, 4);
        assert_eq!(p.meta.unit, crate::fold::Unit::Bytes);
    }
}
