//! Latency histograms in the file: one row of `latency_spans` per host and block of time (the
//! metric block's length), holding every family and label of the block, each second's
//! histogram with its non-empty buckets only:
//!
//! ```text
//! u8 3 (format), then zstd of:
//! varint labels, each: u8 kind (LatencyKind::code), varint length, the label's bytes,
//!   varint flags (1: derived, the family's total summed back by the reader), varint rows
//! columns over the rows, in label then time order:
//!   zigzag varint per row: its ms since the label's previous row (the first: since the
//!     row's start) minus the previous row's step (0 for the first)
//!   zigzag varint per row: its span (the ms its histogram covers) minus the label's previous
//!     row's (the first: minus 1000)
//!   varint per row: slow; max_ns; sum_ns; buckets (each column whole before the next)
//!   varint per bucket of every row: its slot minus the previous one's (the row's first: the
//!     slot); then varint per bucket: its count
//! ```
//!
//! Columns of like values, a family's total left out when it is the sum of its labels (the
//! watcher's always is): 62% of format 1's bytes for five minutes of a busy mix. The spans
//! (what the rates `FAMILY.slow` and `FAMILY.wait` are read over, `kflame_store_api::derived`)
//! are the same for every label of a read and change rarely (the reads' intervals, 1 s give
//! or take 10 ms): a column of zeros that compresses to almost nothing. A block's row is
//! written when the block ends; the rows of a span of ten minutes are folded into one when it
//! ends, those of an hour at its end (as metric rows are), each label's seconds summed into
//! 10-second histograms then ([`COARSE_NS`]): the last hour keeps its seconds, a day is 24
//! rows of 360 histograms per label (see `bench/watch-storage.sh` for the bytes). Format 2
//! (format 3 without spans), 1 (rows one after another) and 0 (format 1 uncompressed) are
//! read, their spans inferred: 1 s, or [`COARSE_NS`] in the row of a folded hour (a row
//! spanning an hour or more: the rows whose seconds [`write`] sums into 10-s histograms).

use std::collections::{BTreeMap, HashMap};

use kflame::latency::{Histogram, LatencyKind, SLOTS};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codec::{Reader, out_zig, put_varint};
use crate::db::{MAX_BUCKET_NS, TIME_UNIT_NS, corrupt};
use crate::{LatencyPoint, LatencyRow};

/// The first byte of a row's data: format 3 (columns with spans), zstd-compressed.
const VERSION: u8 = 3;
/// Format 3 without spans: read, no longer written.
const VERSION_2: u8 = 2;
/// Format 1 (a row after another), zstd-compressed: read, no longer written.
const VERSION_1: u8 = 1;
/// zstd level (rows are small: the highest levels cost little).
const ZSTD_LEVEL: i32 = 19;
/// Largest decompressed row accepted.
const MAX_PLAIN: usize = 64 << 20;

/// One histogram of a block, its label an index into the block's labels.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    time_ns: i64,
    label: u32,
    slow: u64,
    max_ns: u64,
    sum_ns: u64,
    buckets: Vec<(u32, u64)>,
    /// The milliseconds the histogram covers.
    span_ms: u32,
}

/// The span of the histograms of a read before spans were stored (formats 2 and older).
const OLD_SPAN_MS: u32 = 1000;

/// The histograms of one host and block, as they come.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Block {
    labels: Vec<(LatencyKind, String)>,
    index: HashMap<(LatencyKind, String), u32>,
    rows: Vec<Row>,
}

