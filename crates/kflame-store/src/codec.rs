//! The shared pieces of the store's blob encodings (varints, zigzag, a reader that checks
//! every length) and the metric encodings: metric spans, and the metric blocks of older
//! files. Profile bucket blobs are in `bucket.rs`.
//!
//! A metric span (table `metric_spans`, schema 4: every series of one host over one block,
//! or over 10 minutes, then an hour, once its blocks are merged) is a format byte (2) then:
//!
//! ```text
//! varint n_times, varint len, len bytes   the shared time column: ms from the start, each
//!                                         delta minus the first delta (coded, see below)
//! varint n_dens, n × (varint len, bytes)  denominator columns: one per ratio group, then
//!                                         one per constant denominator:
//!   u8 mode (0x40: not delta-coded), sum, coded: t − sum at each time (0: none fits)
//! varint n_series, n × (zigzag varint id delta, varint len)   ids ascending
//! columns, one per series, of the lengths above:
//!   varint n, varint n_runs, n_runs × (varint gap, varint len)   the time indexes it has
//!   u8 mode, [varint step], [varint scale, sum], [sum], then n coded integers:
//!     0-3        decimals: value × 10^d, delta-coded        | 0x40: not delta-coded
//!     0x80       ratios: k with value = round2(100 k / t),   | 0x20: divided by the step
//!                t = scale × the sum (0 / 0 is 0)
//!                                                           | 0x10: predicted: the
//!                integers are the coded ones plus the sum that follows
//!     0xff       raw f64 LE (no integer form), not coded
//! sum: varint n, n × varint (lane << 1 | subtracted)
//! ```
//!
//! A lane is a column of integers at each time: the denominator columns, then the series in
//! the table's order (a series' lane is its integers: `k`, or `value × 10^d`; 0 where it has
//! no value, and for raw values). A coded column of zeros has no bytes.
//!
//! A ratio group is a set of series whose values at one instant are whole counts over one
//! shared whole: a CPU's shares of its clock ticks (`100 × ticks / total ticks`), the rates
//! over the reads' interval (`count / secs`, `t` = hundredths of a second). The encoder finds
//! `t` instant by instant (the predicted one, the previous one, the nearest, a whole
//! multiple of 100). The store names the relations the watcher's formulas make likely
//! (`span_series`): the whole machine's ticks and shares about the sums of its
//! CPUs', `cpu.idle` as `t − cpu − cpu.iowait`, `io.iops` about reads plus writes, awaits
//! over the counts of requests, `io.util` and `io.queue` over the interval's ms,
//! `mem.available` as `mem.available_bytes` over a constant (the memory's total, found
//! where the intervals each value allows meet). Each is a candidate: a form is kept only
//! when every value comes back bit for bit, and a predicted column codes the difference, so
//! a relation that holds costs nothing and one off by a tick costs little. Of the exact
//! forms, the smallest is kept (a series others are predicted from keeps its counts unless
//! they cost over an eighth more); else raw values. Series are coded after the ones their
//! relations refer to; a decoder follows at most 8 relations deep (a cycle in a damaged
//! blob is an error).
//!
//! "Coded" integers use an adaptive binary range coder (LZMA's): each zigzagged integer as
//! its bit length (a 4-bit tree in the context of the previous length, 15 and more with 6
//! bits more), the three bits below its leading one (a bit tree per length) and the rest
//! (a context per length and bit). A steady column costs a few bytes, and one series is
//! decoded with only what it refers to (its column, the times, its denominators, the lanes
//! of its prediction; a lane needs no denominator). Every count read is checked against
//! the bytes left (a coded value costs at least 0.02 bits; reading past a column's end is
//! an error).
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
const SPAN_FORMAT: u8 = 2;
/// Value mode of a span column: values not delta-coded (each on its own).
const PLAIN_FLAG: u8 = 0x40;
/// Value mode of a span column: ratios `100 × k / t` of a denominator (a sum of lanes).
const RATIO_MODE: u8 = 0x80;
/// Value mode of a span column: its integers are the coded ones plus a sum of lanes.
const PREDICTED_FLAG: u8 = 0x10;
/// Largest denominator of a group of ratios found by search (clock ticks of a second of 655
/// CPUs, hundredths of a second of a rate's interval).
const MAX_DENOMINATOR: i64 = 1 << 16;
/// How far from the previous instant's denominator the next is looked for.
const DENOMINATOR_WINDOW: i64 = 256;
/// Longest chain of relations a decoder follows (the writer makes at most 3): a cycle in a
/// damaged blob ends here.
const MAX_DEPTH: u32 = 8;

pub(crate) use crate::round_metric;

/// The value a ratio column gives back: `100 × k / t`, rounded as stored; `0 / 0` is 0 (an
/// await with no request). `None` for a negative `t` or `k / 0` (damaged).
fn ratio_value(k: i64, t: i64) -> Option<f64> {
    match t {
        1.. => Some(round_metric(100.0 * k as f64 / t as f64, 2)),
        0 if k == 0 => Some(0.0),
        _ => None,
    }
}

/// Whether `ratio_value(k, t)` is `v`, bit for bit.
fn ratio_fits(k: i64, t: i64, v: f64) -> bool {
    ratio_value(k, t).is_some_and(|r| r.to_bits() == v.to_bits())
}

/// `k` with `ratio_value(k, t) == v` (bit for bit), if there is one.
fn ratio_numerator(v: f64, t: i64) -> Option<i64> {
    if !v.is_finite() || v.abs() >= 1e13 || t < 0 {
        return None;
    }
    let k = if t == 0 { 0 } else { (v * t as f64 / 100.0).round() as i64 };
    ratio_fits(k, t, v).then_some(k)
}

/// A column of integers a relation refers to: the denominators of a ratio group, or a
/// series' integers (`k` of ratios, `value × 10^d` of decimals; 0 where it has no value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The denominator column of a ratio group.
    Den(u32),
    /// A series, by id.
    Series(i64),
}

/// A sum of lanes at each instant, each added (`false`) or subtracted (`true`).
pub(crate) type LaneSum = Vec<(Lane, bool)>;

/// Sums of other groups' denominators a group's may equal or come near: (group, sum).
pub(crate) type GroupPreds = Vec<(u32, LaneSum)>;

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
    /// Other denominators its values may be ratios of: `scale × sum` (an await over the
    /// count of requests, a utilisation over the interval).
    pub(crate) dens: Vec<(LaneSum, i64)>,
    /// Sums of lanes its integers may equal or come near (a total as the sum of the CPUs',
    /// IOs as reads plus writes): the column then codes the difference.
    pub(crate) preds: Vec<LaneSum>,
    /// A series whose integers may be this one's numerators over one constant denominator
    /// the encoder finds (`mem.available` as `mem.available_bytes` over the memory's total).
    pub(crate) over_constant: Option<i64>,
}

