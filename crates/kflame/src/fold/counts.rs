//! Aggregations of weighted stacks.

use rustc_hash::FxHashMap;

use super::Weight;

/// Stack → summed weight. Memory grows with the number of *distinct* stacks only.
#[derive(Default, Clone, Debug)]
pub struct StackCounts {
    map: FxHashMap<Box<[u8]>, Weight>,
}

impl StackCounts {
    /// An empty aggregation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `weight` to `stack` (frames joined by `;`). Allocates only for a new stack.
    #[inline]
    pub fn add(&mut self, stack: &[u8], weight: Weight) {
        if let Some(w) = self.map.get_mut(stack) {
            *w += weight;
        } else {
            self.map.insert(stack.into(), weight);
        }
    }

    /// Adds `weight` to `stack`, taking the stack's bytes when it is new.
    pub fn add_boxed(&mut self, stack: Box<[u8]>, weight: Weight) {
        *self.map.entry(stack).or_default() += weight;
    }

    /// Makes room for `additional` more distinct stacks.
    pub fn reserve(&mut self, additional: usize) {
        self.map.reserve(additional);
    }

    /// Moves every stack of `other` into `self`.
    pub fn merge(&mut self, other: StackCounts) {
        if self.map.is_empty() {
            self.map = other.map;
            return;
        }
        for (k, v) in other.map {
            *self.map.entry(k).or_default() += v;
        }
    }

    /// Number of distinct stacks.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no stack was added.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sum of all weights.
    pub fn total(&self) -> Weight {
        self.map.values().copied().sum()
    }

    /// Weight of one stack.
    pub fn get(&self, stack: &[u8]) -> Option<Weight> {
        self.map.get(stack).copied()
    }

