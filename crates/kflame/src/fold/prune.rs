//! What a flame graph cannot draw, merged before it is drawn or sent: a day of a busy
//! machine is hundreds of thousands of distinct stacks, most of them far narrower than a pixel
//! (the viewers draw runs of frames under a pixel as one gray block anyway).
//!
//! [`prune`] builds the prefix tree of the stacks, and every stack whose frame at some depth
//! has a total below `min_fraction` of the whole is cut at the deepest frame that is still
//! wide enough; what was cut goes into one child of that frame named
//! `(N stacks below P% merged)`. Weights are only moved, never dropped: the total, and the
//! total of every frame kept, are exactly those of the input. [`prune_together`] does the
//! same to the two sides of a comparison with one tree, so that both are cut at the same
//! frames and their placeholders have the same names (a frame is kept when it is wide in
//! either side).

use std::borrow::Cow;
use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use super::{StackCounts, Stacks, Weight, common_prefix};

/// Marks "no node".
const NONE: u32 = u32::MAX;

/// What [`prune`] made of one profile.
#[derive(Debug)]
pub struct Pruned {
    /// The stacks to draw.
    pub stacks: Stacks,
    /// Input stacks that were merged into a `(… merged)` frame.
    pub merged: u64,
    /// Distinct input stacks.
    pub before: u64,
}

struct Node<'a> {
    name: &'a [u8],
    parent: u32,
    last_child: u32,
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

/// Merges what is narrower than `min_fraction` of the total (see the module). `None` when
/// nothing is below it (or for time-ordered stacks, whose runs are not merged).
pub fn prune(stacks: &Stacks, min_fraction: f64) -> Option<Pruned> {
    prune_sides(&[stacks], min_fraction).and_then(|mut v| v.pop())
}

/// [`prune`] of several profiles with one tree (see the module): `None` when nothing is
/// below `min_fraction` in any (or one is time-ordered), else one [`Pruned`] per profile, in
/// order. A placeholder counts the distinct stacks it holds over all of them.
pub fn prune_together(sides: &[&Stacks], min_fraction: f64) -> Option<Vec<Pruned>> {
    prune_sides(sides, min_fraction)
}

