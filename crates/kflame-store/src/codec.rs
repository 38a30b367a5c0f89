//! The shared pieces of the store's blob encodings (varints, zigzag, a reader that checks
//! every length) and the metric encodings: metric spans, and the metric blocks of older
//! files. Profile bucket blobs are in `bucket.rs`.
//!
//! A metric span (table `metric_spans`, schema 4: every series of one host over one block,
//! or over a 10-minute span once its blocks are merged) is a format byte (1) then:
//!
//! ```text
//! varint n_times, varint len, len bytes   the shared time column: ms from the start, each
//!                                         delta minus the first delta (coded, see below)
//! varint n_dens, n × (varint len, bytes)  denominator columns, one per ratio group: t at
//!                                         each time, as deltas (coded); 0 where none fits
//! varint n_series, n × (zigzag varint id delta, varint len)   ids ascending
//! columns, one per series, of the lengths above:
//!   varint n, varint n_runs, n_runs × (varint gap, varint len)   the time indexes it has
//!   u8 mode, [varint step], [varint denominator column], then n coded integers:
//!     0-3        decimals: value × 10^d, delta-coded        | 0x40: not delta-coded
//!     0x80       ratios: k with value = round2(100 k / t)    | 0x20: divided by the step
//!     0xff       raw f64 LE (no integer form), not coded
//! ```
//!
//! A ratio group is a set of series whose values at one instant are whole counts over one
//! shared whole: a CPU's shares of its clock ticks (`100 × ticks / total ticks`), the rates
//! over the reads' interval (`count / secs`, `t` = hundredths of a second). The encoder finds
//! `t` instant by instant (the previous one, the nearest, a whole multiple of 100) and keeps
//! the ratio form of a series only when every value comes back bit for bit; else the
//! decimals, else raw values. Of the exact forms, the smallest is kept.
//!
//! "Coded" integers use an adaptive binary range coder (LZMA's): each zigzagged integer as
//! its bit length (a bit tree in the context of the previous length), the three bits below
//! its leading one (a bit tree per length) and the rest (a context per length and bit). A
//! steady column costs a few bytes, and one series is decoded without the others (its
//! column, the times, its denominators). Every count read is checked against the bytes
//! left (a coded value costs at least 0.15 bits; reading past a column's end is an error).
//!
//! A metric block of schema 3 and older (table `metric_blocks`, one series, one block) is
//! still read, and written into files of those schemas:
//!
//! ```text
//! varint n, u8 decimals (0-3: every value is exact with that many; 0xff: raw f64s;
//!    | 0x20: a varint step follows)
//! n × zigzag varint: times in ms, each delta minus the delta of the first two
//! n × value: zigzag varint delta of value × 10^decimals (÷ step), or 8 bytes f64 LE
//! ```
//! the whole zstd-compressed (level 19) when smaller, after the two bytes `00 f2`.

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

/// The format byte of a metric span blob (table `metric_spans`, schema 4).
const SPAN_FORMAT_1: u8 = 1;
/// Value mode of a span column: values not delta-coded (each on its own).
const PLAIN_FLAG: u8 = 0x40;
/// Value mode of a span column: ratios `100 × k / t` of a denominator column `t`.
const RATIO_MODE: u8 = 0x80;
/// Largest denominator of a group of ratios (clock ticks of a second of 655 CPUs,
/// hundredths of a second of a rate's interval).
const MAX_DENOMINATOR: i64 = 1 << 16;
/// How far from the previous instant's denominator the next is looked for.
const DENOMINATOR_WINDOW: i64 = 256;

/// A metric value rounded as the store keeps it: to 0.01 of its unit when finite and small
/// enough for that to be exact in an f64, else as it is; `-0.0` is kept as `0.0`.
pub(crate) fn round_metric(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    if v.is_finite() && v.abs() < 1e13 {
        let q = (v * f).round() / f;
        if q == 0.0 { 0.0 } else { q }
    } else {
        v
    }
}

/// The value a ratio column gives back: `100 × k / t`, rounded as stored.
fn ratio_value(k: i64, t: i64) -> f64 {
    round_metric(100.0 * k as f64 / t as f64, 2)
}

