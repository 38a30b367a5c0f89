//! Retention, downsampling and the disk budget, in short transactions so that the writer
//! and readers are never held up for long.

use kflame::fold::Weight;
use rusqlite::params;
use rustc_hash::FxHashMap;

use crate::bucket::{self, Untimed};
use crate::chunks::{self, NameSlots, Slots, StackSlots};
use crate::db::{MAX_BUCKET_NS, TIME_UNIT_NS, has_spans};
use crate::{Maintenance, Policy, Sqlite, StoreError};

/// Rows deleted or buckets merged per transaction.
const BATCH: i64 = 500;

pub(crate) fn run(db: &mut Sqlite, p: &Policy) -> Result<Maintenance, StoreError> {
    let mut m = Maintenance { bytes_before: db.file_bytes(), ..Maintenance::default() };
    if let Some(retain) = p.retain_ns {
        m.expired_rows += delete_before(db, p.now_ns.saturating_sub(retain))?;
    }
    if let Some(after) = p.downsample_after_ns {
        if p.downsample_to_ns < 1_000_000_000 || p.downsample_to_ns > MAX_BUCKET_NS {
            return Err(StoreError::Invalid {
                store: db.path().display().to_string(),
                detail: format!("downsampled buckets must last 1 s to 1 h, not {} ns", p.downsample_to_ns),
            });
        }
        m.downsampled_buckets += downsample(db, p.now_ns.saturating_sub(after), p.downsample_to_ns)?;
    }
    if let Some(max) = p.max_bytes {
        m.budget_rows += budget(db, max, &mut m.orphan_stacks)?;
    }
    // Compaction is an optimization, and needs room for an hour's new bucket before its
    // rows go: it runs after the budget made room, and a full disk leaves it for later.
    match compact(db, p.now_ns) {
        Ok(n) => m.compacted_buckets += n,
        Err(e) if e.is_disk_full() => {}
        Err(e) => return Err(e),
    }
    match fold_outliers(db, p.now_ns) {
        Ok(n) => m.folded_event_rows += n,
        Err(e) if e.is_disk_full() => {}
        Err(e) => return Err(e),
    }
    match fold_hours(db, p.now_ns) {
        Ok(n) => m.folded_hour_rows += n,
        Err(e) if e.is_disk_full() => {}
        Err(e) => return Err(e),
    }
    if m.expired_rows > 0 || m.budget_rows > 0 {
        m.orphan_stacks += delete_orphans(db, true)?;
    }
    reclaim(db)?;
    m.bytes_after = db.file_bytes();
    Ok(m)
}

/// Runs one batch in a write transaction.
fn batch<T>(
    db: &mut Sqlite,
    f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
) -> Result<T, StoreError> {
    let r = (|| {
        let tx = db.conn().unchecked_transaction()?;
        let v = f(&tx)?;
        tx.commit()?;
        Ok(v)
    })();
    r.map_err(|e| {
        db.clear_caches();
        db.err(e)
    })
}

