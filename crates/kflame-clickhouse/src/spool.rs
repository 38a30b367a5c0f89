//! The spool: insert batches that ClickHouse could not take, kept in a file in the order they
//! were made and sent in that order when it answers again. Bounded in bytes: a full spool
//! refuses more (the watcher then holds its buckets, and past its own bound drops the oldest,
//! counted), never grows memory.
//!
//! # The file
//!
//! One append-only file (the path the user gave, `--spool`): a 16-byte header (`kflame spool`
//! and a format version), then records, each `kfsb`, the length of its body (u64), the CRC-32
//! of that length and the body (u32), and the body:
//!
//! - a push: the seq of its first batch, then each batch's table, rows, format (`Native`;
//!   `RowBinary` was what earlier versions sent) and rows' bytes. A push is one record, so
//!   it is in the spool whole or not at all;
//! - a batch sent: its seq. A batch leaves the spool only when ClickHouse took it.
//!
//! A push returns once its record is on disk (`fdatasync`): the checksum is what makes a
//! record visible, so a crash at any point leaves either the whole record or a damaged tail.
//! Opening reads every record (their bodies' places are kept, not the bodies). A damaged
//! record with no valid record after it is a write cut short by a crash or a full disk: it
//! held nothing the spool had accepted, so it is cut off and said in a note
//! ([`Spool::notes`]). A damaged record *before* valid ones is not what a crash leaves (each
//! append is on disk before the next starts): the file was altered (a failing disk, another
//! program). Carrying on would lose that batch without a trace and the next compaction
//! would erase it, so opening refuses with [`StoreError::Corrupt`] naming the file and the
//! offset, and leaves the file as it is for the user to look at or move aside.
//!
//! Space comes back when batches are sent: when none is left the file is cut back to its
//! header; while some wait, once more than half of the file (and at least 64 MiB) is sent
//! batches, the waiting ones are copied to `PATH.compact`, which is synced and renamed over
//! the file (a crash before the rename leaves the old file whole; a stale `PATH.compact` is
//! removed on open). The file holds at most about twice `max_bytes` plus that slack.
//!
//! A spool has one writer: an exclusive `flock` on `PATH-lock` (as the history store's),
//! held while the spool is open; a second writer is refused with [`StoreError::Locked`].
//!
//! # Spools of earlier versions
//!
//! Earlier kflame versions kept the spool in a SQLite file at the same path. This one does
//! not link SQLite and cannot read it, but must not ignore what it may hold either. Refusing
//! to start would stop every upgraded watcher that ever spooled (the SQLite file stays, empty,
//! after its batches were sent), and keeping the new spool under another name would leave
//! batches behind in that name once the old file is removed. So an old spool (a SQLite
//! database with no table but the spool's, whose `PRAGMA application_id` is not set) is
//! moved aside to `PATH.sqlite-old` (with its `-wal` and `-shm` files), the new spool starts
//! at `PATH`, and a note says where the old one is, how big it is and what to do with it (send
//! it with the earlier version: `kflame watch --spool PATH.sqlite-old`, or delete it); every
//! later open repeats that note while the file is there. Any other SQLite database at the
//! path (a history database, another program's) is refused as not a spool, as before.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use kflame_store_api::StoreError;

/// The file's first bytes: this text and the format version (u32, little-endian).
const MAGIC: &[u8; 12] = b"kflame spool";
/// The format this code writes and reads.
const VERSION: u32 = 1;
/// Bytes of the file's header.
const HEADER_LEN: u64 = 16;
/// Every record's first bytes.
const REC_MAGIC: &[u8; 4] = b"kfsb";
/// Bytes of a record's header: magic, body length (u64), CRC-32 of length and body (u32).
const REC_HEAD: u64 = 16;
const KIND_PUSH: u8 = 1;
const KIND_SENT: u8 = 2;
/// The first bytes of every SQLite database.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Sent batches' bytes that make a compaction worth it (when also more than the waiting ones).
const COMPACT_AFTER: u64 = 64 << 20;
/// Seqs stay below this (a spool would need 2^62 pushes to get there): adding to one never
/// overflows.
const MAX_SEQ: i64 = 1 << 62;

/// A batch waiting in the spool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Its place in the spool (sent in increasing order).
    pub seq: i64,
    /// The table it goes to (without database).
    pub table: String,
    /// Rows in it.
    pub rows: u64,
    /// The rows' format: `Native` (`RowBinary` in spools of earlier kflame versions).
    pub format: String,
    /// The rows.
    pub body: Vec<u8>,
}

/// A waiting batch: what it is and where its rows are in the file.
#[derive(Debug, Clone)]
struct Entry {
    seq: i64,
    table: String,
    rows: u64,
    format: String,
    /// Offset of its rows in the file.
    at: u64,
    /// Bytes of its rows.
    len: u64,
}

impl Entry {
    /// Bytes of its record when written alone (what a compaction writes).
    fn record_len(&self) -> u64 {
        REC_HEAD + 1 + 8 + 4 + batch_meta_len(&self.table, &self.format) + self.len
    }
}

/// The spool file.
pub struct Spool {
    path: PathBuf,
    file: File,
    /// Held open: the writer's `flock`.
    _lock: File,
    /// Where the next record goes (the file's valid length).
    end: u64,
    /// Bytes past `end` a failed append may have left: cut before the next one.
    dirty: bool,
    entries: VecDeque<Entry>,
    next_seq: i64,
    bytes: u64,
    notes: Vec<String>,
    /// Sent batches' bytes past which a compaction is considered.
    compact_after: u64,
    /// At most this many bytes of batches.
    pub max_bytes: u64,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spool({}, {} batches, {} bytes)", self.path.display(), self.entries.len(), self.bytes)
    }
}

fn store(path: &Path) -> String {
    path.display().to_string()
}