/// `k` with `ratio_value(k, t) == v` (bit for bit), if there is one.
fn ratio_numerator(v: f64, t: i64) -> Option<i64> {
    if !v.is_finite() || v.abs() >= 1e13 {
        return None;
    }
    let k = (v * t as f64 / 100.0).round() as i64;
    (ratio_value(k, t).to_bits() == v.to_bits()).then_some(k)
}

/// One series of a metric span as the codec sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SpanSeries {
    /// Its id (`series` table).
    pub(crate) id: i64,
    /// Series of one group (non-zero) are shares of, or rates over, one shared whole at each
    /// instant (a CPU's clock ticks, the interval of the reads): their values may be coded
    /// as ratios `100 × k / t` with `t` stored once for the group.
    pub(crate) group: u32,
    /// `(time_ns, value)` in time order, times ≥ the span's start.
    pub(crate) values: Vec<(i64, f64)>,
}

/// Encodes a metric span: every series of one host over one span of time, columns coded
/// with adaptive range coding (see the top of this file).
pub(crate) fn encode_span(start_ns: i64, series: &[SpanSeries]) -> Vec<u8> {
    // The shared time column: every time (in ms) of any series, each as many times as the
    // most values one series has at it.
    let ms = |t: i64| (t - start_ns) / METRIC_TIME_UNIT_NS;
    let mut times: Vec<i64> = Vec::new();
    {
        let mut all: Vec<(i64, usize)> = Vec::new();
        for s in series {
            for w in s.values.chunk_by(|a, b| ms(a.0) == ms(b.0)) {
                all.push((ms(w[0].0), w.len()));
            }
        }
        all.sort_unstable();
        for w in all.chunk_by(|a, b| a.0 == b.0) {
            let n = w.iter().map(|x| x.1).max().unwrap_or(1);
            times.extend(std::iter::repeat_n(w[0].0, n));
        }
    }
    // Each series' values → indexes into the time column.
    let index_of = |s: &SpanSeries| -> Vec<usize> {
        let mut out = Vec::with_capacity(s.values.len());
        let mut prev: Option<(i64, usize)> = None;
        for &(t, _) in &s.values {
            let t = ms(t);
            let i = match prev {
                Some((pt, pi)) if pt == t => pi + 1,
                _ => times.partition_point(|&x| x < t),
            };
            out.push(i);
            prev = Some((t, i));
        }
        out
    };
    let indexes: Vec<Vec<usize>> = series.iter().map(index_of).collect();
    // Denominators: one column per group, found instant by instant.
    let mut groups: Vec<u32> = series.iter().map(|s| s.group).filter(|&g| g != 0).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut dens: Vec<Vec<i64>> = Vec::new();
    for &g in &groups {
        let mut at: Vec<Vec<f64>> = vec![Vec::new(); times.len()];
        for (m, s) in series.iter().enumerate().filter(|(_, s)| s.group == g) {
            for (j, &i) in indexes[m].iter().enumerate() {
                at[i].push(s.values[j].1);
            }
        }
        dens.push(find_denominators(&at));
    }
    let mut out = vec![SPAN_FORMAT_1];
    put_varint(&mut out, times.len() as u128);
    let (mut last_t, mut ref_dt) = (0i64, 0i64);
    let time_codes = code_ints(times.iter().enumerate().map(|(i, &t)| {
        let dt = t - last_t;
        let code = dt - ref_dt;
        if i == 1 {
            ref_dt = dt;
        }
        last_t = t;
        code
    }));
    put_varint(&mut out, time_codes.len() as u128);
    out.extend_from_slice(&time_codes);
    put_varint(&mut out, dens.len() as u128);
    for d in &dens {
        let mut last = 0i64;
        let col = code_ints(d.iter().map(|&t| {
            let code = t - last;
            last = t;
            code
        }));
        put_varint(&mut out, col.len() as u128);
        out.extend_from_slice(&col);
    }
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&i| series[i].id);
    let mut cols: Vec<Vec<u8>> = Vec::with_capacity(series.len());
    for &i in &order {
        let s = &series[i];
        let den = groups.binary_search(&s.group).ok().filter(|_| s.group != 0);
        cols.push(encode_column(s, &indexes[i], den.map(|d| (d, &dens[d][..]))));
    }
    put_varint(&mut out, series.len() as u128);
    let mut last_id = 0i64;
    for (&i, col) in order.iter().zip(&cols) {
        out_zig(&mut out, i128::from(series[i].id) - i128::from(last_id));
        last_id = series[i].id;
        put_varint(&mut out, col.len() as u128);
    }
    for col in &cols {
        out.extend_from_slice(col);
    }
    out
}