/// A sum of lanes as the blob numbers them (den columns first, then series columns in the
/// order of the table): (lane, subtracted).
type Refs = Vec<(usize, bool)>;

/// The lanes known so far (den columns, then series columns), `None` where not yet coded.
type Lanes = [Option<Vec<i64>>];

/// A prediction: its lanes, and their sum at each time.
type Prediction<'a> = (&'a [(usize, bool)], &'a [i64]);

/// What the encoder of a column knows of the others.
struct Known<'a> {
    /// Number of times.
    nt: usize,
    /// The ratio groups, in the order of their den columns.
    groups: &'a [u32],
    lanes: &'a Lanes,
    /// A sum of lanes as the blob numbers them, when every lane is known.
    resolve: &'a dyn Fn(&Lanes, &LaneSum) -> Option<Refs>,
}

fn put_refs(out: &mut Vec<u8>, refs: &[(usize, bool)]) {
    put_varint(out, refs.len() as u128);
    for &(l, neg) in refs {
        put_varint(out, ((l as u128) << 1) | u128::from(neg));
    }
}

/// The sum of `refs` at each of `n` instants (wrapping: a damaged blob gives other values,
/// never a panic; the writer's sums are small).
fn sum_lanes(lanes: &[Option<Vec<i64>>], refs: &[(usize, bool)], n: usize) -> Vec<i64> {
    let mut out = vec![0i64; n];
    for &(l, neg) in refs {
        if let Some(Some(v)) = lanes.get(l) {
            for (o, &x) in out.iter_mut().zip(v) {
                *o = if neg { o.wrapping_sub(x) } else { o.wrapping_add(x) };
            }
        }
    }
    out
}

/// Codes a column of integers; all zeros (or none) cost no bytes.
fn code_col(values: &[i64]) -> Vec<u8> {
    if values.iter().all(|&v| v == 0) { Vec::new() } else { code_ints(values.iter().copied()) }
}

/// Decodes `n` integers of [`code_col`].
fn decode_col(buf: &[u8], n: usize, mut f: impl FnMut(i64) -> Result<(), String>) -> Result<(), String> {
    if buf.is_empty() {
        for _ in 0..n {
            f(0)?;
        }
        return Ok(());
    }
    decode_ints(buf, n, f)
}

/// Encodes a metric span: every series of one host over one span of time, columns coded
/// with adaptive range coding, related columns as their differences (see the top of this
/// file). `group_preds`: sums of other groups' denominators a group's may equal or come
/// near (the whole machine's ticks as the sum of its CPUs').
pub(crate) fn encode_span(start_ns: i64, series: &[SpanSeries], group_preds: &[(u32, LaneSum)]) -> Vec<u8> {
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
    let nt = times.len();
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
    let mut groups: Vec<u32> = series.iter().map(|s| s.group).filter(|&g| g != 0).collect();
    groups.sort_unstable();
    groups.dedup();
    // Constant denominators, one per series that may have one, after the groups'.
    let constants: Vec<usize> = (0..series.len()).filter(|&i| series[i].over_constant.is_some()).collect();
    let n_dens = groups.len() + constants.len();
    // The table's order (ids ascending), and each series' lane.
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&i| series[i].id);
    let mut lane_of_series = vec![0usize; series.len()];
    for (p, &i) in order.iter().enumerate() {
        lane_of_series[i] = n_dens + p;
    }
    let lane_of = |l: Lane| -> Option<usize> {
        match l {
            Lane::Den(g) => groups.binary_search(&g).ok(),
            Lane::Series(id) => order.binary_search_by_key(&id, |&i| series[i].id).ok().map(|p| n_dens + p),
        }
    };
    let mut lanes: Vec<Option<Vec<i64>>> = vec![None; n_dens + series.len()];
    // A sum whose lanes are all known by now.
    let resolve = |lanes: &[Option<Vec<i64>>], sum: &LaneSum| -> Option<Refs> {
        let refs: Option<Refs> = sum
            .iter()
            .map(|&(l, neg)| lane_of(l).filter(|&l| lanes[l].is_some()).map(|l| (l, neg)))
            .collect();
        refs.filter(|r| !r.is_empty())
    };
    // Denominators: one column per group, found instant by instant; groups with a
    // prediction after the others (a prediction refers only to groups without one).
    let mut den_cols: Vec<Vec<u8>> = vec![vec![0, 0]; n_dens];
    let predicted = |g: u32| group_preds.iter().find(|p| p.0 == g).map(|p| &p.1);
    for pass in 0..2 {
        for (gi, &g) in groups.iter().enumerate() {
            if usize::from(predicted(g).is_some()) != pass {
                continue;
            }
            let refs = predicted(g).and_then(|p| resolve(&lanes, p)).unwrap_or_default();
            let hint = (!refs.is_empty()).then(|| sum_lanes(&lanes, &refs, nt));
            let mut at: Vec<Vec<f64>> = vec![Vec::new(); nt];
            for (m, s) in series.iter().enumerate().filter(|(_, s)| s.group == g) {
                for (j, &i) in indexes[m].iter().enumerate() {
                    at[i].push(s.values[j].1);
                }
            }
            let d = find_denominators(&at, hint.as_deref());
            let pred = hint.unwrap_or_else(|| vec![0; nt]);
            let resid: Vec<i64> = d.iter().zip(&pred).map(|(&t, &p)| t.wrapping_sub(p)).collect();
            let mut best: Option<Vec<u8>> = None;
            for plain in [false, true] {
                let mut c = vec![if plain { PLAIN_FLAG } else { 0 }];
                put_refs(&mut c, &refs);
                let mut last = 0i64;
                let codes: Vec<i64> = resid
                    .iter()
                    .map(|&r| {
                        let code = if plain { r } else { r.wrapping_sub(last) };
                        last = r;
                        code
                    })
                    .collect();
                c.extend(code_col(&codes));
                if best.as_ref().is_none_or(|b| c.len() < b.len()) {
                    best = Some(c);
                }
            }
            den_cols[gi] = best.unwrap_or_default();
            lanes[gi] = Some(d);
        }
    }
    // Series columns: a series whose relations refer to other series after those.
    let refers = |s: &SpanSeries| -> Vec<i64> {
        s.dens
            .iter()
            .map(|d| &d.0)
            .chain(&s.preds)
            .flatten()
            .filter_map(|&(l, _)| match l {
                Lane::Series(id) => Some(id),
                Lane::Den(_) => None,
            })
            .chain(s.over_constant)
            .collect()
    };
    // The constant denominator of series `i`, when its numerators' series is done and one
    // fits every value: its lane, filled.
    let constant_den = |i: usize, lanes: &mut Vec<Option<Vec<i64>>>, den_cols: &mut Vec<Vec<u8>>| {
        let c = constants.iter().position(|&c| c == i)?;
        let l = lane_of(Lane::Series(series[i].over_constant?))?;
        let ks = lanes[l].as_ref()?;
        let t = find_constant(indexes[i].iter().zip(&series[i].values).map(|(&j, &(_, v))| (ks[j], v)))?;
        let lane = groups.len() + c;
        lanes[lane] = Some(vec![t; nt]);
        let mut col = vec![0, 0];
        col.extend(code_col(
            &std::iter::once(t).chain(std::iter::repeat_n(0, nt.saturating_sub(1))).collect::<Vec<_>>(),
        ));
        den_cols[lane] = col;
        Some(lane)
    };
    let predicted_from: Vec<bool> = series
        .iter()
        .map(|s| series.iter().flat_map(|o| o.preds.iter().flatten()).any(|&(l, _)| l == Lane::Series(s.id)))
        .collect();
    let mut cols: Vec<Vec<u8>> = vec![Vec::new(); series.len()];
    let mut done = vec![false; series.len()];
    loop {
        let mut progressed = false;
        let mut left = None;
        for &i in &order {
            if done[i] {
                continue;
            }
            let ready = refers(&series[i])
                .iter()
                .all(|&id| lane_of(Lane::Series(id)).is_none_or(|l| lanes[l].is_some()));
            if !ready {
                left = left.or(Some(i));
                continue;
            }
            let c = constant_den(i, &mut lanes, &mut den_cols);
            let (col, lane) = encode_column(
                &series[i],
                &indexes[i],
                &Known { nt, groups: &groups, lanes: &lanes, resolve: &resolve },
                c,
                predicted_from[i],
            );
            cols[i] = col;
            lanes[lane_of_series[i]] = Some(lane);
            done[i] = true;
            progressed = true;
        }
        match left {
            None => break,
            // A cycle: the first waiting series goes without its relations to waiting ones.
            Some(i) if !progressed => {
                let c = constant_den(i, &mut lanes, &mut den_cols);
                let (col, lane) = encode_column(
                    &series[i],
                    &indexes[i],
                    &Known { nt, groups: &groups, lanes: &lanes, resolve: &resolve },
                    c,
                    predicted_from[i],
                );
                cols[i] = col;
                lanes[lane_of_series[i]] = Some(lane);
                done[i] = true;
            }
            Some(_) => {}
        }
    }
    let mut out = vec![SPAN_FORMAT];
    put_varint(&mut out, nt as u128);
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
    put_varint(&mut out, n_dens as u128);
    for d in &den_cols {
        put_varint(&mut out, d.len() as u128);
        out.extend_from_slice(d);
    }
    put_varint(&mut out, series.len() as u128);
    let mut last_id = 0i64;
    for &i in &order {
        out_zig(&mut out, i128::from(series[i].id) - i128::from(last_id));
        last_id = series[i].id;
        put_varint(&mut out, cols[i].len() as u128);
    }
    for &i in &order {
        out.extend_from_slice(&cols[i]);
    }
    out
}

