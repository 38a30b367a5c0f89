//! Stack aggregation by frame ids: a sample's stack is a short list of numbers (root name,
//! then frames), so summing samples hashes a few words instead of a long string; the
//! folded text is built once per distinct stack at the end.
//!
//! Summing runs on a thread of its own ([`Summer`]): the reading thread only appends each
//! sample's words to a buffer, handed over every few thousand samples.

use rustc_hash::FxHashMap;

use super::machine::Machine;
use super::resolve::Resolver;
use crate::collapse::{Order, Output};
use crate::fold::{Stacks, Weight};

/// The root frame of a sample and whether it belongs to `java` (stackcollapse's Java rule).
#[derive(Copy, Clone)]
pub(crate) struct Root {
    pub(crate) id: u32,
    pub(crate) java: bool,
}

/// Distinct stacks and their summed weights.
pub(crate) struct StackTable {
    order: Order,
    roots: Vec<String>,
    root_ids: FxHashMap<String, u32>,
    by_thread: FxHashMap<(i32, i32), (u64, Root)>,
    /// Sorted order: where samples are summed.
    summer: Summer,
    text: Vec<u8>,
}

/// Summed weights by stack key (root id, then frame ids root first). Sums are 128-bit: the
/// periods of a few samples can pass 2^64 (a recorded period is any 64-bit value).
type Counts = FxHashMap<Box<[u32]>, u128>;

/// Samples are appended to a batch as `[frames, weight low, weight high, root, frames...]`:
/// a header of three words, then the key.
const HEADER: usize = 3;
/// Words per batch handed to the summing thread.
const BATCH_WORDS: usize = 1 << 16;

/// Sums samples into [`Counts`], on a thread of its own when one can be started.
enum Summer {
    Here(Counts),
    Thread {
        batch: Vec<u32>,
        tx: std::sync::mpsc::SyncSender<Vec<u32>>,
        spare: std::sync::mpsc::Receiver<Vec<u32>>,
        done: std::thread::JoinHandle<Counts>,
    },
}

impl Summer {
    fn start() -> Summer {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u32>>(4);
        let (back, spare) = std::sync::mpsc::channel::<Vec<u32>>();
        let spawned = std::thread::Builder::new().name("kflame-sum".into()).spawn(move || {
            let mut counts = Counts::default();
            for mut batch in rx {
                sum_batch(&mut counts, &batch);
                batch.clear();
                let _ = back.send(batch);
            }
            counts
        });
        match spawned {
            Ok(done) => Summer::Thread { batch: Vec::with_capacity(BATCH_WORDS), tx, spare, done },
            Err(_) => Summer::Here(Counts::default()),
        }
    }

    #[inline]
    fn add(&mut self, root: u32, frames: &[u32], weight: u64) {
        match self {
            Summer::Here(counts) => {
                let mut one = Vec::with_capacity(HEADER + 1 + frames.len());
                push_sample(&mut one, root, frames, weight);
                sum_batch(counts, &one);
            }
            Summer::Thread { batch, tx, spare, .. } => {
                push_sample(batch, root, frames, weight);
                if batch.len() >= BATCH_WORDS - 256 {
                    let next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH_WORDS));
                    if let Err(e) = tx.send(std::mem::replace(batch, next)) {
                        // The summing thread is gone (it panicked): sum here from now on.
                        let mut counts = Counts::default();
                        sum_batch(&mut counts, &e.0);
                        *self = Summer::Here(counts);
                    }
                }
            }
        }
    }

    /// Everything summed.
    fn finish(self) -> Counts {
        match self {
            Summer::Here(counts) => counts,
            Summer::Thread { batch, tx, done, .. } => {
                let last = tx.send(batch);
                drop(tx);
                let mut counts = done.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
                if let Err(e) = last {
                    sum_batch(&mut counts, &e.0);
                }
                counts
            }
        }
    }
}

/// Appends one sample to a batch: `frames` leaf first, stored root first.
#[inline]
fn push_sample(batch: &mut Vec<u32>, root: u32, frames: &[u32], weight: u64) {
    batch.extend_from_slice(&[frames.len() as u32, weight as u32, (weight >> 32) as u32, root]);
    batch.extend(frames.iter().rev());
}

/// The weight of a sum of 64-bit weights.
fn weight_of(sum: u128) -> Weight {
    let (high, low) = ((sum >> 64) as u64, sum as u64);
    Weight::from_u64(high).saturating_mul(1 << 32).saturating_mul(1 << 32) + Weight::from_u64(low)
}

/// Sums the samples of a batch.
fn sum_batch(counts: &mut Counts, batch: &[u32]) {
    let mut at = 0;
    while at + HEADER <= batch.len() {
        let n = batch[at] as usize;
        let weight = u128::from(batch[at + 1]) | (u128::from(batch[at + 2]) << 32);
        let Some(key) = batch.get(at + HEADER..at + HEADER + 1 + n) else { break };
        match counts.get_mut(key) {
            Some(w) => *w += weight,
            None => {
                counts.insert(key.into(), weight);
            }
        }
        at += HEADER + 1 + n;
    }
}

impl StackTable {
    pub(crate) fn new(order: Order) -> StackTable {
        StackTable {
            order,
            roots: Vec::new(),
            root_ids: FxHashMap::default(),
            by_thread: FxHashMap::default(),
            summer: if order == Order::Sorted { Summer::start() } else { Summer::Here(Counts::default()) },
            text: Vec::new(),
        }
    }

