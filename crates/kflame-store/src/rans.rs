//! A static range asymmetric numeral system (rANS) coder with exact counts, for the
//! columns of a bucket blob.
//!
//! Each column has a model: the count of every symbol in the column, so that the total
//! `M` is the column's length and a symbol of count `f` costs exactly `log2(M / f)` bits
//! (the column's empirical entropy; a column of one symbol costs nothing). The models of
//! several columns share one state and one stream of 32-bit words: the encoder takes the
//! symbols last to first, the decoder gives them back first to last.
//!
//! The state `x` lives in `[L, L · 2^32)` with `L` a multiple of `M` (`L = M · k`,
//! `k = ceil(2^31 / M)`), so that any total up to 2^31 is exact: encoding a symbol of
//! start `c` and count `f` is `x ← (x / f) · M + x mod f + c` after shifting out 32-bit
//! words while `x ≥ k · f · 2^32`; decoding is the inverse. The decoder checks that the
//! state ends where the encoder began and that every word was read, so a damaged stream
//! is an error, never a wrong answer silently.

/// Largest total a model may have (the state's arithmetic stays within `u64`).
pub(crate) const MAX_TOTAL: u64 = 1 << 31;

/// A column's counts: symbol `s` has `counts[s]` (0 for symbols it never takes).
#[derive(Clone, Debug, Default)]
pub(crate) struct Model {
    /// Cumulative counts: `starts[s]` is the sum of the counts before `s`; one more entry
    /// than symbols, the last being the total.
    starts: Vec<u64>,
    /// `L / M` of the state's interval.
    k: u64,
    /// The one symbol of a column that never changes the state (its count is the total).
    single: Option<u32>,
}

impl Model {
    /// The model of `counts`; `None` when the total is 0 or above [`MAX_TOTAL`].
    pub(crate) fn new(counts: &[u64]) -> Option<Model> {
        let mut starts = Vec::with_capacity(counts.len() + 1);
        let mut total = 0u64;
        starts.push(0);
        for &c in counts {
            total = total.checked_add(c)?;
            starts.push(total);
        }
        if total == 0 || total > MAX_TOTAL {
            return None;
        }
        let single = counts.iter().position(|&c| c == total).map(|s| s as u32);
        Some(Model { starts, k: MAX_TOTAL.div_ceil(total), single })
    }

    /// The total of the counts.
    pub(crate) fn total(&self) -> u64 {
        self.starts[self.starts.len() - 1]
    }

    /// Number of symbols (including those of count 0).
    pub(crate) fn symbols(&self) -> usize {
        self.starts.len() - 1
    }

    /// The symbol a column of one symbol always takes.
    pub(crate) fn single(&self) -> Option<u32> {
        self.single
    }

    fn lower(&self) -> u64 {
        self.k * self.total()
    }
}

/// Encodes symbols in reverse order into 32-bit words.
pub(crate) struct Encoder {
    x: u64,
    words: Vec<u32>,
    /// The state's lower bound, which every model of the stream must share: the first
    /// model used fixes it (`L = k · M`); models of other totals must have the same `L`.
    lower: u64,
}

impl Encoder {
    /// A stream whose models all have `lower()` equal to that of `model`.
    pub(crate) fn new(model: &Model) -> Encoder {
        let lower = model.lower();
        Encoder { x: lower, words: Vec::new(), lower }
    }

    /// Encodes `s` (must have a count above 0 in `m`; `m` must have the stream's total).
    #[inline]
    pub(crate) fn put(&mut self, m: &Model, s: u32) {
        debug_assert_eq!(m.lower(), self.lower);
        if m.single.is_some() {
            return;
        }
        let c = m.starts[s as usize];
        let f = m.starts[s as usize + 1] - c;
        debug_assert!(f > 0, "symbol {s} has no count");
        let x_max = (m.k * f) << 32;
        if self.x >= x_max {
            self.words.push(self.x as u32);
            self.x >>= 32;
        }
        self.x = (self.x / f) * m.total() + self.x % f + c;
    }

    /// The words, in the order the decoder reads them.
    pub(crate) fn finish(mut self) -> Vec<u32> {
        self.words.push(self.x as u32);
        self.words.push((self.x >> 32) as u32);
        self.words.reverse();
        self.words
    }
}

/// A model's lookup from a slot (`x mod M`) to its symbol, for decoding: for a few
/// symbols, a scan of them, most frequent first (in the L1 cache); else a table of every
/// slot's symbol beside each symbol's (start, count).
pub(crate) struct Table {
    total: u64,
    single: Option<u32>,
    /// Symbol, start, count of the present symbols, most frequent first (scan mode).
    few: Vec<(u32, u32, u32)>,
    /// The symbol of each slot (table mode).
    slots: Vec<u32>,
    /// (start, count) of each symbol (table mode).
    spans: Vec<(u32, u32)>,
}

/// Most present symbols decoded by a scan.
const SCAN_SYMBOLS: usize = 8;

impl Table {
    pub(crate) fn new(model: &Model) -> Table {
        let total = model.total();
        let mut t =
            Table { total, single: model.single, few: Vec::new(), slots: Vec::new(), spans: Vec::new() };
        if t.single.is_some() {
            return t;
        }
        // Totals are at most 2^31: starts and counts fit 32 bits.
        let present: Vec<(u32, u32, u32)> = (0..model.symbols())
            .filter_map(|s| {
                let (c, e) = (model.starts[s], model.starts[s + 1]);
                (e > c).then_some((s as u32, c as u32, (e - c) as u32))
            })
            .collect();
        if present.len() <= SCAN_SYMBOLS {
            t.few = present;
            t.few.sort_by_key(|&(s, _, f)| (std::cmp::Reverse(f), s));
        } else {
            t.slots.reserve(total as usize);
            t.spans = vec![(0, 0); model.symbols()];
            for &(s, c, f) in &present {
                t.slots.extend(std::iter::repeat_n(s, f as usize));
                t.spans[s as usize] = (c, f);
            }
        }
        t
    }

