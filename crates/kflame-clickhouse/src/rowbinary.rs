//! ClickHouse's `RowBinary` format: values back to back, little-endian, strings as a LEB128
//! length and their bytes. kflame writes and reads its rows in it: no escaping, no text
//! parsing of numbers, any byte in a string. A weight (exact, 9 decimals) is two columns:
//! its whole part (`UInt64`) and its billionths (`UInt32`); sums of both give the exact sum
//! (the servers sum integers faster than decimals, and the billionths are mostly 0).

use kflame::fold::Weight;

/// Appends values to a row buffer.
pub trait Put {
    /// `UInt8`.
    fn u8(&mut self, v: u8);
    /// `UInt16` (also `Date`: days since 1970-01-01).
    fn u16(&mut self, v: u16);
    /// `UInt32`.
    fn u32(&mut self, v: u32);
    /// `UInt64`.
    fn u64(&mut self, v: u64);
    /// `Int64`.
    fn i64(&mut self, v: i64);
    /// `Float64`.
    fn f64(&mut self, v: f64);
    /// `String`.
    fn bytes(&mut self, v: &[u8]);
    /// `String`.
    fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }
    /// A weight as `UInt64` whole part and `UInt32` billionths (callers check that the
    /// whole part fits).
    fn weight(&mut self, w: Weight);
}

impl Put for Vec<u8> {
    fn u8(&mut self, v: u8) {
        self.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        varint(self, v.len() as u64);
        self.extend_from_slice(v);
    }
    fn weight(&mut self, w: Weight) {
        let (whole, nanos) = w.to_parts();
        self.u64(u64::try_from(whole).unwrap_or(u64::MAX));
        self.u32(nanos);
    }
}

/// Appends `n` as LEB128 (a string's length; a `Native` block's column and row counts).
pub fn varint(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Reads values of an answer in `RowBinary`.
pub struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

/// The answer ended inside a value, or held a value of the wrong shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed RowBinary answer at byte {at}: {what}")]
pub struct ReadError {
    /// Offset in the answer.
    pub at: usize,
    /// What was expected.
    pub what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of `data`.
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, at: 0 }
    }

    /// True when every byte was read.
    pub fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    /// Bytes read so far: where the next value starts.
    pub fn offset(&self) -> usize {
        self.at
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ReadError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or(ReadError { at: self.at, what })?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ReadError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), ReadError> {
        self.take(n, "the bytes of a column").map(|_| ())
    }

    /// `UInt8`.
    pub fn u8(&mut self) -> Result<u8, ReadError> {
        Ok(self.take(1, "a UInt8")?[0])
    }
    /// `UInt16` / `Date`.
    pub fn u16(&mut self) -> Result<u16, ReadError> {
        self.array("a UInt16").map(u16::from_le_bytes)
    }
    /// `UInt32`.
    pub fn u32(&mut self) -> Result<u32, ReadError> {
        self.array("a UInt32").map(u32::from_le_bytes)
    }
    /// `UInt64`.
    pub fn u64(&mut self) -> Result<u64, ReadError> {
        self.array("a UInt64").map(u64::from_le_bytes)
    }
    /// `Int64`.
    pub fn i64(&mut self) -> Result<i64, ReadError> {
        self.array("an Int64").map(i64::from_le_bytes)
    }
    /// `Float64`.
    pub fn f64(&mut self) -> Result<f64, ReadError> {
        self.array("a Float64").map(f64::from_le_bytes)
    }
    /// `String`, as bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], ReadError> {
        let mut n: u64 = 0;
        let mut shift = 0;
        loop {
            let b = self.take(1, "a string length")?[0];
            if shift > 63 {
                return Err(ReadError { at: self.at, what: "a string length of at most 64 bits" });
            }
            n |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        let n = usize::try_from(n)
            .map_err(|_| ReadError { at: self.at, what: "a string that fits in memory" })?;
        self.take(n, "a string's bytes")
    }
    /// `String`, as UTF-8 (invalid sequences replaced).
    pub fn string(&mut self) -> Result<String, ReadError> {
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }
    /// A weight of one row: whole part `UInt64`, billionths `UInt32`.
    pub fn weight(&mut self) -> Result<Weight, ReadError> {
        let whole = self.u64()?;
        let nanos = self.u32()?;
        Ok(Weight::from_raw(u128::from(whole) * 1_000_000_000 + u128::from(nanos)))
    }
    /// A sum of weights: `sum(weight)` and `sum(weight_nano)`, both `UInt64`.
    pub fn weight_sum(&mut self) -> Result<Weight, ReadError> {
        let whole = self.u64()?;
        let nanos = self.u64()?;
        Ok(Weight::from_raw(u128::from(whole) * 1_000_000_000 + u128::from(nanos)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let mut b = Vec::new();
        b.u8(7);
        b.u16(20_000);
        b.u32(3);
        b.u64(u64::MAX);
        b.i64(-5);
        b.f64(1.25);
        let long = vec![b'x'; 300];
        b.bytes(&long);
        b.str("swapper;cpu_idle");
        b.weight(Weight::parse(b"12.5").unwrap());
        let mut r = Reader::new(&b);
        assert_eq!(r.u8().unwrap(), 7);
        assert_eq!(r.u16().unwrap(), 20_000);
        assert_eq!(r.u32().unwrap(), 3);
        assert_eq!(r.u64().unwrap(), u64::MAX);
        assert_eq!(r.i64().unwrap(), -5);
        assert_eq!(r.f64().unwrap(), 1.25);
        assert_eq!(r.bytes().unwrap(), &long[..]);
        assert_eq!(r.string().unwrap(), "swapper;cpu_idle");
        assert_eq!(r.weight().unwrap(), Weight::parse(b"12.5").unwrap());
        let mut b = Vec::new();
        b.u64(3);
        b.u64(2_500_000_000);
        assert_eq!(Reader::new(&b).weight_sum().unwrap(), Weight::parse(b"5.5").unwrap());
        assert!(r.done());
        assert!(r.u8().is_err());
        // A length past the end is an error, not a panic.
        assert!(Reader::new(&[0xff, 0xff, 0x03, b'a']).bytes().is_err());
        assert!(Reader::new(&[0xff; 12]).bytes().is_err());
    }
}