/// Deletes every row entirely older than `cutoff` (buckets and metric blocks that end by
/// then, events before it), in batches.
fn delete_before(db: &mut Sqlite, cutoff: i64) -> Result<u64, StoreError> {
    let statements = [
        "DELETE FROM buckets WHERE id IN (SELECT id FROM buckets WHERE end_ns <= ?1 LIMIT ?2)",
        "DELETE FROM metric_blocks WHERE rowid IN (SELECT rowid FROM metric_blocks WHERE end_ns <= ?1 LIMIT ?2)",
        "DELETE FROM metric_spans WHERE id IN (SELECT id FROM metric_spans WHERE end_ns <= ?1 LIMIT ?2)",
        "DELETE FROM latency_spans WHERE id IN (SELECT id FROM latency_spans WHERE end_ns <= ?1 LIMIT ?2)",
        "DELETE FROM triggers WHERE id IN (SELECT id FROM triggers WHERE time_ns < ?1 LIMIT ?2)",
        "DELETE FROM reports WHERE id IN (SELECT id FROM reports WHERE time_ns < ?1 LIMIT ?2)",
        // Not SQL: the events, by `delete_events_before`.
        "events",
        "DELETE FROM captures WHERE id IN (SELECT id FROM captures WHERE coalesce(end_ns, start_ns) < ?1 LIMIT ?2)",
    ];
    let mut total = 0u64;
    let spans = has_spans(db.conn()).map_err(|e| db.err(e))?;
    let latency = crate::latency::has_latency(db.conn()).map_err(|e| db.err(e))?;
    for sql in statements {
        if (sql.contains("metric_spans") && !spans) || (sql.contains("latency_spans") && !latency) {
            continue;
        }
        if sql == "events" {
            total += delete_events_before(db, cutoff)?;
            continue;
        }
        // metric_blocks was WITHOUT ROWID before schema 3: delete by its key, either way.
        let sql = if sql.contains("metric_blocks") {
            "DELETE FROM metric_blocks WHERE (series, start_ns) IN
                 (SELECT series, start_ns FROM metric_blocks WHERE end_ns <= ?1 LIMIT ?2)"
        } else {
            sql
        };
        loop {
            let n = batch(db, |c| c.prepare_cached(sql)?.execute(params![cutoff, BATCH]))?;
            total += n as u64;
            if (n as i64) < BATCH {
                break;
            }
        }
    }
    Ok(total)
}

/// Deletes the events before `cutoff`, in batches; returns how many. Schema 7: rows of
/// `event_blocks` whose events are all before it are deleted, those it cuts are rewritten
/// with their events from `cutoff` on (so a reader never meets an expired event).
fn delete_events_before(db: &mut Sqlite, cutoff: i64) -> Result<u64, StoreError> {
    let mut total = 0u64;
    if !crate::events::has_blocks(db.conn()).map_err(|e| db.err(e))? {
        loop {
            let n = batch(db, |c| {
                c.prepare_cached(
                    "DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE time_ns < ?1 LIMIT ?2)",
                )?
                .execute(params![cutoff, BATCH])
            })?;
            total += n as u64;
            if (n as i64) < BATCH {
                return Ok(total);
            }
        }
    }
    loop {
        let (rows, events) = batch(db, |c| crate::events::delete_before(c, cutoff, BATCH))?;
        total += events;
        if (rows as i64) < BATCH {
            break;
        }
    }
    // A rewrite decodes and encodes a block: a few at a time.
    loop {
        let (rows, events) = batch(db, |c| crate::events::cut_before(c, cutoff, 8))?;
        total += events;
        if rows < 8 {
            break;
        }
    }
    Ok(total)
}

/// A decoded bucket row of the table.
struct Decoded {
    id: i64,
    host: i64,
    kind: i64,
    start: i64,
    capture: Option<i64>,
    unit: String,
    event: Option<String>,
    end: i64,
    d: bucket::DecodedBucket,
}