    #[inline(always)]
    fn lookup(&self, slot: u64) -> (u32, u64, u64) {
        if self.slots.is_empty() {
            for &(s, c, f) in &self.few {
                if slot.wrapping_sub(u64::from(c)) < u64::from(f) {
                    return (s, u64::from(c), u64::from(f));
                }
            }
            // Unreachable: the present symbols' spans cover every slot below the total.
            return (0, slot, 1);
        }
        let s = self.slots[slot as usize];
        let (c, f) = self.spans[s as usize];
        (s, u64::from(c), u64::from(f))
    }
}

/// Decodes symbols from 32-bit words (little-endian bytes).
pub(crate) struct Decoder<'a> {
    x: u64,
    bytes: &'a [u8],
    pos: usize,
    lower: u64,
}

impl<'a> Decoder<'a> {
    /// A decoder over `bytes` (a whole number of words), for models of `lower()` equal to
    /// that of `model`.
    pub(crate) fn new(bytes: &'a [u8], model: &Model) -> Result<Decoder<'a>, String> {
        if !bytes.len().is_multiple_of(4) {
            return Err(format!("{} bytes of coded columns is not a whole number of words", bytes.len()));
        }
        let mut d = Decoder { x: 0, bytes, pos: 0, lower: model.lower() };
        let hi = d.word()?;
        let lo = d.word()?;
        d.x = (u64::from(hi) << 32) | u64::from(lo);
        if d.x < d.lower || d.x >> 32 >= d.lower {
            return Err("coded columns start outside the coder's range".into());
        }
        Ok(d)
    }

    #[inline]
    fn word(&mut self) -> Result<u32, String> {
        let Some(b) = self.bytes.get(self.pos..self.pos + 4) else {
            return Err("coded columns end early".into());
        };
        self.pos += 4;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next symbol of `t`'s model.
    #[inline(always)]
    pub(crate) fn get(&mut self, t: &Table) -> Result<u32, String> {
        if let Some(s) = t.single {
            return Ok(s);
        }
        let (q, slot) = (self.x / t.total, self.x % t.total);
        let (s, c, f) = t.lookup(slot);
        self.x = f * q + slot - c;
        if self.x < self.lower {
            self.x = (self.x << 32) | u64::from(self.word()?);
        }
        Ok(s)
    }

    /// Checks that the stream ended where the encoder began, with every word read.
    pub(crate) fn finish(self) -> Result<(), String> {
        if self.x != self.lower || self.pos != self.bytes.len() {
            return Err("coded columns do not decode to their end".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(counts: &[u64], symbols: &[u32]) -> Vec<u32> {
        let m = Model::new(counts).unwrap();
        let mut e = Encoder::new(&m);
        for &s in symbols.iter().rev() {
            e.put(&m, s);
        }
        let words = e.finish();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let t = Table::new(&m);
        let mut d = Decoder::new(&bytes, &m).unwrap();
        let out: Vec<u32> = symbols.iter().map(|_| d.get(&t).unwrap()).collect();
        d.finish().unwrap();
        // Every cut of the stream is an error, not a panic.
        for cut in 0..bytes.len() {
            let Ok(mut d) = Decoder::new(&bytes[..cut], &m) else { continue };
            let ok = symbols.iter().all(|_| d.get(&t).is_ok());
            assert!(!ok || d.finish().is_err(), "cut at {cut} of {}", bytes.len());
        }
        out
    }

    #[test]
    fn symbols_come_back_in_order() {
        // Skewed counts: a column of mostly one symbol.
        let mut symbols = vec![0u32; 1000];
        for i in (0..1000).step_by(7) {
            symbols[i] = 1 + (i % 3) as u32;
        }
        let mut counts = vec![0u64; 4];
        for &s in &symbols {
            counts[s as usize] += 1;
        }
        assert_eq!(round_trip(&counts, &symbols), symbols);
    }

    #[test]
    fn the_cost_is_the_empirical_entropy() {
        // 4096 symbols, each 8 times, in a scrambled order: 12 bits each.
        let symbols: Vec<u32> = (0..32_768u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) % 4096).collect();
        let mut counts = vec![0u64; 4096];
        for &s in &symbols {
            counts[s as usize] += 1;
        }
        let m = Model::new(&counts).unwrap();
        let mut e = Encoder::new(&m);
        for &s in symbols.iter().rev() {
            e.put(&m, s);
        }
        let bits: f64 =
            counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 * (32_768.0 / c as f64).log2()).sum();
        let words = e.finish();
        assert!((words.len() * 32) as f64 <= bits + 96.0, "{} words for {bits} bits", words.len());
        assert_eq!(round_trip(&counts, &symbols), symbols);
    }

    #[test]
    fn one_symbol_costs_nothing_and_totals_are_exact() {
        let m = Model::new(&[0, 5]).unwrap();
        assert_eq!(m.single(), Some(1));
        let mut e = Encoder::new(&m);
        for _ in 0..5 {
            e.put(&m, 1);
        }
        assert_eq!(e.finish().len(), 2);
        // A total that is not a power of two, odd counts.
        let counts = [3u64, 1, 7, 0, 2];
        let symbols = [2u32, 0, 4, 2, 2, 1, 0, 2, 2, 4, 0, 2, 2];
        assert_eq!(round_trip(&counts, &symbols), symbols);
        assert!(Model::new(&[]).is_none());
        assert!(Model::new(&[0, 0]).is_none());
        assert!(Model::new(&[MAX_TOTAL, 1]).is_none());
    }
}
