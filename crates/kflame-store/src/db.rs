//! What the modules of the SQLite backend share (`sqlite.rs`, `chunks.rs`, `maintain.rs`):
//! the format's limits, SQLite errors mapped onto the store's kinds, schema probes. It uses
//! none of them, so that none of them has to use another for these.

use std::path::Path;

use rusqlite::{Connection, ErrorCode};

use crate::StoreError;

/// The longest profile bucket or metric block accepted (queries look this far back).
pub(crate) const MAX_BUCKET_NS: i64 = 3_600_000_000_000;
/// Resolution of stored sample times: 1 ms (times are truncated to it).
pub(crate) const TIME_UNIT_NS: i64 = 1_000_000;

/// Damaged chunk data met while writing: carried through rusqlite's error so that the
/// store reports it as [`crate::StoreError::Corrupt`].
#[derive(Debug)]
pub(crate) struct CorruptChunk(pub(crate) String);

impl std::fmt::Display for CorruptChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CorruptChunk {}

/// A rusqlite error carrying [`CorruptChunk`].
pub(crate) fn corrupt(detail: String) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(CorruptChunk(detail)))
}

/// Maps a SQLite error onto the store's kinds.
pub(crate) fn map_err(path: &Path, e: rusqlite::Error) -> StoreError {
    let store = path.display().to_string();
    if let rusqlite::Error::ToSqlConversionFailure(inner) = &e
        && let Some(c) = inner.downcast_ref::<CorruptChunk>()
    {
        return StoreError::Corrupt { store, detail: c.0.clone() };
    }
    if let rusqlite::Error::SqliteFailure(f, msg) = &e {
        let detail = msg.clone().unwrap_or_else(|| f.to_string());
        return match f.code {
            ErrorCode::DiskFull => StoreError::DiskFull { store, detail },
            ErrorCode::DatabaseCorrupt => StoreError::Corrupt { store, detail },
            ErrorCode::NotADatabase => StoreError::NotADatabase { store, detail },
            _ => StoreError::Other { store, detail },
        };
    }
    StoreError::Other { store, detail: e.to_string() }
}

/// Whether the file has the rows of schema 4 (`metric_spans`).
pub(crate) fn has_spans(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'metric_spans'")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}
