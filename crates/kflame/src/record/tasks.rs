//! What is known about tasks while recording: names (comm), executable mappings, which
//! processes are being profiled. Fed by `COMM`/`FORK`/`EXIT`/`MMAP2` records, completed from
//! `/proc` the first time a task is seen (tasks that existed before recording started).
//!
//! A process's mappings are versioned by a *generation* that changes on `execve` and on exit
//! (pid reuse), so samples taken before an exec are symbolized with the old image.
//!
//! For recordings that run for days, what exited is forgotten ([`Tasks::prune`], after each
//! window): the name of a thread and the mappings of a process's past generations, once a
//! whole window has been named after their `EXIT` record (so every sample taken before the
//! exit, and every event still open at it, has been symbolized). Only the generation
//! number of each pid seen is kept (bounded by the pid space), so that a reused pid never
//! meets the names of its predecessor. Tasks whose exit was lost are bounded by
//! [`Tasks::LIMIT`].

use rustc_hash::{FxHashMap, FxHashSet};

use super::parse::Record;
use super::sym::Mapping;
use crate::symbols::{AddressSpace, parse_proc_maps_line};

/// Mappings of one process generation (a newer mapping replaces what it overlaps).
#[derive(Clone, Debug, Default)]
pub(crate) struct ProcMaps {
    entries: AddressSpace<Vec<u8>>,
    loaded: bool,
    /// Changes with every mapping added.
    version: u32,
}

impl ProcMaps {
    /// Mappings as given (for tests, fixtures and fuzzing).
    pub(crate) fn of(maps: impl IntoIterator<Item = Mapping>) -> ProcMaps {
        let mut p = ProcMaps { loaded: true, ..ProcMaps::default() };
        maps.into_iter().for_each(|m| p.insert(m));
        p
    }

    /// The mapping containing `addr`.
    pub(crate) fn find(&self, addr: u64) -> Option<&Mapping> {
        self.entries.find(addr)
    }

    /// Every mapping, by address.
    pub(crate) fn mappings(&self) -> &[Mapping] {
        self.entries.mappings()
    }

    /// A number that changes whenever a mapping is added.
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    fn insert(&mut self, m: Mapping) {
        self.entries.insert(m);
        self.version = self.version.wrapping_add(1);
    }
}

/// The pid or tid the kernel writes for a task it can no longer name: -1 as a `u32`.
pub(crate) const UNKNOWN_TASK: u32 = u32::MAX;

/// Task bookkeeping for one recording.
#[derive(Default)]
pub(crate) struct Tasks {
    comms: FxHashMap<u32, Box<[u8]>>,
    generations: FxHashMap<u32, u32>,
    maps: FxHashMap<(u32, u32), ProcMaps>,
    /// Processes of interest (`None`: all). Children of these join on `FORK`.
    filter: Option<FxHashSet<u32>>,
    /// Threads of interest (`-t`), when only these threads of those processes are wanted:
    /// neither their new threads nor their children join.
    threads: Option<FxHashSet<u32>>,
    /// Never profiled: the recorder itself.
    own_pid: u32,
    /// Threads that exited since the last prune, and those of the window before it
    /// (forgotten at the next prune) unless the tid was named again since.
    exited: FxHashSet<u32>,
    exited_before: FxHashSet<u32>,
    /// Processes that exited (pid, their generation after the exit), likewise.
    ended: Vec<(u32, u32)>,
    ended_before: Vec<(u32, u32)>,
    /// Threads and process generations forgotten so far, and times the bound was hit.
    pub(crate) pruned_threads: u64,
    pub(crate) pruned_maps: u64,
    pub(crate) overflows: u64,
}

impl Tasks {
    /// Bookkeeping for all processes (`targets` empty) or the given ones and their children.
    pub(crate) fn new(targets: Option<&[u32]>) -> Tasks {
        Tasks {
            filter: targets.map(|t| t.iter().copied().collect()),
            own_pid: std::process::id(),
            ..Tasks::default()
        }
    }

    /// Adds a process of interest (a command just started).
    pub(crate) fn add_target(&mut self, pid: u32) {
        self.filter.get_or_insert_with(FxHashSet::default).insert(pid);
    }

