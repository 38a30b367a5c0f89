//! The history store of kflame on one SQLite file: continuous profiles, metrics, triggers,
//! captures and kernel reports of one or more hosts, kept in one file and queried by time
//! range.
//!
//! [`Sqlite`] implements both traits of `kflame-store-api` ([`Store`] for the writer,
//! [`Query`] for readers) on one file (WAL: a reader queries while the writer writes). That
//! crate's types are re-exported here, so that a user of the SQLite store needs one crate.
//! Weights are stored exactly (see ARCHITECTURE.md, "The history store").
//!
//! The library never prints: every failure is a [`StoreError`] naming the file.

pub use kflame_store_api::*;

mod bucket;
mod chunks;
mod codec;
mod db;
mod events;
#[doc(hidden)]
pub mod fuzzing;
mod latency;
mod maintain;
mod rans;
mod sqlite;
mod summary;

pub use sqlite::{MAX_UNWRITTEN_VALUES, OpenMode, RESERVE_BYTES, SCHEMA_VERSION, Sqlite, lock_path};
pub use summary::SeriesCache;
