//! The store the watcher writes through: `kflame_store`'s `Store` trait and row types,
//! re-exported. The watcher's tests write a real SQLite database (`kflame_store::Sqlite`).

pub use kflame_store::{
    Bucket, CaptureId, CaptureStart, Kind, LatencyKind, LatencyRow, Maintenance, Metric, Policy, Sample,
    Store, StoreError, StoredReport, TriggerFired, TriggerId, derived,
};
