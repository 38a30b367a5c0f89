//! Data parallelism for the few places where one large step would otherwise leave the
//! other cores idle (naming the frames of a recording, building and sorting its stacks):
//! scoped threads over contiguous chunks, no thread pool. Falls back to the calling thread
//! for small inputs, on one core, or when no thread can be started.

use std::num::NonZeroUsize;

/// Below this many items a step runs on the calling thread: starting a thread costs about
/// as much as a few thousand cheap items.
const MIN_PER_THREAD: usize = 4096;

/// How many threads a step over `n` items uses.
fn threads_for(n: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    cores.min(n / MIN_PER_THREAD).clamp(1, 8)
}

/// `f` applied to contiguous chunks of `items`, on as many threads as there are cores
/// (the last chunk on the calling thread); results in chunk order.
pub(crate) fn map_chunks<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> R + Sync) -> Vec<R> {
    let threads = threads_for(items.len());
    if threads == 1 {
        return vec![f(items)];
    }
    let size = items.len().div_ceil(threads);
    let chunks: Vec<&[T]> = items.chunks(size).collect();
    let f = &f;
    std::thread::scope(|scope| {
        let (last, rest) = chunks.split_last().expect("at least two chunks");
        let handles: Vec<_> = rest
            .iter()
            .map(|&chunk| {
                std::thread::Builder::new().spawn_scoped(scope, move || f(chunk)).map_err(|_| chunk)
            })
            .collect();
        let mine = f(last);
        let mut out: Vec<R> = handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
                Err(chunk) => f(chunk),
            })
            .collect();
        out.push(mine);
        out
    })
}

/// Sorts `v` by `cmp`: chunks sorted on separate threads, then merged.
pub(crate) fn sort_by<T: Send + Sync + Copy>(
    v: &mut Vec<T>,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering + Sync,
) {
    let threads = threads_for(v.len());
    if threads == 1 {
        v.sort_unstable_by(&cmp);
        return;
    }
    let size = v.len().div_ceil(threads);
    let all_started = std::thread::scope(|scope| {
        let cmp = &cmp;
        let mut chunks = v.chunks_mut(size);
        let mine = chunks.next();
        let handles: Vec<_> = chunks
            .map(|c| std::thread::Builder::new().spawn_scoped(scope, move || c.sort_unstable_by(cmp)).ok())
            .collect();
        if let Some(c) = mine {
            c.sort_unstable_by(cmp);
        }
        let all_started = handles.iter().all(Option::is_some);
        for h in handles.into_iter().flatten() {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
        all_started
    });
    if !all_started {
        // A chunk whose thread could not start is still unsorted: sort it here.
        for c in v.chunks_mut(size) {
            if !c.is_sorted_by(|a, b| cmp(a, b) != std::cmp::Ordering::Greater) {
                c.sort_unstable_by(&cmp);
            }
        }
    }
    *v = merge_runs(v, size, &cmp);
}

/// Merges the sorted runs of `size` items of `v` into one sorted vector (pairwise, left to
/// right: few runs, one per thread).
fn merge_runs<T: Copy>(v: &[T], size: usize, cmp: &impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let mut runs = v.chunks(size);
    let first = runs.next().map(<[T]>::to_vec).unwrap_or_default();
    runs.fold(first, |acc, run| merge_two(&acc, run, cmp))
}

/// The stable merge of two sorted slices (ties: `a` first).
fn merge_two<T: Copy>(a: &[T], b: &[T], cmp: &impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if cmp(&b[j], &a[i]) == std::cmp::Ordering::Less {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_chunks_keeps_chunk_order_and_covers_everything() {
        let items: Vec<u32> = (0..50_000).collect();
        let sums = map_chunks(&items, |c| (c[0], c.iter().map(|&x| u64::from(x)).sum::<u64>()));
        assert!(sums.windows(2).all(|w| w[0].0 < w[1].0), "chunks in order");
        assert_eq!(sums.iter().map(|s| s.1).sum::<u64>(), (0..50_000u64).sum::<u64>());
    }

    #[test]
    fn sort_by_equals_a_plain_sort() {
        // A fixed pseudo-random sequence with many ties.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut v: Vec<u64> = (0..100_003)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 5000
            })
            .collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        sort_by(&mut v, |a, b| a.cmp(b));
        assert_eq!(v, expected);
        let mut small = vec![3, 1, 2];
        sort_by(&mut small, |a, b| a.cmp(b));
        assert_eq!(small, [1, 2, 3]);
    }
}
