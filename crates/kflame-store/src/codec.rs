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

use kflame::fold::Weight;

/// The format byte of a zstd-compressed version-1 bucket blob.
const BUCKET_FORMAT_1: u8 = 1;
/// Largest decompressed bucket accepted (a bucket of 10 s has a few kB).
const MAX_BUCKET_BYTES: u64 = 256 << 20;
/// Largest CPU number accepted in a blob.
const MAX_CPU: u32 = 1 << 16;

/// One sample as the codec sees it: stack ids already global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawSample {
    pub(crate) time_ns: i64,
    pub(crate) cpu: u32,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// 0 none, else index + 1 into the cgroup list.
    pub(crate) cgroup: u32,
    pub(crate) stack: i64,
    pub(crate) weight: Weight,
}

/// An untimed entry: a stack (and cgroup) with a count of samples and their summed weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Untimed {
    pub(crate) stack: i64,
    pub(crate) cgroup: u32,
    pub(crate) count: u64,
    pub(crate) weight: Weight,
}

/// A decoded bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DecodedBucket {
    pub(crate) cgroups: Vec<String>,
    pub(crate) samples: Vec<RawSample>,
    pub(crate) untimed: Vec<Untimed>,
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> i128 {
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

    fn left(&self) -> usize {
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
    fn u64(&mut self) -> Result<u64, String> {
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
    fn u32(&mut self) -> Result<u32, String> {
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| format!("number {v} out of range before byte {}", self.pos))
    }

    #[inline]
    fn i64z(&mut self) -> Result<i64, String> {
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
    fn count(&mut self, min_bytes: usize) -> Result<usize, String> {
        let n = self.u64()?;
        if n > (self.left() / min_bytes.max(1)) as u64 {
            return Err(format!("count {n} exceeds the {} bytes left", self.left()));
        }
        Ok(n as usize)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!("{n} bytes wanted, {} left", self.left()));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn done(&self) -> Result<(), String> {
        if self.left() != 0 {
            return Err(format!("{} bytes left over", self.left()));
        }
        Ok(())
    }
}

/// Per-CPU state of the column codes.
#[derive(Clone, Copy, Default)]
struct CpuState {
    /// Samples of this CPU seen so far.
    n: u64,
    last_t: i64,
    /// The delta between the CPU's first two samples: later deltas are coded against it
    /// (a timer's period), which keeps jitter to one difference.
    ref_dt: i64,
    last_stack: u64,
    last_pid: u64,
}

#[inline]
fn cpu_state(states: &mut Vec<CpuState>, cpu: u32) -> &mut CpuState {
    let i = cpu as usize;
    if states.len() <= i {
        states.resize(i + 1, CpuState::default());
    }
    &mut states[i]
}

/// Encodes a bucket. Times must be in `[start_ns, ...)`; `time_unit_ns` ≥ 1 truncates them
/// to that resolution. Samples are stored by CPU, then time.
pub(crate) fn encode_bucket(
    start_ns: i64,
    time_unit_ns: i64,
    cgroups: &[&str],
    samples: &[RawSample],
    untimed: &[Untimed],
) -> Vec<u8> {
    let mut samples = samples.to_vec();
    samples.sort_by_key(|s| (s.cpu, s.time_ns));
    let mut dict: Vec<i64> = samples.iter().map(|s| s.stack).chain(untimed.iter().map(|u| u.stack)).collect();
    dict.sort_unstable();
    dict.dedup();
    let index = |id: i64| dict.binary_search(&id).unwrap_or(0) as u64;
    let mut pids: Vec<u32> = samples.iter().flat_map(|s| [s.pid, s.tid]).collect();
    pids.sort_unstable();
    pids.dedup();
    let pid_index = |p: u32| pids.binary_search(&p).unwrap_or(0) as u128;

    let mut out = Vec::with_capacity(samples.len() * 4 + 64);
    put_varint(&mut out, time_unit_ns as u128);
    put_varint(&mut out, dict.len() as u128);
    let mut prev = 0i64;
    for &id in &dict {
        put_varint(&mut out, (id - prev) as u128);
        prev = id;
    }
    put_varint(&mut out, pids.len() as u128);
    let mut prev = 0u32;
    for &p in &pids {
        put_varint(&mut out, u128::from(p - prev));
        prev = p;
    }
    put_varint(&mut out, cgroups.len() as u128);
    for c in cgroups {
        put_varint(&mut out, c.len() as u128);
        out.extend_from_slice(c.as_bytes());
    }
    put_varint(&mut out, samples.len() as u128);
    for s in &samples {
        put_varint(&mut out, u128::from(s.cpu));
    }
    let mut states = Vec::new();
    for s in &samples {
        let st = cpu_state(&mut states, s.cpu);
        let t = (s.time_ns - start_ns) / time_unit_ns;
        let dt = t - st.last_t;
        out_zig(&mut out, i128::from(dt - st.ref_dt));
        if st.n == 1 {
            st.ref_dt = dt;
        }
        st.n += 1;
        st.last_t = t;
    }
    // Stack and task: 0 when the same as the CPU's previous sample, else index + 1.
    let mut states = Vec::new();
    for s in &samples {
        let st = cpu_state(&mut states, s.cpu);
        let i = index(s.stack) + 1;
        put_varint(&mut out, if st.last_stack == i { 0 } else { u128::from(i) });
        st.last_stack = i;
    }
    for s in &samples {
        put_varint(&mut out, u128::from(s.cgroup));
    }
    for s in &samples {
        let st = cpu_state(&mut states, s.cpu);
        let i = pid_index(s.pid) as u64 + 1;
        put_varint(&mut out, if st.last_pid == i { 0 } else { u128::from(i) });
        st.last_pid = i;
    }
    for s in &samples {
        put_varint(&mut out, if s.tid == s.pid { 0 } else { pid_index(s.tid) + 1 });
    }
    let mut prev_w: u128 = 0;
    for s in &samples {
        out_zig(&mut out, s.weight.raw().wrapping_sub(prev_w) as i128);
        prev_w = s.weight.raw();
    }
    put_varint(&mut out, untimed.len() as u128);
    for u in untimed {
        put_varint(&mut out, u128::from(index(u.stack)));
        put_varint(&mut out, u128::from(u.cgroup));
        put_varint(&mut out, u128::from(u.count));
        put_varint(&mut out, u.weight.raw());
    }
    let mut blob = vec![BUCKET_FORMAT_1];
    // Level 3 (zstd's default); writing into a Vec cannot fail.
    if let Ok(z) = zstd::bulk::compress(&out, 3) {
        blob.extend_from_slice(&z);
    }
    blob
}

fn out_zig(out: &mut Vec<u8>, v: i128) {
    put_varint(out, zigzag(v));
}

/// Decodes a bucket blob; errors say what is wrong, for a "corrupt" message. Samples come
/// by CPU, then time.
pub(crate) fn decode_bucket(blob: &[u8], start_ns: i64) -> Result<DecodedBucket, String> {
    let mut ctx = DecodeCtx::default();
    let mut out = DecodedBucket::default();
    decode_bucket_into(&mut ctx, blob, start_ns, &mut out)?;
    Ok(out)
}

/// What decoding reuses from one bucket to the next: the zstd context and the buffers.
#[derive(Default)]
pub(crate) struct DecodeCtx {
    dec: Option<zstd::bulk::Decompressor<'static>>,
    raw: Vec<u8>,
    dict: Vec<i64>,
    pids: Vec<u32>,
    states: Vec<CpuState>,
}

/// [`decode_bucket`] into `out` (its vectors reused), with `ctx`'s buffers.
pub(crate) fn decode_bucket_into(
    ctx: &mut DecodeCtx,
    blob: &[u8],
    start_ns: i64,
    out: &mut DecodedBucket,
) -> Result<(), String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty sample blob".into());
    };
    if format != BUCKET_FORMAT_1 {
        return Err(format!("unknown sample blob format {format}"));
    }
    let mut raw = std::mem::take(&mut ctx.raw);
    let r = ctx.decompress(body, &mut raw).and_then(|()| decode_payload(&raw, start_ns, ctx, out));
    ctx.raw = raw;
    r.map_err(|e| format!("sample blob: {e}"))
}

