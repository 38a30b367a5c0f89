//! Per-event records (the events of triggered captures, the always-on outliers) in blocks:
//! one row of `event_blocks` per (capture, host) and append, at most [`MAX_BLOCK_EVENTS`]
//! events and [`MAX_BLOCK_NS`] of time a row, its events in time order, in columns:
//!
//! ```text
//! u8 2 (version), then zstd of:
//! varint n                          events
//! varint stacks, each: varint id minus the previous one (the first: the id); ascending
//! 3 string tables (comm, kind, event name), each: varint count, each: varint length, bytes
//! zigzag varint, (n − 1) × varint   time, ns: the first's, then each minus the one before
//! n × varint                        duration + 1, ns (0: none)
//! n × varint                        pid
//! n × zigzag varint                 tid − pid
//! n × varint                        CPU
//! n × zigzag varint                 weight − duration (none: 0)
//! n × varint                        index into the stacks
//! n × varint                        index into the comms, the kinds, the event names (3 columns)
//! ```
//!
//! A column of one value (the CPU of a one-CPU capture, the kind of a capture) is a run the
//! compressor takes for nothing; a stack, a task name or an event name costs its index; the
//! weight of a wait or a call, its duration, costs nothing. Events of the same time keep the
//! order they were written in, as the rows of schema 6 did (its `events` table, a row per
//! event, is converted by the migration to schema 7).
//!
//! Version 1 (written before) differs in two columns: every time is a zigzag delta (the first
//! from 0), and the weight is itself. Versions 0 and 3 are the columns of 1 and 2 uncompressed
//! (zstd never fails on a buffer in memory: not written in practice). All are read.

use std::collections::HashMap;

use kflame::events::EventRecord;
use rusqlite::{Connection, params};

use crate::codec::{Reader, out_zig, put_varint};
use crate::db::{MAX_BUCKET_NS, corrupt};
use crate::{CaptureId, StackId, StoredEvent};

/// The first byte of a row's data: version 2, zstd-compressed.
const VERSION: u8 = 2;
/// Version 2 uncompressed.
const VERSION_PLAIN: u8 = 3;
/// zstd level: a block of a 10-s window of system calls is a few MB of columns, written while
/// the capture runs.
const ZSTD_LEVEL: i32 = 9;
/// zstd level of a folded row of outliers: tens of kB at most, written once by maintenance.
const FOLD_ZSTD_LEVEL: i32 = 19;
/// Largest decompressed block accepted.
const MAX_PLAIN: usize = 16 << 20;
/// Most events a block holds when written (a query of a short range decodes no more).
pub(crate) const MAX_BLOCK_EVENTS: usize = 1 << 16;
/// Longest span of a block's event times when written: a reader looks back that far.
pub(crate) const MAX_BLOCK_NS: i64 = MAX_BUCKET_NS;
/// Bytes an event takes in the columns at least (one a column).
const MIN_EVENT_BYTES: usize = 10;

/// One event of a block: the stack and the strings as indexes into the block's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packed {
    pub(crate) time_ns: i64,
    pub(crate) duration_ns: Option<u64>,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    pub(crate) weight: u64,
    stack: u32,
    comm: u32,
    kind: u32,
    event: u32,
}

/// The events of one row, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Block {
    /// Stack ids, ascending.
    stacks: Vec<u32>,
    /// Task names, kind names, event names.
    strings: [Vec<String>; 3],
    events: Vec<Packed>,
}

/// An event as it is written: its stack by id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plain<'a> {
    pub(crate) time_ns: i64,
    pub(crate) duration_ns: Option<u64>,
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    pub(crate) weight: u64,
    pub(crate) stack: u32,
    pub(crate) comm: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) event: &'a str,
}

impl<'a> Plain<'a> {
    /// A record of the writer's (its time and weight checked already), its stack `stack`.
    pub(crate) fn of(ev: &EventRecord<'a>, stack: u32) -> Plain<'a> {
        Plain {
            time_ns: ev.ts_ns.unwrap_or(0).min(i64::MAX as u64) as i64,
            // As schema 6 kept them: a duration is at most i64::MAX.
            duration_ns: ev.duration_ns.map(|d| d.min(i64::MAX as u64)),
            pid: ev.pid.unwrap_or(0),
            tid: ev.tid.unwrap_or(0),
            cpu: ev.cpu,
            weight: ev.weight,
            stack,
            comm: ev.comm.unwrap_or(""),
            kind: ev.kind.name(),
            event: ev.event,
        }
    }
}

/// The index of `s` in `table`, added when new.
fn lookup<'a>(map: &mut HashMap<&'a str, u32>, table: &mut Vec<String>, s: &'a str) -> u32 {
    *map.entry(s).or_insert_with(|| {
        table.push(s.to_string());
        table.len() as u32 - 1
    })
}

