//! `--blocked`: every task's kernel stack from `/proc/PID/task/TID/stack` (read by
//! [`super::proc_stacks::snapshot`]), grouped by task state with the frame naming of
//! [`crate::collapse::proc_stacks`] (root frame `state:D`, so uninterruptible tasks sort
//! first): the live equivalent of crash's `foreach UN bt`. Threads whose stack cannot be
//! read (EPERM for a few kernel threads, or exited meanwhile) are counted and skipped.
//!
//! One snapshot, or one every `every`, aggregated: a task seen in the same stack in 40
//! snapshots weighs 40 (unit `task-snapshots`), so a wait that comes and goes shows in
//! proportion to how often it was caught.

use std::path::Path;
use std::time::Duration;

use super::stacks::Event;
use super::{Config, Mode, Naming, RecordError, Recording, Stats};
use crate::collapse::proc_stacks::{Thread, comm_frame, parse_proc_stack, state_frame};
use crate::events::EventKind;
use crate::fold::{Meta, StackCounts, Unit, Weight};

/// Snapshots taken so far, aggregated into one recording.
pub(super) struct Snapshots {
    every: Option<Duration>,
    naming: Naming,
    keep_events: bool,
    /// When the next periodic snapshot is due, since recording started.
    next: Duration,
    bad_lines: u64,
    recording: Recording,
}

impl Snapshots {
    /// No snapshot yet; `every`: the interval of periodic ones (`None`: one, when asked).
    pub(super) fn new(every: Option<Duration>, config: &Config) -> Snapshots {
        let repeated = every.is_some();
        let unit = if repeated { "task-snapshots" } else { "tasks" };
        let meta = Meta { unit: Unit::Other(unit.into()), event: Some("/proc/*/task/*/stack".into()) };
        Snapshots {
            every,
            naming: config.naming,
            keep_events: config.keep_events,
            next: Duration::ZERO,
            bad_lines: 0,
            recording: Recording::new(Mode::Blocked { every }, meta),
        }
    }

    /// Fails unless kernel stacks can be read (root), before anything is recorded.
    pub(super) fn probe() -> Result<(), RecordError> {
        use super::features::{Feature, masked, masked_error};
        let read = match masked(Feature::ProcStack) {
            true => Err(masked_error(Feature::ProcStack)),
            false => std::fs::read("/proc/self/stack"),
        };
        match read {
            Ok(_) => Ok(()),
            Err(e) => Err(unreadable(&e.to_string())),
        }
    }

    /// Tasks counted so far (one per task and snapshot).
    pub(super) fn tasks(&self) -> u64 {
        self.recording.stats.samples
    }

    /// Unit and event of the weights.
    pub(super) fn meta(&self) -> Meta {
        self.recording.meta.clone()
    }

    /// Counters of every snapshot so far.
    pub(super) fn stats(&self) -> Stats {
        self.recording.stats
    }

    /// The stacks and events of the snapshots taken since the last drain; the collector is
    /// left empty.
    pub(super) fn drain(&mut self) -> (StackCounts, Vec<Event>) {
        let r = &mut self.recording;
        (std::mem::take(&mut r.stacks), std::mem::take(&mut r.events))
    }

    /// The time from `elapsed` to the next periodic snapshot (`None`: no periodic ones).
    pub(super) fn until_next(&self, elapsed: Duration) -> Option<Duration> {
        self.every.map(|_| self.next.saturating_sub(elapsed))
    }

    /// Takes the periodic snapshot due at `elapsed`, if one is (missed periods are skipped:
    /// a slow snapshot does not make the next ones come in a burst).
    pub(super) fn tick(&mut self, elapsed: Duration) -> Result<(), RecordError> {
        let Some(every) = self.every.filter(|_| elapsed >= self.next) else { return Ok(()) };
        self.take()?;
        while self.next <= elapsed {
            self.next += every;
        }
        Ok(())
    }

    /// Takes a snapshot now; the first one fails when no task's stack is readable (not root).
    pub(super) fn take(&mut self) -> Result<(), RecordError> {
        let ts = super::sys::monotonic_ns();
        let own = std::process::id();
        let snap = super::proc_stacks::snapshot(Path::new("/proc"))
            .map_err(|e| RecordError::Unsupported(format!("cannot list /proc: {e}")))?;
        let unreadable_now = snap.denied + snap.vanished;
        let threads: Vec<&Thread> = snap.threads.iter().filter(|t| t.pid != own).collect();
        let r = &mut self.recording;
        if threads.is_empty() && unreadable_now > 0 && r.stats.snapshots == 0 {
            return Err(unreadable("permission denied"));
        }
        for t in &threads {
            let (frames, bad) = fold(t, self.naming);
            self.bad_lines += bad;
            r.stacks.add(&frames.join(&b";"[..]), Weight::from_u64(1));
            if self.keep_events {
                r.events.push(event(t, ts, &frames));
            }
        }
        r.stats.samples += threads.len() as u64;
        r.stats.unreadable_tasks += unreadable_now;
        r.stats.snapshots += 1;
        Ok(())
    }

    /// The recording (the stacks not drained yet, the counters of every snapshot), with
    /// notes on what was skipped.
    pub(super) fn finish(mut self) -> Recording {
        let r = &mut self.recording;
        if let Some(every) = self.every {
            r.notes.push(format!(
                "{} snapshots of every task's kernel stack, one every {} s; a weight counts a task \
                 once per snapshot it was seen in",
                r.stats.snapshots,
                every.as_secs_f64()
            ));
        }
        if r.stats.unreadable_tasks > 0 {
            let each = if r.stats.snapshots > 1 { " (all snapshots together)" } else { "" };
            r.notes.push(format!(
                "{} threads skipped{each}: their kernel stack could not be read (EPERM or exited)",
                r.stats.unreadable_tasks
            ));
        }
        if self.bad_lines > 0 {
            r.notes.push(format!("{} stack lines skipped: not `[<addr>] symbol+off/size`", self.bad_lines));
        }
        self.recording
    }
}

fn unreadable(why: &str) -> RecordError {
    RecordError::Unsupported(format!(
        "no kernel stack could be read ({why}): /proc/PID/task/TID/stack needs root (CAP_SYS_ADMIN)"
    ))
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
        kind: EventKind::Snapshot,
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
