//! What perf tracks while reading: threads and their names, process address spaces, the
//! kernel map and BPF/ksymbol maps. Updated from COMM, FORK, MMAP, MMAP2 and KSYMBOL
//! records in time order, like perf's `machine`.

use rustc_hash::FxHashMap;

use super::dso::{DsoId, Dsos};
use crate::symbols::{AddressSpace, Mapping};

/// Whether an address was sampled in kernel or user context.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Kernel,
    User,
    /// Hypervisor or guest context: never resolved (perf has no maps for it).
    Other,
}

/// A thread: its process and current name.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    pub(crate) pid: i32,
    pub(crate) comm: String,
    /// Changes whenever the name does (for caches of names).
    pub(crate) version: u64,
}

/// One process's mappings; `generation` changes with every new mapping (unwinders cache
/// per generation).
#[derive(Clone, Debug, Default)]
pub(crate) struct Space {
    pub(crate) maps: AddressSpace<DsoId>,
    pub(crate) generation: u64,
}

/// Threads, address spaces and kernel layout.
#[derive(Default)]
pub(crate) struct Machine {
    threads: FxHashMap<i32, Thread>,
    spaces: FxHashMap<i32, Space>,
    /// Start of the kernel map (`[kernel.kallsyms]_text` mmap), if recorded.
    pub(crate) kernel_start: Option<u64>,
    /// End of the kernel map (start + recorded length; the whole space when unrecorded).
    pub(crate) kernel_end: u64,
    /// Address of `_text` when recording (the mmap's page offset): relocation reference.
    pub(crate) kernel_text: Option<u64>,
    /// BPF programs and other ksymbol ranges inside kernel space.
    pub(crate) ksyms: AddressSpace<DsoId>,
    /// Changes whenever the kernel-side layout (kernel map, modules, ksymbols) does.
    pub(crate) kernel_generation: u64,
    generation: u64,
}

impl Machine {
    /// The name perf shows for `tid`: its last COMM, `swapper` for the idle task, else
    /// `:TID`.
    pub(crate) fn comm(&self, tid: i32) -> std::borrow::Cow<'_, str> {
        match self.threads.get(&tid) {
            Some(t) => std::borrow::Cow::Borrowed(&t.comm),
            None if tid == 0 => "swapper".into(),
            None => format!(":{tid}").into(),
        }
    }

    pub(crate) fn set_comm(&mut self, pid: i32, tid: i32, name: &[u8]) {
        let comm = String::from_utf8_lossy(name).into_owned();
        self.generation += 1;
        self.threads.insert(tid, Thread { pid, comm, version: self.generation });
    }

    /// A number that changes whenever the name of `tid` changes (0: never named).
    pub(crate) fn comm_version(&self, tid: i32) -> u64 {
        self.threads.get(&tid).map_or(0, |t| t.version)
    }

    /// A new thread `tid` of process `pid`, forked from `ptid` of `ppid`: it inherits the
    /// parent's name and, when it is a new process, a copy of its mappings.
    pub(crate) fn fork(&mut self, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        let comm = self.comm(ptid).into_owned();
        self.generation += 1;
        self.threads.insert(tid, Thread { pid, comm, version: self.generation });
        if pid != ppid {
            let parent = self.spaces.get(&ppid).cloned().unwrap_or_default();
            self.generation += 1;
            self.spaces.insert(pid, Space { generation: self.generation, ..parent });
        }
    }

    /// A user mapping of `pid`.
    pub(crate) fn map(&mut self, pid: i32, start: u64, len: u64, pgoff: u64, dso: DsoId) {
        self.generation += 1;
        let g = self.generation;
        let space = self.spaces.entry(pid).or_default();
        space.maps.insert(Mapping { start, end: start.saturating_add(len), pgoff, object: dso });
        space.generation = g;
    }

    /// A kernel-space mapping (pid -1): the kernel itself or a module.
    pub(crate) fn map_kernel(&mut self, name: &[u8], start: u64, len: u64, pgoff: u64, dsos: &mut Dsos) {
        self.kernel_generation += 1;
        if name.starts_with(b"[kernel.kallsyms]") {
            self.kernel_start = Some(start);
            self.kernel_end = if len == 0 { u64::MAX } else { start.saturating_add(len) };
            if name.ends_with(b"_text") || name.ends_with(b"_stext") {
                self.kernel_text = Some(pgoff);
            }
        } else {
            let id = dsos.intern(&module_name(name), None);
            self.ksyms.insert(Mapping { start, end: start.saturating_add(len), pgoff: 0, object: id });
        }
    }

    /// A BPF program or other ksymbol range in kernel space.
    pub(crate) fn add_ksym(&mut self, m: Mapping<DsoId>) {
        self.kernel_generation += 1;
        self.ksyms.insert(m);
    }

    /// The generation of `pid`'s mappings (0: it has none): equal generations mean equal
    /// mappings.
    pub(crate) fn space_generation(&self, pid: i32) -> u64 {
        self.spaces.get(&pid).map_or(0, |s| s.generation)
    }

    pub(crate) fn space(&self, pid: i32) -> Option<&Space> {
        self.spaces.get(&pid)
    }

    /// The process of `tid`, when known from COMM/FORK records.
    pub(crate) fn pid_of(&self, tid: i32) -> Option<i32> {
        self.threads.get(&tid).map(|t| t.pid)
    }
}

/// perf names a module map `[name]` (from `/lib/modules/.../name.ko` or `[name]`).
fn module_name(path: &[u8]) -> String {
    let s = String::from_utf8_lossy(path);
    if s.starts_with('[') {
        return s.into_owned();
    }
    let base = s.rsplit('/').next().unwrap_or(&s);
    let stem = base.split('.').next().unwrap_or(base).replace('-', "_");
    format!("[{stem}]")
}

/// The name perf gives a user mapping: executable anonymous memory and `[heap]`/`[stack]`
/// are named after the JIT map file `/tmp/perf-PID.map`.
pub(crate) fn user_dso_name(path: &[u8], pid: i32, exec: bool) -> String {
    let anon =
        path.starts_with(b"//anon") || path.starts_with(b"/dev/zero") || path.starts_with(b"/anon_hugepage");
    let no_dso = path.starts_with(b"[stack") || path.starts_with(b"/SYSV") || path == b"[heap]";
    if exec && (anon || no_dso) {
        return format!("/tmp/perf-{pid}.map");
    }
    String::from_utf8_lossy(path).into_owned()
}
