//! The SQLite backend: one file, WAL, schema versions in `PRAGMA user_version`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kflame::events::EventRecord;
use kflame::fold::tree::StackTree;
use kflame::fold::{Meta, StackCounts, Stacks, Unit, Weight};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use rustc_hash::FxHashMap;

use crate::bucket::{self, RawSample, Untimed};
use crate::chunks::{self, NameSlots, Slots, StackKey, StackSlots};
use crate::codec;
use crate::db::{self, MAX_BUCKET_NS, TIME_UNIT_NS, has_spans, map_err};
use crate::summary::{self, Piece, SeriesCache};
use crate::{
    Bucket, CaptureId, CaptureStart, Event, Kind, LatencyKind, LatencyQuery, LatencyRow, LatencySeries,
    Maintenance, Metric, Point, Policy, Profile, ProfileQuery, ProfileTree, Query, SamplePoint, Series,
    SeriesQuery, StackId, Store, StoreError, StoredEvent, StoredReport, TriggerFired, TriggerId,
    stored_metric_value,
};

/// `PRAGMA application_id` of a kflame history database ("kflm").
const APP_ID: i32 = 0x6b66_6c6d;
/// Metric rows of blocks written (see [`Sqlite::set_metric_block`]) are folded into one row
/// of this span when it ends (in files of schema 3, a row of one series never spans more).
const METRIC_SPAN_NS: i64 = 600_000_000_000;
/// ... and those rows into one of this span when it ends (at most [`MAX_BUCKET_NS`]: queries
/// look back that far).
const METRIC_ROW_NS: i64 = 3_600_000_000_000;
/// Size of the reserve file kept beside a database being written (see
/// [`Sqlite::reserve_path`]).
pub const RESERVE_BYTES: u64 = 1 << 20;
/// How long a writer or reader waits for the other's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, as an ordered list of migrations: entry `i` takes a database from version
/// `i` to `i + 1`. Never edit an entry once released: add one.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE hosts(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
     CREATE TABLE frames(id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE);
     CREATE TABLE stacks(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, frames BLOB NOT NULL);
     CREATE INDEX stacks_hash ON stacks(hash);
     CREATE TABLE buckets(id INTEGER PRIMARY KEY, host INTEGER NOT NULL, kind INTEGER NOT NULL,
         start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, capture INTEGER,
         unit TEXT NOT NULL, event TEXT, samples INTEGER NOT NULL, timed INTEGER NOT NULL,
         data BLOB NOT NULL);
     CREATE INDEX buckets_time ON buckets(kind, start_ns);
     CREATE TABLE series(id INTEGER PRIMARY KEY, host INTEGER NOT NULL, name TEXT NOT NULL,
         label TEXT NOT NULL, UNIQUE(host, name, label));
     CREATE TABLE metric_blocks(series INTEGER NOT NULL, start_ns INTEGER NOT NULL,
         end_ns INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(series, start_ns)) WITHOUT ROWID;
     CREATE TABLE triggers(id INTEGER PRIMARY KEY, host INTEGER NOT NULL, time_ns INTEGER NOT NULL,
         rule TEXT NOT NULL, metric TEXT NOT NULL, value REAL NOT NULL, threshold REAL NOT NULL);
     CREATE INDEX triggers_time ON triggers(time_ns);
     CREATE TABLE captures(id INTEGER PRIMARY KEY, host INTEGER NOT NULL, kind INTEGER NOT NULL,
         start_ns INTEGER NOT NULL, end_ns INTEGER, trigger INTEGER, unit TEXT NOT NULL,
         event TEXT, note TEXT);
     CREATE INDEX captures_time ON captures(start_ns);
     CREATE TABLE events(capture INTEGER NOT NULL, host INTEGER NOT NULL, time_ns INTEGER NOT NULL,
         duration_ns INTEGER, pid INTEGER NOT NULL, tid INTEGER NOT NULL, comm TEXT NOT NULL,
         cpu INTEGER NOT NULL, kind TEXT NOT NULL, event TEXT NOT NULL, stack INTEGER NOT NULL,
         weight INTEGER NOT NULL);
     CREATE INDEX events_time ON events(capture, time_ns);
     CREATE TABLE reports(id INTEGER PRIMARY KEY, host INTEGER NOT NULL, time_ns INTEGER NOT NULL,
         kind TEXT NOT NULL, title TEXT NOT NULL, stack TEXT NOT NULL, text TEXT NOT NULL);
     CREATE INDEX reports_time ON reports(time_ns);",
    // 2: the buckets of one capture found without a scan of the time index.
    "CREATE INDEX buckets_capture ON buckets(capture) WHERE capture IS NOT NULL;",
    // 3: metric rows in a rowid table, appended in the order written, found by a unique
    // index on (series, start_ns). Without rowid, a row of more than about 1 kB spilled into
    // an overflow page of its own, and keyed by series first every insert split a page in
    // the middle of the tree: most of the table's pages were empty space.
    "CREATE TABLE metric_rows(id INTEGER PRIMARY KEY, series INTEGER NOT NULL,
         start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, data BLOB NOT NULL);
     INSERT INTO metric_rows(series, start_ns, end_ns, data)
         SELECT series, start_ns, end_ns, data FROM metric_blocks ORDER BY start_ns, series;
     DROP TABLE metric_blocks;
     ALTER TABLE metric_rows RENAME TO metric_blocks;
     CREATE UNIQUE INDEX metric_blocks_series ON metric_blocks(series, start_ns);",
    // 4: metric values in one row per host and span of time (all its series: one shared
    // time column, shares and rates as whole counts over a shared denominator), one zstd
    // frame. The rows of `metric_blocks` (one series each) stay readable; nothing new is
    // written there.
    "CREATE TABLE metric_spans(id INTEGER PRIMARY KEY, host INTEGER NOT NULL,
         start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, data BLOB NOT NULL);
     CREATE UNIQUE INDEX metric_spans_host ON metric_spans(host, start_ns);",
    // 5: stacks and frame names in compressed chunks of consecutive ids (see `chunks.rs`),
    // without indexes: a writer loads them into maps. A row per stack or name, and the
    // indexes on names and hashes, took five times the room. The rows of the old tables
    // are moved into chunks, ids kept, by `convert_v3_stacks` in the same transaction.
    "ALTER TABLE stacks RENAME TO stacks_v3;
     ALTER TABLE frames RENAME TO frames_v3;
     DROP INDEX stacks_hash;
     CREATE TABLE stack_chunks(id INTEGER PRIMARY KEY, count INTEGER NOT NULL, data BLOB NOT NULL);
     CREATE TABLE frame_chunks(id INTEGER PRIMARY KEY, count INTEGER NOT NULL, data BLOB NOT NULL);",
    // 6: latency histograms, one row per host and block of time, every family and label of
    // the block in it (see `latency.rs`).
    "CREATE TABLE latency_spans(id INTEGER PRIMARY KEY, host INTEGER NOT NULL,
         start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, data BLOB NOT NULL);
     CREATE UNIQUE INDEX latency_spans_host ON latency_spans(host, start_ns);",
    // 7: per-event records in blocks of columns, one zstd frame a row (see `events.rs`): a row
    // per event took most of a file holding a few captures of system calls. The rows of the
    // old table are moved into blocks by `events::convert_v6_events` in the same transaction.
    "CREATE TABLE event_blocks(id INTEGER PRIMARY KEY, capture INTEGER NOT NULL, host INTEGER NOT NULL,
         first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, count INTEGER NOT NULL, data BLOB NOT NULL);
     CREATE INDEX event_blocks_time ON event_blocks(capture, first_ns);
     ALTER TABLE events RENAME TO events_v6;",
];

/// The newest schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// How a database is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Create it if missing (or empty), migrate an older schema, write.
    Write,
    /// Read only; the file must exist and hold a kflame history.
    Read,
}

/// A pending metric block: (block start, host id).
type BlockKey = (i64, i64);

/// Values of one pending block: by series id, in the order given.
type BlockValues = BTreeMap<i64, Vec<(i64, f64)>>;

/// The values of one reading whose series rows could not be made (the disk was full):
/// (name, label, value).
struct HeldReading {
    host: String,
    time_ns: i64,
    values: Vec<(String, String, f64)>,
}

/// Most metric values kept in memory unwritten (blocks in progress, and blocks kept while
/// the disk is full: over 1.5 hours of the watcher's 59 series a second); beyond, the
/// oldest blocks are dropped and counted.
pub const MAX_UNWRITTEN_VALUES: usize = 400_000;

/// Writer-side maps of ids. Frames and stacks are loaded whole by the first write that
/// needs them (schema 5 has no index on them: these maps are their index) and hold what was
/// committed; the frames and stacks a transaction makes are written as chunks before it
/// commits, and forgotten when it fails. Hosts and series are cached as they are met and
/// dropped when a transaction fails.
#[derive(Default)]
struct Caches {
    hosts: FxHashMap<String, i64>,
    series: FxHashMap<(i64, String, String), i64>,
    /// The name and label of a series id.
    names: FxHashMap<i64, (String, String)>,
    /// `frames` and `stacks` hold every stored one.
    loaded: bool,
    /// The file has the row-per-stack tables of schemas 1-3 (opened by
    /// [`Sqlite::open_at_version`]): new frames and stacks are written as rows.
    legacy: bool,
    frames: FxHashMap<Box<[u8]>, u32>,
    /// Stack ids by 96 bits of a digest of their frames ([`chunks::text_key`]): 16 bytes a
    /// stack, not its text.
    stacks: FxHashMap<StackKey, u32>,
    /// The next ids (one past every stored one, deleted ones included: ids are never reused).
    next_frame: u32,
    next_stack: u32,
    /// Frames and stacks made by the transaction in progress (ids from `next_* - len`).
    new_frames: Vec<Box<[u8]>>,
    new_stacks: Vec<(Vec<u32>, StackKey)>,
    /// The FNV-1a hash of each new stack's text, when `legacy` (the `hash` column).
    new_hashes: Vec<i64>,
}

impl Caches {
    /// Loads every stored frame and stack (one pass over their chunks).
    fn load(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        if self.loaded {
            return Ok(());
        }
        self.frames.clear();
        self.stacks.clear();
        self.new_frames.clear();
        self.new_stacks.clear();
        self.new_hashes.clear();
        self.legacy = !has_chunks(conn)?;
        if self.legacy {
            return self.load_legacy(conn);
        }
        let ranges = |table: &str| -> rusqlite::Result<Vec<(i64, i64)>> {
            conn.prepare_cached(&format!("SELECT id, count FROM {table} ORDER BY id"))?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        };
        let blob = |table: &str, id: i64| -> rusqlite::Result<Vec<u8>> {
            conn.prepare_cached(&format!("SELECT data FROM {table} WHERE id = ?1"))?.query_row([id], |r| {
                r.get_ref(0)?
                    .as_blob()
                    .map(<[u8]>::to_vec)
                    .map_err(|_| db::corrupt(format!("{table} {id}: not a blob")))
            })
        };
        let check = |table: &str, id: i64, count: i64, limit: i64, per: usize| {
            if id < 1 || count < 0 || count as usize > per || id.saturating_add(count) > limit {
                return Err(db::corrupt(format!("{table}: a chunk of {count} ids at {id}")));
            }
            Ok(((id + count) as u32, count as usize))
        };
        let mut digests: FxHashMap<u32, chunks::FrameDigest> = FxHashMap::default();
        let mut names = NameSlots::default();
        self.next_frame = 1;
        for (id, count) in ranges(NameSlots::TABLE)? {
            let (end, n) =
                check(NameSlots::TABLE, id, count, i64::from(chunks::MAX_FRAME_ID), NameSlots::PER_CHUNK)?;
            names
                .decode(&blob(NameSlots::TABLE, id)?, n)
                .map_err(|d| db::corrupt(format!("frame chunk {id}: {d}")))?;
            for i in 0..n {
                if let Some(name) = names.get(i) {
                    let fid = id as u32 + i as u32;
                    digests.insert(fid, chunks::frame_digest(name));
                    self.frames.insert(name.into(), fid);
                }
            }
            self.next_frame = self.next_frame.max(end);
        }
        let mut stacks = StackSlots::default();
        self.next_stack = 1;
        for (id, count) in ranges(StackSlots::TABLE)? {
            let (end, n) = check(StackSlots::TABLE, id, count, i64::from(u32::MAX), StackSlots::PER_CHUNK)?;
            stacks
                .decode(&blob(StackSlots::TABLE, id)?, n)
                .map_err(|d| db::corrupt(format!("stack chunk {id}: {d}")))?;
            for i in 0..n {
                if let Some(frames) = stacks.get(i) {
                    let sid = id as u32 + i as u32;
                    if let Some(f) = frames.iter().find(|f| !digests.contains_key(f)) {
                        return Err(db::corrupt(format!("stack {sid}: frame {f} is missing")));
                    }
                    self.stacks.insert(chunks::stack_key(frames.iter().map(|f| digests[f])), sid);
                }
            }
            self.next_stack = self.next_stack.max(end);
        }
        self.frames.shrink_to_fit();
        self.loaded = true;
        Ok(())
    }