    /// Only these threads (of the target processes) are wanted.
    pub(crate) fn only_threads(&mut self, tids: &[u32]) {
        self.threads = Some(tids.iter().copied().collect());
    }

    /// True when samples of thread `tid` of process `pid` are wanted.
    pub(crate) fn wanted(&self, pid: u32, tid: u32) -> bool {
        self.process_wanted(pid) && self.threads.as_ref().is_none_or(|t| t.contains(&tid))
    }

    /// True when process `pid` is recorded (all its threads, or some).
    fn process_wanted(&self, pid: u32) -> bool {
        pid != self.own_pid && self.filter.as_ref().is_none_or(|f| f.contains(&pid))
    }

    /// Applies a side-band record.
    pub(crate) fn apply(&mut self, r: &Record) {
        match r {
            Record::Comm { pid, tid, comm, exec, .. } => {
                self.named(*tid);
                self.comms.insert(*tid, comm.clone().into());
                if *exec {
                    let g = self.bump(*pid);
                    self.maps.insert(
                        (*pid, g),
                        ProcMaps { entries: AddressSpace::new(), loaded: true, version: 0 },
                    );
                }
            }
            Record::Fork { pid, ppid, tid, ptid, .. } => self.fork(*pid, *ppid, *tid, *ptid),
            Record::Exit { pid, tid, .. } => {
                if pid == tid {
                    let g = self.bump(*pid);
                    self.ended.push((*pid, g));
                }
                self.exited.insert(*tid);
            }
            Record::Mmap { pid, start, len, pgoff, path, .. } => {
                let g = self.generation(*pid);
                let m = Mapping {
                    start: *start,
                    end: start.saturating_add(*len),
                    pgoff: *pgoff,
                    object: path.clone(),
                };
                self.maps.entry((*pid, g)).or_default().insert(m);
            }
            _ => {}
        }
    }

    fn fork(&mut self, pid: u32, ppid: u32, tid: u32, ptid: u32) {
        // The parent is most likely still alive: name it now if it was never seen.
        let c = self.comm(ppid, ptid);
        self.named(tid);
        self.comms.insert(tid, c);
        if pid != ppid {
            let g = self.bump(pid);
            let parent = self.maps_of(ppid).clone();
            self.maps.insert((pid, g), parent);
            if let Some(f) = &mut self.filter
                && f.contains(&ppid)
            {
                f.insert(pid);
            }
        }
    }

    /// Tasks kept at most, names and process generations alike (exits lost with the
    /// records of a full ring buffer would otherwise be kept forever).
    pub(crate) const LIMIT: usize = 1 << 17;

    /// Forgets the tasks that exited before the previous prune (a whole window ago): their
    /// names, the mappings of their process's past generations, and their membership of the
    /// target set. Returns the processes whose generations below a number were forgotten,
    /// for the caches keyed by them. Called after every window is named.
    pub(crate) fn prune(&mut self) -> Vec<(u32, u32)> {
        let threads = std::mem::replace(&mut self.exited_before, std::mem::take(&mut self.exited));
        for tid in threads {
            if self.comms.remove(&tid).is_some() {
                self.pruned_threads += 1;
            }
        }
        let ended = std::mem::replace(&mut self.ended_before, std::mem::take(&mut self.ended));
        let mut dead: FxHashMap<u32, u32> = FxHashMap::default();
        for (pid, generation) in ended {
            // The generations before the exit; a process that reused the pid since has
            // later ones.
            dead.insert(pid, generation);
            if self.generation(pid) == generation
                && let Some(f) = &mut self.filter
                && self.threads.is_none()
            {
                f.remove(&pid); // not reused since: a new process of that pid is not a child
            }
        }
        if !dead.is_empty() {
            let before = self.maps.len();
            self.maps.retain(|(pid, g), _| dead.get(pid).is_none_or(|current| g >= current));
            self.pruned_maps += (before - self.maps.len()) as u64;
        }
        if self.comms.len() > Self::LIMIT || self.maps.len() > Self::LIMIT {
            // Exits were lost: start over (names and maps are read again from /proc).
            self.overflows += 1;
            self.comms.clear();
            let generations = &self.generations;
            self.maps.retain(|(pid, g), _| generations.get(pid).copied().unwrap_or(0) == *g);
            if self.maps.len() > Self::LIMIT {
                self.maps.clear();
            }
        }
        dead.into_iter().collect()
    }

