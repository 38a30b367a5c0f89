//! Symbol tables read on a second thread, so that the two cores of a small machine share
//! the work: the binaries named in the perf.data header (those with samples) are scheduled
//! first, then each binary when a sample first lands in it (sorted output: the reader names
//! such frames after the last record instead of waiting, see `Resolver::name_pending`), or
//! every executable file mapping as its MMAP record is read (time-ordered output and pairing,
//! which need names at once). Results are taken in any order; a table not yet ready is
//! waited for, one never scheduled is loaded on the spot.
//!
//! The worker is a detached thread owning all it uses: when the reading ends, dropping the
//! [`Prefetch`] closes both channels and the worker stops after its current table instead
//! of making the caller wait for tables nobody needs.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Mutex, PoisonError};

use rustc_hash::{FxHashMap, FxHashSet};

use super::binary::{Missing, load_symbols};
use crate::symbols::ElfSymbols;

/// One loaded (or failed) table.
pub(crate) type Loaded = (String, Result<ElfSymbols, Missing>);

/// A table to load: the binary's name and its recorded build-id.
type Job = (String, Option<Vec<u8>>);

/// The scheduling and receiving end, owned by the binaries registry.
pub(crate) struct Prefetch {
    jobs: Sender<Job>,
    /// Only used through `&mut self`; the mutex makes the registry shareable by reference
    /// across the threads that name frames at the end (a bare receiver is not `Sync`).
    rx: Mutex<Receiver<Loaded>>,
    pending: FxHashSet<String>,
    ready: FxHashMap<String, Result<ElfSymbols, Missing>>,
}

impl Prefetch {
    /// Starts the worker, looking files up under `root`.
    pub(crate) fn start(root: PathBuf) -> Prefetch {
        let (jobs, job_rx) = std::sync::mpsc::channel();
        let (tx, rx) = std::sync::mpsc::channel();
        // Without a thread (spawn refused), every table is loaded on the spot instead.
        let _ =
            std::thread::Builder::new().name("kflame-symbols".into()).spawn(move || work(root, job_rx, tx));
        Prefetch { jobs, rx: Mutex::new(rx), pending: FxHashSet::default(), ready: FxHashMap::default() }
    }

    /// Asks for the table of `name` (once per name).
    pub(crate) fn schedule(&mut self, name: &str, build_id: Option<&[u8]>) {
        if self.pending.contains(name) || self.ready.contains_key(name) {
            return;
        }
        if self.jobs.send((name.to_string(), build_id.map(<[u8]>::to_vec))).is_ok() {
            self.pending.insert(name.to_string());
        }
    }

    /// Whether [`take`](Self::take) would return at once for `name`: its table is read, or
    /// it was never scheduled (or the worker is gone), so it is loaded on the spot.
    pub(crate) fn is_ready(&mut self, name: &str) -> bool {
        loop {
            match self.receiver().try_recv() {
                Ok((n, r)) => {
                    self.pending.remove(&n);
                    self.ready.insert(n, r);
                }
                Err(TryRecvError::Empty) => return !self.pending.contains(name),
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    fn receiver(&mut self) -> &Receiver<Loaded> {
        self.rx.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The table of `name` if it was scheduled (waiting for it if needed).
    pub(crate) fn take(&mut self, name: &str) -> Option<Result<ElfSymbols, Missing>> {
        if let Some(r) = self.ready.remove(name) {
            return Some(r);
        }
        if !self.pending.contains(name) {
            return None;
        }
        while let Ok((n, r)) = self.receiver().recv() {
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

#[cfg(test)]
impl Prefetch {
    /// A prefetch whose tables for `names` arrive only when the test sends them.
    pub(crate) fn by_hand(names: &[&str]) -> (Prefetch, Sender<Loaded>) {
        let (jobs, _) = std::sync::mpsc::channel();
        let (tx, rx) = std::sync::mpsc::channel();
        let pending = names.iter().map(|n| n.to_string()).collect();
        (Prefetch { jobs, rx: Mutex::new(rx), pending, ready: FxHashMap::default() }, tx)
    }
}

/// Loads every job and sends the results; stops when either end is gone.
fn work(root: PathBuf, jobs: Receiver<Job>, tx: Sender<Loaded>) {
    for (name, build_id) in jobs {
        let r = load_symbols(&root, &name, build_id.as_deref());
        if tx.send((name, r)).is_err() {
            return;
        }
    }
}