/// Merges `buckets` into untimed buckets of `width` ns (one per host, kind, capture, unit,
/// event and window), keeping counts and weights per stack and cgroup, in one transaction.
/// Returns the buckets merged.
fn merge_windows(db: &mut Sqlite, buckets: Vec<Decoded>, width: i64) -> Result<u64, StoreError> {
    type Key = (i64, i64, Option<i64>, String, Option<String>, i64);
    struct Group {
        ids: Vec<i64>,
        start: i64,
        end: i64,
        cgroups: Vec<String>,
        sums: FxHashMap<(i64, u32), (u64, Weight)>,
    }
    let mut groups: FxHashMap<Key, Group> = FxHashMap::default();
    for Decoded { id, host, kind, start, capture, unit, event, end, d } in buckets {
        let key = (host, kind, capture, unit, event, start.div_euclid(width));
        let g = groups.entry(key).or_insert_with(|| Group {
            ids: Vec::new(),
            start,
            end,
            cgroups: Vec::new(),
            sums: FxHashMap::default(),
        });
        g.ids.push(id);
        g.start = g.start.min(start);
        g.end = g.end.max(end);
        // Cgroup indexes of this bucket → indexes in the group's list.
        let mut map = vec![0u32];
        for cg in &d.cgroups {
            let i = match g.cgroups.iter().position(|c| c == cg) {
                Some(i) => i,
                None => {
                    g.cgroups.push(cg.clone());
                    g.cgroups.len() - 1
                }
            };
            map.push(i as u32 + 1);
        }
        for s in &d.samples {
            let e = g.sums.entry((s.stack, map[s.cgroup as usize])).or_insert((0, Weight::ZERO));
            e.0 += 1;
            e.1 += s.weight;
        }
        for u in &d.untimed {
            let e = g.sums.entry((u.stack, map[u.cgroup as usize])).or_insert((0, Weight::ZERO));
            e.0 += u.count;
            e.1 += u.weight;
        }
    }
    batch(db, |c| {
        let mut n = 0u64;
        for ((host, kind, capture, unit, event, _), g) in groups {
            let mut untimed: Vec<Untimed> = g
                .sums
                .into_iter()
                .map(|((stack, cgroup), (count, weight))| Untimed { stack, cgroup, count, weight })
                .collect();
            untimed.sort_by_key(|u| (u.stack, u.cgroup));
            let samples: u64 = untimed.iter().map(|u| u.count).sum();
            let cgs: Vec<&str> = g.cgroups.iter().map(String::as_str).collect();
            let data = bucket::encode_bucket(g.start, 1000, 0, &cgs, &[], &untimed);
            c.prepare_cached(
                "INSERT INTO buckets(host, kind, start_ns, end_ns, capture, unit, event, samples, timed, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9)",
            )?
            .execute(params![host, kind, g.start, g.end, capture, unit, event, samples as i64, data])?;
            let mut del = c.prepare_cached("DELETE FROM buckets WHERE id = ?1")?;
            for id in &g.ids {
                del.execute([id])?;
                n += 1;
            }
        }
        Ok(n)
    })
}

/// Merges timed buckets that ended by `cutoff` into untimed buckets of `width` ns (one per
/// host, kind, capture, unit, event and window), keeping counts and weights per stack and
/// cgroup.
fn downsample(db: &mut Sqlite, cutoff: i64, width: i64) -> Result<u64, StoreError> {
    // Only whole windows before the cutoff, so that a window is merged once.
    let limit = cutoff.div_euclid(width) * width;
    let mut merged = 0u64;
    loop {
        type Row = (i64, i64, i64, i64, Option<i64>, String, Option<String>, i64, Vec<u8>);
        let path = db.path().to_path_buf();
        let rows: Vec<Row> = {
            let conn = db.conn();
            let mut st = conn
                .prepare_cached(
                    "SELECT id, host, kind, start_ns, capture, unit, event, end_ns, data FROM buckets
                     WHERE timed = 1 AND start_ns < ?1 AND end_ns <= ?2 ORDER BY start_ns LIMIT ?3",
                )
                .map_err(|e| db.err(e))?;
            st.query_map(params![limit, cutoff, BATCH], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                ))
            })
            .map_err(|e| db.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| db.err(e))?
        };
        if rows.is_empty() {
            break;
        }
        let mut decoded = Vec::with_capacity(rows.len());
        for (id, host, kind, start, capture, unit, event, end, data) in rows {
            let d = bucket::decode_bucket(&data, start).map_err(|detail| StoreError::Corrupt {
                store: path.display().to_string(),
                detail: format!("bucket {id}: {detail}"),
            })?;
            decoded.push(Decoded { id, host, kind, start, capture, unit, event, end, d });
        }
        let n = merge_windows(db, decoded, width)?;
        merged += n;
    }
    Ok(merged)
}

