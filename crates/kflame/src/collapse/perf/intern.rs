//! Interned frames and stacks: the hot path of the perf collapser.
//!
//! The same frame line (`symbol (dso)`, the address aside) appears millions of times in a
//! large capture, so each distinct one is parsed and tidied once and then known by a `u32`
//! id; a sample becomes `[root id, frame ids...]`, aggregated in a map of short keys. The
//! folded strings are built once per distinct stack, in [`Interner::drain_into`].

use rustc_hash::FxHashMap;

use crate::fold::{Stacks, Weight};

/// Id of a frame line that names no frame (a process name in parentheses).
pub(crate) const NO_FRAME: u32 = u32::MAX;

/// What a known frame line stands for.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Known {
    /// Rendered frame id, or [`NO_FRAME`].
    pub(crate) id: u32,
    /// The line had no `(dso)` column: its address must be hexadecimal and indented.
    pub(crate) bare: bool,
}

/// Frame and root tables plus the per-stack aggregation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Interner {
    /// Frame line key → id, one table per Java mode (Java tidying depends on the root).
    lines: [FxHashMap<Box<[u8]>, Known>; 2],
    /// Rendered frames, concatenated; `spans[id]` = (start, end).
    names: Vec<u8>,
    spans: Vec<(usize, usize)>,
    roots: FxHashMap<Box<[u8]>, u32>,
    root_names: Vec<Box<[u8]>>,
    stacks: FxHashMap<Box<[u32]>, Weight>,
    scratch: Vec<u8>,
}

impl Interner {
    /// The id of a frame line seen before.
    #[inline]
    pub(crate) fn lookup(&self, java: bool, key: &[u8]) -> Option<Known> {
        self.lines[usize::from(java)].get(key).copied()
    }

    /// Records a new frame line: `rendered` is its folded text (`None`: no frame).
    pub(crate) fn insert(&mut self, java: bool, key: &[u8], rendered: Option<&[u8]>, bare: bool) -> Known {
        let id = match rendered {
            Some(text) => {
                let start = self.names.len();
                self.names.extend_from_slice(text);
                self.spans.push((start, self.names.len()));
                (self.spans.len() - 1) as u32
            }
            None => NO_FRAME,
        };
        let known = Known { id, bare };
        self.lines[usize::from(java)].insert(key.into(), known);
        known
    }

    /// The id of a root frame (process name, with pid/tid).
    pub(crate) fn root(&mut self, name: &[u8]) -> u32 {
        if let Some(&id) = self.roots.get(name) {
            return id;
        }
        let id = self.root_names.len() as u32;
        self.root_names.push(name.into());
        self.roots.insert(name.into(), id);
        id
    }

    /// Adds a sample: `key` is `[root id, frame ids leaf first...]`. In time order the
    /// folded stack is built right away, keeping the order of samples.
    #[inline]
    pub(crate) fn add(&mut self, key: &[u32], weight: Weight, out: &mut Stacks) {
        if let Stacks::Ordered(_) = out {
            self.render(key);
            out.add(&self.scratch, weight);
        } else if let Some(w) = self.stacks.get_mut(key) {
            *w += weight;
        } else {
            self.stacks.insert(key.into(), weight);
        }
    }

    /// Moves the aggregated stacks, as folded strings, into `out`.
    pub(crate) fn drain_into(&mut self, out: &mut Stacks) {
        let stacks = std::mem::take(&mut self.stacks);
        for (key, weight) in stacks {
            self.render(&key);
            out.add(&self.scratch, weight);
        }
    }

    /// `root;caller;...;leaf` into `scratch`.
    fn render(&mut self, key: &[u32]) {
        let s = &mut self.scratch;
        s.clear();
        let Some((&root, frames)) = key.split_first() else { return };
        s.extend_from_slice(&self.root_names[root as usize]);
        for &id in frames.iter().rev() {
            let (a, b) = self.spans[id as usize];
            s.push(b';');
            s.extend_from_slice(&self.names[a..b]);
        }
    }
}