/// The denominator of each instant (0: none fits, or no member has a value), given the
/// values of a group's members at each instant: the predicted one (`hint`) when it fits,
/// else the previous instant's, else the nearest that fits within [`DENOMINATOR_WINDOW`] of
/// it, else a whole multiple of 100 (ticks of whole seconds). The search is bounded: a group
/// that fits nothing costs little.
fn find_denominators(at: &[Vec<f64>], hint: Option<&[i64]>) -> Vec<i64> {
    let fits = |vals: &[f64], t: i64| vals.iter().all(|&v| ratio_numerator(v, t).is_some());
    let mut out = Vec::with_capacity(at.len());
    let mut prev = 100i64;
    for (i, vals) in at.iter().enumerate() {
        if vals.is_empty() {
            out.push(0);
            continue;
        }
        let h = hint.and_then(|h| h.get(i)).copied().filter(|&t| (1..=MAX_DENOMINATOR).contains(&t));
        // Outward from the previous one: prev, prev + 1, prev - 1, prev + 2, ...
        let near = (0..=DENOMINATOR_WINDOW)
            .flat_map(|d| [prev + d, prev - d].into_iter().take(if d == 0 { 1 } else { 2 }))
            .filter(|&t| (1..=MAX_DENOMINATOR).contains(&t));
        let whole = (1..=MAX_DENOMINATOR / 100).map(|s| s * 100);
        let found = h.into_iter().chain(near).chain(whole).find(|&t| fits(vals, t)).unwrap_or(0);
        if found > 0 {
            prev = found;
        }
        out.push(found);
    }
    out
}

/// One denominator `t` with `ratio_value(k, t) == v` for every `(k, v)`, if there is one:
/// where the intervals of `t` each value allows meet.
fn find_constant(kv: impl Iterator<Item = (i64, f64)>) -> Option<i64> {
    let kv: Vec<(i64, f64)> = kv.collect();
    let (mut lo, mut hi) = (1f64, 1e18f64);
    for &(k, v) in &kv {
        if k <= 0 || v.is_nan() || v <= 0.0 {
            return None;
        }
        let k = 100.0 * k as f64;
        lo = lo.max(k / (v + 0.005));
        if v > 0.005 {
            hi = hi.min(k / (v - 0.005));
        }
    }
    if kv.is_empty() || lo > hi + 1.0 {
        return None;
    }
    let mid = ((lo + hi) / 2.0).round() as i64;
    [mid, (mid + 512) / 1024 * 1024, lo.ceil() as i64, hi.floor() as i64]
        .into_iter()
        .find(|&t| t > 0 && kv.iter().all(|&(k, v)| ratio_fits(k, t, v)))
}