/// The span of time whose timed buckets compaction merges into one: an hour of the
/// calendar (UTC), the longest a bucket may last.
pub(crate) const SEGMENT_NS: i64 = MAX_BUCKET_NS;
/// An hour is compacted once it ended this long ago: buckets are written as they end, and
/// one written later still (after a full disk) joins its hour at the next run.
const COMPACT_AFTER_NS: i64 = 600_000_000_000;
/// The coded columns of a compacted hour are cut into streams of this much time: a query
/// cutting the hour decodes only the windows on its side of the cut (or the hour's totals
/// less the windows on the other side).
const WINDOW_NS: i64 = 300_000_000_000;
/// Buckets of untimed entries alone (the always-on off-CPU and lock profiles, summed in the
/// kernel: a count and weight per stack, counted at the bucket's start) of a closed hour are
/// merged into buckets of this long, their entries summed per stack: one dictionary a minute
/// instead of one per 10 s, and a stack blocked in all through the minute stored once. A
/// range of such a profile older than the hour in progress is then read to the minute, as
/// profiles downsampled after a day are.
const SUMMED_WINDOW_NS: i64 = 60_000_000_000;
/// Compaction starts no new hour after this long in one maintenance run.
const COMPACT_TIME: std::time::Duration = std::time::Duration::from_millis(200);

/// Merges the timed buckets of each closed hour (one host, kind, capture, unit and event)
/// into one bucket that keeps every sample: one dictionary and one set of column models
/// for the hour instead of one per bucket, and rows of tens of kB instead of hundreds of
/// bytes. Buckets of untimed entries alone are merged into buckets of [`SUMMED_WINDOW_NS`];
/// buckets with both (they count at their own start) and buckets that cross an hour's end
/// stay as they are. Returns the buckets merged.
fn compact(db: &mut Sqlite, now_ns: i64) -> Result<u64, StoreError> {
    let limit = now_ns.saturating_sub(COMPACT_AFTER_NS).div_euclid(SEGMENT_NS).saturating_mul(SEGMENT_NS);
    type Group = (i64, i64, Option<i64>, String, Option<String>, i64);
    let groups: Vec<Group> = {
        let conn = db.conn();
        let mut st = conn
            .prepare_cached(
                "SELECT host, kind, capture, unit, event, start_ns / ?1 AS span FROM buckets
                 WHERE timed = 1 AND start_ns >= 0 AND end_ns <= ?2 AND end_ns <= (start_ns / ?1 + 1) * ?1
                 GROUP BY host, kind, capture, unit, event, span HAVING count(*) > 1 ORDER BY span DESC",
            )
            .map_err(|e| db.err(e))?;
        st.query_map(params![SEGMENT_NS, limit], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })
        .map_err(|e| db.err(e))?
        .collect::<Result<_, _>>()
        .map_err(|e| db.err(e))?
    };
    let path = db.path().to_path_buf();
    let mut merged = 0u64;
    let began = std::time::Instant::now();
    for (host, kind, capture, unit, event, span) in groups {
        if db.compact_skip.contains(&(host, kind, capture, unit.clone(), event.clone(), span)) {
            continue;
        }
        // The writer waits while maintenance runs: a backlog (an old history, a long
        // outage) is compacted a little at each run, newest hours first.
        if began.elapsed() > COMPACT_TIME {
            break;
        }
        let (from, to) = (span * SEGMENT_NS, (span + 1) * SEGMENT_NS);
        let rows: Vec<(i64, i64, i64, Vec<u8>)> = {
            let conn = db.conn();
            let mut st = conn
                .prepare_cached(
                    "SELECT id, start_ns, end_ns, data FROM buckets
                     WHERE timed = 1 AND host = ?1 AND kind = ?2 AND capture IS ?3 AND unit = ?4
                       AND event IS ?5 AND start_ns >= ?6 AND end_ns <= ?7 ORDER BY start_ns",
                )
                .map_err(|e| db.err(e))?;
            st.query_map(params![host, kind, capture, unit, event, from, to], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .map_err(|e| db.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| db.err(e))?
        };
        // Consecutive rows merged while they hold at most COMPACT_SAMPLES samples (a big
        // machine's hour becomes a few buckets rather than one huge one).
        let key = Segment { host, kind, capture, unit, event };
        let mut seg = Pending::default();
        let before = merged;
        // Buckets of untimed entries alone (profiles summed elsewhere: the always-on off-CPU
        // and lock profiles).
        let mut summed = Vec::new();
        for (id, s, e, data) in rows {
            let d = bucket::decode_bucket(&data, s).map_err(|detail| StoreError::Corrupt {
                store: path.display().to_string(),
                detail: format!("bucket {id}: {detail}"),
            })?;
            if !d.untimed.is_empty() {
                if d.samples.is_empty() {
                    let (unit, event) = (key.unit.clone(), key.event.clone());
                    summed.push(Decoded { id, host, kind, start: s, capture, unit, event, end: e, d });
                }
                continue;
            }
            if !seg.ids.is_empty() && seg.samples.len() + d.samples.len() > COMPACT_SAMPLES {
                merged += write_segment(db, &key, &mut seg)?;
            }
            seg.add(id, s, e, d);
        }
        merged += write_segment(db, &key, &mut seg)?;
        if summed.len() > 1 {
            merged += merge_windows(db, summed, SUMMED_WINDOW_NS)?;
        }
        if merged == before {
            // Nothing in it can merge (untimed entries, big rows): not tried again by
            // this writer.
            db.compact_skip.insert((key.host, key.kind, key.capture, key.unit, key.event, span));
        }
    }
    Ok(merged)
}

