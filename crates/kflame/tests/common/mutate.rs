//! Deterministic input mutation for no-panic tests of any parser.
//!
//! `Mutator::new(seed)` yields, for a fixture, variants with flipped, inserted, deleted,
//! duplicated and truncated bytes, invalid UTF-8, stray newlines and CRs: the kind of damage
//! real files get; [`Mutator::with_tokens`] adds the format's own keywords. It is the one
//! mutation helper of the project: integration tests use it through `mod common`, the
//! library's unit tests through `collapse::testkit` (which includes this file). The same seed always gives the same cases, so a failure names its case.
//!
//! ```ignore
//! let mut m = Mutator::new(42);
//! for case in 0..2000 {
//!     let input = m.mutate(fixture);
//!     let _ = parse(&input); // must not panic
//! }
//! ```

#![allow(dead_code, unreachable_pub)]

/// A small seeded PRNG (SplitMix64) and mutation operators over byte strings.
pub struct Mutator {
    state: u64,
    /// Format-specific tokens (`Call Trace:`, `@[`...) also inserted at random places.
    tokens: &'static [&'static [u8]],
}

impl Mutator {
    /// A mutator whose sequence depends only on `seed`.
    pub fn new(seed: u64) -> Mutator {
        Mutator { state: seed, tokens: &[] }
    }

    /// Also inserts these tokens of the format under test (with none, the sequence of
    /// cases for a seed is the same as without this call).
    pub fn with_tokens(mut self, tokens: &'static [&'static [u8]]) -> Mutator {
        self.tokens = tokens;
        self
    }

    /// The next pseudo-random number.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// A copy of `input` with 1 to 8 random mutations applied.
    pub fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        let rounds = 1 + self.below(8);
        for _ in 0..rounds {
            self.mutate_once(&mut v);
        }
        v
    }

    fn mutate_once(&mut self, v: &mut Vec<u8>) {
        const NASTY: &[u8] = b"\n\r\t ;:()[]/->+0x\xff\xfe\xc3\x28\0";
        let at = self.below(v.len() + 1);
        let kinds = if self.tokens.is_empty() { 9 } else { 10 };
        match self.below(kinds) {
            0 if !v.is_empty() => {
                let i = at.min(v.len() - 1);
                v[i] ^= 1 << self.below(8);
            }
            1 => {
                let b = NASTY[self.below(NASTY.len())];
                v.insert(at, b);
            }
            2 => {
                let len = self.below(64).min(v.len() - at);
                v.drain(at..at + len);
            }
            3 => {
                let len = self.below(256).min(v.len() - at);
                let copy: Vec<u8> = v[at..at + len].to_vec();
                let to = self.below(v.len() + 1);
                v.splice(to..to, copy);
            }
            4 => v.truncate(at),
            5 => {
                let n = self.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| self.next_u64() as u8).collect();
                v.splice(at..at, bytes);
            }
            6 => v.insert(at, b'\n'),
            7 => {
                let n = 1 + self.below(4000);
                v.splice(at..at, std::iter::repeat_n(b'x', n));
            }
            9 => {
                let t = self.tokens[self.below(self.tokens.len())];
                v.splice(at..at, t.iter().copied());
            }
            _ => {
                if let Some(i) = v[at..].iter().position(|&b| b == b'\n') {
                    v.insert(at + i, b'\r');
                }
            }
        }
    }
}
