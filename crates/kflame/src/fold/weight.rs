//! Exact stack weights: sample counts, periods, bytes or nanoseconds.
//!
//! Folded files carry integers most of the time, but some producers write decimals
//! (`perf report` percentages, scaled periods, normalized differentials). A [`Weight`] is a
//! fixed-point decimal with [`Weight::FRACTION_DIGITS`] digits after the point, stored in a
//! `u128`, so that sums of billions of 64-bit periods never overflow and no fraction is ever
//! dropped silently: a value with more fractional digits than that is a parse error.

use std::fmt;
use std::ops::{Add, AddAssign};

/// A non-negative, exact weight.
#[derive(Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Weight(u128);

/// Why a weight could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightError {
    /// Nothing to parse.
    #[error("empty count")]
    Empty,
    /// A character that is not a digit or a single decimal point.
    #[error("count is not a non-negative decimal number")]
    NotANumber,
    /// A leading minus sign.
    #[error("count is negative")]
    Negative,
    /// More fractional digits than a weight keeps.
    #[error("count has more than {} digits after the decimal point", Weight::FRACTION_DIGITS)]
    TooPrecise,
    /// Larger than the representable range.
    #[error("count is too large")]
    Overflow,
}

impl Weight {
    /// Number of decimal digits kept after the point.
    pub const FRACTION_DIGITS: u32 = 9;
    const SCALE: u128 = 10u128.pow(Self::FRACTION_DIGITS);
    /// The zero weight.
    pub const ZERO: Weight = Weight(0);
    /// A weight of one (one sample).
    pub const ONE: Weight = Weight(Self::SCALE);

    /// A whole number of units.
    #[inline]
    pub const fn from_u64(n: u64) -> Weight {
        Weight(n as u128 * Self::SCALE)
    }

    /// Parses `123`, `123.`, `123.45` or `.5`.
    pub fn parse(s: &[u8]) -> Result<Weight, WeightError> {
        if s.is_empty() {
            return Err(WeightError::Empty);
        }
        if s[0] == b'-' {
            return Err(WeightError::Negative);
        }
        let (int, frac) = match memchr::memchr(b'.', s) {
            Some(dot) => (&s[..dot], &s[dot + 1..]),
            None => (s, &[][..]),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(WeightError::NotANumber);
        }
        let mut whole: u128 = 0;
        for &b in int {
            let d = digit(b)?;
            whole = whole.checked_mul(10).and_then(|v| v.checked_add(d)).ok_or(WeightError::Overflow)?;
        }
        let mut fraction: u128 = 0;
        let mut digits = 0u32;
        for &b in frac {
            let d = digit(b)?;
            digits += 1;
            if digits > Self::FRACTION_DIGITS {
                if d != 0 {
                    return Err(WeightError::TooPrecise);
                }
                continue;
            }
            fraction = fraction * 10 + d;
        }
        if digits < Self::FRACTION_DIGITS {
            fraction *= 10u128.pow(Self::FRACTION_DIGITS - digits);
        }
        whole
            .checked_mul(Self::SCALE)
            .and_then(|v| v.checked_add(fraction))
            .map(Weight)
            .ok_or(WeightError::Overflow)
    }

    /// True for zero.
    #[inline]
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// True when the weight has no fractional part.
    #[inline]
    pub const fn is_integer(self) -> bool {
        self.0.is_multiple_of(Self::SCALE)
    }

    /// The whole part, saturating at `u64::MAX`.
    pub fn whole(self) -> u64 {
        u64::try_from(self.0 / Self::SCALE).unwrap_or(u64::MAX)
    }

    /// The value as a float (for layout and percentages, never for sums).
    pub fn as_f64(self) -> f64 {
        (self.0 / Self::SCALE) as f64 + (self.0 % Self::SCALE) as f64 / Self::SCALE as f64
    }

    /// Saturating subtraction.
    pub fn saturating_sub(self, other: Weight) -> Weight {
        Weight(self.0.saturating_sub(other.0))
    }

    /// Multiplies by a whole factor, saturating.
    pub fn saturating_mul(self, factor: u64) -> Weight {
        Weight(self.0.saturating_mul(factor as u128))
    }

    /// Raw fixed-point units (1e-9 of a unit), for serialization that must be exact.
    pub const fn raw(self) -> u128 {
        self.0
    }

    /// The weight of `raw` fixed-point units (1e-9 of a unit): the inverse of [`Weight::raw`].
    pub const fn from_raw(raw: u128) -> Weight {
        Weight(raw)
    }

    /// The whole units and the nanounits (`0..10^9`) of the weight: the two `INTEGER`
    /// columns a SQLite store keeps (see ARCHITECTURE.md, "Weights in stores").
    pub const fn to_parts(self) -> (u128, u32) {
        (self.0 / Self::SCALE, (self.0 % Self::SCALE) as u32)
    }

    /// The weight of `whole` units plus `nanos` nanounits: the inverse of
    /// [`Weight::to_parts`]. `nanos` may exceed `10^9` (the sum of a fraction column
    /// carries into the units); `None` when the result is out of range.
    pub fn from_parts(whole: u128, nanos: u128) -> Option<Weight> {
        whole.checked_mul(Self::SCALE)?.checked_add(nanos).map(Weight)
    }

    /// Largest raw value a `Decimal128(9)` column holds: 38 decimal digits.
    const DECIMAL128_MAX: u128 = 10u128.pow(38) - 1;

