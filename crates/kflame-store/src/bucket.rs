//! Profile bucket blobs: the samples of one (host, kind, capture) over a span of time.
//!
//! Format 2, written by this build (one format byte `02`, then):
//!
//! ```text
//! varint side_len, side_len bytes: a zstd frame of the side data below
//! the rest: 32-bit little-endian words of the rANS-coded columns (rans.rs)
//!
//! side data:
//! varint time_unit_ns                   resolution of sample times (1 ms)
//! varint window_ns                      0: one window; else the span each window covers
//! varint n_cgroups, n × (varint len, bytes)
//! varint n_dict, n × varint             global stack ids, ascending, delta-coded
//! varint samples
//! if samples > 0:
//!   stack model    n_dict × varint       timed samples of each stack (the profile itself)
//!   time model     varint n, n × (varint symbol delta, varint count)
//!   time escapes   varint n, n × varint
//!   cgroup model   (n_cgroups + 2) × varint
//!   weight         u8 mode: 0 a table: varint n, n × varint raw weight delta, n × varint count;
//!                           1 raw: one zigzag varint (128-bit) delta of the raw weight per sample
//! varint n_windows, n × (varint window delta, varint n_cpus,
//!                        n_cpus × (varint cpu delta, varint samples, zigzag ref_dt),
//!                        varint words of its stream, varint time escapes it holds)
//! varint n_untimed, n × (varint dict index, varint cgroup, varint count, varint raw weight)
//! ```
//!
//! Samples are ordered by window, CPU, then time; each CPU's count is in the side data, so
//! the CPU costs nothing per sample. Each window is a stream of its own (from the coder's
//! first state, no state carried from the window before), so a query that cuts a compacted
//! hour decodes only the windows it needs. Per sample, in order, the coded columns are:
//! - **stack**: the index in the dictionary, modelled by the stacks' counts: a sample costs
//!   `log2(samples / count of its stack)` bits, the bucket's empirical entropy;
//! - **time**: the delta from the CPU's previous sample (the span's start for its first)
//!   minus the CPU's most frequent delta in the window (a timer's period), zigzagged; 255 and up are an
//!   escape symbol and the value in the escapes;
//! - **cgroup**: 0 when the same as that of the stack's previous sample in the window (for
//!   a stack's first, the CPU's previous sample's), else the cgroup (0 none, i + 1) + 1;
//! - **weight**: the index in the table of distinct weights (nothing when all are equal, as
//!   for CPU samples), unless the weights are too many to tabulate (raw mode).
//!
//! A column of one symbol costs nothing. The counts of the stack model are the bucket's
//! profile: a query that takes a whole bucket without a cgroup filter and with equal weights
//! reads them instead of decoding samples. Format 1 (a zstd frame of varint columns, a
//! dictionary per bucket, pids and tids) is what earlier writers stored; it is read as it
//! is (pids and tids dropped). Decoding checks every count against the bytes left or the samples claimed
//! (at most [`MAX_SAMPLES`]), so a damaged blob is an error, never a panic or a huge
//! allocation.

use kflame::fold::Weight;
use rustc_hash::FxHashMap;

use crate::codec::{Reader, decompress_limited, out_zig, put_varint, unzigzag, zigzag};
use crate::rans;

/// The format byte of a zstd-compressed version-1 bucket blob (earlier writers).
const BUCKET_FORMAT_1: u8 = 1;
/// The format byte of a version-2 bucket blob: rANS-coded columns.
const BUCKET_FORMAT_2: u8 = 2;
/// Largest decompressed side data or version-1 payload accepted.
const MAX_BUCKET_BYTES: u64 = 256 << 20;
/// Largest CPU number accepted in a blob.
const MAX_CPU: u32 = 1 << 16;
/// Most samples one blob holds (a writer refuses more; a reader rejects a blob claiming
/// more): an hour at 19 Hz on 245 CPUs, and a bound on what a damaged blob can make a
/// reader allocate.
pub(crate) const MAX_SAMPLES: usize = 1 << 24;
/// Time symbols at and above this are escapes.
const TIME_ESCAPE: u32 = 255;
/// Most distinct weights kept as a table (more: raw mode).
const MAX_WEIGHT_TABLE: usize = 1 << 16;
/// zstd level of the side data.
const SIDE_ZSTD_LEVEL: i32 = 9;

/// One sample as the codec sees it: stack ids already global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawSample {
    pub(crate) time_ns: i64,
    pub(crate) cpu: u32,
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
    /// The resolution its times were stored at.
    pub(crate) time_unit_ns: i64,
    pub(crate) cgroups: Vec<String>,
    /// By CPU, then time.
    pub(crate) samples: Vec<RawSample>,
    pub(crate) untimed: Vec<Untimed>,
}

