//! The programs as sources of kflame's recorder: each loader is an
//! [`Aggregator`](kflame::record::Aggregator) serving one mode of
//! [`Recorder::start_with`](kflame::record::Recorder::start_with), and [`check`] says what
//! this kernel allows, for `kflame record --check`.

use std::collections::HashMap;

use kflame::latency::{LatencyKind, LatencyReading, add_readings};
use kflame::record::{
    Aggregate, AggregateEvent, AggregateLoss, AggregateTask, Aggregator, Capability, Mode, Target,
};

use crate::budget::{CpuBudget, Governed};
use crate::{
    Bio, BpfError, LabelHistogram, Locks, OffCpu, OffCpuOptions, Runq, SyscallLatency, SyscallOptions,
    WaitLost, WaitOptions, Waited, device_name, device_numbers, lock_kind, syscall_name,
};

/// Starts the program that serves `mode` for `target` (its options from the mode's), or
/// `None` when no program serves that mode.
pub fn aggregator(mode: &Mode, target: &Target) -> Option<Result<Box<dyn Aggregator>, BpfError>> {
    let pid = match target {
        Target::Pids(p) if p.len() == 1 => Some(p[0]), // filtered in the kernel
        _ => None,                                     // filtered by the recorder
    };
    start(mode, WaitOptions { pid, ..WaitOptions::default() }, None)
}

/// The program serving `mode` with `opts` (for off-CPU, the mode's own options over them),
/// within a CPU budget when `governed`.
fn start(
    mode: &Mode,
    opts: WaitOptions,
    governed: Option<Governed>,
) -> Option<Result<Box<dyn Aggregator>, BpfError>> {
    match mode {
        Mode::OffCpu(o) => {
            let opts = OffCpuOptions {
                min_block_ns: u64::try_from(o.min_block.as_nanos()).unwrap_or(u64::MAX).max(1),
                max_block_ns: u64::MAX,
                // `prev_state` bits (S = 0x01, ...) to the kernel's state indexes (S = 1, ...).
                states: u64::from(o.states.0) << 1,
                idle_kthreads: o.idle_kthreads,
                wakers: o.wakers,
                pid: opts.pid,
                slow_ns: opts.slow_ns,
                histograms_only: opts.histograms_only,
                max_outliers: opts.max_outliers,
                slow_labels: opts.slow_labels.clone(),
                reuse_stacks_under_ns: opts.reuse_stacks_under_ns,
            };
            let outliers = opts.max_outliers > 0;
            Some(OffCpu::start(&opts).map(|p| {
                Box::new(OffCpuSource { p, governed, wakers: o.wakers, histograms: Vec::new(), outliers })
                    as Box<dyn Aggregator>
            }))
        }
        Mode::Locks | Mode::Runq | Mode::Bio => {
            let program = match mode {
                Mode::Locks => Locks::start(&opts).map(Program::Locks),
                Mode::Runq => Runq::start(&opts).map(Program::Runq),
                _ => Bio::start(&opts).map(Program::Bio),
            };
            let outliers = opts.max_outliers > 0;
            Some(program.map(|p| {
                Box::new(WaitSource {
                    p,
                    governed,
                    histograms: Vec::new(),
                    devices: HashMap::new(),
                    outliers,
                }) as Box<dyn Aggregator>
            }))
        }
        _ => None,
    }
}