impl DecodeCtx {
    /// Decompresses a zstd frame of at most [`MAX_BUCKET_BYTES`] into `raw`.
    fn decompress(&mut self, body: &[u8], raw: &mut Vec<u8>) -> Result<(), String> {
        raw.clear();
        match zstd::zstd_safe::get_frame_content_size(body) {
            Ok(Some(n)) if n <= MAX_BUCKET_BYTES => {
                if self.dec.is_none() {
                    self.dec = Some(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?);
                }
                raw.reserve(n as usize);
                let dec = self.dec.as_mut().ok_or("no zstd context")?;
                dec.decompress_to_buffer(body, raw).map_err(|e| e.to_string())?;
                if raw.len() as u64 != n {
                    return Err(format!("{} bytes decompressed, the frame says {n}", raw.len()));
                }
                Ok(())
            }
            Ok(Some(n)) => Err(format!("{n} bytes decompressed exceed the limit")),
            // A frame without its size: the streaming decoder, bounded.
            _ => {
                *raw = decompress(body)?;
                Ok(())
            }
        }
    }
}

/// Decompresses a zstd frame of at most [`MAX_BUCKET_BYTES`].
fn decompress(body: &[u8]) -> Result<Vec<u8>, String> {
    decompress_limited(body, MAX_BUCKET_BYTES as usize)
}

