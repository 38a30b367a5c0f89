//! The prefix tree of frames that the HTML page embeds.
//!
//! Stacks become a tree rooted at a virtual "all" node. A flame graph merges every equal
//! prefix and orders children by name; a flame chart merges a frame only with the last child
//! of its parent, so that x keeps input (time) order and only consecutive equal prefixes
//! share a box.

use rustc_hash::FxHashMap;

use crate::fold::{Stacks, Weight};

/// Marks "no node".
const NONE: u32 = u32::MAX;

/// One frame occurrence.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// Index into [`Tree::names`] (unused for the root).
    pub(crate) name: u32,
    /// Weight of stacks ending exactly here.
    pub(crate) self_weight: Weight,
    /// For differential input: their weight before (the first column).
    pub(crate) self_before: Weight,
    parent: u32,
    last_child: u32,
}

/// Frames of all stacks, merged by prefix.
#[derive(Debug)]
pub(crate) struct Tree {
    /// Distinct frame names, in first-seen order.
    pub(crate) names: Vec<Box<[u8]>>,
    /// Nodes in creation order; node 0 is the root.
    pub(crate) nodes: Vec<Node>,
    name_ids: FxHashMap<Box<[u8]>, u32>,
    children: FxHashMap<(u32, u32), u32>,
    merge_all: bool,
}

impl Tree {
    /// Builds the tree of `stacks` (in their output order); `reverse` turns each stack
    /// leaf-first; `merge_all` is false for flame charts. `before` holds the BEFORE weights
    /// of differential input (see [`super::HtmlProfile::before`]).
    pub(crate) fn build(stacks: &Stacks, before: Option<&Stacks>, reverse: bool, merge_all: bool) -> Tree {
        let root = Node {
            name: NONE,
            self_weight: Weight::ZERO,
            self_before: Weight::ZERO,
            parent: NONE,
            last_child: NONE,
        };
        let mut tree = Tree {
            names: Vec::new(),
            nodes: vec![root],
            name_ids: FxHashMap::default(),
            children: FxHashMap::default(),
            merge_all,
        };
        let mut frames: Vec<&[u8]> = Vec::new();
        // Sorted stacks share prefixes with their predecessor, so most frames are found as the
        // last child of their parent by a byte comparison, without hashing.
        let ordered_before = match before {
            Some(Stacks::Ordered(o)) => o.items(),
            _ => &[],
        };
        for (i, (stack, weight)) in stacks.in_output_order().into_iter().enumerate() {
            frames.clear();
            frames.extend(stack.split(|&b| b == b';').filter(|f| !f.is_empty()));
            if reverse {
                frames.reverse();
            }
            let was = match before {
                Some(Stacks::Counts(c)) => c.get(stack).unwrap_or_default(),
                Some(Stacks::Ordered(_)) => {
                    ordered_before.get(i).filter(|(s, _)| **s == *stack).map_or(Weight::ZERO, |(_, w)| *w)
                }
                None => Weight::ZERO,
            };
            tree.add(&frames, weight, was);
        }
        // Stacks only BEFORE has: drawn with no width, yet their weight is part of the
        // before total and of their frames' (a baseline that lost them would be wrong).
        // (Summed profiles: a time-ordered one is compared run by run, above.)
        if let (Some(Stacks::Counts(b)), Stacks::Counts(after)) = (before, stacks) {
            for (stack, was) in b.sorted() {
                if after.get(stack).is_some() {
                    continue;
                }
                frames.clear();
                frames.extend(stack.split(|&b| b == b';').filter(|f| !f.is_empty()));
                if reverse {
                    frames.reverse();
                }
                tree.add(&frames, Weight::ZERO, was);
            }
        }
        tree
    }

    fn add(&mut self, frames: &[&[u8]], weight: Weight, before: Weight) {
        let mut at = 0u32;
        for frame in frames {
            let last = self.nodes[at as usize].last_child;
            if last != NONE && *self.names[self.nodes[last as usize].name as usize] == **frame {
                at = last;
                continue;
            }
            let name = self.intern(frame);
            at = self.child(at, name);
        }
        self.nodes[at as usize].self_weight += weight;
        self.nodes[at as usize].self_before += before;
    }