impl Block {
    /// Adds the histograms of one read at `time_ns`.
    pub(crate) fn push(&mut self, time_ns: i64, rows: &[LatencyRow<'_>]) {
        for r in rows {
            let key = (r.kind, r.label.to_string());
            let label = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.labels.len() as u32;
                    self.labels.push(key.clone());
                    self.index.insert(key, i);
                    i
                }
            };
            let buckets =
                (0u32..).zip(&r.histogram.counts).filter(|(_, c)| **c > 0).map(|(s, &c)| (s, c)).collect();
            self.rows.push(Row {
                time_ns,
                label,
                slow: r.slow,
                max_ns: r.histogram.max_ns,
                sum_ns: r.histogram.sum_ns,
                buckets,
                span_ms: r.span_ms,
            });
        }
    }

    /// Histograms held.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Adds the rows of `other` (a block read back from the file).
    fn merge(&mut self, other: Block) {
        for mut r in other.rows {
            let key = other.labels[r.label as usize].clone();
            r.label = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    let i = self.labels.len() as u32;
                    self.labels.push(key.clone());
                    self.index.insert(key, i);
                    i
                }
            };
            self.rows.push(r);
        }
        self.rows.sort_by_key(|r| r.time_ns);
    }

    /// The row's bytes (times kept to the millisecond from `start_ns`): format 3, columns.
    pub(crate) fn encode(&self, start_ns: i64) -> Vec<u8> {
        self.encode_at(start_ns, ZSTD_LEVEL)
    }

    /// [`Block::encode`] at zstd `level`: a block in progress, rewritten every second, at a
    /// cheap level; its last write and the folds at [`ZSTD_LEVEL`].
    pub(crate) fn encode_at(&self, start_ns: i64, level: i32) -> Vec<u8> {
        let derived = self.derived_labels();
        let mut rows: Vec<&Row> = self.rows.iter().filter(|r| !derived[r.label as usize]).collect();
        rows.sort_by_key(|r| (r.label, r.time_ns));
        let mut per_label = vec![0u64; self.labels.len()];
        for r in &rows {
            per_label[r.label as usize] += 1;
        }
        let mut plain = Vec::new();
        put_varint(&mut plain, self.labels.len() as u128);
        for (i, (kind, label)) in self.labels.iter().enumerate() {
            plain.push(kind.code());
            put_varint(&mut plain, label.len() as u128);
            plain.extend_from_slice(label.as_bytes());
            put_varint(&mut plain, u128::from(derived[i]));
            put_varint(&mut plain, u128::from(per_label[i]));
        }
        // Columns: times (the change of the step from the label's previous row), spans (the
        // change from the label's previous row), slow counts, maxima, sums, buckets per row,
        // then every row's buckets (slot steps, counts).
        let mut cols: [Vec<u8>; 8] = Default::default();
        let start_ms = start_ns.div_euclid(TIME_UNIT_NS);
        let mut prev: Option<(u32, i64, i64, u32)> = None;
        for r in &rows {
            let ms = r.time_ns.div_euclid(TIME_UNIT_NS);
            let (since, step, span) = match prev {
                Some((label, t, step, span)) if label == r.label => (t, step, span),
                _ => (start_ms, 0, OLD_SPAN_MS),
            };
            prev = Some((r.label, ms, ms - since, r.span_ms));
            out_zig(&mut cols[0], i128::from(ms - since - step));
            out_zig(&mut cols[1], i128::from(r.span_ms) - i128::from(span));
            put_varint(&mut cols[2], u128::from(r.slow));
            put_varint(&mut cols[3], u128::from(r.max_ns));
            put_varint(&mut cols[4], u128::from(r.sum_ns));
            put_varint(&mut cols[5], r.buckets.len() as u128);
            let mut last = 0;
            for &(slot, count) in &r.buckets {
                put_varint(&mut cols[6], u128::from(slot - last));
                put_varint(&mut cols[7], u128::from(count));
                last = slot;
            }
        }
        for c in &cols {
            plain.extend_from_slice(c);
        }
        let mut out = vec![VERSION];
        match zstd::bulk::compress(&plain, level) {
            Ok(z) => out.extend_from_slice(&z),
            // zstd never fails on a buffer in memory; should it, the row is not lost.
            Err(_) => unreachable_compress(&mut out, &plain),
        }
        out
    }

    /// Per label, whether its rows need not be stored: a family's total (label `""`) whose
    /// every row is the sum of the family's other labels at the same time, its span theirs
    /// (the longest of them: they are of one read), and which has a row wherever they do (the
    /// watcher's totals are). The reader sums them back.
    fn derived_labels(&self) -> Vec<bool> {
        let mut derived = vec![false; self.labels.len()];
        for (i, (kind, label)) in self.labels.iter().enumerate() {
            if !label.is_empty() {
                continue;
            }
            let totals: BTreeMap<i64, &Row> =
                self.rows.iter().filter(|r| r.label as usize == i).map(|r| (r.time_ns, r)).collect();
            if totals.len() != self.rows.iter().filter(|r| r.label as usize == i).count() {
                continue; // two totals at one time: kept as they are
            }
            let sums = self.sums_of(*kind, i as u32);
            derived[i] = !totals.is_empty()
                && sums.len() == totals.len()
                && sums.iter().all(|(t, s)| totals.get(t).is_some_and(|r| same(r, s)));
        }
        derived
    }

    /// The sums of the rows of `kind`'s labels other than `total`, per time.
    fn sums_of(&self, kind: LatencyKind, total: u32) -> BTreeMap<i64, Row> {
        let mut sums: BTreeMap<i64, Row> = BTreeMap::new();
        for r in &self.rows {
            if r.label == total || self.labels[r.label as usize].0 != kind {
                continue;
            }
            let s = sums.entry(r.time_ns).or_insert_with(|| Row {
                time_ns: r.time_ns,
                label: total,
                slow: 0,
                max_ns: 0,
                sum_ns: 0,
                buckets: Vec::new(),
                span_ms: 0,
            });
            add_row(s, r);
            s.span_ms = s.span_ms.max(r.span_ms);
        }
        sums
    }

    /// Each label's rows summed over windows of `step_ns` (at most `MAX_BUCKET_NS`), each
    /// sum at its window's last millisecond: what is kept of the seconds of an hour once the
    /// hour ends. The span of every label's sum is the window's: the spans of the reads in it
    /// added, each read (a time of the block, its span the longest of its rows) once, whether
    /// or not the label counted something in it, so that a rate read from the sum is the
    /// window's (a label busy in 3 of 10 s has a tenth of its slow events per second).
    pub(crate) fn coarsen(&mut self, step_ns: i64) {
        let step = step_ns.clamp(TIME_UNIT_NS, MAX_BUCKET_NS);
        // The last millisecond of the window (a time stored is a millisecond's): inside the
        // window, so that a range of whole windows counts it once.
        let end_of = |t: i64| t.div_euclid(step).saturating_add(1).saturating_mul(step) - TIME_UNIT_NS;
        let mut reads: BTreeMap<i64, u32> = BTreeMap::new();
        for r in &self.rows {
            let span = reads.entry(r.time_ns).or_default();
            *span = (*span).max(r.span_ms);
        }
        let mut spans: BTreeMap<i64, u32> = BTreeMap::new();
        for (t, span) in reads {
            let s = spans.entry(end_of(t)).or_default();
            *s = s.saturating_add(span);
        }
        let mut windows: BTreeMap<(u32, i64), Row> = BTreeMap::new();
        for r in self.rows.drain(..) {
            let end = end_of(r.time_ns);
            let w = windows.entry((r.label, end)).or_insert_with(|| Row {
                time_ns: end,
                label: r.label,
                slow: 0,
                max_ns: 0,
                sum_ns: 0,
                buckets: Vec::new(),
                span_ms: spans.get(&end).copied().unwrap_or(0),
            });
            add_row(w, &r);
        }
        self.rows = windows.into_values().collect();
        self.rows.sort_by_key(|r| r.time_ns);
    }

    /// Reads a row's bytes back (`[start_ns, end_ns)`: the row's span of time, which tells
    /// the spans of rows written without them: [`COARSE_NS`] in a row of an hour or more,
    /// whose seconds were summed, else 1 s).
    pub(crate) fn decode(data: &[u8], start_ns: i64, end_ns: i64) -> Result<Block, String> {
        let (version, plain) = plain_of(data)?;
        let old_span = if end_ns.saturating_sub(start_ns) >= HOUR_NS {
            (COARSE_NS / TIME_UNIT_NS) as u32
        } else {
            OLD_SPAN_MS
        };
        if version == VERSION || version == VERSION_2 {
            return Block::decode_columns(&plain, start_ns, (version == VERSION_2).then_some(old_span));
        }
        let mut r = Reader::new(&plain);
        let mut block = Block::default();
        let n = r.count(2)?;
        for _ in 0..n {
            let (kind, label) = read_label(&mut r)?;
            let i = block.labels.len() as u32;
            block.index.insert((kind, label.clone()), i);
            block.labels.push((kind, label));
        }
        let rows = r.count(6)?;
        let start_ms = start_ns.div_euclid(TIME_UNIT_NS);
        let mut prev: Option<(u32, i64)> = None;
        for _ in 0..rows {
            let label = r.u32()?;
            if label as usize >= block.labels.len() {
                return Err(format!("label {label} of {} in a latency row", block.labels.len()));
            }
            let since = match prev {
                Some((l, t)) if l == label => t,
                _ => start_ms,
            };
            let ms = since.checked_add(r.i64z()?).ok_or("a latency row's time overflows")?;
            prev = Some((label, ms));
            let (slow, max_ns, sum_ns) = (r.u64()?, r.u64()?, r.u64()?);
            let n = r.count(2)?;
            let buckets = read_buckets(&mut r, n)?;
            let time_ns = ms.checked_mul(TIME_UNIT_NS).ok_or("a latency row's time overflows")?;
            block.rows.push(Row { time_ns, label, slow, max_ns, sum_ns, buckets, span_ms: old_span });
        }
        block.rows.sort_by_key(|r| r.time_ns);
        r.done()?;
        Ok(block)
    }

    /// The labels of a row's bytes, its histograms left unread.
    pub(crate) fn decode_labels(data: &[u8]) -> Result<Vec<(LatencyKind, String)>, String> {
        let (version, plain) = plain_of(data)?;
        let mut r = Reader::new(&plain);
        let columns = version == VERSION || version == VERSION_2;
        let n = r.count(if columns { 4 } else { 2 })?;
        let mut labels = Vec::with_capacity(n);
        for _ in 0..n {
            labels.push(read_label(&mut r)?);
            if columns {
                let _flags_and_rows = (r.u64()?, r.u64()?);
            }
        }
        Ok(labels)
    }

    /// Format 3 (`old_span` `None`): labels with their row counts, then the columns of
    /// [`Block::encode`]; format 2 (the same without the spans' column): every span `old_span`.
    fn decode_columns(plain: &[u8], start_ns: i64, old_span: Option<u32>) -> Result<Block, String> {
        let mut r = Reader::new(plain);
        let mut block = Block::default();
        let n = r.count(4)?;
        let mut counts = Vec::with_capacity(n);
        let mut derived = Vec::with_capacity(n);
        for _ in 0..n {
            let (kind, label) = read_label(&mut r)?;
            let is_derived = match r.u64()? {
                0 => false,
                1 if label.is_empty() => true,
                f => return Err(format!("latency label flags {f} for `{label}`")),
            };
            let rows = r.count(5)?;
            if is_derived && rows > 0 {
                return Err("a derived latency label with rows of its own".into());
            }
            let i = block.labels.len() as u32;
            if block.index.insert((kind, label.clone()), i).is_some() {
                return Err(format!("latency label `{label}` twice in a row"));
            }
            block.labels.push((kind, label));
            counts.push(rows);
            derived.push(is_derived);
        }
        let total: usize = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c)).ok_or("too many rows")?;
        let start_ms = start_ns.div_euclid(TIME_UNIT_NS);
        let mut times = Vec::with_capacity(total);
        for (label, &c) in counts.iter().enumerate() {
            let (mut ms, mut step) = (start_ms, 0i64);
            for _ in 0..c {
                let change = r.i64z()?;
                let next = ms
                    .checked_add(step)
                    .and_then(|t| t.checked_add(change))
                    .ok_or("a latency row's time overflows")?;
                step = next - ms;
                ms = next;
                let time_ns = ms.checked_mul(TIME_UNIT_NS).ok_or("a latency row's time overflows")?;
                times.push((label as u32, time_ns));
            }
        }
        let mut spans = Vec::with_capacity(total);
        for &c in &counts {
            let mut span = OLD_SPAN_MS;
            for _ in 0..c {
                span = match old_span {
                    Some(s) => s,
                    None => i64::from(span)
                        .checked_add(r.i64z()?)
                        .and_then(|s| u32::try_from(s).ok())
                        .ok_or("a latency row's span out of range")?,
                };
                spans.push(span);
            }
        }
        let mut cols = [Vec::with_capacity(total), Vec::with_capacity(total), Vec::with_capacity(total)];
        for col in &mut cols {
            for _ in 0..total {
                col.push(r.u64()?);
            }
        }
        let mut sizes = Vec::with_capacity(total);
        for _ in 0..total {
            sizes.push(r.count(2)?);
        }
        let mut slots = Vec::with_capacity(total);
        for &n in &sizes {
            let mut slot = 0u32;
            let mut row = Vec::with_capacity(n);
            for _ in 0..n {
                slot = slot
                    .checked_add(r.u32()?)
                    .filter(|&s| (s as usize) < SLOTS)
                    .ok_or("a bucket past the last")?;
                row.push(slot);
            }
            slots.push(row);
        }
        for (i, (label, time_ns)) in times.into_iter().enumerate() {
            let mut buckets = Vec::with_capacity(slots[i].len());
            for &slot in &slots[i] {
                buckets.push((slot, r.u64()?));
            }
            block.rows.push(Row {
                time_ns,
                label,
                slow: cols[0][i],
                max_ns: cols[1][i],
                sum_ns: cols[2][i],
                buckets,
                span_ms: spans[i],
            });
        }
        r.done()?;
        for (i, _) in derived.iter().enumerate().filter(|(_, d)| **d) {
            let kind = block.labels[i].0;
            let sums = block.sums_of(kind, i as u32);
            block.rows.extend(sums.into_values());
        }
        block.rows.sort_by_key(|r| r.time_ns);
        Ok(block)
    }

    /// The histograms of `kind` (and `label`, when given) in `[from_ns, to_ns)`, each with
    /// its label.
    fn points(
        &self,
        kind: LatencyKind,
        label: Option<&str>,
        from_ns: i64,
        to_ns: i64,
    ) -> Vec<(String, LatencyPoint)> {
        self.rows
            .iter()
            .filter(|r| r.time_ns >= from_ns && r.time_ns < to_ns)
            .filter_map(|r| {
                let (k, l) = &self.labels[r.label as usize];
                (*k == kind && label.is_none_or(|want| want == l)).then(|| {
                    let mut histogram =
                        Histogram { max_ns: r.max_ns, sum_ns: r.sum_ns, ..Histogram::default() };
                    for &(s, c) in &r.buckets {
                        histogram.counts[s as usize] += c;
                    }
                    let point =
                        LatencyPoint { time_ns: r.time_ns, histogram, slow: r.slow, span_ms: r.span_ms };
                    (l.clone(), point)
                })
            })
            .collect()
    }
}

