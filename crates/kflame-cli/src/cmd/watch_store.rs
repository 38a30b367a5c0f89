//! Opening the history store of `kflame watch`: the SQLite file, or a ClickHouse store.

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

/// A ClickHouse writer for `kflame watch --store URL`, spooling in `spool` up to `budget`
/// bytes, with the host's labels.
pub(crate) struct ClickHouse(kflame_clickhouse::Writer, String);

impl std::fmt::Display for ClickHouse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

impl ClickHouse {
    pub(crate) fn into_store(self) -> Box<dyn kflame_store::Store> {
        Box::new(self.0)
    }
}

pub(crate) fn open_clickhouse(url: &str, spool: &Path, budget: u64, labels: &[String]) -> Result<ClickHouse> {
    use kflame_clickhouse::{Writer, WriterOptions};
    let loc = crate::cmd::history::location(url)?;
    for l in labels {
        let ok = l.split_once('=').is_some_and(|(k, _)| !k.is_empty()) && !l.contains(',');
        if !ok {
            anyhow::bail!("--label {l:?}: expected KEY=VALUE without commas");
        }
    }
    let name = format!("{loc} (spool {})", spool.display());
    // Every host is labelled with its kernel release (`kernel=6.1.0-13-amd64`), unless the
    // user named one: a fleet's profiles compare by kernel (`query --label kernel=...
    // --base-label kernel=...`).
    let mut labels = labels.to_vec();
    if !labels.iter().any(|l| l.starts_with("kernel=")) {
        match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
            Ok(r) if !r.trim().is_empty() && !r.contains(',') => labels.push(format!("kernel={}", r.trim())),
            _ => crate::output::message("kflame watch: the kernel release is unknown: no kernel= label"),
        }
    }
    let opts =
        WriterOptions { spool_max_bytes: budget, labels: labels.join(","), ..WriterOptions::default() };
    let w = Writer::open(&loc, spool, opts).with_context(|| format!("opening {loc}"))?;
    Ok(ClickHouse(w, name))
}