/// Attaches or detaches the programs of `loaded` as the budget says (after a drain).
fn govern(governed: &Option<Governed>, loaded: &mut crate::drain::Loaded) -> Result<(), String> {
    match governed {
        Some(g) => g.tick(loaded).map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// Why no budget is kept, if so, as a loss line.
fn budget_lines(governed: &Option<Governed>) -> Vec<(String, u64)> {
    let why = governed.as_ref().and_then(Governed::unmeasured);
    why.map(|why| (format!("(no CPU budget kept: {why} could not be turned on)"), 1)).into_iter().collect()
}

/// Seconds detached to keep within the budget.
fn detached_secs(governed: &Option<Governed>) -> u64 {
    governed.as_ref().map_or(0, |g| g.detached().as_secs())
}

/// The thresholds over which the watcher's always-on programs count a wait as slow (ns).
#[derive(Clone, Debug, PartialEq)]
pub struct SlowThresholds {
    /// System calls (the calls of [`crate::WAITING_CALLS`] never, the calls of
    /// `syscall_labels` at their own).
    pub syscall: u64,
    /// System calls with thresholds of their own, by name.
    pub syscall_labels: Vec<(String, u64)>,
    /// Slow system calls and waits kept as outliers with their stacks, per CPU and second
    /// at most, for each program.
    pub max_outliers: u32,
    /// Block IOs.
    pub bio: u64,
    /// Run-queue waits.
    pub runq: u64,
    /// Off-CPU blocks.
    pub offcpu: u64,
    /// Kernel lock waits.
    pub lock: u64,
    /// Labels of the waiting-time families with thresholds of their own: (family, label as
    /// the program counts it ([`label_numbers`]), ns).
    pub labels: Vec<(LatencyKind, u32, u64)>,
    /// The share of one CPU the programs may take together ([`crate::budget`]: detached for
    /// part of each minute when they would take more); 0: no budget, always attached.
    pub cpu_budget: f64,
}

/// The numbers a program counts the label `name` of `kind` under: a lock kind's flags (all
/// the combinations [`lock_kind`] names so), a disk's `major << 20 | minor` (by its name in
/// `/sys/block`, or `MAJ:MIN`), a CPU's number (`cpu3`), a task state's index (`D`), a
/// system call's number; an error saying what was expected.
pub fn label_numbers(kind: LatencyKind, name: &str) -> Result<Vec<u32>, String> {
    let found: Vec<u32> = match kind {
        LatencyKind::Lock => (0..64).filter(|&f| lock_kind(f) == name).collect(),
        LatencyKind::Runq => name.strip_prefix("cpu").and_then(|n| n.parse().ok()).into_iter().collect(),
        LatencyKind::OffCpu => {
            "RSDTtXZPI".find(name).filter(|_| name.len() == 1).map(|i| i as u32).into_iter().collect()
        }
        LatencyKind::Bio => {
            let numbers = match name.split_once(':') {
                Some(_) => Some(name.to_string()),
                None if !name.is_empty() && !name.contains('/') && !name.contains('.') => {
                    std::fs::read_to_string(format!("/sys/block/{name}/dev")).ok()
                }
                None => None,
            };
            numbers
                .and_then(|t| {
                    let (major, minor) = t.trim().split_once(':')?;
                    Some((major.parse::<u32>().ok()? << 20) | minor.parse::<u32>().ok()?)
                })
                .into_iter()
                .collect()
        }
        LatencyKind::Syscall => crate::syscall_number(name).into_iter().collect(),
    };
    if found.is_empty() {
        let expected = match kind {
            LatencyKind::Lock => "a lock kind (spinlock, rwsem:W, mutex, ...)",
            LatencyKind::Runq => "a CPU (cpu0, cpu1, ...)",
            LatencyKind::OffCpu => "a task state (D, S, ...)",
            LatencyKind::Bio => "a disk in /sys/block (vda, nvme0n1), or MAJ:MIN",
            LatencyKind::Syscall => "a system call's name",
        };
        return Err(format!("{}:{name}: expected {expected}", kind.as_str()));
    }
    Ok(found)
}

/// Off-CPU blocks of the always-on profile following one of the same task shorter than this
/// reuse its stacks.
pub const REUSE_STACKS_UNDER_NS: u64 = 1_000_000;

/// Submitters' stacks the always-on IO program takes per CPU and second (its histograms need
/// none; its outliers are the IOs that had one).
pub const BIO_STACK_WALKS_PER_SEC: u32 = 64;

/// Starts the programs of the watcher's always-on latency and blocked time, for every task
/// but this process: system calls (histograms per call; each slow call an outlier with the
/// caller's user stack and where it waited, at most `slow.max_outliers` per CPU and
/// second), off-CPU blocks (`S`, `D`, `I`, idle kernel threads left out) and kernel lock
/// waits, with their stacks when `profiles` (the always-on off-CPU and lock profiles) or as
/// histograms only; run-queue and block IO latency as histograms only (no stack walk at every
/// switch or IO; the IO program takes its submitters' stacks within a budget, for its
/// outliers). Every program counts its latency histograms, waits over `slow` counted slow.
/// A program that does not start is returned with its error; the others run.
#[allow(clippy::type_complexity)]
pub fn always_on(
    profiles: bool,
    slow: &SlowThresholds,
) -> (Vec<(Mode, Box<dyn Aggregator>)>, Vec<(Mode, BpfError)>) {
    let (mut started, mut failed) = (Vec::new(), Vec::new());
    let budget = (slow.cpu_budget > 0.0).then(|| CpuBudget::new(slow.cpu_budget));
    let governed = || budget.as_ref().map(CpuBudget::governed);
    match syscall_outliers(slow, governed()) {
        Ok(a) => started.push((Mode::Syscalls, a)),
        Err(e) => failed.push((Mode::Syscalls, e)),
    }
    for (mode, slow_ns, histograms_only) in [
        (Mode::OffCpu(kflame::record::OffCpuOptions::default()), slow.offcpu, !profiles),
        (Mode::Locks, slow.lock, !profiles),
        (Mode::Runq, slow.runq, true),
        (Mode::Bio, slow.bio, true),
    ] {
        let family = match mode {
            Mode::OffCpu(_) => LatencyKind::OffCpu,
            Mode::Locks => LatencyKind::Lock,
            Mode::Runq => LatencyKind::Runq,
            _ => LatencyKind::Bio,
        };
        let slow_labels = slow.labels.iter().filter(|l| l.0 == family).map(|l| (l.1, l.2)).collect();
        let opts = WaitOptions {
            slow_ns,
            histograms_only,
            max_outliers: slow.max_outliers,
            slow_labels,
            // The profile folds what waited under a millisecond a bucket into one frame: a
            // task blocking shorter than that blocks where it did the last time, mostly.
            reuse_stacks_under_ns: REUSE_STACKS_UNDER_NS,
            stack_walks_per_sec: if matches!(mode, Mode::Bio) { BIO_STACK_WALKS_PER_SEC } else { 0 },
            ..WaitOptions::default()
        };
        match start(&mode, opts, governed()) {
            Some(Ok(a)) => started.push((mode, a)),
            Some(Err(e)) => failed.push((mode, e)),
            None => {}
        }
    }
    (started, failed)
}

/// The system-call program as the watcher runs it: histograms per call, outliers with their
/// stacks as events.
fn syscall_outliers(
    slow: &SlowThresholds,
    governed: Option<Governed>,
) -> Result<Box<dyn Aggregator>, BpfError> {
    let mut thresholds: Vec<(u32, u64)> =
        crate::waiting_calls().into_iter().map(|nr| (nr, u64::MAX)).collect();
    for (name, ns) in &slow.syscall_labels {
        if let Some(nr) = crate::syscall_number(name) {
            thresholds.retain(|(n, _)| *n != nr);
            thresholds.push((nr, *ns));
        }
    }
    let opts = SyscallOptions {
        pid: None,
        slow_ns: slow.syscall,
        skip_pid: Some(std::process::id()),
        thresholds,
        max_outliers: slow.max_outliers,
        // A block of a tenth of the lowest threshold (a call's own may be lower than the
        // family's) is worth its stack.
        wait_min_ns: (slow.syscall_labels.iter().map(|l| l.1).fold(slow.syscall, u64::min) / 10)
            .clamp(10_000, 1_000_000),
    };
    let p = SyscallLatency::start(&opts)?;
    Ok(Box::new(SyscallAggregator { p, governed, names: HashMap::new(), histograms: Vec::new() }))
}

struct SyscallAggregator {
    p: SyscallLatency,
    /// Its place in the always-on programs' CPU budget.
    governed: Option<Governed>,
    names: HashMap<u32, String>,
    histograms: Vec<LatencyReading>,
}

impl SyscallAggregator {
    fn name(&mut self, nr: u32) -> String {
        self.names.entry(nr).or_insert_with(|| syscall_name(nr)).clone()
    }
}

impl Aggregator for SyscallAggregator {
    fn drain(&mut self) -> Result<Vec<Aggregate>, String> {
        let calls = self.p.drain().map_err(|e| e.to_string())?;
        govern(&self.governed, self.p.loaded_mut())?;
        let more = calls
            .into_iter()
            .map(|c| LatencyReading {
                kind: LatencyKind::Syscall,
                label: self.name(c.nr),
                histogram: c.histogram,
                slow: c.slow,
            })
            .collect();
        add_readings(&mut self.histograms, more);
        let outliers = self.p.outliers();
        Ok(outliers
            .into_iter()
            .map(|o| Aggregate {
                above: Some(self.name(o.nr)),
                task: AggregateTask { pid: o.tgid, tid: o.tid, comm: o.comm, kernel: o.wait, user: o.user },
                ns: o.ns,
                count: 1,
                event: Some(AggregateEvent { end_ns: o.end_ns, cpu: o.cpu }),
                ..Aggregate::default()
            })
            .collect())
    }

    fn lost(&self) -> AggregateLoss {
        match self.p.lost() {
            Ok(l) => AggregateLoss {
                waits: l.histograms,
                stacks: 0,
                other: [
                    ("calls not timed: the kernel's map of calls in progress was full".into(), l.starts),
                    (
                        "slow calls not kept as outliers: over the bound per second, or their buffer full"
                            .into(),
                        l.outliers,
                    ),
                ]
                .into_iter()
                .chain(budget_lines(&self.governed))
                .collect(),
                detached_secs: detached_secs(&self.governed),
            },
            Err(e) => AggregateLoss {
                other: vec![(format!("(the loss counters could not be read: {e})"), 1)],
                ..AggregateLoss::default()
            },
        }
    }

    fn describe(&self) -> String {
        let waits = match self.p.takes_waits() {
            true => ", outliers with where they waited (BTF tracepoint sched_switch)",
            false => ", outliers without where they waited (no BTF tracepoints here)",
        };
        use kflame::record::features::{Feature, masked, masked_why};
        let masked_waits;
        let waits = match masked(Feature::BtfTracepoints) {
            true => {
                masked_waits =
                    format!(", outliers without where they waited ({})", masked_why(Feature::BtfTracepoints));
                masked_waits.as_str()
            }
            false => waits,
        };
        format!(
            "summed in the kernel by BPF (raw tracepoints sys_enter and sys_exit{waits}), read every second"
        )
    }

    fn histograms(&mut self) -> Vec<LatencyReading> {
        std::mem::take(&mut self.histograms)
    }

    fn keeps_events(&self) -> bool {
        true
    }
}

/// One of the waiting-time programs.
enum Program {
    Locks(Locks),
    Runq(Runq),
    Bio(Bio),
}

struct WaitSource {
    p: Program,
    /// Its place in the always-on programs' CPU budget.
    governed: Option<Governed>,
    /// Slow waits are kept as outliers (events of the recording).
    outliers: bool,
    /// Latency histograms drained and not yet taken, per label.
    histograms: Vec<LatencyReading>,
    /// Disk names by device number (`sda`, `vda`, `nvme0n1`; `MAJ:MIN` when unnamed).
    devices: HashMap<u32, String>,
}

impl WaitSource {
    /// The name of disk `dev` (`MAJ:MIN` when it has none).
    fn device(&mut self, dev: u32) -> String {
        self.devices
            .entry(dev)
            .or_insert_with(|| {
                device_name(dev).unwrap_or_else(|| {
                    let (major, minor) = device_numbers(dev);
                    format!("{major}:{minor}")
                })
            })
            .clone()
    }

    /// The histograms the program counted at its drains, labelled.
    fn take_histograms(&mut self) {
        let (kind, taken) = match &mut self.p {
            Program::Locks(p) => (LatencyKind::Lock, p.histograms()),
            Program::Runq(p) => (LatencyKind::Runq, p.histograms()),
            Program::Bio(p) => (LatencyKind::Bio, p.histograms()),
        };
        let more = taken
            .into_iter()
            .map(|LabelHistogram { label, histogram, slow }| LatencyReading {
                kind,
                label: self.label(label),
                histogram,
                slow,
            })
            .collect();
        add_readings(&mut self.histograms, more);
    }

    /// The name of a label of the program (`rwsem:W`, `cpu0`, `vda`).
    fn label(&mut self, on: u32) -> String {
        match &self.p {
            Program::Locks(_) => lock_kind(on).to_string(),
            Program::Runq(_) => format!("cpu{on}"),
            Program::Bio(_) => self.device(on),
        }
    }

    /// The outliers the program read at its drains, each an event under its label.
    fn take_outliers(&mut self) -> Vec<Aggregate> {
        let taken = match &mut self.p {
            Program::Locks(p) => p.outliers(),
            Program::Runq(p) => p.outliers(),
            Program::Bio(p) => p.outliers(),
        };
        taken
            .into_iter()
            .map(|o| {
                let label = self.label(o.on);
                outlier_aggregate(label, o)
            })
            .collect()
    }

    fn aggregate(&mut self, w: Waited) -> Aggregate {
        let (above, leaf) = match &self.p {
            Program::Locks(_) => (None, Some(format!("[{}]", lock_kind(w.on)))),
            Program::Runq(_) => (None, None),
            Program::Bio(_) => (Some(self.device(w.on)), None),
        };
        // An IO whose submitter was not seen (queued before recording started).
        let comm = match w.comm.is_empty() && w.tid == 0 {
            true => b"[submitter not seen]".to_vec(),
            false => w.comm,
        };
        Aggregate {
            task: AggregateTask { pid: w.tgid, tid: w.tid, comm, kernel: w.kernel, user: w.user },
            above,
            leaf,
            waker: None,
            ns: w.ns,
            count: w.count,
            event: None,
        }
    }
}

impl Aggregator for WaitSource {
    fn drain(&mut self) -> Result<Vec<Aggregate>, String> {
        let waited = match &mut self.p {
            Program::Locks(p) => p.drain(),
            Program::Bio(p) => p.drain(),
            Program::Runq(p) => p.drain(),
        }
        .map_err(|e| e.to_string())?;
        let loaded = match &mut self.p {
            Program::Locks(p) => p.loaded_mut(),
            Program::Bio(p) => p.loaded_mut(),
            Program::Runq(p) => p.loaded_mut(),
        };
        govern(&self.governed, loaded)?;
        self.take_histograms();
        let mut out: Vec<Aggregate> = waited.into_iter().map(|w| self.aggregate(w)).collect();
        out.extend(self.take_outliers());
        Ok(out)
    }

    fn keeps_events(&self) -> bool {
        self.outliers
    }

    fn lost(&self) -> AggregateLoss {
        let lost = match &self.p {
            Program::Locks(p) => p.lost(),
            Program::Runq(p) => p.lost(),
            Program::Bio(p) => p.lost(),
        };
        match lost {
            Ok(WaitLost { waits, stacks, starts, unmatched, histograms, outliers }) => AggregateLoss {
                waits,
                stacks,
                other: [
                    ("waits not timed: the kernel's map of waits in progress was full".into(), starts),
                    (
                        "IOs not attributed (a submitter not seen with -p, or never completed)".into(),
                        unmatched,
                    ),
                    (HISTOGRAMS_FULL.into(), histograms),
                    (OUTLIERS_LEFT.into(), outliers),
                ]
                .into_iter()
                .chain(budget_lines(&self.governed))
                .collect(),
                detached_secs: detached_secs(&self.governed),
            },
            Err(e) => AggregateLoss {
                other: vec![(format!("(the loss counters could not be read: {e})"), 1)],
                ..AggregateLoss::default()
            },
        }
    }

    fn describe(&self) -> String {
        let tps = match &self.p {
            Program::Locks(_) => "contention_begin and contention_end",
            Program::Runq(_) => "sched_wakeup, sched_wakeup_new and sched_switch",
            Program::Bio(_) => "block_bio_queue, block_rq_issue and block_rq_complete",
        };
        format!("summed in the kernel by BPF (raw tracepoints {tps}), read every second")
    }

    fn histograms(&mut self) -> Vec<LatencyReading> {
        std::mem::take(&mut self.histograms)
    }
}

/// Slow waits over the bound of outliers, as a loss line says them.
const OUTLIERS_LEFT: &str =
    "slow waits not kept as outliers: over the bound per second, or their buffer full";

/// What a full histogram map loses, as a loss line says it.
const HISTOGRAMS_FULL: &str = "waits not in a latency histogram: the kernel's histogram map was full";

/// The name of a task state as the kernel reports it (`__task_state_index`, as
/// [`crate::Blocked::state`] holds it): `R` (preempted while runnable), `S`, `D`, `T`, `t`,
/// `X`, `Z`, `P`, `I`.
pub fn state_name(state: u32) -> String {
    match "RSDTtXZPI".chars().nth(state as usize) {
        Some(c) => c.to_string(),
        None => format!("state{state}"),
    }
}

/// A slow wait kept on its own, as an event of the recording: its label first (as a slow
/// system call's name is), then the task and its stacks.
fn outlier_aggregate(label: String, o: crate::WaitOutlier) -> Aggregate {
    let comm = match o.comm.is_empty() && o.tid == 0 {
        true => b"[submitter not seen]".to_vec(),
        false => o.comm,
    };
    Aggregate {
        above: Some(label),
        task: AggregateTask { pid: o.tgid, tid: o.tid, comm, kernel: o.kernel, user: o.user },
        ns: o.ns,
        count: 1,
        event: Some(AggregateEvent { end_ns: o.end_ns, cpu: o.cpu }),
        ..Aggregate::default()
    }
}

struct OffCpuSource {
    p: OffCpu,
    /// Its place in the always-on programs' CPU budget.
    governed: Option<Governed>,
    wakers: bool,
    /// Slow blocks are kept as outliers (events of the recording).
    outliers: bool,
    /// Latency histograms drained and not yet taken, per state.
    histograms: Vec<LatencyReading>,
}

impl Aggregator for OffCpuSource {
    fn drain(&mut self) -> Result<Vec<Aggregate>, String> {
        let got = self.p.drain().map_err(|e| e.to_string())?;
        govern(&self.governed, self.p.loaded_mut())?;
        let more = self
            .p
            .histograms()
            .into_iter()
            .map(|h| LatencyReading {
                kind: LatencyKind::OffCpu,
                label: state_name(h.label),
                histogram: h.histogram,
                slow: h.slow,
            })
            .collect();
        add_readings(&mut self.histograms, more);
        Ok(got
            .into_iter()
            .map(|b| Aggregate {
                task: AggregateTask { pid: b.tgid, tid: b.tid, comm: b.comm, kernel: b.kernel, user: b.user },
                waker: b.waker.map(|w| AggregateTask {
                    pid: w.tgid,
                    tid: w.tid,
                    comm: w.comm,
                    kernel: w.kernel,
                    user: w.user,
                }),
                ns: b.ns,
                count: b.count,
                ..Aggregate::default()
            })
            .chain(self.p.outliers().into_iter().map(|o| outlier_aggregate(state_name(o.on), o)))
            .collect())
    }

    fn keeps_events(&self) -> bool {
        self.outliers
    }

    fn lost(&self) -> AggregateLoss {
        match self.p.lost() {
            Ok(l) => AggregateLoss {
                waits: l.blocks,
                stacks: l.stacks,
                other: [
                    ("blocks not timed: the kernel's map of blocked tasks was full".into(), l.starts),
                    ("blocks whose end the sched_switch tracepoint did not deliver (a task not of the fair class)".into(), l.ends_lost),
                    (HISTOGRAMS_FULL.into(), l.histograms),
                    (OUTLIERS_LEFT.into(), l.outliers),
                ]
                .into_iter()
                .chain(budget_lines(&self.governed))
                .collect(),
                detached_secs: detached_secs(&self.governed),
            },
            Err(e) => AggregateLoss {
                other: vec![(format!("(the loss counters could not be read: {e})"), 1)],
                ..AggregateLoss::default()
            },
        }
    }

    fn describe(&self) -> String {
        let tps = if self.wakers { "sched_switch and sched_waking" } else { "sched_switch" };
        format!("summed in the kernel by BPF (raw tracepoints {tps}), read every second")
    }

    fn histograms(&mut self) -> Vec<LatencyReading> {
        std::mem::take(&mut self.histograms)
    }
}

/// What this kernel allows of the programs: each is loaded, attached and dropped again.
pub fn check() -> Vec<Capability> {
    use kflame::record::features::{Feature, masked, masked_why};
    let btf = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
    let mut out = vec![Capability {
        name: "kernel BTF (/sys/kernel/btf/vmlinux, BPF CO-RE)".into(),
        available: btf && !masked(Feature::Bpf),
        detail: match (btf, masked(Feature::Bpf)) {
            (_, true) => format!("{}: the BPF modes are refused", masked_why(Feature::Bpf)),
            (true, false) => "present".into(),
            (false, false) => {
                "missing (CONFIG_DEBUG_INFO_BTF, Linux 5.4 or later): the BPF modes are refused".into()
            }
        },
    }];
    let tp_btf = btf && !masked(Feature::Bpf) && !masked(Feature::BtfTracepoints);
    out.push(Capability {
        name: "BPF on BTF tracepoints (tp_btf, bpf_get_task_stack)".into(),
        available: tp_btf,
        detail: match (tp_btf, masked(Feature::BtfTracepoints)) {
            (true, _) => "used for the stack of a slow system call's longest wait (Linux 5.9)".into(),
            (false, true) => {
                format!("{}: slow calls are kept without it", masked_why(Feature::BtfTracepoints))
            }
            (false, false) => "needs BTF and Linux 5.9: slow calls are kept without it".into(),
        },
    });
    let wakers = OffCpuOptions { wakers: true, ..OffCpuOptions::default() };
    let (available, detail) = match OffCpu::start(&wakers) {
        Ok(p) => {
            drop(p);
            (true, "loads and attaches (raw tracepoints sched_switch, sched_waking)".to_string())
        }
        Err(e) => {
            (false, format!("{e}; --off-cpu falls back to perf events (costlier), --wakers is refused"))
        }
    };
    out.push(Capability {
        name: "BPF off-CPU in the kernel (--off-cpu, --wakers)".into(),
        available,
        detail,
    });
    let opts = WaitOptions::default();
    for (name, tps, started) in [
        ("BPF lock contention (--locks)", "contention_begin, contention_end", Locks::start(&opts).map(drop)),
        (
            "BPF run-queue latency (--runq)",
            "sched_wakeup, sched_wakeup_new, sched_switch",
            Runq::start(&opts).map(drop),
        ),
        (
            "BPF block IO latency (--bio)",
            "block_bio_queue, block_rq_issue, block_rq_complete",
            Bio::start(&opts).map(drop),
        ),
    ] {
        let (available, detail) = match started {
            Ok(()) => (true, format!("loads and attaches (raw tracepoints {tps})")),
            Err(e) => (false, format!("{e}; this mode has no other path")),
        };
        out.push(Capability { name: name.into(), available, detail });
    }
    out
}

#[cfg(test)]
mod label_tests {
    use super::*;

    /// Each family's label names to the numbers its program counts; a wrong one says what was
    /// expected.
    #[test]
    fn label_names_to_the_programs_numbers() {
        assert_eq!(label_numbers(LatencyKind::Lock, "rwsem:W"), Ok(vec![0x04]));
        let spin = label_numbers(LatencyKind::Lock, "spinlock").unwrap();
        assert!(spin.contains(&0x01) && spin.iter().all(|&f| lock_kind(f) == "spinlock"));
        assert_eq!(label_numbers(LatencyKind::Runq, "cpu3"), Ok(vec![3]));
        assert_eq!(label_numbers(LatencyKind::OffCpu, "D"), Ok(vec![2]));
        assert_eq!(label_numbers(LatencyKind::Bio, "254:16"), Ok(vec![(254 << 20) | 16]));
        for (kind, name, expected) in [
            (LatencyKind::Lock, "rwsem", "expected a lock kind"),
            (LatencyKind::Runq, "3", "expected a CPU"),
            (LatencyKind::OffCpu, "DS", "expected a task state"),
            (LatencyKind::Bio, "../etc", "expected a disk"),
            (LatencyKind::Bio, "8:x", "expected a disk"),
        ] {
            let e = label_numbers(kind, name).unwrap_err();
            assert!(e.contains(expected) && e.contains(name), "{e}");
        }
    }
}