    /// [`Caches::load`] from the tables of schemas 1-3.
    fn load_legacy(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let mut digests: FxHashMap<u32, chunks::FrameDigest> = FxHashMap::default();
        self.next_frame = 1;
        let mut st = conn.prepare("SELECT id, CAST(name AS BLOB) FROM frames")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let id = u32::try_from(id)
                .ok()
                .filter(|&i| i < chunks::MAX_FRAME_ID)
                .ok_or_else(|| db::corrupt(format!("frame id {id} out of range")))?;
            let name = r.get_ref(1)?.as_blob()?;
            digests.insert(id, chunks::frame_digest(name));
            self.frames.insert(name.into(), id);
            self.next_frame = self.next_frame.max(id + 1);
        }
        self.next_stack = 1;
        let mut st = conn.prepare("SELECT id, frames FROM stacks")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let id = u32::try_from(id)
                .ok()
                .filter(|&i| i < u32::MAX)
                .ok_or_else(|| db::corrupt(format!("stack id {id} out of range")))?;
            let frames = legacy_frame_ids(r.get_ref(1)?.as_blob()?)
                .map_err(|d| db::corrupt(format!("stack {id}: {d}")))?;
            if let Some(f) = frames.iter().find(|f| !digests.contains_key(f)) {
                return Err(db::corrupt(format!("stack {id}: frame {f} is missing")));
            }
            self.stacks.insert(chunks::stack_key(frames.iter().map(|f| digests[f])), id);
            self.next_stack = self.next_stack.max(id + 1);
        }
        self.loaded = true;
        Ok(())
    }

    fn frame_id(&mut self, name: &[u8]) -> rusqlite::Result<u32> {
        if let Some(&id) = self.frames.get(name) {
            return Ok(id);
        }
        let id = self.next_frame;
        if id >= chunks::MAX_FRAME_ID {
            return Err(db::corrupt(format!("more than {} frames", chunks::MAX_FRAME_ID)));
        }
        self.next_frame += 1;
        self.new_frames.push(name.into());
        self.frames.insert(name.into(), id);
        Ok(id)
    }

    /// Writes the frames and stacks of the transaction in progress.
    fn write_new(&self, conn: &Connection) -> rusqlite::Result<()> {
        let first = |next: u32, n: usize| i64::from(next) - n as i64;
        if self.legacy {
            let f0 = first(self.next_frame, self.new_frames.len());
            for (i, name) in self.new_frames.iter().enumerate() {
                conn.prepare_cached("INSERT INTO frames(id, name) VALUES (?1, ?2)")?
                    .execute(params![f0 + i as i64, &name[..]])?;
            }
            let s0 = first(self.next_stack, self.new_stacks.len());
            for (i, ((frames, _), hash)) in self.new_stacks.iter().zip(&self.new_hashes).enumerate() {
                let mut blob = Vec::with_capacity(frames.len() * 2);
                for &f in frames {
                    codec::put_varint(&mut blob, u128::from(f));
                }
                conn.prepare_cached("INSERT INTO stacks(id, hash, frames) VALUES (?1, ?2, ?3)")?
                    .execute(params![s0 + i as i64, hash, blob])?;
            }
            return Ok(());
        }
        chunks::append::<NameSlots, _>(
            conn,
            first(self.next_frame, self.new_frames.len()),
            &self.new_frames,
        )?;
        let stacks: Vec<&[u32]> = self.new_stacks.iter().map(|(f, _)| f.as_slice()).collect();
        chunks::append::<StackSlots, _>(conn, first(self.next_stack, stacks.len()), &stacks)
    }

    /// The transaction committed: what it made is stored.
    fn committed(&mut self) {
        self.new_frames.clear();
        self.new_stacks.clear();
        self.new_hashes.clear();
    }

    /// The transaction failed: its ids are gone.
    fn rolled_back(&mut self) {
        for name in self.new_frames.drain(..) {
            self.frames.remove(&name);
            self.next_frame -= 1;
        }
        for (_, key) in self.new_stacks.drain(..) {
            self.stacks.remove(&key);
            self.next_stack -= 1;
        }
        self.new_hashes.clear();
        self.hosts.clear();
        self.series.clear();
        self.names.clear();
    }
}

/// A kflame history in one SQLite file. Implements [`Store`] (opened with
/// [`OpenMode::Write`]) and [`Query`] (either mode).
pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
    mode: OpenMode,
    caches: Caches,
    /// Metric values not yet written, by block (start, host), oldest first.
    pending: BTreeMap<BlockKey, BlockValues>,
    /// Readings whose series could not be made yet (the disk was full), oldest first.
    held: Vec<HeldReading>,
    /// Metric values dropped unwritten (more than [`MAX_UNWRITTEN_VALUES`] waited).
    dropped_values: u64,
    /// Latency histograms not yet written, by block (start, host id), oldest first.
    latency: BTreeMap<BlockKey, crate::latency::Block>,
    metric_block_ns: i64,
    /// Hours whose buckets compaction found nothing to merge in (host, kind, capture, unit,
    /// event, hour): not tried again by this writer.
    pub(crate) compact_skip: rustc_hash::FxHashSet<CompactKey>,
    /// Summaries of metric rows for wide chart ranges (see `summary.rs`), when set.
    series_cache: Option<std::sync::Arc<SeriesCache>>,
    /// The file's (device, inode) when it was opened: part of the series cache's keys, so
    /// that a file replaced under the same name never meets the summaries of another.
    file_id: (u64, u64),
    /// A writer's lock on [`lock_path`] (see [`lock_writer`]), released when it is dropped,
    /// after the connection closed (fields drop in order).
    _lock: Option<File>,
}

/// The key of an hour's buckets for compaction.
pub(crate) type CompactKey = (i64, i64, Option<i64>, String, Option<String>, i64);

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite").field("path", &self.path).field("mode", &self.mode).finish()
    }
}

fn other(path: &Path, detail: impl Into<String>) -> StoreError {
    StoreError::Other { store: path.display().to_string(), detail: detail.into() }
}

/// Moves the rows of the `stacks` and `frames` tables of schema 3 (renamed `stacks_v3` and
/// `frames_v3` by migration 5) into chunks, ids kept, and drops them.
fn convert_v3_stacks(conn: &Connection) -> rusqlite::Result<()> {
    let exists = |table: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)
    };
    if exists("frames_v3")? {
        let rows: Vec<(i64, Vec<u8>)> = conn
            .prepare("SELECT id, CAST(name AS BLOB) FROM frames_v3 ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        if let Some((id, _)) = rows.iter().find(|(id, _)| *id < 1 || *id >= i64::from(chunks::MAX_FRAME_ID)) {
            return Err(db::corrupt(format!("frame id {id} out of range")));
        }
        chunks::write_all::<NameSlots, _>(conn, &rows)?;
        conn.execute_batch("DROP TABLE frames_v3")?;
    }
    if exists("stacks_v3")? {
        let mut rows: Vec<(i64, Vec<u32>)> = Vec::new();
        let mut st = conn.prepare("SELECT id, frames FROM stacks_v3 ORDER BY id")?;
        let mut q = st.query([])?;
        while let Some(r) = q.next()? {
            let id: i64 = r.get(0)?;
            if id < 1 || id > i64::from(u32::MAX) {
                return Err(db::corrupt(format!("stack id {id} out of range")));
            }
            let blob = r.get_ref(1)?.as_blob()?;
            let frames = legacy_frame_ids(blob).map_err(|d| db::corrupt(format!("stack {id}: {d}")))?;
            rows.push((id, frames));
        }
        drop(q);
        drop(st);
        chunks::write_all::<StackSlots, _>(conn, &rows)?;
        conn.execute_batch("DROP TABLE stacks_v3")?;
    }
    Ok(())
}

/// Whether stacks and frames are stored in chunks (schema 5) rather than a row each.
fn has_chunks(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'stack_chunks'")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}

/// FNV-1a, 64 bits, of a stack's text: the `hash` column of the stacks of schemas 1-3.
fn legacy_stack_hash(text: &[u8]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h as i64
}

/// The frame ids of a stack row of schema 3 (varints).
fn legacy_frame_ids(blob: &[u8]) -> Result<Vec<u32>, String> {
    let mut r = codec::Reader::new(blob);
    let mut ids = Vec::with_capacity(blob.len());
    while !r.at_end() {
        let f = r.varint()?;
        if f >= u128::from(chunks::MAX_FRAME_ID) {
            return Err(format!("frame id {f} out of range"));
        }
        ids.push(f as u32);
    }
    Ok(ids)
}

/// Checks the file before SQLite sees it: a file that is not SQLite, or is shorter than
/// its header says, is refused without being opened for writing.
fn check_file(path: &Path, mode: OpenMode) -> Result<(), StoreError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode == OpenMode::Write => return Ok(()),
        Err(e) => return Err(other(path, format!("cannot open: {e}"))),
    };
    if !meta.is_file() {
        return Err(StoreError::NotADatabase {
            store: path.display().to_string(),
            detail: "not a regular file".into(),
        });
    }
    let len = meta.len();
    if len == 0 {
        if mode == OpenMode::Read {
            return Err(StoreError::NotADatabase {
                store: path.display().to_string(),
                detail: "the file is empty: nothing was recorded in it".into(),
            });
        }
        return Ok(());
    }
    let mut head = [0u8; 100];
    let n = File::open(path)
        .and_then(|mut f| {
            let mut got = 0;
            while got < head.len() {
                let k = f.read(&mut head[got..])?;
                if k == 0 {
                    break;
                }
                got += k;
            }
            Ok(got)
        })
        .map_err(|e| other(path, format!("cannot read: {e}")))?;
    if !head.starts_with(b"SQLite format 3\0") {
        let shown: String = head[..n.min(16)]
            .iter()
            .map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' })
            .collect();
        return Err(StoreError::NotADatabase {
            store: path.display().to_string(),
            detail: format!("it does not start with the SQLite header but with {shown:?}"),
        });
    }
    if n < 100 {
        return Err(StoreError::Corrupt {
            store: path.display().to_string(),
            detail: format!("truncated: {len} bytes, shorter than the 100-byte SQLite header"),
        });
    }
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536u64,
        p => u64::from(p),
    };
    let pages = u64::from(u32::from_be_bytes([head[28], head[29], head[30], head[31]]));
    let valid = head[24..28] == head[92..96];
    if valid && pages * page_size > len {
        return Err(StoreError::Corrupt {
            store: path.display().to_string(),
            detail: format!("truncated: its header counts {} bytes, the file has {len}", pages * page_size),
        });
    }
    Ok(())
}

/// The lock file of a database's writer: `<db>-lock`, beside it, holding the writer's pid.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-lock");
    PathBuf::from(p)
}

/// Takes the one writer's lock of the database at `path`: an exclusive `flock` on
/// [`lock_path`], held as long as the returned file is open, so that a writer killed
/// with `kill -9` leaves no stale lock. Two writers would each keep their own maps of
/// frame and stack ids and refer to stacks the other one stored under the same ids;
/// readers take no lock. Refused with [`StoreError::Locked`], naming the holder's pid.
fn lock_writer(path: &Path) -> Result<File, StoreError> {
    use std::io::{Seek, Write};
    let lock = lock_path(path);
    let mut f =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock).map_err(
            |e| other(path, format!("cannot open the writer's lock file {}: {e}", lock.display())),
        )?;
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            let mut text = String::new();
            let _ = f.read_to_string(&mut text);
            let pid = text.trim().parse().ok();
            return Err(StoreError::Locked { store: path.display().to_string(), lock, pid });
        }
        Err(e) => {
            return Err(other(path, format!("cannot lock {}: {e}", lock.display())));
        }
    }
    // The pid is for the message of a writer refused; the lock is the flock, not the text.
    let _ = f.set_len(0).and_then(|()| f.rewind()).and_then(|()| writeln!(f, "{}", std::process::id()));
    Ok(f)
}

