//! Round trip of the node encoding through a small reference decoder.

use std::collections::BTreeMap;

use super::*;
use crate::diag::Diagnostics;
use crate::fold::read::read_folded;
use crate::fold::tree::StackTree;
use crate::fold::{Meta, OrderedStacks, StackCounts, Stacks};

/// Decodes the varint stream back to `(stack, self weight in raw 1e-9 units)` in pre-order.
fn decode(enc: &Encoded) -> Vec<(String, u128)> {
    let mut out = Vec::new();
    let (mut at, mut path): (usize, Vec<&str>) = (0, Vec::new());
    let mut varint = || {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = enc.nodes[at];
            at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return v;
            }
        }
    };
    for _ in 0..enc.count {
        let up = varint() as usize;
        path.truncate(path.len() + 1 - up - 1);
        path.push(&enc.names[varint() as usize]);
        let value = varint() as u128 * 10u128.pow(Weight::FRACTION_DIGITS - enc.scale);
        if enc.differential {
            varint();
        }
        if value > 0 {
            out.push((path.join(";"), value));
        }
    }
    assert_eq!(at, enc.nodes.len(), "every byte is consumed");
    out
}

fn fixture(name: &str) -> (StackCounts, Meta) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/html/");
    let file = std::fs::File::open(format!("{path}{name}")).expect("fixture present");
    let (mut counts, mut meta, mut diag) = (StackCounts::new(), Meta::default(), Diagnostics::new());
    read_folded(std::io::BufReader::new(file), &mut meta, &mut diag, |l| counts.add(l.stack, l.weight))
        .expect("fixture readable");
    assert!(diag.is_empty(), "fixture parses cleanly");
    (counts, meta)
}

fn expected(counts: &StackCounts) -> BTreeMap<String, u128> {
    counts.iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.raw())).collect()
}

#[test]
fn real_profile_round_trips_exactly() {
    let (counts, _) = fixture("perf-script-report-stackcollapse.folded");
    let stacks = Stacks::Counts(counts.clone());
    let enc = encode(&StackTree::from_stacks(&stacks, None, false, true), false);
    let got: BTreeMap<_, _> = decode(&enc).into_iter().collect();
    assert_eq!(got, expected(&counts));
    assert_eq!(enc.scale, 0);
}

#[test]
fn fractional_weights_keep_their_digits() {
    let mut counts = StackCounts::new();
    counts.add(b"a;b", Weight::parse(b"0.25").unwrap_or_default());
    counts.add(b"a", Weight::parse(b"3.5").unwrap_or_default());
    let enc = encode(&StackTree::from_stacks(&Stacks::Counts(counts.clone()), None, false, true), false);
    assert_eq!(enc.scale, 2);
    let got: BTreeMap<_, _> = decode(&enc).into_iter().collect();
    assert_eq!(got, expected(&counts));
}

#[test]
fn flame_chart_keeps_input_order() {
    let mut o = OrderedStacks::new();
    for (s, w) in [("m;a", 1), ("m;b", 2), ("m;a", 3)] {
        o.push(s.as_bytes(), Weight::from_u64(w));
    }
    let enc = encode(&StackTree::from_stacks(&Stacks::Ordered(o), None, false, false), false);
    let got = decode(&enc);
    let want: Vec<(String, u128)> = [("m;a", 1), ("m;b", 2), ("m;a", 3)]
        .iter()
        .map(|(a, b)| (a.to_string(), Weight::from_u64(*b).raw()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn frequent_names_get_small_indices() {
    let (counts, _) = fixture("perf-script-report-stackcollapse.folded");
    let enc = encode(&StackTree::from_stacks(&Stacks::Counts(counts), None, false, true), false);
    // The syscall entry frame occurs under many processes; it must be among the first names.
    let pos = enc.names.iter().position(|n| n == "entry_SYSCALL_64_after_hwframe");
    assert!(pos.is_some_and(|p| p < 8), "entry_SYSCALL_64_after_hwframe at {pos:?}");
}

#[test]
fn base64_matches_the_standard_alphabet() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
}

/// Decodes a differential stream to `(stack, self after, self before)` in raw units.
fn decode_differential(enc: &Encoded) -> BTreeMap<String, (u128, u128)> {
    assert!(enc.differential);
    let mut out = BTreeMap::new();
    let (mut at, mut path): (usize, Vec<&str>) = (0, Vec::new());
    let mut varint = || {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = enc.nodes[at];
            at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return v;
            }
        }
    };
    let unit = 10u128.pow(Weight::FRACTION_DIGITS - enc.scale);
    for _ in 0..enc.count {
        let up = varint() as usize;
        path.truncate(path.len() - up);
        path.push(&enc.names[varint() as usize]);
        let after = varint() as u128 * unit;
        let before = varint() as u128 * unit;
        if after > 0 || before > 0 {
            out.insert(path.join(";"), (after, before));
        }
    }
    out
}

#[test]
fn differential_input_carries_both_columns() {
    // inferno's diff-folded test data, as `kflame diff -n` writes it (decimals included).
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/render/diff/");
    let read = |name: &str| {
        let text = std::fs::read(format!("{path}{name}")).expect("fixture");
        let mut c = StackCounts::new();
        let (mut meta, mut diag) = (Meta::default(), Diagnostics::new());
        read_folded(&text[..], &mut meta, &mut diag, |l| c.add(l.stack, l.weight)).expect("readable");
        c
    };
    let (before, after) = (read("before.txt"), read("after.txt"));
    let opts = crate::fold::diff::DiffOptions { normalize: true, strip_hex: false };
    let lines = crate::fold::diff::diff(&before, &after, opts);
    let (mut a, mut b) = (StackCounts::new(), StackCounts::new());
    for l in &lines {
        a.add(&l.stack, l.after);
        b.add(&l.stack, l.before);
    }
    let (a, b) = (Stacks::Counts(a), Stacks::Counts(b));
    let tree = StackTree::from_stacks(&a, Some(&b), false, true);
    let enc = encode(&tree, true);
    assert_eq!(enc.scale, 9, "normalized BEFORE weights have 9 decimals");
    let got = decode_differential(&enc);
    let want: BTreeMap<String, (u128, u128)> = lines
        .iter()
        .filter(|l| !l.after.is_zero() || !l.before.is_zero())
        .map(|l| (String::from_utf8_lossy(&l.stack).into_owned(), (l.after.raw(), l.before.raw())))
        .collect();
    assert_eq!(got, want);
    assert_eq!(tree.total_before(), lines.iter().map(|l| l.before).sum());
}

#[test]
fn differential_flame_chart_pairs_runs_in_order() {
    let (mut a, mut b) = (OrderedStacks::new(), OrderedStacks::new());
    for (s, before, after) in [("m;x", 1, 2), ("m;y", 3, 0), ("m;x", 5, 4)] {
        a.push(s.as_bytes(), Weight::from_u64(after));
        b.push(s.as_bytes(), Weight::from_u64(before));
    }
    let tree = StackTree::from_stacks(&Stacks::Ordered(a), Some(&Stacks::Ordered(b)), false, false);
    let selfs: Vec<_> =
        tree.nodes()[1..].iter().map(|n| (n.self_weight.whole(), n.self_before.whole())).collect();
    assert_eq!(selfs, [(0, 0), (2, 1), (0, 3), (4, 5)]);
}
