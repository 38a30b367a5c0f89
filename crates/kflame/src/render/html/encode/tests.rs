//! Round trip of the node encoding through a small reference decoder.

use std::collections::BTreeMap;

use super::super::tree::Tree;
use super::*;
use crate::diag::Diagnostics;
use crate::fold::read::read_folded;
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
    let enc = encode(&Tree::build(&stacks, false, true));
    let got: BTreeMap<_, _> = decode(&enc).into_iter().collect();
    assert_eq!(got, expected(&counts));
    assert_eq!(enc.scale, 0);
}

#[test]
fn fractional_weights_keep_their_digits() {
    let mut counts = StackCounts::new();
    counts.add(b"a;b", Weight::parse(b"0.25").unwrap_or_default());
    counts.add(b"a", Weight::parse(b"3.5").unwrap_or_default());
    let enc = encode(&Tree::build(&Stacks::Counts(counts.clone()), false, true));
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
    let enc = encode(&Tree::build(&Stacks::Ordered(o), false, false));
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
    let enc = encode(&Tree::build(&Stacks::Counts(counts), false, true));
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
