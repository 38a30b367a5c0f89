//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

pub mod ftrace;
pub mod mutate;

use std::path::PathBuf;

/// A fixture under `tests/data/`.
pub fn data(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(rel)
}

/// Reads a fixture under `tests/data/`.
pub fn read(rel: &str) -> Vec<u8> {
    let p = data(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}
