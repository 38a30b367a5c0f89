//! Latency histograms in the file: one row of `latency_spans` per host and block of time (the
//! metric block's length), holding every family and label of the block, each second's
//! histogram with its non-empty buckets only:
//!
//! ```text
//! u8 1 (version), then zstd of:
//! varint labels, each: u8 kind (LatencyKind::code), varint length, the label's bytes
//! varint rows, in label then time order, each: varint label index, zigzag varint ms since
//!   the previous row of the label (its first: since the row's start), varint slow, varint
//!   max_ns, varint sum_ns, varint buckets, each: varint bucket minus the previous one's,
//!   varint count
//! ```
//!
//! A label's seconds follow each other, so that the compressor finds what repeats from one
//! second to the next. A block's row is written when the block ends; the rows of a span of
//! ten minutes are folded into one when it ends, those of an hour at its end (as metric rows
//! are): a day is 24 rows, each compressed as a whole (see `bench/watch-storage.sh`).

use std::collections::{BTreeMap, HashMap};

use kflame::latency::{Histogram, LatencyKind, SLOTS};
use rusqlite::{Connection, params};

use crate::codec::{Reader, out_zig, put_varint};
use crate::db::{MAX_BUCKET_NS, TIME_UNIT_NS, corrupt};
use crate::{LatencyPoint, LatencyRow};