impl Block {
    /// A block of `events`, already in time order (ties in the order written).
    pub(crate) fn new(events: &[Plain<'_>]) -> Block {
        let mut stacks: Vec<u32> = events.iter().map(|e| e.stack).collect();
        stacks.sort_unstable();
        stacks.dedup();
        let mut maps: [HashMap<&str, u32>; 3] = Default::default();
        let mut strings: [Vec<String>; 3] = Default::default();
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            let [mc, mk, me] = &mut maps;
            let [sc, sk, se] = &mut strings;
            out.push(Packed {
                time_ns: e.time_ns,
                duration_ns: e.duration_ns,
                pid: e.pid,
                tid: e.tid,
                cpu: e.cpu,
                weight: e.weight,
                // Every stack of the events is in the list.
                stack: stacks.binary_search(&e.stack).unwrap_or(0) as u32,
                comm: lookup(mc, sc, e.comm),
                kind: lookup(mk, sk, e.kind),
                event: lookup(me, se, e.event),
            });
        }
        Block { stacks, strings, events: out }
    }

    /// Events held.
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    /// The time of the first and the last event (none when empty).
    pub(crate) fn span(&self) -> Option<(i64, i64)> {
        Some((self.events.first()?.time_ns, self.events.last()?.time_ns))
    }

    /// The stack ids its events use, ascending.
    pub(crate) fn stacks(&self) -> &[u32] {
        &self.stacks
    }

    /// The events in `[from_ns, to_ns)`, in time order.
    pub(crate) fn in_range(&self, from_ns: i64, to_ns: i64) -> &[Packed] {
        let lo = self.events.partition_point(|e| e.time_ns < from_ns);
        let hi = self.events.partition_point(|e| e.time_ns < to_ns).max(lo);
        &self.events[lo..hi]
    }

    /// One of its events as a reader gets it.
    pub(crate) fn stored(&self, capture: CaptureId, e: &Packed) -> StoredEvent {
        let [comms, kinds, names] = &self.strings;
        StoredEvent {
            capture,
            time_ns: e.time_ns,
            duration_ns: e.duration_ns,
            pid: e.pid,
            tid: e.tid,
            comm: comms[e.comm as usize].clone(),
            cpu: e.cpu,
            kind: kinds[e.kind as usize].clone(),
            event: names[e.event as usize].clone(),
            stack: StackId(i64::from(self.stacks[e.stack as usize])),
            weight: e.weight,
        }
    }

    /// The block of its events at or after `cutoff` (its tables holding only what they use).
    pub(crate) fn since(&self, cutoff: i64) -> Block {
        let lo = self.events.partition_point(|e| e.time_ns < cutoff);
        let plain: Vec<Plain<'_>> = self.events[lo..].iter().map(|e| self.plain(e)).collect();
        Block::new(&plain)
    }