/// Encodes a bucket (format 2). Times must be in `[start_ns, ...)`; `time_unit_ns` ≥ 1
/// truncates them to that resolution; `window_ns` (0: one window) cuts the coded columns
/// into streams of that much time each, so that a query cutting the bucket decodes only
/// the windows it needs; at most [`MAX_SAMPLES`] samples (the caller checks).
pub(crate) fn encode_bucket(
    start_ns: i64,
    time_unit_ns: i64,
    window_ns: i64,
    cgroups: &[&str],
    samples: &[RawSample],
    untimed: &[Untimed],
) -> Vec<u8> {
    let window_of = |t: i64| if window_ns > 0 { ((t - start_ns) / window_ns) as usize } else { 0 };
    let mut samples = samples.to_vec();
    samples.sort_by_key(|s| (window_of(s.time_ns), s.cpu, s.time_ns));
    let n = samples.len();
    let mut dict: Vec<i64> = samples.iter().map(|s| s.stack).chain(untimed.iter().map(|u| u.stack)).collect();
    dict.sort_unstable();
    dict.dedup();
    let index: FxHashMap<i64, u32> = dict.iter().enumerate().map(|(i, &id)| (id, i as u32)).collect();

    // Runs of one window and CPU: (window, cpu, first sample, end, most frequent delta).
    let times: Vec<i64> = samples.iter().map(|s| (s.time_ns - start_ns) / time_unit_ns).collect();
    let mut runs: Vec<(usize, u32, usize, usize, i64)> = Vec::new();
    let mut i = 0;
    while i < n {
        let (w, cpu) = (window_of(samples[i].time_ns), samples[i].cpu);
        let j = i + samples[i..].iter().take_while(|s| s.cpu == cpu && window_of(s.time_ns) == w).count();
        let mut freq: FxHashMap<i64, u32> = FxHashMap::default();
        for d in times[i..j].windows(2) {
            *freq.entry(d[1] - d[0]).or_insert(0) += 1;
        }
        let ref_dt =
            freq.into_iter().max_by_key(|&(dt, c)| (c, std::cmp::Reverse(dt))).map_or(0, |(dt, _)| dt);
        runs.push((w, cpu, i, j, ref_dt));
        i = j;
    }

    // The columns' symbols; the escapes each window holds.
    let mut window_escapes: Vec<usize> = Vec::new();
    let mut stack_sym = Vec::with_capacity(n);
    let mut time_sym = Vec::with_capacity(n);
    let mut escapes: Vec<u128> = Vec::new();
    let mut cg_sym = Vec::with_capacity(n);
    let mut last_cg_of_stack = vec![u32::MAX; dict.len()];
    for (r, &(w, _, from, to, ref_dt)) in runs.iter().enumerate() {
        if r == 0 || runs[r - 1].0 != w {
            // Windows decode on their own: no state crosses them.
            window_escapes.push(0);
            last_cg_of_stack.fill(u32::MAX);
        }
        let escapes_before = escapes.len();
        let (mut last_t, mut cpu_cg) = (0i64, 0u32);
        for k in from..to {
            let s = &samples[k];
            let d = index[&s.stack];
            stack_sym.push(d);
            let z = zigzag(i128::from(times[k] - last_t - ref_dt));
            last_t = times[k];
            if z < u128::from(TIME_ESCAPE) {
                time_sym.push(z as u32);
            } else {
                time_sym.push(TIME_ESCAPE);
                escapes.push(z);
            }
            let expected = match last_cg_of_stack[d as usize] {
                u32::MAX => cpu_cg,
                cg => cg,
            };
            cg_sym.push(if s.cgroup == expected { 0 } else { s.cgroup + 1 });
            last_cg_of_stack[d as usize] = s.cgroup;
            cpu_cg = s.cgroup;
        }
        if let Some(e) = window_escapes.last_mut() {
            *e += escapes.len() - escapes_before;
        }
    }
    let mut weights: Vec<u128> = samples.iter().map(|s| s.weight.raw()).collect();
    weights.sort_unstable();
    weights.dedup();
    let table = weights.len() <= MAX_WEIGHT_TABLE;

    let mut side = Vec::with_capacity(dict.len() * 3 + 64);
    put_varint(&mut side, time_unit_ns as u128);
    put_varint(&mut side, window_ns.max(0) as u128);
    put_varint(&mut side, cgroups.len() as u128);
    for c in cgroups {
        put_varint(&mut side, c.len() as u128);
        side.extend_from_slice(c.as_bytes());
    }
    put_varint(&mut side, dict.len() as u128);
    let mut prev = 0i64;
    for &id in &dict {
        put_varint(&mut side, (id - prev) as u128);
        prev = id;
    }
    let mut streams: Vec<Vec<u32>> = Vec::new();
    put_varint(&mut side, n as u128);
    if n > 0 {
        let counts_of = |syms: &[u32], size: usize| {
            let mut c = vec![0u64; size];
            for &s in syms {
                c[s as usize] += 1;
            }
            c
        };
        let stack_counts = counts_of(&stack_sym, dict.len());
        for &c in &stack_counts {
            put_varint(&mut side, u128::from(c));
        }
        let time_counts = counts_of(&time_sym, TIME_ESCAPE as usize + 1);
        let present: Vec<(usize, u64)> =
            time_counts.iter().copied().enumerate().filter(|c| c.1 > 0).collect();
        put_varint(&mut side, present.len() as u128);
        let mut prev = 0usize;
        for &(s, c) in &present {
            put_varint(&mut side, (s - prev) as u128);
            put_varint(&mut side, u128::from(c));
            prev = s;
        }
        put_varint(&mut side, escapes.len() as u128);
        for &z in &escapes {
            put_varint(&mut side, z);
        }
        let cg_counts = counts_of(&cg_sym, cgroups.len() + 2);
        for &c in &cg_counts {
            put_varint(&mut side, u128::from(c));
        }
        let mut weight_sym = Vec::new();
        let mut weight_model = None;
        if table {
            side.push(0);
            put_varint(&mut side, weights.len() as u128);
            let mut prev = 0u128;
            for &w in &weights {
                put_varint(&mut side, w - prev);
                prev = w;
            }
            let widx: FxHashMap<u128, u32> =
                weights.iter().enumerate().map(|(i, &w)| (w, i as u32)).collect();
            weight_sym = samples.iter().map(|s| widx[&s.weight.raw()]).collect();
            let wc = counts_of(&weight_sym, weights.len());
            for &c in &wc {
                put_varint(&mut side, u128::from(c));
            }
            weight_model = rans::Model::new(&wc);
        } else {
            side.push(1);
            let mut prev = 0u128;
            for s in &samples {
                out_zig(&mut side, s.weight.raw().wrapping_sub(prev) as i128);
                prev = s.weight.raw();
            }
        }
        // Every model's total is n, which the caller keeps within MAX_SAMPLES. One stream
        // per window, each from the coder's first state.
        if let (Some(ms), Some(mt), Some(mc)) =
            (rans::Model::new(&stack_counts), rans::Model::new(&time_counts), rans::Model::new(&cg_counts))
        {
            let mut r = 0;
            while r < runs.len() {
                let w = runs[r].0;
                let end = r + runs[r..].iter().take_while(|x| x.0 == w).count();
                let (from, to) = (runs[r].2, runs[end - 1].3);
                let mut e = rans::Encoder::new(&ms);
                for k in (from..to).rev() {
                    if let Some(mw) = &weight_model {
                        e.put(mw, weight_sym[k]);
                    }
                    e.put(&mc, cg_sym[k]);
                    e.put(&mt, time_sym[k]);
                    e.put(&ms, stack_sym[k]);
                }
                streams.push(e.finish());
                r = end;
            }
        }
    }
    // The windows: index, CPUs with their samples and delta, words of the stream, escapes.
    put_varint(&mut side, streams.len() as u128);
    let mut r = 0;
    let (mut prev_w, mut si) = (0usize, 0usize);
    while r < runs.len() && si < streams.len() {
        let w = runs[r].0;
        let end = r + runs[r..].iter().take_while(|x| x.0 == w).count();
        put_varint(&mut side, (w - prev_w) as u128);
        prev_w = w;
        put_varint(&mut side, (end - r) as u128);
        let mut prev_cpu = 0u32;
        for &(_, cpu, from, to, ref_dt) in &runs[r..end] {
            put_varint(&mut side, u128::from(cpu - prev_cpu));
            prev_cpu = cpu;
            put_varint(&mut side, (to - from) as u128);
            out_zig(&mut side, i128::from(ref_dt));
        }
        put_varint(&mut side, streams[si].len() as u128);
        put_varint(&mut side, window_escapes[si] as u128);
        si += 1;
        r = end;
    }
    put_varint(&mut side, untimed.len() as u128);
    for u in untimed {
        put_varint(&mut side, u128::from(index[&u.stack]));
        put_varint(&mut side, u128::from(u.cgroup));
        put_varint(&mut side, u128::from(u.count));
        put_varint(&mut side, u.weight.raw());
    }
    let z = zstd::bulk::compress(&side, SIDE_ZSTD_LEVEL).unwrap_or_default();
    let words: usize = streams.iter().map(Vec::len).sum();
    let mut blob = Vec::with_capacity(z.len() + words * 4 + 8);
    blob.push(BUCKET_FORMAT_2);
    put_varint(&mut blob, z.len() as u128);
    blob.extend_from_slice(&z);
    for w in streams.iter().flatten() {
        blob.extend_from_slice(&w.to_le_bytes());
    }
    blob
}