    /// A task was named by a record: a new task with the tid of one that exited.
    fn named(&mut self, tid: u32) {
        if !self.exited.is_empty() || !self.exited_before.is_empty() {
            self.exited.remove(&tid);
            self.exited_before.remove(&tid);
        }
    }

    /// Names and process generations kept.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        (self.comms.len(), self.maps.len())
    }

    /// The current generation of `pid`.
    pub(crate) fn generation(&self, pid: u32) -> u32 {
        self.generations.get(&pid).copied().unwrap_or(0)
    }

    /// The generation of `pid` whose mappings name the addresses of the window about to be
    /// named (its waits summed elsewhere, without times): the current one, or the one before
    /// the exit of a process that exited since.
    pub(crate) fn generation_alive(&self, pid: u32) -> u32 {
        let g = self.generation(pid);
        let exited = self.ended.iter().chain(&self.ended_before).any(|&(p, e)| p == pid && e == g);
        if exited { g.saturating_sub(1) } else { g }
    }

    fn bump(&mut self, pid: u32) -> u32 {
        let g = self.generations.entry(pid).or_insert(0);
        *g += 1;
        *g
    }

    /// Reads the names of every existing task and the mappings of every process of
    /// interest (perf's "synthesized" events), so that tasks which exit before their first
    /// sample is interpreted keep their names and symbols.
    pub(crate) fn snapshot(&mut self) {
        for pid in numeric_dirs("/proc") {
            for tid in numeric_dirs(&format!("/proc/{pid}/task")) {
                self.comm(pid, tid);
            }
            if self.process_wanted(pid) {
                self.maps_of(pid);
            }
        }
    }

    /// The name of task `tid` of process `pid` (read from `/proc` on first sight). A task
    /// without a name is `:TID`, as perf names it; the kernel reports the tid of a task that
    /// already left its pid behind (samples in `do_task_dead`) as -1, so perf's `:-1`.
    pub(crate) fn comm(&mut self, pid: u32, tid: u32) -> Box<[u8]> {
        if let Some(c) = self.comms.get(&tid) {
            return c.clone();
        }
        let c: Box<[u8]> = if tid == 0 {
            (*b"swapper").into()
        } else if tid == UNKNOWN_TASK {
            (*b":-1").into()
        } else {
            match std::fs::read(format!("/proc/{pid}/task/{tid}/comm")) {
                Ok(mut v) => {
                    v.truncate(v.trim_ascii_end().len());
                    v.into()
                }
                Err(_) => format!(":{tid}").into_bytes().into(),
            }
        };
        self.comms.insert(tid, c.clone());
        c
    }

    /// The current mappings of `pid`, read from `/proc/PID/maps` the first time.
    pub(crate) fn maps_of(&mut self, pid: u32) -> &ProcMaps {
        let key = (pid, self.generation(pid));
        let m = self.maps.entry(key).or_default();
        if !m.loaded {
            m.loaded = true;
            if pid != 0 {
                let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
                for map in text.lines().filter_map(parse_proc_maps_line) {
                    m.insert(map);
                }
            }
        }
        m
    }

    /// The mappings of a past or current generation.
    pub(crate) fn maps_at(&self, pid: u32, generation: u32) -> Option<&ProcMaps> {
        self.maps.get(&(pid, generation))
    }
}