    fn plain<'s>(&'s self, e: &Packed) -> Plain<'s> {
        let [comms, kinds, names] = &self.strings;
        Plain {
            time_ns: e.time_ns,
            duration_ns: e.duration_ns,
            pid: e.pid,
            tid: e.tid,
            cpu: e.cpu,
            weight: e.weight,
            stack: self.stacks[e.stack as usize],
            comm: &comms[e.comm as usize],
            kind: &kinds[e.kind as usize],
            event: &names[e.event as usize],
        }
    }

    /// The row's bytes; `None` when its columns would be more than a reader takes
    /// ([`MAX_PLAIN`]): the writer splits it.
    pub(crate) fn encode(&self) -> Option<Vec<u8>> {
        self.encode_at(ZSTD_LEVEL)
    }

    /// [`Block::encode`] at zstd level `level`.
    fn encode_at(&self, level: i32) -> Option<Vec<u8>> {
        let plain = self.columns();
        if plain.len() > MAX_PLAIN {
            return None;
        }
        let mut out = vec![VERSION];
        match zstd::bulk::compress(&plain, level) {
            Ok(z) => out.extend_from_slice(&z),
            // zstd never fails on a buffer in memory; should it, the block is kept as it is.
            Err(_) => {
                out[0] = VERSION_PLAIN;
                out.extend_from_slice(&plain);
            }
        }
        Some(out)
    }

    /// The columns, uncompressed.
    fn columns(&self) -> Vec<u8> {
        self.columns_of(true)
    }

    /// The columns of version 2, or of version 1 (what earlier writers wrote: for tests).
    fn columns_of(&self, v2: bool) -> Vec<u8> {
        let mut plain = Vec::with_capacity(16 * self.events.len() + 64);
        put_varint(&mut plain, self.events.len() as u128);
        put_varint(&mut plain, self.stacks.len() as u128);
        let mut last = 0u32;
        for &s in &self.stacks {
            put_varint(&mut plain, u128::from(s - last));
            last = s;
        }
        for table in &self.strings {
            put_varint(&mut plain, table.len() as u128);
            for s in table {
                put_varint(&mut plain, s.len() as u128);
                plain.extend_from_slice(s.as_bytes());
            }
        }
        let mut t = None;
        for e in &self.events {
            let d = i128::from(e.time_ns) - i128::from(t.unwrap_or(0));
            match t {
                // In time order: never negative.
                Some(_) if v2 => put_varint(&mut plain, d as u128),
                _ => out_zig(&mut plain, d),
            }
            t = Some(e.time_ns);
        }
        for e in &self.events {
            put_varint(&mut plain, e.duration_ns.map_or(0, |d| u128::from(d) + 1));
        }
        for e in &self.events {
            put_varint(&mut plain, u128::from(e.pid));
        }
        for e in &self.events {
            out_zig(&mut plain, i128::from(e.tid) - i128::from(e.pid));
        }
        for e in &self.events {
            put_varint(&mut plain, u128::from(e.cpu));
        }
        for e in &self.events {
            match v2 {
                true => out_zig(&mut plain, i128::from(e.weight) - i128::from(e.duration_ns.unwrap_or(0))),
                false => put_varint(&mut plain, u128::from(e.weight)),
            }
        }
        let columns: [fn(&Packed) -> u32; 4] = [|e| e.stack, |e| e.comm, |e| e.kind, |e| e.event];
        for column in columns {
            for e in &self.events {
                put_varint(&mut plain, u128::from(column(e)));
            }
        }
        plain
    }

    /// Reads a row's bytes back.
    pub(crate) fn decode(data: &[u8]) -> Result<Block, String> {
        let (v2, plain) = plain_of(data)?;
        let mut r = Reader::new(&plain);
        let n = r.count(MIN_EVENT_BYTES)?;
        let stacks = read_stacks(&mut r)?;
        let mut strings: [Vec<String>; 3] = Default::default();
        for (table, what) in strings.iter_mut().zip(["task name", "kind", "event name"]) {
            let count = r.count(1)?;
            table.reserve(count);
            for _ in 0..count {
                let len = r.count(1)?;
                let s = std::str::from_utf8(r.bytes(len)?).map_err(|_| format!("a {what} not in UTF-8"))?;
                table.push(s.to_string());
            }
        }
        if n > r.left() / MIN_EVENT_BYTES {
            return Err(format!("{n} events in {} bytes", r.left()));
        }
        let mut events = vec![
            Packed {
                time_ns: 0,
                duration_ns: None,
                pid: 0,
                tid: 0,
                cpu: 0,
                weight: 0,
                stack: 0,
                comm: 0,
                kind: 0,
                event: 0
            };
            n
        ];
        let mut t = 0i64;
        for (i, e) in events.iter_mut().enumerate() {
            let d = match (v2, i) {
                (true, 0) | (false, _) => r.i64z()?,
                (true, _) => {
                    i64::try_from(r.u64()?).map_err(|_| format!("the time of event {i} overflows"))?
                }
            };
            if i > 0 && d < 0 {
                return Err(format!("event {i} earlier than the one before"));
            }
            t = t.checked_add(d).ok_or_else(|| format!("the time of event {i} overflows"))?;
            e.time_ns = t;
        }
        for e in events.iter_mut() {
            e.duration_ns = r.u64()?.checked_sub(1);
        }
        for e in events.iter_mut() {
            e.pid = r.u32()?;
        }
        for (i, e) in events.iter_mut().enumerate() {
            let tid = i64::from(e.pid) + r.i64z()?;
            e.tid = u32::try_from(tid).map_err(|_| format!("event {i}: thread id {tid} out of range"))?;
        }
        for e in events.iter_mut() {
            e.cpu = r.u32()?;
        }
        for (i, e) in events.iter_mut().enumerate() {
            e.weight = match v2 {
                false => r.u64()?,
                true => {
                    let w = i128::from(e.duration_ns.unwrap_or(0)) + i128::from(r.i64z()?);
                    u64::try_from(w).map_err(|_| format!("event {i}: weight {w} out of range"))?
                }
            };
        }
        let sizes = [stacks.len(), strings[0].len(), strings[1].len(), strings[2].len()];
        for (c, (size, what)) in
            sizes.into_iter().zip(["stack", "task name", "kind", "event name"]).enumerate()
        {
            for (i, e) in events.iter_mut().enumerate() {
                let v = r.u32()?;
                if v as usize >= size {
                    return Err(format!("event {i}: {what} {v} of {size}"));
                }
                match c {
                    0 => e.stack = v,
                    1 => e.comm = v,
                    2 => e.kind = v,
                    _ => e.event = v,
                }
            }
        }
        r.done()?;
        Ok(Block { stacks, strings, events })
    }
}

/// The decompressed columns of a row, and whether they are of version 2 (else 1).
fn plain_of(data: &[u8]) -> Result<(bool, Vec<u8>), String> {
    let (&version, body) = data.split_first().ok_or("an empty event block")?;
    let v2 = match version {
        0 | 1 => false,
        VERSION | VERSION_PLAIN => true,
        v => return Err(format!("event block version {v} (this kflame reads 0 to 3)")),
    };
    match version {
        1 | VERSION => Ok((v2, crate::codec::decompress_limited(body, MAX_PLAIN)?)),
        _ if body.len() <= MAX_PLAIN => Ok((v2, body.to_vec())),
        _ => Err(format!("an event block of {} bytes", body.len())),
    }
}

