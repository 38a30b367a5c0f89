//! The recording loop: open, enable, read until the end condition, tear down, symbolize.
//!
//! Every perf-based mode of a recording shares one session: its events are opened together on
//! every CPU, their records read from the same ring buffers in one time order, and each sample
//! handed to the handler of its mode ([`handlers::Dispatch`]); side-band records (task names,
//! mappings, context switches) reach all of them. `--blocked` snapshots are taken from the
//! same loop, between two reads.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::blocked::Snapshots;
use super::duty::DutyThread;
use super::handlers::{self, Dispatch};
use super::parse::Record;
use super::session::{Scope, Session, online_cpus};
use super::sym::Symbolizer;
use super::sys::{self, StopSignals};
use super::tasks::Tasks;
use super::{CommandEnd, Config, Counters, Mode, Progress, RecordError, Recording, Recordings, Target};

/// Data pages per CPU: 512 KiB for CPU samples alone, 4 MiB with tracepoints (bursty, every
/// event).
fn ring_pages(modes: &[Mode]) -> usize {
    if modes.iter().all(|m| matches!(m, Mode::Cpu { .. } | Mode::Blocked { .. })) { 128 } else { 1024 }
}

/// Runs `config` until its duration ends, its command or target processes exit, or SIGINT or
/// SIGTERM arrives. `progress` is called about every 100 ms.
pub fn record(config: &Config, progress: &mut dyn FnMut(&Progress)) -> Result<Recordings, RecordError> {
    validate(config)?;
    let (target, target_notes) = resolve(&config.target)?;
    let config = &Config { target, ..config.clone() };
    let snapshots = config.modes.iter().find_map(|m| match m {
        Mode::Blocked { every } => Some(Snapshots::new(*every, config)),
        _ => None,
    });
    if let [Mode::Blocked { every: None }] = config.modes.as_slice() {
        return snapshot_now(snapshots, target_notes);
    }
    if snapshots.is_some() {
        Snapshots::probe()?;
    }
    let (specs, dispatch) = handlers::build(config)?;
    let scope = scope(config);
    let mut session = match specs.is_empty() {
        true => None,
        false => Some(Session::open(&specs, &online_cpus()?, ring_pages(&config.modes), &scope)?),
    };
    let signals = StopSignals::install()
        .map_err(|source| RecordError::Io { what: "installing signal handlers".into(), source })?;
    let thread_pids: Vec<u32>;
    let targets = match &config.target {
        Target::Pids(p) => Some(p.as_slice()),
        Target::Threads(tids) => {
            thread_pids = tids.iter().filter_map(|&t| tgid_of(t)).collect();
            Some(thread_pids.as_slice())
        }
        Target::Command { system_wide: false, .. } => Some(&[][..]),
        Target::Command { system_wide: true, .. } | Target::All => None,
    };
    let mut tasks = Tasks::new(targets);
    if let Target::Threads(tids) = &config.target {
        tasks.only_threads(tids);
    }
    let mut state = Loop { tasks, dispatch, snapshots, child: None, command: None };
    if session.is_some() {
        state.tasks.snapshot();
    }
    let started = Instant::now();
    if let Some(session) = &session
        && scope != Scope::ChildOnExec
    {
        session.set_enabled(true)?; // otherwise the command's execve enables them
    }
    if let Target::Command { argv, system_wide } = &config.target {
        state.spawn(argv, *system_wide)?;
    }
    let mut result = state.run(config, session.as_mut(), started, progress);
    if result.is_ok()
        && let Some(s) = state.snapshots.as_mut().filter(|s| s.until_next(Duration::ZERO).is_none())
    {
        result = s.take(); // the one snapshot, when recording stops
    }
    let mut ring = Counters::default();
    if let Some(mut session) = session {
        let _ = session.set_enabled(false);
        let rest = session.finish();
        state.handle(rest);
        ring = session.counters;
    } // every perf event closed before the (slow) symbolization
    let recorded_for = started.elapsed();
    drop(signals);
    state.reap();
    result?;
    let mut recordings = state.finish(config);
    recordings.notes.splice(0..0, target_notes);
    recordings.ring = ring;
    recordings.elapsed = recorded_for;
    Ok(recordings)
}

