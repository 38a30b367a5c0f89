//! A profile as a prefix tree: what a flame graph draws, and what travels from a store to a
//! page instead of stack texts.
//!
//! Frame names are interned once ([`NameId`]); a node is a frame under its parent, with the
//! weight of the stacks ending exactly there (`self_weight`) and, for a comparison, their
//! weight in the baseline (`self_before`). A store that keeps stacks as frame ids builds the
//! tree straight from them ([`StackTree::intern`] once per frame id, [`StackTree::add_ids`]
//! per stack): no stack is ever joined into text and split again.
//!
//! Node 0 is the root (no frame). Nodes are numbered in creation order, so a node's parent
//! always has a smaller number: one backward pass sums subtrees. A flame graph tree
//! ([`StackTree::new`]) merges every equal prefix; a flame chart tree
//! ([`StackTree::flame_chart`]) merges a frame only with the last child of its parent, so
//! that x keeps input (time) order.
//!
//! [`StackTree::prune`] merges what is too narrow to draw into placeholder frames, moving
//! weights, never dropping them: the totals, and the total of every frame kept, stay exact.

use rustc_hash::FxHashMap;

use super::{Stacks, Weight};

/// Marks "no node".
const NONE: u32 = u32::MAX;

/// A frame name's index in a [`StackTree`]'s name table.
pub type NameId = u32;

/// One frame occurrence.
#[derive(Clone, Debug)]
pub struct TreeNode {
    /// Its frame (unused for the root).
    pub name: NameId,
    /// Its parent (`u32::MAX` for the root).
    pub parent: u32,
    /// Weight of the stacks ending exactly here.
    pub self_weight: Weight,
    /// For a comparison: their weight in the baseline (BEFORE).
    pub self_before: Weight,
    /// True when some stack ends here (even of zero weight).
    pub ends: bool,
    last_child: u32,
}

impl TreeNode {
    /// A frame under `parent`, with no weight and no child yet.
    fn new(name: NameId, parent: u32) -> TreeNode {
        TreeNode {
            name,
            parent,
            self_weight: Weight::ZERO,
            self_before: Weight::ZERO,
            ends: false,
            last_child: NONE,
        }
    }
}

/// Frames of many stacks merged by prefix (see the module).
#[derive(Clone, Debug)]
pub struct StackTree {
    names: Vec<Box<[u8]>>,
    name_ids: FxHashMap<Box<[u8]>, NameId>,
    nodes: Vec<TreeNode>,
    /// (parent, name) → child, for flame graph trees; rebuilt from the nodes when stale.
    children: FxHashMap<(u32, NameId), u32>,
    children_stale: bool,
    merge_all: bool,
}

impl Default for StackTree {
    fn default() -> Self {
        StackTree::new()
    }
}

/// What [`StackTree::prune`] merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PruneStats {
    /// Stacks (nodes where a stack ends) moved into placeholders.
    pub merged: u64,
    /// Stacks before pruning.
    pub before: u64,
    /// Of `merged`, those with weight in the AFTER profile (the widths).
    pub merged_after: u64,
    /// Of `merged`, those with weight in the baseline (BEFORE).
    pub merged_before: u64,
}

impl StackTree {
    /// An empty flame graph tree: equal prefixes merge, children drawn by name.
    pub fn new() -> StackTree {
        StackTree::with_merge(true)
    }

    /// An empty flame chart tree: a frame merges only with its parent's last child.
    pub fn flame_chart() -> StackTree {
        StackTree::with_merge(false)
    }

    fn with_merge(merge_all: bool) -> StackTree {
        let root = TreeNode::new(NONE, NONE);
        StackTree {
            names: Vec::new(),
            name_ids: FxHashMap::default(),
            nodes: vec![root],
            children: FxHashMap::default(),
            children_stale: false,
            merge_all,
        }
    }