/// The denominator of each instant (0: none fits, or no member has a value), given the
/// values of a group's members at each instant: the previous instant's when it fits, else
/// the nearest that fits within [`DENOMINATOR_WINDOW`] of it, else a whole multiple of 100
/// (ticks of whole seconds). The search is bounded: a group that fits nothing costs little.
fn find_denominators(at: &[Vec<f64>]) -> Vec<i64> {
    let fits = |vals: &[f64], t: i64| vals.iter().all(|&v| ratio_numerator(v, t).is_some());
    let mut out = Vec::with_capacity(at.len());
    let mut prev = 100i64;
    for vals in at {
        if vals.is_empty() {
            out.push(0);
            continue;
        }
        // Outward from the previous one: prev, prev + 1, prev - 1, prev + 2, ...
        let near = (0..=DENOMINATOR_WINDOW)
            .flat_map(|d| [prev + d, prev - d].into_iter().take(if d == 0 { 1 } else { 2 }))
            .filter(|&t| (1..=MAX_DENOMINATOR).contains(&t));
        let whole = (1..=MAX_DENOMINATOR / 100).map(|s| s * 100);
        let found = near.chain(whole).find(|&t| fits(vals, t)).unwrap_or(0);
        if found > 0 {
            prev = found;
        }
        out.push(found);
    }
    out
}

/// A value column from its mode byte on: scaled decimals or ratios, delta-coded or plain,
/// divided by their common step; `den` the index of the denominator column of ratios.
fn value_codes(mode: u8, ints: &[i64], den: Option<usize>) -> Vec<u8> {
    let plain = mode & PLAIN_FLAG != 0;
    let mut step = 0u64;
    let mut last = 0i64;
    for &s in ints {
        step = gcd(step, if plain { s.unsigned_abs() } else { s.abs_diff(last) });
        last = s;
    }
    let mut out = Vec::with_capacity(ints.len() / 2 + 16);
    if step > 1 {
        out.push(mode | STEP_FLAG);
        put_varint(&mut out, u128::from(step));
    } else {
        step = 1;
        out.push(mode);
    }
    if let Some(d) = den {
        put_varint(&mut out, d as u128);
    }
    let step = step as i64;
    let mut last = 0i64;
    out.extend(code_ints(ints.iter().map(|&s| {
        let d = if plain { s } else { s - last };
        last = s;
        d / step
    })));
    out
}

