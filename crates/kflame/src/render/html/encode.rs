//! The compact encoding of a [`StackTree`] that the page decodes.
//!
//! - `names`: the distinct frame names, most frequent first (so that common frames get
//!   one-byte indices), ties broken by name bytes;
//! - `nodes`: every node but the root, in pre-order, as three unsigned LEB128 varints:
//!   `up` (how many levels above the previous node's child this node sits: its depth is
//!   `previous depth + 1 - up`), `name` (index into `names`) and `self` (the weight of stacks
//!   ending here, in units of `10^-scale`), and for differential input a fourth, `before`
//!   (their BEFORE weight, same units). The byte string is embedded as base64.
//!
//! Totals are not stored: the page sums self weights bottom-up.

use crate::fold::Weight;
use crate::fold::tree::StackTree;

/// A tree ready to embed.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// Frame names, lossily decoded to UTF-8, in index order.
    pub(crate) names: Vec<String>,
    /// The varint node stream.
    pub(crate) nodes: Vec<u8>,
    /// Number of nodes in `nodes`.
    pub(crate) count: usize,
    /// Decimal digits of the encoded weights: a weight is `value / 10^scale`.
    pub(crate) scale: u32,
    /// Deepest depth (stack roots are at depth 1).
    pub(crate) max_depth: usize,
    /// True when every node carries a BEFORE weight.
    pub(crate) differential: bool,
}

/// Encodes `tree` in pre-order with children in drawing order; with `differential`, each
/// node's BEFORE weight too.
pub(crate) fn encode(tree: &StackTree, differential: bool) -> Encoded {
    let remap = name_order(tree);
    let scale = weight_scale(tree);
    let divisor = 10u128.pow(Weight::FRACTION_DIGITS - scale);
    let (offsets, list) = tree.children_lists();
    let mut nodes = Vec::with_capacity(tree.nodes().len() * 4);
    let mut stack: Vec<(u32, usize)> = children_rev(&offsets, &list, 0).map(|c| (c, 1)).collect();
    let (mut prev_depth, mut max_depth, mut count) = (0usize, 0usize, 0usize);
    while let Some((id, depth)) = stack.pop() {
        let node = &tree.nodes()[id as usize];
        push_varint(&mut nodes, (prev_depth + 1 - depth) as u64);
        push_varint(&mut nodes, remap[node.name as usize] as u64);
        let value = node.self_weight.raw() / divisor;
        push_varint(&mut nodes, u64::try_from(value).unwrap_or(u64::MAX));
        if differential {
            let before = node.self_before.raw() / divisor;
            push_varint(&mut nodes, u64::try_from(before).unwrap_or(u64::MAX));
        }
        prev_depth = depth;
        max_depth = max_depth.max(depth);
        count += 1;
        stack.extend(children_rev(&offsets, &list, id).map(|c| (c, depth + 1)));
    }
    let mut names = vec![String::new(); tree.names().len()];
    for (old, name) in tree.names().iter().enumerate() {
        names[remap[old] as usize] = String::from_utf8_lossy(name).into_owned();
    }
    Encoded { names, nodes, count, scale, max_depth, differential }
}

fn children_rev<'a>(offsets: &[u32], list: &'a [u32], id: u32) -> impl Iterator<Item = u32> + 'a {
    let (a, b) = (offsets[id as usize] as usize, offsets[id as usize + 1] as usize);
    list[a..b].iter().rev().copied()
}

/// New index of each name: most used first, then bytewise.
fn name_order(tree: &StackTree) -> Vec<u32> {
    let names = tree.names();
    let mut uses = vec![0u32; names.len()];
    for node in &tree.nodes()[1..] {
        uses[node.name as usize] += 1;
    }
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        uses[b as usize].cmp(&uses[a as usize]).then_with(|| names[a as usize].cmp(&names[b as usize]))
    });
    let mut remap = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        remap[old as usize] = new as u32;
    }
    remap
}

/// The fewest decimal digits that represent every self weight (and BEFORE weight)
/// exactly.
fn weight_scale(tree: &StackTree) -> u32 {
    let digits_of = |scale: u32, mut raw: u128| {
        let mut digits = Weight::FRACTION_DIGITS;
        while digits > scale && raw.is_multiple_of(10) {
            raw /= 10;
            digits -= 1;
        }
        digits
    };
    tree.nodes().iter().fold(0, |scale, node| {
        let scale = digits_of(scale, node.self_weight.raw());
        digits_of(scale, node.self_before.raw())
    })
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Standard base64 with padding.
pub(crate) fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