/// A value column from its mode byte on: `ints` less the prediction `pred` (at the time
/// indexes `idx`), delta-coded or plain, divided by their common step; `den` the
/// denominator of ratios (scale, lanes).
fn value_codes(
    mode: u8,
    ints: &[i64],
    idx: &[usize],
    den: Option<(i64, &[(usize, bool)])>,
    pred: Option<Prediction<'_>>,
) -> Vec<u8> {
    let plain = mode & PLAIN_FLAG != 0;
    let resid: Vec<i64> = match pred {
        Some((_, p)) => ints.iter().zip(idx).map(|(&k, &i)| k.wrapping_sub(p[i])).collect(),
        None => ints.to_vec(),
    };
    let mut step = 0u64;
    let mut last = 0i64;
    for &s in &resid {
        step = gcd(step, if plain { s.unsigned_abs() } else { s.wrapping_sub(last).unsigned_abs() });
        last = s;
    }
    let mut out = Vec::with_capacity(ints.len() / 2 + 16);
    let mode = mode | if pred.is_some() { PREDICTED_FLAG } else { 0 };
    if step > 1 && step <= i64::MAX as u64 {
        out.push(mode | STEP_FLAG);
        put_varint(&mut out, u128::from(step));
    } else {
        step = 1;
        out.push(mode);
    }
    if let Some((scale, refs)) = den {
        put_varint(&mut out, scale as u128);
        put_refs(&mut out, refs);
    }
    if let Some((refs, _)) = pred {
        put_refs(&mut out, refs);
    }
    let step = step as i64;
    let mut last = 0i64;
    let codes: Vec<i64> = resid
        .iter()
        .map(|&s| {
            let d = if plain { s } else { s.wrapping_sub(last) };
            last = s;
            d / step
        })
        .collect();
    out.extend(code_col(&codes));
    out
}

