//! Ages a `kflame watch` database as the watcher's maintenance would once its last hour is
//! closed: runs the store's maintenance (the folds of outlier rows, latency and metric rows,
//! the hourly compaction of profile buckets) with "now" `HOURS` (default 2) after the latest
//! data, no retention, then `VACUUM`s the file. What a day of watching keeps is such
//! maintained data, with only its last hour unfolded: `bench/watch-storage.sh` reports the
//! bytes before and after.
//!
//! ```sh
//! cargo run --release -p kflame-store --example age -- H.db [HOURS]
//! ```
#![allow(clippy::print_stdout)]

use kflame_store::{OpenMode, Policy, Query, Sqlite, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        return Err("usage: age H.db [HOURS]".into());
    };
    let hours: i64 = args.get(1).map_or(Ok(2), |h| h.parse())?;
    let (_, hi) = Sqlite::open(path, OpenMode::Read)?.time_bounds()?.ok_or("the history is empty")?;
    let now_ns = hi + hours * 3_600_000_000_000;
    let mut db = Sqlite::open(path, OpenMode::Write)?;
    let done = db.maintain(&Policy::new(now_ns))?;
    println!("maintained as of {hours} h after the last data: {done:?}");
    drop(db);
    let conn = rusqlite::Connection::open(path)?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")?;
    Ok(())
}