/// An I/O error as a store error: a full disk (or quota) is `DiskFull`, the rest `Other`.
fn io_err(path: &Path, what: &str, e: &io::Error) -> StoreError {
    let full = matches!(e.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded)
        || matches!(e.raw_os_error(), Some(28 | 122)); // ENOSPC, EDQUOT
    if full {
        StoreError::DiskFull { store: store(path), detail: format!("spool: {what}: {e}") }
    } else {
        StoreError::Other { store: store(path), detail: format!("spool: {what}: {e}") }
    }
}

/// `PATH` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Syncs the directory holding `path`, so that a file created or renamed there stays.
fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

fn batch_meta_len(table: &str, format: &str) -> u64 {
    2 + table.len() as u64 + 8 + 1 + format.len() as u64 + 8
}

/// What a record's body says.
enum Record {
    Push(Vec<Entry>),
    Sent(i64),
}

/// A reader of a record's body.
struct Cursor<'a> {
    body: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let body = self.body;
        let s = self.pos.checked_add(n).and_then(|end| body.get(self.pos..end)).ok_or_else(|| {
            format!("its body of {} bytes ends inside a field of {n} bytes at {}", body.len(), self.pos)
        })?;
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap_or([0; 2])))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap_or([0; 4])))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap_or([0; 8])))
    }

    fn text(&mut self, n: usize, what: &str) -> Result<String, String> {
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| format!("a {what} not UTF-8"))
    }
}

/// Reads a record's body (checked by its CRC) found at `body_at`: what it says, or what is
/// wrong.
fn decode(body: &[u8], body_at: u64) -> Result<Record, String> {
    let mut c = Cursor { body, pos: 0 };
    match c.u8()? {
        KIND_SENT => {
            let seq = c.u64()? as i64;
            if c.pos != body.len() {
                return Err(format!("a sent record of {} bytes, not 9", body.len()));
            }
            Ok(Record::Sent(seq))
        }
        KIND_PUSH => {
            let first = c.u64()? as i64;
            let count = c.u32()?;
            // Each batch takes at least 19 bytes: a count beyond the body is refused before
            // anything is allocated for it.
            if u64::from(count) > body.len() as u64 / 19 {
                return Err(format!("{count} batches in a body of {} bytes", body.len()));
            }
            let mut entries = Vec::with_capacity(count as usize);
            for i in 0..count {
                let n = c.u16()?;
                let table = c.text(usize::from(n), "table name")?;
                let rows = c.u64()?;
                let n = c.u8()?;
                let format = c.text(usize::from(n), "format")?;
                let len = c.u64()?;
                let at = body_at + c.pos as u64;
                c.take(usize::try_from(len).map_err(|_| "a batch too long")?)?;
                let seq = first.checked_add(i64::from(i)).ok_or("a seq out of range")?;
                entries.push(Entry { seq, table, rows, format, at, len });
            }
            if c.pos != body.len() {
                return Err(format!("{} bytes after its last batch", body.len() - c.pos));
            }
            Ok(Record::Push(entries))
        }
        k => Err(format!("a record of kind {k}, which this kflame does not know")),
    }
}

/// The body of the record at `off` when it is whole (magic, length within the file, CRC), or
/// what is wrong with it.
fn read_record(file: &File, off: u64, file_len: u64) -> io::Result<Result<Vec<u8>, String>> {
    let left = file_len - off;
    if left < REC_HEAD {
        return Ok(Err(format!("{left} bytes, less than a record's header")));
    }
    let mut head = [0u8; REC_HEAD as usize];
    file.read_exact_at(&mut head, off)?;
    if &head[..4] != REC_MAGIC {
        return Ok(Err(format!(
            "no record starts there (it starts with {:?})",
            String::from_utf8_lossy(&head[..4])
        )));
    }
    let len = u64::from_le_bytes(head[4..12].try_into().unwrap_or([0; 8]));
    if len > left - REC_HEAD {
        return Ok(Err(format!("a record of {len} bytes with {} bytes left in the file", left - REC_HEAD)));
    }
    let mut body = vec![0u8; len as usize];
    file.read_exact_at(&mut body, off + REC_HEAD)?;
    let mut h = crc32fast::Hasher::new();
    h.update(&head[4..12]);
    h.update(&body);
    let crc = u32::from_le_bytes(head[12..16].try_into().unwrap_or([0; 4]));
    if h.finalize() != crc {
        return Ok(Err(format!("a record of {len} bytes whose checksum does not match")));
    }
    Ok(Ok(body))
}

/// Whether a whole record (right magic, length and CRC) starts at `off`, read in pieces.
fn whole_record_at(file: &File, off: u64, file_len: u64) -> io::Result<bool> {
    if file_len - off < REC_HEAD {
        return Ok(false);
    }
    let mut head = [0u8; REC_HEAD as usize];
    file.read_exact_at(&mut head, off)?;
    let len = u64::from_le_bytes(head[4..12].try_into().unwrap_or([0; 8]));
    if &head[..4] != REC_MAGIC || len > file_len - off - REC_HEAD {
        return Ok(false);
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&head[4..12]);
    let mut buf = vec![0u8; len.min(64 << 10) as usize];
    let mut at = off + REC_HEAD;
    let end = at + len;
    while at < end {
        let n = (end - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(h.finalize() == u32::from_le_bytes(head[12..16].try_into().unwrap_or([0; 4])))
}

/// The offset of the first whole record after `from`, if any.
fn next_whole_record(file: &File, from: u64, file_len: u64) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; (1usize << 20).min(file_len.saturating_sub(from) as usize)];
    let mut at = from;
    while at + REC_MAGIC.len() as u64 <= file_len {
        let n = (file_len - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        for i in memchr_all(&buf[..n]) {
            if whole_record_at(file, at + i as u64, file_len)? {
                return Ok(Some(at + i as u64));
            }
        }
        // The next window overlaps by three bytes: a magic across the boundary is seen.
        at += (n as u64).saturating_sub(REC_MAGIC.len() as u64 - 1).max(1);
    }
    Ok(None)
}

/// Offsets of the record magic in `buf`.
fn memchr_all(buf: &[u8]) -> impl Iterator<Item = usize> + '_ {
    buf.windows(REC_MAGIC.len()).enumerate().filter(|(_, w)| w == REC_MAGIC).map(|(i, _)| i)
}