    /// The weight as the unscaled integer of a ClickHouse `Decimal128(9)` (the same scale
    /// as [`Weight::raw`]); `None` above that type's 38 digits (more than 10^29 units).
    pub fn to_decimal128(self) -> Option<i128> {
        if self.0 > Self::DECIMAL128_MAX { None } else { i128::try_from(self.0).ok() }
    }

    /// The weight of a `Decimal128(9)`'s unscaled integer; `None` for a negative value
    /// (weights never are).
    pub fn from_decimal128(v: i128) -> Option<Weight> {
        u128::try_from(v).ok().map(Weight)
    }

    /// Writes the weight in folded-file form into `out` without allocating.
    pub fn write_to(self, out: &mut Vec<u8>) {
        let whole = self.0 / Self::SCALE;
        let mut frac = self.0 % Self::SCALE;
        push_u128(out, whole);
        if frac != 0 {
            let mut width = Self::FRACTION_DIGITS as usize;
            while frac.is_multiple_of(10) {
                frac /= 10;
                width -= 1;
            }
            out.push(b'.');
            let start = out.len();
            push_u128(out, frac);
            let written = out.len() - start;
            if written < width {
                let pad = width - written;
                out.splice(start..start, std::iter::repeat_n(b'0', pad));
            }
        }
    }
}

fn digit(b: u8) -> Result<u128, WeightError> {
    if b.is_ascii_digit() { Ok((b - b'0') as u128) } else { Err(WeightError::NotANumber) }
}

fn push_u128(out: &mut Vec<u8>, mut v: u128) {
    let mut buf = [0u8; 40];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

impl Add for Weight {
    type Output = Weight;
    #[inline]
    fn add(self, rhs: Weight) -> Weight {
        Weight(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Weight {
    #[inline]
    fn add_assign(&mut self, rhs: Weight) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

impl std::iter::Sum for Weight {
    fn sum<I: Iterator<Item = Weight>>(iter: I) -> Weight {
        iter.fold(Weight::ZERO, |a, b| a + b)
    }
}

impl From<u64> for Weight {
    fn from(n: u64) -> Weight {
        Weight::from_u64(n)
    }
}

impl fmt::Display for Weight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut v = Vec::with_capacity(24);
        self.write_to(&mut v);
        // write_to only emits ASCII digits and '.'.
        f.write_str(std::str::from_utf8(&v).unwrap_or("?"))
    }
}

impl fmt::Debug for Weight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Weight({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for s in ["0", "1", "42", "1.5", "0.000000001", "239807672958951499", "3.25"] {
            assert_eq!(Weight::parse(s.as_bytes()).unwrap().to_string(), s);
        }
        assert_eq!(Weight::parse(b"1.50").unwrap().to_string(), "1.5");
        assert_eq!(Weight::parse(b"7.").unwrap().to_string(), "7");
        assert_eq!(Weight::parse(b".25").unwrap().to_string(), "0.25");
    }

    #[test]
    fn rejects_bad_counts() {
        assert_eq!(Weight::parse(b""), Err(WeightError::Empty));
        assert_eq!(Weight::parse(b"-1"), Err(WeightError::Negative));
        assert_eq!(Weight::parse(b"1e5"), Err(WeightError::NotANumber));
        assert_eq!(Weight::parse(b"."), Err(WeightError::NotANumber));
        assert_eq!(Weight::parse(b"1.0000000001"), Err(WeightError::TooPrecise));
        assert_eq!(Weight::parse(b"1.0000000000").unwrap(), Weight::from_u64(1));
    }

    #[test]
    fn sums_exactly() {
        let a = Weight::parse(b"0.1").unwrap();
        let b = Weight::parse(b"0.2").unwrap();
        assert_eq!((a + b).to_string(), "0.3");
        let big = Weight::from_u64(u64::MAX);
        assert_eq!((big + big).to_string(), "36893488147419103230");
    }

    #[test]
    fn store_columns_round_trip_exactly() {
        let w = |s: &str| Weight::parse(s.as_bytes()).unwrap();
        for s in ["0", "1", "3.25", "0.000000001", "18446744073709551615.999999999"] {
            let (whole, nanos) = w(s).to_parts();
            assert!(nanos < 1_000_000_000);
            assert_eq!(Weight::from_parts(whole, u128::from(nanos)), Some(w(s)), "{s}");
            assert_eq!(Weight::from_decimal128(w(s).to_decimal128().unwrap()), Some(w(s)), "{s}");
        }
        assert_eq!(w("3.25").to_parts(), (3, 250_000_000));
        assert_eq!(w("3.25").to_decimal128(), Some(3_250_000_000));
        // Summed fraction columns carry into the units.
        assert_eq!(Weight::from_parts(1, 1_500_000_000), Some(w("2.5")));
        assert_eq!(Weight::from_parts(u128::MAX, 0), None);
        // Decimal128(9) holds 38 digits: 10^29 units do not fit, one nanounit less does.
        let limit = Weight::from_raw(10u128.pow(38));
        assert_eq!(limit.to_decimal128(), None);
        assert_eq!(Weight::from_raw(10u128.pow(38) - 1).to_decimal128(), Some(10i128.pow(38) - 1));
        assert_eq!(Weight::from_decimal128(-1), None);
    }
}