/// A row's format and its bytes decompressed.
fn plain_of(data: &[u8]) -> Result<(u8, Vec<u8>), String> {
    let (&version, body) = data.split_first().ok_or("an empty latency row")?;
    let plain = match version {
        VERSION | VERSION_2 | VERSION_1 => crate::codec::decompress_limited(body, MAX_PLAIN)?,
        0 => body.to_vec(),
        v => return Err(format!("latency row version {v} (this kflame reads 0 to 3)")),
    };
    Ok((version, plain))
}

/// A label: its kind's code, its length and bytes.
fn read_label(r: &mut Reader<'_>) -> Result<(LatencyKind, String), String> {
    let code = r.bytes(1)?[0];
    let kind = LatencyKind::from_code(code).ok_or_else(|| format!("unknown latency kind {code}"))?;
    let len = r.count(1)?;
    Ok((kind, String::from_utf8_lossy(r.bytes(len)?).into_owned()))
}

/// `n` buckets of format 1: slot steps and counts interleaved.
fn read_buckets(r: &mut Reader<'_>, n: usize) -> Result<Vec<(u32, u64)>, String> {
    let mut buckets = Vec::with_capacity(n);
    let mut slot = 0u32;
    for _ in 0..n {
        slot =
            slot.checked_add(r.u32()?).filter(|&s| (s as usize) < SLOTS).ok_or("a bucket past the last")?;
        buckets.push((slot, r.u64()?));
    }
    Ok(buckets)
}

