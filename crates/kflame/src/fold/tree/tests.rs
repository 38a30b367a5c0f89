use super::*;
use crate::fold::{OrderedStacks, StackCounts};

fn counts(lines: &[(&str, u64)]) -> Stacks {
    let mut c = StackCounts::new();
    for (s, w) in lines {
        c.add(s.as_bytes(), Weight::from_u64(*w));
    }
    Stacks::Counts(c)
}

fn tree(s: &Stacks) -> StackTree {
    StackTree::from_stacks(s, None, false, true)
}

fn sorted(c: &StackCounts) -> Vec<(String, u64)> {
    c.sorted().into_iter().map(|(k, w)| (String::from_utf8_lossy(k).into_owned(), w.whole())).collect()
}

/// The BEFORE weights of a comparison tree, by stack.
fn baseline(t: &StackTree) -> StackCounts {
    let mut out = StackCounts::new();
    for (id, node) in t.nodes().iter().enumerate() {
        if node.ends && !node.self_before.is_zero() {
            out.add(&t.path(id as u32).join(&b';'), node.self_before);
        }
    }
    out
}

fn name_of(t: &StackTree, node: u32) -> &[u8] {
    &t.names()[t.nodes()[node as usize].name as usize]
}

#[test]
fn merges_prefixes_even_when_bytewise_sort_separates_them() {
    // "a;b!" sorts between "a;b" and "a;b;c": the two "b" must still be one node.
    let t = tree(&counts(&[("a;b", 1), ("a;b!", 2), ("a;b;c", 3)]));
    assert_eq!(t.nodes().len(), 1 + 4); // a, b, b!, c
    assert_eq!(t.total(), Weight::from_u64(6));
    assert_eq!(t.stack_count(), 3);
}

#[test]
fn flame_chart_merges_only_consecutive() {
    let mut o = OrderedStacks::new();
    o.push(b"a;b", Weight::ONE);
    o.push(b"a;c", Weight::ONE);
    o.push(b"a;b", Weight::ONE);
    let t = StackTree::from_stacks(&Stacks::Ordered(o), None, false, false);
    // a is shared by consecutive stacks; b appears twice (not consecutive).
    assert_eq!(t.nodes().len(), 1 + 4);
    let (off, list) = t.children_lists();
    let a_kids: Vec<_> = list[off[1] as usize..off[2] as usize].iter().map(|&k| name_of(&t, k)).collect();
    assert_eq!(a_kids, vec![&b"b"[..], b"c", b"b"]);
    let mut t = t;
    assert!(t.prune(0.5).is_none(), "a flame chart's runs are not merged");
}

#[test]
fn reverse_puts_leaf_first() {
    let t = StackTree::from_stacks(&counts(&[("a;b;c", 1)]), None, true, true);
    assert_eq!(name_of(&t, 1), b"c");
}

#[test]
fn stacks_of_ids_are_the_stacks_of_names() {
    let s = counts(&[("main;work;hot", 9), ("main;idle", 4), ("other", 1), ("main", 2)]);
    let by_text = tree(&s);
    let mut by_ids = StackTree::new();
    for (stack, w) in s.in_output_order() {
        let ids: Vec<NameId> = stack.split(|&b| b == b';').map(|f| by_ids.intern(f)).collect();
        by_ids.add_ids(&ids, w, Weight::ZERO);
    }
    assert_eq!(sorted(&by_ids.to_counts()), sorted(&by_text.to_counts()));
    assert_eq!(sorted(&by_ids.to_counts()), sorted(&s.clone().into_counts()));
    assert_eq!(by_ids.total(), s.total());
}

#[test]
fn a_baseline_tree_is_the_comparison_of_the_stacks() {
    let before = counts(&[("main;a", 7), ("main;gone", 3), ("x", 1)]);
    let after = counts(&[("main;a", 5), ("main;new", 4)]);
    let want = StackTree::from_stacks(&after, Some(&before), false, true);
    let mut got = tree(&after);
    got.add_baseline(&tree(&before));
    assert_eq!(got.total(), after.total());
    assert_eq!(got.total_before(), before.total());
    assert_eq!(sorted(&baseline(&got)), sorted(&baseline(&want)));
    assert_eq!(sorted(&baseline(&got)), sorted(&before.clone().into_counts()));
    assert_eq!(sorted(&got.to_counts()), sorted(&want.to_counts()));
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
    let mut t = tree(&s);
    let p = t.prune(0.01).unwrap();
    assert_eq!(t.total(), s.total());
    assert_eq!(p.merged, 4);
    assert_eq!(p.before, 6);
    assert_eq!(
        sorted(&t.to_counts()),
        vec![
            ("(1 stack below 1% merged)".to_string(), 1),
            ("main".to_string(), 90),
            ("main;(1 stack below 1% merged)".to_string(), 4),
            ("main;work;(2 stacks below 1% merged)".to_string(), 5),
            ("main;work;hot".to_string(), 900),
        ]
    );
    // Names of pruned frames are gone from the table: the page's string table is the drawn
    // frames' only.
    assert!(!t.names().iter().any(|n| **n == *b"cold1" || **n == *b"idle"));
    assert_eq!(t.names().len(), t.nodes().len() - 1 - 1, "main, work, hot and two placeholders (one name)");
}

