//! Stack aggregation by frame ids: a sample's stack is a short list of numbers (root name,
//! then frames), so summing samples hashes a few words instead of a long string; the
//! folded text is built once per distinct stack at the end.

use rustc_hash::FxHashMap;

use super::machine::Machine;
use super::resolve::Resolver;
use crate::collapse::{Order, Output};
use crate::fold::{Stacks, Weight};

/// The root frame of a sample and whether it belongs to `java` (stackcollapse's Java rule).
#[derive(Copy, Clone)]
pub(crate) struct Root {
    pub(crate) id: u32,
    pub(crate) java: bool,
}

/// Distinct stacks and their summed weights.
pub(crate) struct StackTable {
    order: Order,
    roots: Vec<String>,
    root_ids: FxHashMap<String, u32>,
    by_thread: FxHashMap<(i32, i32), (u64, Root)>,
    counts: FxHashMap<Box<[u32]>, u64>,
    key: Vec<u32>,
    text: Vec<u8>,
}

impl StackTable {
    pub(crate) fn new(order: Order) -> StackTable {
        StackTable {
            order,
            roots: Vec::new(),
            root_ids: FxHashMap::default(),
            by_thread: FxHashMap::default(),
            counts: FxHashMap::default(),
            key: Vec::new(),
            text: Vec::new(),
        }
    }

    /// The root frame of thread `tid` of `pid`: `comm`, `comm-PID` or `comm-PID/TID`, spaces
    /// as `_`; recomputed only when the thread's name changes.
    pub(crate) fn root(&mut self, m: &Machine, pid: i32, tid: i32, with_pid: bool, with_tid: bool) -> Root {
        let version = m.comm_version(tid);
        if let Some(&(v, root)) = self.by_thread.get(&(pid, tid))
            && v == version
        {
            return root;
        }
        let comm = m.comm(tid).replace(' ', "_");
        let java = comm == "java";
        let name = if with_tid {
            format!("{comm}-{pid}/{tid}")
        } else if with_pid {
            format!("{comm}-{pid}")
        } else {
            comm
        };
        let id = match self.root_ids.get(&name) {
            Some(&id) => id,
            None => {
                let id = self.roots.len() as u32;
                self.roots.push(name.clone());
                self.root_ids.insert(name, id);
                id
            }
        };
        let root = Root { id, java };
        self.by_thread.insert((pid, tid), (version, root));
        root
    }

    /// Adds one sample: `frames` leaf first.
    pub(crate) fn add(&mut self, root: Root, frames: &[u32], weight: u64, r: &Resolver, out: &mut Output) {
        if self.order == Order::Time {
            let root = &self.roots[root.id as usize];
            build_text(&mut self.text, root, frames.iter().rev().copied(), r.texts());
            out.stacks.add(&self.text, Weight::from_u64(weight));
            return;
        }
        self.key.clear();
        self.key.push(root.id);
        self.key.extend(frames.iter().rev());
        match self.counts.get_mut(&self.key[..]) {
            Some(w) => *w += weight,
            None => {
                self.counts.insert(self.key.clone().into_boxed_slice(), weight);
            }
        }
    }

    /// Writes the summed stacks (sorted order) into `out`: their texts are built on as
    /// many threads as there are cores, each into its own aggregation, merged at the end.
    pub(crate) fn flush(&mut self, r: &Resolver, out: &mut Output) {
        let counts: Vec<(Box<[u32]>, u64)> = std::mem::take(&mut self.counts).into_iter().collect();
        let (roots, texts) = (&self.roots, r.texts());
        let parts = crate::par::map_chunks(&counts, |share| {
            let mut part = out.stacks.empty_like();
            if let Stacks::Counts(c) = &mut part {
                c.reserve(share.len());
            }
            let mut text = Vec::new();
            for (key, weight) in share {
                build_text(&mut text, &roots[key[0] as usize], key[1..].iter().copied(), texts);
                part.add(&text, Weight::from_u64(*weight));
            }
            part
        });
        for part in parts {
            out.stacks.append(part);
        }
        // Freeing 100 thousand small keys takes tens of milliseconds: not on this thread.
        let _ = std::thread::Builder::new().name("kflame-free".into()).spawn(move || drop(counts));
    }
}

/// `root;frame;...` from frame ids (frames with an empty text are skipped).
fn build_text(text: &mut Vec<u8>, root: &str, frames: impl Iterator<Item = u32>, texts: &[Box<[u8]>]) {
    text.clear();
    text.extend_from_slice(root.as_bytes());
    for f in frames {
        let t = &texts[f as usize];
        if !t.is_empty() {
            text.push(b';');
            text.extend_from_slice(t);
        }
    }
}