/// Adds row `r` to the sum `s` (as `Histogram::add` adds).
fn add_row(s: &mut Row, r: &Row) {
    s.slow = s.slow.saturating_add(r.slow);
    s.max_ns = s.max_ns.max(r.max_ns);
    s.sum_ns = s.sum_ns.saturating_add(r.sum_ns);
    let mut merged = Vec::with_capacity(s.buckets.len().max(r.buckets.len()));
    let (mut a, mut b) = (s.buckets.iter().peekable(), r.buckets.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some(&&(x, m)), Some(&&(y, n))) if x == y => {
                merged.push((x, m.saturating_add(n)));
                a.next();
                b.next();
            }
            (Some(&&(x, m)), Some(&&(y, _))) if x < y => {
                merged.push((x, m));
                a.next();
            }
            (_, Some(&&(y, n))) => {
                merged.push((y, n));
                b.next();
            }
            (Some(&&(x, m)), None) => {
                merged.push((x, m));
                a.next();
            }
            (None, None) => break,
        }
    }
    s.buckets = merged;
}

/// Whether two rows hold the same histogram over the same span.
fn same(a: &Row, b: &Row) -> bool {
    (a.slow, a.max_ns, a.sum_ns, &a.buckets, a.span_ms) == (b.slow, b.max_ns, b.sum_ns, &b.buckets, b.span_ms)
}