#[test]
fn a_name_that_is_a_prefix_of_its_sibling_is_one_frame() {
    let s = counts(&[("perf", 50), ("perf-exec;a", 49), ("perf;b", 1)]);
    let mut t = tree(&s);
    t.prune(0.05).unwrap();
    assert_eq!(
        sorted(&t.to_counts()),
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
    // together (each alone is narrow).
    let s = counts(&[("a;;b", 2), (";a;b", 2), ("a;b;", 2), ("a;!x", 1), ("a;c", 1), ("z", 92)]);
    let mut t = tree(&s);
    let p = t.prune(0.05).unwrap();
    assert_eq!(t.total(), s.total());
    let got = sorted(&t.to_counts());
    assert!(got.contains(&("a;(2 stacks below 5% merged)".to_string(), 2)), "{got:?}");
    assert!(got.contains(&("a;b".to_string(), 6)), "{got:?}");
    assert_eq!(p.merged, 2);
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
        // The definition, on paths (a stack's frames without empty ones): each path's total;
        // a stack whose path is narrow goes to its deepest wide ancestor.
        let path = |t: &[u8]| -> Vec<Vec<u8>> {
            t.split(|&b| b == b';').filter(|f| !f.is_empty()).map(<[u8]>::to_vec).collect()
        };
        let mut by_path: std::collections::BTreeMap<Vec<Vec<u8>>, Weight> = Default::default();
        for (t, w) in s.in_output_order() {
            *by_path.entry(path(t)).or_insert(Weight::ZERO) += w;
        }
        let mut totals: std::collections::HashMap<Vec<Vec<u8>>, Weight> = Default::default();
        for (p, w) in &by_path {
            for d in 0..=p.len() {
                *totals.entry(p[..d].to_vec()).or_insert(Weight::ZERO) += *w;
            }
        }
        let cutoff = totals[&Vec::new()].as_f64() * fraction;
        let wide = |p: &[Vec<u8>]| p.is_empty() || totals[p].as_f64() >= cutoff;
        let mut want = StackCounts::new();
        let mut cut: std::collections::BTreeMap<Vec<Vec<u8>>, (Weight, u64)> = Default::default();
        for (p, w) in &by_path {
            if wide(p) {
                if !p.is_empty() {
                    want.add(&p.join(&b';'), *w);
                }
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
        let mut t = tree(&s);
        match t.prune(fraction) {
            Some(p) => {
                assert_eq!(sorted(&t.to_counts()), sorted(&want), "round {round}");
                assert_eq!(p.merged, cut.values().map(|v| v.1).sum::<u64>());
                assert_eq!(t.total(), s.total());
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
    // `main;c` is wide (2%) and its children narrow (1%) in both: one placeholder on both
    // sides, counting `main;c;x` (in both) once.
    let before = counts(&[("main;a", 970), ("main;b", 10), ("main;c;x", 10), ("main;c;y", 10)]);
    let after = counts(&[("main;a", 500), ("main;b", 480), ("main;c;x", 10), ("main;c;z", 10)]);
    let mut t = StackTree::from_stacks(&after, Some(&before), false, true);
    let p = t.prune(0.015).unwrap();
    assert_eq!(t.total_before(), before.total());
    assert_eq!(t.total(), after.total());
    assert_eq!(
        sorted(&baseline(&t)),
        vec![
            ("main;a".to_string(), 970),
            ("main;b".to_string(), 10),
            ("main;c;(3 stacks below 1.5% merged)".to_string(), 20),
        ]
    );
    assert_eq!(
        sorted(&t.to_counts()),
        vec![
            ("main;a".to_string(), 500),
            ("main;b".to_string(), 480),
            ("main;c;(3 stacks below 1.5% merged)".to_string(), 20),
        ]
    );
    assert_eq!((p.merged, p.merged_before, p.merged_after, p.before), (3, 2, 2, 5));
    // One side empty: the other alone decides.
    let empty = Stacks::Counts(StackCounts::new());
    let mut t = StackTree::from_stacks(&empty, Some(&before), false, true);
    t.prune(0.015).unwrap();
    assert!(t.to_counts().is_empty());
    let mut alone = tree(&before);
    alone.prune(0.015).unwrap();
    assert_eq!(sorted(&baseline(&t)), sorted(&alone.to_counts()));
}

#[test]
fn nothing_below_the_cutoff_changes_nothing() {
    let s = counts(&[("a;b", 5), ("a;c", 5)]);
    let mut t = tree(&s);
    assert!(t.prune(0.1).is_none());
    assert!(t.prune(0.0).is_none());
    assert_eq!(t.nodes().len(), 4);
    assert_eq!(percent(0.00005), "0.005%");
    assert_eq!(percent(0.01), "1%");
}

#[test]
fn a_pruned_tree_takes_more_stacks() {
    let mut t = tree(&counts(&[("a;b", 98), ("a;c", 1), ("a;d", 1)]));
    t.prune(0.05).unwrap();
    t.add(&[b"a", b"b"], Weight::from_u64(2), Weight::ZERO);
    t.add(&[b"a", b"e"], Weight::from_u64(3), Weight::ZERO);
    assert_eq!(
        sorted(&t.to_counts()),
        vec![
            ("a;(2 stacks below 5% merged)".to_string(), 2),
            ("a;b".to_string(), 100),
            ("a;e".to_string(), 3),
        ]
    );
    assert_eq!(t.nodes().len(), 1 + 4);
}

#[test]
fn many_stacks_at_once_make_the_tree_they_make_one_by_one() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..30 {
        // Few names and short stacks: many shared prefixes, stacks that are prefixes of
        // others, repeats and empty stacks.
        let mut frames: Vec<NameId> = Vec::new();
        let mut stacks: Vec<(u32, u32, Weight)> = Vec::new();
        for _ in 0..(1 + next(400)) {
            let start = frames.len() as u32;
            let len = next(if round % 2 == 0 { 6 } else { 30 }) as u32;
            frames.extend((0..len).map(|_| next(5) as NameId));
            stacks.push((start, len, Weight::from_u64(1 + next(9))));
            if next(5) == 0 {
                let again = stacks[next(stacks.len() as u64) as usize];
                stacks.push(again);
            }
        }
        let mut bulk = StackTree::new();
        let mut one = StackTree::new();
        for name in 0..5u8 {
            assert_eq!(bulk.intern(&[b'a' + name]), u32::from(name));
            one.intern(&[b'a' + name]);
        }
        bulk.add_all_ids(&frames, &stacks);
        for &(start, len, w) in &stacks {
            one.add_ids(&frames[start as usize..(start + len) as usize], w, Weight::ZERO);
        }
        assert_eq!(sorted(&bulk.to_counts()), sorted(&one.to_counts()), "round {round}");
        assert_eq!(bulk.nodes().len(), one.nodes().len(), "round {round}");
        assert_eq!(bulk.stack_count(), one.stack_count());
        assert_eq!(bulk.total(), one.total());
        assert_eq!(bulk.nodes()[0].self_weight, one.nodes()[0].self_weight, "empty stacks at the root");
        // Stacks added later find the nodes made in bulk.
        bulk.add_ids(&[0, 1], Weight::ONE, Weight::ZERO);
        one.add_ids(&[0, 1], Weight::ONE, Weight::ZERO);
        assert_eq!(bulk.nodes().len(), one.nodes().len(), "round {round}");
    }
    // A stack out of the frames' bounds is an empty one, not a panic.
    let mut t = StackTree::new();
    t.add_all_ids(&[0, 1], &[(1, 5, Weight::ONE), (0, 2, Weight::ONE)]);
    assert_eq!(t.total(), Weight::from_u64(2));
}

/// A normalized baseline is the baseline scaled to the tree's total, stack by stack as
/// `kflame diff --normalize` scales BEFORE: exactly, the sum equal to the total.
#[test]
fn a_normalized_baseline_sums_to_the_total_as_diff_normalize_scales_it() {
    let before = counts(&[("main;a", 3), ("main;b", 1), ("main;gone", 2)]);
    let after = counts(&[("main;a", 5), ("main;new", 4)]);
    let mut got = tree(&after);
    got.add_baseline_normalized(&tree(&before));
    assert_eq!(got.total(), after.total());
    assert_eq!(got.total_before(), after.total());
    let lines = crate::fold::diff::diff(
        &before.clone().into_counts(),
        &after.clone().into_counts(),
        crate::fold::diff::DiffOptions { normalize: true, ..Default::default() },
    );
    let mut want = StackCounts::new();
    for l in lines.iter().filter(|l| !l.before.is_zero()) {
        want.add(&l.stack, l.before);
    }
    let exact = |c: &StackCounts| -> Vec<(Vec<u8>, u128)> {
        c.sorted().into_iter().map(|(k, w)| (k.to_vec(), w.raw())).collect()
    };
    assert_eq!(exact(&baseline(&got)), exact(&want));
}
