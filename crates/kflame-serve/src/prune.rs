//! What the viewer cannot draw, merged before it is sent: a day of a busy machine is
//! hundreds of thousands of distinct stacks, most of them far narrower than a pixel of the
//! flame graph (the viewer draws runs of frames under a pixel as one gray block anyway).
//!
//! [`prune`] builds the prefix tree of the stacks, and every stack whose frame at some depth
//! has a total below `min_fraction` of the whole is cut at the deepest frame that is still
//! wide enough; what was cut goes into one child of that frame named
//! `(N stacks below P% merged)`. Weights are only moved, never dropped: the total, and the
//! total of every frame kept, are exactly those of the input.

use rustc_hash::FxHashMap;

use kflame::fold::{StackCounts, Stacks, Weight};

/// Marks "no node".
const NONE: u32 = u32::MAX;

/// What [`prune`] made.
#[derive(Debug)]
pub(crate) struct Pruned {
    /// The stacks to draw.
    pub(crate) stacks: Stacks,
    /// Input stacks that were merged into a `(… merged)` frame.
    pub(crate) merged: u64,
    /// Distinct input stacks.
    pub(crate) before: u64,
}

struct Node<'a> {
    name: &'a [u8],
    parent: u32,
    last_child: u32,
    total: Weight,
}

/// The percentage `fraction` as the note writes it (`0.005%`).
pub(crate) fn percent(fraction: f64) -> String {
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

/// Merges what is narrower than `min_fraction` of the total (see the module). `None` when
/// nothing is below it (or for time-ordered stacks, whose runs are not merged).
pub(crate) fn prune(stacks: &Stacks, min_fraction: f64) -> Option<Pruned> {
    let Stacks::Counts(_) = stacks else { return None };
    if min_fraction <= 0.0 || stacks.is_empty() {
        return None;
    }
    let items = stacks.in_output_order();
    let mut nodes: Vec<Node<'_>> =
        vec![Node { name: b"", parent: NONE, last_child: NONE, total: Weight::ZERO }];
    // Sorted stacks share prefixes with their predecessor: most frames are the last child of
    // their parent. A name that is a prefix of a sibling's (`perf`, `perf-exec`) can come
    // back after it, so every child is also found by (parent, name).
    let mut children: FxHashMap<(u32, &[u8]), u32> = FxHashMap::default();
    let mut leaves = Vec::with_capacity(items.len());
    for (stack, weight) in &items {
        let mut at = 0u32;
        for frame in stack.split(|&b| b == b';').filter(|f| !f.is_empty()) {
            let last = nodes[at as usize].last_child;
            if last != NONE && nodes[last as usize].name == frame {
                at = last;
                continue;
            }
            at = match children.get(&(at, frame)) {
                Some(&c) => c,
                None => {
                    let id = nodes.len() as u32;
                    nodes.push(Node { name: frame, parent: at, last_child: NONE, total: Weight::ZERO });
                    children.insert((at, frame), id);
                    id
                }
            };
            let parent = nodes[at as usize].parent;
            nodes[parent as usize].last_child = at;
        }
        nodes[at as usize].total += *weight;
        leaves.push(at);
    }
    // Children come after their parent: one backward pass sums the subtrees.
    for i in (1..nodes.len()).rev() {
        let (t, p) = (nodes[i].total, nodes[i].parent);
        nodes[p as usize].total += t;
    }
    let cutoff = nodes[0].total.as_f64() * min_fraction;
    let wide = |n: u32| n == 0 || nodes[n as usize].total.as_f64() >= cutoff;
    if leaves.iter().all(|&l| wide(l)) {
        return None;
    }
    let mut out = StackCounts::new();
    // The deepest wide frame of each cut stack → (weight, stacks).
    let mut cut: FxHashMap<u32, (Weight, u64)> = FxHashMap::default();
    for ((stack, weight), &leaf) in items.iter().zip(&leaves) {
        if wide(leaf) {
            out.add(stack, *weight);
            continue;
        }
        let mut at = nodes[leaf as usize].parent;
        while !wide(at) {
            at = nodes[at as usize].parent;
        }
        let e = cut.entry(at).or_insert((Weight::ZERO, 0));
        e.0 += *weight;
        e.1 += 1;
    }
    let pct = percent(min_fraction);
    let mut merged = 0u64;
    let mut path: Vec<&[u8]> = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    for (at, (weight, n)) in cut {
        merged += n;
        path.clear();
        let mut p = at;
        while p != 0 {
            path.push(nodes[p as usize].name);
            p = nodes[p as usize].parent;
        }
        text.clear();
        for name in path.iter().rev() {
            text.extend_from_slice(name);
            text.push(b';');
        }
        let s = if n == 1 { "" } else { "s" };
        text.extend_from_slice(format!("({n} stack{s} below {pct} merged)").as_bytes());
        out.add(&text, weight);
    }
    Some(Pruned { stacks: Stacks::Counts(out), merged, before: items.len() as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(lines: &[(&str, u64)]) -> Stacks {
        let mut c = StackCounts::new();
        for (s, w) in lines {
            c.add(s.as_bytes(), Weight::from_u64(*w));
        }
        Stacks::Counts(c)
    }

    fn sorted(s: &Stacks) -> Vec<(String, u64)> {
        s.in_output_order()
            .into_iter()
            .map(|(k, w)| (String::from_utf8_lossy(k).into_owned(), w.whole()))
            .collect()
    }

    #[test]
    fn narrow_stacks_go_into_their_deepest_wide_frame_and_the_total_stays() {
        let s = counts(&[
            ("main;work;hot", 900),
            ("main;work;cold1", 3),
            ("main;work;cold2", 2),
            ("main;idle;x", 4),
            ("other", 1),
            ("main", 90),
        ]);
        let p = prune(&s, 0.01).unwrap();
        assert_eq!(p.stacks.total(), s.total());
        assert_eq!(p.merged, 4);
        assert_eq!(p.before, 6);
        assert_eq!(
            sorted(&p.stacks),
            vec![
                ("(1 stack below 1% merged)".to_string(), 1),
                ("main".to_string(), 90),
                ("main;(1 stack below 1% merged)".to_string(), 4),
                ("main;work;(2 stacks below 1% merged)".to_string(), 5),
                ("main;work;hot".to_string(), 900),
            ]
        );
    }

    #[test]
    fn a_name_that_is_a_prefix_of_its_sibling_is_one_frame() {
        // Sorted bytewise, `perf-exec` comes between `perf` and `perf;…`.
        let s = counts(&[("perf", 50), ("perf-exec;a", 49), ("perf;b", 1)]);
        let p = prune(&s, 0.05).unwrap();
        assert_eq!(
            sorted(&p.stacks),
            vec![
                ("perf".to_string(), 50),
                ("perf-exec;a".to_string(), 49),
                ("perf;(1 stack below 5% merged)".to_string(), 1),
            ]
        );
    }

    #[test]
    fn nothing_below_the_cutoff_changes_nothing() {
        let s = counts(&[("a;b", 5), ("a;c", 5)]);
        assert!(prune(&s, 0.1).is_none());
        assert!(prune(&s, 0.0).is_none());
        assert_eq!(percent(0.00005), "0.005%");
        assert_eq!(percent(0.01), "1%");
    }
}