/// Stores `plain` uncompressed (version 0) after the version byte pushed already.
fn unreachable_compress(out: &mut Vec<u8>, plain: &[u8]) {
    out[0] = 0;
    out.extend_from_slice(plain);
}

/// Whether the file has the rows of schema 6 (`latency_spans`).
pub(crate) fn has_latency(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'latency_spans'")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}

/// Rows of blocks are folded into one of this span when it ends, and those into one of
/// [`HOUR_NS`] (at most [`MAX_BUCKET_NS`]: readers look back that far).
const SPAN_NS: i64 = 600_000_000_000;
const HOUR_NS: i64 = 3_600_000_000_000;
/// The histograms of an hour's row, once the hour ends: one per label and 10 s. The heat map
/// of a day is drawn in columns of a minute or more; the seconds of an hour no longer recent
/// would cost ten times the bytes for a resolution no view of that range shows. The metrics
/// read from them (percentiles, maxima, rates) are then of 10 s; outliers keep their own times.
pub(crate) const COARSE_NS: i64 = 10_000_000_000;

/// Writes `block` of `host` (the block `[start_ns, end_ns)`), merged with what was written
/// before at the same start (a writer restarted within the block). When the block ends a span
/// of [`SPAN_NS`] or [`HOUR_NS`], the rows of that span are folded into one.
pub(crate) fn write(
    conn: &Connection,
    host: i64,
    start_ns: i64,
    end_ns: i64,
    block: &Block,
) -> rusqlite::Result<()> {
    let block_ns = (end_ns - start_ns).max(1);
    // The widest span the block closes, if any.
    let closed = [HOUR_NS, SPAN_NS].into_iter().find_map(|span| {
        let span = (block_ns * (span / block_ns).max(1)).min(MAX_BUCKET_NS.max(block_ns));
        let from = start_ns.div_euclid(span) * span;
        (end_ns >= from + span).then_some((from, from + span))
    });
    let (from, to) = closed.unwrap_or((start_ns, start_ns + 1));
    // The block's own row (written while it was in progress, or by a writer killed within
    // it: `stored_block` read that one into `block`) is replaced, the others of the span
    // folded in.
    let row = closed.unwrap_or((start_ns, end_ns));
    replace_rows(conn, host, (from, to), Some(start_ns), block.clone(), row)?;
    Ok(())
}

/// Replaces the latency rows of `host` starting in `[span.0, span.1)` (but the one starting
/// at `skip`, already in `all`) with one row `row`: `all` and those rows merged, summed into
/// 10-s histograms when the row is an hour or more. Returns how many rows were read.
fn replace_rows(
    conn: &Connection,
    host: i64,
    (from, to): (i64, i64),
    skip: Option<i64>,
    mut all: Block,
    (row_start, row_end): (i64, i64),
) -> rusqlite::Result<usize> {
    let old: Vec<(i64, i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT start_ns, end_ns, data FROM latency_spans
             WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND start_ns IS NOT ?4",
        )?
        .query_map(params![host, from, to, skip], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let read = old.len();
    for (at, end, data) in old {
        let old = Block::decode(&data, at, end).map_err(|e| corrupt(format!("a stored latency row: {e}")))?;
        all.merge(old);
    }
    if row_end - row_start >= HOUR_NS {
        all.coarsen(COARSE_NS);
    }
    conn.prepare_cached("DELETE FROM latency_spans WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3")?
        .execute(params![host, from, to])?;
    conn.prepare_cached("INSERT INTO latency_spans(host, start_ns, end_ns, data) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![host, row_start, row_end, all.encode(row_start)])?;
    Ok(read)
}

/// The closed hours, ending at most at `before_ns`, whose latency rows are not yet one row of
/// the whole hour, as (host, the hour's start): a writer stopped within an hour leaves its
/// rows as they were (seconds, spans of 10 minutes), since only the block that ends an hour
/// folds it.
pub(crate) fn unfolded_hours(conn: &Connection, before_ns: i64) -> rusqlite::Result<Vec<(i64, i64)>> {
    conn.prepare_cached(
        "SELECT host, start_ns - start_ns % ?1 AS h FROM latency_spans GROUP BY host, h
         HAVING (count(*) > 1 OR min(end_ns - start_ns) < ?1) AND h + ?1 <= ?2 ORDER BY h, host",
    )?
    .query_map(params![HOUR_NS, before_ns], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// Folds the latency rows of `host` in the hour starting at `from` into one row of the hour,
/// its seconds summed into 10-s histograms, as [`write`] does when a block ends an hour.
/// Returns how many rows fewer there are.
pub(crate) fn fold_hour(conn: &Connection, host: i64, from: i64) -> rusqlite::Result<u64> {
    let span = (from, from + HOUR_NS);
    let read = replace_rows(conn, host, span, None, Block::default(), span)?;
    Ok(read.saturating_sub(1) as u64)
}

/// The row stored for the block of `host` starting at `start_ns`, if any: what a writer
/// killed within the block wrote of it, read once by the next writer of that block before it
/// rewrites the row.
pub(crate) fn stored_block(conn: &Connection, host: i64, start_ns: i64) -> rusqlite::Result<Option<Block>> {
    let data: Option<(i64, Vec<u8>)> = conn
        .prepare_cached("SELECT end_ns, data FROM latency_spans WHERE host = ?1 AND start_ns = ?2")?
        .query_row(params![host, start_ns], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    data.map(|(end, d)| {
        Block::decode(&d, start_ns, end).map_err(|e| corrupt(format!("a stored latency row: {e}")))
    })
    .transpose()
}

/// Writes the row of a block in progress (`[start_ns, end_ns)`), every second: a `kill -9`
/// loses at most the second being read. Cheaply compressed; [`write`] at the block's end
/// replaces it.
pub(crate) fn write_partial(
    conn: &Connection,
    host: i64,
    start_ns: i64,
    end_ns: i64,
    block: &Block,
) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    tx.prepare_cached("DELETE FROM latency_spans WHERE host = ?1 AND start_ns = ?2")?
        .execute(params![host, start_ns])?;
    tx.prepare_cached("INSERT INTO latency_spans(host, start_ns, end_ns, data) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![host, start_ns, end_ns, block.encode_at(start_ns, PARTIAL_LEVEL)])?;
    tx.commit()
}

/// zstd level of a block in progress: microseconds for a block's seconds.
const PARTIAL_LEVEL: i32 = 3;

/// The stored histograms of a query, per (host, label), in time order.
pub(crate) fn read(
    conn: &Connection,
    host: Option<i64>,
    kind: LatencyKind,
    label: Option<&str>,
    from_ns: i64,
    to_ns: i64,
) -> Result<BTreeMap<(i64, String), Vec<LatencyPoint>>, ReadError> {
    let mut out: BTreeMap<(i64, String), Vec<LatencyPoint>> = BTreeMap::new();
    if !has_latency(conn)? {
        return Ok(out);
    }
    let mut st = conn.prepare_cached(
        "SELECT host, start_ns, end_ns, data FROM latency_spans
         WHERE start_ns >= ?1 AND start_ns < ?2 AND (?3 IS NULL OR host = ?3) ORDER BY start_ns",
    )?;
    let rows = st.query_map(params![from_ns.saturating_sub(MAX_BUCKET_NS), to_ns, host], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, Vec<u8>>(3)?))
    })?;
    for row in rows {
        let (host, start, end, data) = row?;
        let block = Block::decode(&data, start, end).map_err(ReadError::Corrupt)?;
        for (l, p) in block.points(kind, label, from_ns, to_ns) {
            out.entry((host, l)).or_default().push(p);
        }
    }
    for points in out.values_mut() {
        points.sort_by_key(|p| p.time_ns);
    }
    Ok(out)
}

/// The (host, kind, label) triples with histograms in a range.
pub(crate) fn labels(
    conn: &Connection,
    host: Option<i64>,
    from_ns: i64,
    to_ns: i64,
) -> Result<Vec<(LatencyKind, String)>, ReadError> {
    let mut out = std::collections::BTreeSet::new();
    if !has_latency(conn)? {
        return Ok(Vec::new());
    }
    let mut st = conn.prepare_cached(
        "SELECT start_ns, end_ns, data FROM latency_spans
         WHERE start_ns >= ?1 AND start_ns < ?2 AND (?3 IS NULL OR host = ?3)",
    )?;
    let rows = st.query_map(params![from_ns.saturating_sub(MAX_BUCKET_NS), to_ns, host], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?))
    })?;
    for row in rows {
        let (start, end, data) = row?;
        if start >= from_ns && end <= to_ns {
            // A row inside the range: every label it lists has histograms there.
            out.extend(Block::decode_labels(&data).map_err(ReadError::Corrupt)?);
            continue;
        }
        let block = Block::decode(&data, start, end).map_err(ReadError::Corrupt)?;
        for r in block.rows.iter().filter(|r| r.time_ns >= from_ns && r.time_ns < to_ns) {
            out.insert(block.labels[r.label as usize].clone());
        }
    }
    Ok(out.into_iter().collect())
}

