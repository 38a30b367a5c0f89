//! The compact encodings of the store's blobs: profile buckets and metric blocks.
//!
//! A bucket blob is one format byte then, for format 1, a zstd frame of:
//!
//! ```text
//! varint time_unit_ns                  resolution of sample times (1000: µs)
//! varint n_dict, n_dict × varint       global stack ids, ascending, delta-coded
//! varint n_pids, n_pids × varint       pids and tids, ascending, delta-coded
//! varint n_cgroups, n × (varint len, bytes)
//! varint n_samples, then columns of n_samples entries each, samples by CPU then time:
//!   cpu      varint
//!   time     zigzag varint, time units: the delta from the CPU's previous sample (the
//!            bucket start for its first) minus the delta between its first two samples
//!   stack    varint: 0 the same as the CPU's previous sample, else dictionary index + 1
//!   cgroup   varint (0 none, i+1 the i-th cgroup)
//!   pid      varint: 0 the same as the CPU's previous sample, else pid index + 1
//!   tid      varint: 0 the same as the pid, else pid index + 1
//!   weight   zigzag varint (128-bit): delta of the raw fixed-point weight from the previous
//! varint n_untimed, n × (varint stack index, varint cgroup, varint count, varint raw weight)
//! ```
//!
//! Columns keep alike values together (the CPU, the task, the period of a timer), so that
//! most codes are zeros and the compressor folds them away. Decoding checks every count
//! against the bytes left, so a damaged blob is an error, never a panic or a huge
//! allocation.
//!
//! A metric block (one series, one block of time) is not compressed (it is small):
//!
//! ```text
//! varint n, u8 decimals (0-3: every value is exact with that many; 0xff: raw f64s)
//! n × zigzag varint: times in ms, each delta minus the delta of the first two
//! n × value: zigzag varint delta of value × 10^decimals, or 8 bytes f64 LE
//! ```

use std::io::Read;

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

pub(crate) fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

/// A reader over a blob's bytes; every read checks the length.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u128, String> {
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u128::from(b));
        }
        self.varint_long()
    }

    #[inline(never)]
    fn varint_long(&mut self) -> Result<u128, String> {
        let mut v: u128 = 0;
        let mut shift = 0;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(format!("ends inside a number at byte {}", self.pos));
            };
            self.pos += 1;
            if shift >= 128 || (shift == 126 && b > 3) {
                return Err(format!("number too long at byte {}", self.pos - 1));
            }
            v |= u128::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A varint of at most 64 bits (the common case, without 128-bit arithmetic).
    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, String> {
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        if let Some(&[b0, b1]) =
            self.buf.get(self.pos..self.pos + 2).and_then(|s| <&[u8; 2]>::try_from(s).ok())
            && b1 < 0x80
        {
            self.pos += 2;
            return Ok(u64::from(b0 & 0x7f) | (u64::from(b1) << 7));
        }
        let v = self.varint_long()?;
        u64::try_from(v).map_err(|_| format!("number {v} out of range before byte {}", self.pos))
    }

    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32, String> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| format!("number {v} out of range before byte {}", self.pos))
    }

    #[inline]
    pub(crate) fn i64z(&mut self) -> Result<i64, String> {
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(i64::from(b >> 1) ^ -i64::from(b & 1));
        }
        let v = unzigzag(self.varint()?);
        i64::try_from(v).map_err(|_| format!("number {v} out of range before byte {}", self.pos))
    }

    /// A count of items of at least `min_bytes` each: refused when the bytes left cannot
    /// hold that many.
    pub(crate) fn count(&mut self, min_bytes: usize) -> Result<usize, String> {
        let n = self.u64()?;
        if n > (self.left() / min_bytes.max(1)) as u64 {
            return Err(format!("count {n} exceeds the {} bytes left", self.left()));
        }
        Ok(n as usize)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!("{n} bytes wanted, {} left", self.left()));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn done(&self) -> Result<(), String> {
        if self.left() != 0 {
            return Err(format!("{} bytes left over", self.left()));
        }
        Ok(())
    }
}

/// A signed number as a zigzag varint.
pub(crate) fn out_zig(out: &mut Vec<u8>, v: i128) {
    put_varint(out, zigzag(v));
}

/// Decompresses a zstd frame of at most `max` bytes.
pub(crate) fn decompress_limited(body: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let mut raw = Vec::new();
    let mut dec = zstd::stream::read::Decoder::with_buffer(body).map_err(|e| format!("zstd: {e}"))?;
    (&mut dec).take(max as u64).read_to_end(&mut raw).map_err(|e| format!("zstd: {e}"))?;
    Ok(raw)
}