/// Decodes a bucket blob; errors say what is wrong, for a "corrupt" message. Samples come
/// by CPU, then time (format 2: by window, then CPU, then time).
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

impl DecodeCtx {
    /// The global stack ids of the last blob parsed, by dictionary index.
    pub(crate) fn dict(&self) -> &[i64] {
        &self.dict
    }
}

/// [`decode_bucket`] into `out` (its vectors reused), with `ctx`'s buffers.
pub(crate) fn decode_bucket_into(
    ctx: &mut DecodeCtx,
    blob: &[u8],
    start_ns: i64,
    out: &mut DecodedBucket,
) -> Result<(), String> {
    decode_windows_into(ctx, blob, start_ns, &mut |_| true, out)
}

/// [`decode_bucket_into`] of the samples of the windows `want` takes (by their span, UTC
/// ns; every window for format 1); the untimed entries always.
pub(crate) fn decode_windows_into(
    ctx: &mut DecodeCtx,
    blob: &[u8],
    start_ns: i64,
    want: &mut dyn FnMut((i64, i64)) -> bool,
    out: &mut DecodedBucket,
) -> Result<(), String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty sample blob".into());
    };
    let mut raw = std::mem::take(&mut ctx.raw);
    let r = match format {
        BUCKET_FORMAT_1 => ctx.decompress(body, &mut raw).and_then(|()| decode_v1(&raw, start_ns, ctx, out)),
        BUCKET_FORMAT_2 => split_v2(ctx, body, &mut raw)
            .and_then(|words| Side::read(&raw, &mut ctx.dict).map(|side| (words, side)))
            .and_then(|(words, side)| side.samples(words, &ctx.dict, start_ns, want, out)),
        _ => Err(format!("unknown sample blob format {format}")),
    };
    ctx.raw = raw;
    r.map_err(|e| format!("sample blob: {e}"))
}

/// The side data of a format-2 blob, without the stack dictionary (kept in the context).
pub(crate) struct Side {
    unit: i64,
    window_ns: i64,
    cgroups: Vec<String>,
    models: Option<Models>,
    windows: Vec<Window>,
    untimed: Vec<Untimed>,
}

/// One window of a format-2 blob: its index, its runs (CPU, samples, most frequent time
/// delta), the words of its stream and the time escapes it holds.
type Window = (u64, Vec<(u32, usize, i64)>, usize, usize);

/// The column models of a format-2 blob with samples.
struct Models {
    stack_counts: Vec<u64>,
    stack: rans::Model,
    time: rans::Model,
    escapes: Vec<u128>,
    cgroup: rans::Model,
    weight: Option<rans::Model>,
    weight_table: Vec<u128>,
    raw_weights: Vec<u128>,
}

impl Side {
    /// Reads side data (decompressed), the dictionary into `dict`.
    fn read(raw: &[u8], dict: &mut Vec<i64>) -> Result<Side, String> {
        Side::read_until(raw, dict, false).and_then(|s| s.ok_or_else(|| "side data cut short".to_string()))
    }

    /// The dictionary alone into `dict`, the rest of the side data unread.
    fn read_dict(raw: &[u8], dict: &mut Vec<i64>) -> Result<(), String> {
        Side::read_until(raw, dict, true).map(|_| ())
    }

