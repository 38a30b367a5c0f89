//! Entry points of the store's fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): the decoders of the blobs a database holds, which a
//! damaged file or another program may have filled with anything. Each returns an error
//! (`Corrupt` to a reader) on bytes it cannot decode, never panics, and allocates no more
//! than the bytes it is given allow.

use kflame::fold::Weight;

use crate::bucket::{self, DecodeCtx, DecodedBucket};
use crate::chunks::{NameSlots, Slots, StackSlots};
use crate::{codec, rans};

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[
    ("store_bucket", store_bucket),
    ("store_chunks", store_chunks),
    ("store_rans", store_rans),
    ("store_metrics", store_metrics),
    ("store_latency", store_latency),
    ("store_events", store_events),
];

/// When a bucket starts in the seeds (any time does: times are offsets from it).
const START: i64 = 1_764_000_000_000_000_000;

/// A bucket blob (`buckets.data`, formats 1 and 2): decoded whole, by window, and summed
/// per stack without a sample each; the three agree on the samples and weight of each
/// stack.
pub fn store_bucket(data: &[u8]) {
    let mut ctx = DecodeCtx::default();
    let mut out = DecodedBucket::default();
    let whole = bucket::decode_bucket_into(&mut ctx, data, START, &mut out);
    let dict = bucket::bucket_stacks(data);
    if whole.is_ok() {
        assert!(out.samples.len() <= bucket::MAX_SAMPLES, "{} samples", out.samples.len());
        let dict = dict.expect("a blob that decodes has a dictionary");
        for s in &out.samples {
            assert!(dict.contains(&s.stack), "sample of stack {} not in the dictionary", s.stack);
        }
    }
    let mut ctx = DecodeCtx::default();
    if let Ok(Some((side, words))) = bucket::parse(&mut ctx, data) {
        let _ = side.window_samples(START);
        let mut per = vec![(0u64, Weight::ZERO); ctx.dict().len()];
        let summed = side.sum_into(&ctx, words, START, &mut |_| true, |_, _| true, &mut per);
        if whole.is_ok() && summed.is_ok() {
            let mut direct = vec![(0u64, Weight::ZERO); ctx.dict().len()];
            for s in &out.samples {
                let i = ctx.dict().iter().position(|&d| d == s.stack).expect("in the dictionary");
                direct[i].0 += 1;
                direct[i].1 += s.weight;
            }
            assert_eq!(per, direct, "summed and decoded samples differ");
        }
        let mut counts = Vec::new();
        if side.counts_into(&mut counts) && whole.is_ok() && summed.is_ok() && !counts.is_empty() {
            let timed: Vec<u64> = per.iter().map(|p| p.0).collect();
            let modelled: Vec<u64> = counts.iter().map(|c| c.0).collect();
            assert_eq!(timed, modelled, "the model's counts are not the samples'");
        }
    }
}

/// A chunk blob (`stack_chunks.data` or `frame_chunks.data`): the first two bytes are the
/// row's `count` (little-endian; at most a chunk's slots), the rest the blob, decoded as
/// stacks and as names; the stacks counted alive agree with those decoded.
pub fn store_chunks(data: &[u8]) {
    let Some((count, blob)) = data.split_first_chunk::<2>() else { return };
    let count = usize::from(u16::from_le_bytes(*count));
    let mut stacks = StackSlots::default();
    if stacks.decode(blob, count.min(StackSlots::PER_CHUNK)).is_ok() {
        let n = count.min(StackSlots::PER_CHUNK);
        assert_eq!(stacks.len(), n);
        let live = (0..n).filter(|&i| stacks.get(i).is_some()).count();
        assert_eq!(StackSlots::count_live(blob, n), Ok(live), "live stacks counted otherwise");
    }
    let mut names = NameSlots::default();
    if names.decode(blob, count.min(NameSlots::PER_CHUNK)).is_ok() {
        assert_eq!(names.len(), count.min(NameSlots::PER_CHUNK));
    }
}

