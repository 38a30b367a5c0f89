//! Symbol tables read ahead on a second thread: the binaries named in the perf.data header
//! (those with samples) are loaded while the records are being read, so that the two cores
//! of a small machine share the work. Results are taken in any order; a table not yet
//! ready is waited for, one never scheduled is loaded on the spot.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};

use rustc_hash::{FxHashMap, FxHashSet};

use super::dso::{Missing, load_symbols};
use crate::symbols::ElfSymbols;

/// One loaded (or failed) table.
pub(crate) type Loaded = (String, Result<ElfSymbols, Missing>);

/// The receiving end, owned by the binaries registry.
pub(crate) struct Prefetch {
    rx: Receiver<Loaded>,
    pending: FxHashSet<String>,
    ready: FxHashMap<String, Result<ElfSymbols, Missing>>,
}

impl Prefetch {
    /// Schedules `jobs` (name, build-id); the caller runs [`work`] with the returned sender
    /// on another thread.
    pub(crate) fn new(names: impl IntoIterator<Item = String>) -> (Prefetch, Sender<Loaded>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let pending = names.into_iter().collect();
        (Prefetch { rx, pending, ready: FxHashMap::default() }, tx)
    }

    /// The table of `name` if it was scheduled (waiting for it if needed).
    pub(crate) fn take(&mut self, name: &str) -> Option<Result<ElfSymbols, Missing>> {
        if let Some(r) = self.ready.remove(name) {
            return Some(r);
        }
        if !self.pending.contains(name) {
            return None;
        }
        while let Ok((n, r)) = self.rx.recv() {
            self.pending.remove(&n);
            if n == name {
                return Some(r);
            }
            self.ready.insert(n, r);
        }
        self.pending.remove(name);
        None
    }
}

/// Loads every job and sends the results; stops early when the receiver is gone.
pub(crate) fn work(root: PathBuf, jobs: Vec<(String, Option<Vec<u8>>)>, tx: Sender<Loaded>) {
    for (name, build_id) in jobs {
        let r = load_symbols(&root, &name, build_id.as_deref());
        if tx.send((name, r)).is_err() {
            return;
        }
    }
}