    /// Reads side data up to and with the dictionary, then the rest unless `dict_only`.
    fn read_until(raw: &[u8], dict: &mut Vec<i64>, dict_only: bool) -> Result<Option<Side>, String> {
        let mut r = Reader::new(raw);
        let unit = i64::try_from(r.u64()?).map_err(|_| "time unit out of range")?;
        if unit < 1 {
            return Err(format!("time unit {unit}"));
        }
        let window_ns = i64::try_from(r.u64()?).map_err(|_| "window out of range")?;
        let n_cg = r.count(1)?;
        let mut cgroups = Vec::with_capacity(n_cg);
        for _ in 0..n_cg {
            let len = r.count(1)?;
            cgroups.push(String::from_utf8_lossy(r.bytes(len)?).into_owned());
        }
        let n_dict = r.count(1)?;
        dict.clear();
        let mut prev = 0i64;
        for _ in 0..n_dict {
            prev = prev
                .checked_add(i64::try_from(r.u64()?).map_err(|_| "stack id out of range")?)
                .ok_or("stack id out of range")?;
            dict.push(prev);
        }
        if dict_only {
            return Ok(None);
        }
        let counts = |r: &mut Reader<'_>, size: usize| -> Result<Vec<u64>, String> {
            if size > r.left() {
                return Err(format!("{size} counts exceed the {} bytes left", r.left()));
            }
            (0..size).map(|_| r.u64()).collect()
        };
        let mut models = None;
        let n = r.u64()?;
        if n > MAX_SAMPLES as u64 {
            return Err(format!("{n} samples claimed, more than a bucket holds"));
        }
        let n = n as usize;
        if n > 0 {
            let stack_counts = counts(&mut r, n_dict)?;
            let present = r.count(2)?;
            let mut time_counts = vec![0u64; TIME_ESCAPE as usize + 1];
            let mut s = 0usize;
            for i in 0..present {
                let d = r.u64()? as usize;
                if i > 0 && d == 0 {
                    return Err("a time symbol is listed twice".into());
                }
                s = s
                    .checked_add(d)
                    .filter(|&s| s <= TIME_ESCAPE as usize)
                    .ok_or("time symbol out of range")?;
                time_counts[s] = r.u64()?;
            }
            let n_esc = r.count(1)?;
            let escapes: Vec<u128> = (0..n_esc).map(|_| r.varint()).collect::<Result<_, _>>()?;
            let cg_counts = counts(&mut r, n_cg + 2)?;
            let mode = r.bytes(1)?[0];
            let (mut weight_table, mut weight_counts, mut raw_weights) = (Vec::new(), Vec::new(), Vec::new());
            match mode {
                0 => {
                    let nw = r.count(2)?;
                    let mut prev = 0u128;
                    for _ in 0..nw {
                        prev = prev.checked_add(r.varint()?).ok_or("weight out of range")?;
                        weight_table.push(prev);
                    }
                    weight_counts = counts(&mut r, nw)?;
                }
                1 => {
                    if n > r.left() {
                        return Err(format!("{n} weights exceed the {} bytes left", r.left()));
                    }
                    let mut prev = 0u128;
                    for _ in 0..n {
                        prev = prev.wrapping_add(unzigzag(r.varint()?) as u128);
                        raw_weights.push(prev);
                    }
                }
                m => return Err(format!("unknown weight mode {m}")),
            }
            let model = |c: &[u64], what: &str| -> Result<rans::Model, String> {
                let m = rans::Model::new(c).ok_or_else(|| format!("the {what} counts are empty"))?;
                if m.total() != n as u64 {
                    return Err(format!("the {what} counts add up to {}, not the {n} samples", m.total()));
                }
                Ok(m)
            };
            models = Some(Models {
                stack: model(&stack_counts, "stack")?,
                time: model(&time_counts, "time")?,
                cgroup: model(&cg_counts, "cgroup")?,
                weight: if mode == 0 { Some(model(&weight_counts, "weight")?) } else { None },
                stack_counts,
                escapes,
                weight_table,
                raw_weights,
            });
        }
        let n_windows = r.count(3)?;
        let mut windows = Vec::with_capacity(n_windows);
        let (mut w, mut total) = (0u64, 0usize);
        for i in 0..n_windows {
            let d = r.u64()?;
            if i > 0 && d == 0 {
                return Err("a window is listed twice".into());
            }
            w = w.checked_add(d).ok_or("window out of range")?;
            let n_runs = r.count(3)?;
            let mut runs = Vec::with_capacity(n_runs);
            let mut cpu = 0u32;
            for j in 0..n_runs {
                let d = r.u32()?;
                if j > 0 && d == 0 {
                    return Err("a CPU is listed twice in a window".into());
                }
                cpu = cpu.checked_add(d).filter(|&c| c <= MAX_CPU).ok_or("CPU out of range")?;
                let count = usize::try_from(r.u64()?).map_err(|_| "sample count out of range")?;
                total = total
                    .checked_add(count)
                    .filter(|&t| t <= n)
                    .ok_or("more samples in windows than counted")?;
                runs.push((cpu, count, r.i64z()?));
            }
            let words = usize::try_from(r.u64()?).map_err(|_| "word count out of range")?;
            let esc = usize::try_from(r.u64()?).map_err(|_| "escape count out of range")?;
            windows.push((w, runs, words, esc));
        }
        if total != n {
            return Err(format!("the windows hold {total} samples, the counts {n}"));
        }
        let n_u = r.count(4)?;
        let mut untimed = Vec::with_capacity(n_u);
        for _ in 0..n_u {
            let i = r.u64()? as usize;
            let stack = *dict.get(i).ok_or_else(|| format!("stack index {i} of {}", dict.len()))?;
            let cgroup = r.u32()?;
            if cgroup as usize > n_cg {
                return Err(format!("cgroup index {cgroup} of {n_cg}"));
            }
            let count = r.u64()?;
            let weight = Weight::from_raw(r.varint()?);
            untimed.push(Untimed { stack, cgroup, count, weight });
        }
        r.done()?;
        Ok(Some(Side { unit, window_ns, cgroups, models, windows, untimed }))
    }

    /// The span of window `w` (UTC ns), or the whole time when windows are off.
    fn window_span(&self, start_ns: i64, w: u64) -> (i64, i64) {
        if self.window_ns == 0 {
            return (i64::MIN, i64::MAX);
        }
        let a = (w as i64).saturating_mul(self.window_ns).saturating_add(start_ns);
        (a, a.saturating_add(self.window_ns))
    }

    /// Samples in the windows `want` takes (and every untimed entry) into `out`.
    fn samples(
        self,
        words: &[u8],
        dict: &[i64],
        start_ns: i64,
        want: &mut dyn FnMut((i64, i64)) -> bool,
        out: &mut DecodedBucket,
    ) -> Result<(), String> {
        out.samples.clear();
        let mut samples = std::mem::take(&mut out.samples);
        let r = self.each(words, dict.len(), start_ns, want, |time_ns, cpu, cgroup, si, w| {
            samples.push(RawSample { time_ns, cpu, cgroup, stack: dict[si], weight: Weight::from_raw(w) });
        });
        out.samples = samples;
        r?;
        let Side { unit, cgroups, untimed, .. } = self;
        out.time_unit_ns = unit;
        out.cgroups = cgroups;
        out.untimed = untimed;
        Ok(())
    }

    /// Calls `f(time_ns, cpu, cgroup, stack index, raw weight)` with each sample of the
    /// windows `want` takes, by window, then CPU, then time.
    fn each(
        &self,
        words: &[u8],
        n_dict: usize,
        start_ns: i64,
        want: &mut dyn FnMut((i64, i64)) -> bool,
        mut f: impl FnMut(i64, u32, u32, usize, u128),
    ) -> Result<(), String> {
        let unit = self.unit;
        let total_words: usize = self
            .windows
            .iter()
            .map(|w| w.2)
            .try_fold(0usize, |a, b| a.checked_add(b))
            .ok_or("word count out of range")?;
        if total_words.checked_mul(4) != Some(words.len()) {
            return Err(format!(
                "{} bytes of coded columns, the windows say {total_words} words",
                words.len()
            ));
        }
        let Some(m) = &self.models else { return Ok(()) };
        if m.stack.symbols() != n_dict {
            return Err(format!("{} stack counts for {n_dict} stacks", m.stack.symbols()));
        }
        let n_cg = self.cgroups.len();
        // Decoding tables are built for the first window wanted.
        let mut tables: Option<(rans::Table, rans::Table, rans::Table, Option<rans::Table>)> = None;
        // Escapes and raw weights are in sample order: skipped windows' are counted past.
        let mut esc_at = 0usize;
        let mut k = 0usize;
        let mut at = 0usize;
        let mut last_cg_of_stack = Vec::new();
        // Each stack's samples decoded, checked against its count in the side data (what a
        // query of the whole bucket reads instead of the samples) when every window is.
        let mut seen = vec![0u64; n_dict];
        let mut every_window = true;
        for (w, runs, n_words, n_esc) in &self.windows {
            let bytes = words.get(at * 4..(at + n_words) * 4).ok_or("coded columns end early")?;
            at += n_words;
            let count: usize = runs.iter().map(|r| r.1).sum();
            let esc_end =
                esc_at.checked_add(*n_esc).filter(|&e| e <= m.escapes.len()).ok_or("time escapes missing")?;
            if !want(self.window_span(start_ns, *w)) {
                every_window = false;
                k += count;
                esc_at = esc_end;
                continue;
            }
            let (ts, tt, tc, tw) = tables.get_or_insert_with(|| {
                (
                    rans::Table::new(&m.stack),
                    rans::Table::new(&m.time),
                    rans::Table::new(&m.cgroup),
                    m.weight.as_ref().map(rans::Table::new),
                )
            });
            let mut d = rans::Decoder::new(bytes, &m.stack)?;
            // Only a bucket with cgroups needs each stack's last one.
            if n_cg > 0 {
                last_cg_of_stack.clear();
                last_cg_of_stack.resize(n_dict, u32::MAX);
            }
            for &(cpu, count, ref_dt) in runs {
                let (mut last_t, mut cpu_cg) = (0i64, 0u32);
                for _ in 0..count {
                    let si = d.get(ts)? as usize;
                    if let Some(n) = seen.get_mut(si) {
                        *n += 1;
                    }
                    let z = match d.get(tt)? {
                        TIME_ESCAPE => {
                            let z = *m.escapes[..esc_end].get(esc_at).ok_or("a time escape is missing")?;
                            esc_at += 1;
                            z
                        }
                        z => u128::from(z),
                    };
                    let dt = i64::try_from(unzigzag(z))
                        .ok()
                        .and_then(|v| v.checked_add(ref_dt))
                        .ok_or("time out of range")?;
                    last_t = last_t.checked_add(dt).ok_or("time out of range")?;
                    let cgroup = match d.get(tc)? {
                        0 if n_cg == 0 => 0,
                        0 => match last_cg_of_stack[si] {
                            u32::MAX => cpu_cg,
                            cg => cg,
                        },
                        c => c - 1,
                    };
                    if cgroup as usize > n_cg {
                        return Err(format!("cgroup index {cgroup} of {n_cg}"));
                    }
                    if n_cg > 0 {
                        last_cg_of_stack[si] = cgroup;
                    }
                    cpu_cg = cgroup;
                    let wt = match tw {
                        Some(t) => m.weight_table[d.get(t)? as usize],
                        None => m.raw_weights[k],
                    };
                    k += 1;
                    let time_ns = last_t
                        .checked_mul(unit)
                        .and_then(|v| v.checked_add(start_ns))
                        .ok_or("time out of range")?;
                    f(time_ns, cpu, cgroup, si, wt);
                }
            }
            d.finish()?;
            if esc_at != esc_end {
                return Err("a window's time escapes do not match its count".into());
            }
        }
        if esc_at != m.escapes.len() {
            return Err("time escapes left over".into());
        }
        if every_window && seen != m.stack_counts {
            return Err("the samples' stacks do not match the stack counts of the side data".into());
        }
        Ok(())
    }
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

