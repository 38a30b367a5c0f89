//! Continuous profiling for kflame: system metrics from `/proc` every second, an always-on
//! CPU profile in time buckets, trigger rules that start a detailed capture of the moment a
//! threshold is crossed, and kernel reports from `/dev/kmsg`, all written through a
//! `kflame_store::Store`.
//!
//! The library never prints and installs no signal handler: the program running a watcher
//! stops it through a flag and decides what to print.

pub mod capture;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod kmsg;
pub mod metrics;
pub mod rules;
pub mod store;
pub mod watcher;

pub use watcher::{Control, Environment, Status, WatchError, Watcher};
pub mod check;