/// One series' column: value count, the time indexes it has (runs), then its values in the
/// smallest of the modes that give every value back exactly.
fn encode_column(s: &SpanSeries, idx: &[usize], den: Option<(usize, &[i64])>) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, s.values.len() as u128);
    // Runs of consecutive indexes: (gap from the end of the previous run, length).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut end = 0usize;
    for &i in idx {
        match runs.last_mut() {
            Some(r) if i == end => r.1 += 1,
            _ => runs.push((i - end, 1)),
        }
        end = i + 1;
    }
    put_varint(&mut out, runs.len() as u128);
    for (gap, len) in runs {
        put_varint(&mut out, gap as u128);
        put_varint(&mut out, len as u128);
    }
    let mut best: Option<Vec<u8>> = None;
    let mut consider = |c: Vec<u8>| {
        if best.as_ref().is_none_or(|b| c.len() < b.len()) {
            best = Some(c);
        }
    };
    if let Some(d) = (0..=3u8).find(|&d| s.values.iter().all(|&(_, v)| scaled(v, d).is_some())) {
        let ints: Vec<i64> = s.values.iter().map(|&(_, v)| scaled(v, d).unwrap_or(0)).collect();
        consider(value_codes(d, &ints, None));
        consider(value_codes(d | PLAIN_FLAG, &ints, None));
    }
    if let Some((d, ts)) = den {
        let ks: Option<Vec<i64>> = idx
            .iter()
            .zip(&s.values)
            .map(|(&i, &(_, v))| ts.get(i).filter(|&&t| t > 0).and_then(|&t| ratio_numerator(v, t)))
            .collect();
        if let Some(ks) = ks {
            consider(value_codes(RATIO_MODE, &ks, Some(d)));
            consider(value_codes(RATIO_MODE | PLAIN_FLAG, &ks, Some(d)));
        }
    }
    match best {
        Some(c) => out.extend_from_slice(&c),
        None => {
            out.push(RAW_VALUES);
            for &(_, v) in &s.values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    out
}

/// Most values a coded column of `bytes` bytes can hold (a value costs at least 0.15 bits).
fn max_coded(bytes: usize) -> usize {
    bytes.saturating_mul(64)
}

/// A span's header: its times, and where each series' column is.
struct SpanHeader<'a> {
    times: Vec<i64>,
    /// Each denominator column's bytes.
    dens: Vec<&'a [u8]>,
    /// (series id, column bytes), ids ascending.
    cols: Vec<(i64, &'a [u8])>,
}

fn span_header(blob: &[u8], start_ns: i64) -> Result<SpanHeader<'_>, String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty metric span".into());
    };
    if format != SPAN_FORMAT_1 {
        return Err(format!("unknown metric span format {format}"));
    }
    let mut r = Reader::new(body);
    let n = r.u64()?;
    let len = r.count(1)?;
    let coded = r.bytes(len)?;
    if n > max_coded(len) as u64 {
        return Err(format!("{n} times in {len} bytes"));
    }
    let mut times = Vec::with_capacity(n as usize);
    let (mut last_t, mut ref_dt) = (0i64, 0i64);
    let mut i = 0;
    decode_ints(coded, n as usize, |code| {
        let dt = ref_dt.checked_add(code).ok_or("time out of range")?;
        if i == 1 {
            ref_dt = dt;
        }
        i += 1;
        let t = last_t.checked_add(dt).ok_or("time out of range")?;
        last_t = t;
        times.push(
            t.checked_mul(METRIC_TIME_UNIT_NS)
                .and_then(|v| v.checked_add(start_ns))
                .ok_or("time out of range")?,
        );
        Ok(())
    })?;
    let n_dens = r.count(1)?;
    let mut dens = Vec::with_capacity(n_dens);
    for _ in 0..n_dens {
        let len = r.count(1)?;
        dens.push(r.bytes(len)?);
    }
    let n_cols = r.count(2)?;
    let mut heads = Vec::with_capacity(n_cols);
    let mut id = 0i64;
    for _ in 0..n_cols {
        let d = r.i64z()?;
        if d <= 0 && !heads.is_empty() {
            return Err("series ids out of order".into());
        }
        id = id.checked_add(d).ok_or("series id out of range")?;
        let len = r.count(1)?;
        heads.push((id, len));
    }
    let mut cols = Vec::with_capacity(n_cols);
    for (id, len) in heads {
        cols.push((id, r.bytes(len)?));
    }
    r.done()?;
    Ok(SpanHeader { times, dens, cols })
}