/// The side data's reader and the blob's coded words.
fn split_v2<'a>(ctx: &mut DecodeCtx, body: &'a [u8], raw: &mut Vec<u8>) -> Result<&'a [u8], String> {
    let mut r = Reader::new(body);
    let side_len = r.count(1)?;
    let side = r.bytes(side_len)?;
    ctx.decompress(side, raw)?;
    Ok(&body[body.len() - r.left()..])
}

/// A format-2 blob's side data and coded words (the dictionary in the context); `None` for
/// a format-1 blob, which must be decoded whole.
pub(crate) fn parse<'a>(ctx: &mut DecodeCtx, blob: &'a [u8]) -> Result<Option<(Side, &'a [u8])>, String> {
    let Some((&BUCKET_FORMAT_2, body)) = blob.split_first() else { return Ok(None) };
    let mut raw = std::mem::take(&mut ctx.raw);
    let r =
        split_v2(ctx, body, &mut raw).and_then(|words| Side::read(&raw, &mut ctx.dict).map(|s| (s, words)));
    ctx.raw = raw;
    r.map(Some).map_err(|e| format!("sample blob: {e}"))
}

impl Side {
    /// Each window's span (UTC ns) and samples.
    pub(crate) fn window_samples(&self, start_ns: i64) -> Vec<((i64, i64), usize)> {
        self.windows
            .iter()
            .map(|w| (self.window_span(start_ns, w.0), w.1.iter().map(|r| r.1).sum()))
            .collect()
    }

