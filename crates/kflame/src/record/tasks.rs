//! What is known about tasks while recording: names (comm), executable mappings, which
//! processes are being profiled. Fed by `COMM`/`FORK`/`EXIT`/`MMAP2` records, completed from
//! `/proc` the first time a task is seen (tasks that existed before recording started).
//!
//! A process's mappings are versioned by a *generation* that changes on `execve` and on exit
//! (pid reuse), so samples taken before an exec are symbolized with the old image.

use rustc_hash::{FxHashMap, FxHashSet};

use super::parse::Record;
use super::sym::Mapping;
use crate::symbols::{AddressSpace, parse_proc_maps_line};

/// Mappings of one process generation (a newer mapping replaces what it overlaps).
#[derive(Clone, Debug, Default)]
pub(crate) struct ProcMaps {
    entries: AddressSpace<Vec<u8>>,
    loaded: bool,
}

impl ProcMaps {
    /// The mapping containing `addr`.
    pub(crate) fn find(&self, addr: u64) -> Option<&Mapping> {
        self.entries.find(addr)
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
                self.comms.insert(*tid, comm.clone().into());
                if *exec {
                    let g = self.bump(*pid);
                    self.maps.insert((*pid, g), ProcMaps { entries: AddressSpace::new(), loaded: true });
                }
            }
            Record::Fork { pid, ppid, tid, ptid, .. } => self.fork(*pid, *ppid, *tid, *ptid),
            Record::Exit { pid, tid, .. } if pid == tid => {
                self.bump(*pid);
            }
            Record::Mmap { pid, start, len, pgoff, path, .. } => {
                let g = self.generation(*pid);
                let m = Mapping {
                    start: *start,
                    end: start.saturating_add(*len),
                    pgoff: *pgoff,
                    object: path.clone(),
                };
                self.maps.entry((*pid, g)).or_default().entries.insert(m);
            }
            _ => {}
        }
    }

    fn fork(&mut self, pid: u32, ppid: u32, tid: u32, ptid: u32) {
        // The parent is most likely still alive: name it now if it was never seen.
        let c = self.comm(ppid, ptid);
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

    /// The current generation of `pid`.
    pub(crate) fn generation(&self, pid: u32) -> u32 {
        self.generations.get(&pid).copied().unwrap_or(0)
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
                    m.entries.insert(map);
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
        t.maps.insert((100, 0), ProcMaps { entries: AddressSpace::new(), loaded: true });
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

    #[test]
    fn only_the_given_threads_and_none_they_create() {
        let mut t = Tasks::new(Some(&[100]));
        t.only_threads(&[102]);
        t.comms.insert(102, (*b"worker").into());
        t.maps.insert((100, 0), ProcMaps { entries: AddressSpace::new(), loaded: true });
        t.apply(&Record::Fork { time: 1, pid: 100, ppid: 100, tid: 103, ptid: 102 });
        t.apply(&Record::Fork { time: 2, pid: 104, ppid: 100, tid: 104, ptid: 102 });
        assert!(t.wanted(100, 102));
        assert!(!t.wanted(100, 100) && !t.wanted(100, 103) && !t.wanted(104, 104));
    }
}
