//! Opening the history database of `kflame watch`.

use std::path::Path;

use anyhow::{Context, Result};
use kflame_store::{OpenMode, Sqlite};

/// Opens (creating it and its directory if missing) the database at `path`; metric values
/// are buffered into blocks of one bucket, written with each bucket.
pub(crate) fn open(path: &Path, bucket_ns: i64) -> Result<Sqlite> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the database directory {}", dir.display()))?;
    }
    let mut db = Sqlite::open(path, OpenMode::Write)?;
    db.set_metric_block(bucket_ns);
    Ok(db)
}