/// A span of outliers is folded once it ended this long ago: the watcher stores a bucket's
/// outliers when the bucket ends, and late ones of it up to six buckets (a minute) after. One
/// written later still is folded in at the next run.
const FOLD_AFTER_NS: i64 = 60_000_000_000;

/// Folds the rows of the always-on outliers of each closed span (ten minutes, then the hour)
/// into one row per (capture, host) and span (`events::fold`), one transaction each, newest
/// spans first, starting none after [`COMPACT_TIME`]. Returns the rows fewer.
fn fold_outliers(db: &mut Sqlite, now_ns: i64) -> Result<u64, StoreError> {
    let keys = crate::events::outlier_folds(db.conn(), now_ns.saturating_sub(FOLD_AFTER_NS))
        .map_err(|e| db.err(e))?;
    let began = std::time::Instant::now();
    let mut fewer = 0u64;
    for key in keys {
        if began.elapsed() > COMPACT_TIME {
            break;
        }
        let (before, after) = batch(db, |c| crate::events::fold(c, key))?;
        fewer += before.saturating_sub(after) as u64;
    }
    Ok(fewer)
}

/// Folds the latency and metric rows of every closed hour (ended [`FOLD_AFTER_NS`] ago) that
/// a writer left unfolded, having stopped within it, into one row of the hour each, the
/// hours in time order, starting none after [`COMPACT_TIME`]. Returns the rows fewer.
fn fold_hours(db: &mut Sqlite, now_ns: i64) -> Result<u64, StoreError> {
    let before = now_ns.saturating_sub(FOLD_AFTER_NS);
    let latency = crate::latency::unfolded_hours(db.conn(), before).map_err(|e| db.err(e))?;
    let metrics = db.unfolded_metric_hours(before)?;
    let began = std::time::Instant::now();
    let mut fewer = 0u64;
    for (host, from) in latency {
        if began.elapsed() > COMPACT_TIME {
            return Ok(fewer);
        }
        fewer += batch(db, |c| crate::latency::fold_hour(c, host, from))?;
    }
    for (host, from) in metrics {
        if began.elapsed() > COMPACT_TIME {
            break;
        }
        fewer += db.fold_metric_hour(host, from)?;
    }
    Ok(fewer)
}

/// Buckets compacted into one at most hold this many samples (an hour at 19 Hz on 58
/// CPUs): compaction's memory stays bounded on a big machine.
const COMPACT_SAMPLES: usize = 4 << 20;