/// `--blocked` alone, one snapshot: taken at once.
fn snapshot_now(snapshots: Option<Snapshots>, notes: Vec<String>) -> Result<Recordings, RecordError> {
    let started = Instant::now();
    let mut s = snapshots.ok_or_else(|| RecordError::Unsupported("no snapshot to take".into()))?;
    s.take()?;
    Ok(Recordings { kinds: vec![s.finish()], elapsed: started.elapsed(), notes, ..Recordings::default() })
}

/// Refuses what cannot be recorded, before anything is opened.
fn validate(config: &Config) -> Result<(), RecordError> {
    let refuse = |why: String| Err(RecordError::Unsupported(why));
    let Some(first) = config.modes.first() else { return refuse("nothing to record: no mode given".into()) };
    for (i, m) in config.modes.iter().enumerate() {
        if config.modes[..i].iter().any(|o| o.name() == m.name()) {
            return refuse(format!("{} is asked for twice", m.name()));
        }
    }
    if config.duty.is_some() {
        for m in &config.modes {
            if let Some(why) = duty_refused(m) {
                return refuse(why.into());
            }
        }
    }
    let Mode::Blocked { every } = first else { return Ok(()) };
    if config.modes.len() > 1 {
        return Ok(()); // the other modes say how long; the snapshots cover every task
    }
    if matches!(config.target, Target::Pids(_) | Target::Threads(_)) {
        return refuse("--blocked takes a snapshot of every task; it cannot be limited to -p or -t".into());
    }
    if config.duty.is_some() {
        return refuse(
            "--blocked takes snapshots, instants: --for has no meaning there (--every alone sets \
             the interval between snapshots)"
                .into(),
        );
    }
    let how_long = match config.target {
        Target::Command { .. } => Some("a command"),
        _ => config.duration.map(|_| "-d"),
    };
    if let (None, Some(what)) = (every, how_long) {
        return refuse(format!(
            "--blocked alone takes one snapshot at once, so {what} would change nothing: add \
             --every SECONDS to take a snapshot every SECONDS until the end"
        ));
    }
    Ok(())
}

/// Why the mode cannot record with a duty cycle, if it cannot: paired modes would join an
/// event before a pause with an unrelated one after it.
fn duty_refused(mode: &Mode) -> Option<&'static str> {
    match mode {
        Mode::OffCpu => Some(
            "--off-cpu cannot record with a duty cycle: the switch-in of a task asleep when \
             recording pauses would be missed, and its blocked time would run on to a later one",
        ),
        Mode::Syscalls => Some(
            "--syscalls cannot record with a duty cycle: a call entered before a pause would \
             pair with the exit of a later call of the same number after it (a loop of reads)",
        ),
        _ => None,
    }
}

/// Per-task events where they see everything the modes need: a process's events, or a
/// command's from its `execve` on. Off-CPU recording is always system-wide: it reads the
/// CPU-wide context-switch records, and its targets are chosen while pairing; the modes
/// recorded with it share its system-wide events and filter by task the same way.
fn scope(config: &Config) -> Scope {
    if config.modes.contains(&Mode::OffCpu) {
        return Scope::SystemWide;
    }
    match &config.target {
        Target::All | Target::Command { system_wide: true, .. } => Scope::SystemWide,
        Target::Command { system_wide: false, .. } => Scope::ChildOnExec,
        Target::Pids(pids) => Scope::Tasks(pids.iter().flat_map(|&p| threads_of(p)).collect()),
        Target::Threads(tids) => Scope::Threads(tids.clone()),
    }
}