    /// Adds the samples of the windows `want` takes that `keep(time_ns, cgroup)` takes to
    /// `per` (count and weight by index of the bucket's dictionary, [`DecodeCtx::dict`]),
    /// without making a sample of each.
    pub(crate) fn sum_into(
        &self,
        ctx: &DecodeCtx,
        words: &[u8],
        start_ns: i64,
        want: &mut dyn FnMut((i64, i64)) -> bool,
        keep: impl Fn(i64, u32) -> bool,
        per: &mut [(u64, Weight)],
    ) -> Result<(), String> {
        if per.len() != ctx.dict.len() {
            return Err(format!("{} sums for {} stacks", per.len(), ctx.dict.len()));
        }
        self.each(words, ctx.dict.len(), start_ns, want, |t, _, cg, si, w| {
            if keep(t, cg) {
                let e = &mut per[si];
                e.0 += 1;
                e.1 += Weight::from_raw(w);
            }
        })
        .map_err(|e| format!("sample blob: {e}"))
    }

    /// Each stack's timed samples (count and weight, by dictionary index) when the bucket's
    /// weights are all equal; false otherwise.
    pub(crate) fn counts_into(&self, per: &mut Vec<(u64, Weight)>) -> bool {
        per.clear();
        let Some(m) = &self.models else { return true };
        let w = match m.weight.as_ref().and_then(rans::Model::single) {
            Some(i) => Weight::from_raw(m.weight_table[i as usize]),
            None => return false,
        };
        per.extend(m.stack_counts.iter().map(|&c| (c, w.saturating_mul(c))));
        true
    }

    /// The untimed entries.
    pub(crate) fn untimed(&self) -> &[Untimed] {
        &self.untimed
    }

    /// The cgroups its samples name (index + 1 in a sample's `cgroup`).
    pub(crate) fn cgroups(&self) -> &[String] {
        &self.cgroups
    }
}

/// A stack's id, samples and weight.
#[cfg(test)]
type StackTotal = (i64, u64, Weight);

/// Each stack's (id, samples, weight) of a whole bucket, when its side data has them
/// (format 2, equal weights); `None` when its samples must be decoded.
#[cfg(test)]
pub(crate) fn bucket_totals(ctx: &mut DecodeCtx, blob: &[u8]) -> Result<Option<Vec<StackTotal>>, String> {
    let Some((side, _)) = parse(ctx, blob)? else { return Ok(None) };
    let mut per = Vec::new();
    if !side.counts_into(&mut per) {
        return Ok(None);
    }
    Ok(Some(ctx.dict.iter().zip(per).filter(|(_, p)| p.0 > 0).map(|(&id, (n, w))| (id, n, w)).collect()))
}