/// The first byte of a row's data: version 1, zstd-compressed.
const VERSION: u8 = 1;
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
}

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

    /// The row's bytes (times kept to the millisecond from `start_ns`).
    pub(crate) fn encode(&self, start_ns: i64) -> Vec<u8> {
        let mut plain = Vec::new();
        put_varint(&mut plain, self.labels.len() as u128);
        for (kind, label) in &self.labels {
            plain.push(kind.code());
            put_varint(&mut plain, label.len() as u128);
            plain.extend_from_slice(label.as_bytes());
        }
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|r| (r.label, r.time_ns));
        put_varint(&mut plain, rows.len() as u128);
        let start_ms = start_ns.div_euclid(TIME_UNIT_NS);
        let mut prev: Option<(u32, i64)> = None;
        for r in rows {
            let ms = r.time_ns.div_euclid(TIME_UNIT_NS);
            let since = match prev {
                Some((label, t)) if label == r.label => t,
                _ => start_ms,
            };
            prev = Some((r.label, ms));
            put_varint(&mut plain, u128::from(r.label));
            out_zig(&mut plain, i128::from(ms - since));
            for v in [r.slow, r.max_ns, r.sum_ns, r.buckets.len() as u64] {
                put_varint(&mut plain, u128::from(v));
            }
            let mut last = 0;
            for &(slot, count) in &r.buckets {
                put_varint(&mut plain, u128::from(slot - last));
                put_varint(&mut plain, u128::from(count));
                last = slot;
            }
        }
        let mut out = vec![VERSION];
        match zstd::bulk::compress(&plain, ZSTD_LEVEL) {
            Ok(z) => out.extend_from_slice(&z),
            // zstd never fails on a buffer in memory; should it, the row is not lost.
            Err(_) => unreachable_compress(&mut out, &plain),
        }
        out
    }

    /// Reads a row's bytes back (`start_ns`: the row's start).
    pub(crate) fn decode(data: &[u8], start_ns: i64) -> Result<Block, String> {
        let (&version, body) = data.split_first().ok_or("an empty latency row")?;
        let plain = match version {
            VERSION => crate::codec::decompress_limited(body, MAX_PLAIN)?,
            0 => body.to_vec(),
            v => return Err(format!("latency row version {v} (this kflame reads 0 and 1)")),
        };
        let mut r = Reader::new(&plain);
        let mut block = Block::default();
        let n = r.count(2)?;
        for _ in 0..n {
            let code = r.bytes(1)?[0];
            let kind = LatencyKind::from_code(code).ok_or_else(|| format!("unknown latency kind {code}"))?;
            let len = r.count(1)?;
            let label = String::from_utf8_lossy(r.bytes(len)?).into_owned();
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
            let mut buckets = Vec::with_capacity(n);
            let mut slot = 0u32;
            for _ in 0..n {
                slot = slot
                    .checked_add(r.u32()?)
                    .filter(|&s| (s as usize) < SLOTS)
                    .ok_or("a bucket past the last")?;
                buckets.push((slot, r.u64()?));
            }
            let time_ns = ms.checked_mul(TIME_UNIT_NS).ok_or("a latency row's time overflows")?;
            block.rows.push(Row { time_ns, label, slow, max_ns, sum_ns, buckets });
        }
        block.rows.sort_by_key(|r| r.time_ns);
        r.done()?;
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
                    (l.clone(), LatencyPoint { time_ns: r.time_ns, histogram, slow: r.slow })
                })
            })
            .collect()
    }
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
    let old: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT start_ns, data FROM latency_spans WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3",
        )?
        .query_map(params![host, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut all = block.clone();
    for (at, data) in old {
        let old = Block::decode(&data, at).map_err(|e| corrupt(format!("a stored latency row: {e}")))?;
        all.merge(old);
    }
    let (row_start, row_end) = closed.unwrap_or((start_ns, end_ns));
    conn.prepare_cached("DELETE FROM latency_spans WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3")?
        .execute(params![host, from, to])?;
    conn.prepare_cached("INSERT INTO latency_spans(host, start_ns, end_ns, data) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![host, row_start, row_end, all.encode(row_start)])?;
    Ok(())
}

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
        "SELECT host, start_ns, data FROM latency_spans
         WHERE start_ns >= ?1 AND start_ns < ?2 AND (?3 IS NULL OR host = ?3) ORDER BY start_ns",
    )?;
    let rows = st.query_map(params![from_ns.saturating_sub(MAX_BUCKET_NS), to_ns, host], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?))
    })?;
    for row in rows {
        let (host, start, data) = row?;
        let block = Block::decode(&data, start).map_err(ReadError::Corrupt)?;
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
        "SELECT start_ns, data FROM latency_spans
         WHERE start_ns >= ?1 AND start_ns < ?2 AND (?3 IS NULL OR host = ?3)",
    )?;
    let rows = st.query_map(params![from_ns.saturating_sub(MAX_BUCKET_NS), to_ns, host], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
    })?;
    for row in rows {
        let (start, data) = row?;
        let block = Block::decode(&data, start).map_err(ReadError::Corrupt)?;
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
            LatencyRow { kind: LatencyKind::Syscall, label: "write", histogram: &h, slow: 1 },
            LatencyRow { kind: LatencyKind::Runq, label: "cpu0", histogram: &empty, slow: 0 },
        ];
        b.push(10_001_000_000, &rows);
        b.push(10_002_000_000, &rows[..1]);
        let data = b.encode(10_000_000_000);
        let back = Block::decode(&data, 10_000_000_000).unwrap();
        let writes = back.points(LatencyKind::Syscall, Some("write"), 0, i64::MAX);
        assert_eq!(writes.len(), 2);
        assert_eq!(writes[0].1, LatencyPoint { time_ns: 10_001_000_000, histogram: h.clone(), slow: 1 });
        assert_eq!(back.points(LatencyKind::Runq, None, 0, i64::MAX).len(), 1);
        assert!(back.points(LatencyKind::Lock, None, 0, i64::MAX).is_empty());
        assert!(back.points(LatencyKind::Syscall, None, 10_002_000_000, i64::MAX).len() == 1);
        let mut merged = back.clone();
        merged.merge(Block::decode(&data, 10_000_000_000).unwrap());
        assert_eq!(merged.points(LatencyKind::Syscall, Some("write"), 0, i64::MAX).len(), 4);
        for cut in 0..data.len() {
            let _ = Block::decode(&data[..cut], 10_000_000_000);
        }
        assert!(Block::decode(&[7, 1, 2], 0).is_err());
    }
}