impl SpanHeader<'_> {
    /// The values of the column `col`, appended to `out`.
    fn column(&self, col: &[u8], out: &mut Vec<(i64, f64)>) -> Result<(), String> {
        let mut r = Reader::new(col);
        let n = r.u64()?;
        if n > self.times.len() as u64 {
            return Err(format!("{n} values of {} times", self.times.len()));
        }
        let n = n as usize;
        let n_runs = r.count(2)?;
        let mut idx: Vec<usize> = Vec::with_capacity(n);
        let mut end = 0usize;
        for _ in 0..n_runs {
            let gap = r.u64()?;
            let len = r.u64()?;
            let from = usize::try_from(gap).ok().and_then(|g| end.checked_add(g));
            let to = from.zip(usize::try_from(len).ok()).and_then(|(f, l)| f.checked_add(l));
            let (Some(from), Some(to)) = (from, to) else { return Err("index out of range".into()) };
            if len == 0 || to > self.times.len() || idx.len() + (to - from) > n {
                return Err(format!("a run of {len} values at {from} of {} times", self.times.len()));
            }
            idx.extend(from..to);
            end = to;
        }
        if idx.len() != n {
            return Err(format!("{} values in runs, {n} said", idx.len()));
        }
        let mode = r.bytes(1)?[0];
        out.reserve(n);
        if mode == RAW_VALUES {
            for &i in &idx {
                let v = f64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| "short value")?);
                out.push((self.times[i], v));
            }
            return r.done();
        }
        if mode & !(RATIO_MODE | PLAIN_FLAG | STEP_FLAG | 3) != 0 || (mode & RATIO_MODE != 0 && mode & 3 != 0)
        {
            return Err(format!("unknown value mode {mode}"));
        }
        let step = if mode & STEP_FLAG != 0 {
            i64::try_from(r.u64()?).map_err(|_| "value step out of range")?
        } else {
            1
        };
        let plain = mode & PLAIN_FLAG != 0;
        let mut dens = Vec::new();
        if mode & RATIO_MODE != 0 {
            let d = r.u64()?;
            let col = usize::try_from(d)
                .ok()
                .and_then(|d| self.dens.get(d))
                .ok_or_else(|| format!("denominator column {d} of {}", self.dens.len()))?;
            let mut t = 0i64;
            dens.reserve(self.times.len());
            decode_ints(col, self.times.len(), |code| {
                t = t.checked_add(code).ok_or("denominator out of range")?;
                dens.push(t);
                Ok(())
            })?;
        }
        let f = 10f64.powi(i32::from(mode & 3));
        let coded = &col[col.len() - r.left()..];
        let mut last = 0i64;
        let mut j = 0;
        decode_ints(coded, n, |code| {
            let d = code.checked_mul(step).ok_or("value out of range")?;
            let s = if plain { d } else { last.checked_add(d).ok_or("value out of range")? };
            last = s;
            let i = idx[j];
            j += 1;
            let v = if mode & RATIO_MODE != 0 {
                let t = dens[i];
                if t < 1 {
                    return Err(format!("denominator {t} at time {i}"));
                }
                ratio_value(s, t)
            } else {
                s as f64 / f
            };
            out.push((self.times[i], v));
            Ok(())
        })
    }
}

/// Bits of an adaptive probability (LZMA's range coder).
const PROB_BITS: u32 = 11;
/// How fast a probability adapts (a shift).
const PROB_MOVE: u32 = 3;
const PROB_INIT: u16 = 1 << (PROB_BITS - 1);
/// Bits below a number's leading one coded as a bit tree (the rest one context each).
const TOP_BITS: u32 = 3;
const RANGE_TOP: u32 = 1 << 24;

/// A binary range encoder (as LZMA's): adaptive probabilities, carries handled with a
/// cached byte.
struct RangeEncoder {
    low: u64,
    range: u32,
    cache: u8,
    cache_size: u64,
    out: Vec<u8>,
}

impl RangeEncoder {
    fn new() -> RangeEncoder {
        RangeEncoder { low: 0, range: u32::MAX, cache: 0, cache_size: 1, out: Vec::new() }
    }

    fn shift_low(&mut self) {
        if self.low < 0xff00_0000 || self.low > 0xffff_ffff {
            let carry = (self.low >> 32) as u8;
            let mut c = self.cache;
            loop {
                self.out.push(c.wrapping_add(carry));
                c = 0xff;
                self.cache_size -= 1;
                if self.cache_size == 0 {
                    break;
                }
            }
            self.cache = (self.low >> 24) as u8;
        }
        self.cache_size += 1;
        self.low = (self.low & 0x00ff_ffff) << 8;
    }

    fn bit(&mut self, p: &mut u16, bit: bool) {
        let bound = (self.range >> PROB_BITS) * u32::from(*p);
        if bit {
            self.low += u64::from(bound);
            self.range -= bound;
            *p -= *p >> PROB_MOVE;
        } else {
            self.range = bound;
            *p += ((1 << PROB_BITS) - *p) >> PROB_MOVE;
        }
        while self.range < RANGE_TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    fn finish(mut self) -> Vec<u8> {
        for _ in 0..5 {
            self.shift_low();
        }
        self.out
    }
}

/// The decoder of [`RangeEncoder`]; reading past the end of its bytes is an error.
struct RangeDecoder<'a> {
    buf: &'a [u8],
    pos: usize,
    range: u32,
    code: u32,
}

