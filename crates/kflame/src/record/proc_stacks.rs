//! A live snapshot of every thread's kernel stack from `/proc/*/task/*/stack`, in the text
//! format that [`crate::collapse::proc_stacks`] collapses.
//!
//! Reading `stack` needs root (CAP_SYS_ADMIN) and some threads refuse it even then, and
//! threads exit while the snapshot is taken: such threads are counted, not errors.

use std::fs;
use std::io;
use std::path::Path;

use crate::collapse::proc_stacks::{Thread, parse_status, write_thread};

/// What a snapshot found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Threads whose stack was read.
    pub threads: Vec<Thread>,
    /// Threads whose `stack` could not be read (permission denied).
    pub denied: u64,
    /// Threads that went away while being read.
    pub vanished: u64,
}

impl Snapshot {
    /// The snapshot text (one `==>` header and its stack lines per thread).
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for t in &self.threads {
            write_thread(&mut out, t);
        }
        out
    }
}

/// Reads every thread under `proc_root` (normally `/proc`). Fails only when `proc_root`
/// itself cannot be listed.
pub fn snapshot(proc_root: &Path) -> io::Result<Snapshot> {
    let mut snap = Snapshot::default();
    let mut pids = numeric_entries(proc_root)?;
    pids.sort_unstable();
    for pid in pids {
        let Ok(mut tids) = numeric_entries(&proc_root.join(pid.to_string()).join("task")) else {
            snap.vanished += 1;
            continue;
        };
        tids.sort_unstable();
        for tid in tids {
            read_thread(&proc_root.join(format!("{pid}/task/{tid}")), pid, tid, &mut snap);
        }
    }
    Ok(snap)
}

fn read_thread(dir: &Path, pid: u32, tid: u32, snap: &mut Snapshot) {
    let status = fs::read(dir.join("status")).ok().and_then(|s| parse_status(&s));
    let Some(status) = status else {
        snap.vanished += 1;
        return;
    };
    let read = match super::features::masked(super::features::Feature::ProcStack) {
        true => Err(io::Error::from(io::ErrorKind::PermissionDenied)),
        false => fs::read(dir.join("stack")),
    };
    let stack = match read {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            snap.denied += 1;
            return;
        }
        Err(_) => {
            snap.vanished += 1;
            return;
        }
    };
    let wchan = fs::read(dir.join("wchan")).unwrap_or_default();
    snap.threads.push(Thread { pid, tid, comm: status.name, state: status.state, wchan, stack });
}

fn numeric_entries(dir: &Path) -> io::Result<Vec<u32>> {
    Ok(fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collapse::proc_stacks::ProcStacks;
    use crate::collapse::testkit::run;

    #[test]
    #[allow(clippy::print_stderr)]
    fn live_snapshot_collapses_one_weight_per_thread() {
        let snap = match snapshot(Path::new("/proc")) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("note: /proc not readable here ({e}); live snapshot test skipped");
                return;
            }
        };
        if snap.threads.is_empty() {
            eprintln!("note: no readable /proc/*/task/*/stack here (denied {}); skipped", snap.denied);
            return;
        }
        eprintln!("live snapshot: {} threads read, {} denied", snap.threads.len(), snap.denied);
        let out = run(Box::new(ProcStacks::new()), &snap.to_text());
        assert_eq!(out.diag.skipped(), 0, "{:?}", out.diag);
        assert_eq!(out.stacks.total().whole(), snap.threads.len() as u64);
    }

    #[test]
    fn fake_proc_tree() {
        let dir = std::env::temp_dir().join(format!("kflame-proc-test-{}", std::process::id()));
        let t = dir.join("42/task/43");
        fs::create_dir_all(&t).unwrap();
        fs::write(t.join("status"), "Name:\tmy worker\nState:\tD (disk sleep)\nTgid:\t42\nPid:\t43\n")
            .unwrap();
        fs::write(t.join("stack"), "[<0>] io_schedule+0x12/0x40\n[<0>] ksys_read+0x5/0x9\n").unwrap();
        fs::write(t.join("wchan"), "io_schedule").unwrap();
        fs::create_dir_all(dir.join("44/task/44")).unwrap();
        let snap = snapshot(&dir).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!((snap.threads.len(), snap.vanished), (1, 1));
        let out = run(Box::new(ProcStacks::new()), &snap.to_text());
        let got: Vec<_> =
            out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.whole())).collect();
        assert_eq!(got, vec![(b"state:D;my worker;ksys_read;io_schedule".to_vec(), 1)]);
    }
}