/// The global stack ids a bucket blob refers to (its dictionary).
pub(crate) fn bucket_stacks(blob: &[u8]) -> Result<Vec<i64>, String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty sample blob".into());
    };
    let mut ctx = DecodeCtx::default();
    let mut raw = Vec::new();
    match format {
        BUCKET_FORMAT_1 => {
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
        BUCKET_FORMAT_2 => {
            split_v2(&mut ctx, body, &mut raw).and_then(|_| Side::read_dict(&raw, &mut ctx.dict))?;
            Ok(ctx.dict)
        }
        _ => Err(format!("unknown sample blob format {format}")),
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

/// Decodes a format-1 payload (decompressed); its pids and tids are read and dropped.
fn decode_v1(raw: &[u8], start_ns: i64, ctx: &mut DecodeCtx, out: &mut DecodedBucket) -> Result<(), String> {
    let mut r = Reader::new(raw);
    let unit = i64::try_from(r.varint()?).map_err(|_| "time unit out of range")?;
    if unit < 1 {
        return Err(format!("time unit {unit}"));
    }
    out.time_unit_ns = unit;
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
    samples.resize(n, RawSample { time_ns: 0, cpu: 0, cgroup: 0, stack: 0, weight: Weight::ZERO });
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
    // Pids and tids (not kept since schema 4): checked, then dropped.
    for s in samples.iter() {
        let st = cpu_state(states, s.cpu);
        let code = r.u64()?;
        let i = if code == 0 { st.last_pid } else { code };
        st.last_pid = i;
        if i == 0 || i > pids.len() as u64 {
            return Err(format!("pid index {i} of {}", pids.len()));
        }
    }
    for _ in 0..n {
        let code = r.u64()?;
        if code > pids.len() as u64 {
            return Err(format!("tid index {code} of {}", pids.len()));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The format-1 encoder of schema 3 and before, kept to test that its blobs still read.
    fn encode_bucket_v1(
        start_ns: i64,
        time_unit_ns: i64,
        cgroups: &[&str],
        samples: &[(RawSample, u32, u32)],
        untimed: &[Untimed],
    ) -> Vec<u8> {
        let mut tasks = samples.to_vec();
        tasks.sort_by_key(|(s, _, _)| (s.cpu, s.time_ns));
        let samples: Vec<RawSample> = tasks.iter().map(|t| t.0).collect();
        let mut dict: Vec<i64> =
            samples.iter().map(|s| s.stack).chain(untimed.iter().map(|u| u.stack)).collect();
        dict.sort_unstable();
        dict.dedup();
        let index = |id: i64| dict.binary_search(&id).unwrap_or(0) as u64;
        let mut pids: Vec<u32> = tasks.iter().flat_map(|&(_, p, t)| [p, t]).collect();
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
        for &(s, pid, _) in &tasks {
            let st = cpu_state(&mut states, s.cpu);
            let i = pid_index(pid) as u64 + 1;
            put_varint(&mut out, if st.last_pid == i { 0 } else { u128::from(i) });
            st.last_pid = i;
        }
        for &(_, pid, tid) in &tasks {
            put_varint(&mut out, if tid == pid { 0 } else { pid_index(tid) + 1 });
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

    fn samples(start: i64) -> Vec<RawSample> {
        (0..500i64)
            .map(|i| RawSample {
                time_ns: start + i * 26_315_000 + (i % 7) * 1000,
                cpu: (i % 2) as u32,
                cgroup: (i % 3) as u32,
                stack: 1000 + (i * 7919) % 97,
                weight: Weight::from_u64(52_631_578),
            })
            .collect()
    }

    fn by_cpu(mut s: Vec<RawSample>, unit: i64, start: i64) -> Vec<RawSample> {
        for x in &mut s {
            x.time_ns = start + (x.time_ns - start) / unit * unit;
        }
        s.sort_by_key(|s| (s.cpu, s.time_ns));
        s
    }

    #[test]
    fn bucket_round_trips() {
        let start = 1_700_000_000_000_000_000;
        let untimed =
            vec![Untimed { stack: 5, cgroup: 1, count: 3, weight: Weight::from_raw(1_500_000_001) }];
        let samples = samples(start);
        for (unit, window) in [(1000, 0), (1_000_000, 0), (1_000_000, 1_000_000_000)] {
            let blob = encode_bucket(start, unit, window, &["/a", "/b"], &samples, &untimed);
            let mut d = decode_bucket(&blob, start).unwrap();
            // By window, then CPU and time.
            d.samples.sort_by_key(|s| (s.cpu, s.time_ns));
            assert_eq!(d.samples, by_cpu(samples.clone(), unit, start));
            assert_eq!(d.untimed, untimed);
            assert_eq!(d.time_unit_ns, unit);
            assert_eq!(d.cgroups, vec!["/a".to_string(), "/b".to_string()]);
            let mut dict = bucket_stacks(&blob).unwrap();
            dict.dedup();
            assert_eq!(dict.len(), 98, "97 sampled stacks and the untimed one");
            // Every truncation of the blob is an error, not a panic.
            for cut in 0..blob.len() {
                assert!(decode_bucket(&blob[..cut], start).is_err(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn weights_that_differ_and_buckets_without_samples_round_trip() {
        let start = 1_000;
        let mut s = samples(start);
        // Off-CPU nanoseconds: every weight its own (raw mode past the table's size).
        for (i, x) in s.iter_mut().enumerate() {
            x.weight = Weight::from_raw(i as u128 * 1_000_000_007 + 3);
        }
        let many: Vec<RawSample> = (0..MAX_WEIGHT_TABLE as i64 + 5)
            .map(|i| RawSample {
                time_ns: start + i,
                cpu: 0,
                cgroup: 0,
                stack: 7,
                weight: Weight::from_raw(i as u128),
            })
            .collect();
        for set in [s, many] {
            let blob = encode_bucket(start, 1, 0, &["/a", "/b"], &set, &[]);
            assert_eq!(decode_bucket(&blob, start).unwrap().samples, by_cpu(set.clone(), 1, start));
            let mut ctx = DecodeCtx::default();
            assert!(bucket_totals(&mut ctx, &blob).unwrap().is_none(), "weights differ");
        }
        let untimed = [Untimed { stack: 9, cgroup: 0, count: 4, weight: Weight::from_u64(4) }];
        let blob = encode_bucket(start, 1, 0, &[], &[], &untimed);
        let d = decode_bucket(&blob, start).unwrap();
        assert!(d.samples.is_empty());
        assert_eq!(d.untimed, untimed);
    }

    #[test]
    fn sums_of_windows_are_those_of_the_decoded_samples() {
        // Windows of 5 s over 13 s, cgroups, and weights that differ: every cut of the time
        // and every cgroup summed without samples equals the decoded samples filtered.
        let start = 1_700_000_000_000_000_000;
        let s: Vec<RawSample> = samples(start)
            .into_iter()
            .enumerate()
            .map(|(i, x)| RawSample { weight: Weight::from_u64(1 + (i % 4) as u64), ..x })
            .collect();
        let blob = encode_bucket(start, 1_000_000, 5_000_000_000, &["/a", "/b"], &s, &[]);
        let all = decode_bucket(&blob, start).unwrap().samples;
        let mut ctx = DecodeCtx::default();
        for (from, to, cg) in [(0, 13, None), (2, 7, None), (5, 10, Some(2)), (11, 20, Some(0)), (6, 6, None)]
        {
            let (from, to) = (start + from * 1_000_000_000, start + to * 1_000_000_000);
            let (side, words) = parse(&mut ctx, &blob).unwrap().unwrap();
            let mut per = vec![(0u64, Weight::ZERO); ctx.dict.len()];
            let keep = |t: i64, c: u32| t >= from && t < to && cg.is_none_or(|cg| c == cg);
            side.sum_into(&ctx, words, start, &mut |(a, b)| b > from && a < to, keep, &mut per).unwrap();
            let mut want: FxHashMap<i64, (u64, Weight)> = FxHashMap::default();
            for x in all.iter().filter(|x| keep(x.time_ns, x.cgroup)) {
                let e = want.entry(x.stack).or_insert((0, Weight::ZERO));
                e.0 += 1;
                e.1 += x.weight;
            }
            let got: FxHashMap<i64, (u64, Weight)> =
                ctx.dict.iter().zip(&per).filter(|(_, p)| p.0 > 0).map(|(&id, &p)| (id, p)).collect();
            assert_eq!(got, want, "{from}..{to} cgroup {cg:?}");
        }
    }

    #[test]
    fn totals_are_the_sums_of_the_samples() {
        let start = 1_700_000_000_000_000_000;
        let s = samples(start);
        let blob = encode_bucket(start, 1_000_000, 0, &["/a", "/b"], &s, &[]);
        let mut ctx = DecodeCtx::default();
        let t = bucket_totals(&mut ctx, &blob).unwrap().unwrap();
        let mut want: FxHashMap<i64, (u64, Weight)> = FxHashMap::default();
        for x in &s {
            let e = want.entry(x.stack).or_insert((0, Weight::ZERO));
            e.0 += 1;
            e.1 += x.weight;
        }
        assert_eq!(t.len(), want.len());
        for (id, n, w) in t {
            assert_eq!(want[&id], (n, w));
        }
    }

    #[test]
    fn a_cpu_timer_costs_little() {
        // 19 Hz on 2 CPUs for 10 minutes, one stack in eight repeated: the stacks cost their
        // entropy; times, CPUs, cgroup, weights and the dictionary little more.
        let start = 0;
        let s: Vec<RawSample> = (0..22_800i64)
            .map(|i| RawSample {
                time_ns: (i / 2) * 52_631_579 + (i % 2) * 3_000_000 + (i * 7 % 3) * 100_000,
                cpu: (i % 2) as u32,
                cgroup: 1,
                stack: if i % 8 == 0 { 1 } else { 2 + (i * 2_654_435_761) % 4096 },
                weight: Weight::ONE,
            })
            .collect();
        let blob = encode_bucket(start, 1_000_000, 60_000_000_000, &["/system.slice/x.service"], &s, &[]);
        let bits_per_sample = blob.len() as f64 * 8.0 / s.len() as f64;
        // The stacks' empirical entropy: what any code of them independently costs.
        let mut counts: FxHashMap<i64, f64> = FxHashMap::default();
        for x in &s {
            *counts.entry(x.stack).or_insert(0.0) += 1.0;
        }
        let n = s.len() as f64;
        let entropy: f64 = counts.values().map(|c| c / n * (n / c).log2()).sum();
        assert!(
            bits_per_sample < entropy + 1.5,
            "{bits_per_sample:.2} bits a sample, the stacks' entropy {entropy:.2}"
        );
        let mut d = decode_bucket(&blob, start).unwrap().samples;
        d.sort_by_key(|s| (s.cpu, s.time_ns));
        assert_eq!(d, by_cpu(s.clone(), 1_000_000, start));
        // Only the windows asked for: the second minute.
        let mut ctx = DecodeCtx::default();
        let mut out = DecodedBucket::default();
        decode_windows_into(&mut ctx, &blob, start, &mut |(a, _)| a == 60_000_000_000, &mut out).unwrap();
        let second: Vec<RawSample> = by_cpu(s, 1_000_000, start)
            .into_iter()
            .filter(|x| (60_000_000_000..120_000_000_000).contains(&x.time_ns))
            .collect();
        assert_eq!(out.samples, second);
    }

    #[test]
    fn format_1_blobs_still_read_without_their_tasks() {
        let start = 1_700_000_000_000_000_000;
        let s = samples(start);
        let tasks: Vec<(RawSample, u32, u32)> =
            s.iter().enumerate().map(|(i, &x)| (x, 100 + (i % 3) as u32, 100 + (i % 5) as u32)).collect();
        let untimed =
            vec![Untimed { stack: 5, cgroup: 1, count: 3, weight: Weight::from_raw(1_500_000_001) }];
        let blob = encode_bucket_v1(start, 1000, &["/a", "/b"], &tasks, &untimed);
        let d = decode_bucket(&blob, start).unwrap();
        assert_eq!(d.samples, by_cpu(s, 1000, start));
        assert_eq!(d.untimed, untimed);
        assert_eq!(d.time_unit_ns, 1000);
        assert_eq!(bucket_stacks(&blob).unwrap().len(), 98);
        let mut ctx = DecodeCtx::default();
        assert!(bucket_totals(&mut ctx, &blob).unwrap().is_none());
        for cut in 0..blob.len() {
            assert!(decode_bucket(&blob[..cut], start).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn damaged_blobs_are_errors_or_other_samples_never_a_panic() {
        // Every byte of a windowed blob with cgroups, escapes and a weight table, set to a
        // few values in turn: decoding, the totals and the dictionary must return.
        let start = 1_700_000_000_000_000_000;
        let mut s = samples(start);
        for (i, x) in s.iter_mut().enumerate() {
            x.weight = Weight::from_u64(4096 << (i % 3));
            if i % 50 == 0 {
                x.time_ns += 400_000_000;
            }
        }
        let untimed = [Untimed { stack: 5, cgroup: 1, count: 3, weight: Weight::ONE }];
        let blob = encode_bucket(start, 1_000_000, 5_000_000_000, &["/a", "/b"], &s, &untimed);
        let mut ctx = DecodeCtx::default();
        let mut out = DecodedBucket::default();
        let mut errors = 0;
        for i in 0..blob.len() {
            for v in [0u8, 1, 0x7f, 0x80, 0xff, blob[i] ^ 0x10] {
                let mut b = blob.clone();
                b[i] = v;
                if decode_bucket_into(&mut ctx, &b, start, &mut out).is_err() {
                    errors += 1;
                }
                let _ = bucket_totals(&mut ctx, &b);
                if let Ok(Some((side, words))) = parse(&mut ctx, &b) {
                    let mut per = vec![(0, Weight::ZERO); ctx.dict.len()];
                    let _ = side.sum_into(&ctx, words, start, &mut |_| true, |_, _| true, &mut per);
                }
                let _ = bucket_stacks(&b);
                let _ = decode_windows_into(&mut ctx, &b, start, &mut |(a, _)| a > start, &mut out);
            }
        }
        assert!(errors > blob.len(), "{errors} errors for {} bytes", blob.len());
    }
}