    /// The root frame of thread `tid` of `pid`: `comm`, `comm-PID` or `comm-PID/TID`, spaces
    /// as `_`; recomputed only when the thread's name changes.
    pub(crate) fn root(&mut self, m: &Machine, pid: i32, tid: i32, with_pid: bool, with_tid: bool) -> Root {
        let version = m.comm_version(tid);
        if let Some(&(v, root)) = self.by_thread.get(&(pid, tid))
            && v == version
        {
            return root;
        }
        let comm = m.comm(tid).replace(' ', "_");
        let java = comm == "java";
        let name = if with_tid {
            format!("{comm}-{pid}/{tid}")
        } else if with_pid {
            format!("{comm}-{pid}")
        } else {
            comm
        };
        let id = match self.root_ids.get(&name) {
            Some(&id) => id,
            None => {
                let id = self.roots.len() as u32;
                self.roots.push(name.clone());
                self.root_ids.insert(name, id);
                id
            }
        };
        let root = Root { id, java };
        self.by_thread.insert((pid, tid), (version, root));
        root
    }

    /// Adds one sample: `frames` leaf first; in time order with its `time` when the
    /// sample has one.
    pub(crate) fn add(
        &mut self,
        root: Root,
        frames: &[u32],
        weight: u64,
        time: Option<u64>,
        r: &Resolver,
        out: &mut Output,
    ) {
        if self.order == Order::Time {
            let root = &self.roots[root.id as usize];
            build_text(&mut self.text, root, frames.iter().rev().copied(), r.texts());
            match time {
                Some(t) => out.stacks.add_at(&self.text, Weight::from_u64(weight), t),
                None => out.stacks.add(&self.text, Weight::from_u64(weight)),
            }
            return;
        }
        self.summer.add(root.id, frames, weight);
    }

    /// Writes the summed stacks (sorted order) into `out`: their texts are built on as
    /// many threads as there are cores, each into its own aggregation, merged at the end.
    pub(crate) fn flush(&mut self, r: &Resolver, out: &mut Output) {
        let summer = std::mem::replace(&mut self.summer, Summer::Here(Counts::default()));
        let counts: Vec<(Box<[u32]>, u128)> = summer.finish().into_iter().collect();
        let (roots, texts) = (&self.roots, r.texts());
        let parts = crate::par::map_chunks(&counts, |share| {
            let mut part = out.stacks.empty_like();
            if let Stacks::Counts(c) = &mut part {
                c.reserve(share.len());
            }
            let mut text = Vec::new();
            for (key, weight) in share {
                build_text(&mut text, &roots[key[0] as usize], key[1..].iter().copied(), texts);
                part.add(&text, weight_of(*weight));
            }
            part
        });
        for part in parts {
            out.stacks.append(part);
        }
        // Freeing 100 thousand small keys takes tens of milliseconds: not on this thread.
        let _ = std::thread::Builder::new().name("kflame-free".into()).spawn(move || drop(counts));
    }
}

/// `root;frame;...` from frame ids (frames with an empty text are skipped).
fn build_text(text: &mut Vec<u8>, root: &str, frames: impl Iterator<Item = u32>, texts: &[Box<[u8]>]) {
    text.clear();
    text.extend_from_slice(root.as_bytes());
    for f in frames {
        let t = &texts[f as usize];
        if !t.is_empty() {
            text.push(b';');
            text.extend_from_slice(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summing thread and summing in place agree, across batch boundaries and for
    /// weights beyond 32 bits.
    #[test]
    fn summing_on_a_thread_equals_summing_here() {
        let (mut here, mut thread) = (Summer::Here(Counts::default()), Summer::start());
        assert!(matches!(thread, Summer::Thread { .. }));
        let mut expected: FxHashMap<Vec<u32>, u128> = FxHashMap::default();
        for i in 0..40_000u32 {
            let frames: Vec<u32> = (0..(i % 7)).map(|f| f * 3 + i % 5).collect();
            let weight = if i % 1000 == 0 { 5 << 32 } else { u64::from(i % 3) + 1 };
            let root = i % 4;
            here.add(root, &frames, weight);
            thread.add(root, &frames, weight);
            let key: Vec<u32> = std::iter::once(root).chain(frames.iter().rev().copied()).collect();
            *expected.entry(key).or_default() += u128::from(weight);
        }
        let expected: FxHashMap<Box<[u32]>, u128> =
            expected.into_iter().map(|(k, w)| (k.into_boxed_slice(), w)).collect();
        assert_eq!(here.finish(), expected);
        assert_eq!(thread.finish(), expected);
    }

    /// Periods are any 64-bit value: their sum is exact past 2^64 (a fuzzed file summed three
    /// periods near 2^64 and overflowed).
    #[test]
    fn sums_past_64_bits_are_exact() {
        for mut summer in [Summer::Here(Counts::default()), Summer::start()] {
            for _ in 0..3 {
                summer.add(0, &[7], u64::MAX);
            }
            let sum = summer.finish()[&[0u32, 7][..]];
            assert_eq!(sum, 3 * u128::from(u64::MAX));
            assert_eq!(weight_of(sum).to_string(), "55340232221128654845");
        }
    }
}