impl<'a> RangeDecoder<'a> {
    fn new(buf: &'a [u8]) -> Result<RangeDecoder<'a>, String> {
        if buf.len() < 5 || buf[0] != 0 {
            return Err("a coded column too short".into());
        }
        let code = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
        Ok(RangeDecoder { buf, pos: 5, range: u32::MAX, code })
    }

    #[inline]
    fn bit(&mut self, p: &mut u16) -> Result<bool, String> {
        let bound = (self.range >> PROB_BITS) * u32::from(*p);
        let bit = if self.code < bound {
            self.range = bound;
            *p += ((1 << PROB_BITS) - *p) >> PROB_MOVE;
            false
        } else {
            self.code -= bound;
            self.range -= bound;
            *p -= *p >> PROB_MOVE;
            true
        };
        while self.range < RANGE_TOP {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err("a coded column ends early".into());
            };
            self.pos += 1;
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(b);
        }
        Ok(bit)
    }

    fn done(&self) -> Result<(), String> {
        if self.pos != self.buf.len() {
            return Err(format!("{} bytes left over in a coded column", self.buf.len() - self.pos));
        }
        Ok(())
    }
}

/// Classes of the previous number's length that choose the contexts of the next length.
const LEN_CLASSES: usize = 4;

/// The adaptive model of a column of integers: each is zigzagged, then coded as its bit
/// length (a bit tree, in the context of the previous one's length), its top three bits
/// below the leading one (a bit tree per length), and the rest (a context per length and
/// position).
struct IntModel {
    len: [[u16; 128]; LEN_CLASSES],
    top: [[u16; 1 << TOP_BITS]; 65],
    low: [[u16; 64]; 65],
    prev_len: u32,
}

impl IntModel {
    fn new() -> Box<IntModel> {
        Box::new(IntModel {
            len: [[PROB_INIT; 128]; LEN_CLASSES],
            top: [[PROB_INIT; 1 << TOP_BITS]; 65],
            low: [[PROB_INIT; 64]; 65],
            prev_len: 0,
        })
    }

    fn class(&self) -> usize {
        ((self.prev_len as usize + 1) / 4).min(LEN_CLASSES - 1)
    }

    fn encode(&mut self, rc: &mut RangeEncoder, v: i64) {
        let z = ((v << 1) ^ (v >> 63)) as u64;
        let n = 64 - z.leading_zeros();
        let c = self.class();
        let mut node = 1usize;
        for i in (0..7).rev() {
            let b = (n >> i) & 1 == 1;
            rc.bit(&mut self.len[c][node], b);
            node = (node << 1) | usize::from(b);
        }
        self.prev_len = n;
        if n <= 1 {
            return;
        }
        let below = n - 1;
        let top = below.min(TOP_BITS);
        let mut node = 1usize;
        for i in 0..top {
            let b = (z >> (below - 1 - i)) & 1 == 1;
            rc.bit(&mut self.top[n as usize][node], b);
            node = (node << 1) | usize::from(b);
        }
        for i in top..below {
            let b = (z >> (below - 1 - i)) & 1 == 1;
            rc.bit(&mut self.low[n as usize][i as usize], b);
        }
    }

    #[inline]
    fn decode(&mut self, rc: &mut RangeDecoder<'_>) -> Result<i64, String> {
        let c = self.class();
        let mut node = 1usize;
        for _ in 0..7 {
            node = (node << 1) | usize::from(rc.bit(&mut self.len[c][node])?);
        }
        let n = (node - 128) as u32;
        if n > 64 {
            return Err(format!("a number of {n} bits"));
        }
        self.prev_len = n;
        let z = if n <= 1 {
            u64::from(n)
        } else {
            let below = n - 1;
            let top = below.min(TOP_BITS);
            let mut node = 1usize;
            for _ in 0..top {
                node = (node << 1) | usize::from(rc.bit(&mut self.top[n as usize][node])?);
            }
            let mut z = 1u64 << top | (node as u64 - (1 << top));
            for i in top..below {
                z = (z << 1) | u64::from(rc.bit(&mut self.low[n as usize][i as usize])?);
            }
            z
        };
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }
}

