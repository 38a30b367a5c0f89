//! A set of perf events, one group per CPU, each CPU's events writing into one ring buffer;
//! reading the buffers and releasing the records in time order.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::RecordError;
use super::order::Reorder;
use super::parse::{self, Layout, Record};
use super::sys::{self, PerfEventAttr, Ring, attr::flag};

/// Whose activity the events see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every task (`pid = -1` on each CPU).
    SystemWide,
    /// These threads and the tasks they create (`inherit`).
    Tasks(Vec<u32>),
    /// These threads only (no `inherit`).
    Threads(Vec<u32>),
    /// The command this process is about to start: events on this thread, inherited by the
    /// child at fork and enabled by its `execve` (`enable_on_exec`), as perf does.
    ChildOnExec,
}

/// An event to open on every CPU.
#[derive(Clone, Debug)]
pub(crate) struct EventSpec {
    /// Name for messages (`cpu-clock`, `sched:sched_switch`).
    pub(crate) name: String,
    pub(crate) attr: PerfEventAttr,
}

struct PerCpu {
    /// The first fd owns the ring; the others are redirected into it.
    fds: Vec<OwnedFd>,
    ring: Ring,
}

/// Counters of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Records read from the buffers.
    pub records: u64,
    /// Records the kernel dropped because a buffer was full (`PERF_RECORD_LOST`).
    pub lost: u64,
    /// Records that could not be decoded.
    pub malformed: u64,
}

/// Open events on every CPU; closed (and unmapped) when dropped.
pub(crate) struct Session {
    cpus: Vec<PerCpu>,
    /// The optional sample fields every record of the session carries.
    pub(crate) layout: Layout,
    /// Why cgroup ids were asked for and not recorded (the kernel refused them).
    pub(crate) cgroup_refused: Option<std::io::Error>,
    reorder: Reorder,
    buf: Vec<u8>,
    pub(crate) counters: Counters,
}

impl Session {
    /// Opens every event of `specs` for `scope` on every CPU in `cpus`, with `pages` data
    /// pages per CPU. Task and mapping records are requested on the first event of each task.
    /// With `cgroups`, every sample carries its task's cgroup id and cgroups are named by
    /// `PERF_RECORD_CGROUP` records, if the kernel takes them (5.7 and later): else the
    /// events are opened without, and [`Session::cgroup_refused`] says why.
    pub(crate) fn open(
        specs: &[EventSpec],
        cpus: &[u32],
        pages: usize,
        scope: &Scope,
        cgroups: bool,
    ) -> Result<Session, RecordError> {
        // Every record of a ring must have the same layout: with tracepoints (raw data), the
        // other events (cpu-clock) carry an empty raw field too (4 zero bytes).
        let raw = specs.iter().any(|s| s.attr.sample_type & sys::attr::sample::RAW != 0);
        // With `--call-graph dwarf` every event asks for the user registers and stack (those
        // whose stacks are not wanted for a copy of 0 bytes), so all records read alike.
        let user_regs = specs.iter().map(|s| s.attr.sample_regs_user).max().unwrap_or(0);
        let user_stack = specs.iter().any(|s| s.attr.sample_type & sys::attr::sample::STACK_USER != 0);
        sys::raise_fd_limit();
        let mut cgroup_refused = None;
        if cgroups {
            let layout = Layout { raw, cgroup: true, user_regs, user_stack };
            match open_all(specs, layout, cpus, pages, scope) {
                Ok(per_cpu) => return Ok(Session::new(per_cpu, layout, None)),
                Err(RecordError::Open { source, .. }) => cgroup_refused = Some(source),
                Err(e) => return Err(e),
            }
        }
        let layout = Layout { raw, cgroup: false, user_regs, user_stack };
        let per_cpu = open_all(specs, layout, cpus, pages, scope)?;
        Ok(Session::new(per_cpu, layout, cgroup_refused))
    }