fn prune_sides(sides: &[&Stacks], min_fraction: f64) -> Option<Vec<Pruned>> {
    let counts: Vec<&StackCounts> = sides
        .iter()
        .map(|s| if let Stacks::Counts(c) = s { Some(c) } else { None })
        .collect::<Option<_>>()?;
    let n = counts.len();
    if min_fraction <= 0.0 || counts.iter().all(|c| c.is_empty()) {
        return None;
    }
    // Each stack with the frames it is filed under: its own text, or, for the rare stack
    // with empty frames (`a;;b`, a leading or trailing `;`), that text without them.
    let mut items: Vec<Filed<'_>> = counts
        .iter()
        .enumerate()
        .flat_map(|(side, c)| c.iter().map(move |(stack, w)| (stack, w, side)))
        .map(|(stack, w, side)| {
            let clean = !stack.starts_with(b";") && !stack.ends_with(b";") && !has_empty_frame(stack);
            let key = if clean {
                Cow::Borrowed(stack)
            } else {
                let frames: Vec<&[u8]> = stack.split(|&b| b == b';').filter(|f| !f.is_empty()).collect();
                Cow::Owned(frames.join(&b';'))
            };
            Filed { key, stack, weight: w, side }
        })
        .collect();
    // In frame order, the stacks under any path are consecutive: a child's stacks all come
    // before its next sibling's, so a frame is either the last child of its parent or new.
    items.sort_unstable_by(|a, b| frame_order(&a.key, &b.key));
    let mut nodes: Vec<Node<'_>> = vec![Node { name: b"", parent: NONE, last_child: NONE }];
    // Each node's total in each profile: `totals[node * n + side]`.
    let mut totals: Vec<Weight> = vec![Weight::ZERO; n];
    let mut leaves = Vec::with_capacity(items.len());
    // The previous stack's frames (node, end in its text): the frames a stack shares with
    // it are not split and looked up again.
    let mut path: Vec<(u32, usize)> = Vec::new();
    let mut prev: &[u8] = b"";
    for item in &items {
        let key = &item.key;
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
                nodes.push(Node { name: frame, parent: at, last_child: NONE });
                totals.extend(std::iter::repeat_n(Weight::ZERO, n));
                nodes[at as usize].last_child = id;
                at = id;
            }
            path.push((at, end));
        }
        prev = key;
        totals[at as usize * n + item.side] += item.weight;
        leaves.push(at);
    }
    // Children come after their parent: one backward pass sums the subtrees.
    for i in (1..nodes.len()).rev() {
        let p = nodes[i].parent as usize;
        for side in 0..n {
            let t = totals[i * n + side];
            totals[p * n + side] += t;
        }
    }
    // A profile whose total is zero has no say (every frame of it would be "wide").
    let cutoffs: Vec<Option<f64>> = (0..n)
        .map(|side| {
            let t = totals[side].as_f64();
            (t > 0.0).then_some(t * min_fraction)
        })
        .collect();
    if cutoffs.iter().all(Option::is_none) {
        return None;
    }
    let wide = |node: u32| {
        node == 0
            || cutoffs
                .iter()
                .enumerate()
                .any(|(side, c)| c.is_some_and(|c| totals[node as usize * n + side].as_f64() >= c))
    };
    if leaves.iter().all(|&l| wide(l)) {
        return None;
    }
    let mut out: Vec<StackCounts> = (0..n).map(|_| StackCounts::new()).collect();
    let mut merged = vec![0u64; n];
    // The deepest wide frame of each cut stack → (weight in each profile, stacks).
    let mut cut: FxHashMap<u32, (Vec<Weight>, u64)> = FxHashMap::default();
    let mut prev_cut: Option<&[u8]> = None; // the key of the stack cut just before
    for (item, &leaf) in items.iter().zip(&leaves) {
        if wide(leaf) {
            out[item.side].add(item.stack, item.weight);
            prev_cut = None;
            continue;
        }
        let mut at = nodes[leaf as usize].parent;
        while !wide(at) {
            at = nodes[at as usize].parent;
        }
        let e = cut.entry(at).or_insert_with(|| (vec![Weight::ZERO; n], 0));
        e.0[item.side] += item.weight;
        // One profile: every stack counts. Several: a stack in two of them counts once
        // (identical stacks are next to each other in frame order).
        if n == 1 || prev_cut != Some(&item.key[..]) {
            e.1 += 1;
        }
        prev_cut = Some(&item.key);
        merged[item.side] += 1;
    }
    let pct = percent(min_fraction);
    let mut path: Vec<&[u8]> = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    for (at, (weights, count)) in cut {
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
        let s = if count == 1 { "" } else { "s" };
        text.extend_from_slice(format!("({count} stack{s} below {pct} merged)").as_bytes());
        for (side, w) in weights.into_iter().enumerate() {
            if w > Weight::ZERO {
                out[side].add(&text, w);
            }
        }
    }
    Some(
        out.into_iter()
            .zip(merged)
            .zip(&counts)
            .map(|((stacks, merged), c)| Pruned {
                stacks: Stacks::Counts(stacks),
                merged,
                before: c.len() as u64,
            })
            .collect(),
    )
}

/// A stack as filed for the tree.
struct Filed<'a> {
    /// Its frames without empty ones.
    key: Cow<'a, [u8]>,
    /// Its text.
    stack: &'a [u8],
    weight: Weight,
    /// The profile it is of.
    side: usize,
}

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
    fn two_profiles_are_cut_at_the_same_frames() {
        // At 1.5%: `main;b` is narrow in `before` (1%) and wide in `after`: kept in both.
        // `main;c` is wide (2%) and its children narrow (1%) in both: one placeholder of the
        // same name on each side, counting `main;c;x` (in both) once.
        let before = counts(&[("main;a", 970), ("main;b", 10), ("main;c;x", 10), ("main;c;y", 10)]);
        let after = counts(&[("main;a", 500), ("main;b", 480), ("main;c;x", 10), ("main;c;z", 10)]);
        let p = prune_together(&[&before, &after], 0.015).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].stacks.total(), before.total());
        assert_eq!(p[1].stacks.total(), after.total());
        assert_eq!(
            sorted(&p[0].stacks),
            vec![
                ("main;a".to_string(), 970),
                ("main;b".to_string(), 10),
                ("main;c;(3 stacks below 1.5% merged)".to_string(), 20),
            ]
        );
        assert_eq!(
            sorted(&p[1].stacks),
            vec![
                ("main;a".to_string(), 500),
                ("main;b".to_string(), 480),
                ("main;c;(3 stacks below 1.5% merged)".to_string(), 20),
            ]
        );
        assert_eq!((p[0].merged, p[0].before, p[1].merged, p[1].before), (2, 4, 2, 4));
        // One side empty: the other alone decides.
        let empty = Stacks::Counts(StackCounts::new());
        let p = prune_together(&[&empty, &before], 0.015).unwrap();
        assert!(p[0].stacks.is_empty());
        assert_eq!(sorted(&p[1].stacks), sorted(&prune(&before, 0.015).unwrap().stacks));
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
