//! The spool: insert batches that ClickHouse could not take, kept in a SQLite file in the
//! order they were made and sent in that order when it answers again. Bounded in bytes: a
//! full spool refuses more (the watcher then holds its buckets, and past its own bound drops
//! the oldest, counted), never grows memory.

use std::path::{Path, PathBuf};

use kflame_store_api::StoreError;
use rusqlite::{Connection, OptionalExtension, params};

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

/// The spool file.
pub struct Spool {
    path: PathBuf,
    conn: Connection,
    bytes: u64,
    batches: u64,
    /// At most this many bytes of batches.
    pub max_bytes: u64,
}

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spool({}, {} batches, {} bytes)", self.path.display(), self.batches, self.bytes)
    }
}

fn err(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => {
            StoreError::DiskFull { store: path.display().to_string(), detail: e.to_string() }
        }
        Some(rusqlite::ErrorCode::NotADatabase) => {
            StoreError::NotADatabase { store: path.display().to_string(), detail: e.to_string() }
        }
        _ => StoreError::Other { store: path.display().to_string(), detail: format!("spool: {e}") },
    }
}

impl Spool {
    /// Opens (or creates) the spool at `path`.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Spool, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Other {
                store: path.display().to_string(),
                detail: format!("cannot create its directory: {e}"),
            })?;
        }
        let e = |x| err(path, x);
        let conn = Connection::open(path).map_err(e)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(e)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(e)?;
        let foreign: Option<String> = conn
            .query_row(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('clickhouse_spool', 'sqlite_sequence') LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(e)?;
        if let Some(t) = foreign {
            return Err(StoreError::NotADatabase {
                store: path.display().to_string(),
                detail: format!(
                    "it has a table {t:?}: not a kflame spool (give the spool a file of its own)"
                ),
            });
        }
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS clickhouse_spool(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, rows INTEGER NOT NULL, body BLOB NOT NULL,
                fmt TEXT NOT NULL DEFAULT 'Native')",
        )
        .map_err(e)?;
        // Spools of kflame versions that sent RowBinary have no format column: theirs is that.
        let has_fmt: i64 = conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info('clickhouse_spool') WHERE name = 'fmt'",
                [],
                |r| r.get(0),
            )
            .map_err(e)?;
        if has_fmt == 0 {
            conn.execute_batch(
                "ALTER TABLE clickhouse_spool ADD COLUMN fmt TEXT NOT NULL DEFAULT 'RowBinary'",
            )
            .map_err(e)?;
        }
        let (bytes, batches): (i64, i64) = conn
            .query_row("SELECT coalesce(sum(length(body)), 0), count(*) FROM clickhouse_spool", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(e)?;
        Ok(Spool { path: path.to_path_buf(), conn, bytes: bytes as u64, batches: batches as u64, max_bytes })
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
        self.batches
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// True when `more` bytes still fit.
    pub fn fits(&self, more: u64) -> bool {
        self.bytes.saturating_add(more) <= self.max_bytes
    }

    /// Adds batches of `Native` blocks, all or none, after those waiting.
    pub fn push(&mut self, batches: &[(&str, u64, &[u8])]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |x| err(&path, x);
        let tx = self.conn.transaction().map_err(e)?;
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO clickhouse_spool(tbl, rows, body, fmt) VALUES (?1, ?2, ?3, 'Native')",
                )
                .map_err(e)?;
            for (table, rows, body) in batches {
                st.execute(params![table, *rows as i64, body]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)?;
        self.bytes += batches.iter().map(|b| b.2.len() as u64).sum::<u64>();
        self.batches += batches.len() as u64;
        Ok(())
    }

    /// The oldest batch.
    pub fn front(&self) -> Result<Option<Batch>, StoreError> {
        self.conn
            .query_row(
                "SELECT seq, tbl, rows, body, fmt FROM clickhouse_spool ORDER BY seq LIMIT 1",
                [],
                |r| {
                    Ok(Batch {
                        seq: r.get(0)?,
                        table: r.get(1)?,
                        rows: r.get::<_, i64>(2)? as u64,
                        body: r.get(3)?,
                        format: r.get(4)?,
                    })
                },
            )
            .optional()
            .map_err(|x| err(&self.path, x))
    }

    /// Removes a batch that was sent.
    pub fn remove(&mut self, b: &Batch) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute("DELETE FROM clickhouse_spool WHERE seq = ?1", [b.seq])
            .map_err(|x| err(&self.path, x))?;
        if n > 0 {
            self.bytes = self.bytes.saturating_sub(b.body.len() as u64);
            self.batches = self.batches.saturating_sub(1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_come_back_in_order_and_survive_reopening() {
        let dir = std::env::temp_dir().join(format!("kflame-spool-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
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
        // A spool of a version that sent RowBinary keeps its batches, marked as such.
        let old = dir.join("old.db");
        Connection::open(&old)
            .unwrap()
            .execute_batch(
                "CREATE TABLE clickhouse_spool(seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, \
                 rows INTEGER NOT NULL, body BLOB NOT NULL); INSERT INTO clickhouse_spool(tbl, rows, body) \
                 VALUES ('metrics', 1, x'00');",
            )
            .unwrap();
        let mut s = Spool::open(&old, 100).unwrap();
        assert_eq!(s.front().unwrap().unwrap().format, "RowBinary");
        s.push(&[("metrics", 1, b"z")]).unwrap();
        let b = s.front().unwrap().unwrap();
        s.remove(&b).unwrap();
        assert_eq!(s.front().unwrap().unwrap().format, "Native");
        // A kflame history database (or any other) is not taken for a spool.
        let other = dir.join("other.db");
        Connection::open(&other).unwrap().execute_batch("CREATE TABLE buckets(x)").unwrap();
        assert!(Spool::open(&other, 100).unwrap_err().to_string().contains("not a kflame spool"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
