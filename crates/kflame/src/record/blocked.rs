//! `--blocked`: every task's kernel stack from `/proc/PID/task/TID/stack` (read by
//! [`super::proc_stacks::snapshot`]), grouped by task state with the frame naming of
//! [`crate::collapse::proc_stacks`] (root frame `state:D`, so uninterruptible tasks sort
//! first): the live equivalent of crash's `foreach UN bt`. Threads whose stack cannot be
//! read (EPERM for a few kernel threads, or exited meanwhile) are counted and skipped.

use std::path::Path;

use super::stacks::Event;
use super::{Config, Naming, RecordError, Recording, Stats};
use crate::collapse::proc_stacks::{Thread, comm_frame, parse_proc_stack, state_frame};
use crate::fold::{Meta, StackCounts, Unit, Weight};

/// Takes the snapshot; fails when no task's stack is readable (not root).
pub(super) fn snapshot(config: &Config) -> Result<Recording, RecordError> {
    let started = std::time::Instant::now();
    let ts = super::sys::monotonic_ns();
    let own = std::process::id();
    let snap = super::proc_stacks::snapshot(Path::new("/proc"))
        .map_err(|e| RecordError::Unsupported(format!("cannot list /proc: {e}")))?;
    let unreadable = snap.denied + snap.vanished;
    let threads: Vec<&Thread> = snap.threads.iter().filter(|t| t.pid != own).collect();
    if threads.is_empty() && unreadable > 0 {
        return Err(RecordError::Unsupported(
            "no kernel stack could be read: /proc/PID/task/TID/stack needs root (CAP_SYS_ADMIN)".into(),
        ));
    }
    let (mut stacks, mut events, mut bad_lines) = (StackCounts::new(), Vec::new(), 0);
    for t in &threads {
        let (frames, bad) = fold(t, config.naming);
        bad_lines += bad;
        stacks.add(&frames.join(&b";"[..]), Weight::from_u64(1));
        if config.keep_events {
            events.push(event(t, ts, &frames));
        }
    }
    let mut notes = Vec::new();
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} threads skipped: their kernel stack could not be read (EPERM or exited)"
        ));
    }
    if bad_lines > 0 {
        notes.push(format!("{bad_lines} stack lines skipped: not `[<addr>] symbol+off/size`"));
    }
    let stats = Stats {
        samples: threads.len() as u64,
        unreadable_tasks: unreadable,
        elapsed: started.elapsed(),
        ..Stats::default()
    };
    let meta = Meta { unit: Unit::Other("tasks".into()), event: Some("/proc/*/task/*/stack".into()) };
    Ok(Recording { stacks, meta, events, stats, notes, command: None })
}

/// The folded frames of one thread, root first, and the number of unreadable stack lines.
fn fold(t: &Thread, n: Naming) -> (Vec<Vec<u8>>, u64) {
    let mut comm = comm_frame(&t.comm);
    if n.tid {
        comm.extend_from_slice(format!("-{}/{}", t.pid, t.tid).as_bytes());
    } else if n.pid {
        comm.extend_from_slice(format!("-{}", t.pid).as_bytes());
    }
    let mut frames = vec![state_frame(t.state), comm];
    let suffix: &[u8] = if n.annotate_kernel { b"_[k]" } else { b"" };
    let parsed = parse_proc_stack(&t.stack);
    let bad = parsed.iter().filter(|f| f.is_err()).count() as u64;
    frames.extend(parsed.iter().rev().filter_map(|f| f.ok()).map(|f| [f, suffix].concat()));
    (frames, bad)
}

fn event(t: &Thread, ts: u64, frames: &[Vec<u8>]) -> Event {
    Event {
        ts,
        cpu: 0,
        pid: t.pid,
        tid: t.tid,
        comm: String::from_utf8_lossy(&t.comm).into_owned(),
        duration_ns: None,
        weight: 1,
        stack: frames.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_named_like_a_collapsed_snapshot() {
        let t = Thread {
            pid: 42,
            tid: 43,
            comm: b"my worker".to_vec(),
            state: b'D',
            wchan: b"io_schedule".to_vec(),
            stack: b"[<0>] percpu_rwsem_wait+0x11e/0x140\n[<0>] mnt_want_write+0x6e/0xa0\nbogus\n".to_vec(),
        };
        let text = |f: Vec<Vec<u8>>| String::from_utf8(f.join(&b";"[..])).unwrap();
        let (frames, bad) = fold(&t, Naming::default());
        assert_eq!((text(frames), bad), ("state:D;my worker;mnt_want_write;percpu_rwsem_wait".into(), 1));
        let naming = Naming { tid: true, annotate_kernel: true, ..Naming::default() };
        let (frames, _) = fold(&t, naming);
        assert_eq!(text(frames), "state:D;my worker-42/43;mnt_want_write_[k];percpu_rwsem_wait_[k]");
    }
}