    fn new(cpus: Vec<PerCpu>, layout: Layout, cgroup_refused: Option<std::io::Error>) -> Session {
        Session {
            cpus,
            layout,
            cgroup_refused,
            reorder: Reorder::default(),
            buf: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Starts (`true`) or pauses (`false`) every event.
    pub(crate) fn set_enabled(&self, on: bool) -> Result<(), RecordError> {
        for fd in self.cpus.iter().flat_map(|c| c.fds.iter()) {
            let r = if on { sys::enable(fd) } else { sys::disable(fd) };
            r.map_err(|source| RecordError::Io { what: "enabling perf events".into(), source })?;
        }
        Ok(())
    }

    /// Duplicates of every event fd, for a thread that enables and disables the events
    /// (duty cycle) while this one reads.
    pub(crate) fn event_fds(&self) -> Result<Vec<OwnedFd>, RecordError> {
        let dup = |fd: &OwnedFd| fd.try_clone();
        let fds: Result<Vec<_>, _> = self.cpus.iter().flat_map(|c| c.fds.iter()).map(dup).collect();
        fds.map_err(|source| RecordError::Io { what: "duplicating perf event fds".into(), source })
    }

    /// Waits up to `timeout_ms` for data, reads every buffer, and returns the records that
    /// are now safe to interpret, in time order.
    pub(crate) fn poll(&mut self, timeout_ms: i32) -> Result<Vec<Record>, RecordError> {
        let fds: Vec<RawFd> = self.cpus.iter().map(|c| c.fds[0].as_raw_fd()).collect();
        sys::poll_readable(&fds, timeout_ms)
            .map_err(|source| RecordError::Io { what: "waiting for perf events".into(), source })?;
        let started = sys::monotonic_ns();
        self.read_all();
        Ok(self.reorder.release(started))
    }

    /// Reads what is left and returns every remaining record in time order.
    pub(crate) fn finish(&mut self) -> Vec<Record> {
        self.read_all();
        self.reorder.finish()
    }

    fn read_all(&mut self) {
        let mut recs = Vec::new();
        for c in &mut self.cpus {
            self.buf.clear();
            c.ring.drain_into(&mut self.buf);
            parse::records(&self.buf, self.layout, &mut recs, &mut self.counters.malformed);
        }
        for r in &recs {
            if let Record::Lost { count, .. } = r {
                self.counters.lost += count;
            }
        }
        self.counters.records += recs.len() as u64;
        self.reorder.push(&mut recs);
    }
}

#[cfg(test)]
thread_local! {
    /// Tests: act as a kernel before 5.7, which refuses `PERF_SAMPLE_CGROUP`.
    pub(crate) static REFUSE_CGROUP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: act as a kernel that refuses `PERF_SAMPLE_STACK_USER`.
    pub(crate) static REFUSE_USER_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Opens `specs` on every CPU with the sample fields of `layout`.
fn open_all(
    specs: &[EventSpec],
    layout: Layout,
    cpus: &[u32],
    pages: usize,
    scope: &Scope,
) -> Result<Vec<PerCpu>, RecordError> {
    #[cfg(test)]
    if (layout.cgroup && REFUSE_CGROUP.get()) || (layout.user_stack && REFUSE_USER_STACK.get()) {
        let (event, cpu) = (specs.first().map_or(String::new(), |s| s.name.clone()), cpus.first().copied());
        let source = std::io::Error::from_raw_os_error(libc::EINVAL);
        return Err(RecordError::Open { event, cpu: cpu.unwrap_or(0), source });
    }
    let mut specs = specs.to_vec();
    for (i, s) in specs.iter_mut().enumerate() {
        if layout.raw {
            s.attr.sample_type |= sys::attr::sample::RAW;
        }
        if layout.user_regs != 0 {
            // The same registers for every event; a stack copy only for those that asked.
            s.attr.sample_type |= sys::attr::sample::REGS_USER;
            s.attr.sample_regs_user = layout.user_regs;
        }
        if layout.user_stack {
            s.attr.sample_type |= sys::attr::sample::STACK_USER;
        }
        if layout.cgroup {
            s.attr.sample_type |= sys::attr::sample::CGROUP;
            if i == 0 {
                s.attr.flags |= flag::CGROUP; // with the other side-band records
            }
        }
    }
    cpus.iter().map(|&cpu| open_cpu(&specs, cpu, pages, scope)).collect()
}

fn open_cpu(specs: &[EventSpec], cpu: u32, pages: usize, scope: &Scope) -> Result<PerCpu, RecordError> {
    let (pids, extra): (Vec<i32>, u64) = match scope {
        Scope::SystemWide => (vec![-1], 0),
        Scope::Tasks(tids) => (tids.iter().map(|&t| t as i32).collect(), flag::INHERIT),
        Scope::Threads(tids) => (tids.iter().map(|&t| t as i32).collect(), 0),
        Scope::ChildOnExec => (vec![0], flag::INHERIT | flag::ENABLE_ON_EXEC),
    };
    let mut fds = Vec::with_capacity(specs.len() * pids.len());
    for &pid in &pids {
        for (i, spec) in specs.iter().enumerate() {
            let mut attr = spec.attr;
            attr.flags |= extra;
            if i == 0 {
                attr.flags |= flag::MMAP | flag::MMAP2 | flag::COMM | flag::COMM_EXEC | flag::TASK;
            }
            match sys::perf_event_open(&attr, pid, cpu as i32) {
                Ok(fd) => fds.push(fd),
                // A thread that exited since it was listed.
                Err(e) if pid > 0 && e.raw_os_error() == Some(libc::ESRCH) => break,
                Err(source) => return Err(RecordError::Open { event: spec.name.clone(), cpu, source }),
            }
        }
    }
    let Some(first) = fds.first() else {
        return Err(RecordError::Unsupported("every target thread exited before recording started".into()));
    };
    let ring = Ring::map(first, pages).map_err(|source| RecordError::Io {
        what: format!("mapping the ring buffer of CPU {cpu}"),
        source,
    })?;
    for fd in &fds[1..] {
        sys::set_output(fd, &fds[0]).map_err(|source| RecordError::Io {
            what: format!("sharing the ring buffer of CPU {cpu}"),
            source,
        })?;
    }
    Ok(PerCpu { fds, ring })
}

/// The attribute every session event starts from: disabled, sampled with callchains,
/// CLOCK_MONOTONIC time stamps, identity on every record, woken every `watermark` bytes.
pub(crate) fn base_attr(type_: u32, config: u64, watermark: u32) -> PerfEventAttr {
    let mut a = PerfEventAttr::new(type_, config);
    a.sample_type = parse::SAMPLE_TYPE;
    a.flags |= flag::SAMPLE_ID_ALL | flag::USE_CLOCKID | flag::EXCLUDE_HV | flag::WATERMARK;
    a.clockid = sys::CLOCK_MONOTONIC;
    a.wakeup = watermark;
    a
}

/// The online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`).
pub(crate) fn online_cpus() -> Result<Vec<u32>, RecordError> {
    let path = "/sys/devices/system/cpu/online";
    let text = std::fs::read_to_string(path)
        .map_err(|source| RecordError::Io { what: format!("reading {path}"), source })?;
    parse_cpu_list(&text).ok_or_else(|| RecordError::Io {
        what: format!("reading {path}"),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("unexpected content `{}`", text.trim()),
        ),
    })
}

fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::sys::attr::{SW_CPU_CLOCK, TYPE_SOFTWARE};

    /// A one-page ring read while fast samples stream in: the buffer wraps around many
    /// times, and every record must still decode (a wrong head/tail or unwrap would show up
    /// as malformed records).
    #[test]
    #[allow(clippy::print_stderr)]
    fn tiny_ring_wraps_around_without_corrupting_records() {
        let mut attr = base_attr(TYPE_SOFTWARE, SW_CPU_CLOCK, 1024);
        attr.flags |= flag::FREQ;
        attr.sample_period_or_freq = 4000;
        let spec = EventSpec { name: "cpu-clock".into(), attr };
        let cpus = online_cpus().unwrap_or_else(|_| vec![0]);
        let mut session = match Session::open(&[spec], &cpus, 1, &Scope::SystemWide, false) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipping: perf_event_open is not available here ({e})");
                return;
            }
        };
        session.set_enabled(true).expect("enable");
        let mut samples = 0;
        let end = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        let mut spin = 0u64;
        while std::time::Instant::now() < end {
            for i in 0..200_000u64 {
                spin = spin.wrapping_add(i * i); // keep this CPU busy and sampled
            }
            let records = session.poll(0).expect("poll");
            samples += records.iter().filter(|r| matches!(r, Record::Sample(_))).count();
        }
        // Now stop reading for a while: the full buffer makes the kernel drop samples and
        // report them in a LOST record.
        let end = std::time::Instant::now() + std::time::Duration::from_millis(300);
        while std::time::Instant::now() < end {
            spin = spin.wrapping_add(spin >> 3 | 1);
        }
        // The kernel writes the LOST record with the first record it can write again, so
        // read once to make room, and let samples come for a moment more.
        let records = session.poll(0).expect("poll");
        samples += records.iter().filter(|r| matches!(r, Record::Sample(_))).count();
        let end = std::time::Instant::now() + std::time::Duration::from_millis(50);
        while std::time::Instant::now() < end {
            spin = spin.wrapping_add(spin >> 3 | 1);
        }
        let rest = session.finish();
        samples += rest.iter().filter(|r| matches!(r, Record::Sample(_))).count();
        assert!(spin > 0);
        assert_eq!(session.counters.malformed, 0);
        assert!(session.counters.lost > 0, "{:?}", session.counters);
        // One 4 KiB page holds about 20 samples with callchains: thousands of samples mean
        // the buffer wrapped many times.
        assert!(samples > 500, "{samples} samples, {:?}", session.counters);
    }

    /// Live: a cpu-clock event and a tracepoint in one session (the modes of one recording
    /// share it). Every record must decode with the one layout of the ring: the cpu-clock
    /// samples carry the empty raw field (4 zero bytes), the tracepoint's its data.
    #[test]
    #[allow(clippy::print_stderr)]
    fn live_cpu_clock_and_a_tracepoint_share_a_session() {
        use crate::record::sys::attr::{SW_CPU_CLOCK, TYPE_SOFTWARE, TYPE_TRACEPOINT, sample};
        use crate::record::tracefs::Tracefs;
        let tp = match Tracefs::open().and_then(|t| t.tracepoint("raw_syscalls:sys_enter")) {
            Ok(tp) => tp,
            Err(e) => {
                eprintln!("skipping: no tracepoint here ({e})");
                return;
            }
        };
        let mut cpu = base_attr(TYPE_SOFTWARE, SW_CPU_CLOCK, 1024);
        cpu.flags |= flag::FREQ;
        cpu.sample_period_or_freq = 997;
        let mut sys_enter = base_attr(TYPE_TRACEPOINT, tp.id, 1024);
        sys_enter.sample_type |= sample::RAW;
        sys_enter.sample_period_or_freq = 1;
        let specs = [
            EventSpec { name: "cpu-clock".into(), attr: cpu },
            EventSpec { name: "raw_syscalls:sys_enter".into(), attr: sys_enter },
        ];
        let scope = Scope::Threads(vec![own_tid()]);
        let mut session =
            match Session::open(&specs, &online_cpus().unwrap_or_else(|_| vec![0]), 16, &scope, false) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("skipping: perf_event_open is not available here ({e})");
                    return;
                }
            };
        session.set_enabled(true).expect("enable");
        let (mut cpu_samples, mut tp_samples, mut spin) = (0, 0, 0u64);
        let end = std::time::Instant::now() + std::time::Duration::from_millis(600);
        while std::time::Instant::now() < end {
            for i in 0..100_000u64 {
                spin = spin.wrapping_add(i * i);
            }
            let _ = std::fs::metadata("/"); // a system call
            for r in session.poll(0).expect("poll") {
                let Record::Sample(s) = r else { continue };
                match s.raw.get(..2).map(|t| u64::from(u16::from_le_bytes([t[0], t[1]]))) {
                    Some(t) if t == tp.id => tp_samples += 1,
                    _ if s.raw == [0, 0, 0, 0] => cpu_samples += 1,
                    _ => panic!("a sample of neither event: {s:?}"),
                }
            }
        }
        assert!(spin > 0);
        assert_eq!(session.counters.malformed, 0);
        assert!(
            cpu_samples > 20 && tp_samples > 20,
            "{cpu_samples} cpu-clock, {tp_samples} sys_enter samples"
        );
    }

    fn own_tid() -> u32 {
        std::fs::read_link("/proc/thread-self") // live: helper of the live tests above
            .ok()
            .and_then(|p| p.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()))
            .unwrap_or_else(std::process::id)
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-3,7"), Some(vec![0, 2, 3, 7]));
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list(""), None);
    }
}