/// Resolution of metric times.
const METRIC_TIME_UNIT_NS: i64 = 1_000_000;
/// The metric value mode of a block whose values are not all short decimals.
const RAW_VALUES: u8 = 0xff;
/// Added to a decimals mode: a varint step follows, and the deltas are in steps.
const STEP_FLAG: u8 = 0x20;
/// The first bytes of a zstd-compressed metric block: a count of 0 (no block is empty)
/// and a mode no plain block has.
const METRIC_ZSTD_MARK: [u8; 2] = [0x00, 0xf2];
/// zstd level of metric blocks (small: the highest levels cost little).
const METRIC_ZSTD_LEVEL: i32 = 19;
/// Largest decompressed metric block accepted.
const MAX_METRIC_BYTES: usize = 64 << 20;

/// Encodes one metric block: `(time_ns, value)` in time order, times ≥ `start_ns`, kept to
/// the millisecond. Values that are all short decimals are delta-coded as integers, the
/// deltas divided by their common step (a byte count that moves by pages); the block is
/// then zstd-compressed when that is smaller (a steady series folds to a few bytes).
pub(crate) fn encode_metrics(start_ns: i64, values: &[(i64, f64)]) -> Vec<u8> {
    let plain = encode_metrics_plain(start_ns, values, true);
    match zstd::bulk::compress(&plain, METRIC_ZSTD_LEVEL) {
        Ok(z) if z.len() + METRIC_ZSTD_MARK.len() < plain.len() => {
            let mut out = METRIC_ZSTD_MARK.to_vec();
            out.extend_from_slice(&z);
            out
        }
        _ => plain,
    }
}

/// The uncompressed block; `steps` allows the common-step mode (the format of older
/// writers is the same without it).
fn encode_metrics_plain(start_ns: i64, values: &[(i64, f64)], steps: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 3 + 4);
    put_varint(&mut out, values.len() as u128);
    // The fewest decimals (0 to 3) that give every value back exactly.
    let decimals =
        (0..=3u8).find(|&d| values.iter().all(|&(_, v)| scaled(v, d).is_some())).unwrap_or(RAW_VALUES);
    // The greatest common divisor of the scaled deltas.
    let mut step = 0u64;
    if steps && decimals != RAW_VALUES {
        let mut last = 0i64;
        for &(_, v) in values {
            let s = scaled(v, decimals).unwrap_or(0);
            step = gcd(step, s.abs_diff(last));
            last = s;
        }
    }
    if step > 1 {
        out.push(decimals | STEP_FLAG);
        put_varint(&mut out, u128::from(step));
    } else {
        step = 1;
        out.push(decimals);
    }
    let (mut last_t, mut ref_dt) = (0i64, 0i64);
    for (i, &(t, _)) in values.iter().enumerate() {
        let t = (t - start_ns) / METRIC_TIME_UNIT_NS;
        let dt = t - last_t;
        out_zig(&mut out, i128::from(dt - ref_dt));
        if i == 1 {
            ref_dt = dt;
        }
        last_t = t;
    }
    let mut last = 0i64;
    for &(_, v) in values {
        match scaled(v, decimals) {
            Some(s) => {
                out_zig(&mut out, (i128::from(s) - i128::from(last)) / i128::from(step));
                last = s;
            }
            None => out.extend_from_slice(&v.to_le_bytes()),
        }
    }
    out
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `v × 10^decimals` when that is an integer that gives `v` back exactly.
fn scaled(v: f64, decimals: u8) -> Option<i64> {
    if !v.is_finite() || decimals > 3 || (v == 0.0 && v.is_sign_negative()) {
        return None;
    }
    let f = 10f64.powi(i32::from(decimals));
    let s = (v * f).round();
    if s.abs() > (1u64 << 52) as f64 {
        return None;
    }
    let s = s as i64;
    ((s as f64) / f == v).then_some(s)
}

/// Decodes a metric block.
pub(crate) fn decode_metrics(blob: &[u8], start_ns: i64) -> Result<Vec<(i64, f64)>, String> {
    let mut out = Vec::new();
    decode_metrics_into(blob, start_ns, &mut out)?;
    Ok(out)
}

/// Decodes a metric block, appending its values to `out`.
pub(crate) fn decode_metrics_into(
    blob: &[u8],
    start_ns: i64,
    out: &mut Vec<(i64, f64)>,
) -> Result<(), String> {
    if let Some(z) = blob.strip_prefix(&METRIC_ZSTD_MARK[..]) {
        let raw = decompress_limited(z, MAX_METRIC_BYTES)?;
        return decode_metrics_plain(&raw, start_ns, out);
    }
    decode_metrics_plain(blob, start_ns, out)
}