/// What a compacted bucket is of.
struct Segment {
    host: i64,
    kind: i64,
    capture: Option<i64>,
    unit: String,
    event: Option<String>,
}

/// The rows being merged into one bucket.
#[derive(Default)]
struct Pending {
    ids: Vec<i64>,
    start: i64,
    end: i64,
    /// The finest resolution that keeps every stored time: the rows' own, and their starts'
    /// offsets from the first row's.
    unit: i64,
    cgroups: Vec<String>,
    samples: Vec<bucket::RawSample>,
}

impl Pending {
    /// Adds a row (rows come in start order).
    fn add(&mut self, id: i64, start: i64, end: i64, d: bucket::DecodedBucket) {
        if self.ids.is_empty() {
            (self.start, self.end, self.unit) = (start, end, 0);
        }
        self.ids.push(id);
        self.end = self.end.max(end);
        self.unit = gcd(gcd(self.unit, d.time_unit_ns), start - self.start);
        // Cgroup indexes of this bucket → indexes in the merged list.
        let mut map = vec![0u32];
        for cg in d.cgroups {
            let i = match self.cgroups.iter().position(|c| *c == cg) {
                Some(i) => i,
                None => {
                    self.cgroups.push(cg);
                    self.cgroups.len() - 1
                }
            };
            map.push(i as u32 + 1);
        }
        self.samples
            .extend(d.samples.iter().map(|s| bucket::RawSample { cgroup: map[s.cgroup as usize], ..*s }));
    }
}

/// Writes the rows of `seg` as one bucket and deletes them (nothing for a single row);
/// leaves `seg` empty. Returns the rows merged.
fn write_segment(db: &mut Sqlite, key: &Segment, seg: &mut Pending) -> Result<u64, StoreError> {
    let seg = std::mem::take(seg);
    if seg.ids.len() < 2 {
        return Ok(0);
    }
    let unit = if seg.unit <= 0 { TIME_UNIT_NS } else { seg.unit };
    let cgs: Vec<&str> = seg.cgroups.iter().map(String::as_str).collect();
    let data = bucket::encode_bucket(seg.start, unit, WINDOW_NS, &cgs, &seg.samples, &[]);
    let n = seg.samples.len() as i64;
    drop(seg.samples);
    batch(db, |c| {
        c.prepare_cached(
            "INSERT INTO buckets(host, kind, start_ns, end_ns, capture, unit, event, samples, timed, data)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9)",
        )?
        .execute(params![
            key.host,
            key.kind,
            seg.start,
            seg.end,
            key.capture,
            key.unit,
            key.event,
            n,
            data
        ])?;
        let mut del = c.prepare_cached("DELETE FROM buckets WHERE id = ?1")?;
        for id in &seg.ids {
            del.execute([id])?;
        }
        Ok(seg.ids.len() as u64)
    })
}

