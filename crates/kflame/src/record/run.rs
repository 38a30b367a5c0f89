//! The recording loop: open, enable, read until the end condition, tear down, symbolize.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::duty::DutyThread;
use super::handlers::{self, Handler};
use super::parse::Record;
use super::session::{Scope, Session, online_cpus};
use super::stacks::Collector;
use super::sym::Symbolizer;
use super::sys::{self, StopSignals};
use super::tasks::Tasks;
use super::{CommandEnd, Config, Mode, Progress, RecordError, Recording, Target, blocked};

/// Data pages per CPU: 512 KiB for CPU samples, 4 MiB for tracepoints (bursty, every event).
fn ring_pages(mode: &Mode) -> usize {
    match mode {
        Mode::Cpu { .. } => 128,
        _ => 1024,
    }
}

/// Runs `config` until its duration ends, its command or target processes exit, or SIGINT or
/// SIGTERM arrives. `progress` is called about every 100 ms.
pub fn record(config: &Config, progress: &mut dyn FnMut(&Progress)) -> Result<Recording, RecordError> {
    if config.mode == Mode::Blocked {
        return blocked::snapshot(config);
    }
    if let Some(why) = duty_refused(config) {
        return Err(RecordError::Unsupported(why.into()));
    }
    let (target, target_notes) = resolve(&config.target)?;
    let config = &Config { target, ..config.clone() };
    let (specs, mut handler) = handlers::build(config)?;
    let cpus = online_cpus()?;
    let scope = scope(config);
    let mut session = Session::open(&specs, &cpus, ring_pages(&config.mode), &scope)?;
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
    let mut state = Loop {
        tasks,
        collector: Collector::new(config.naming, config.keep_events),
        child: None,
        command: None,
    };
    state.tasks.snapshot();
    let started = Instant::now();
    if scope != Scope::ChildOnExec {
        session.set_enabled(true)?; // otherwise the command's execve enables them
    }
    if let Target::Command { argv, system_wide } = &config.target {
        state.spawn(argv, *system_wide)?;
    }
    let result = state.run(config, &mut session, handler.as_mut(), started, progress);
    let _ = session.set_enabled(false);
    let recorded_for = started.elapsed();
    let rest = session.finish();
    state.handle(rest, handler.as_mut());
    let counters = session.counters;
    drop(session); // every perf event closed before the (slow) symbolization
    drop(signals);
    state.reap();
    result?;
    let mut recording = state.finish(handler.as_ref(), counters, recorded_for);
    recording.notes.splice(0..0, target_notes);
    Ok(recording)
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

/// Why the mode cannot record with a duty cycle, if it has one: paired modes would join an
/// event before a pause with an unrelated one after it.
fn duty_refused(config: &Config) -> Option<&'static str> {
    config.duty.as_ref()?;
    match config.mode {
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

/// Per-task events where they see everything the mode needs: a process's events, or a
/// command's from its `execve` on. Off-CPU recording is always system-wide: it reads the
/// CPU-wide context-switch records, and its targets are chosen while pairing.
fn scope(config: &Config) -> Scope {
    if config.mode == Mode::OffCpu {
        return Scope::SystemWide;
    }
    match &config.target {
        Target::All | Target::Command { system_wide: true, .. } => Scope::SystemWide,
        Target::Command { system_wide: false, .. } => Scope::ChildOnExec,
        Target::Pids(pids) => Scope::Tasks(pids.iter().flat_map(|&p| threads_of(p)).collect()),
        Target::Threads(tids) => Scope::Threads(tids.clone()),
    }
}

/// The threads of process `pid` (just `pid` when its task list cannot be read).
fn threads_of(pid: u32) -> Vec<u32> {
    let tids: Vec<u32> = super::tasks::numeric_dirs(&format!("/proc/{pid}/task")).collect();
    if tids.is_empty() { vec![pid] } else { tids }
}

struct Loop {
    tasks: Tasks,
    collector: Collector,
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
        session: &mut Session,
        handler: &mut dyn Handler,
        started: Instant,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), RecordError> {
        let duty = match config.duty {
            Some(d) => Some(DutyThread::start(session.event_fds()?, d, started)),
            None => None,
        };
        loop {
            let elapsed = started.elapsed();
            if self.should_stop(config, elapsed) {
                return Ok(());
            }
            let records = session.poll(100)?;
            self.handle(records, handler);
            let active = duty.as_ref().is_none_or(DutyThread::active);
            progress(&Progress { elapsed, samples: handler.added(), lost: session.counters.lost, active });
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

    fn handle(&mut self, records: Vec<Record>, handler: &mut dyn Handler) {
        for r in records {
            match &r {
                Record::Sample(s) => handler.sample(s, &mut self.tasks, &mut self.collector),
                other => {
                    self.tasks.apply(other);
                    handler.side_band(other, &mut self.collector);
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

    fn finish(mut self, handler: &dyn Handler, ring: super::Counters, elapsed: Duration) -> Recording {
        let mut sym = Symbolizer::new();
        let mut notes = Vec::new();
        if !sym.has_kernel_symbols() {
            notes.push(
                "kernel symbols are hidden (/proc/kallsyms shows zero addresses: run as root or set \
                 kernel.kptr_restrict=0); kernel frames are shown as [kernel.kallsyms]"
                    .to_string(),
            );
        }
        notes.extend(handler.notes());
        if self.collector.is_empty() {
            notes.push("no samples were recorded for the selected tasks".to_string());
        }
        let collector = std::mem::replace(&mut self.collector, Collector::new(Default::default(), false));
        let (stacks, events) = collector.finish(&self.tasks, &mut sym);
        let stats = super::Stats {
            samples: handler.added(),
            ring,
            unpaired: handler.unpaired(),
            unreadable_tasks: 0,
            elapsed,
        };
        Recording { stacks, meta: handler.meta(), events, stats, notes, command: self.command }
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
