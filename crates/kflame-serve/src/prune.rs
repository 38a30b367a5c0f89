//! What the viewer cannot draw, merged before it is sent: a day of a busy machine is
//! hundreds of thousands of distinct stacks, most of them far narrower than a pixel of the
//! flame graph (the viewer draws runs of frames under a pixel as one gray block anyway).
//!
//! [`prune`] builds the prefix tree of the stacks, and every stack whose frame at some depth
//! has a total below `min_fraction` of the whole is cut at the deepest frame that is still
//! wide enough; what was cut goes into one child of that frame named
//! `(N stacks below P% merged)`. Weights are only moved, never dropped: the total, and the
//! total of every frame kept, are exactly those of the input.

use std::borrow::Cow;
use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use kflame::fold::{StackCounts, Stacks, Weight, common_prefix};

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
    let Stacks::Counts(counts) = stacks else { return None };
    if min_fraction <= 0.0 || counts.is_empty() {
        return None;
    }
    // Each stack with the frames it is filed under: its own text, or, for the rare stack
    // with empty frames (`a;;b`, a leading or trailing `;`), that text without them.
    let mut items: Vec<Filed<'_>> = counts
        .iter()
        .map(|(stack, w)| {
            let clean = !stack.starts_with(b";") && !stack.ends_with(b";") && !has_empty_frame(stack);
            let key = if clean {
                Cow::Borrowed(stack)
            } else {
                let frames: Vec<&[u8]> = stack.split(|&b| b == b';').filter(|f| !f.is_empty()).collect();
                Cow::Owned(frames.join(&b';'))
            };
            (key, stack, w)
        })
        .collect();
    // In frame order, the stacks under any path are consecutive: a child's stacks all come
    // before its next sibling's, so a frame is either the last child of its parent or new.
    items.sort_unstable_by(|a, b| frame_order(&a.0, &b.0));
    let mut nodes: Vec<Node<'_>> =
        vec![Node { name: b"", parent: NONE, last_child: NONE, total: Weight::ZERO }];
    let mut leaves = Vec::with_capacity(items.len());
    // The previous stack's frames (node, end in its text): the frames a stack shares with
    // it are not split and looked up again.
    let mut path: Vec<(u32, usize)> = Vec::new();
    let mut prev: &[u8] = b"";
    for (key, _, weight) in &items {
        let c = common_prefix(prev, key);
        while let Some(&(_, end)) = path.last() {
            if end < c || (end == c && key.get(end).is_none_or(|&b| b == b';')) {
                break;
            }
            path.pop();
        }
        let mut at = path.last().map_or(0, |p| p.0);
        let mut start = path.last().map_or(0, |p| p.1 + 1);
        while start < key.len() {
            let end = memchr::memchr(b';', &key[start..]).map_or(key.len(), |i| start + i);
            let frame = &key[start..end];
            start = end + 1;
            if frame.is_empty() {
                continue;
            }
            let last = nodes[at as usize].last_child;
            if last != NONE && nodes[last as usize].name == frame {
                at = last;
            } else {
                let id = nodes.len() as u32;
                nodes.push(Node { name: frame, parent: at, last_child: NONE, total: Weight::ZERO });
                nodes[at as usize].last_child = id;
                at = id;
            }
            path.push((at, end));
        }
        prev = key;
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
    for ((_, stack, weight), &leaf) in items.iter().zip(&leaves) {
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

/// A stack as filed for the tree: its frames without empty ones, its text, its weight.
type Filed<'a> = (Cow<'a, [u8]>, &'a [u8], Weight);

/// True when `stack` holds `;;`.
fn has_empty_frame(stack: &[u8]) -> bool {
    memchr::memmem::find(stack, b";;").is_some()
}

/// Stacks compared frame by frame (each frame bytewise, a frame before its extensions:
/// `perf;b` before `perf-exec;a`), which is byte order with `;` below every other byte.
fn frame_order(a: &[u8], b: &[u8]) -> Ordering {
    let n = common_prefix(a, b);
    let rank = |c: u8| if c == b';' { 0u16 } else { u16::from(c) + 1 };
    match (a.get(n), b.get(n)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(&x), Some(&y)) => rank(x).cmp(&rank(y)),
    }
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
    fn empty_frames_are_no_frames() {
        // `a;;b`, `;a;b` and `a;b;` are the path a, b: one node, wide with their weights
        // together (each alone is narrow), even with `a;!x` sorting between them bytewise.
        let s = counts(&[("a;;b", 2), (";a;b", 2), ("a;b;", 2), ("a;!x", 1), ("a;c", 1), ("z", 92)]);
        let p = prune(&s, 0.05).unwrap();
        assert_eq!(p.stacks.total(), s.total());
        let got = sorted(&p.stacks);
        assert!(got.contains(&("a;(2 stacks below 5% merged)".to_string(), 2)), "{got:?}");
        let under_b = got.iter().filter(|(k, _)| k.trim_end_matches(';').ends_with('b'));
        assert_eq!(under_b.map(|(_, w)| w).sum::<u64>(), 6, "{got:?}");
        assert_eq!(p.merged, 2);
    }

    #[test]
    fn frame_order_groups_the_stacks_under_a_path() {
        let mut v: Vec<&[u8]> = vec![b"perf-exec;a", b"perf;b", b"perf", b"per", b"perf;a;x", b"perf\x00;c"];
        v.sort_unstable_by(|a, b| frame_order(a, b));
        assert_eq!(v, vec![&b"per"[..], b"perf", b"perf;a;x", b"perf;b", b"perf\x00;c", b"perf-exec;a"]);
        // Long common prefixes, differing past 8-byte steps.
        let (a, b) = (b"0123456789abcdef;x".as_slice(), b"0123456789abcdef;y".as_slice());
        assert_eq!(frame_order(a, b), Ordering::Less);
        assert_eq!(frame_order(a, a), Ordering::Equal);
    }

    /// The pruning of many generated stacks (shared prefixes, names that are prefixes of
    /// their siblings', empty frames) equals what the definition gives, path by path.
    #[test]
    fn generated_stacks_prune_as_the_definition_says() {
        let names: [&[u8]; 8] = [b"perf", b"perf-exec", b"per", b"a", b"a!", b"", b"zz", b"\x00"];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut pruned = 0;
        for round in 0..20 {
            let mut c = StackCounts::new();
            for _ in 0..300 {
                let depth = 1 + next(6) as usize;
                let frames: Vec<&[u8]> = (0..depth).map(|_| names[next(8) as usize]).collect();
                c.add(&frames.join(&b';'), Weight::from_u64(1 + next(20)));
            }
            let s = Stacks::Counts(c);
            let fraction = [0.002, 0.01, 0.05][round % 3];
            // The definition: each path's total; a stack whose path is narrow goes to its
            // deepest wide ancestor.
            let path = |t: &[u8]| -> Vec<Vec<u8>> {
                t.split(|&b| b == b';').filter(|f| !f.is_empty()).map(<[u8]>::to_vec).collect()
            };
            let mut totals: std::collections::HashMap<Vec<Vec<u8>>, Weight> = Default::default();
            let items = s.in_output_order();
            for (t, w) in &items {
                let p = path(t);
                for d in 0..=p.len() {
                    *totals.entry(p[..d].to_vec()).or_insert(Weight::ZERO) += *w;
                }
            }
            let cutoff = totals[&Vec::new()].as_f64() * fraction;
            let wide = |p: &[Vec<u8>]| p.is_empty() || totals[p].as_f64() >= cutoff;
            let mut want = StackCounts::new();
            let mut cut: std::collections::BTreeMap<Vec<Vec<u8>>, (Weight, u64)> = Default::default();
            for (t, w) in &items {
                let p = path(t);
                if wide(&p) {
                    want.add(t, *w);
                    continue;
                }
                let d = (0..p.len()).rev().find(|&d| wide(&p[..d])).unwrap_or(0);
                let e = cut.entry(p[..d].to_vec()).or_insert((Weight::ZERO, 0));
                e.0 += *w;
                e.1 += 1;
            }
            let pct = percent(fraction);
            for (p, (w, n)) in &cut {
                let mut text: Vec<u8> = p.iter().flat_map(|f| f.iter().copied().chain([b';'])).collect();
                let s = if *n == 1 { "" } else { "s" };
                text.extend_from_slice(format!("({n} stack{s} below {pct} merged)").as_bytes());
                want.add(&text, *w);
            }
            match prune(&s, fraction) {
                Some(p) => {
                    assert_eq!(sorted(&p.stacks), sorted(&Stacks::Counts(want)), "round {round}");
                    assert_eq!(p.merged, cut.values().map(|v| v.1).sum::<u64>());
                    pruned += 1;
                }
                None => assert!(cut.is_empty(), "round {round}: nothing pruned"),
            }
        }
        assert!(pruned >= 10, "{pruned} rounds of 20 pruned something");
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