/// The target with every id checked: a thread id given as a process (`-p TID`) stands for
/// its process, as with `perf record -p` (whose thread list is `/proc/TID/task`: all the
/// threads of the process); `-t` takes thread ids as they are. Also returns notes on ids
/// that were taken for their process.
fn resolve(target: &Target) -> Result<(Target, Vec<String>), RecordError> {
    match target {
        Target::Pids(ids) => {
            let (mut pids, mut notes) = (Vec::new(), Vec::new());
            for &id in ids {
                let pid = tgid_of(id).ok_or(RecordError::NoSuchProcess(id))?;
                if pid != id {
                    notes.push(format!(
                        "-p {id}: {id} is a thread of process {pid}; recording the whole process, as \
                         perf record -p does (-t {id} records that thread alone)"
                    ));
                }
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
            Ok((Target::Pids(pids), notes))
        }
        Target::Threads(tids) => match tids.iter().find(|&&t| tgid_of(t).is_none()) {
            Some(&t) => Err(RecordError::NoSuchThread(t)),
            None => Ok((target.clone(), Vec::new())),
        },
        Target::All | Target::Command { .. } => Ok((target.clone(), Vec::new())),
    }
}

/// The process (thread group) of task `id`, from `/proc/ID/status`; `None` when there is no
/// such task.
fn tgid_of(id: u32) -> Option<u32> {
    if id == 0 {
        return None; // the idle tasks have no /proc entry
    }
    let status = std::fs::read_to_string(format!("/proc/{id}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:"))?.trim().parse().ok()
}

/// The threads of process `pid` (just `pid` when its task list cannot be read).
fn threads_of(pid: u32) -> Vec<u32> {
    let tids: Vec<u32> = super::tasks::numeric_dirs(&format!("/proc/{pid}/task")).collect();
    if tids.is_empty() { vec![pid] } else { tids }
}

struct Loop {
    tasks: Tasks,
    dispatch: Dispatch,
    snapshots: Option<Snapshots>,
    child: Option<Child>,
    command: Option<CommandEnd>,
}

/// How a command that ended ended; `stopping`: the recorder was told to stop (a signal)
/// meanwhile, so a SIGINT or SIGTERM that killed the command was meant for both.
fn command_end(status: ExitStatus, stopping: bool) -> CommandEnd {
    match (status.code(), status.signal()) {
        (Some(code), _) => CommandEnd::Exited(code),
        (None, Some(sig)) if stopping && (sig == libc::SIGINT || sig == libc::SIGTERM) => CommandEnd::Stopped,
        (None, Some(sig)) => CommandEnd::Killed(sig),
        (None, None) => CommandEnd::Stopped,
    }
}

impl Loop {
    fn spawn(&mut self, argv: &[std::ffi::OsString], system_wide: bool) -> Result<(), RecordError> {
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| RecordError::Unsupported("no command given after `--`".into()))?;
        let child = Command::new(prog)
            .args(args)
            .spawn()
            .map_err(|source| RecordError::Spawn { command: prog.to_string_lossy().into_owned(), source })?;
        if !system_wide {
            self.tasks.add_target(child.id());
        }
        self.child = Some(child);
        Ok(())
    }

    fn run(
        &mut self,
        config: &Config,
        mut session: Option<&mut Session>,
        started: Instant,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), RecordError> {
        let duty = match (config.duty, &session) {
            (Some(d), Some(s)) => Some(DutyThread::start(s.event_fds()?, d, started)),
            _ => None,
        };
        loop {
            let elapsed = started.elapsed();
            if let Some(s) = &mut self.snapshots {
                s.tick(elapsed)?;
            }
            if self.should_stop(config, elapsed) {
                return Ok(());
            }
            match session.as_deref_mut() {
                Some(s) => {
                    let records = s.poll(100)?;
                    self.handle(records);
                }
                None => {
                    let next = self.snapshots.as_ref().and_then(|s| s.until_next(started.elapsed()));
                    std::thread::sleep(next.unwrap_or(Duration::MAX).min(Duration::from_millis(100)));
                }
            }
            let active = duty.as_ref().is_none_or(DutyThread::active);
            let lost = session.as_deref().map_or(0, |s| s.counters.lost);
            let snapshots = self.snapshots.as_ref().map_or(0, Snapshots::tasks);
            let samples = self.dispatch.added() + snapshots;
            progress(&Progress { elapsed, samples, lost, active });
        }
    }

    fn should_stop(&mut self, config: &Config, elapsed: Duration) -> bool {
        if let Some(child) = &mut self.child
            && let Ok(Some(status)) = child.try_wait()
        {
            self.command = Some(command_end(status, sys::stop_requested()));
            self.child = None;
            return true;
        }
        if sys::stop_requested() || config.duration.is_some_and(|d| elapsed >= d) {
            return true;
        }
        match &config.target {
            Target::Pids(ids) | Target::Threads(ids) => !ids.iter().any(|p| process_alive(*p)),
            _ => false,
        }
    }

    fn handle(&mut self, records: Vec<Record>) {
        for r in records {
            match &r {
                Record::Sample(s) => self.dispatch.sample(s, &mut self.tasks),
                other => {
                    self.tasks.apply(other);
                    self.dispatch.side_band(other);
                }
            }
        }
    }

    /// Stops a command still running (recording stopped first) and waits for it.
    fn reap(&mut self) {
        if let Some(mut child) = self.child.take() {
            let stopped = match child.try_wait() {
                Ok(None) => {
                    sys::kill(child.id(), sys::SIGTERM);
                    true
                }
                _ => false,
            };
            let status = child.wait();
            self.command = Some(match status {
                Ok(s) if !stopped => command_end(s, sys::stop_requested()),
                _ => CommandEnd::Stopped,
            });
        }
    }

    /// Symbolizes every perf-based mode's stacks and gathers the recordings in the order of
    /// `config.modes`.
    fn finish(mut self, config: &Config) -> Recordings {
        let mut notes = Vec::new();
        let mut perf: Vec<Recording> = Vec::new();
        let kinds = std::mem::take(&mut self.dispatch.kinds);
        if !kinds.is_empty() {
            let mut sym = Symbolizer::new();
            if !sym.has_kernel_symbols() {
                notes.push(
                    "kernel symbols are hidden (/proc/kallsyms shows zero addresses: run as root or \
                     set kernel.kptr_restrict=0); kernel frames are shown as [kernel.kallsyms]"
                        .to_string(),
                );
            }
            for k in kinds {
                let mut r = Recording::new(k.mode, k.handler.meta());
                r.notes = k.handler.notes();
                if k.collector.is_empty() {
                    r.notes.push("no samples were recorded for the selected tasks".to_string());
                }
                r.stats.samples = k.handler.added();
                r.stats.unpaired = k.handler.unpaired();
                (r.stacks, r.events) = k.collector.finish(&self.tasks, &mut sym);
                perf.push(r);
            }
        }
        let mut blocked = self.snapshots.take().map(Snapshots::finish);
        let kinds = config
            .modes
            .iter()
            .filter_map(|m| match m {
                Mode::Blocked { .. } => blocked.take(),
                _ => perf.iter().position(|r| r.mode == *m).map(|i| perf.remove(i)),
            })
            .collect();
        Recordings { kinds, notes, command: self.command, ..Recordings::default() }
    }
}

impl Drop for Loop {
    /// A command is never left running, even when recording ends by a panic.
    fn drop(&mut self) {
        self.reap();
    }
}

/// True while process or thread `pid` exists.
fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_a_command_ended() {
        let st = ExitStatus::from_raw;
        assert_eq!(command_end(st(0), false), CommandEnd::Exited(0));
        assert_eq!(command_end(st(3 << 8), true), CommandEnd::Exited(3));
        assert_eq!(command_end(st(libc::SIGSEGV), false), CommandEnd::Killed(libc::SIGSEGV));
        assert_eq!(command_end(st(libc::SIGSEGV), true), CommandEnd::Killed(libc::SIGSEGV));
        // Ctrl-C reaches the recorder and the command alike: the command did not fail.
        assert_eq!(command_end(st(libc::SIGINT), true), CommandEnd::Stopped);
        assert_eq!(command_end(st(libc::SIGINT), false), CommandEnd::Killed(libc::SIGINT));
    }
}
