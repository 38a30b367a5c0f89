//! `--blocked`: every task's kernel stack from `/proc/PID/task/TID/stack`, grouped by task
//! state (the root frame is the state letter, so `D` — uninterruptible — sorts first): the
//! live equivalent of crash's `foreach UN bt`. Threads whose stack cannot be read (EPERM for
//! a few kernel threads, or exited meanwhile) are counted and skipped.

use std::fs;

use super::stacks::Event;
use super::tasks::numeric_dirs;
use super::{Config, RecordError, Recording, Stats};
use crate::fold::{Meta, StackCounts, Unit, Weight};

/// One task's snapshot.
#[derive(Debug, PartialEq, Eq)]
struct TaskStack {
    pid: u32,
    tid: u32,
    state: char,
    comm: String,
    /// Leaf first, as in the file.
    frames: Vec<String>,
}

/// Takes the snapshot; fails when no task's stack is readable (not root).
pub(super) fn snapshot(config: &Config) -> Result<Recording, RecordError> {
    let started = std::time::Instant::now();
    let ts = super::sys::monotonic_ns();
    let own = std::process::id();
    let (mut tasks, mut unreadable) = (Vec::new(), 0);
    for pid in numeric_dirs("/proc").filter(|&p| p != own) {
        for tid in numeric_dirs(&format!("/proc/{pid}/task")) {
            match read_task(pid, tid) {
                Some(t) => tasks.push(t),
                None => unreadable += 1,
            }
        }
    }
    let mut stacks = StackCounts::new();
    let mut events = Vec::new();
    for t in &tasks {
        let frames = fold(t, config);
        stacks.add(frames.join(";").as_bytes(), Weight::from_u64(1));
        if config.keep_events {
            events.push(Event {
                ts,
                cpu: 0,
                pid: t.pid,
                tid: t.tid,
                comm: t.comm.clone(),
                duration_ns: None,
                weight: 1,
                stack: frames,
            });
        }
    }
    if tasks.is_empty() && unreadable > 0 {
        return Err(RecordError::Unsupported(
            "no kernel stack could be read: /proc/PID/task/TID/stack needs root (CAP_SYS_ADMIN)".into(),
        ));
    }
    let mut notes = Vec::new();
    if unreadable > 0 {
        notes.push(format!(
            "{unreadable} threads skipped: their kernel stack could not be read (EPERM or exited)"
        ));
    }
    let stats = Stats {
        samples: tasks.len() as u64,
        unreadable_tasks: unreadable,
        elapsed: started.elapsed(),
        ..Stats::default()
    };
    let meta = Meta { unit: Unit::Other("tasks".into()), event: Some("/proc/*/task/*/stack".into()) };
    Ok(Recording { stacks, meta, events, stats, notes, command_status: None })
}

fn read_task(pid: u32, tid: u32) -> Option<TaskStack> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let stat = fs::read_to_string(format!("{dir}/stat")).ok()?;
    let stack = fs::read_to_string(format!("{dir}/stack")).ok()?;
    let (comm, state) = parse_stat(&stat)?;
    Some(TaskStack { pid, tid, state, comm, frames: parse_stack(&stack) })
}

/// `1234 (my comm) S 1 ...`: the comm may hold spaces and parentheses; the state follows
/// the last `)`.
fn parse_stat(stat: &str) -> Option<(String, char)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let state = stat.get(close + 1..)?.trim_start().chars().next()?;
    Some((comm, state))
}

/// `[<0>] do_sys_poll+0x3b5/0x5a0` lines → function names, leaf first.
fn parse_stack(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let f = l.trim().rsplit(' ').next()?;
            let name = f.split('+').next()?;
            (!name.is_empty()).then(|| name.to_string())
        })
        .collect()
}

fn fold(t: &TaskStack, config: &Config) -> Vec<String> {
    let n = config.naming;
    let mut comm = t.comm.replace([' ', ';'], "_");
    if n.tid {
        comm.push_str(&format!("-{}/{}", t.pid, t.tid));
    } else if n.pid {
        comm.push_str(&format!("-{}", t.pid));
    }
    let mut frames = vec![t.state.to_string(), comm];
    let suffix = if n.annotate_kernel { "_[k]" } else { "" };
    frames.extend(t.frames.iter().rev().map(|f| format!("{f}{suffix}")));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_and_stack_parsing() {
        assert_eq!(parse_stat("42 (a (b) c) D 1 2 3"), Some(("a (b) c".to_string(), 'D')));
        assert_eq!(parse_stat("garbage"), None);
        let s = "[<0>] percpu_rwsem_wait+0x11e/0x140\n[<0>] mnt_want_write+0x6e/0xa0\n";
        assert_eq!(parse_stack(s), ["percpu_rwsem_wait", "mnt_want_write"]);
    }

    #[test]
    fn own_process_threads_are_readable_as_root_or_skipped() {
        let me = std::process::id();
        // Reading our own stack needs CAP_SYS_ADMIN-like rights; either way no panic.
        let _ = read_task(me, me);
        assert!(numeric_dirs("/proc").any(|p| p == me));
    }
}