    fn intern(&mut self, frame: &[u8]) -> u32 {
        if let Some(&id) = self.name_ids.get(frame) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(frame.into());
        self.name_ids.insert(frame.into(), id);
        id
    }

    fn child(&mut self, parent: u32, name: u32) -> u32 {
        let last = self.nodes[parent as usize].last_child;
        if last != NONE && self.nodes[last as usize].name == name {
            return last;
        }
        if self.merge_all
            && let Some(&c) = self.children.get(&(parent, name))
        {
            return c;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            name,
            self_weight: Weight::ZERO,
            self_before: Weight::ZERO,
            parent,
            last_child: NONE,
        });
        self.nodes[parent as usize].last_child = id;
        if self.merge_all {
            self.children.insert((parent, name), id);
        }
        id
    }

    /// Children of every node in drawing order: by name for merged trees, by creation
    /// (input) order for flame charts. Returned as offsets into one list.
    pub(crate) fn children_lists(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.nodes.len();
        let mut offsets = vec![0u32; n + 1];
        for node in &self.nodes[1..] {
            offsets[node.parent as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill: Vec<u32> = offsets[..n].to_vec();
        let mut list = vec![0u32; n.saturating_sub(1)];
        for (id, node) in self.nodes.iter().enumerate().skip(1) {
            let slot = &mut fill[node.parent as usize];
            list[*slot as usize] = id as u32;
            *slot += 1;
        }
        if self.merge_all {
            let rank = self.name_ranks();
            for i in 0..n {
                let kids = &mut list[offsets[i] as usize..offsets[i + 1] as usize];
                kids.sort_unstable_by_key(|&k| rank[self.nodes[k as usize].name as usize]);
            }
        }
        (offsets, list)
    }

    #[cfg(test)]
    fn name_of(&self, node: u32) -> &[u8] {
        &self.names[self.nodes[node as usize].name as usize]
    }

    /// Position of each name in bytewise order.
    fn name_ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.names.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| self.names[a as usize].cmp(&self.names[b as usize]));
        let mut rank = vec![0u32; order.len()];
        for (r, &id) in order.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }

    /// Sum of all weights.
    pub(crate) fn total(&self) -> Weight {
        self.nodes.iter().map(|n| n.self_weight).sum()
    }

    /// Sum of all BEFORE weights (differential input).
    pub(crate) fn total_before(&self) -> Weight {
        self.nodes.iter().map(|n| n.self_before).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::{OrderedStacks, StackCounts};

    fn counts(lines: &[(&str, u64)]) -> Stacks {
        let mut c = StackCounts::new();
        for (s, w) in lines {
            c.add(s.as_bytes(), Weight::from_u64(*w));
        }
        Stacks::Counts(c)
    }

    #[test]
    fn merges_prefixes_even_when_bytewise_sort_separates_them() {
        // "a;b!" sorts between "a;b" and "a;b;c": the two "b" must still be one node.
        let t = Tree::build(&counts(&[("a;b", 1), ("a;b!", 2), ("a;b;c", 3)]), None, false, true);
        assert_eq!(t.nodes.len(), 1 + 4); // a, b, b!, c
        assert_eq!(t.total(), Weight::from_u64(6));
    }

    #[test]
    fn flame_chart_merges_only_consecutive() {
        let mut o = OrderedStacks::new();
        o.push(b"a;b", Weight::ONE);
        o.push(b"a;c", Weight::ONE);
        o.push(b"a;b", Weight::ONE);
        let t = Tree::build(&Stacks::Ordered(o), None, false, false);
        // a is shared by consecutive stacks; b appears twice (not consecutive).
        assert_eq!(t.nodes.len(), 1 + 4);
        let (off, list) = t.children_lists();
        let a_kids: Vec<_> = list[off[1] as usize..off[2] as usize].iter().map(|&k| t.name_of(k)).collect();
        assert_eq!(a_kids, vec![&b"b"[..], b"c", b"b"]);
    }

    #[test]
    fn reverse_puts_leaf_first() {
        let t = Tree::build(&counts(&[("a;b;c", 1)]), None, true, true);
        assert_eq!(t.name_of(1), b"c");
    }
}