/// The rANS coder: a model of up to 64 symbols' counts read from the input, then
/// (a) the rest decoded as a stream of that model (errors, never a panic), and (b) the
/// symbols the rest gives, coded with the model of their own counts, decode to
/// themselves.
pub fn store_rans(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = usize::from(n % 64) + 1;
    if rest.len() < 2 * n {
        return;
    }
    let (head, stream) = rest.split_at(2 * n);
    let counts: Vec<u64> =
        head.chunks_exact(2).map(|c| u64::from(u16::from_le_bytes([c[0], c[1]]))).collect();
    if let Some(model) = rans::Model::new(&counts) {
        let table = rans::Table::new(&model);
        if let Ok(mut d) = rans::Decoder::new(stream, &model) {
            // At most one symbol a byte, and no more than the model's total.
            for _ in 0..stream.len().min(model.total() as usize) {
                match d.get(&table) {
                    Ok(s) => assert!((s as usize) < n && counts[s as usize] > 0, "symbol {s} of count 0"),
                    Err(_) => break,
                }
            }
        }
    }
    // Round trip: the symbols are the stream's bytes modulo n.
    let symbols: Vec<u32> = stream.iter().map(|&b| u32::from(b) % n as u32).collect();
    if symbols.is_empty() {
        return;
    }
    let mut own = vec![0u64; n];
    for &s in &symbols {
        own[s as usize] += 1;
    }
    let model = rans::Model::new(&own).expect("counts of a short stream fit");
    let mut e = rans::Encoder::new(&model);
    for &s in symbols.iter().rev() {
        e.put(&model, s);
    }
    let words: Vec<u8> = e.finish().iter().flat_map(|w| w.to_le_bytes()).collect();
    let table = rans::Table::new(&model);
    let mut d = rans::Decoder::new(&words, &model).expect("the encoder's own words");
    for (i, &s) in symbols.iter().enumerate() {
        assert_eq!(d.get(&table), Ok(s), "symbol {i}");
    }
    assert_eq!(d.finish(), Ok(()));
}

/// Metric blobs: a span row (`metric_spans.data`, every series of a host) and a block of
/// one series (`metric_blocks.data`, schema 3): errors, never a panic; a span's series
/// decoded one at a time equal those decoded together.
pub fn store_metrics(data: &[u8]) {
    let _ = codec::decode_metrics(data, START);
    if let Ok(all) = codec::decode_span(data, START) {
        let ids: Vec<i64> = all.iter().map(|(id, _)| *id).collect();
        let mut many = vec![Vec::new(); ids.len()];
        codec::decode_span_many(data, START, &ids, &mut many).expect("decoded whole, decoded by series");
        for ((id, whole), part) in all.iter().zip(&many) {
            let same = whole.len() == part.len()
                && whole.iter().zip(part).all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits());
            assert!(same, "series {id}: {} values whole, {} alone", whole.len(), part.len());
        }
    }
}

/// A latency row (`latency_spans.data`): decoded, written again and decoded again, it holds
/// the same histograms (times kept to the millisecond, rows in time order).
pub fn store_latency(data: &[u8]) {
    let end = START + 10_000_000_000;
    let Ok(first) = crate::latency::Block::decode(data, START, end) else { return };
    let second =
        crate::latency::Block::decode(&first.encode(START), START, end).expect("a written row decodes");
    assert_eq!(second.len(), first.len(), "rows");
    let third =
        crate::latency::Block::decode(&second.encode(START), START, end).expect("a written row decodes");
    assert_eq!(second, third);
}

/// An event block (`event_blocks.data`): decoded, written again and decoded again, it holds the
/// same events, in time order; its stack list read alone is the one decoded; a range of it
/// holds the events of that range.
pub fn store_events(data: &[u8]) {
    let stacks = crate::events::block_stacks(data);
    let Ok(first) = crate::events::Block::decode(data) else { return };
    assert_eq!(stacks.as_deref(), Ok(first.stacks()), "the stack list read alone");
    let written = first.encode().expect("a block that decodes fits");
    let second = crate::events::Block::decode(&written).expect("a written block decodes");
    assert_eq!(first, second);
    if let Some((lo, hi)) = first.span() {
        assert!(lo <= hi);
        let mid = ((i128::from(lo) + i128::from(hi)) / 2) as i64;
        let cut = first.since(mid);
        assert_eq!(cut.len() + first.in_range(lo, mid).len(), first.len(), "events cut at {mid}");
        assert!(cut.span().is_none_or(|(a, _)| a >= mid));
    }
}
