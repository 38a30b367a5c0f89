//! Read-only connections to the history database, reused between requests; or a remote
//! store (ClickHouse) that answers every request itself.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use kflame_store::{OpenMode, Query, SeriesCache, SeriesQuery, Sqlite, StoreError};

use crate::api::ApiError;

/// At most this many idle connections are kept.
const POOL: usize = 8;

/// Which file a connection reads: (device, inode). A file replaced under the same name
/// (restored from a backup, or rotted) is a new file: connections to the old one are dropped.
pub(crate) type FileId = (u64, u64);

/// A store read through `kflame_store::Query` alone (a ClickHouse reader): shared by every
/// request, safe to call from many threads.
pub(crate) type Remote = Arc<dyn Query + Send + Sync>;

/// The database and its idle connections.
pub(crate) struct Db {
    path: PathBuf,
    idle: Mutex<Vec<(Sqlite, FileId)>>,
    /// Summaries of metric rows, shared by every connection (charts of wide ranges).
    series_cache: Arc<SeriesCache>,
    /// A remote store instead of the file (`path` is then its name, for messages).
    remote: Option<Remote>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Db({}{})", self.path.display(), if self.remote.is_some() { ", remote" } else { "" })
    }
}

impl Db {
    /// Opens one connection now, so that a missing or foreign file fails at start.
    pub(crate) fn open(path: PathBuf) -> Result<Db, StoreError> {
        let mut db = Db {
            path,
            idle: Mutex::new(Vec::new()),
            series_cache: Arc::new(SeriesCache::new()),
            remote: None,
        };
        let first = db.connect()?;
        let id = std::fs::metadata(&db.path).map(|m| (m.dev(), m.ino())).unwrap_or_default();
        db.idle = Mutex::new(vec![(first, id)]);
        Ok(db)
    }

    /// A remote store, named `name` in messages.
    pub(crate) fn remote(store: Remote, name: String) -> Db {
        Db {
            path: PathBuf::from(name),
            idle: Mutex::new(Vec::new()),
            series_cache: Arc::new(SeriesCache::new()),
            remote: Some(store),
        }
    }

    /// A new read-only connection, sharing the series cache.
    fn connect(&self) -> Result<Sqlite, StoreError> {
        let mut c = Sqlite::open(&self.path, OpenMode::Read)?;
        c.set_series_cache(self.series_cache.clone());
        Ok(c)
    }

    /// Summarizes the metric rows of the last day of history (what the page's first charts
    /// ask), on a thread of its own: the first page then reads summaries, not every value.
    /// Errors are left to the requests that meet them.
    pub(crate) fn warm(self: &Arc<Self>) {
        if self.remote.is_some() {
            return;
        }
        let db = self.clone();
        let _ = std::thread::Builder::new().name("kflame-warm".into()).spawn(move || {
            let _ = db.run(|conn| {
                let Some((first, newest)) = conn.time_bounds().map_err(ApiError::store)? else {
                    return Ok(());
                };
                let names = conn.metric_names(None).map_err(ApiError::store)?;
                let mut names: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
                names.dedup();
                let q = SeriesQuery {
                    name: "",
                    label: None,
                    host: None,
                    from_ns: first.max(newest - 86_400_000_000_000),
                    to_ns: newest + 1,
                    points: Some(1000),
                };
                conn.series_many(&names, &q).map_err(ApiError::store)?;
                Ok(())
            });
        });
    }

    /// The file's (device, inode) now, `None` when it is gone or the store is remote (its
    /// answers are not cached: another host may write into any range).
    pub(crate) fn file_id(&self) -> Option<FileId> {
        if self.remote.is_some() {
            return None;
        }
        std::fs::metadata(&self.path).ok().map(|m| (m.dev(), m.ino()))
    }

    /// Something that changes whenever a writer commits: the sizes and modification times
    /// of the file and its write-ahead log (the live stream sends it, so that the page
    /// reloads data written inside the range it shows, not only when the range moves).
    pub(crate) fn version(&self) -> String {
        if let Some(r) = &self.remote {
            return match r.time_bounds() {
                Ok(Some((a, b))) => format!("{a}.{b}"),
                Ok(None) => "empty".into(),
                Err(e) => format!("error {e}"),
            };
        }
        let stat = |p: &std::path::Path| {
            std::fs::metadata(p).map_or((0, 0), |m| (m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))
        };
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let (a, b) = (stat(&self.path), stat(std::path::Path::new(&wal)));
        format!("{}.{}.{}.{}", a.0, a.1, b.0, b.1)
    }

    /// Runs `f` on a connection, on a blocking thread. A file that is gone is a 503 (an open
    /// connection would go on reading the deleted file); store errors become 5xx.
    pub(crate) async fn with<T: Send + 'static>(
        self: &std::sync::Arc<Self>,
        f: impl FnOnce(&dyn Query) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.run(f))
            .await
            .map_err(|e| ApiError::internal(format!("the query failed: {e}")))?
    }

    fn run<T>(&self, f: impl FnOnce(&dyn Query) -> Result<T, ApiError>) -> Result<T, ApiError> {
        if let Some(r) = &self.remote {
            return f(r.as_ref());
        }
        let id = match std::fs::metadata(&self.path) {
            Ok(m) => (m.dev(), m.ino()),
            Err(e) => {
                return Err(ApiError::unavailable(format!(
                    "{}: the history database is gone ({e})",
                    self.path.display()
                )));
            }
        };
        let conn = self.idle.lock().ok().and_then(|mut v| {
            v.retain(|(_, file)| *file == id);
            v.pop()
        });
        let conn = match conn {
            Some((c, _)) => c,
            None => self.connect().map_err(ApiError::store)?,
        };
        let result = f(&conn);
        // A connection that failed may be in a bad state: drop it.
        if result.is_ok()
            && let Ok(mut idle) = self.idle.lock()
            && idle.len() < POOL
        {
            idle.push((conn, id));
        }
        result
    }
}