/// Codes a column of integers with a fresh model.
fn code_ints(values: impl Iterator<Item = i64>) -> Vec<u8> {
    let mut rc = RangeEncoder::new();
    let mut m = IntModel::new();
    for v in values {
        m.encode(&mut rc, v);
    }
    rc.finish()
}

/// Decodes `n` integers coded by [`code_ints`] (all of `buf`).
fn decode_ints(buf: &[u8], n: usize, mut f: impl FnMut(i64) -> Result<(), String>) -> Result<(), String> {
    let mut rc = RangeDecoder::new(buf)?;
    let mut m = IntModel::new();
    for _ in 0..n {
        f(m.decode(&mut rc)?)?;
    }
    rc.done()
}

/// `(time_ns, value)`s of one series.
pub(crate) type Values = Vec<(i64, f64)>;

/// The values of one series in a span blob, appended to `out` (none when it has none).
pub(crate) fn decode_span_series(
    blob: &[u8],
    start_ns: i64,
    id: i64,
    out: &mut Vec<(i64, f64)>,
) -> Result<(), String> {
    let h = span_header(blob, start_ns)?;
    if let Ok(i) = h.cols.binary_search_by_key(&id, |c| c.0) {
        h.column(h.cols[i].1, out)?;
    }
    Ok(())
}