    /// Unordered iteration.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Weight)> {
        self.map.iter().map(|(k, v)| (&**k, *v))
    }

    /// Stacks sorted bytewise (the order of FlameGraph's `sort`ed folded files).
    pub fn sorted(&self) -> Vec<(&[u8], Weight)> {
        let mut v: Vec<_> = self.iter().collect();
        crate::par::sort_by(&mut v, |a, b| a.0.cmp(b.0));
        v
    }

    /// Consumes the aggregation into sorted owned pairs.
    pub fn into_sorted(self) -> Vec<(Box<[u8]>, Weight)> {
        let mut v: Vec<_> = self.map.into_iter().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// Stacks in time order; identical consecutive stacks are merged, others never are.
///
/// Each sample may come with its time ([`OrderedStacks::push_at`], e.g. perf script's time
/// stamp): the runs then keep their samples' times and weights, which
/// [`OrderedStacks::sample_times`] gives when every sample had one.
#[derive(Default, Clone, Debug)]
pub struct OrderedStacks {
    items: Vec<(Box<[u8]>, Weight)>,
    /// (time in ns, weight) of every timed sample, run after run.
    times: Vec<(u64, Weight)>,
    /// Where each run's samples start in `times`.
    starts: Vec<usize>,
    /// A sample came without a time.
    untimed: bool,
}

impl OrderedStacks {
    /// An empty sequence.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a stack, merging it into the previous one when identical.
    pub fn push(&mut self, stack: &[u8], weight: Weight) {
        self.untimed = true;
        self.push_run(stack, weight);
    }

    /// Appends a stack that happened at `time_ns`, merging it into the previous one when
    /// identical.
    pub fn push_at(&mut self, stack: &[u8], weight: Weight, time_ns: u64) {
        self.push_run(stack, weight);
        self.times.push((time_ns, weight));
    }

    fn push_run(&mut self, stack: &[u8], weight: Weight) {
        match self.items.last_mut() {
            Some((last, w)) if **last == *stack => *w += weight,
            _ => {
                self.items.push((stack.into(), weight));
                self.starts.push(self.times.len());
            }
        }
    }

    /// Appends a later sequence (merging at the seam), times included.
    pub fn append(&mut self, other: OrderedStacks) {
        let timed = other.sample_times().is_some();
        self.untimed |= other.untimed;
        for (i, (s, w)) in other.items.iter().enumerate() {
            if timed {
                let end = other.starts.get(i + 1).copied().unwrap_or(other.times.len());
                for &(t, sw) in &other.times[other.starts[i]..end] {
                    self.push_at(s, sw, t);
                }
            } else {
                self.push(s, *w);
            }
        }
    }

    /// The (time in ns, weight) of each run's samples, in order, when every sample was
    /// pushed with its time ([`OrderedStacks::push_at`]); `None` when one was not, or when
    /// there is none.
    pub fn sample_times(&self) -> Option<Vec<&[(u64, Weight)]>> {
        if self.untimed || self.items.is_empty() {
            return None;
        }
        let mut ends = self.starts.iter().skip(1).copied().chain(std::iter::once(self.times.len()));
        Some(self.starts.iter().map(|&a| &self.times[a..ends.next().unwrap_or(a)]).collect())
    }

    /// The stacks in order.
    pub fn items(&self) -> &[(Box<[u8]>, Weight)] {
        &self.items
    }

    /// Number of runs.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Sum of all weights.
    pub fn total(&self) -> Weight {
        self.items.iter().map(|(_, w)| *w).sum()
    }
}

/// Either aggregation, as chosen by the caller.
#[derive(Clone, Debug)]
pub enum Stacks {
    /// Summed and sorted.
    Counts(StackCounts),
    /// Time-ordered runs.
    Ordered(OrderedStacks),
}

impl Stacks {
    /// Adds one stack.
    #[inline]
    pub fn add(&mut self, stack: &[u8], weight: Weight) {
        match self {
            Stacks::Counts(c) => c.add(stack, weight),
            Stacks::Ordered(o) => o.push(stack, weight),
        }
    }

    /// Adds one stack that happened at `time_ns` (the time is kept in time order only).
    #[inline]
    pub fn add_at(&mut self, stack: &[u8], weight: Weight, time_ns: u64) {
        match self {
            Stacks::Counts(c) => c.add(stack, weight),
            Stacks::Ordered(o) => o.push_at(stack, weight, time_ns),
        }
    }

    /// Appends or merges a later part of the same input.
    pub fn append(&mut self, other: Stacks) {
        match (self, other) {
            (Stacks::Counts(a), Stacks::Counts(b)) => a.merge(b),
            (Stacks::Ordered(a), Stacks::Ordered(b)) => a.append(b),
            (Stacks::Counts(a), Stacks::Ordered(b)) => {
                for (s, w) in b.items {
                    a.add(&s, w);
                }
            }
            (me @ Stacks::Ordered(_), Stacks::Counts(b)) => {
                let Stacks::Ordered(a) = std::mem::replace(me, Stacks::Counts(b)) else {
                    return;
                };
                if let Stacks::Counts(c) = me {
                    for (s, w) in a.items {
                        c.add(&s, w);
                    }
                }
            }
        }
    }

    /// An empty aggregation of the same kind.
    pub fn empty_like(&self) -> Stacks {
        match self {
            Stacks::Counts(_) => Stacks::Counts(StackCounts::new()),
            Stacks::Ordered(_) => Stacks::Ordered(OrderedStacks::new()),
        }
    }

    /// Number of distinct stacks (or runs).
    pub fn len(&self) -> usize {
        match self {
            Stacks::Counts(c) => c.len(),
            Stacks::Ordered(o) => o.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sum of all weights.
    pub fn total(&self) -> Weight {
        match self {
            Stacks::Counts(c) => c.total(),
            Stacks::Ordered(o) => o.total(),
        }
    }

    /// The stacks summed per distinct stack (runs of time-ordered stacks added up).
    pub fn into_counts(self) -> StackCounts {
        match self {
            Stacks::Counts(c) => c,
            Stacks::Ordered(o) => {
                let mut c = StackCounts::new();
                for (stack, w) in o.items() {
                    c.add(stack, *w);
                }
                c
            }
        }
    }

    /// The stacks in output order: sorted for counts, time order for runs.
    pub fn in_output_order(&self) -> Vec<(&[u8], Weight)> {
        match self {
            Stacks::Counts(c) => c.sorted(),
            Stacks::Ordered(o) => o.items.iter().map(|(s, w)| (&**s, *w)).collect(),
        }
    }
}

/// The length of the common prefix of two stack texts (or any bytes), 32 bytes at a time
/// (stacks of one program share long prefixes), then 8, then byte by byte.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    fn word<const N: usize>(s: &[u8], i: usize) -> [u8; N] {
        s[i..i + N].try_into().unwrap_or([0; N])
    }
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 32 <= n {
        let x0 = u128::from_le_bytes(word(a, i)) ^ u128::from_le_bytes(word(b, i));
        let x1 = u128::from_le_bytes(word(a, i + 16)) ^ u128::from_le_bytes(word(b, i + 16));
        if x0 != 0 {
            return i + (x0.trailing_zeros() / 8) as usize;
        }
        if x1 != 0 {
            return i + 16 + (x1.trailing_zeros() / 8) as usize;
        }
        i += 32;
    }
    while i + 8 <= n {
        let x = u64::from_le_bytes(word(a, i)) ^ u64::from_le_bytes(word(b, i));
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_lengths() {
        assert_eq!(common_prefix(b"abcdefghijkl", b"abcdefghijXl"), 10);
        assert_eq!(common_prefix(b"abc", b"abc"), 3);
        assert_eq!(common_prefix(b"", b"abc"), 0);
        let (a, b) = (b"0123456789abcdef;x".as_slice(), b"0123456789abcdef;y".as_slice());
        assert_eq!(common_prefix(a, b), 17);
        for n in [0usize, 5, 8, 15, 16, 31, 32, 33, 47, 70] {
            let x: Vec<u8> = (0..80u8).collect();
            let mut y = x.clone();
            if n < y.len() {
                y[n] ^= 0xff;
            }
            assert_eq!(common_prefix(&x, &y), n.min(80), "difference at {n}");
            assert_eq!(common_prefix(&x[..n.min(80)], &x), n.min(80));
        }
    }

    #[test]
    fn counts_merge_and_sort() {
        let mut a = StackCounts::new();
        a.add(b"b;c", Weight::from_u64(2));
        a.add(b"a", Weight::ONE);
        let mut b = StackCounts::new();
        b.add(b"b;c", Weight::from_u64(3));
        a.merge(b);
        let s = a.sorted();
        assert_eq!(s, vec![(&b"a"[..], Weight::ONE), (&b"b;c"[..], Weight::from_u64(5))]);
        assert_eq!(a.total(), Weight::from_u64(6));
    }

    #[test]
    fn ordered_merges_only_consecutive() {
        let mut o = OrderedStacks::new();
        o.push(b"a", Weight::ONE);
        o.push(b"a", Weight::ONE);
        o.push(b"b", Weight::ONE);
        let mut later = OrderedStacks::new();
        later.push(b"b", Weight::ONE);
        later.push(b"a", Weight::ONE);
        o.append(later);
        let names: Vec<_> = o.items().iter().map(|(s, w)| (s.to_vec(), w.whole())).collect();
        assert_eq!(names, vec![(b"a".to_vec(), 2), (b"b".to_vec(), 2), (b"a".to_vec(), 1)]);
    }
}
