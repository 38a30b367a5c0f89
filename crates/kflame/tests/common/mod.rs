//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

pub mod ftrace;
pub mod mutate;
pub mod outliers;
pub mod syzkaller;

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// A fixture under `tests/data/`.
pub fn data(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(rel)
}

/// Reads a fixture under `tests/data/`.
pub fn read(rel: &str) -> Vec<u8> {
    let p = data(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// A cloneable in-memory writer (for an `EventLog`): every clone appends to one buffer.
#[derive(Clone, Default)]
pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