/// The stack list of a block, after its event count.
fn read_stacks(r: &mut Reader<'_>) -> Result<Vec<u32>, String> {
    let count = r.count(1)?;
    let mut stacks = Vec::with_capacity(count);
    let mut last = 0u32;
    for i in 0..count {
        let d = r.u32()?;
        if i > 0 && d == 0 {
            return Err(format!("stack {i} of the list repeats the one before"));
        }
        last = last.checked_add(d).ok_or_else(|| format!("stack {i} of the list out of range"))?;
        stacks.push(last);
    }
    Ok(stacks)
}

/// The stack ids a row's events use, ascending (its columns not decoded).
pub(crate) fn block_stacks(data: &[u8]) -> Result<Vec<u32>, String> {
    let (_, plain) = plain_of(data)?;
    let mut r = Reader::new(&plain);
    r.count(MIN_EVENT_BYTES)?;
    read_stacks(&mut r)
}

/// Whether the file keeps events in blocks (schema 7); before, a row each in `events`.
pub(crate) fn has_blocks(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'event_blocks'")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}

/// Writes `events` of `capture` on host id `host` (in any order: sorted here by time, ties
/// kept in the order given) as rows of at most [`MAX_BLOCK_EVENTS`] and [`MAX_BLOCK_NS`].
pub(crate) fn write(
    conn: &Connection,
    capture: i64,
    host: i64,
    events: &mut [Plain<'_>],
) -> rusqlite::Result<()> {
    events.sort_by_key(|e| e.time_ns);
    let mut to = Target { capture, host, id: None, level: ZSTD_LEVEL };
    write_sorted(conn, &mut to, events).map(|_| ())
}

/// Where rows go: capture, host, the id of the next row (when given), zstd level.
struct Target {
    capture: i64,
    host: i64,
    id: Option<i64>,
    level: i32,
}

/// Writes `events` (in time order) as [`write`] does; returns the rows written.
fn write_sorted(conn: &Connection, to: &mut Target, events: &[Plain<'_>]) -> rusqlite::Result<usize> {
    let mut rows = 0;
    let mut rest = events;
    while let Some(first) = rest.first() {
        let limit = first.time_ns.saturating_add(MAX_BLOCK_NS);
        let n = rest.partition_point(|e| e.time_ns < limit).clamp(1, MAX_BLOCK_EVENTS);
        rows += write_block(conn, to, &rest[..n])?;
        rest = &rest[n..];
    }
    Ok(rows)
}

/// Writes one row of `events` (in time order, at least one), split in two when its columns
/// would be more than a reader takes. Returns the rows.
fn write_block(conn: &Connection, to: &mut Target, events: &[Plain<'_>]) -> rusqlite::Result<usize> {
    let block = Block::new(events);
    let Some(data) = block.encode_at(to.level) else {
        if events.len() < 2 {
            return Err(rusqlite::Error::ToSqlConversionFailure(
                format!("an event of more than {MAX_PLAIN} bytes (its task and event names)").into(),
            ));
        }
        let (a, b) = events.split_at(events.len() / 2);
        return Ok(write_block(conn, to, a)? + write_block(conn, to, b)?);
    };
    let (first, last) = block.span().unwrap_or((0, 0));
    conn.prepare_cached(
        "INSERT INTO event_blocks(id, capture, host, first_ns, last_ns, count, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![to.id.take(), to.capture, to.host, first, last, block.len() as i64, data])?;
    Ok(1)
}

/// The always-on outliers (capture < 0) of a closed span are folded into one row per
/// (capture, host) and span: the appends of ten minutes (a row per family and 10-s bucket)
/// into one, and those of an hour into one once the hour is closed. One zstd frame and one
/// set of tables for the span instead of one per append, and a row of kB rather than many of
/// tens of bytes. An hour is the longest a row may last ([`MAX_BLOCK_NS`]).
pub(crate) const FOLD_SPAN_NS: i64 = 600_000_000_000;
/// See [`FOLD_SPAN_NS`].
pub(crate) const FOLD_HOUR_NS: i64 = MAX_BLOCK_NS;

/// Outlier rows to fold into one: capture, host, and the span `[from_ns, to_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FoldKey {
    pub(crate) capture: i64,
    pub(crate) host: i64,
    pub(crate) from_ns: i64,
    pub(crate) to_ns: i64,
}

/// The widest span of a row starting at `first_ns` that ended by `closed_ns`: its hour, else
/// its ten minutes; none while both go on.
fn closed_span(first_ns: i64, closed_ns: i64) -> Option<(i64, i64)> {
    [FOLD_HOUR_NS, FOLD_SPAN_NS].into_iter().find_map(|span| {
        let from = first_ns.div_euclid(span).checked_mul(span)?;
        let to = from.checked_add(span)?;
        (to <= closed_ns).then_some((from, to))
    })
}

/// The outlier rows that can be fewer: per (capture, host) and closed span (ended by
/// `closed_ns`), the rows lying in it, when they are more than its events need (a row holds
/// [`MAX_BLOCK_EVENTS`]); the newest spans first. A row crossing its span's end (a row of
/// another writer's) stays as it is. Rows written late into a span folded already make it
/// foldable again.
pub(crate) fn outlier_folds(conn: &Connection, closed_ns: i64) -> rusqlite::Result<Vec<FoldKey>> {
    if !has_blocks(conn)? {
        return Ok(Vec::new());
    }
    let mut groups: HashMap<FoldKey, (u64, u64)> = HashMap::new();
    let mut st = conn.prepare_cached(
        "SELECT capture, host, first_ns, last_ns, count FROM event_blocks WHERE capture < 0 AND first_ns < ?1",
    )?;
    let mut rows = st.query([closed_ns])?;
    while let Some(r) = rows.next()? {
        let (capture, host, first, last, count): (i64, i64, i64, i64, i64) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        let Some((from_ns, to_ns)) = closed_span(first, closed_ns) else { continue };
        if last >= to_ns {
            continue;
        }
        let g = groups.entry(FoldKey { capture, host, from_ns, to_ns }).or_default();
        g.0 += 1;
        g.1 += count.max(0) as u64;
    }
    let mut out: Vec<FoldKey> = groups
        .into_iter()
        .filter(|(_, (rows, events))| *rows > events.div_ceil(MAX_BLOCK_EVENTS as u64).max(1))
        .map(|(k, _)| k)
        .collect();
    out.sort_unstable_by_key(|k| (std::cmp::Reverse(k.from_ns), k.capture, k.host));
    Ok(out)
}

/// Folds the rows of `key` (those lying in its span) into as few as hold their events (one,
/// unless more than a row holds), in the caller's transaction: a writer killed meanwhile
/// leaves the rows as they were. The events are merged in time order, those of the same time
/// in the order of the rows, then of the row, as a reader sorted them; the first row keeps its
/// id, so that a reader orders them among other rows as before. Returns the rows before and
/// after.
pub(crate) fn fold(conn: &Connection, key: FoldKey) -> rusqlite::Result<(usize, usize)> {
    let rows: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT id, data FROM event_blocks
             WHERE capture = ?1 AND host = ?2 AND first_ns >= ?3 AND first_ns < ?4 AND last_ns < ?4
             ORDER BY id",
        )?
        .query_map(params![key.capture, key.host, key.from_ns, key.to_ns], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if rows.len() < 2 {
        return Ok((rows.len(), rows.len()));
    }
    let blocks: Vec<Block> = rows.iter().map(|(id, data)| decode_row(*id, data)).collect::<Result<_, _>>()?;
    let mut events: Vec<Plain<'_>> =
        blocks.iter().flat_map(|b| b.events.iter().map(move |e| b.plain(e))).collect();
    // Stable: ties stay in the order of the rows, then of each row.
    events.sort_by_key(|e| e.time_ns);
    let mut del = conn.prepare_cached("DELETE FROM event_blocks WHERE id = ?1")?;
    for (id, _) in &rows {
        del.execute([id])?;
    }
    let mut to = Target { capture: key.capture, host: key.host, id: Some(rows[0].0), level: FOLD_ZSTD_LEVEL };
    let after = write_sorted(conn, &mut to, &events)?;
    Ok((rows.len(), after))
}

/// A row's block, or the error naming it.
fn decode_row(id: i64, data: &[u8]) -> rusqlite::Result<Block> {
    Block::decode(data).map_err(|e| corrupt(format!("event_blocks row {id}: {e}")))
}

/// The events of `capture` in `[from_ns, to_ns)` (of host `host`, when given), in time order;
/// those of the same time in the order written.
pub(crate) fn read(
    conn: &Connection,
    capture: CaptureId,
    host: Option<&str>,
    from_ns: i64,
    to_ns: i64,
) -> rusqlite::Result<Vec<StoredEvent>> {
    let mut out = Vec::new();
    if from_ns >= to_ns {
        return Ok(out);
    }
    let mut st = conn.prepare_cached(
        "SELECT id, data FROM event_blocks
         WHERE capture = ?1 AND first_ns >= ?2 AND first_ns < ?3 AND last_ns >= ?4
           AND (?5 IS NULL OR host = (SELECT id FROM hosts WHERE name = ?5))
         ORDER BY id",
    )?;
    let mut rows =
        st.query(params![capture.0, from_ns.saturating_sub(MAX_BLOCK_NS), to_ns, from_ns, host])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let block = decode_row(id, r.get_ref(1)?.as_blob()?)?;
        out.extend(block.in_range(from_ns, to_ns).iter().map(|e| block.stored(capture, e)));
    }
    // Rows in the order written: the sort keeps that order among events of the same time.
    out.sort_by_key(|e| e.time_ns);
    Ok(out)
}

/// How many events `capture` has.
pub(crate) fn count(conn: &Connection, capture: CaptureId) -> rusqlite::Result<u64> {
    conn.prepare_cached("SELECT coalesce(sum(count), 0) FROM event_blocks WHERE capture = ?1")?
        .query_row([capture.0], |r| r.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
}

/// Deletes up to `limit` rows whose events are all before `cutoff`; returns (rows, events).
pub(crate) fn delete_before(conn: &Connection, cutoff: i64, limit: i64) -> rusqlite::Result<(usize, u64)> {
    let rows: Vec<(i64, i64)> = conn
        .prepare_cached("SELECT id, count FROM event_blocks WHERE last_ns < ?1 LIMIT ?2")?
        .query_map(params![cutoff, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut del = conn.prepare_cached("DELETE FROM event_blocks WHERE id = ?1")?;
    for (id, _) in &rows {
        del.execute([id])?;
    }
    Ok((rows.len(), rows.iter().map(|r| r.1.max(0) as u64).sum()))
}

/// Rewrites up to `limit` rows whose events start before `cutoff` and end at or after it,
/// keeping the events from `cutoff` on; returns (rows, events deleted).
pub(crate) fn cut_before(conn: &Connection, cutoff: i64, limit: i64) -> rusqlite::Result<(usize, u64)> {
    let rows: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached("SELECT id, data FROM event_blocks WHERE first_ns < ?1 AND last_ns >= ?1 LIMIT ?2")?
        .query_map(params![cutoff, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut deleted = 0u64;
    for (id, data) in &rows {
        let block = decode_row(*id, data)?;
        let kept = block.since(cutoff);
        deleted += (block.len() - kept.len()) as u64;
        let Some((first, last)) = kept.span() else {
            // Nothing at or after the cutoff (the row's times said otherwise): the row goes.
            conn.prepare_cached("DELETE FROM event_blocks WHERE id = ?1")?.execute([id])?;
            continue;
        };
        // Fewer events and names than a block that decoded: never more than a reader takes.
        let data =
            kept.encode().ok_or_else(|| corrupt(format!("event_blocks row {id}: too large to cut")))?;
        conn.prepare_cached(
            "UPDATE event_blocks SET first_ns = ?2, last_ns = ?3, count = ?4, data = ?5 WHERE id = ?1",
        )?
        .execute(params![id, first, last, kept.len() as i64, data])?;
    }
    Ok((rows.len(), deleted))
}

/// Calls `f` with the stack ids of each row's events.
pub(crate) fn each_stack_list(conn: &Connection, mut f: impl FnMut(&[u32])) -> rusqlite::Result<()> {
    if !has_blocks(conn)? {
        return Ok(());
    }
    let mut st = conn.prepare_cached("SELECT id, data FROM event_blocks")?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let stacks = block_stacks(r.get_ref(1)?.as_blob()?)
            .map_err(|e| corrupt(format!("event_blocks row {id}: {e}")))?;
        f(&stacks);
    }
    Ok(())
}

/// An event row of schema 6, owned.
struct OldRow {
    time_ns: i64,
    duration_ns: Option<u64>,
    pid: u32,
    tid: u32,
    cpu: u32,
    weight: u64,
    stack: u32,
    comm: String,
    kind: String,
    event: String,
}

/// Moves the rows of the `events` table of schema 6 (renamed `events_v6` by migration 7) into
/// blocks, a (capture, host) at a time in time order (ties in row order), and drops it. Read
/// back, each capture's events come as its rows did; only outliers of two hosts at the very
/// same nanosecond may come host by host rather than in the order they were written.
pub(crate) fn convert_v6_events(conn: &Connection) -> rusqlite::Result<()> {
    let exists: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events_v6'",
        [],
        |r| r.get(0),
    )?;
    if exists == 0 {
        return Ok(());
    }
    let mut st = conn.prepare(
        "SELECT rowid, capture, host, time_ns, duration_ns, pid, tid, comm, cpu, kind, event, stack, weight
         FROM events_v6 ORDER BY capture, host, time_ns, rowid",
    )?;
    let mut q = st.query([])?;
    let mut group: Option<(i64, i64)> = None;
    let mut rows: Vec<OldRow> = Vec::new();
    let flush = |key: Option<(i64, i64)>, rows: &mut Vec<OldRow>| -> rusqlite::Result<()> {
        if let Some((capture, host)) = key {
            let mut plain: Vec<Plain<'_>> = rows
                .iter()
                .map(|r| Plain {
                    time_ns: r.time_ns,
                    duration_ns: r.duration_ns,
                    pid: r.pid,
                    tid: r.tid,
                    cpu: r.cpu,
                    weight: r.weight,
                    stack: r.stack,
                    comm: &r.comm,
                    kind: &r.kind,
                    event: &r.event,
                })
                .collect();
            write(conn, capture, host, &mut plain)?;
        }
        rows.clear();
        Ok(())
    };
    while let Some(r) = q.next()? {
        let rowid: i64 = r.get(0)?;
        let key = (r.get(1)?, r.get(2)?);
        let int = |i: usize, what: &str| -> rusqlite::Result<u32> {
            let v: i64 = r.get(i)?;
            u32::try_from(v).map_err(|_| corrupt(format!("events row {rowid}: {what} {v} out of range")))
        };
        let text = |i: usize| -> rusqlite::Result<String> {
            Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                    String::from_utf8_lossy(b).into_owned()
                }
                v => {
                    return Err(corrupt(format!(
                        "events row {rowid}: a {:?} where text was expected",
                        v.data_type()
                    )));
                }
            })
        };
        let row = OldRow {
            time_ns: r.get(3)?,
            duration_ns: r.get::<_, Option<i64>>(4)?.map(|d| d as u64),
            pid: int(5, "pid")?,
            tid: int(6, "tid")?,
            comm: text(7)?,
            cpu: int(8, "CPU")?,
            kind: text(9)?,
            event: text(10)?,
            stack: int(11, "stack id")?,
            weight: r.get::<_, i64>(12)? as u64,
        };
        // A group's rows are written a block's worth at a time.
        if group != Some(key) || rows.len() >= MAX_BLOCK_EVENTS {
            flush(group, &mut rows)?;
            group = Some(key);
        }
        rows.push(row);
    }
    flush(group, &mut rows)?;
    drop(q);
    drop(st);
    conn.execute_batch("DROP TABLE events_v6")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev<'a>(
        time_ns: i64,
        duration_ns: Option<u64>,
        pid: u32,
        tid: u32,
        stack: u32,
        event: &'a str,
    ) -> Plain<'a> {
        Plain {
            time_ns,
            duration_ns,
            pid,
            tid,
            cpu: (time_ns % 3) as u32,
            weight: duration_ns.unwrap_or(1),
            stack,
            comm: if pid == 0 { "" } else { "dd" },
            kind: "syscall",
            event,
        }
    }

    /// Every field comes back: no duration and a duration of 0 apart, a thread id below
    /// and above its pid, unknown ids, odd names, times before 1970; ranges cut by time; a
    /// cut block keeps the stacks and names it still uses; damaged bytes are errors.
    #[test]
    fn blocks_round_trip() {
        let events = [
            ev(-5, Some(0), 7, 7, 40, "syscall:write"),
            ev(1_764_000_000_000_000_000, None, 7, 3, 9, "syscall:read"),
            ev(1_764_000_000_000_000_000, Some(u64::MAX >> 1), 0, 0, 40, "caf\u{e9}\u{1f525} \0"),
            ev(1_764_000_000_000_000_001, Some(12), u32::MAX, 5, 4_000_000_000, "syscall:write"),
            ev(i64::MAX, Some(1), 5, u32::MAX, 9, ""),
        ];
        let block = Block::new(&events);
        assert_eq!(block.stacks(), [9, 40, 4_000_000_000]);
        let back = Block::decode(&block.encode().unwrap()).unwrap();
        assert_eq!(back, block);
        let stored: Vec<StoredEvent> =
            back.in_range(i64::MIN, i64::MAX).iter().map(|e| back.stored(CaptureId(3), e)).collect();
        assert_eq!(stored.len(), 4, "[from, to): the event at i64::MAX is not before i64::MAX");
        for (s, e) in stored.iter().zip(&events) {
            assert_eq!(
                (
                    s.time_ns,
                    s.duration_ns,
                    s.pid,
                    s.tid,
                    s.cpu,
                    s.weight,
                    s.stack,
                    s.comm.as_str(),
                    s.kind.as_str(),
                    s.event.as_str()
                ),
                (
                    e.time_ns,
                    e.duration_ns,
                    e.pid,
                    e.tid,
                    e.cpu,
                    e.weight,
                    StackId(i64::from(e.stack)),
                    e.comm,
                    e.kind,
                    e.event
                )
            );
            assert_eq!(s.capture, CaptureId(3));
        }
        assert_eq!(back.in_range(1_764_000_000_000_000_000, 1_764_000_000_000_000_001).len(), 2);
        assert!(back.in_range(10, 5).is_empty());
        let cut = back.since(1_764_000_000_000_000_001);
        assert_eq!(cut.len(), 2);
        assert_eq!(cut.stacks(), [9, 4_000_000_000]);
        assert_eq!(cut.strings[2], ["syscall:write", ""]);
        assert_eq!(block_stacks(&cut.encode().unwrap()).unwrap(), [9, 4_000_000_000]);
        assert_eq!(back.since(i64::MIN), back);
        assert_eq!(back.since(i64::MAX).len(), 1);
        let data = block.encode().unwrap();
        for cut in 0..data.len() {
            assert!(Block::decode(&data[..cut]).is_err(), "cut at {cut}");
        }
        assert!(Block::decode(&[7, 1, 2]).is_err());
        // Plain columns (version 3; of version 1: 0) whose times go back, or whose index is
        // past its table.
        let plain = |b: &Block| [&[VERSION_PLAIN][..], &b.columns()].concat();
        let plain_v1 = |b: &Block| [&[0][..], &b.columns_of(false)].concat();
        assert_eq!(Block::decode(&plain(&block)).unwrap(), block);
        assert_eq!(Block::decode(&plain_v1(&block)).unwrap(), block);
        let mut bad = block.clone();
        bad.events.swap(0, 1);
        assert!(Block::decode(&plain_v1(&bad)).unwrap_err().contains("earlier than the one before"));
        assert!(Block::decode(&plain(&bad)).is_err());
        let mut bad = block.clone();
        bad.events[2].comm = 2;
        assert_eq!(Block::decode(&plain(&bad)).unwrap_err(), "event 2: task name 2 of 2");
        let mut bad = block.clone();
        bad.stacks[1] = 9;
        assert!(Block::decode(&plain(&bad)).unwrap_err().contains("repeats"));
    }

    /// Blocks of version 1 written by a real `kflame watch` (the fuzz seeds: captures' system
    /// calls and always-on outliers) read as they are; written again they are of version 2,
    /// hold the same events, and take fewer bytes.
    #[test]
    fn version_1_blocks_read_and_written_again_as_version_2() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/store_events");
        let mut seen = 0;
        for name in ["watch-capture-1733.bin", "watch-outliers-12.bin", "fixture-outliers-40.bin"] {
            let v1 = std::fs::read(format!("{dir}/{name}")).unwrap();
            assert_eq!(v1[0], 1, "{name}");
            let block = Block::decode(&v1).unwrap();
            assert!(block.len() >= 12, "{name}");
            let v2 = block.encode().unwrap();
            assert_eq!(v2[0], VERSION);
            assert_eq!(Block::decode(&v2).unwrap(), block, "{name}");
            assert_eq!(block_stacks(&v2).unwrap(), block.stacks());
            assert!(v2.len() < v1.len(), "{name}: {} bytes, {} before", v2.len(), v1.len());
            // Their weights are their durations: a column of zeros now.
            assert!(block.events.iter().all(|e| Some(e.weight) == e.duration_ns), "{name}");
            seen += 1;
        }
        assert_eq!(seen, 3);
    }

    /// An append becomes rows of at most MAX_BLOCK_EVENTS events and less than MAX_BLOCK_NS
    /// of time (an event at the last instant too); read back whole, in time order, ties in the order
    /// given; a range reaches into a row that started up to MAX_BLOCK_NS before it.
    #[test]
    fn appends_are_cut_into_rows() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE hosts(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
             INSERT INTO hosts(id, name) VALUES (1, 'h');
             CREATE TABLE event_blocks(id INTEGER PRIMARY KEY, capture INTEGER NOT NULL, host INTEGER NOT NULL,
                 first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, count INTEGER NOT NULL, data BLOB NOT NULL);",
        )
        .unwrap();
        let n = MAX_BLOCK_EVENTS + 10;
        let mut events: Vec<Plain<'_>> =
            (0..n).map(|i| ev(1000 + (i as i64 / 2), Some(i as u64), 1, 1, (i % 5) as u32, "e")).collect();
        // Given out of order: a later hour first, then the rest reversed, one at the end of time.
        events.reverse();
        events.insert(0, ev(1000 + MAX_BLOCK_NS + 5, None, 2, 2, 1, "late"));
        events.push(ev(i64::MAX, None, 3, 3, 1, "last"));
        write(&conn, 7, 1, &mut events.clone()).unwrap();
        let rows: Vec<(i64, i64, i64)> = conn
            .prepare("SELECT first_ns, last_ns, count FROM event_blocks ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let half = (MAX_BLOCK_EVENTS / 2) as i64;
        assert_eq!(
            rows,
            [
                (1000, 1000 + half - 1, MAX_BLOCK_EVENTS as i64),
                (1000 + half, 1000 + MAX_BLOCK_NS + 5, 11),
                (i64::MAX, i64::MAX, 1)
            ]
        );
        let all = read(&conn, CaptureId(7), Some("h"), i64::MIN, i64::MAX).unwrap();
        assert_eq!(all.len(), n + 1, "[from, to): not the event at i64::MAX");
        let mut want: Vec<&Plain<'_>> = events.iter().filter(|e| e.time_ns < i64::MAX).collect();
        want.sort_by_key(|e| e.time_ns);
        for (g, w) in all.iter().zip(want) {
            assert_eq!((g.time_ns, g.duration_ns, g.event.as_str()), (w.time_ns, w.duration_ns, w.event));
        }
        assert_eq!(read(&conn, CaptureId(7), Some("h"), i64::MAX - 1, i64::MAX).unwrap().len(), 0);
        let late = read(&conn, CaptureId(7), None, 1000 + MAX_BLOCK_NS, i64::MAX).unwrap();
        assert_eq!(late.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(), ["late"]);
        // The second row started almost an hour before that: still read.
        let tail = read(&conn, CaptureId(7), None, 1000 + half + 4, 1000 + MAX_BLOCK_NS).unwrap();
        assert_eq!(tail.len(), 2);
        assert!(read(&conn, CaptureId(7), Some("other"), i64::MIN, i64::MAX).unwrap().is_empty());
        assert!(read(&conn, CaptureId(8), None, i64::MIN, i64::MAX).unwrap().is_empty());
        assert_eq!(count(&conn, CaptureId(7)).unwrap(), n as u64 + 2);
        // Retention at a cut: a row rewritten, the rows before deleted, the rest kept.
        assert_eq!(delete_before(&conn, 1000 + half + 2, 100).unwrap(), (1, MAX_BLOCK_EVENTS as u64));
        assert_eq!(cut_before(&conn, 1000 + half + 2, 100).unwrap(), (1, 4));
        assert_eq!(count(&conn, CaptureId(7)).unwrap(), 8);
        let left = read(&conn, CaptureId(7), None, i64::MIN, i64::MAX).unwrap();
        assert_eq!(left.first().map(|e| e.time_ns), Some(1000 + half + 2));
    }
}