/// Reads what a database holds, in one read transaction (a writer migrating it meanwhile
/// is seen before or after, never halfway): (schema entries, schema version). Refuses
/// another program's database, a schema version out of range and, for a known version,
/// a table, column or index of that version that is missing.
fn inspect(conn: &Connection, path: &Path, mode: OpenMode) -> Result<(i64, u32), StoreError> {
    let e = |err| map_err(path, err);
    let tx = conn.unchecked_transaction().map_err(e)?;
    let app: i32 = tx.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(e)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(e)?;
    let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(e)?;
    let corrupt = |detail: String| StoreError::Corrupt { store: path.display().to_string(), detail };
    if tables > 0 && app != APP_ID {
        return Err(StoreError::NotADatabase {
            store: path.display().to_string(),
            detail: format!(
                "a SQLite database of another program (application_id {app:#x}, {tables} schema entries)"
            ),
        });
    }
    let Ok(version) = u32::try_from(version) else {
        return Err(corrupt(format!(
            "its schema version (PRAGMA user_version) is {version}; kflame writes 1 to {SCHEMA_VERSION}"
        )));
    };
    if version > SCHEMA_VERSION {
        return Err(StoreError::FutureVersion {
            store: path.display().to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if mode == OpenMode::Read && (tables == 0 || version == 0) {
        return Err(StoreError::NotADatabase {
            store: path.display().to_string(),
            detail: "an empty database: nothing was recorded in it".into(),
        });
    }
    if version == 0 && tables > 0 {
        return Err(corrupt(format!(
            "it is marked as a kflame history but its schema version (PRAGMA user_version) is 0, \
             with {tables} schema entries; expected 1 to {SCHEMA_VERSION}"
        )));
    }
    if version > 0 {
        check_schema(&tx, version).map_err(|d| corrupt(format!("schema version {version}: {d}")))?;
    }
    Ok((tables, version))
}

/// The tables (with their columns) and indexes of schema `version`, made by its migrations
/// in a database in memory: what a file of that version must hold.
fn expected_schema(version: u32) -> rusqlite::Result<Vec<(String, String, Vec<String>)>> {
    let mem = Connection::open_in_memory()?;
    for sql in MIGRATIONS.iter().take(version as usize) {
        mem.execute_batch(sql)?;
    }
    // Migration 5's renamed tables are emptied and dropped in its transaction.
    if version >= 5 {
        mem.execute_batch("DROP TABLE stacks_v3; DROP TABLE frames_v3;")?;
    }
    // So is migration 7's.
    if version >= 7 {
        mem.execute_batch("DROP TABLE events_v6;")?;
    }
    schema_of(&mem)
}

/// (type, name, columns) of every table and named index of a database.
fn schema_of(conn: &Connection) -> rusqlite::Result<Vec<(String, String, Vec<String>)>> {
    let entries: Vec<(String, String)> = conn
        .prepare(
            "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index') \
             AND name NOT LIKE 'sqlite_%' ORDER BY type DESC, name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(entries.len());
    for (kind, name) in entries {
        let columns = if kind == "table" {
            conn.prepare("SELECT name FROM pragma_table_info(?1)")?
                .query_map([&name], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        out.push((kind, name, columns));
    }
    Ok(out)
}

/// Checks that a database holds every table, column and index of schema `version` (more
/// is allowed); says which one is missing.
fn check_schema(conn: &Connection, version: u32) -> Result<(), String> {
    let expected = expected_schema(version).map_err(|e| format!("cannot build its schema: {e}"))?;
    let found = schema_of(conn).map_err(|e| format!("cannot read its schema: {e}"))?;
    for (kind, name, columns) in &expected {
        let Some((_, _, have)) = found.iter().find(|(k, n, _)| k == kind && n == name) else {
            let tables: Vec<&str> =
                expected.iter().filter(|(k, _, _)| k == "table").map(|(_, n, _)| n.as_str()).collect();
            return Err(if kind == "table" {
                format!("the table `{name}` is missing (expected the tables {})", tables.join(", "))
            } else {
                format!("the index `{name}` is missing")
            });
        };
        if let Some(c) = columns.iter().find(|c| !have.contains(c)) {
            return Err(format!("the table `{name}` has no column `{c}` (expected {})", columns.join(", ")));
        }
    }
    Ok(())
}

impl Sqlite {
    /// Opens (or, to write, creates) a history database.
    pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<Sqlite, StoreError> {
        Sqlite::open_at(path.as_ref(), mode, SCHEMA_VERSION)
    }

    /// Opens for writing and migrates only up to `version` (tests of migrations).
    #[doc(hidden)]
    pub fn open_at_version(path: impl AsRef<Path>, version: u32) -> Result<Sqlite, StoreError> {
        Sqlite::open_at(path.as_ref(), OpenMode::Write, version.min(SCHEMA_VERSION))
    }

    fn open_at(path: &Path, mode: OpenMode, target: u32) -> Result<Sqlite, StoreError> {
        check_file(path, mode)?;
        let flags = match mode {
            OpenMode::Write => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            OpenMode::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let e = |err| map_err(path, err);
        let open = |flags| -> Result<Connection, StoreError> {
            let conn = Connection::open_with_flags(path, flags).map_err(e)?;
            conn.busy_timeout(BUSY_TIMEOUT).map_err(e)?;
            Ok(conn)
        };
        // A writer refuses what is not ours before leaving a lock file beside it, through a
        // read-only connection (closing a writable one may checkpoint another writer's WAL
        // into the file); once the lock is held, it looks again: another writer may have
        // created or migrated the file meanwhile.
        let lock = match mode {
            OpenMode::Write => {
                if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
                    inspect(
                        &open(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?,
                        path,
                        mode,
                    )?;
                }
                Some(lock_writer(path)?)
            }
            OpenMode::Read => None,
        };
        let conn = open(flags)?;
        let (tables, version) = inspect(&conn, path, mode)?;
        let mut db = Sqlite {
            conn,
            path: path.to_path_buf(),
            mode,
            caches: Caches::default(),
            pending: BTreeMap::new(),
            latency: BTreeMap::new(),
            held: Vec::new(),
            dropped_values: 0,
            metric_block_ns: 60_000_000_000,
            compact_skip: Default::default(),
            series_cache: None,
            file_id: std::fs::metadata(path)
                .map(|m| (std::os::unix::fs::MetadataExt::dev(&m), std::os::unix::fs::MetadataExt::ino(&m)))
                .unwrap_or_default(),
            _lock: lock,
        };
        if mode == OpenMode::Write {
            db.prepare_for_writing(tables == 0, version, target)?;
        }
        Ok(db)
    }

    fn prepare_for_writing(&mut self, new: bool, version: u32, target: u32) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |err| map_err(&path, err);
        if !new {
            let check: String = self.conn.query_row("PRAGMA quick_check(1)", [], |r| r.get(0)).map_err(e)?;
            if check != "ok" {
                return Err(StoreError::Corrupt { store: path.display().to_string(), detail: check });
            }
        } else {
            // Must come before the first table: lets maintenance give pages back to the file
            // system (PRAGMA incremental_vacuum).
            // Pages of 4 KiB (the default, set for all builds): what deleting under a full disk
            // must rewrite stays small.
            self.conn
                .execute_batch("PRAGMA page_size = 4096; PRAGMA auto_vacuum = INCREMENTAL")
                .map_err(e)?;
        }
        let jm: String = self.conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(e)?;
        if !jm.eq_ignore_ascii_case("wal") {
            return Err(other(&path, format!("cannot switch to WAL mode (journal mode stays {jm})")));
        }
        self.conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(e)?;
        self.make_reserve();
        if version < target {
            let tx = self.conn.unchecked_transaction().map_err(e)?;
            for (i, sql) in MIGRATIONS.iter().enumerate().take(target as usize).skip(version as usize) {
                tx.execute_batch(sql)
                    .map_err(|err| other(&path, format!("migration to schema version {}: {err}", i + 1)))?;
            }
            convert_v3_stacks(&tx).map_err(|err| match map_err(&path, err) {
                StoreError::Other { store, detail } => StoreError::Other {
                    store,
                    detail: format!("migration of stacks and frames into chunks: {detail}"),
                },
                err => err,
            })?;
            crate::events::convert_v6_events(&tx).map_err(|err| match map_err(&path, err) {
                StoreError::Other { store, detail } => {
                    StoreError::Other { store, detail: format!("migration of events into blocks: {detail}") }
                }
                err => err,
            })?;
            tx.execute_batch(&format!("PRAGMA application_id = {APP_ID}; PRAGMA user_version = {target};"))
                .map_err(e)?;
            tx.commit().map_err(e)?;
        }
        Ok(())
    }

    /// A file of [`RESERVE_BYTES`] beside the database, given back to the file system when
    /// the disk is full so that maintenance has room to delete.
    pub fn reserve_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push("-reserve");
        PathBuf::from(p)
    }

    fn make_reserve(&self) {
        let p = self.reserve_path();
        if std::fs::metadata(&p).is_ok_and(|m| m.len() == RESERVE_BYTES) {
            return;
        }
        if std::fs::write(&p, vec![0u8; RESERVE_BYTES as usize]).is_err() {
            let _ = std::fs::remove_file(&p);
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the file.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| map_err(&self.path, e))
    }

    /// The length of a metric block (default 60 s, at most 1 h): values are buffered in
    /// memory until their block ends, then written as one row per series.
    pub fn set_metric_block(&mut self, ns: i64) {
        self.metric_block_ns = ns.clamp(1_000_000_000, MAX_BUCKET_NS);
    }

    /// Bytes of the main file plus the WAL.
    pub fn file_bytes(&self) -> u64 {
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        len(&self.path) + len(Path::new(&wal))
    }

    /// Bytes of the pages in use (what the data needs, free pages not counted).
    pub fn used_bytes(&self) -> Result<u64, StoreError> {
        let e = |err| map_err(&self.path, err);
        let pages: i64 = self.conn.query_row("PRAGMA page_count", [], |r| r.get(0)).map_err(e)?;
        let free: i64 = self.conn.query_row("PRAGMA freelist_count", [], |r| r.get(0)).map_err(e)?;
        let size: i64 = self.conn.query_row("PRAGMA page_size", [], |r| r.get(0)).map_err(e)?;
        Ok(((pages - free).max(0) * size) as u64)
    }

    fn writable(&self) -> Result<(), StoreError> {
        if self.mode != OpenMode::Write {
            return Err(other(&self.path, "opened read-only"));
        }
        Ok(())
    }

    /// Runs `f` in one write transaction, with the frames and stacks it made; on failure
    /// the ids it made are forgotten (the rolled-back transaction took them along).
    fn write<T>(
        &mut self,
        f: impl FnOnce(&Connection, &mut Caches) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.writable()?;
        let r = (|| {
            let tx = self.conn.unchecked_transaction()?;
            let v = f(&tx, &mut self.caches)?;
            self.caches.write_new(&tx)?;
            tx.commit()?;
            Ok(v)
        })();
        match r {
            Ok(v) => {
                self.caches.committed();
                Ok(v)
            }
            Err(err) => {
                self.caches.rolled_back();
                Err(map_err(&self.path, err))
            }
        }
    }

    /// Writes the latency blocks of `keys`, one transaction each, oldest first; what is not
    /// written (a full disk) stays.
    fn write_latency(&mut self, mut keys: Vec<BlockKey>) -> Result<(), StoreError> {
        keys.sort_unstable();
        let block_ns = self.metric_block_ns;
        for key in keys {
            let Some(block) = self.latency.get(&key) else { continue };
            let r = (|| {
                let tx = self.conn.unchecked_transaction()?;
                crate::latency::write(&tx, key.1, key.0, key.0 + block_ns, block)?;
                tx.commit()
            })();
            r.map_err(|e| map_err(&self.path, e))?;
            self.latency.remove(&key);
        }
        Ok(())
    }

    /// Writes the pending blocks of `keys`, one transaction each, oldest first: after a
    /// full disk a backlog is written as far as the room goes, and what is not written
    /// stays pending.
    fn write_blocks(&mut self, mut keys: Vec<BlockKey>) -> Result<(), StoreError> {
        keys.sort_unstable();
        let block_ns = self.metric_block_ns;
        let path = self.path.clone();
        for key in keys {
            let Some(values) = self.pending.get(&key) else { continue };
            let r = (|| {
                let tx = self.conn.unchecked_transaction()?;
                write_block(&tx, &mut self.caches, key.1, key.0, block_ns, values)?;
                tx.commit()
            })();
            match r {
                Ok(()) => {
                    self.pending.remove(&key);
                }
                Err(rusqlite::Error::InvalidQuery) => {
                    return Err(StoreError::Corrupt {
                        store: path.display().to_string(),
                        detail: "a stored metric span cannot be read".into(),
                    });
                }
                // Nothing of the failed transaction is kept: it made no ids (only rows of
                // spans), so the caches stay.
                Err(err) => return Err(map_err(&path, err)),
            }
        }
        Ok(())
    }

    /// Finds (or makes) the series of `metrics` and adds their values to the pending blocks.
    fn buffer_metrics(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) -> Result<(), StoreError> {
        let mut ids = Vec::with_capacity(metrics.len());
        let host_id = {
            let missing = |c: &Caches| {
                metrics.iter().any(|m| {
                    !c.hosts.get(host).is_some_and(|h| {
                        c.series.contains_key(&(*h, m.name.to_string(), m.label.to_string()))
                    })
                })
            };
            // Series already stored are looked up without a write transaction (which a full
            // disk may refuse, after the caches were dropped): their values are kept.
            if missing(&self.caches) {
                self.lookup_series(host, metrics).map_err(|e| map_err(&self.path, e))?;
            }
            if missing(&self.caches) {
                self.write(|conn, c| {
                    let h = host_id(conn, c, host)?;
                    for m in metrics {
                        let key = (h, m.name.to_string(), m.label.to_string());
                        if c.series.contains_key(&key) {
                            continue;
                        }
                        let id = match conn
                            .prepare_cached(
                                "SELECT id FROM series WHERE host = ?1 AND name = ?2 AND label = ?3",
                            )?
                            .query_row(params![h, m.name, m.label], |r| r.get(0))
                            .optional()?
                        {
                            Some(id) => id,
                            None => {
                                conn.prepare_cached(
                                    "INSERT INTO series(host, name, label) VALUES (?1, ?2, ?3)",
                                )?
                                .execute(params![h, m.name, m.label])?;
                                conn.last_insert_rowid()
                            }
                        };
                        c.series.insert(key, id);
                    }
                    Ok(())
                })?;
            }
            let h = self.caches.hosts[host];
            for m in metrics {
                let id = self.caches.series[&(h, m.name.to_string(), m.label.to_string())];
                self.caches.names.entry(id).or_insert_with(|| (m.name.to_string(), m.label.to_string()));
                ids.push(id);
            }
            h
        };
        let block = time_ns.div_euclid(self.metric_block_ns) * self.metric_block_ns;
        let pending = self.pending.entry((block, host_id)).or_default();
        for (id, m) in ids.iter().zip(metrics) {
            pending.entry(*id).or_default().push((time_ns, stored_metric_value(m.value)));
        }
        self.bound_unwritten();
        Ok(())
    }

    /// Moves the held readings to the pending blocks, oldest first, making their series; on
    /// a full disk the rest stay held (a reading that fails otherwise is dropped).
    fn buffer_held(&mut self) -> Result<(), StoreError> {
        while let Some(h) = self.held.first() {
            let (host, time_ns) = (h.host.clone(), h.time_ns);
            let values: Vec<(String, String, f64)> = h.values.clone();
            let ms: Vec<Metric<'_>> =
                values.iter().map(|(n, l, v)| Metric { name: n, label: l, value: *v }).collect();
            match self.buffer_metrics(&host, time_ns, &ms) {
                Ok(()) => {
                    self.held.remove(0);
                }
                Err(e) if e.is_disk_full() => return Err(e),
                Err(e) => {
                    let gone = self.held.remove(0);
                    self.dropped_values += gone.values.len() as u64;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Keeps the values of a reading whose series could not be made (disk full).
    fn hold(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) {
        let values = metrics.iter().map(|m| (m.name.to_string(), m.label.to_string(), m.value)).collect();
        self.held.push(HeldReading { host: host.to_string(), time_ns, values });
        self.bound_unwritten();
    }

    /// Fills the caches with the ids of the stored host and series of `metrics`, reading only.
    fn lookup_series(&mut self, host: &str, metrics: &[Metric<'_>]) -> rusqlite::Result<()> {
        let (conn, c) = (&self.conn, &mut self.caches);
        let h = match c.hosts.get(host) {
            Some(&h) => h,
            None => {
                let found: Option<i64> = conn
                    .prepare_cached("SELECT id FROM hosts WHERE name = ?1")?
                    .query_row([host], |r| r.get(0))
                    .optional()?;
                let Some(h) = found else { return Ok(()) };
                c.hosts.insert(host.to_string(), h);
                h
            }
        };
        let mut st =
            conn.prepare_cached("SELECT id FROM series WHERE host = ?1 AND name = ?2 AND label = ?3")?;
        for m in metrics {
            let key = (h, m.name.to_string(), m.label.to_string());
            if c.series.contains_key(&key) {
                continue;
            }
            if let Some(id) = st.query_row(params![h, m.name, m.label], |r| r.get(0)).optional()? {
                c.series.insert(key, id);
            }
        }
        Ok(())
    }

    /// Metric values in memory not yet written (blocks in progress, and blocks kept while
    /// the disk is full), and the values dropped unwritten since the store was opened
    /// (when more than [`MAX_UNWRITTEN_VALUES`] waited).
    pub fn unwritten_metric_values(&self) -> (u64, u64) {
        let n: usize = self.pending.values().flat_map(|b| b.values()).map(Vec::len).sum::<usize>()
            + self.held.iter().map(|h| h.values.len()).sum::<usize>();
        (n as u64, self.dropped_values)
    }

    /// Drops the oldest pending blocks beyond [`MAX_UNWRITTEN_VALUES`] values, counting them.
    fn bound_unwritten(&mut self) {
        let (mut n, _) = self.unwritten_metric_values();
        while n as usize > MAX_UNWRITTEN_VALUES {
            // The oldest first: a pending block, or a held reading.
            let block = self.pending.first_key_value().map(|(k, _)| k.0);
            let gone = match (block, self.held.first().map(|h| h.time_ns)) {
                (Some(b), h) if h.is_none_or(|h| b <= h) => {
                    self.pending.pop_first().map_or(0, |(_, b)| b.values().map(|v| v.len() as u64).sum())
                }
                (_, Some(_)) => self.held.remove(0).values.len() as u64,
                _ => break,
            };
            self.dropped_values += gone;
            n -= gone;
        }
    }
}

/// The name and label of a series id, from the cache or its row.
fn name_of(conn: &Connection, c: &mut Caches, id: i64) -> rusqlite::Result<(String, String)> {
    if let Some(n) = c.names.get(&id) {
        return Ok(n.clone());
    }
    let n = conn
        .prepare_cached("SELECT name, label FROM series WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .optional()?
        .unwrap_or_default();
    c.names.insert(id, n.clone());
    Ok(n)
}

/// Stores the values of one block of one host (starting at `block`): as a row of its own
/// (merged with one written before at the same start: a restart), until the block that ends
/// a span of [`METRIC_SPAN_NS`] folds the span's rows into one, and the block that ends one of
/// [`METRIC_ROW_NS`] folds that span's (whole numbers of blocks): short blocks do not cost a
/// row each for long, and a day is 24 rows whose columns each learn their model once an hour.
/// The closed hours, ending at most at `before_ns`, whose metric rows are not one row yet, as
/// (host, the hour's start): a writer stopped within an hour leaves its rows unfolded.
fn unfolded_metric_hours(conn: &Connection, before_ns: i64) -> rusqlite::Result<Vec<(i64, i64)>> {
    if !has_spans(conn)? {
        return Ok(Vec::new());
    }
    conn.prepare_cached(
        "SELECT host, start_ns - start_ns % ?1 AS h FROM metric_spans GROUP BY host, h
         HAVING count(*) > 1 AND h + ?1 <= ?2 ORDER BY h, host",
    )?
    .query_map(params![METRIC_ROW_NS, before_ns], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// Folds the metric rows of `host` in the hour starting at `from` into one, as the block that
/// ends the hour would have (a block of `block_ns` ending there, with no values of its own).
fn fold_metric_hour(
    conn: &Connection,
    c: &mut Caches,
    host: i64,
    from: i64,
    block_ns: i64,
) -> rusqlite::Result<u64> {
    let to = from + METRIC_ROW_NS;
    let rows: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM metric_spans WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3",
        )?
        .query_row(params![host, from, to], |r| r.get(0))?;
    // The block that ends the hour, whole blocks of an hour (a block size that does not
    // divide it: the watcher's do).
    let block_ns = if METRIC_ROW_NS % block_ns == 0 { block_ns } else { 1_000_000_000 };
    write_block(conn, c, host, to - block_ns, block_ns, &BTreeMap::new())?;
    Ok(rows.saturating_sub(1) as u64)
}

fn write_block(
    conn: &Connection,
    c: &mut Caches,
    host: i64,
    block: i64,
    block_ns: i64,
    values: &BlockValues,
) -> rusqlite::Result<()> {
    if !has_spans(conn)? {
        for (id, vals) in values {
            write_series_block(conn, *id, block, block_ns, vals)?;
        }
        return Ok(());
    }
    // The widest span the block closes, if any: its rows are folded into one.
    let closed = [METRIC_ROW_NS, METRIC_SPAN_NS].into_iter().find_map(|span| {
        let row_ns = (block_ns * (span / block_ns).max(1)).min(MAX_BUCKET_NS.max(block_ns));
        let row = block.div_euclid(row_ns) * row_ns;
        (block + block_ns >= row + row_ns).then_some((row, row + row_ns))
    });
    let (from, to) = closed.unwrap_or((block, block + 1));
    let rows: Vec<(i64, Vec<u8>)> = conn
        .prepare_cached(
            "SELECT start_ns, data FROM metric_spans WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3
             ORDER BY start_ns",
        )?
        .query_map(params![host, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut all: BlockValues = BTreeMap::new();
    for (start, data) in rows {
        for (id, vals) in codec::decode_span(&data, start).map_err(|_| rusqlite::Error::InvalidQuery)? {
            all.entry(id).or_default().extend(vals);
        }
    }
    for (id, vals) in values {
        all.entry(*id).or_default().extend_from_slice(vals);
    }
    let mut named = Vec::with_capacity(all.len());
    for (id, mut vals) in all {
        vals.sort_by_key(|v| v.0);
        let (name, label) = name_of(conn, c, id)?;
        named.push((id, name, label, vals));
    }
    let (series, group_preds) = codec::span_series(named);
    let (start, end) = closed.unwrap_or((block, block + block_ns));
    // A new row's id is above every id there is, the rows it replaces included: an id is
    // never given twice, so readers key the summaries of a row on it (see `summary.rs`).
    let id: i64 = conn
        .prepare_cached("SELECT COALESCE(MAX(id), 0) + 1 FROM metric_spans")?
        .query_row([], |r| r.get(0))?;
    if let Some((from, to)) = closed {
        conn.prepare_cached("DELETE FROM metric_spans WHERE host = ?1 AND start_ns >= ?2 AND start_ns < ?3")?
            .execute(params![host, from, to])?;
    }
    let data = codec::encode_span(start, &series, &group_preds);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO metric_spans(id, host, start_ns, end_ns, data) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![id, host, start, end, data])?;
    Ok(())
}

/// [`write_block`] into a file of schema 3 or older (opened at its version, for tests of
/// migrations): `values` (of the block starting at `block`) go to the row of their series,
/// one series a row.
fn write_series_block(
    conn: &Connection,
    series: i64,
    block: i64,
    block_ns: i64,
    values: &[(i64, f64)],
) -> rusqlite::Result<()> {
    let row_ns = (block_ns * (METRIC_SPAN_NS / block_ns).max(1)).min(MAX_BUCKET_NS.max(block_ns));
    let row = block.div_euclid(row_ns) * row_ns;
    // The block is written as a row of its own (merged with one written before at the same
    // start: a restart); the last block of a row's span folds the span's rows into one.
    let rows_of = |from: i64, to: i64| -> rusqlite::Result<Vec<(i64, Vec<u8>)>> {
        conn.prepare_cached(
            "SELECT start_ns, data FROM metric_blocks WHERE series = ?1 AND start_ns >= ?2 AND start_ns < ?3
             ORDER BY start_ns",
        )?
        .query_map(params![series, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect()
    };
    let closes = block + block_ns >= row + row_ns;
    let (from, to) = if closes { (row, row + row_ns) } else { (block, block + 1) };
    let mut all: Vec<(i64, f64)> = Vec::new();
    for (start, data) in rows_of(from, to)? {
        codec::decode_metrics_into(&data, start, &mut all).map_err(|_| rusqlite::Error::InvalidQuery)?;
    }
    all.extend_from_slice(values);
    all.sort_by_key(|v| v.0);
    let (start, end) = if closes { (row, row + row_ns) } else { (block, block + block_ns) };
    if closes {
        conn.prepare_cached(
            "DELETE FROM metric_blocks WHERE series = ?1 AND start_ns >= ?2 AND start_ns < ?3",
        )?
        .execute(params![series, row, row + row_ns])?;
    }
    let data = codec::encode_metrics(start, &all);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO metric_blocks(series, start_ns, end_ns, data) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![series, start, end, data])?;
    Ok(())
}

fn host_id(conn: &Connection, c: &mut Caches, name: &str) -> rusqlite::Result<i64> {
    if let Some(&id) = c.hosts.get(name) {
        return Ok(id);
    }
    let id = match conn
        .prepare_cached("SELECT id FROM hosts WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?
    {
        Some(id) => id,
        None => {
            conn.prepare_cached("INSERT INTO hosts(name) VALUES (?1)")?.execute([name])?;
            conn.last_insert_rowid()
        }
    };
    c.hosts.insert(name.to_string(), id);
    Ok(id)
}

/// The id of a stack's text, stored once (its frames' ids, in a chunk).
fn stack_id(conn: &Connection, c: &mut Caches, text: &[u8]) -> rusqlite::Result<i64> {
    c.load(conn)?;
    let key = chunks::text_key(text);
    if let Some(&id) = c.stacks.get(&key) {
        return Ok(i64::from(id));
    }
    let frames = text.split(|&b| b == b';').map(|f| c.frame_id(f)).collect::<rusqlite::Result<Vec<u32>>>()?;
    let id = c.next_stack;
    if id == u32::MAX {
        return Err(db::corrupt("no stack id left".into()));
    }
    c.next_stack += 1;
    c.new_stacks.push((frames, key));
    if c.legacy {
        c.new_hashes.push(legacy_stack_hash(text));
    }
    c.stacks.insert(key, id);
    Ok(i64::from(id))
}

fn cgroup_matches(cg: &str, want: &str) -> bool {
    let want = want.trim_end_matches('/');
    want.is_empty() || cg == want || (cg.starts_with(want) && cg.as_bytes().get(want.len()) == Some(&b'/'))
}

/// Sums the samples of `rows` that the query takes, by stack id.
fn sum_buckets(path: &Path, rows: &[BucketRow], q: &ProfileQuery<'_>) -> Result<Sums, StoreError> {
    let mut sums: FxHashMap<i64, Weight> = FxHashMap::default();
    let mut samples = 0u64;
    let mut ctx = bucket::DecodeCtx::default();
    let mut d = bucket::DecodedBucket::default();
    let mut cg_ok: Vec<bool> = Vec::new();
    // Count and weight by index of a bucket's dictionary.
    let mut per: Vec<(u64, Weight)> = Vec::new();
    let (from, to) = (q.from_ns, q.to_ns);
    let inside = move |(a, b): (i64, i64)| a >= from && b <= to;
    let outside = move |(a, b): (i64, i64)| b <= from || a >= to;
    let cg_filter = |names: &[String], cg_ok: &mut Vec<bool>| {
        cg_ok.clear();
        cg_ok.push(q.cgroup.is_none());
        cg_ok.extend(names.iter().map(|cg| q.cgroup.is_none_or(|w| cgroup_matches(cg, w))));
    };
    for row in rows {
        let corrupt = |d: String| StoreError::Corrupt {
            store: path.display().to_string(),
            detail: format!("bucket at {}: {d}", row.start_ns),
        };
        let whole = row.start_ns >= from && row.end_ns <= to;
        let untimed_in = row.start_ns >= from && row.start_ns < to;
        if let Some((side, words)) = bucket::parse(&mut ctx, &row.data).map_err(corrupt)? {
            cg_filter(side.cgroups(), &mut cg_ok);
            // Without a cgroup filter, a bucket of equal weights has its stacks' totals:
            // a whole bucket is summed from them; a cut one, when fewer samples lie
            // outside the range, is the totals less the windows on the other side.
            let has_totals = q.cgroup.is_none() && side.counts_into(&mut per);
            let windows = side.window_samples(row.start_ns);
            let direct: usize = windows.iter().filter(|w| !outside(w.0)).map(|w| w.1).sum();
            let other: usize = windows.iter().filter(|w| !inside(w.0)).map(|w| w.1).sum();
            if has_totals && (whole || other < direct) {
                if !whole {
                    let mut less = vec![(0u64, Weight::ZERO); per.len()];
                    let out_of_range = |t: i64, _| t < from || t >= to;
                    side.sum_into(&ctx, words, row.start_ns, &mut |w| !inside(w), out_of_range, &mut less)
                        .map_err(corrupt)?;
                    for (p, l) in per.iter_mut().zip(&less) {
                        if l.0 > p.0 {
                            return Err(corrupt("a stack has more samples than its totals".into()));
                        }
                        p.0 -= l.0;
                        p.1 = p.1.saturating_sub(l.1);
                    }
                }
            } else {
                per.clear();
                per.resize(ctx.dict().len(), (0, Weight::ZERO));
                let keep = |t: i64, cg: u32| {
                    (whole || (t >= from && t < to)) && cg_ok.get(cg as usize).copied().unwrap_or(false)
                };
                side.sum_into(&ctx, words, row.start_ns, &mut |w| !outside(w), keep, &mut per)
                    .map_err(corrupt)?;
            }
            for (&id, &(n, w)) in ctx.dict().iter().zip(&per) {
                if n > 0 {
                    *sums.entry(id).or_insert(Weight::ZERO) += w;
                    samples += n;
                }
            }
            if untimed_in {
                for u in side.untimed() {
                    if cg_ok.get(u.cgroup as usize).copied().unwrap_or(false) {
                        *sums.entry(u.stack).or_insert(Weight::ZERO) += u.weight;
                        samples += u.count;
                    }
                }
            }
            continue;
        }
        // Format 1: decoded whole.
        bucket::decode_bucket_into(&mut ctx, &row.data, row.start_ns, &mut d).map_err(corrupt)?;
        cg_filter(&d.cgroups, &mut cg_ok);
        for s in &d.samples {
            if (whole || (s.time_ns >= from && s.time_ns < to)) && cg_ok[s.cgroup as usize] {
                *sums.entry(s.stack).or_insert(Weight::ZERO) += s.weight;
                samples += 1;
            }
        }
        if untimed_in {
            for u in &d.untimed {
                if cg_ok[u.cgroup as usize] {
                    *sums.entry(u.stack).or_insert(Weight::ZERO) += u.weight;
                    samples += u.count;
                }
            }
        }
    }
    Ok((sums, samples))
}

/// Summed weight by stack id, and the samples summed.
type Sums = (FxHashMap<i64, Weight>, u64);

/// A range's samples summed by stack id ([`Sqlite::sum_range`]).
struct RangeSums {
    sums: FxHashMap<i64, Weight>,
    meta: Meta,
    samples: u64,
    buckets: u64,
    mixed: u64,
}

/// One bucket row read for a query.
struct BucketRow {
    start_ns: i64,
    end_ns: i64,
    unit: String,
    event: Option<String>,
    data: Vec<u8>,
}

impl Sqlite {
    /// Shares `cache` for the metric series of wide ranges: a reader that serves charts
    /// (several connections, one cache) reads a day of a series from summaries of its
    /// rows instead of every value (see [`SeriesCache`]).
    pub fn set_series_cache(&mut self, cache: std::sync::Arc<SeriesCache>) {
        self.series_cache = Some(cache);
    }

    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt { store: self.path.display().to_string(), detail }
    }

    /// The captures whose row (`c`, host `h`) meets `cond`, with `args` bound.
    fn captures_where(&self, cond: &str, args: impl rusqlite::Params) -> Result<Vec<Event>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT c.id, h.name, c.kind, c.start_ns, c.end_ns, c.trigger, c.note FROM captures c
                 JOIN hosts h ON h.id = c.host WHERE {cond}"
            ))
            .map_err(e)?;
        let rows = st
            .query_map(args, |r| {
                let code: i64 = r.get(2)?;
                Ok((code, r.get(0)?, r.get(1)?, r.get(3)?, r.get(4)?, r.get::<_, Option<i64>>(5)?, r.get(6)?))
            })
            .map_err(e)?;
        let mut out = Vec::new();
        for r in rows {
            let (code, id, host, start_ns, end_ns, trigger, note) = r.map_err(e)?;
            let kind = Kind::from_code(code)
                .ok_or_else(|| self.corrupt(format!("capture {id} has unknown kind {code}")))?;
            out.push(Event::Capture {
                id: CaptureId(id),
                host,
                kind,
                start_ns,
                end_ns,
                trigger: trigger.map(TriggerId),
                note,
            });
        }
        Ok(out)
    }

    /// The kernel reports of `[from, to)` (through the reports' time index).
    fn reports_in(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT h.name, r.time_ns, r.kind, r.title, r.stack, r.text FROM reports r
                 JOIN hosts h ON h.id = r.host
                 WHERE r.time_ns >= ?1 AND r.time_ns < ?2 AND (?3 IS NULL OR h.name = ?3)",
            )
            .map_err(e)?;
        let rows = st
            .query_map(params![from_ns, to_ns, host], |r| {
                Ok(Event::Report {
                    host: r.get(0)?,
                    time_ns: r.get(1)?,
                    kind: r.get(2)?,
                    title: r.get(3)?,
                    stack: r.get(4)?,
                    text: r.get(5)?,
                })
            })
            .map_err(e)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r.map_err(e)?);
        }
        Ok(out)
    }

    fn host_lookup(&self, host: Option<&str>) -> Result<Option<Option<i64>>, StoreError> {
        let Some(h) = host else { return Ok(Some(None)) };
        let id: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM hosts WHERE name = ?1")
            .and_then(|mut s| s.query_row([h], |r| r.get(0)).optional())
            .map_err(|e| map_err(&self.path, e))?;
        Ok(id.map(Some))
    }

    /// Calls `f` with each bucket of the query's kind overlapping the range.
    fn for_buckets(
        &self,
        q: &ProfileQuery<'_>,
        mut f: impl FnMut(BucketRow) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let e = |err| map_err(&self.path, err);
        let Some(host) = self.host_lookup(q.host)? else { return Ok(()) };
        let mut sql = String::from(
            "SELECT start_ns, end_ns, unit, event, data FROM buckets
             WHERE kind = ?1 AND start_ns < ?3 AND start_ns > ?2 - ?4 AND end_ns > ?2",
        );
        if host.is_some() {
            sql.push_str(" AND host = ?5");
        }
        if let Some(names) = q.hosts {
            let mut ids = Vec::new();
            for name in names {
                if let Some(Some(id)) = self.host_lookup(Some(name))? {
                    ids.push(id.to_string());
                }
            }
            sql.push_str(&format!(" AND host IN ({})", ids.join(",")));
        }
        if q.capture.is_some() {
            sql.push_str(" AND capture = ?6");
        } else if q.kind.has_always_on() {
            sql.push_str(" AND capture IS NULL");
        }
        sql.push_str(" ORDER BY start_ns");
        let mut st = self.conn.prepare_cached(&sql).map_err(e)?;
        let mut params: Vec<(&str, &dyn rusqlite::ToSql)> = Vec::new();
        let kind = q.kind.code();
        let cap = q.capture.map(|c| c.0);
        params.push(("?1", &kind));
        params.push(("?2", &q.from_ns));
        params.push(("?3", &q.to_ns));
        params.push(("?4", &MAX_BUCKET_NS));
        if let Some(h) = &host {
            params.push(("?5", h));
        }
        if let Some(c) = &cap {
            params.push(("?6", c));
        }
        let mut rows = st.query(params.as_slice()).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let row = BucketRow {
                start_ns: r.get(0).map_err(e)?,
                end_ns: r.get(1).map_err(e)?,
                unit: r.get(2).map_err(e)?,
                event: r.get(3).map_err(e)?,
                data: r.get(4).map_err(e)?,
            };
            f(row)?;
        }
        Ok(())
    }

    /// The samples of `q` summed by stack id, in one read of the buckets, decoded on up to
    /// 8 threads.
    fn sum_range(&self, q: &ProfileQuery<'_>) -> Result<RangeSums, StoreError> {
        let mut meta: Option<Meta> = None;
        let (mut buckets, mut mixed) = (0u64, 0u64);
        let mut rows: Vec<BucketRow> = Vec::new();
        self.for_buckets(q, |row| {
            let m = Meta { unit: Unit::from_name(&row.unit), event: row.event.clone() };
            match &meta {
                None => meta = Some(m),
                Some(first) if first.unit != m.unit => {
                    mixed += 1;
                    return Ok(());
                }
                Some(_) => {}
            }
            buckets += 1;
            rows.push(row);
            Ok(())
        })?;
        // Decoding is the work: spread the buckets over the CPUs, each summing its own.
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
            .min(rows.len().div_ceil(64).max(rows.len().min(2)))
            .max(1);
        let chunk = rows.len().div_ceil(threads).max(1);
        let path = self.path.as_path();
        let parts: Vec<Result<Sums, StoreError>> = std::thread::scope(|sc| {
            let handles: Vec<_> =
                rows.chunks(chunk).map(|part| sc.spawn(move || sum_buckets(path, part, q))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(other(path, "a decoding thread failed"))))
                .collect()
        });
        let mut sums: FxHashMap<i64, Weight> = FxHashMap::default();
        let mut samples = 0u64;
        for part in parts {
            let (m, n) = part?;
            samples += n;
            if sums.is_empty() {
                sums = m;
            } else {
                for (id, w) in m {
                    *sums.entry(id).or_insert(Weight::ZERO) += w;
                }
            }
        }
        Ok(RangeSums { sums, meta: meta.unwrap_or_default(), samples, buckets, mixed })
    }

    /// The tree of stacks by id and weight (ids may repeat), built from their frame ids: each
    /// frame's name is read and interned once, no stack becomes text.
    fn tree_of(&self, mut stacks: Vec<(i64, Weight)>) -> Result<StackTree, StoreError> {
        stacks.sort_unstable_by_key(|s| s.0);
        let mut ids: Vec<i64> = stacks.iter().map(|s| s.0).collect();
        ids.dedup();
        let frames = self.stack_frames(&ids)?;
        let mut need: Vec<bool> = Vec::new();
        for &fid in &frames.frames {
            let fid = fid as usize;
            if need.len() <= fid {
                need.resize(fid + 1, false);
            }
            need[fid] = true;
        }
        let (names, name_at) = self.frame_names(&need)?;
        // Frame id → the tree's name id (`NO_NAME`: not interned yet; `EMPTY`: an empty
        // name, no frame, as in a folded text).
        const NO_NAME: u32 = u32::MAX;
        const EMPTY: u32 = u32::MAX - 1;
        let mut tree = StackTree::new();
        let mut tree_name = vec![NO_NAME; need.len()];
        // The frame ids become the tree's name ids in place.
        let mut path = frames.frames;
        let mut empty = false;
        for &(id, a, len) in &frames.spans {
            for f in &mut path[a as usize..a as usize + len as usize] {
                let slot = &mut tree_name[*f as usize];
                if *slot == NO_NAME {
                    let (start, n) = name_at[*f as usize];
                    if n == u32::MAX {
                        return Err(self.corrupt(format!("stack {id}: frame {f} is missing")));
                    }
                    let name = &names[start as usize..start as usize + n as usize];
                    *slot = if name.is_empty() { EMPTY } else { tree.intern(name) };
                }
                empty |= *slot == EMPTY;
                *f = *slot;
            }
        }
        let mut spans: Vec<(u32, u32)> = frames.spans.iter().map(|&(_, a, len)| (a, len)).collect();
        if empty {
            // Empty names are no frames (as in folded text): the stacks without them.
            let mut kept = Vec::with_capacity(path.len());
            for span in &mut spans {
                let start = kept.len() as u32;
                kept.extend(
                    path[span.0 as usize..(span.0 + span.1) as usize].iter().filter(|&&n| n != EMPTY),
                );
                *span = (start, kept.len() as u32 - start);
            }
            path = kept;
        }
        // (start, length, weight) of each entry (an id may come more than once).
        let mut entries: Vec<(u32, u32, Weight)> = Vec::with_capacity(stacks.len());
        let mut at = 0;
        for (&(id, _, _), &(start, len)) in frames.spans.iter().zip(&spans) {
            while at < stacks.len() && stacks[at].0 == id {
                entries.push((start, len, stacks[at].1));
                at += 1;
            }
        }
        tree.add_all_ids(&path, &entries);
        Ok(tree)
    }

    /// Whether stacks and frames are stored in chunks (schema 5) rather than a row each.
    fn chunked(&self) -> Result<bool, StoreError> {
        has_chunks(&self.conn).map_err(|e| map_err(&self.path, e))
    }

    /// The frame ids of each stack of `ids` (ascending, distinct), in that order; ids not
    /// stored are an error. Only the chunks holding them are read.
    fn stack_frames(&self, ids: &[i64]) -> Result<StackFrames, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut out = StackFrames::default();
        if self.chunked()? {
            let mut slots = StackSlots::default();
            chunks::each_chunk::<StackSlots>(&self.conn, &self.path, Some(ids), |id, count, data| {
                slots.decode(data, count).map_err(|d| self.corrupt(format!("stack chunk {id}: {d}")))?;
                let from = ids.partition_point(|&x| x < id);
                for &sid in ids[from..].iter().take_while(|&&x| x - id < count as i64) {
                    if let Some(frames) = slots.get((sid - id) as usize) {
                        out.push(sid, frames);
                    }
                }
                Ok(())
            })?;
        } else if ids.len() <= 2000 {
            let mut st = self.conn.prepare_cached("SELECT frames FROM stacks WHERE id = ?1").map_err(e)?;
            for &id in ids {
                let mut rows = st.query([id]).map_err(e)?;
                if let Some(r) = rows.next().map_err(e)? {
                    let b = r.get_ref(0).map_err(e)?.as_blob().map_err(|err| e(err.into()))?;
                    let f = legacy_frame_ids(b).map_err(|d| self.corrupt(format!("stack {id}: {d}")))?;
                    out.push(id, &f);
                }
            }
        } else {
            // One scan of the table, merged with the ids.
            let mut st = self.conn.prepare_cached("SELECT id, frames FROM stacks ORDER BY id").map_err(e)?;
            let mut rows = st.query([]).map_err(e)?;
            let mut next = 0;
            while next < ids.len() {
                let Some(r) = rows.next().map_err(e)? else { break };
                let id: i64 = r.get(0).map_err(e)?;
                while next < ids.len() && ids[next] < id {
                    next += 1;
                }
                if ids.get(next) == Some(&id) {
                    next += 1;
                    let b = r.get_ref(1).map_err(e)?.as_blob().map_err(|err| e(err.into()))?;
                    let f = legacy_frame_ids(b).map_err(|d| self.corrupt(format!("stack {id}: {d}")))?;
                    out.push(id, &f);
                }
            }
        }
        if out.spans.len() != ids.len() {
            let missing = ids
                .iter()
                .zip(out.spans.iter().map(|s| s.0).chain(std::iter::repeat(i64::MIN)))
                .find(|(a, b)| a != &b);
            let id = missing.map_or(0, |(a, _)| *a);
            return Err(self.corrupt(format!("stack {id} is referred to but not stored")));
        }
        Ok(out)
    }

    /// The names of the frames `need` marks (indexed by frame id): an arena, and each
    /// frame's (start, length) in it (length `u32::MAX`: not stored).
    fn frame_names(&self, need: &[bool]) -> Result<Names, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut names: Vec<u8> = Vec::new();
        let mut name_at: Vec<(u32, u32)> = vec![(0, u32::MAX); need.len()];
        let wanted: Vec<i64> = (0..need.len()).filter(|&i| need[i]).map(|i| i as i64).collect();
        let mut put = |id: i64, name: &[u8]| {
            if let Some(i) = usize::try_from(id).ok().filter(|&i| need.get(i) == Some(&true)) {
                name_at[i] = (names.len() as u32, name.len() as u32);
                names.extend_from_slice(name);
            }
        };
        if self.chunked()? {
            let mut slots = NameSlots::default();
            chunks::each_chunk::<NameSlots>(&self.conn, &self.path, Some(&wanted), |id, count, data| {
                slots.decode(data, count).map_err(|d| self.corrupt(format!("frame chunk {id}: {d}")))?;
                let from = wanted.partition_point(|&x| x < id);
                for &fid in wanted[from..].iter().take_while(|&&x| x - id < count as i64) {
                    if let Some(name) = slots.get((fid - id) as usize) {
                        put(fid, name);
                    }
                }
                Ok(())
            })?;
        } else if wanted.len() <= 2000 {
            let mut st = self.conn.prepare_cached("SELECT name FROM frames WHERE id = ?1").map_err(e)?;
            for &id in &wanted {
                let mut rows = st.query([id]).map_err(e)?;
                if let Some(r) = rows.next().map_err(e)? {
                    put(id, r.get_ref(0).map_err(e)?.as_blob().map_err(|err| e(err.into()))?);
                }
            }
        } else {
            let mut st = self.conn.prepare_cached("SELECT id, name FROM frames").map_err(e)?;
            let mut rows = st.query([]).map_err(e)?;
            while let Some(r) = rows.next().map_err(e)? {
                let id: i64 = r.get(0).map_err(e)?;
                put(id, r.get_ref(1).map_err(e)?.as_blob().map_err(|err| e(err.into()))?);
            }
        }
        Ok((names, name_at))
    }

    /// Calls `f` with the text of each stack of `ids` (ascending, distinct), built from the
    /// chunks (or rows) holding them into two arenas: no allocation per stack or frame.
    fn each_stack_text(&self, ids: &[i64], mut f: impl FnMut(i64, &[u8])) -> Result<(), StoreError> {
        let stacks = self.stack_frames(ids)?;
        let mut need: Vec<bool> = Vec::new();
        for &fid in &stacks.frames {
            let fid = fid as usize;
            if need.len() <= fid {
                need.resize(fid + 1, false);
            }
            need[fid] = true;
        }
        let (names, name_at) = self.frame_names(&need)?;
        let mut text = Vec::new();
        for &(id, a, len) in &stacks.spans {
            text.clear();
            for (k, &fid) in stacks.frames[a as usize..a as usize + len as usize].iter().enumerate() {
                let (at, len) = name_at[fid as usize];
                if len == u32::MAX {
                    return Err(self.corrupt(format!("stack {id}: frame {fid} is missing")));
                }
                if k > 0 {
                    text.push(b';');
                }
                text.extend_from_slice(&names[at as usize..at as usize + len as usize]);
            }
            f(id, &text);
        }
        Ok(())
    }

    /// The texts of stack ids (in any order, repeats allowed).
    fn texts_by_id(&self, ids: &[i64]) -> Result<FxHashMap<i64, Vec<u8>>, StoreError> {
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut out = FxHashMap::default();
        out.reserve(sorted.len());
        self.each_stack_text(&sorted, |id, text| {
            out.insert(id, text.to_vec());
        })?;
        Ok(out)
    }
}

/// Frame names in one arena, and each frame's (start, length) in it by frame id (length
/// `u32::MAX`: not stored).
type Names = (Vec<u8>, Vec<(u32, u32)>);

/// The frame ids of some stacks: (stack id, start, length) into one arena.
#[derive(Default)]
struct StackFrames {
    frames: Vec<u32>,
    spans: Vec<(i64, u32, u32)>,
}

impl StackFrames {
    fn push(&mut self, id: i64, frames: &[u32]) {
        self.spans.push((id, self.frames.len() as u32, frames.len() as u32));
        self.frames.extend_from_slice(frames);
    }
}

/// A row `time_ns, duration_ns, pid, tid, comm, cpu, kind, event, stack, weight` of `events`.
fn stored_event(capture: CaptureId, r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent {
        capture,
        time_ns: r.get(0)?,
        duration_ns: r.get::<_, Option<i64>>(1)?.map(|d| d as u64),
        pid: r.get(2)?,
        tid: r.get(3)?,
        comm: r.get(4)?,
        cpu: r.get(5)?,
        kind: r.get(6)?,
        event: r.get(7)?,
        stack: StackId(r.get(8)?),
        weight: r.get::<_, i64>(9)? as u64,
    })
}

/// `ev`'s frames joined by `;` into `text` (emptied first).
fn join_frames(text: &mut Vec<u8>, ev: &EventRecord<'_>) {
    text.clear();
    for (i, f) in ev.stack.iter().enumerate() {
        if i > 0 {
            text.push(b';');
        }
        text.extend_from_slice(f);
    }
}

/// Inserts `events` (their times checked already) under `capture` of host id `host`: as
/// blocks (schema 7), or a row each in a file of an older schema.
fn insert_events(
    conn: &Connection,
    c: &mut Caches,
    capture: i64,
    host: i64,
    events: &[EventRecord<'_>],
) -> rusqlite::Result<()> {
    let mut text = Vec::new();
    if crate::events::has_blocks(conn)? {
        let mut plain = Vec::with_capacity(events.len());
        // The stack of the event before, and its id: events of one task in a row share it.
        let mut prev: (Vec<u8>, Option<u32>) = (Vec::new(), None);
        for ev in events {
            join_frames(&mut text, ev);
            let stack = match prev.1 {
                Some(id) if prev.0 == text => id,
                _ => {
                    // Stack ids are those of the chunks: below 2^32.
                    let id = stack_id(conn, c, &text)? as u32;
                    std::mem::swap(&mut prev.0, &mut text);
                    prev.1 = Some(id);
                    id
                }
            };
            plain.push(crate::events::Plain::of(ev, stack));
        }
        return crate::events::write(conn, capture, host, &mut plain);
    }
    for ev in events {
        join_frames(&mut text, ev);
        let stack = stack_id(conn, c, &text)?;
        conn.prepare_cached(
            "INSERT INTO events(capture, host, time_ns, duration_ns, pid, tid, comm, cpu, kind, event, stack, weight)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?
        .execute(params![
            capture,
            host,
            ev.ts_ns.unwrap_or(0) as i64,
            ev.duration_ns.map(|d| d.min(i64::MAX as u64) as i64),
            ev.pid.unwrap_or(0),
            ev.tid.unwrap_or(0),
            ev.comm.unwrap_or(""),
            ev.cpu,
            ev.kind.name(),
            ev.event,
            stack,
            ev.weight as i64
        ])?;
    }
    Ok(())
}

impl Store for Sqlite {
    fn append_metrics(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) -> Result<(), StoreError> {
        self.writable()?;
        // Latency percentiles, maxima and rates are read from the histograms.
        let kept: Vec<Metric<'_>>;
        let metrics = if metrics.iter().any(|m| crate::derived::derived(m.name).is_some()) {
            kept = metrics.iter().filter(|m| crate::derived::derived(m.name).is_none()).copied().collect();
            &kept[..]
        } else {
            metrics
        };
        // Values of series that could not be made while the disk was full come first.
        if let Err(e) = self.buffer_held() {
            if e.is_disk_full() {
                self.hold(host, time_ns, metrics);
            }
            return Err(e);
        }
        match self.buffer_metrics(host, time_ns, metrics) {
            Err(e) if e.is_disk_full() => {
                self.hold(host, time_ns, metrics);
                return Err(e);
            }
            r => r?,
        }
        // Blocks that ended are written now (and those kept while the disk was full).
        let done: Vec<BlockKey> = self
            .pending
            .keys()
            .filter(|(start, _)| start + self.metric_block_ns <= time_ns)
            .copied()
            .collect();
        self.write_blocks(done)
    }

    fn append_bucket(&mut self, b: &Bucket<'_>) -> Result<(), StoreError> {
        let path = self.path.clone();
        let invalid = |detail: String| StoreError::Invalid { store: path.display().to_string(), detail };
        if b.end_ns <= b.start_ns || b.end_ns - b.start_ns > MAX_BUCKET_NS {
            return Err(invalid(format!(
                "a {} bucket of {} must end after it starts and last at most 1 h (start {}, end {})",
                b.kind, b.host, b.start_ns, b.end_ns
            )));
        }
        if let Some(s) = b.samples.iter().find(|s| s.time_ns < b.start_ns || s.time_ns >= b.end_ns) {
            return Err(invalid(format!(
                "a {} bucket of {} [{}, {}) holds a sample at {} outside it",
                b.kind, b.host, b.start_ns, b.end_ns, s.time_ns
            )));
        }
        if b.samples.len() > bucket::MAX_SAMPLES {
            return Err(invalid(format!(
                "a {} bucket of {} holds {} samples, more than the {} a bucket may: write shorter buckets",
                b.kind,
                b.host,
                b.samples.len(),
                bucket::MAX_SAMPLES
            )));
        }
        let unit = crate::stored_unit_name(&b.meta.unit).to_string();
        let event = b.meta.event.clone();
        self.write(|conn, c| {
            let host = host_id(conn, c, b.host)?;
            let mut cgroups: Vec<&str> = Vec::new();
            let mut cg_index: FxHashMap<&str, u32> = FxHashMap::default();
            let mut last: Option<(&[u8], i64)> = None;
            let mut raw = Vec::with_capacity(b.samples.len());
            for s in b.samples {
                let stack = match last {
                    Some((t, id)) if t == s.stack => id,
                    _ => stack_id(conn, c, s.stack)?,
                };
                last = Some((s.stack, stack));
                let cgroup = match s.cgroup {
                    None => 0,
                    Some(cg) => *cg_index.entry(cg).or_insert_with(|| {
                        cgroups.push(cg);
                        cgroups.len() as u32
                    }),
                };
                raw.push(RawSample { time_ns: s.time_ns, cpu: s.cpu, cgroup, stack, weight: s.weight });
            }
            raw.sort_by_key(|s| (s.time_ns, s.cpu));
            let mut untimed = Vec::with_capacity(b.aggregated.len());
            for (text, w) in b.aggregated {
                untimed.push(Untimed { stack: stack_id(conn, c, text)?, cgroup: 0, count: 1, weight: *w });
            }
            let data = bucket::encode_bucket(b.start_ns, TIME_UNIT_NS, 0, &cgroups, &raw, &untimed);
            conn.prepare_cached(
                "INSERT INTO buckets(host, kind, start_ns, end_ns, capture, unit, event, samples, timed, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9)",
            )?
            .execute(params![
                host,
                b.kind.code(),
                b.start_ns,
                b.end_ns,
                b.capture.map(|c| c.0),
                unit,
                event,
                (raw.len() + untimed.len()) as i64,
                data
            ])?;
            Ok(())
        })
    }

    fn append_trigger(&mut self, t: &TriggerFired<'_>) -> Result<TriggerId, StoreError> {
        self.write(|conn, c| {
            let host = host_id(conn, c, t.host)?;
            conn.prepare_cached(
                "INSERT INTO triggers(host, time_ns, rule, metric, value, threshold) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![host, t.time_ns, t.rule, t.metric, t.value, t.threshold])?;
            Ok(TriggerId(conn.last_insert_rowid()))
        })
    }

    fn begin_capture(&mut self, cs: &CaptureStart<'_>) -> Result<CaptureId, StoreError> {
        let unit = crate::stored_unit_name(&cs.meta.unit).to_string();
        let event = cs.meta.event.clone();
        self.write(|conn, c| {
            let host = host_id(conn, c, cs.host)?;
            conn.prepare_cached(
                "INSERT INTO captures(host, kind, start_ns, trigger, unit, event) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![host, cs.kind.code(), cs.start_ns, cs.trigger.map(|t| t.0), unit, event])?;
            Ok(CaptureId(conn.last_insert_rowid()))
        })
    }

    fn end_capture(&mut self, id: CaptureId, end_ns: i64, note: &str) -> Result<(), StoreError> {
        let n = self.write(|conn, _| {
            conn.prepare_cached("UPDATE captures SET end_ns = ?2, note = ?3 WHERE id = ?1")?
                .execute(params![id.0, end_ns, note])
        })?;
        if n == 0 {
            return Err(StoreError::Invalid {
                store: self.path.display().to_string(),
                detail: format!("no capture {}", id.0),
            });
        }
        Ok(())
    }

    fn append_events(&mut self, capture: CaptureId, events: &[EventRecord<'_>]) -> Result<(), StoreError> {
        let path = self.path.clone();
        if let Some(detail) = crate::unstorable_events(events, "event") {
            return Err(StoreError::Invalid { store: path.display().to_string(), detail });
        }
        let host: Option<i64> = self
            .conn
            .query_row("SELECT host FROM captures WHERE id = ?1", [capture.0], |r| r.get(0))
            .optional()
            .map_err(|e| map_err(&path, e))?;
        let Some(host) = host else {
            return Err(StoreError::Invalid {
                store: path.display().to_string(),
                detail: format!("no capture {}", capture.0),
            });
        };
        self.write(|conn, c| insert_events(conn, c, capture.0, host, events))
    }

    fn append_outliers(
        &mut self,
        host: &str,
        kind: LatencyKind,
        events: &[EventRecord<'_>],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        if let Some(detail) = crate::unstorable_events(events, "outlier") {
            return Err(StoreError::Invalid { store: path.display().to_string(), detail });
        }
        if events.is_empty() {
            return Ok(());
        }
        self.write(|conn, c| {
            let host = host_id(conn, c, host)?;
            insert_events(conn, c, crate::outlier_capture(kind).0, host, events)
        })
    }

    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError> {
        self.write(|conn, c| {
            let host = host_id(conn, c, r.host)?;
            conn.prepare_cached(
                "INSERT INTO reports(host, time_ns, kind, title, stack, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![host, r.time_ns, r.kind, r.title, r.stack, r.text])?;
            Ok(())
        })
    }

    fn append_latency(
        &mut self,
        host: &str,
        time_ns: i64,
        rows: &[LatencyRow<'_>],
    ) -> Result<(), StoreError> {
        self.writable()?;
        if rows.is_empty() {
            return Ok(());
        }
        let host_id = self.write(|conn, c| host_id(conn, c, host))?;
        let block = time_ns - time_ns.rem_euclid(self.metric_block_ns);
        let key = (block, host_id);
        if !self.latency.contains_key(&key) {
            // A writer killed within this block left its row: its seconds join this one's.
            let stored = crate::latency::stored_block(&self.conn, host_id, block)
                .map_err(|e| map_err(&self.path, e))?;
            self.latency.insert(key, stored.unwrap_or_default());
        }
        self.latency.entry(key).or_default().push(time_ns, rows);
        // Histograms waiting for room (a full disk) are bounded: the oldest blocks go first.
        while self.latency.values().map(crate::latency::Block::len).sum::<usize>() > MAX_UNWRITTEN_VALUES {
            self.latency.pop_first();
        }
        let done: Vec<BlockKey> = self
            .latency
            .keys()
            .filter(|(start, _)| start + self.metric_block_ns <= time_ns)
            .copied()
            .collect();
        let open = !done.contains(&key);
        self.write_latency(done)?;
        // The block in progress, rewritten each second: a `kill -9` loses the second being
        // read at most. Not for a full disk (the block stays in memory, written at its end).
        if open && let Some(b) = self.latency.get(&key) {
            let end = block + self.metric_block_ns;
            let r = crate::latency::write_partial(&self.conn, host_id, block, end, b)
                .map_err(|e| map_err(&self.path, e));
            match r {
                Err(e) if !e.is_disk_full() => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.buffer_held()?;
        let keys: Vec<BlockKey> = self.pending.keys().copied().collect();
        self.write_blocks(keys)?;
        let keys: Vec<BlockKey> = self.latency.keys().copied().collect();
        self.write_latency(keys)
    }

    fn maintain(&mut self, policy: &Policy) -> Result<Maintenance, StoreError> {
        self.writable()?;
        match crate::maintain::run(self, policy) {
            // Deleting needs room too (WAL frames, a checkpoint): give back the reserve,
            // make room, take the reserve again.
            Err(e) if e.is_disk_full() && std::fs::remove_file(self.reserve_path()).is_ok() => {
                let r = crate::maintain::run(self, policy);
                self.make_reserve();
                r
            }
            r => r,
        }
    }
}

impl Drop for Sqlite {
    fn drop(&mut self) {
        if self.mode == OpenMode::Write
            && !(self.pending.is_empty() && self.held.is_empty() && self.latency.is_empty())
        {
            let _ = self.flush();
        }
    }
}

impl Sqlite {
    /// Every host's (id, name).
    fn host_names(&self) -> Result<Vec<(i64, String)>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut st = self.conn.prepare_cached("SELECT id, name FROM hosts").map_err(e)?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(e)?;
        rows.collect::<Result<_, _>>().map_err(e)
    }

    /// The stored metrics' series of `names` (not the ones derived from histograms).
    fn stored_series(&self, names: &[&str], q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT s.id, s.host, h.name, s.label FROM series s JOIN hosts h ON h.id = s.host
                 WHERE s.name = ?1 AND (?2 IS NULL OR s.label = ?2) AND (?3 IS NULL OR h.name = ?3)
                 ORDER BY h.name, s.label",
            )
            .map_err(e)?;
        // (series id, host id, host, label, name), in the order of the answer.
        let mut found: Vec<(i64, i64, String, String, &str)> = Vec::new();
        for &name in names {
            let rows = st
                .query_map(params![name, q.label, q.host], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, name))
                })
                .map_err(e)?;
            for r in rows {
                found.push(r.map_err(e)?);
            }
        }
        let mut blocks = self
            .conn
            .prepare_cached(
                "SELECT start_ns, data FROM metric_blocks
                 WHERE series = ?1 AND start_ns < ?3 AND start_ns > ?2 - ?4 AND end_ns > ?2 ORDER BY start_ns",
            )
            .map_err(e)?;
        // Points this wide come from the summaries of the rows, on a grid of whole cells: the
        // range grows to the cells its ends fall in, so that no slot is cut and no row is
        // decoded for its ends.
        let summarized = match (q.points, &self.series_cache) {
            (Some(n), Some(cache))
                if n > 0 && (q.to_ns - q.from_ns) / n as i64 >= summary::SUMMARY_MIN_WIDTH_NS =>
            {
                Some((cache, summary::slot_width(q.from_ns, q.to_ns, n)))
            }
            _ => None,
        };
        let (from_ns, to_ns) = match summarized {
            Some((_, w)) => summary::whole_cells(q.from_ns, q.to_ns, w),
            None => (q.from_ns, q.to_ns),
        };
        let in_range = |v: &&(i64, f64)| v.0 >= from_ns && v.0 < to_ns;
        let mut pieces: Vec<Vec<Piece>> = vec![Vec::new(); found.len()];
        // Rows of schema 3 and older, one series each.
        for (k, &(id, ..)) in found.iter().enumerate() {
            let mut rows = blocks.query(params![id, from_ns, to_ns, MAX_BUCKET_NS]).map_err(e)?;
            while let Some(r) = rows.next().map_err(e)? {
                let start: i64 = r.get(0).map_err(e)?;
                let data = r.get_ref(1).map_err(e)?.as_blob().map_err(|err| e(err.into()))?;
                let vals = codec::decode_metrics(data, start)
                    .map_err(|d| self.corrupt(format!("metric block {id} at {start}: {d}")))?;
                pieces[k].extend(vals.iter().filter(in_range).map(|&(t, v)| Piece::value(t, v)));
            }
        }
        // Rows of every series of a host: each read and its times decoded once for all the
        // series asked of that host.
        if has_spans(&self.conn).map_err(e)? {
            let mut span_rows = self
                .conn
                .prepare_cached(
                    "SELECT start_ns, data, id, end_ns, length(data) FROM metric_spans
                     WHERE host = ?1 AND start_ns < ?3 AND start_ns > ?2 - ?4 AND end_ns > ?2 ORDER BY start_ns",
                )
                .map_err(e)?;
            let mut hosts: Vec<i64> = found.iter().map(|f| f.1).collect();
            hosts.sort_unstable();
            hosts.dedup();
            for host_id in hosts {
                let at: Vec<usize> = (0..found.len()).filter(|&k| found[k].1 == host_id).collect();
                let ids: Vec<i64> = at.iter().map(|&k| found[k].0).collect();
                let mut vals: Vec<Vec<(i64, f64)>> = vec![Vec::new(); ids.len()];
                let mut rows = span_rows.query(params![host_id, from_ns, to_ns, MAX_BUCKET_NS]).map_err(e)?;
                while let Some(r) = rows.next().map_err(e)? {
                    let start: i64 = r.get(0).map_err(e)?;
                    // The blob is read only when it is decoded (SQLite reads a column's
                    // pages when it is asked for): a row summarized already is not read.
                    let data = || r.get_ref(1).map_err(e)?.as_blob().map_err(|err| e(err.into()));
                    let row = summary::Row {
                        file: self.file_id,
                        host: host_id,
                        start,
                        id: r.get(2).map_err(e)?,
                        end: r.get(3).map_err(e)?,
                        len: r.get(4).map_err(e)?,
                    };
                    let corrupt =
                        |d: String| self.corrupt(format!("metric span of host {host_id} at {start}: {d}"));
                    // The values of the series `js` (indexes into `ids`) into `vals`.
                    let decode = |js: &[usize], vals: &mut [Vec<(i64, f64)>]| -> Result<(), StoreError> {
                        let want: Vec<i64> = js.iter().map(|&j| ids[j]).collect();
                        let mut got = vec![Vec::new(); want.len()];
                        codec::decode_span_many(data()?, start, &want, &mut got).map_err(corrupt)?;
                        for (&j, v) in js.iter().zip(got) {
                            vals[j] = v;
                        }
                        Ok(())
                    };
                    vals.iter_mut().for_each(Vec::clear);
                    if let Some((cache, _)) = summarized {
                        // The row's series' summaries (made once). The range is whole cells
                        // of whole slots: every slot, by its start, is inside it or outside.
                        let mut have: Vec<Option<std::sync::Arc<[Piece]>>> =
                            ids.iter().map(|&id| cache.get((row, id))).collect();
                        let missing: Vec<usize> = (0..ids.len()).filter(|&j| have[j].is_none()).collect();
                        if !missing.is_empty() {
                            decode(&missing, &mut vals)?;
                            for &j in &missing {
                                let slots: std::sync::Arc<[Piece]> = summary::slots(&vals[j]).into();
                                cache.put((row, ids[j]), slots.clone());
                                have[j] = Some(slots);
                            }
                        }
                        for (&k, slots) in at.iter().zip(&have) {
                            let slots = slots.as_deref().unwrap_or_default();
                            pieces[k]
                                .extend(slots.iter().filter(|p| p.time_ns >= from_ns && p.time_ns < to_ns));
                        }
                        continue;
                    }
                    decode(&(0..ids.len()).collect::<Vec<_>>(), &mut vals)?;
                    for (&k, v) in at.iter().zip(&vals) {
                        pieces[k].extend(v.iter().filter(in_range).map(|&(t, v)| Piece::value(t, v)));
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(found.len());
        for ((_, _, host, label, name), mut pieces) in found.into_iter().zip(pieces) {
            // Rows of an older writer may overlap the rows of a newer one.
            if !pieces.is_sorted_by_key(|p| p.time_ns) {
                pieces.sort_by_key(|p| p.time_ns);
            }
            let points = match (summarized, q.points) {
                (Some((_, width)), _) => summary::aggregate(&pieces, 0, width),
                (None, Some(n)) if n > 0 && pieces.len() > n => {
                    let width = (((q.to_ns - q.from_ns) as i128 + n as i128 - 1) / n as i128).max(1) as i64;
                    summary::aggregate(&pieces, q.from_ns, width)
                }
                _ => pieces
                    .iter()
                    .map(|p| Point { time_ns: p.time_ns, min: p.min, max: p.max, avg: p.sum, count: p.count })
                    .collect(),
            };
            out.push(Series { host, name: name.to_string(), label, points });
        }
        drop(blocks);
        drop(st);
        tx.commit().map_err(e)?;
        Ok(out)
    }

    fn latency_err(&self, e: crate::latency::ReadError) -> StoreError {
        match e {
            crate::latency::ReadError::Sql(e) => map_err(&self.path, e),
            crate::latency::ReadError::Corrupt(detail) => StoreError::Corrupt {
                store: self.path.display().to_string(),
                detail: format!("a stored latency row cannot be read: {detail}"),
            },
        }
    }
}

/// What maintenance needs of the backend.
impl Sqlite {
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> StoreError {
        map_err(&self.path, e)
    }

    /// The closed hours, ending at most at `before_ns`, whose metric rows are not one row
    /// yet, as (host, the hour's start) (maintenance).
    pub(crate) fn unfolded_metric_hours(&self, before_ns: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        unfolded_metric_hours(&self.conn, before_ns).map_err(|e| map_err(&self.path, e))
    }

    /// Folds the metric rows of `host` in the hour starting at `from` into one (maintenance),
    /// in a transaction. Returns how many rows fewer there are.
    pub(crate) fn fold_metric_hour(&mut self, host: i64, from: i64) -> Result<u64, StoreError> {
        let r = (|| {
            let tx = self.conn.unchecked_transaction()?;
            let n = fold_metric_hour(&tx, &mut self.caches, host, from, self.metric_block_ns)?;
            tx.commit()?;
            Ok(n)
        })();
        r.map_err(|e| {
            self.caches = Caches::default();
            map_err(&self.path, e)
        })
    }

    pub(crate) fn clear_caches(&mut self) {
        self.caches = Caches::default();
    }

    /// Forgets stacks and frames maintenance deleted (their ids are not given again).
    pub(crate) fn forget_deleted(&mut self, stacks: &[(i64, i64)], frames: &rustc_hash::FxHashSet<u32>) {
        let c = &mut self.caches;
        if !stacks.is_empty() {
            // Ranges in id order, adjacent ones merged.
            let mut ranges: Vec<(i64, i64)> = Vec::with_capacity(stacks.len());
            for &(a, b) in stacks {
                match ranges.last_mut() {
                    Some(last) if last.1 == a => last.1 = b,
                    _ => ranges.push((a, b)),
                }
            }
            c.stacks.retain(|_, id| {
                let id = i64::from(*id);
                let k = ranges.partition_point(|r| r.1 <= id);
                ranges.get(k).is_none_or(|r| id < r.0)
            });
        }
        if !frames.is_empty() {
            c.frames.retain(|_, id| !frames.contains(id));
        }
    }
}

impl Query for Sqlite {
    fn profile(&self, q: &ProfileQuery<'_>) -> Result<Profile, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let r = self.sum_range(q)?;
        let mut ids: Vec<i64> = r.sums.keys().copied().collect();
        let mut counts = StackCounts::new();
        counts.reserve(r.sums.len());
        ids.sort_unstable();
        self.each_stack_text(&ids, |id, text| counts.add(text, r.sums[&id]))?;
        tx.commit().map_err(e)?;
        Ok(Profile {
            stacks: Stacks::Counts(counts),
            meta: r.meta,
            samples: r.samples,
            buckets: r.buckets,
            mixed_units: r.mixed,
        })
    }

    fn profile_tree(&self, q: &ProfileQuery<'_>) -> Result<ProfileTree, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let r = self.sum_range(q)?;
        let sums: Vec<(i64, Weight)> = r.sums.into_iter().collect();
        let tree = self.tree_of(sums)?;
        tx.commit().map_err(e)?;
        Ok(ProfileTree { tree, meta: r.meta, samples: r.samples, buckets: r.buckets, mixed_units: r.mixed })
    }

    fn stacks_tree(&self, stacks: &[(StackId, Weight)]) -> Result<StackTree, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let tree = self.tree_of(stacks.iter().map(|&(id, w)| (id.0, w)).collect())?;
        tx.commit().map_err(e)?;
        Ok(tree)
    }

    fn samples(&self, q: &ProfileQuery<'_>) -> Result<Vec<SamplePoint>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let mut out = Vec::new();
        let mut ctx = bucket::DecodeCtx::default();
        let mut d = bucket::DecodedBucket::default();
        let (from, to) = (q.from_ns, q.to_ns);
        self.for_buckets(q, |row| {
            // Only the windows of a compacted hour that the range reaches.
            bucket::decode_windows_into(
                &mut ctx,
                &row.data,
                row.start_ns,
                &mut |(a, b)| b > from && a < to,
                &mut d,
            )
            .map_err(|d| self.corrupt(format!("bucket at {}: {d}", row.start_ns)))?;
            for s in &d.samples {
                let cg_ok = match (q.cgroup, s.cgroup) {
                    (None, _) => true,
                    (Some(_), 0) => false,
                    (Some(w), i) => cgroup_matches(&d.cgroups[i as usize - 1], w),
                };
                if s.time_ns >= q.from_ns && s.time_ns < q.to_ns && cg_ok {
                    out.push(SamplePoint {
                        time_ns: s.time_ns,
                        cpu: s.cpu,
                        stack: StackId(s.stack),
                        weight: s.weight,
                    });
                }
            }
            Ok(())
        })?;
        tx.commit().map_err(e)?;
        out.sort_by_key(|p| (p.time_ns, p.cpu));
        Ok(out)
    }

    fn stack_text(&self, id: StackId) -> Result<Vec<u8>, StoreError> {
        let mut t = self.stack_texts(&[id])?;
        Ok(t.pop().unwrap_or_default())
    }

    fn stack_texts(&self, ids: &[StackId]) -> Result<Vec<Vec<u8>>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let raw: Vec<i64> = ids.iter().map(|id| id.0).collect();
        let texts = self.texts_by_id(&raw)?;
        tx.commit().map_err(e)?;
        let out = raw.iter().map(|id| texts.get(id).cloned().unwrap_or_default()).collect();
        Ok(out)
    }

    fn series(&self, q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        self.series_many(&[q.name], q)
    }

    fn latency(&self, q: &LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| map_err(&self.path, e))?;
        let names = self.host_names()?;
        let host = match q.host {
            None => None,
            Some(h) => match names.iter().find(|(_, n)| n == h) {
                Some((id, _)) => Some(*id),
                None => return Ok(Vec::new()),
            },
        };
        let found = crate::latency::read(&tx, host, q.kind, q.label, q.from_ns, q.to_ns)
            .map_err(|e| self.latency_err(e))?;
        Ok(found
            .into_iter()
            .map(|((h, label), points)| LatencySeries {
                host: names.iter().find(|(id, _)| *id == h).map(|(_, n)| n.clone()).unwrap_or_default(),
                kind: q.kind,
                label,
                points,
            })
            .collect())
    }

    fn latency_labels(
        &self,
        host: Option<&str>,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<(LatencyKind, String)>, StoreError> {
        let names = self.host_names()?;
        let host = match host {
            None => None,
            Some(h) => match names.iter().find(|(_, n)| n == h) {
                Some((id, _)) => Some(*id),
                None => return Ok(Vec::new()),
            },
        };
        crate::latency::labels(&self.conn, host, from_ns, to_ns).map_err(|e| self.latency_err(e))
    }

    fn series_many(&self, names: &[&str], q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        kflame_store_api::derived::series_many(
            names,
            q,
            |names, q| self.stored_series(names, q),
            |lq| self.latency(lq),
        )
    }

    fn metric_names(&self, host: Option<&str>) -> Result<Vec<(String, String)>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT s.name, s.label FROM series s JOIN hosts h ON h.id = s.host
                 WHERE (?1 IS NULL OR h.name = ?1) ORDER BY s.name, s.label",
            )
            .map_err(e)?;
        let stored: Vec<(String, String)> = st
            .query_map(params![host], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)?;
        let labels = self.latency_labels(host, i64::MIN, i64::MAX)?;
        Ok(kflame_store_api::derived::with_names(stored, &labels))
    }

    fn events(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let mut out = Vec::new();
        {
            let mut st = self
                .conn
                .prepare_cached(
                    "SELECT t.id, h.name, t.time_ns, t.rule, t.metric, t.value, t.threshold FROM triggers t
                     JOIN hosts h ON h.id = t.host
                     WHERE t.time_ns >= ?1 AND t.time_ns < ?2 AND (?3 IS NULL OR h.name = ?3)",
                )
                .map_err(e)?;
            let rows = st
                .query_map(params![from_ns, to_ns, host], |r| {
                    Ok(Event::Trigger {
                        id: TriggerId(r.get(0)?),
                        host: r.get(1)?,
                        time_ns: r.get(2)?,
                        rule: r.get(3)?,
                        metric: r.get(4)?,
                        value: r.get(5)?,
                        threshold: r.get(6)?,
                    })
                })
                .map_err(e)?;
            for r in rows {
                out.push(r.map_err(e)?);
            }
            out.extend(self.captures_where(
                "c.start_ns < ?2 AND (c.end_ns IS NULL OR c.end_ns > ?1 OR c.start_ns >= ?1)
                 AND (?3 IS NULL OR h.name = ?3)",
                params![from_ns, to_ns, host],
            )?);
            out.extend(self.reports_in(from_ns, to_ns, host)?);
        }
        tx.commit().map_err(e)?;
        out.sort_by_key(|ev| ev.time_ns());
        Ok(out)
    }

    fn reports(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let mut out = self.reports_in(from_ns, to_ns, host)?;
        tx.commit().map_err(e)?;
        out.sort_by_key(|ev| ev.time_ns());
        Ok(out)
    }

    fn capture(&self, id: CaptureId) -> Result<Option<Event>, StoreError> {
        Ok(self.captures_where("c.id = ?1", params![id.0])?.pop())
    }

    fn capture_event_count(&self, capture: CaptureId) -> Result<u64, StoreError> {
        let e = |err| map_err(&self.path, err);
        if crate::events::has_blocks(&self.conn).map_err(e)? {
            return crate::events::count(&self.conn, capture).map_err(e);
        }
        self.conn
            .prepare_cached("SELECT count(*) FROM events WHERE capture = ?1")
            .and_then(|mut st| st.query_row([capture.0], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
            .map_err(|err| map_err(&self.path, err))
    }

    fn capture_events(
        &self,
        capture: CaptureId,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let e = |err| map_err(&self.path, err);
        if crate::events::has_blocks(&self.conn).map_err(e)? {
            let tx = self.conn.unchecked_transaction().map_err(e)?;
            let out = crate::events::read(&self.conn, capture, None, from_ns, to_ns).map_err(e)?;
            tx.commit().map_err(e)?;
            return Ok(out);
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT time_ns, duration_ns, pid, tid, comm, cpu, kind, event, stack, weight FROM events
                 WHERE capture = ?1 AND time_ns >= ?2 AND time_ns < ?3 ORDER BY time_ns",
            )
            .map_err(e)?;
        st.query_map(params![capture.0, from_ns, to_ns], |r| stored_event(capture, r))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)
    }

    fn outliers(
        &self,
        kind: LatencyKind,
        from_ns: i64,
        to_ns: i64,
        host: Option<&str>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let capture = crate::outlier_capture(kind);
        if crate::events::has_blocks(&self.conn).map_err(e)? {
            let tx = self.conn.unchecked_transaction().map_err(e)?;
            let out = crate::events::read(&self.conn, capture, host, from_ns, to_ns).map_err(e)?;
            tx.commit().map_err(e)?;
            return Ok(out);
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT e.time_ns, e.duration_ns, e.pid, e.tid, e.comm, e.cpu, e.kind, e.event, e.stack, e.weight
                 FROM events e JOIN hosts h ON h.id = e.host
                 WHERE e.capture = ?1 AND e.time_ns >= ?2 AND e.time_ns < ?3 AND (?4 IS NULL OR h.name = ?4)
                 ORDER BY e.time_ns",
            )
            .map_err(e)?;
        st.query_map(params![capture.0, from_ns, to_ns, host], |r| stored_event(capture, r))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)
    }

    fn hosts(&self) -> Result<Vec<String>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let mut st = self.conn.prepare_cached("SELECT name FROM hosts ORDER BY name").map_err(e)?;
        st.query_map([], |r| r.get(0)).map_err(e)?.collect::<Result<_, _>>().map_err(e)
    }

    fn time_bounds(&self) -> Result<Option<(i64, i64)>, StoreError> {
        let e = |err| map_err(&self.path, err);
        let tx = self.conn.unchecked_transaction().map_err(e)?;
        let spans = if has_spans(&self.conn).map_err(e)? {
            "UNION ALL SELECT min(start_ns), max(end_ns) FROM metric_spans"
        } else {
            ""
        };
        let (lo, hi): (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                &format!(
                    "SELECT min(lo), max(hi) FROM (
                    SELECT min(start_ns) AS lo, max(end_ns) AS hi FROM buckets
                    UNION ALL SELECT min(start_ns), max(end_ns) FROM metric_blocks {spans}
                    UNION ALL SELECT min(time_ns), max(time_ns) FROM triggers
                    UNION ALL SELECT min(start_ns), max(coalesce(end_ns, start_ns)) FROM captures
                    UNION ALL SELECT min(time_ns), max(time_ns) FROM reports)"
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(lo.zip(hi))
    }
}