/// One series' column: value count, the time indexes it has (runs), then its values in the
/// smallest of the forms that give every value back exactly; and its lane.
fn encode_column(
    s: &SpanSeries,
    idx: &[usize],
    known: &Known<'_>,
    constant: Option<usize>,
    counts_first: bool,
) -> (Vec<u8>, Vec<i64>) {
    let Known { nt, groups, lanes, resolve } = *known;
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
    let preds: Vec<(Refs, Vec<i64>)> = s
        .preds
        .iter()
        .filter_map(|p| resolve(lanes, p))
        .map(|r| {
            let v = sum_lanes(lanes, &r, nt);
            (r, v)
        })
        .collect();
    let mut best: Option<(Vec<u8>, Vec<i64>)> = None;
    let mut best_ratio: Option<(Vec<u8>, Vec<i64>)> = None;
    let mut consider = |c: Vec<u8>, ints: &[i64]| {
        let slot = if c[0] & RATIO_MODE != 0 { &mut best_ratio } else { &mut best };
        if slot.as_ref().is_none_or(|b| c.len() < b.0.len()) {
            *slot = Some((c, ints.to_vec()));
        }
    };
    let try_all = |mode: u8,
                   ints: &[i64],
                   den: Option<(i64, &[(usize, bool)])>,
                   consider: &mut dyn FnMut(Vec<u8>, &[i64])| {
        for plain in [0, PLAIN_FLAG] {
            consider(value_codes(mode | plain, ints, idx, den, None), ints);
            for (r, p) in &preds {
                consider(value_codes(mode | plain, ints, idx, den, Some((r, p))), ints);
            }
        }
    };
    if let Some(d) = (0..=3u8).find(|&d| s.values.iter().all(|&(_, v)| scaled(v, d).is_some())) {
        let ints: Vec<i64> = s.values.iter().map(|&(_, v)| scaled(v, d).unwrap_or(0)).collect();
        try_all(d, &ints, None, &mut consider);
    }
    // Denominators: the group's, and the others given.
    let mut dens: Vec<(i64, Refs)> = Vec::new();
    if s.group != 0
        && let Ok(g) = groups.binary_search(&s.group)
    {
        dens.push((1, vec![(g, false)]));
    }
    if let Some(l) = constant {
        dens.push((1, vec![(l, false)]));
    }
    for (sum, scale) in &s.dens {
        if let Some(r) = resolve(lanes, sum).filter(|_| *scale > 0) {
            dens.push((*scale, r));
        }
    }
    for (scale, refs) in &dens {
        let ts = sum_lanes(lanes, refs, nt);
        let t_at = |i: usize| ts[i].checked_mul(*scale);
        // A numerator per prediction: the predicted one where it fits.
        let mut cands: Vec<Option<&[i64]>> = vec![None];
        cands.extend(preds.iter().map(|p| Some(&p.1[..])));
        let mut seen: Vec<Vec<i64>> = Vec::new();
        for pv in cands {
            let ks: Option<Vec<i64>> = idx
                .iter()
                .zip(&s.values)
                .map(|(&i, &(_, v))| {
                    let t = t_at(i)?;
                    match pv {
                        Some(p) if ratio_fits(p[i], t, v) => Some(p[i]),
                        _ => ratio_numerator(v, t),
                    }
                })
                .collect();
            if let Some(ks) = ks
                && !seen.contains(&ks)
            {
                try_all(RATIO_MODE, &ks, Some((*scale, refs)), &mut consider);
                seen.push(ks);
            }
        }
    }
    // The smallest form; a series others are predicted from keeps its counts (a ratio form)
    // unless they cost over an eighth more: the relations are between counts.
    let best = match (best, best_ratio) {
        (Some(b), Some(r))
            if r.0.len() < b.0.len() || (counts_first && r.0.len() <= b.0.len() + b.0.len() / 8) =>
        {
            Some(r)
        }
        (b, r) => b.or(r),
    };
    let mut lane = vec![0i64; nt];
    match best {
        Some((c, ints)) => {
            out.extend_from_slice(&c);
            for (&i, &k) in idx.iter().zip(&ints) {
                lane[i] = k;
            }
        }
        None => {
            out.push(RAW_VALUES);
            for &(_, v) in &s.values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    (out, lane)
}

/// Most values a coded column of `bytes` bytes can hold: a value costs at least its four
/// length decisions, each at least `log2(2048 / 2041)` bits (the most probable an adaptive
/// probability gets), 0.02 bits in all: at most 404 values a byte.
fn max_coded(bytes: usize) -> usize {
    bytes.saturating_mul(512)
}

/// A span being decoded: its times, where each column is, and the lanes decoded so far.
struct Span<'a> {
    times: Vec<i64>,
    /// Each denominator column's bytes.
    dens: Vec<&'a [u8]>,
    /// (series id, column bytes), ids ascending.
    cols: Vec<(i64, &'a [u8])>,
    /// Lanes decoded (dens, then series), for the relations.
    lanes: Vec<Option<Vec<i64>>>,
}

fn span_header(blob: &[u8], start_ns: i64) -> Result<Span<'_>, String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty metric span".into());
    };
    if format != SPAN_FORMAT {
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
    let lanes = vec![None; n_dens + n_cols];
    Ok(Span { times, dens, cols, lanes })
}

/// A sum of lanes as read: each must be a lane of the blob.
fn read_refs(r: &mut Reader<'_>, n_lanes: usize) -> Result<Refs, String> {
    let n = r.count(1)?;
    let mut refs = Vec::with_capacity(n);
    for _ in 0..n {
        let v = r.u64()?;
        let l = usize::try_from(v >> 1)
            .ok()
            .filter(|&l| l < n_lanes)
            .ok_or_else(|| format!("lane {} of {n_lanes}", v >> 1))?;
        refs.push((l, v & 1 == 1));
    }
    Ok(refs)
}

impl Span<'_> {
    /// The sum of `refs` at each time, decoding the lanes it needs.
    fn sum(&mut self, refs: &[(usize, bool)], depth: u32) -> Result<Vec<i64>, String> {
        for &(l, _) in refs {
            self.lane(l, depth)?;
        }
        Ok(sum_lanes(&self.lanes, refs, self.times.len()))
    }

    /// Decodes lane `l` (once).
    fn lane(&mut self, l: usize, depth: u32) -> Result<(), String> {
        if self.lanes.get(l).is_some_and(Option::is_some) {
            return Ok(());
        }
        if depth > MAX_DEPTH {
            return Err("relations nested too deep".into());
        }
        let lane = if l < self.dens.len() {
            self.den(l, depth + 1)?
        } else {
            self.series(l - self.dens.len(), depth + 1, None)?
        };
        self.lanes[l] = Some(lane);
        Ok(())
    }

    /// The denominator column `d` at each time.
    fn den(&mut self, d: usize, depth: u32) -> Result<Vec<i64>, String> {
        let col = self.dens[d];
        let mut r = Reader::new(col);
        let flags = r.bytes(1)?[0];
        if flags & !PLAIN_FLAG != 0 {
            return Err(format!("unknown denominator mode {flags}"));
        }
        let refs = read_refs(&mut r, self.lanes.len())?;
        let mut out = if refs.is_empty() { vec![0; self.times.len()] } else { self.sum(&refs, depth)? };
        let coded = &col[col.len() - r.left()..];
        let plain = flags & PLAIN_FLAG != 0;
        let (mut last, mut i) = (0i64, 0usize);
        decode_col(coded, self.times.len(), |code| {
            let resid =
                if plain { code } else { last.checked_add(code).ok_or("denominator out of range")? };
            last = resid;
            out[i] = out[i].wrapping_add(resid);
            i += 1;
            Ok(())
        })?;
        Ok(out)
    }

    /// The series column at position `p`: its lane, and its values appended to `out`.
    fn series(
        &mut self,
        p: usize,
        depth: u32,
        mut out: Option<&mut Vec<(i64, f64)>>,
    ) -> Result<Vec<i64>, String> {
        let nt = self.times.len();
        let col = self.cols[p].1;
        let mut r = Reader::new(col);
        let n = r.u64()?;
        if n > nt as u64 {
            return Err(format!("{n} values of {nt} times"));
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
            if len == 0 || to > nt || idx.len() + (to - from) > n {
                return Err(format!("a run of {len} values at {from} of {nt} times"));
            }
            idx.extend(from..to);
            end = to;
        }
        if idx.len() != n {
            return Err(format!("{} values in runs, {n} said", idx.len()));
        }
        let mode = r.bytes(1)?[0];
        let mut lane = vec![0i64; nt];
        if mode == RAW_VALUES {
            for &i in &idx {
                let v = f64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| "short value")?);
                if let Some(o) = out.as_deref_mut() {
                    o.push((self.times[i], v));
                }
            }
            r.done()?;
            return Ok(lane);
        }
        if mode & !(RATIO_MODE | PLAIN_FLAG | STEP_FLAG | PREDICTED_FLAG | 3) != 0
            || (mode & RATIO_MODE != 0 && mode & 3 != 0)
        {
            return Err(format!("unknown value mode {mode}"));
        }
        let step = if mode & STEP_FLAG != 0 {
            i64::try_from(r.u64()?).map_err(|_| "value step out of range")?
        } else {
            1
        };
        let plain = mode & PLAIN_FLAG != 0;
        let n_lanes = self.lanes.len();
        let den = if mode & RATIO_MODE != 0 {
            let scale = i64::try_from(r.u64()?).map_err(|_| "denominator scale out of range")?;
            Some((scale, read_refs(&mut r, n_lanes)?))
        } else {
            None
        };
        let pred = if mode & PREDICTED_FLAG != 0 { Some(read_refs(&mut r, n_lanes)?) } else { None };
        let coded = &col[col.len() - r.left()..];
        let pred = match pred {
            Some(refs) => Some(self.sum(&refs, depth)?),
            None => None,
        };
        // Denominators only when values are wanted (a lane is the integers).
        let ts = match (&den, out.is_some()) {
            (Some((_, refs)), true) => Some(self.sum(refs, depth)?),
            _ => None,
        };
        let scale = den.as_ref().map_or(1, |d| d.0);
        let f = 10f64.powi(i32::from(mode & 3));
        let times = &self.times;
        let mut last = 0i64;
        let mut j = 0;
        decode_col(coded, n, |code| {
            let d = code.checked_mul(step).ok_or("value out of range")?;
            let s = if plain { d } else { last.checked_add(d).ok_or("value out of range")? };
            last = s;
            let i = idx[j];
            j += 1;
            let k = match &pred {
                Some(p) => s.wrapping_add(p[i]),
                None => s,
            };
            lane[i] = k;
            if let Some(o) = out.as_deref_mut() {
                let v = match &ts {
                    Some(ts) => {
                        let t = ts[i].checked_mul(scale).ok_or("denominator out of range")?;
                        ratio_value(k, t)
                            .ok_or_else(|| format!("{k} over a denominator of {t} at time {i}"))?
                    }
                    None => k as f64 / f,
                };
                o.push((times[i], v));
            }
            Ok(())
        })?;
        Ok(lane)
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

/// Lengths from this one on are coded as this one and the rest.
const LONG_LEN: u32 = 15;
/// Classes of the previous number's length that choose the contexts of the next length.
const LEN_CLASSES: usize = 4;

/// The adaptive model of a column of integers: each is zigzagged, then coded as its bit
/// length (a bit tree, in the context of the previous one's length), its top three bits
/// below the leading one (a bit tree per length), and the rest (a context per length and
/// position).
struct IntModel {
    len: [[u16; 16]; LEN_CLASSES],
    /// Lengths of 15 and more: the rest of the length (six bits).
    long: [u16; 64],
    top: [[u16; 1 << TOP_BITS]; 65],
    low: [[u16; 64]; 65],
    prev_len: u32,
}

