//! kflame's history store on ClickHouse: the profiles, metrics, triggers, captures and
//! kernel reports of a fleet in one distributed database that fleets already run.
//!
//! [`Writer`] implements `kflame_store_api::Store` (what `kflame watch --store
//! clickhouse+http://...` writes through), [`Reader`] implements `kflame_store_api::Query` (what
//! `kflame query`, `serve` and `mcp` read through); [`schema`] makes the tables (`kflame store
//! init`). Every row has its `host`. The SQL is that of ClickHouse 18.16 and of current
//! releases alike (a test runs it on both).
//!
//! Nothing here prints; every failure is a `StoreError` naming the store's URL (without
//! password) or the spool file.

#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod location;
pub mod native;
pub mod reader;
pub mod rig;
pub mod rollup;
pub mod rowbinary;
pub mod schema;
pub mod spool;
pub mod sqllog;
mod tls;
pub mod writer;

pub use location::{Location, LocationError, is_clickhouse};
pub use reader::Reader;
pub use schema::InitOptions;
pub use writer::{Writer, WriterOptions, WriterStats};