/// Decompresses a zstd frame of at most `max` bytes.
fn decompress_limited(body: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let mut raw = Vec::new();
    let mut dec = zstd::stream::read::Decoder::with_buffer(body).map_err(|e| format!("zstd: {e}"))?;
    (&mut dec).take(max as u64).read_to_end(&mut raw).map_err(|e| format!("zstd: {e}"))?;
    Ok(raw)
}

/// The global stack ids a bucket blob refers to (its dictionary).
pub(crate) fn bucket_stacks(blob: &[u8]) -> Result<Vec<i64>, String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty sample blob".into());
    };
    if format != BUCKET_FORMAT_1 {
        return Err(format!("unknown sample blob format {format}"));
    }
    let raw = decompress(body)?;
    let mut r = Reader::new(&raw);
    r.varint()?;
    let n_dict = r.count(1)?;
    let mut dict = Vec::with_capacity(n_dict);
    let mut prev = 0i64;
    for _ in 0..n_dict {
        prev = prev
            .checked_add(i64::try_from(r.u64()?).map_err(|_| "stack id out of range")?)
            .ok_or("stack id out of range")?;
        dict.push(prev);
    }
    Ok(dict)
}

fn decode_payload(
    raw: &[u8],
    start_ns: i64,
    ctx: &mut DecodeCtx,
    out: &mut DecodedBucket,
) -> Result<(), String> {
    let mut r = Reader::new(raw);
    let unit = r.i64z_plain()?;
    if unit < 1 {
        return Err(format!("time unit {unit}"));
    }
    let n_dict = r.count(1)?;
    let dict = &mut ctx.dict;
    dict.clear();
    let mut prev = 0i64;
    for _ in 0..n_dict {
        let d = r.u64()?;
        prev = prev
            .checked_add(i64::try_from(d).map_err(|_| "stack id out of range".to_string())?)
            .ok_or("stack id out of range")?;
        dict.push(prev);
    }
    let n_pids = r.count(1)?;
    let pids = &mut ctx.pids;
    pids.clear();
    let mut prev = 0u32;
    for _ in 0..n_pids {
        prev = prev.checked_add(r.u32()?).ok_or("pid out of range")?;
        pids.push(prev);
    }
    let n_cg = r.count(1)?;
    let cgroups = &mut out.cgroups;
    cgroups.clear();
    for _ in 0..n_cg {
        let len = r.count(1)?;
        let b = r.bytes(len)?;
        cgroups.push(String::from_utf8_lossy(b).into_owned());
    }
    let n = r.count(7)?;
    let samples = &mut out.samples;
    samples.clear();
    samples.resize(
        n,
        RawSample { time_ns: 0, cpu: 0, pid: 0, tid: 0, cgroup: 0, stack: 0, weight: Weight::ZERO },
    );
    for s in samples.iter_mut() {
        s.cpu = r.u32()?;
        if s.cpu > MAX_CPU {
            return Err(format!("CPU {} out of range", s.cpu));
        }
    }
    let states = &mut ctx.states;
    states.clear();
    for s in samples.iter_mut() {
        let st = cpu_state(states, s.cpu);
        let dt = st.ref_dt.checked_add(r.i64z()?).ok_or("time out of range")?;
        if st.n == 1 {
            st.ref_dt = dt;
        }
        st.n += 1;
        let t = st.last_t.checked_add(dt).ok_or("time out of range")?;
        st.last_t = t;
        s.time_ns = t.checked_mul(unit).and_then(|v| v.checked_add(start_ns)).ok_or("time out of range")?;
    }
    states.clear();
    for s in samples.iter_mut() {
        let st = cpu_state(states, s.cpu);
        let code = r.u64()?;
        let i = if code == 0 { st.last_stack } else { code };
        st.last_stack = i;
        s.stack = *i
            .checked_sub(1)
            .and_then(|i| dict.get(i as usize))
            .ok_or_else(|| format!("stack index {i} of {}", dict.len()))?;
    }
    for s in samples.iter_mut() {
        s.cgroup = r.u32()?;
        if s.cgroup as usize > cgroups.len() {
            return Err(format!("cgroup index {} of {}", s.cgroup, cgroups.len()));
        }
    }
    for s in samples.iter_mut() {
        let st = cpu_state(states, s.cpu);
        let code = r.u64()?;
        let i = if code == 0 { st.last_pid } else { code };
        st.last_pid = i;
        s.pid = *i
            .checked_sub(1)
            .and_then(|i| pids.get(i as usize))
            .ok_or_else(|| format!("pid index {i} of {}", pids.len()))?;
    }
    for s in samples.iter_mut() {
        let code = r.u64()?;
        s.tid = if code == 0 {
            s.pid
        } else {
            *pids.get(code as usize - 1).ok_or_else(|| format!("tid index {code} of {}", pids.len()))?
        };
    }
    let mut prev_w: u128 = 0;
    for s in samples.iter_mut() {
        let w = prev_w.wrapping_add(unzigzag(r.varint()?) as u128);
        s.weight = Weight::from_raw(w);
        prev_w = w;
    }
    let n_u = r.count(4)?;
    let untimed = &mut out.untimed;
    untimed.clear();
    for _ in 0..n_u {
        let i = r.u64()? as usize;
        let stack = *dict.get(i).ok_or_else(|| format!("stack index {i} of {}", dict.len()))?;
        let cgroup = r.u32()?;
        if cgroup as usize > cgroups.len() {
            return Err(format!("cgroup index {cgroup} of {}", cgroups.len()));
        }
        let count = r.u64()?;
        let weight = Weight::from_raw(r.varint()?);
        untimed.push(Untimed { stack, cgroup, count, weight });
    }
    r.done()?;
    Ok(())
}