/// Whether a SQLite database's first page (`page`) is that of a spool of an earlier kflame
/// version: no application id, and no table but the spool's. `Err` says what it is instead.
fn old_spool(page: &[u8]) -> Result<(), String> {
    let app = page.get(68..72).map_or(0, |b| u32::from_be_bytes(b.try_into().unwrap_or([0; 4])));
    if app != 0 {
        return Err(format!("a SQLite database with application id {app:#x}"));
    }
    if page.get(100).is_some_and(|&t| t != 0x0d) {
        return Err("a SQLite database whose schema takes more than a page".into());
    }
    let mut rest = page;
    while let Some(i) = rest.windows(7).position(|w| w == b"CREATE ") {
        let after = &rest[i + 7..];
        let known = [&b"TABLE clickhouse_spool"[..], b"TABLE sqlite_sequence"];
        if !known.iter().any(|k| after.starts_with(k)) {
            let what: String = String::from_utf8_lossy(&after[..after.len().min(40)])
                .chars()
                .take_while(|c| *c != '(' && !c.is_control())
                .collect();
            return Err(format!("a SQLite database with {what:?}"));
        }
        rest = after;
    }
    Ok(())
}

impl Spool {
    /// Opens (or creates) the spool at `path`.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Spool, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Other {
                store: store(path),
                detail: format!("cannot create its directory: {e}"),
            })?;
        }
        let lock = lock(path)?;
        let mut notes = Vec::new();
        let compact = beside(path, ".compact");
        if compact.exists() {
            // A compaction cut short before its rename: the file itself is whole.
            std::fs::remove_file(&compact)
                .map_err(|e| io_err(path, &format!("removing {}", compact.display()), &e))?;
        }
        move_old_spool(path, &mut notes)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_err(path, "opening", &e))?;
        let file_len = file.metadata().map_err(|e| io_err(path, "reading its size", &e))?.len();
        let mut head = [0u8; HEADER_LEN as usize];
        let n = read_up_to(&file, &mut head).map_err(|e| io_err(path, "reading its header", &e))?;
        let mut header = [0u8; HEADER_LEN as usize];
        header[..12].copy_from_slice(MAGIC);
        header[12..].copy_from_slice(&VERSION.to_le_bytes());
        if n < HEADER_LEN as usize && head[..n] == header[..n] {
            // New, or its creation cut short: nothing was in it.
            let e = |e: io::Error| io_err(path, "writing its header", &e);
            file.set_len(0).map_err(e)?;
            file.write_all_at(&header, 0).map_err(e)?;
            file.sync_all().map_err(e)?;
            sync_dir(path).map_err(e)?;
        } else if head[..12] != MAGIC[..] {
            let shown = String::from_utf8_lossy(&head[..n]).escape_debug().to_string();
            return Err(StoreError::NotADatabase {
                store: store(path),
                detail: format!(
                    "it starts with \"{shown}\", not \"kflame spool\": not a kflame spool (give the spool a file of its own)"
                ),
            });
        } else {
            let version = u32::from_le_bytes(head[12..16].try_into().unwrap_or([0; 4]));
            if version > VERSION {
                return Err(StoreError::FutureVersion {
                    store: store(path),
                    found: version,
                    supported: VERSION,
                });
            }
            if version < VERSION {
                return Err(StoreError::Corrupt {
                    store: store(path),
                    detail: format!(
                        "the spool's header names format version {version}, which no kflame wrote"
                    ),
                });
            }
        }
        let mut s = Spool {
            path: path.to_path_buf(),
            file,
            _lock: lock,
            end: HEADER_LEN,
            dirty: false,
            entries: VecDeque::new(),
            next_seq: 1,
            bytes: 0,
            notes,
            compact_after: COMPACT_AFTER,
            max_bytes,
        };
        s.scan(file_len.max(HEADER_LEN))?;
        s.reclaim()?;
        Ok(s)
    }

    /// Reads the records up to `file_len`; cuts off a damaged tail, refuses damage before valid
    /// records.
    fn scan(&mut self, file_len: u64) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |e: io::Error| io_err(&path, "reading", &e);
        let mut off = HEADER_LEN;
        while off < file_len {
            let wrong = match read_record(&self.file, off, file_len).map_err(e)? {
                Ok(body) => match decode(&body, off + REC_HEAD) {
                    Ok(r) => {
                        if let Err(w) = self.apply(r) {
                            return Err(StoreError::Corrupt {
                                store: store(&path),
                                detail: format!(
                                    "the spool's record at offset {off} has a right checksum but {w}; \
                                     move the file aside to start an empty spool"
                                ),
                            });
                        }
                        off += REC_HEAD + body.len() as u64;
                        continue;
                    }
                    Err(w) => {
                        return Err(StoreError::Corrupt {
                            store: store(&path),
                            detail: format!(
                                "the spool's record at offset {off} has a right checksum but {w}; \
                                 move the file aside to start an empty spool"
                            ),
                        });
                    }
                },
                Err(w) => w,
            };
            if let Some(next) = next_whole_record(&self.file, off + 1, file_len).map_err(e)? {
                return Err(StoreError::Corrupt {
                    store: store(&path),
                    detail: format!(
                        "the spool's record at offset {off} is damaged ({wrong}) and whole records follow it \
                         at offset {next}: not a write cut short by a crash; the batches in it would be lost: \
                         move the file aside to start an empty spool"
                    ),
                });
            }
            let cut = file_len - off;
            self.file.set_len(off).and_then(|()| self.file.sync_all()).map_err(|e| {
                io_err(&path, &format!("cutting off the damaged last {cut} bytes from offset {off}"), &e)
            })?;
            self.notes.push(format!(
                "{}: cut off the last {cut} bytes from offset {off}, a write cut short (a crash or a full \
                 disk: {wrong}); they held nothing the spool had accepted",
                path.display()
            ));
            break;
        }
        self.end = off;
        Ok(())
    }

    /// Takes a record read in: a push's batches come after those before (every push takes the
    /// next seqs), a sent batch leaves.
    fn apply(&mut self, r: Record) -> Result<(), String> {
        match r {
            Record::Push(entries) => {
                let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
                    return Err("a push of no batch".into());
                };
                if first.seq < self.next_seq || last.seq >= MAX_SEQ {
                    return Err(format!(
                        "batches {}..={} where the next was {}: out of order",
                        first.seq, last.seq, self.next_seq
                    ));
                }
                self.next_seq = last.seq + 1;
                for en in entries {
                    self.bytes += en.len;
                    self.entries.push_back(en);
                }
            }
            Record::Sent(seq) => {
                self.forget(seq);
            }
        }
        Ok(())
    }

    /// Drops batch `seq` from the index; whether it was there.
    fn forget(&mut self, seq: i64) -> bool {
        let i = if self.entries.front().is_some_and(|e| e.seq == seq) {
            0
        } else {
            match self.entries.binary_search_by_key(&seq, |e| e.seq) {
                Ok(i) => i,
                Err(_) => return false,
            }
        };
        if let Some(e) = self.entries.remove(i) {
            self.bytes = self.bytes.saturating_sub(e.len);
        }
        true
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of batches waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Batches waiting.
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when `more` bytes still fit.
    pub fn fits(&self, more: u64) -> bool {
        self.bytes.saturating_add(more) <= self.max_bytes
    }

    /// Bytes of the file (header, waiting batches, and sent ones not yet reclaimed).
    pub fn file_bytes(&self) -> u64 {
        self.end
    }

    /// What opening and reclaiming found worth saying (a damaged tail cut off, an old spool
    /// moved aside), once each.
    pub fn notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Adds batches of `Native` blocks, all or none, after those waiting.
    pub fn push(&mut self, batches: &[(&str, u64, &[u8])]) -> Result<(), StoreError> {
        let with: Vec<(&str, u64, &str, &[u8])> = batches.iter().map(|b| (b.0, b.1, "Native", b.2)).collect();
        self.push_formatted(&with)
    }

    /// Adds batches (table, rows, format, rows' bytes), all or none, after those waiting: one
    /// record, on disk when this returns.
    #[doc(hidden)]
    pub fn push_formatted(&mut self, batches: &[(&str, u64, &str, &[u8])]) -> Result<(), StoreError> {
        if batches.is_empty() {
            return Ok(());
        }
        if let Some((t, _, f, _)) =
            batches.iter().find(|b| b.0.len() > usize::from(u16::MAX) || b.2.len() > 255)
        {
            return Err(StoreError::Invalid {
                store: store(&self.path),
                detail: format!("a batch for table {t:?} in format {f:?}: names too long for the spool"),
            });
        }
        let first = self.next_seq;
        if first.saturating_add(batches.len() as i64) >= MAX_SEQ {
            return Err(StoreError::Other {
                store: store(&self.path),
                detail: format!("spool: its batches' numbers ran out at {first}: send it, or move it aside"),
            });
        }
        let mut head = vec![KIND_PUSH];
        head.extend_from_slice(&first.to_le_bytes());
        head.extend_from_slice(&(batches.len() as u32).to_le_bytes());
        let metas: Vec<Vec<u8>> = batches
            .iter()
            .map(|(table, rows, format, body)| {
                let mut m = Vec::with_capacity(batch_meta_len(table, format) as usize);
                m.extend_from_slice(&(table.len() as u16).to_le_bytes());
                m.extend_from_slice(table.as_bytes());
                m.extend_from_slice(&rows.to_le_bytes());
                m.push(format.len() as u8);
                m.extend_from_slice(format.as_bytes());
                m.extend_from_slice(&(body.len() as u64).to_le_bytes());
                m
            })
            .collect();
        let mut parts: Vec<&[u8]> = vec![&head];
        for (m, b) in metas.iter().zip(batches) {
            parts.push(m);
            parts.push(b.3);
        }
        let body_at = self.end + REC_HEAD;
        let mut entries = Vec::with_capacity(batches.len());
        let mut at = body_at + head.len() as u64;
        for (i, (m, (table, rows, format, body))) in metas.iter().zip(batches).enumerate() {
            at += m.len() as u64;
            entries.push(Entry {
                seq: first + i as i64,
                table: table.to_string(),
                rows: *rows,
                format: format.to_string(),
                at,
                len: body.len() as u64,
            });
            at += body.len() as u64;
        }
        self.append(&parts)?;
        let n = entries.len() as i64;
        for en in entries {
            self.bytes += en.len;
            self.entries.push_back(en);
        }
        self.next_seq = first + n;
        Ok(())
    }

    /// Appends one record of the concatenated `parts` and syncs it; on failure the file is cut
    /// back to where it was.
    fn append(&mut self, parts: &[&[u8]]) -> Result<(), StoreError> {
        let path = self.path.clone();
        if self.dirty {
            self.file.set_len(self.end).map_err(|e| io_err(&path, "cutting off a failed write", &e))?;
            self.dirty = false;
        }
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let mut h = crc32fast::Hasher::new();
        h.update(&len.to_le_bytes());
        for p in parts {
            h.update(p);
        }
        let mut head = Vec::with_capacity(REC_HEAD as usize);
        head.extend_from_slice(REC_MAGIC);
        head.extend_from_slice(&len.to_le_bytes());
        head.extend_from_slice(&h.finalize().to_le_bytes());
        let written = (|| {
            let mut at = self.end;
            for p in std::iter::once(&head[..]).chain(parts.iter().copied()) {
                self.file.write_all_at(p, at)?;
                at += p.len() as u64;
            }
            self.file.sync_data()?;
            Ok::<u64, io::Error>(at)
        })();
        match written {
            Ok(at) => {
                self.end = at;
                Ok(())
            }
            Err(e) => {
                // A failed write must not stay before the next one.
                self.dirty = self.file.set_len(self.end).is_err();
                Err(io_err(&path, "writing", &e))
            }
        }
    }

    /// The oldest batch.
    pub fn front(&self) -> Result<Option<Batch>, StoreError> {
        let Some(e) = self.entries.front() else { return Ok(None) };
        let mut body = vec![0u8; e.len as usize];
        self.file.read_exact_at(&mut body, e.at).map_err(|x| io_err(&self.path, "reading a batch", &x))?;
        Ok(Some(Batch { seq: e.seq, table: e.table.clone(), rows: e.rows, format: e.format.clone(), body }))
    }

    /// Removes a batch that was sent (on disk when this returns), then reclaims space when it
    /// is worth it.
    pub fn remove(&mut self, b: &Batch) -> Result<(), StoreError> {
        if !self.entries.iter().any(|e| e.seq == b.seq) {
            return Ok(());
        }
        let mut rec = vec![KIND_SENT];
        rec.extend_from_slice(&b.seq.to_le_bytes());
        self.append(&[&rec])?;
        self.forget(b.seq);
        if let Err(e) = self.reclaim() {
            // The batch is gone all the same; the space comes back at a later removal or open.
            self.notes.push(format!("{e}; the spool keeps the space of sent batches for now"));
        }
        Ok(())
    }

    /// Cuts the file back to its header when nothing waits; rewrites it with the waiting batches
    /// alone when sent ones take most of it.
    fn reclaim(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        if self.entries.is_empty() {
            if self.end > HEADER_LEN {
                let e = |e: io::Error| io_err(&path, "cutting back the file of sent batches", &e);
                self.file.set_len(HEADER_LEN).map_err(e)?;
                self.file.sync_all().map_err(e)?;
                self.end = HEADER_LEN;
                self.dirty = false;
            }
            return Ok(());
        }
        let live: u64 = self.entries.iter().map(Entry::record_len).sum();
        let dead = self.end - HEADER_LEN - live.min(self.end - HEADER_LEN);
        if dead <= live || dead < self.compact_after {
            return Ok(());
        }
        let tmp = beside(&path, ".compact");
        let e = |e: io::Error| io_err(&path, &format!("compacting into {}", tmp.display()), &e);
        let result = (|| {
            let out = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&tmp)?;
            let mut header = [0u8; HEADER_LEN as usize];
            header[..12].copy_from_slice(MAGIC);
            header[12..].copy_from_slice(&VERSION.to_le_bytes());
            out.write_all_at(&header, 0)?;
            let mut at = HEADER_LEN;
            let mut moved = Vec::with_capacity(self.entries.len());
            for en in &self.entries {
                let mut body = vec![0u8; en.len as usize];
                self.file.read_exact_at(&mut body, en.at)?;
                let mut rec = vec![KIND_PUSH];
                rec.extend_from_slice(&en.seq.to_le_bytes());
                rec.extend_from_slice(&1u32.to_le_bytes());
                rec.extend_from_slice(&(en.table.len() as u16).to_le_bytes());
                rec.extend_from_slice(en.table.as_bytes());
                rec.extend_from_slice(&en.rows.to_le_bytes());
                rec.push(en.format.len() as u8);
                rec.extend_from_slice(en.format.as_bytes());
                rec.extend_from_slice(&en.len.to_le_bytes());
                let len = (rec.len() + body.len()) as u64;
                let mut h = crc32fast::Hasher::new();
                h.update(&len.to_le_bytes());
                h.update(&rec);
                h.update(&body);
                let mut head = REC_MAGIC.to_vec();
                head.extend_from_slice(&len.to_le_bytes());
                head.extend_from_slice(&h.finalize().to_le_bytes());
                out.write_all_at(&head, at)?;
                out.write_all_at(&rec, at + REC_HEAD)?;
                let body_at = at + REC_HEAD + rec.len() as u64;
                out.write_all_at(&body, body_at)?;
                moved.push(body_at);
                at = body_at + en.len;
            }
            out.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            sync_dir(&path)?;
            Ok::<_, io::Error>((out, at, moved))
        })();
        match result {
            Ok((out, at, moved)) => {
                self.file = out;
                self.end = at;
                self.dirty = false;
                for (en, body_at) in self.entries.iter_mut().zip(moved) {
                    en.at = body_at;
                }
                Ok(())
            }
            Err(x) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e(x))
            }
        }
    }
}