/// Every series of a span blob: (id, values).
pub(crate) fn decode_span(blob: &[u8], start_ns: i64) -> Result<Vec<(i64, Values)>, String> {
    let h = span_header(blob, start_ns)?;
    let mut out = Vec::with_capacity(h.cols.len());
    for &(id, col) in &h.cols {
        let mut v = Vec::new();
        h.column(col, &mut v)?;
        out.push((id, v));
    }
    Ok(out)
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
    /// The real metric stream of `bench/data` (59 series at 1 Hz, 13 minutes): series id,
    /// ratio group (as the store gives them) and values, as stored.
    fn real_stream() -> Vec<(String, String, SpanSeries)> {
        use std::collections::BTreeMap;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/data/metrics-1hz.txt.zst");
        let raw = zstd::stream::decode_all(std::fs::File::open(path).unwrap()).unwrap();
        let start = 1_700_000_000_000_000_000i64;
        let mut by: BTreeMap<(String, String), Vec<(i64, f64)>> = BTreeMap::new();
        let mut ids: Vec<(String, String)> = Vec::new();
        for line in std::str::from_utf8(&raw).unwrap().lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let key = (f[1].to_string(), if f[2] == "-" { String::new() } else { f[2].to_string() });
            if !by.contains_key(&key) {
                ids.push(key.clone());
            }
            let t = start + f[0].parse::<i64>().unwrap() / 1_000_000 * 1_000_000;
            by.entry(key).or_default().push((t, round_metric(f[3].parse().unwrap(), 2)));
        }
        let mut groups: Vec<String> = Vec::new();
        ids.into_iter()
            .enumerate()
            .map(|(i, (name, label))| {
                let g = crate::sqlite::ratio_group(&name, &label);
                let group = if g.is_empty() {
                    0
                } else {
                    groups.iter().position(|x| *x == g).unwrap_or_else(|| {
                        groups.push(g);
                        groups.len() - 1
                    }) as u32
                        + 1
                };
                let values = by[&(name.clone(), label.clone())].clone();
                (name, label, SpanSeries { id: i as i64 + 1, group, values })
            })
            .collect()
    }

    fn assert_same(name: &str, want: &[(i64, f64)], got: &[(i64, f64)]) {
        assert_eq!(want.len(), got.len(), "{name}");
        for (a, b) in want.iter().zip(got) {
            assert_eq!(a.0, b.0, "{name}");
            assert_eq!(a.1.to_bits(), b.1.to_bits(), "{name} at {}: {} != {}", a.0, a.1, b.1);
        }
    }

    #[test]
    fn metric_spans_of_real_values_round_trip_exactly_and_small() {
        let stream = real_stream();
        let start = 1_700_000_000_000_000_000i64;
        let span = 600 * 1_000_000_000i64;
        let (mut bytes, mut values) = (0, 0);
        for from in [start, start + span] {
            let series: Vec<SpanSeries> = stream
                .iter()
                .map(|(_, _, s)| SpanSeries {
                    values: s.values.iter().copied().filter(|v| v.0 >= from && v.0 < from + span).collect(),
                    ..s.clone()
                })
                .filter(|s| !s.values.is_empty())
                .collect();
            let blob = encode_span(from, &series);
            bytes += blob.len();
            values += series.iter().map(|s| s.values.len()).sum::<usize>();
            let back = decode_span(&blob, from).unwrap();
            assert_eq!(back.len(), series.len());
            for ((name, label, _), (s, (id, got))) in stream.iter().zip(series.iter().zip(&back)) {
                assert_eq!(s.id, *id);
                assert_same(&format!("{name} {label}"), &s.values, got);
                let mut one = Vec::new();
                decode_span_series(&blob, from, s.id, &mut one).unwrap();
                assert_same(&format!("{name} {label} alone"), &s.values, &one);
            }
        }
        // Shares and rates as whole counts, one time column: well under the 1.55 B a value
        // of one block per series.
        let per_value = bytes as f64 / values as f64;
        assert!(per_value < 0.7, "{per_value:.3} B/value ({bytes} B for {values} values)");
    }

    #[test]
    fn metric_spans_keep_odd_values_gaps_and_repeated_times() {
        let start = 1_700_000_000_000_000_000i64;
        let sec = 1_000_000_000i64;
        let odd = [f64::NAN, f64::INFINITY, -0.0, 1e300, 12.345, 0.1 + 0.2, -3.25, 5e-324];
        let series = vec![
            // Odd values (raw f64s).
            SpanSeries {
                id: 3,
                group: 0,
                values: (0..40).map(|i| (start + i * sec, odd[i as usize % 8])).collect(),
            },
            // Every other second, two values at one time, then a gap.
            SpanSeries {
                id: 7,
                group: 1,
                values: vec![
                    (start, 50.0),
                    (start, 25.0),
                    (start + 2 * sec, 33.33),
                    (start + 30 * sec + 5_000_000, 100.0),
                ],
            },
            // A group whose values fit no denominator at some instants.
            SpanSeries {
                id: 9,
                group: 1,
                values: (0..40)
                    .map(|i| (start + i * sec, [12.34, 56.78, 0.01, 99.99][i as usize % 4]))
                    .collect(),
            },
            // Page-sized moves of a byte count.
            SpanSeries {
                id: 20,
                group: 0,
                values: (0..40)
                    .map(|i| (start + i * sec, (1_000_000_000 + (i * 37 % 11) * 4096) as f64))
                    .collect(),
            },
        ];
        let blob = encode_span(start, &series);
        let back = decode_span(&blob, start).unwrap();
        for (s, (id, got)) in series.iter().zip(&back) {
            assert_eq!(s.id, *id);
            assert_same(&format!("series {id}"), &s.values, got);
        }
        let mut none = Vec::new();
        decode_span_series(&blob, start, 4, &mut none).unwrap();
        assert!(none.is_empty());
        // Every truncation, and every byte changed, is an error or another value, never a
        // panic; a truncation is always an error.
        for cut in 0..blob.len() {
            assert!(decode_span(&blob[..cut], start).is_err(), "cut at {cut}");
        }
        for i in 0..blob.len() {
            let mut b = blob.clone();
            b[i] ^= 0x5a;
            let _ = decode_span(&b, start);
        }
    }

    #[test]
    fn ratios_are_exact_or_refused() {
        // 100 × 93 / 201 as a share: found back from its rounded value.
        let v = round_metric(100.0 * 93.0 / 201.0, 2);
        let k = ratio_numerator(v, 201).unwrap();
        assert_eq!(ratio_value(k, 201).to_bits(), v.to_bits());
        assert_eq!(ratio_numerator(12.34, 10_000), Some(1234));
        assert!(ratio_numerator(12.34, 100).is_none());
        assert!(ratio_numerator(f64::NAN, 100).is_none());
        assert!(ratio_numerator(33.34, 3).is_none());
    }
}