/// Why a read failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// SQLite's.
    Sql(rusqlite::Error),
    /// A row that cannot be decoded.
    Corrupt(String),
}

impl From<rusqlite::Error> for ReadError {
    fn from(e: rusqlite::Error) -> ReadError {
        ReadError::Sql(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block of two seconds of two families round-trips, times to the millisecond; rows
    /// merged from a second writer's block keep both; damaged rows are errors, not panics.
    #[test]
    fn blocks_round_trip() {
        let mut h = Histogram::default();
        for ns in [900, 2_000, 2_100, 40_000_000] {
            h.record(ns);
        }
        let empty = Histogram::default();
        let mut b = Block::default();
        let rows = [
            LatencyRow { kind: LatencyKind::Syscall, label: "write", histogram: &h, slow: 1, span_ms: 1010 },
            LatencyRow { kind: LatencyKind::Runq, label: "cpu0", histogram: &empty, slow: 0, span_ms: 1010 },
        ];
        b.push(10_001_000_000, &rows);
        b.push(10_002_000_000, &rows[..1]);
        let end = 20_000_000_000;
        let data = b.encode(10_000_000_000);
        let back = Block::decode(&data, 10_000_000_000, end).unwrap();
        let writes = back.points(LatencyKind::Syscall, Some("write"), 0, i64::MAX);
        assert_eq!(writes.len(), 2);
        assert_eq!(
            writes[0].1,
            LatencyPoint { time_ns: 10_001_000_000, histogram: h.clone(), slow: 1, span_ms: 1010 }
        );
        assert_eq!(back.points(LatencyKind::Runq, None, 0, i64::MAX).len(), 1);
        assert!(back.points(LatencyKind::Lock, None, 0, i64::MAX).is_empty());
        assert!(back.points(LatencyKind::Syscall, None, 10_002_000_000, i64::MAX).len() == 1);
        let mut merged = back.clone();
        merged.merge(Block::decode(&data, 10_000_000_000, end).unwrap());
        assert_eq!(merged.points(LatencyKind::Syscall, Some("write"), 0, i64::MAX).len(), 4);
        for cut in 0..data.len() {
            let _ = Block::decode(&data[..cut], 10_000_000_000, end);
        }
        assert!(Block::decode(&[7, 1, 2], 0, end).is_err());
    }

    /// A row with its label's name.
    type Named = (i64, (LatencyKind, String), u64, u64, u64, Vec<(u32, u64)>, u32);

    /// Sorted rows, to compare blocks whose rows came in another order.
    fn sorted(b: &Block) -> Vec<Named> {
        let mut v: Vec<_> = b
            .rows
            .iter()
            .map(|r| {
                let label = b.labels[r.label as usize].clone();
                (r.time_ns, label, r.slow, r.max_ns, r.sum_ns, r.buckets.clone(), r.span_ms)
            })
            .collect();
        v.sort();
        v
    }

    /// A real block a watcher wrote in format 1 (10 s of a busy machine: every family, the
    /// totals among the labels) reads back the same from format 3, its totals left out of the
    /// bytes and summed back; format 3 is smaller.
    #[test]
    fn real_rows_in_columns_with_totals_summed_back() {
        let start = 1_764_000_000_000_000_000;
        let v1 = include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block.bin");
        assert_eq!(v1[0], VERSION_1);
        let end = start + 10_000_000_000;
        let block = Block::decode(v1, start, end).unwrap();
        assert!(block.rows.iter().all(|r| r.span_ms == OLD_SPAN_MS));
        let totals = block.labels.iter().filter(|(_, l)| l.is_empty()).count();
        assert!(totals >= 3, "{totals} family totals");
        assert_eq!(block.derived_labels().iter().filter(|d| **d).count(), totals);
        let v2 = block.encode(start);
        assert_eq!(v2[0], VERSION);
        assert!(v2.len() < v1.len(), "format 2: {} bytes, format 1: {}", v2.len(), v1.len());
        let back = Block::decode(&v2, start, end).unwrap();
        assert_eq!(sorted(&back), sorted(&block));
        // A total that is not the sum of its labels is kept as it is.
        let mut odd = block.clone();
        let i = odd.labels.iter().position(|(_, l)| l.is_empty()).unwrap() as u32;
        let r = odd.rows.iter_mut().find(|r| r.label == i).unwrap();
        r.slow += 1;
        assert_eq!(odd.derived_labels().iter().filter(|d| **d).count(), totals - 1);
        assert_eq!(sorted(&Block::decode(&odd.encode(start), start, end).unwrap()), sorted(&odd));
        // So is a total whose span is not its labels'.
        let mut odd = block.clone();
        let r = odd.rows.iter_mut().find(|r| r.label == i).unwrap();
        r.span_ms += 10;
        assert_eq!(odd.derived_labels().iter().filter(|d| **d).count(), totals - 1);
        assert_eq!(sorted(&Block::decode(&odd.encode(start), start, end).unwrap()), sorted(&odd));
        for cut in (0..v2.len()).step_by(7) {
            let _ = Block::decode(&v2[..cut], start, end);
        }
    }

    /// Seconds summed into 10-s histograms at each window's end: counts, slow counts and sums
    /// added, the largest maximum kept; a total stays the sum of its labels.
    #[test]
    fn coarsened_seconds_add_up() {
        let start = 1_764_000_000_000_000_000;
        let end = start + 10_000_000_000;
        let block = Block::decode(
            include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block.bin"),
            start,
            end,
        )
        .unwrap();
        let mut coarse = block.clone();
        coarse.coarsen(COARSE_NS);
        assert!(coarse.rows.len() < block.rows.len());
        for r in &coarse.rows {
            assert_eq!((r.time_ns + TIME_UNIT_NS) % COARSE_NS, 0);
            let window = r.time_ns.div_euclid(COARSE_NS);
            let of: Vec<&Row> = block
                .rows
                .iter()
                .filter(|s| s.label == r.label && s.time_ns.div_euclid(COARSE_NS) == window)
                .collect();
            assert_eq!(r.slow, of.iter().map(|s| s.slow).sum::<u64>());
            assert_eq!(r.sum_ns, of.iter().map(|s| s.sum_ns).sum::<u64>());
            assert_eq!(r.max_ns, of.iter().map(|s| s.max_ns).max().unwrap());
            let count = |rows: &[&Row]| rows.iter().flat_map(|s| &s.buckets).map(|b| b.1).sum::<u64>();
            assert_eq!(count(&[r]), count(&of));
        }
        let derived = block.derived_labels().iter().filter(|d| **d).count();
        assert_eq!(coarse.derived_labels().iter().filter(|d| **d).count(), derived);
        assert_eq!(sorted(&Block::decode(&coarse.encode(start), start, end).unwrap()), sorted(&coarse));
    }

    /// Spans round-trip per row (reads of 1 s give or take 10 ms, a label absent from some),
    /// the total still derived; they cost almost nothing: the rows without the spans' column
    /// (format 2) are a few bytes smaller at most.
    #[test]
    fn spans_round_trip_and_cost_almost_nothing() {
        let start = 1_764_000_000_000_000_000;
        let end = start + 10_000_000_000;
        let v1 = include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block.bin");
        let mut block = Block::decode(v1, start, end).unwrap();
        let jitter = [1000, 990, 1010, 1000, 1000, 1000, 1020, 980, 1000, 1000];
        let times: Vec<i64> = block
            .rows
            .iter()
            .map(|r| r.time_ns)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for r in &mut block.rows {
            r.span_ms = jitter[times.iter().position(|&t| t == r.time_ns).unwrap() % jitter.len()];
        }
        let totals = block.labels.iter().filter(|(_, l)| l.is_empty()).count();
        assert_eq!(block.derived_labels().iter().filter(|d| **d).count(), totals);
        let v3 = block.encode(start);
        assert_eq!(v3[0], VERSION);
        assert_eq!(sorted(&Block::decode(&v3, start, end).unwrap()), sorted(&block));
        let v2 = include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block-format2.bin");
        let plain_spans = Block::decode(v2, start, end).unwrap().encode(start);
        assert!(
            v3.len() <= plain_spans.len() + 24,
            "jittered spans: {} bytes, 1 s: {}",
            v3.len(),
            plain_spans.len()
        );
        assert!(
            plain_spans.len() <= v2.len() + 8,
            "format 3: {} bytes, format 2: {}",
            plain_spans.len(),
            v2.len()
        );
    }

    /// Rows written before spans were (format 2) read as seconds, or, in a row of an hour or
    /// more (an hour's seconds summed), as 10 s; written again (format 3) they keep them.
    #[test]
    fn old_rows_spans_inferred() {
        let start = 1_764_000_000_000_000_000;
        let v2 = include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block-format2.bin");
        assert_eq!(v2[0], VERSION_2);
        let seconds = Block::decode(v2, start, start + 10_000_000_000).unwrap();
        assert!(seconds.rows.iter().all(|r| r.span_ms == 1000));
        let v1 = include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block.bin");
        let from_v1 = Block::decode(v1, start, start + 10_000_000_000).unwrap();
        assert_eq!(sorted(&seconds), sorted(&from_v1));
        let coarse_v2 = include_bytes!("../../../fuzz/corpus/store_latency/watch-10s-block-coarse.bin");
        assert_eq!(coarse_v2[0], VERSION_2);
        let coarse = Block::decode(coarse_v2, start, start + HOUR_NS).unwrap();
        assert!(!coarse.rows.is_empty());
        assert!(coarse.rows.iter().all(|r| i64::from(r.span_ms) * TIME_UNIT_NS == COARSE_NS));
        let again = Block::decode(&coarse.encode(start), start, start + 10_000_000_000).unwrap();
        assert_eq!(sorted(&again), sorted(&coarse), "format 3 keeps the spans, whatever the row's length");
    }

    /// A window's span is the sum of its reads' spans, each read once, the same for every
    /// label, busy in the window's every second or not.
    #[test]
    fn coarse_spans_are_the_windows_reads() {
        let h = {
            let mut h = Histogram::default();
            h.record(5_000_000);
            h
        };
        let mut b = Block::default();
        let t0 = 1_764_000_000_000_000_000i64;
        for i in 0..10i64 {
            let span_ms = if i == 4 { 1010 } else { 1000 };
            let mut rows =
                vec![LatencyRow { kind: LatencyKind::Lock, label: "mutex", histogram: &h, slow: 1, span_ms }];
            if i < 3 {
                rows.push(LatencyRow {
                    kind: LatencyKind::Lock,
                    label: "rwsem:W",
                    histogram: &h,
                    slow: 2,
                    span_ms,
                });
            }
            b.push(t0 + i * 1_000_000_000 + 500_000_000, &rows);
        }
        b.coarsen(COARSE_NS);
        assert_eq!(b.rows.len(), 2);
        assert!(b.rows.iter().all(|r| r.span_ms == 10_010), "{:?}", b.rows);
        let rwsem = b.rows.iter().find(|r| b.labels[r.label as usize].1 == "rwsem:W").unwrap();
        assert_eq!(rwsem.slow, 6);
    }
}