/// The numeric entries of a `/proc` directory (pids or tids).
pub(crate) fn numeric_dirs(path: &str) -> impl Iterator<Item = u32> {
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_of_targets_are_followed_and_exec_starts_new_maps() {
        let mut t = Tasks::new(Some(&[100]));
        t.comms.insert(100, (*b"sh").into());
        t.maps.insert((100, 0), ProcMaps { entries: AddressSpace::new(), loaded: true, version: 0 });
        t.apply(&Record::Mmap {
            time: 1,
            pid: 100,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0,
            path: b"/bin/sh".to_vec(),
        });
        t.apply(&Record::Fork { time: 2, pid: 101, ppid: 100, tid: 101, ptid: 100 });
        assert!(t.wanted(101, 101) && t.wanted(101, 102) && !t.wanted(5, 5));
        assert_eq!(&*t.comm(101, 101), b"sh");
        assert_eq!(t.maps_of(101).find(0x1800).unwrap().object, b"/bin/sh");
        t.apply(&Record::Comm { time: 3, pid: 101, tid: 101, comm: b"burn".to_vec(), exec: true });
        assert!(t.maps_of(101).find(0x1800).is_none());
        assert_eq!(t.maps_at(101, 1).unwrap().find(0x1800).unwrap().object, b"/bin/sh");
        assert_eq!(&*t.comm(101, 101), b"burn");
    }

    /// Exited tasks are forgotten one window after their exit (their samples are named by
    /// then), past generations only: a process that reused the pid keeps its mappings, and
    /// its generation keeps counting.
    #[test]
    fn exited_tasks_are_forgotten_a_window_later() {
        let mut t = Tasks::new(None);
        let mmap = |pid: u32, path: &[u8]| Record::Mmap {
            time: 1,
            pid,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0,
            path: path.to_vec(),
        };
        for pid in [100, 200] {
            t.apply(&Record::Comm { time: 0, pid, tid: pid, comm: b"a".to_vec(), exec: true });
            t.apply(&mmap(pid, b"/bin/a"));
        }
        t.apply(&Record::Fork { time: 1, pid: 100, ppid: 100, tid: 101, ptid: 100 });
        assert_eq!(t.sizes(), (3, 2));
        t.apply(&Record::Exit { time: 2, pid: 100, tid: 101 });
        t.apply(&Record::Exit { time: 3, pid: 100, tid: 100 });
        // The window of the exits is named, then pruned: nothing forgotten yet.
        assert!(t.prune().is_empty());
        assert_eq!(t.sizes(), (3, 2));
        assert!(t.maps_at(100, 1).is_some_and(|m| m.find(0x1800).is_some()));
        // Meanwhile pid 100 is reused by a new process that forks and execs.
        t.apply(&Record::Fork { time: 4, pid: 100, ppid: 200, tid: 100, ptid: 200 });
        t.apply(&Record::Comm { time: 5, pid: 100, tid: 100, comm: b"b".to_vec(), exec: true });
        t.apply(&mmap(100, b"/bin/b"));
        assert_eq!(t.generation(100), 4);
        // The next window: the exited process's generation goes, the new one's stay.
        assert_eq!(t.prune(), [(100, 2)]);
        assert!(t.maps_at(100, 1).is_none());
        assert!(t.maps_at(100, 3).is_some(), "the new process's generation before its exec");
        assert_eq!(
            t.maps_at(100, 4).and_then(|m| m.find(0x1800)).map(|m| m.object.clone()),
            Some(b"/bin/b".to_vec())
        );
        assert_eq!(t.pruned_maps, 1);
        // Tid 101 forgotten; 100 is the new process's now, and kept.
        assert_eq!(t.sizes().0, 2);
        assert_eq!(&*t.comm(100, 100), b"b");
        assert_eq!(t.pruned_threads, 1);
        assert!(t.prune().is_empty());
    }

    #[test]
    fn only_the_given_threads_and_none_they_create() {
        let mut t = Tasks::new(Some(&[100]));
        t.only_threads(&[102]);
        t.comms.insert(102, (*b"worker").into());
        t.maps.insert((100, 0), ProcMaps { entries: AddressSpace::new(), loaded: true, version: 0 });
        t.apply(&Record::Fork { time: 1, pid: 100, ppid: 100, tid: 103, ptid: 102 });
        t.apply(&Record::Fork { time: 2, pid: 104, ppid: 100, tid: 104, ptid: 102 });
        assert!(t.wanted(100, 102));
        assert!(!t.wanted(100, 100) && !t.wanted(100, 103) && !t.wanted(104, 104));
    }
}