fn decode_metrics_plain(blob: &[u8], start_ns: i64, out: &mut Vec<(i64, f64)>) -> Result<(), String> {
    let mut r = Reader::new(blob);
    let n = r.count(2)?;
    let mode = r.bytes(1)?[0];
    let (decimals, step) = match mode {
        RAW_VALUES => (RAW_VALUES, 1),
        0..=3 => (mode, 1),
        m if m & !3 == STEP_FLAG => {
            let step = i64::try_from(r.u64()?).map_err(|_| "value step out of range")?;
            (m & 3, step)
        }
        m => return Err(format!("unknown value mode {m}")),
    };
    let first = out.len();
    out.reserve(n);
    let (mut last_t, mut ref_dt) = (0i64, 0i64);
    for i in 0..n {
        let dt = ref_dt.checked_add(r.i64z()?).ok_or("time out of range")?;
        if i == 1 {
            ref_dt = dt;
        }
        let t = last_t.checked_add(dt).ok_or("time out of range")?;
        last_t = t;
        let time = t
            .checked_mul(METRIC_TIME_UNIT_NS)
            .and_then(|v| v.checked_add(start_ns))
            .ok_or("time out of range")?;
        out.push((time, 0.0));
    }
    let f = if decimals == RAW_VALUES { 1.0 } else { 10f64.powi(i32::from(decimals)) };
    let mut last = 0i64;
    for v in out[first..].iter_mut() {
        v.1 = if decimals == RAW_VALUES {
            f64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| "short value")?)
        } else {
            let d = r.i64z()?.checked_mul(step).ok_or("value out of range")?;
            last = last.checked_add(d).ok_or("value out of range")?;
            last as f64 / f
        };
    }
    r.done()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [0u128, 1, 127, 128, 300, u64::MAX as u128, u128::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(Reader::new(&b).varint().unwrap(), v);
        }
        for v in [0i128, -1, 1, i128::MIN, i128::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn metric_blocks_round_trip_exactly() {
        let start = 1_700_000_000_000_000_000;
        let vals: Vec<(i64, f64)> = (0..60)
            .map(|i| {
                (
                    start + i * 1_000_000_000 + (i % 3) * 1_000_000,
                    [12.34, 0.1 + 0.2, f64::NAN, -0.0, 1e300][i as usize % 5],
                )
            })
            .collect();
        let b = encode_metrics(start, &vals);
        let d = decode_metrics(&b, start).unwrap();
        assert_eq!(d.len(), vals.len());
        for (a, b) in vals.iter().zip(&d) {
            assert_eq!(a.0, b.0);
            assert_eq!(a.1.to_bits(), b.1.to_bits());
        }
        // Short decimals take the scaled path, and come back exactly.
        let vals: Vec<(i64, f64)> =
            (0..60).map(|i| (start + i * 1_000_000_000, (i * 7 % 1000) as f64 / 100.0)).collect();
        let plain = encode_metrics_plain(start, &vals, false);
        assert_eq!(plain[1], 2);
        assert!(plain.len() < 60 * 3, "{} bytes", plain.len());
        assert_eq!(decode_metrics(&plain, start).unwrap(), vals);
        let b = encode_metrics(start, &vals);
        assert!(b.len() <= plain.len(), "{} bytes, plain {}", b.len(), plain.len());
        assert_eq!(decode_metrics(&b, start).unwrap(), vals);
    }

    #[test]
    fn metric_blocks_with_a_step_and_compressed_round_trip() {
        let start = 1_700_000_000_000_000_000;
        // Page-sized moves of a byte count (a step of 4096), then a steady series.
        let pages: Vec<(i64, f64)> = (0..600)
            .map(|i| {
                (
                    start + i * 1_000_000_000 + (i % 2) * 1_000_000,
                    (1_000_000_000 + (i * 37 % 11) * 4096) as f64,
                )
            })
            .collect();
        let plain = encode_metrics_plain(start, &pages, true);
        assert_eq!(plain[2], STEP_FLAG, "mode of {:?}", &plain[..4]);
        assert_eq!(decode_metrics(&plain, start).unwrap(), pages);
        let steady: Vec<(i64, f64)> = (0..600).map(|i| (start + i * 1_000_000_000, 0.25)).collect();
        let b = encode_metrics(start, &steady);
        assert_eq!(b[..2], METRIC_ZSTD_MARK);
        assert!(b.len() < 40, "{} bytes", b.len());
        assert_eq!(decode_metrics(&b, start).unwrap(), steady);
        // Every truncation of a compressed or plain block is an error, not a panic.
        for blob in [&b, &plain] {
            for cut in 0..blob.len() {
                assert!(decode_metrics(&blob[..cut], start).is_err(), "cut at {cut}");
            }
        }
    }
}