    /// The tree of `stacks` (in their output order; empty frames are no frames); `reverse`
    /// turns each stack leaf-first; `merge_all` is false for a flame chart. `before` gives
    /// the BEFORE weights of a comparison: summed stacks are looked up by stack (a missing
    /// one was 0 before; one only `before` has is a node of no width, its weight part of the
    /// before totals); time-ordered ones must be the same runs in the same order.
    pub fn from_stacks(
        stacks: &Stacks,
        before: Option<&Stacks>,
        reverse: bool,
        merge_all: bool,
    ) -> StackTree {
        let mut tree = StackTree::with_merge(merge_all);
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

    /// Adds a stack of frame names (root first): `weight` to its last frame's own weight,
    /// `before` to its baseline weight.
    pub fn add(&mut self, frames: &[&[u8]], weight: Weight, before: Weight) {
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
        self.end_at(at, weight, before);
    }

    /// Adds a stack of interned names (root first), as [`StackTree::add`].
    pub fn add_ids(&mut self, names: &[NameId], weight: Weight, before: Weight) {
        let mut at = 0u32;
        for &name in names {
            at = self.child(at, name);
        }
        self.end_at(at, weight, before);
    }

    fn end_at(&mut self, at: u32, weight: Weight, before: Weight) {
        let node = &mut self.nodes[at as usize];
        node.self_weight += weight;
        node.self_before += before;
        node.ends |= at != 0;
    }

    /// The id of the frame name `name`, added to the table when new.
    pub fn intern(&mut self, name: &[u8]) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.names.len() as NameId;
        self.names.push(name.into());
        self.name_ids.insert(name.into(), id);
        id
    }

    /// The child of `parent` for `name`, made when missing.
    fn child(&mut self, parent: u32, name: NameId) -> u32 {
        let last = self.nodes[parent as usize].last_child;
        if last != NONE && self.nodes[last as usize].name == name {
            return last;
        }
        if self.merge_all {
            if self.children_stale {
                self.rebuild_children();
            }
            if let Some(&c) = self.children.get(&(parent, name)) {
                return c;
            }
        }
        let id = self.push_node(TreeNode::new(name, parent));
        if self.merge_all {
            self.children.insert((parent, name), id);
        }
        id
    }

    /// A new child of `parent` that cannot exist yet (its (parent, name) map is left stale).
    fn new_child(&mut self, parent: u32, name: NameId) -> u32 {
        self.children_stale = true;
        self.push_node(TreeNode::new(name, parent))
    }

    /// Adds `node` as its parent's last child; its id.
    fn push_node(&mut self, node: TreeNode) -> u32 {
        let id = self.nodes.len() as u32;
        let parent = node.parent;
        self.nodes.push(node);
        self.nodes[parent as usize].last_child = id;
        id
    }

    fn rebuild_children(&mut self) {
        self.children.clear();
        self.children.reserve(self.nodes.len());
        for id in 1..self.nodes.len() {
            let (p, name) = (self.nodes[id].parent, self.nodes[id].name);
            self.children.insert((p, name), id as u32);
        }
        self.children_stale = false;
    }