impl Reader<'_> {
    fn i64z_plain(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        i64::try_from(v).map_err(|_| format!("number {v} out of range"))
    }
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
    fn bucket_round_trips() {
        let start = 1_700_000_000_000_000_000;
        let mut samples = Vec::new();
        for i in 0..500i64 {
            samples.push(RawSample {
                time_ns: start + i * 26_315_000 + (i % 7) * 1000,
                cpu: (i % 2) as u32,
                pid: 100 + (i % 3) as u32,
                tid: 100 + (i % 5) as u32,
                cgroup: (i % 3) as u32,
                stack: 1000 + (i * 7919) % 97,
                weight: Weight::from_u64(52_631_578),
            });
        }
        let untimed =
            vec![Untimed { stack: 5, cgroup: 1, count: 3, weight: Weight::from_raw(1_500_000_001) }];
        let blob = encode_bucket(start, 1000, &["/a", "/b"], &samples, &untimed);
        let d = decode_bucket(&blob, start).unwrap();
        let mut by_cpu = samples.clone();
        by_cpu.sort_by_key(|s| (s.cpu, s.time_ns));
        assert_eq!(d.samples, by_cpu);
        assert_eq!(d.untimed, untimed);
        assert_eq!(d.cgroups, vec!["/a".to_string(), "/b".to_string()]);
        // Every truncation of the blob is an error, not a panic.
        for cut in 0..blob.len() {
            assert!(decode_bucket(&blob[..cut], start).is_err(), "cut at {cut}");
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