impl IntModel {
    fn new() -> Box<IntModel> {
        Box::new(IntModel {
            len: [[PROB_INIT; 16]; LEN_CLASSES],
            long: [PROB_INIT; 64],
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
        let short = n.min(LONG_LEN);
        for i in (0..4).rev() {
            let b = (short >> i) & 1 == 1;
            rc.bit(&mut self.len[c][node], b);
            node = (node << 1) | usize::from(b);
        }
        if short == LONG_LEN {
            let mut node = 1usize;
            for i in (0..6).rev() {
                let b = ((n - LONG_LEN) >> i) & 1 == 1;
                rc.bit(&mut self.long[node], b);
                node = (node << 1) | usize::from(b);
            }
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
        for _ in 0..4 {
            node = (node << 1) | usize::from(rc.bit(&mut self.len[c][node])?);
        }
        let mut n = (node - 16) as u32;
        if n == LONG_LEN {
            let mut node = 1usize;
            for _ in 0..6 {
                node = (node << 1) | usize::from(rc.bit(&mut self.long[node])?);
            }
            n += (node - 64) as u32;
        }
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
#[cfg(test)]
pub(crate) fn decode_span_series(
    blob: &[u8],
    start_ns: i64,
    id: i64,
    out: &mut Vec<(i64, f64)>,
) -> Result<(), String> {
    decode_span_many(blob, start_ns, &[id], std::slice::from_mut(out))
}

/// The values of several series of a span blob (`ids[k]`'s appended to `out[k]`), the
/// blob's times and the lanes their relations share decoded once.
pub(crate) fn decode_span_many(
    blob: &[u8],
    start_ns: i64,
    ids: &[i64],
    out: &mut [Vec<(i64, f64)>],
) -> Result<(), String> {
    let mut h = span_header(blob, start_ns)?;
    for (&id, o) in ids.iter().zip(out.iter_mut()) {
        if let Ok(p) = h.cols.binary_search_by_key(&id, |c| c.0) {
            let lane = h.series(p, 0, Some(o))?;
            let l = h.dens.len() + p;
            h.lanes[l] = Some(lane);
        }
    }
    Ok(())
}

/// Every series of a span blob: (id, values).
pub(crate) fn decode_span(blob: &[u8], start_ns: i64) -> Result<Vec<(i64, Values)>, String> {
    let mut h = span_header(blob, start_ns)?;
    let mut out = Vec::with_capacity(h.cols.len());
    for p in 0..h.cols.len() {
        let mut v = Vec::new();
        let lane = h.series(p, 0, Some(&mut v))?;
        let l = h.dens.len() + p;
        h.lanes[l] = Some(lane);
        out.push((h.cols[p].0, v));
    }
    Ok(out)
}

/// The planner of a span: which series of the machine's metrics predict which (see the
/// module).
/// The group of series whose values at one instant are ratios over one shared whole
/// (`100 × k / t`), coded with `t` stored once: the shares of one CPU's clock ticks (`cpu`,
/// `cpu.usr`, ... of one label), and the rates over the interval of the reads. "" none.
pub(crate) fn ratio_group(name: &str, label: &str) -> String {
    const RATES: [&str; 7] =
        ["ctxt", "forks", "io.read_bytes", "io.write_bytes", "io.reads", "io.writes", "io.iops"];
    if is_cpu_share(name) {
        format!("cpu/{label}")
    } else if RATES.contains(&name) {
        "rate".into()
    } else {
        String::new()
    }
}

fn is_cpu_share(name: &str) -> bool {
    name == "cpu" || name.starts_with("cpu.")
}

/// Whether `label` names one CPU (`cpu0`, `cpu12`).
fn is_one_cpu(label: &str) -> bool {
    label.strip_prefix("cpu").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A series of a span: id, name, label, values.
pub(crate) type NamedSeries = (i64, String, String, Vec<(i64, f64)>);

/// The series of one span as the codec takes them, with the relations the watcher's
/// formulas make likely (`kflame-watch`'s `metrics/`); the codec keeps one only where it
/// gives every value back exactly and codes smaller:
///
/// - a share of the whole machine (label "") is about the sum of its CPUs' (its ticks and
///   the machine's ticks the sums of theirs, read a moment apart), as is the whole
///   machine's denominator the sum of the CPUs';
/// - `cpu.idle` is `t − cpu − cpu.iowait` ticks of its CPU;
/// - `io.iops` is about `io.reads + io.writes` (discards and flushes aside);
/// - `io.r_await`, `io.w_await` are ticks over the reads' or writes' count (`io.await` over
///   their sum, or over `io.iops`, its ticks about theirs); `io.util` and `io.queue` are
///   ticks over the interval's ms (10 × and 1000 × the rates' hundredths of a second).
pub(crate) fn span_series(all: Vec<NamedSeries>) -> (Vec<SpanSeries>, GroupPreds) {
    let mut names: Vec<String> = Vec::new();
    let mut group_id = |g: String| -> u32 {
        if g.is_empty() {
            return 0;
        }
        match names.iter().position(|n| *n == g) {
            Some(i) => i as u32 + 1,
            None => {
                names.push(g);
                names.len() as u32
            }
        }
    };
    let groups: Vec<u32> = all.iter().map(|(_, n, l, _)| group_id(ratio_group(n, l))).collect();
    let rate = group_id("rate".into());
    let find = |name: &str, label: &str| all.iter().find(|s| s.1 == name && s.2 == label).map(|s| s.0);
    let cpus: Vec<&str> = {
        let mut c: Vec<&str> = all.iter().map(|s| s.2.as_str()).filter(|l| is_one_cpu(l)).collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    let plus = |ids: &[Option<i64>]| -> LaneSum {
        if ids.iter().any(Option::is_none) {
            return Vec::new();
        }
        ids.iter().flatten().map(|&id| (Lane::Series(id), false)).collect()
    };
    let mut group_preds = Vec::new();
    let whole = names.iter().position(|n| n == "cpu/").map(|i| i as u32 + 1);
    if let Some(g) = whole {
        let sum: LaneSum = cpus
            .iter()
            .filter_map(|c| names.iter().position(|n| *n == format!("cpu/{c}")))
            .map(|i| (Lane::Den(i as u32 + 1), false))
            .collect();
        if !sum.is_empty() {
            group_preds.push((g, sum));
        }
    }
    let out = all
        .iter()
        .zip(&groups)
        .map(|((id, name, label, values), &group)| {
            let mut s = SpanSeries { id: *id, group, values: values.clone(), ..Default::default() };
            let (name, label) = (name.as_str(), label.as_str());
            if is_cpu_share(name) {
                if label.is_empty() && !cpus.is_empty() {
                    s.preds.push(plus(&cpus.iter().map(|c| find(name, c)).collect::<Vec<_>>()));
                }
                if name == "cpu.idle"
                    && let (Some(busy), Some(iowait)) = (find("cpu", label), find("cpu.iowait", label))
                {
                    s.preds.push(vec![
                        (Lane::Den(group), false),
                        (Lane::Series(busy), true),
                        (Lane::Series(iowait), true),
                    ]);
                }
            }
            let (reads, writes) = (find("io.reads", label), find("io.writes", label));
            match name {
                "io.iops" => s.preds.push(plus(&[reads, writes])),
                "io.r_await" => s.dens.push((plus(&[reads]), 100)),
                "io.w_await" => s.dens.push((plus(&[writes]), 100)),
                "io.await" => {
                    s.dens.push((plus(&[find("io.iops", label)]), 100));
                    s.dens.push((plus(&[reads, writes]), 100));
                    s.preds.push(plus(&[find("io.r_await", label), find("io.w_await", label)]));
                }
                "io.util" => s.dens.push((vec![(Lane::Den(rate), false)], 10)),
                "io.queue" => s.dens.push((vec![(Lane::Den(rate), false)], 1000)),
                "mem.available" => {
                    s.over_constant = find("mem.available_bytes", label);
                    s.preds.push(plus(&[s.over_constant]));
                }
                _ => {}
            }
            s.preds.retain(|p| !p.is_empty());
            s.dens.retain(|d| !d.0.is_empty());
            s
        })
        .collect();
    (out, group_preds)
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
    fn real_stream() -> (Vec<(String, String, SpanSeries)>, GroupPreds) {
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
        let all: Vec<(i64, String, String, Values)> = ids
            .into_iter()
            .enumerate()
            .map(|(i, key)| (i as i64 + 1, key.0.clone(), key.1.clone(), by[&key].clone()))
            .collect();
        let names: Vec<(String, String)> = all.iter().map(|s| (s.1.clone(), s.2.clone())).collect();
        let (series, group_preds) = span_series(all);
        let stream = names.into_iter().zip(series).map(|((n, l), s)| (n, l, s)).collect();
        (stream, group_preds)
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
        let (stream, group_preds) = real_stream();
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
            let blob = encode_span(from, &series, &group_preds);
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
                ..Default::default()
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
                ..Default::default()
            },
            // A group whose values fit no denominator at some instants.
            SpanSeries {
                id: 9,
                group: 1,
                values: (0..40)
                    .map(|i| (start + i * sec, [12.34, 56.78, 0.01, 99.99][i as usize % 4]))
                    .collect(),
                ..Default::default()
            },
            // Page-sized moves of a byte count.
            SpanSeries {
                id: 20,
                group: 0,
                values: (0..40)
                    .map(|i| (start + i * sec, (1_000_000_000 + (i * 37 % 11) * 4096) as f64))
                    .collect(),
                ..Default::default()
            },
        ];
        let blob = encode_span(start, &series, &[]);
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
    fn the_steadiest_columns_fit_their_bound() {
        // A clock of exact seconds over a day: every code 0 after the first two.
        let start = 1_700_000_000_000_000_000i64;
        let values: Values = (0..86_400).map(|i| (start + i * 1_000_000_000, 1.0)).collect();
        let series = [SpanSeries { id: 1, values: values.clone(), ..Default::default() }];
        let blob = encode_span(start, &series, &[]);
        assert_same("steady", &values, &decode_span(&blob, start).unwrap()[0].1);
        let zeros = code_ints(std::iter::repeat_n(0, 1 << 20));
        assert!(max_coded(zeros.len()) >= 1 << 20, "{} bytes", zeros.len());
    }

    #[test]
    fn ratios_are_exact_or_refused() {
        // 100 × 93 / 201 as a share: found back from its rounded value.
        let v = round_metric(100.0 * 93.0 / 201.0, 2);
        let k = ratio_numerator(v, 201).unwrap();
        assert_eq!(ratio_value(k, 201).map(f64::to_bits), Some(v.to_bits()));
        assert_eq!(ratio_numerator(12.34, 10_000), Some(1234));
        assert!(ratio_numerator(12.34, 100).is_none());
        assert!(ratio_numerator(f64::NAN, 100).is_none());
        assert!(ratio_numerator(33.34, 3).is_none());
    }

    /// Series of `(name, label, values)` with the relations the store gives them.
    fn planned(all: Vec<(&str, &str, Values)>) -> (Vec<SpanSeries>, GroupPreds) {
        span_series(
            all.into_iter()
                .enumerate()
                .map(|(i, (n, l, v))| (i as i64 + 1, n.to_string(), l.to_string(), v))
                .collect(),
        )
    }

    /// Encodes, decodes whole and series by series, checks every value bit for bit; the
    /// blob's length, and each column's.
    fn round_trip(start: i64, series: &[SpanSeries], group_preds: &[(u32, LaneSum)]) -> (usize, Vec<usize>) {
        let blob = encode_span(start, series, group_preds);
        let back = decode_span(&blob, start).unwrap();
        assert_eq!(back.len(), series.len());
        for (s, (id, got)) in series.iter().zip(&back) {
            assert_eq!(s.id, *id);
            assert_same(&format!("series {id}"), &s.values, got);
            let mut one = Vec::new();
            decode_span_series(&blob, start, s.id, &mut one).unwrap();
            assert_same(&format!("series {id} alone"), &s.values, &one);
        }
        // Several at once, in another order, with an id the blob lacks: each its own.
        let mut ids: Vec<i64> = series.iter().rev().map(|s| s.id).collect();
        ids.insert(ids.len() / 2, i64::MAX);
        let mut many = vec![Vec::new(); ids.len()];
        decode_span_many(&blob, start, &ids, &mut many).unwrap();
        for (id, got) in ids.iter().zip(&many) {
            match series.iter().find(|s| s.id == *id) {
                Some(s) => assert_same(&format!("series {id} of many"), &s.values, got),
                None => assert!(got.is_empty()),
            }
        }
        // Damaged: every truncation an error, every byte changed an error or other values.
        for cut in 0..blob.len() {
            assert!(decode_span(&blob[..cut], start).is_err(), "cut at {cut}");
        }
        for i in 0..blob.len() {
            let mut b = blob.clone();
            b[i] ^= 0x5a;
            let _ = decode_span(&b, start);
            for s in series {
                let _ = decode_span_series(&b, start, s.id, &mut Vec::new());
            }
        }
        let h = span_header(&blob, start).unwrap();
        (blob.len(), h.cols.iter().map(|c| c.1.len()).collect())
    }

    #[test]
    fn the_machine_is_coded_from_its_cpus_exactly_or_near() {
        let start = 1_700_000_000_000_000_000i64;
        let sec = 1_000_000_000i64;
        // Ticks of two CPUs per second (usr, sys, idle); the machine's line is their sum, or,
        // read a moment apart, one tick off at every seventh read.
        let ticks = |i: i64, cpu: i64| {
            let usr = (i * 37 + cpu * 11) % 60 + 20;
            let sys = (i * 13 + cpu * 5) % 15;
            (usr, sys, 101 - usr - sys)
        };
        let share = |k: i64, t: i64| round_metric(100.0 * k as f64 / t as f64, 2);
        for skew in [false, true] {
            let mut all: Vec<(&str, &str, Values)> = Vec::new();
            for (name, pick) in [("cpu.usr", 0), ("cpu.sys", 1), ("cpu.idle", 2)] {
                let get = |t: (i64, i64, i64)| [t.0, t.1, t.2][pick];
                for (label, cpu) in [("cpu0", 0), ("cpu1", 1)] {
                    let v = (0..120).map(|i| (start + i * sec, share(get(ticks(i, cpu)), 101))).collect();
                    all.push((name, label, v));
                }
                let v = (0..120)
                    .map(|i| {
                        let (a, b) = (ticks(i, 0), ticks(i, 1));
                        let off = i64::from(skew && i % 7 == 0);
                        // One tick more of usr (and of the whole) at the skewed reads.
                        let k = get(a) + get(b) + if pick == 0 { off } else { 0 };
                        (start + i * sec, share(k, 202 + off))
                    })
                    .collect();
                all.push((name, "", v));
            }
            let (series, group_preds) = planned(all);
            assert!(!series[2].preds.is_empty() && !group_preds.is_empty());
            let (_, cols) = round_trip(start, &series, &group_preds);
            // The machine's columns cost next to nothing when the relation holds, little
            // when it is one tick off now and then.
            let whole: usize = [2, 5, 8].iter().map(|&i| cols[i]).sum();
            let one_cpu: usize = [0, 3, 6].iter().map(|&i| cols[i]).sum();
            if skew {
                assert!(whole < one_cpu, "{whole} B for the machine, {one_cpu} B for cpu0");
            } else {
                assert!(whole <= 3 * 12, "{whole} B for the machine: {cols:?}");
            }
        }
    }

    #[test]
    fn io_and_memory_relations_hold_or_fall_back() {
        let start = 1_700_000_000_000_000_000i64;
        let sec = 1_000_000_000i64;
        let total = 25_000_000_000i64;
        let mut sizes = Vec::new();
        for broken in [false, true] {
            let avail: Vec<i64> = (0..200).map(|i| 20_000_000_000 + (i * 7919 % 1000) * 4096).collect();
            let at = |i: usize| start + i as i64 * sec;
            // The memory's total changes (memory added) when broken: no one constant fits.
            let pct = avail
                .iter()
                .enumerate()
                .map(|(i, &a)| {
                    let t = if broken && i > 100 { total + 1_000_000_000 } else { total };
                    (at(i), round_metric(100.0 * a as f64 / t as f64, 2))
                })
                .collect();
            let bytes = avail.iter().enumerate().map(|(i, &a)| (at(i), a as f64)).collect();
            // Reads and writes over an interval of 1 s; IOs are their sum, plus a flush now
            // and then when broken.
            let reads: Vec<i64> = (0..200).map(|i| (i * 31 % 47) as i64).collect();
            let writes: Vec<i64> = (0..200).map(|i| (i * 17 % 23) as i64).collect();
            let rate = |n: i64| round_metric(n as f64, 2);
            let r = reads.iter().enumerate().map(|(i, &n)| (at(i), rate(n))).collect();
            let w = writes.iter().enumerate().map(|(i, &n)| (at(i), rate(n))).collect();
            let iops = (0..200)
                .map(|i| (at(i), rate(reads[i] + writes[i] + i64::from(broken && i % 5 == 0))))
                .collect();
            let ctxt = (0..200).map(|i| (at(i), rate(900 + (i as i64 * 7 % 50)))).collect();
            let (series, group_preds) = planned(vec![
                ("mem.available", "", pct),
                ("mem.available_bytes", "", bytes),
                ("io.reads", "vda", r),
                ("io.writes", "vda", w),
                ("io.iops", "vda", iops),
                ("ctxt", "", ctxt),
            ]);
            let (_, cols) = round_trip(start, &series, &group_preds);
            assert!(cols[4] < cols[2], "io.iops smaller than io.reads: {cols:?}");
            sizes.push(cols);
        }
        // Where the relations hold, mem.available and io.iops are their headers; where they
        // do not, a constant denominator is refused and IOs code their difference.
        assert!(sizes[0][0] < 16 && sizes[0][4] < 16, "mem.available, io.iops {:?}", sizes[0]);
        assert!(sizes[1][0] > 2 * sizes[0][0], "mem.available {:?}", sizes[1]);
    }

    #[test]
    fn damaged_relations_are_errors() {
        let start = 1_700_000_000_000_000_000i64;
        let sec = 1_000_000_000i64;
        let v = |x: f64| (0..10).map(|i| (start + i * sec, x + (i * 7919 % 1000) as f64)).collect::<Values>();
        let series = vec![
            SpanSeries { id: 1, values: v(1.0), ..Default::default() },
            SpanSeries {
                id: 2,
                values: v(1.0),
                preds: vec![vec![(Lane::Series(1), false)]],
                ..Default::default()
            },
        ];
        let blob = encode_span(start, &series, &[]);
        let h = span_header(&blob, start).unwrap();
        let col = h.cols[1].1;
        // The second column refers to the first (lane 0 of no denominator): make it refer to
        // itself, then to a lane that is not there.
        assert!(col.len() < 8, "the second column is its difference to the first: {col:?}");
        let at = blob.len() - col.len();
        let mut found = false;
        for i in 0..col.len() - 1 {
            if col[i] == 1 && i > 0 && col[i - 1] & PREDICTED_FLAG != 0 && col[i + 1] == 0 {
                for (lane, what) in [(1u8, "deep"), (9, "lane")] {
                    let mut b = blob.clone();
                    b[at + i + 1] = lane << 1;
                    let e = decode_span(&b, start).unwrap_err();
                    assert!(e.contains(what), "{e}");
                }
                found = true;
            }
        }
        assert!(found, "no reference found in {col:?}");
    }
}