/// Reads up to `buf.len()` bytes from the start of `file`; how many there were.
fn read_up_to(file: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Takes the spool's one writer's lock: an exclusive `flock` on `PATH-lock`, held as long as
/// the returned file is open (a writer killed with `kill -9` leaves no stale lock).
fn lock(path: &Path) -> Result<File, StoreError> {
    use std::io::{Seek, Write};
    let lock = beside(path, "-lock");
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .map_err(|e| io_err(path, &format!("opening its lock file {}", lock.display()), &e))?;
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            let mut text = String::new();
            let _ = f.read_to_string(&mut text);
            return Err(StoreError::Locked { store: store(path), lock, pid: text.trim().parse().ok() });
        }
        Err(e) => return Err(io_err(path, &format!("locking {}", lock.display()), &e.into())),
    }
    let _ = f.set_len(0).and_then(|()| f.rewind()).and_then(|()| writeln!(f, "{}", std::process::id()));
    Ok(f)
}

/// The place of an old spool moved aside: `PATH.sqlite-old`.
pub fn old_spool_path(path: &Path) -> PathBuf {
    beside(path, ".sqlite-old")
}

/// When `path` is a SQLite spool of an earlier version, moves it (and its `-wal`, `-shm`) to
/// [`old_spool_path`]; another SQLite database is refused. Notes an old spool waiting there.
fn move_old_spool(path: &Path, notes: &mut Vec<String>) -> Result<(), StoreError> {
    let old = old_spool_path(path);
    let mut head = vec![0u8; 16];
    let n = match File::open(path) {
        Ok(f) => read_up_to(&f, &mut head).map_err(|e| io_err(path, "reading its header", &e))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(io_err(path, "opening", &e)),
    };
    if n < 16 || head[..] != SQLITE_MAGIC[..] {
        if let Ok(m) = std::fs::metadata(&old) {
            notes.push(format!(
                "a spool of an earlier kflame version ({} bytes) waits unsent in {}: send it with that \
                 version (`kflame watch --spool {}`) or delete it",
                m.len(),
                old.display(),
                old.display()
            ));
        }
        return Ok(());
    }
    let f = File::open(path).map_err(|e| io_err(path, "opening", &e))?;
    let mut page = vec![0u8; 100];
    let n = read_up_to(&f, &mut page).map_err(|e| io_err(path, "reading", &e))?;
    let size = match u16::from_be_bytes([page[16], page[17]]) {
        1 => 65536,
        s => usize::from(s).max(512),
    };
    page.resize(size.max(n), 0);
    let n = read_up_to(&f, &mut page).map_err(|e| io_err(path, "reading", &e))?;
    page.truncate(n);
    if let Err(what) = old_spool(&page) {
        return Err(StoreError::NotADatabase {
            store: store(path),
            detail: format!("it is {what}: not a kflame spool (give the spool a file of its own)"),
        });
    }
    let bytes = f.metadata().map_or(0, |m| m.len());
    if old.exists() {
        return Err(StoreError::Other {
            store: store(path),
            detail: format!(
                "spool: it is a spool of an earlier kflame version (a SQLite file of {bytes} bytes), and {} \
                 already holds another one: send them with that version (`kflame watch --spool FILE`) or \
                 move them aside",
                old.display()
            ),
        });
    }
    let wal = std::fs::metadata(beside(path, "-wal")).map_or(0, |m| m.len());
    // The log first: a crash between the renames leaves the database at PATH, moved next time.
    for suffix in ["-wal", "-shm", ""] {
        let from = beside(path, suffix);
        if suffix.is_empty() || from.exists() {
            std::fs::rename(&from, beside(&old, suffix))
                .map_err(|e| io_err(path, &format!("moving {} aside", from.display()), &e))?;
        }
    }
    sync_dir(path).map_err(|e| io_err(path, "moving the old spool aside", &e))?;
    let log = if wal > 0 { format!(" and a write-ahead log of {wal} bytes") } else { String::new() };
    notes.push(format!(
        "{} was a spool of an earlier kflame version (a SQLite file of {bytes} bytes{log}), which this one \
         cannot read: moved it to {}, where its batches, if any, wait unsent; send them with that version \
         (`kflame watch --spool {}`) or delete it. New batches spool in {}",
        path.display(),
        old.display(),
        old.display(),
        path.display()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kflame-spool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn batches_come_back_in_order_and_survive_reopening() {
        let dir = dir("order");
        let path = dir.join("sub/spool.db");
        let mut s = Spool::open(&path, 100).unwrap();
        assert!(s.is_empty());
        s.push(&[("samples", 2, b"abcd"), ("stacks", 1, b"xy")]).unwrap();
        assert!(s.fits(94) && !s.fits(95));
        drop(s);
        let mut s = Spool::open(&path, 100).unwrap();
        assert_eq!((s.len(), s.bytes()), (2, 6));
        let b = s.front().unwrap().unwrap();
        assert_eq!(
            (b.table.as_str(), b.rows, &b.body[..], b.format.as_str()),
            ("samples", 2, &b"abcd"[..], "Native")
        );
        s.remove(&b).unwrap();
        assert_eq!(s.front().unwrap().unwrap().table, "stacks");
        assert_eq!((s.len(), s.bytes()), (1, 2));
        // Removing it again, or a batch that never was, changes nothing.
        s.remove(&b).unwrap();
        assert_eq!((s.len(), s.bytes()), (1, 2));
        // Batches pushed later come after, across reopening, with increasing seqs.
        s.push(&[("metrics", 3, b"m1")]).unwrap();
        drop(s);
        let mut s = Spool::open(&path, 100).unwrap();
        s.push(&[("events", 4, b"e1")]).unwrap();
        drop(s);
        let mut s = Spool::open(&path, 100).unwrap();
        let mut seen = Vec::new();
        let mut last = 0;
        while let Some(b) = s.front().unwrap() {
            assert!(b.seq > last, "{} after {last}", b.seq);
            last = b.seq;
            seen.push((b.table.clone(), b.rows, b.body.clone()));
            s.remove(&b).unwrap();
        }
        assert_eq!(
            seen,
            [
                ("stacks".into(), 1, b"xy".to_vec()),
                ("metrics".into(), 3, b"m1".to_vec()),
                ("events".into(), 4, b"e1".to_vec())
            ]
        );
        assert!(s.notes().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_format_of_a_batch_is_kept() {
        let dir = dir("format");
        let path = dir.join("spool.db");
        let mut s = Spool::open(&path, 100).unwrap();
        s.push_formatted(&[("metrics", 1, "RowBinary", b"\0")]).unwrap();
        s.push(&[("metrics", 1, b"z")]).unwrap();
        drop(s);
        let mut s = Spool::open(&path, 100).unwrap();
        let b = s.front().unwrap().unwrap();
        assert_eq!(b.format, "RowBinary");
        s.remove(&b).unwrap();
        assert_eq!(s.front().unwrap().unwrap().format, "Native");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_spool_refuses_more_by_its_bound() {
        let dir = dir("bound");
        let path = dir.join("spool.db");
        let mut s = Spool::open(&path, 10).unwrap();
        assert!(s.fits(10) && !s.fits(11));
        s.push(&[("samples", 1, b"123456")]).unwrap();
        assert!(s.fits(4) && !s.fits(5));
        assert_eq!(s.max_bytes, 10);
        drop(s);
        // The bound is the caller's, at every open; what waits counts against it.
        let s = Spool::open(&path, 8).unwrap();
        assert_eq!(s.bytes(), 6);
        assert!(s.fits(2) && !s.fits(3));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn space_comes_back_when_batches_are_sent() {
        let dir = dir("reclaim");
        let path = dir.join("spool.db");
        let size = || std::fs::metadata(&path).unwrap().len();
        let mut s = Spool::open(&path, 1 << 20).unwrap();
        let empty = size();
        assert_eq!(empty, HEADER_LEN);
        let body = vec![7u8; 1000];
        for _ in 0..10 {
            s.push(&[("samples", 1, &body), ("stacks", 1, &body)]).unwrap();
        }
        assert!(size() > 20_000);
        while let Some(b) = s.front().unwrap() {
            s.remove(&b).unwrap();
        }
        assert_eq!((size(), s.file_bytes()), (empty, empty), "all sent: back to the header");
        // While some wait, sent ones are compacted away once they are most of the file.
        s.compact_after = 0;
        for i in 0..10u8 {
            s.push(&[("samples", u64::from(i), &[i; 1000][..])]).unwrap();
        }
        for _ in 0..8 {
            let b = s.front().unwrap().unwrap();
            s.remove(&b).unwrap();
        }
        assert!(size() < 3 * 1100, "{} bytes for 2 batches of 1000", size());
        assert!(!beside(&path, ".compact").exists());
        drop(s);
        let mut s = Spool::open(&path, 1 << 20).unwrap();
        let rest: Vec<(u64, Vec<u8>)> = std::iter::from_fn(|| {
            let b = s.front().unwrap()?;
            s.remove(&b).unwrap();
            Some((b.rows, b.body))
        })
        .collect();
        assert_eq!(rest, [(8, vec![8u8; 1000]), (9, vec![9u8; 1000])]);
        assert_eq!(size(), empty);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The pushes of [`three_pushes`].
    const PUSHES: [&[(&str, u64, &[u8])]; 3] = [
        &[("samples", 1, b"first"), ("stacks", 1, b"first-stacks")],
        &[("metrics", 2, b"second")],
        &[("samples", 3, b"third"), ("buckets", 1, b"third-buckets")],
    ];

    /// A spool of three pushes; the offset where the last one starts.
    fn three_pushes(path: &Path) -> u64 {
        let mut s = Spool::open(path, 1 << 20).unwrap();
        let mut last = 0;
        for p in PUSHES {
            last = s.file_bytes();
            s.push(p).unwrap();
        }
        last
    }

    #[test]
    fn a_torn_last_push_is_cut_off_at_every_byte() {
        let dir = dir("torn");
        let path = dir.join("spool.db");
        let last = three_pushes(&path);
        let whole = std::fs::read(&path).unwrap();
        // What the first two pushes hold, and the third.
        let batches = (PUSHES[0].len() + PUSHES[1].len()) as u64;
        let bytes = PUSHES[..2].iter().flat_map(|p| p.iter()).map(|b| b.2.len() as u64).sum::<u64>();
        for cut in last..whole.len() as u64 {
            std::fs::write(&path, &whole[..cut as usize]).unwrap();
            let mut s = Spool::open(&path, 1 << 20).unwrap();
            assert_eq!((s.len(), s.bytes()), (batches, bytes), "cut at {cut}: the third push is gone");
            let notes = s.notes();
            if cut > last {
                assert!(notes.len() == 1 && notes[0].contains(&format!("from offset {last}")), "{notes:?}");
            } else {
                assert!(notes.is_empty(), "{notes:?}");
            }
            assert_eq!(std::fs::metadata(&path).unwrap().len(), last);
            // Pushes after the cut land where the torn one was, and read back.
            s.push(&[("metrics", 9, b"after")]).unwrap();
            drop(s);
            let s = Spool::open(&path, 1 << 20).unwrap();
            assert_eq!(s.len(), batches + 1);
            drop(s);
        }
        // A tail the disk never wrote (zeros after a crash that had grown the file).
        let mut zeros = whole[..last as usize].to_vec();
        zeros.resize(whole.len(), 0);
        std::fs::write(&path, &zeros).unwrap();
        let mut s = Spool::open(&path, 1 << 20).unwrap();
        assert_eq!(s.len(), batches);
        assert_eq!(s.notes().len(), 1);
        drop(s);
        // The last record whole but for its checksum (a block of it not written).
        let mut bad = whole.clone();
        *bad.last_mut().unwrap() ^= 0xff;
        std::fs::write(&path, &bad).unwrap();
        assert_eq!(Spool::open(&path, 1 << 20).unwrap().len(), batches);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn damage_before_whole_records_is_refused_naming_the_offset() {
        let dir = dir("corrupt");
        let path = dir.join("spool.db");
        three_pushes(&path);
        let whole = std::fs::read(&path).unwrap();
        // A byte of the first batch's rows flipped: its checksum no longer matches.
        let mut bad = whole.clone();
        bad[HEADER_LEN as usize + 40] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        let e = Spool::open(&path, 1 << 20).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(text.contains("spool.db") && text.contains(&format!("offset {HEADER_LEN}")), "{text}");
        assert!(text.contains("checksum") && text.contains("move the file aside"), "{text}");
        assert_eq!(std::fs::read(&path).unwrap(), bad, "left as it is");
        // A record's magic overwritten: the same.
        let mut bad = whole.clone();
        let second =
            whole.windows(4).enumerate().filter(|(_, w)| *w == REC_MAGIC).map(|(i, _)| i).nth(1).unwrap();
        bad[second..second + 4].copy_from_slice(b"XXXX");
        std::fs::write(&path, &bad).unwrap();
        let text = Spool::open(&path, 1 << 20).unwrap_err().to_string();
        assert!(text.contains(&format!("offset {second}")), "{text}");
        // A file of something else, and a future version.
        std::fs::write(&path, b"#!/bin/sh\necho hello\n").unwrap();
        let text = Spool::open(&path, 1 << 20).unwrap_err().to_string();
        assert!(text.contains("not a kflame spool") && text.contains("#!/bin/sh"), "{text}");
        let mut future = whole.clone();
        future[12] = 9;
        std::fs::write(&path, &future).unwrap();
        assert!(matches!(Spool::open(&path, 1 << 20), Err(StoreError::FutureVersion { found: 9, .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_writer_at_a_time() {
        let dir = dir("lock");
        let path = dir.join("spool.db");
        let s = Spool::open(&path, 100).unwrap();
        let e = Spool::open(&path, 100).unwrap_err();
        assert!(matches!(&e, StoreError::Locked { pid: Some(p), .. } if *p == std::process::id()), "{e:?}");
        drop(s);
        Spool::open(&path, 100).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_full_disk_is_disk_full() {
        let e = io::Error::from_raw_os_error(28);
        assert!(io_err(Path::new("/x/spool.db"), "writing", &e).is_disk_full());
        let e = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(!io_err(Path::new("/x/spool.db"), "writing", &e).is_disk_full());
    }

    /// A spool as an earlier kflame version made it (`clickhouse_spool` in a SQLite file), its
    /// connection returned open.
    fn sqlite_spool(path: &Path, with_fmt: bool) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(path).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        let fmt = if with_fmt { ", fmt TEXT NOT NULL DEFAULT 'Native'" } else { "" };
        c.execute_batch(&format!(
            "CREATE TABLE IF NOT EXISTS clickhouse_spool(seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, \
             rows INTEGER NOT NULL, body BLOB NOT NULL{fmt}); \
             INSERT INTO clickhouse_spool(tbl, rows, body) VALUES ('metrics', 1, x'00');"
        ))
        .unwrap();
        c
    }

    #[test]
    fn a_spool_of_an_earlier_version_is_moved_aside_and_said() {
        let dir = dir("old");
        std::fs::create_dir_all(&dir).unwrap();
        for with_fmt in [false, true] {
            let path = dir.join(format!("spool-{with_fmt}.db"));
            let c = sqlite_spool(&path, with_fmt);
            if with_fmt {
                drop(c);
            } else {
                // As a process killed while spooling leaves it: the batch in the write-ahead log.
                std::mem::forget(c);
                assert!(std::fs::metadata(beside(&path, "-wal")).unwrap().len() > 0);
            }
            let before = std::fs::read(&path).unwrap();
            let mut s = Spool::open(&path, 100).unwrap();
            assert!(s.is_empty());
            let old = old_spool_path(&path);
            let notes = s.notes();
            assert_eq!(notes.len(), 1, "{notes:?}");
            let n = &notes[0];
            assert!(n.contains(&path.display().to_string()) && n.contains(&old.display().to_string()), "{n}");
            assert!(
                n.contains(&format!("{} bytes", before.len())) && n.contains("earlier kflame version"),
                "{n}"
            );
            assert!(n.contains("--spool") && n.contains("delete it"), "{n}");
            assert_eq!(n.contains("write-ahead log"), !with_fmt, "{n}");
            assert_eq!(std::fs::read(&old).unwrap(), before, "moved as it was");
            // It still holds its batch, which the earlier version can send.
            let c = rusqlite::Connection::open(&old).unwrap();
            let rows: i64 = c.query_row("SELECT count(*) FROM clickhouse_spool", [], |r| r.get(0)).unwrap();
            assert_eq!(rows, 1);
            drop(c);
            s.push(&[("metrics", 1, b"z")]).unwrap();
            drop(s);
            // Later opens remind, and keep the new spool.
            let mut s = Spool::open(&path, 100).unwrap();
            assert_eq!(s.len(), 1);
            let notes = s.notes();
            assert!(notes.len() == 1 && notes[0].contains("waits unsent") && notes[0].contains("sqlite-old"));
            drop(s);
            std::fs::remove_file(&old).unwrap();
            assert!(Spool::open(&path, 100).unwrap().notes().is_empty());
        }
        // A second old spool while the first still waits aside: refused, nothing moved.
        let path = dir.join("twice.db");
        drop(sqlite_spool(&path, true));
        std::fs::write(old_spool_path(&path), b"earlier").unwrap();
        let e = Spool::open(&path, 100).unwrap_err().to_string();
        assert!(e.contains("twice.db.sqlite-old") && e.contains("already holds"), "{e}");
        assert!(std::fs::read(&path).unwrap().starts_with(SQLITE_MAGIC));
        // A kflame history database (or any other) is not taken for a spool.
        let other = dir.join("other.db");
        rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE buckets(x)").unwrap();
        assert!(Spool::open(&other, 100).unwrap_err().to_string().contains("not a kflame spool"));
        let history = dir.join("history.db");
        drop(kflame_store::Sqlite::open(&history, kflame_store::OpenMode::Write).unwrap());
        let e = Spool::open(&history, 100).unwrap_err().to_string();
        assert!(e.contains("not a kflame spool") && e.contains("application id"), "{e}");
        assert!(std::fs::read(&history).unwrap().starts_with(SQLITE_MAGIC));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