    /// Adds many stacks of interned names at once, as [`StackTree::add_ids`] would one by one:
    /// `frames` holds their names end to end, each stack is (start, length, weight) in it
    /// (a stack may come several times: its weights add up). Into an empty flame graph tree,
    /// the stacks are partitioned frame by frame (sorted by the name at each depth, a run of
    /// one name becoming one child), so that no frame is looked up: what a store building a
    /// range's tree from frame ids uses.
    pub fn add_all_ids(&mut self, frames: &[NameId], stacks: &[(u32, u32, Weight)]) {
        let path_of = |s: &(u32, u32, Weight)| -> &[NameId] {
            frames.get(s.0 as usize..(s.0 as usize).saturating_add(s.1 as usize)).unwrap_or(&[])
        };
        if !self.merge_all || self.nodes.len() > 1 {
            for s in stacks {
                self.add_ids(path_of(s), s.2, Weight::ZERO);
            }
            return;
        }
        let mut order: Vec<u32> = (0..stacks.len() as u32).collect();
        let mut keyed: Vec<u64> = Vec::new();
        self.nodes.reserve(stacks.len().saturating_mul(2));
        // (node, depth, the stacks under it: order[lo..hi])
        let mut work: Vec<(u32, usize, usize, usize)> = Vec::new();
        if !order.is_empty() {
            work.push((0, 0, 0, order.len()));
        }
        while let Some((node, depth, lo, hi)) = work.pop() {
            let part = &mut order[lo..hi];
            // The frames all of them share from here on are a chain (each stack's frames are
            // contiguous: read in order, not a frame of every stack per depth).
            let first = path_of(&stacks[part[0] as usize]).get(depth..).unwrap_or(&[]);
            let mut shared = first.len();
            for &i in &part[1..] {
                let p = path_of(&stacks[i as usize]).get(depth..).unwrap_or(&[]);
                shared = common_len(&first[..shared], p);
                if shared == 0 {
                    break;
                }
            }
            let mut at = node;
            for &name in &first[..shared] {
                at = self.new_child(at, name);
            }
            let depth = depth + shared;
            if let [one] = part {
                self.end_at(at, stacks[*one as usize].2, Weight::ZERO);
                continue;
            }
            // Where they part: the stacks ending here first, then by the name at this depth
            // (each key read once, the pairs sorted in place of the stacks).
            keyed.clear();
            keyed.extend(part.iter().map(|&i| {
                let k = path_of(&stacks[i as usize]).get(depth).map_or(0, |&n| u64::from(n) + 1);
                k << 32 | u64::from(i)
            }));
            keyed.sort_unstable();
            for (slot, &ki) in part.iter_mut().zip(&keyed) {
                *slot = ki as u32;
            }
            let mut r = 0;
            while r < keyed.len() {
                let k = keyed[r] >> 32;
                let mut e = r + 1;
                while e < keyed.len() && keyed[e] >> 32 == k {
                    e += 1;
                }
                if k == 0 {
                    for &ki in &keyed[r..e] {
                        self.end_at(at, stacks[ki as u32 as usize].2, Weight::ZERO);
                    }
                } else {
                    let child = self.new_child(at, (k - 1) as NameId);
                    work.push((child, depth + 1, lo + r, lo + e));
                }
                r = e;
            }
        }
    }

    /// Adds every stack of `baseline` (a tree of the same kind) as BEFORE weights: the tree
    /// becomes the comparison of this profile against `baseline`. Its own BEFORE weights are
    /// added to.
    pub fn add_baseline(&mut self, baseline: &StackTree) {
        let names: Vec<NameId> = baseline.names.iter().map(|n| self.intern(n)).collect();
        // Node of `baseline` → node here; parents come first.
        let mut here = vec![0u32; baseline.nodes.len()];
        for (i, node) in baseline.nodes.iter().enumerate().skip(1) {
            let at = self.child(here[node.parent as usize], names[node.name as usize]);
            here[i] = at;
            if node.ends {
                let w = node.self_weight;
                let own = &mut self.nodes[at as usize];
                own.self_before += w;
                own.ends = true;
            }
        }
    }

    /// [`StackTree::add_baseline`] with the baseline's weights scaled to this tree's total
    /// (exactly, as `kflame diff --normalize` scales BEFORE), so that profiles of different
    /// sizes (more hosts, a longer range) compare by share.
    pub fn add_baseline_normalized(&mut self, baseline: &StackTree) {
        let (from, to) = (baseline.total(), self.total());
        if from.is_zero() || from == to {
            return self.add_baseline(baseline);
        }
        let ends: Vec<usize> = (1..baseline.nodes.len()).filter(|&i| baseline.nodes[i].ends).collect();
        let mut w: Vec<Weight> = ends.iter().map(|&i| baseline.nodes[i].self_weight).collect();
        crate::fold::diff::scale(&mut w, from, to);
        let mut scaled = baseline.clone();
        for (&i, w) in ends.iter().zip(w) {
            scaled.nodes[i].self_weight = w;
        }
        self.add_baseline(&scaled);
    }

    /// Frame names, by [`NameId`].
    pub fn names(&self) -> &[Box<[u8]>] {
        &self.names
    }

    /// Nodes in creation order; node 0 is the root.
    pub fn nodes(&self) -> &[TreeNode] {
        &self.nodes
    }