fn gcd(mut a: i64, mut b: i64) -> i64 {
    (a, b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Deletes the oldest data, a twentieth of the stored time span (at least a minute) at a
/// time, until the pages in use fit `max_bytes`.
fn budget(db: &mut Sqlite, max_bytes: u64, orphans: &mut u64) -> Result<u64, StoreError> {
    let mut total = 0;
    loop {
        if db.used_bytes()? <= max_bytes {
            break;
        }
        let spans = match has_spans(db.conn()).map_err(|e| db.err(e))? {
            true => "UNION ALL SELECT min(start_ns), max(end_ns) FROM metric_spans",
            false => "",
        };
        let (lo, hi): (Option<i64>, Option<i64>) = db
            .conn()
            .query_row(
                &format!(
                    "SELECT min(lo), max(hi) FROM (SELECT min(start_ns) AS lo, max(end_ns) AS hi FROM buckets
                     UNION ALL SELECT min(start_ns), max(end_ns) FROM metric_blocks {spans})"
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| db.err(e))?;
        let (Some(lo), Some(hi)) = (lo, hi) else { break };
        let step = ((hi - lo) / 20).max(60_000_000_000);
        let n = delete_before(db, lo.saturating_add(step))?;
        total += n;
        if n == 0 {
            break;
        }
        // Stacks only: the frames (a few bytes each, in chunks) once the budget is met.
        *orphans += delete_orphans(db, false)?;
        // Freed pages only count once they are off the free list's books.
        reclaim(db)?;
    }
    Ok(total)
}

/// Deletes the stacks no bucket or event refers to any more, and with `frames` the frames
/// no stack uses: their slots in the chunks become tombstones (the other ids stay), a chunk
/// left without any is deleted (but the last, which keeps ids from being used again). Reads
/// every bucket's dictionary, the stack chunks holding ids no bucket or event uses (every
/// stack chunk with `frames`) and then every frame chunk: run after deletions only.
fn delete_orphans(db: &mut Sqlite, frames: bool) -> Result<u64, StoreError> {
    let path = db.path().to_path_buf();
    // Stack ids in use, as bits (ids are dense: a bit each for the ids the chunks hold).
    let mut used: Vec<u64> = Vec::new();
    // Frame ids used by the stacks kept (with `frames`).
    let mut frames_used: Vec<bool> = Vec::new();
    let mut deleted_stacks = 0u64;
    // Ranges of stack ids deleted, for the writer's map.
    let mut forget: Vec<(i64, i64)> = Vec::new();
    let mut deleted_frames: rustc_hash::FxHashSet<u32> = rustc_hash::FxHashSet::default();
    // Chunks to rewrite: (id, slots, last).
    let mut stack_rewrites: Vec<(i64, StackSlots, bool)> = Vec::new();
    let mut frame_rewrites: Vec<(i64, NameSlots, bool)> = Vec::new();
    {
        let conn = db.conn();
        let e = |err| db.err(err);
        let ranges = |table: &str| -> Result<Vec<(i64, i64)>, StoreError> {
            conn.prepare_cached(&format!("SELECT id, count FROM {table} ORDER BY id"))
                .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
                .map_err(e)
        };
        let stack_ranges = ranges(StackSlots::TABLE)?;
        let last = stack_ranges.last().map_or(0, |r| r.0);
        let end = stack_ranges.last().map_or(0, |r| r.0.saturating_add(r.1)).clamp(0, 1 << 32);
        used.resize(end as usize / 64 + 1, 0);
        let mut mark = |id: i64| {
            if (0..end).contains(&id) {
                used[id as usize / 64] |= 1 << (id % 64);
            }
        };
        let mut st = conn.prepare_cached("SELECT id, data FROM buckets").map_err(e)?;
        let mut rows = st.query([]).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let id: i64 = r.get(0).map_err(e)?;
            let blob = r.get_ref(1).map_err(e)?.as_blob().map_err(|err| e(err.into()))?;
            let ids = bucket::bucket_stacks(blob).map_err(|detail| StoreError::Corrupt {
                store: path.display().to_string(),
                detail: format!("bucket {id}: {detail}"),
            })?;
            ids.into_iter().for_each(&mut mark);
        }
        if crate::events::has_blocks(conn).map_err(e)? {
            crate::events::each_stack_list(conn, |ids| ids.iter().for_each(|&id| mark(i64::from(id))))
                .map_err(e)?;
        } else {
            let mut st = conn.prepare_cached("SELECT DISTINCT stack FROM events").map_err(e)?;
            let mut rows = st.query([]).map_err(e)?;
            while let Some(r) = rows.next().map_err(e)? {
                mark(r.get(0).map_err(e)?);
            }
        }
        let is_used = |id: i64| (0..end).contains(&id) && used[id as usize / 64] & (1 << (id % 64)) != 0;
        let any_used = |from: i64, count: i64| (from..from.saturating_add(count)).any(is_used);
        let all_used = |from: i64, count: i64| (from..from.saturating_add(count)).all(is_used);
        // A chunk all of whose ids are used holds no orphan: read only for its frames.
        let wanted: Vec<i64> =
            stack_ranges.iter().filter(|&&(id, count)| frames || !all_used(id, count)).map(|r| r.0).collect();
        let mut slots = StackSlots::default();
        chunks::each_chunk::<StackSlots>(conn, &path, Some(&wanted), |id, count, data| {
            let corrupt = |detail| StoreError::Corrupt {
                store: path.display().to_string(),
                detail: format!("stack chunk {id}: {detail}"),
            };
            if !any_used(id, count as i64) {
                // Every stack of the chunk goes: counted, not decoded.
                let live = StackSlots::count_live(data, count).map_err(corrupt)?;
                if live > 0 {
                    deleted_stacks += live as u64;
                    forget.push((id, id + count as i64));
                    let mut none = StackSlots::default();
                    for _ in 0..count {
                        none.push(None);
                    }
                    stack_rewrites.push((id, none, id == last));
                }
                return Ok(());
            }
            slots.decode(data, count).map_err(corrupt)?;
            let mut kept = StackSlots::default();
            let mut gone = false;
            for i in 0..count {
                let sid = id + i as i64;
                match slots.get(i) {
                    Some(fids) if is_used(sid) => {
                        if frames {
                            for &f in fids {
                                if frames_used.len() <= f as usize {
                                    frames_used.resize(f as usize + 1, false);
                                }
                                frames_used[f as usize] = true;
                            }
                        }
                        kept.push(Some(fids));
                    }
                    Some(_) => {
                        gone = true;
                        deleted_stacks += 1;
                        forget.push((sid, sid + 1));
                        kept.push(None);
                    }
                    None => kept.push(None),
                }
            }
            if gone {
                stack_rewrites.push((id, kept, id == last));
            }
            Ok(())
        })?;
        if frames {
            let last = ranges(NameSlots::TABLE)?.last().map_or(0, |r| r.0);
            let mut slots = NameSlots::default();
            chunks::each_chunk::<NameSlots>(conn, &path, None, |id, count, data| {
                slots.decode(data, count).map_err(|detail| StoreError::Corrupt {
                    store: path.display().to_string(),
                    detail: format!("frame chunk {id}: {detail}"),
                })?;
                let mut kept = NameSlots::default();
                let mut gone = false;
                for i in 0..count {
                    let name = slots.get(i);
                    let fid = (id + i as i64) as u32;
                    let keep = name.is_some() && frames_used.get(fid as usize) == Some(&true);
                    if name.is_some() && !keep {
                        gone = true;
                        deleted_frames.insert(fid);
                    }
                    kept.push(name.filter(|_| keep));
                }
                if gone {
                    frame_rewrites.push((id, kept, id == last));
                }
                Ok(())
            })?;
        }
    }
    // Stacks first: a frame is deleted only once no stored stack uses it.
    for part in stack_rewrites.chunks(8) {
        batch(db, |c| part.iter().try_for_each(|(id, slots, last)| chunks::rewrite(c, *id, slots, *last)))?;
    }
    for part in frame_rewrites.chunks(8) {
        batch(db, |c| part.iter().try_for_each(|(id, slots, last)| chunks::rewrite(c, *id, slots, *last)))?;
    }
    // The writer's maps hold the deleted ids.
    db.forget_deleted(&forget, &deleted_frames);
    Ok(deleted_stacks)
}

/// Gives free pages back to the file system and checkpoints the WAL, so that the file
/// really shrinks. A checkpoint that readers hold up is left for next time.
fn reclaim(db: &mut Sqlite) -> Result<(), StoreError> {
    let conn = db.conn();
    let e = |err| db.err(err);
    // The pragma returns a row per page freed: it runs only as far as it is stepped.
    let mut st = conn.prepare_cached("PRAGMA incremental_vacuum").map_err(e)?;
    let mut rows = st.query([]).map_err(e)?;
    while rows.next().map_err(e)?.is_some() {}
    drop(rows);
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(e)?;
    Ok(())
}