    /// True when no stack was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1 && !self.nodes[0].ends && self.nodes[0].self_weight.is_zero()
    }

    /// Nodes where a stack ends: the distinct stacks of the tree.
    pub fn stack_count(&self) -> u64 {
        self.nodes.iter().filter(|n| n.ends).count() as u64
    }

    /// Sum of all weights.
    pub fn total(&self) -> Weight {
        self.nodes.iter().map(|n| n.self_weight).sum()
    }

    /// Sum of all BEFORE weights.
    pub fn total_before(&self) -> Weight {
        self.nodes.iter().map(|n| n.self_before).sum()
    }

    /// The frames of node `id`, root first.
    pub fn path(&self, id: u32) -> Vec<&[u8]> {
        let mut out = Vec::new();
        let mut at = id;
        while at != 0 && at != NONE {
            let node = &self.nodes[at as usize];
            out.push(&*self.names[node.name as usize]);
            at = node.parent;
        }
        out.reverse();
        out
    }

    /// The stacks of the tree (AFTER weights), as folded stacks summed by text: what a
    /// download of the drawn profile holds. Stacks of zero AFTER weight are left out.
    pub fn to_counts(&self) -> super::StackCounts {
        let mut out = super::StackCounts::new();
        let mut text = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            if !node.ends || node.self_weight.is_zero() {
                continue;
            }
            text.clear();
            for (k, f) in self.path(id as u32).into_iter().enumerate() {
                if k > 0 {
                    text.push(b';');
                }
                text.extend_from_slice(f);
            }
            out.add(&text, node.self_weight);
        }
        out
    }

    /// Children of every node in drawing order: by name for a flame graph, by creation
    /// (input) order for a flame chart. Returned as offsets into one list: the children of
    /// node `n` are `list[offsets[n]..offsets[n + 1]]`.
    pub fn children_lists(&self) -> (Vec<u32>, Vec<u32>) {
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

    /// Merges what is narrower than `min_fraction` of the total: every frame whose total is
    /// below it (in the AFTER and the BEFORE profile alike, when the tree is a comparison:
    /// a frame stays when it is wide in either) goes, with everything above it, into one
    /// child of its parent named `(N stacks below P% merged)` (P from [`percent`], N the
    /// stacks ending in what it took), which holds their weights. Totals stay exact.
    /// `None`, and the tree unchanged, when nothing is that narrow, for a flame chart (its
    /// runs are not merged) and for `min_fraction <= 0`.
    pub fn prune(&mut self, min_fraction: f64) -> Option<PruneStats> {
        if !self.merge_all || min_fraction <= 0.0 {
            return None;
        }
        let n = self.nodes.len();
        // Subtree totals (both sides) and stacks below each node (all, with AFTER weight,
        // with BEFORE weight).
        // The baseline's side only for a comparison.
        let compared = self.nodes.iter().any(|x| !x.self_before.is_zero());
        let mut after: Vec<Weight> = self.nodes.iter().map(|x| x.self_weight).collect();
        let mut before: Vec<Weight> =
            if compared { self.nodes.iter().map(|x| x.self_before).collect() } else { vec![Weight::ZERO] };
        let mut ends: Vec<[u32; 3]> = self
            .nodes
            .iter()
            .map(|x| {
                [
                    u32::from(x.ends),
                    u32::from(x.ends && !x.self_weight.is_zero()),
                    u32::from(x.ends && !x.self_before.is_zero()),
                ]
            })
            .collect();
        for i in (1..n).rev() {
            let p = self.nodes[i].parent as usize;
            let (a, e) = (after[i], ends[i]);
            after[p] += a;
            if compared {
                let b = before[i];
                before[p] += b;
            }
            for k in 0..3 {
                ends[p][k] += e[k];
            }
        }
        // A profile whose total is zero has no say (every frame of it would be "wide"). The
        // cut-off as the least weight that is wide (`as_f64() >= total * min_fraction`), so
        // that each node is one integer comparison.
        let cut_a =
            (after[0].as_f64() > 0.0).then(|| least_at_least(after[0], after[0].as_f64() * min_fraction));
        let cut_b =
            (before[0].as_f64() > 0.0).then(|| least_at_least(before[0], before[0].as_f64() * min_fraction));
        if cut_a.is_none() && cut_b.is_none() {
            return None;
        }
        let wide = |i: usize| {
            i == 0
                || cut_a.is_some_and(|c| after[i] >= c)
                || cut_b.is_some_and(|c| compared && before[i] >= c)
        };
        // Each node: kept, or the kept node whose placeholder takes it.
        let mut gone = vec![false; n];
        // Kept parent → (AFTER weight, BEFORE weight, stacks) of its placeholder.
        let mut cut: Vec<(u32, Weight, Weight, u64)> = Vec::new();
        let mut cut_at: FxHashMap<u32, usize> = FxHashMap::default();
        let mut stats =
            PruneStats { merged: 0, before: u64::from(ends[0][0]), merged_after: 0, merged_before: 0 };
        for i in 1..n {
            let p = self.nodes[i].parent as usize;
            if gone[p] {
                gone[i] = true;
                continue;
            }
            if wide(i) {
                continue;
            }
            gone[i] = true;
            let slot = *cut_at.entry(p as u32).or_insert_with(|| {
                cut.push((p as u32, Weight::ZERO, Weight::ZERO, 0));
                cut.len() - 1
            });
            cut[slot].1 += after[i];
            if compared {
                cut[slot].2 += before[i];
            }
            cut[slot].3 += u64::from(ends[i][0]);
            stats.merged += u64::from(ends[i][0]);
            stats.merged_after += u64::from(ends[i][1]);
            stats.merged_before += u64::from(ends[i][2]);
        }
        if cut.is_empty() {
            return None;
        }
        // Rebuild: the kept nodes in their order, then the placeholders; only the names still
        // used.
        let mut new_id = vec![NONE; n];
        let mut nodes: Vec<TreeNode> =
            Vec::with_capacity(n - gone.iter().filter(|&&g| g).count() + cut.len());
        let mut name_map = vec![NONE; self.names.len()];
        let mut names: Vec<Box<[u8]>> = Vec::new();
        let mut keep_name = |old: NameId, names: &mut Vec<Box<[u8]>>, taken: &mut Vec<Box<[u8]>>| {
            if name_map[old as usize] == NONE {
                name_map[old as usize] = names.len() as NameId;
                names.push(std::mem::take(&mut taken[old as usize]));
            }
            name_map[old as usize]
        };
        let mut old_names = std::mem::take(&mut self.names);
        for (i, node) in self.nodes.iter().enumerate() {
            if gone[i] {
                continue;
            }
            new_id[i] = nodes.len() as u32;
            let mut node = node.clone();
            if i > 0 {
                node.name = keep_name(node.name, &mut names, &mut old_names);
                node.parent = new_id[node.parent as usize];
            }
            node.last_child = NONE;
            nodes.push(node);
        }
        let pct = percent(min_fraction);
        self.names = names;
        self.name_ids.clear();
        for (id, name) in self.names.iter().enumerate() {
            self.name_ids.insert(name.clone(), id as NameId);
        }
        self.nodes = nodes;
        for (parent, a, b, count) in cut {
            let s = if count == 1 { "" } else { "s" };
            let label = format!("({count} stack{s} below {pct} merged)");
            let name = self.intern(label.as_bytes());
            self.nodes.push(TreeNode {
                self_weight: a,
                self_before: b,
                ends: true,
                ..TreeNode::new(name, new_id[parent as usize])
            });
        }
        // Last children; the (parent, name) map when a stack is added later.
        for id in 1..self.nodes.len() {
            let p = self.nodes[id].parent;
            self.nodes[p as usize].last_child = id as u32;
        }
        self.children.clear();
        self.children_stale = true;
        Some(stats)
    }
}

/// The least weight `w <= total` with `w.as_f64() >= c` (`as_f64` grows with the weight), or
/// one more than `total` when there is none.
fn least_at_least(total: Weight, c: f64) -> Weight {
    let (mut lo, mut hi) = (0u128, total.raw().saturating_add(1));
    if total.as_f64() < c {
        return Weight::from_raw(hi);
    }
    // Invariant: the answer is in [lo, hi], and `hi` (or total) qualifies.
    hi = total.raw();
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if Weight::from_raw(mid).as_f64() >= c {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Weight::from_raw(lo)
}

/// How many names `a` and `b` share from their start.
fn common_len(a: &[NameId], b: &[NameId]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The percentage `fraction` as the placeholders write it (`0.005%`).
pub fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    let mut s = format!("{p:.6}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("{s}%")
}

#[cfg(test)]
mod tests;
