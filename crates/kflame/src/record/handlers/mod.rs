//! One handler per recording mode: which events to open, and what a sample means; and the
//! dispatch of one session's records to the handlers of the modes recorded together.

mod cpu;
mod mem;
mod offcpu;
mod syscalls;

use rustc_hash::FxHashMap;

use super::parse::{Record, Sample};
use super::session::{EventSpec, base_attr};
use super::stacks::Collector;
use super::sys::attr::{SW_DUMMY, TYPE_SOFTWARE, TYPE_TRACEPOINT, flag, sample};
use super::tasks::Tasks;
use super::tracefs::Tracefs;
use super::unwind::{LiveImages, UserUnwinder};
use super::{CallGraph, Config, Mode, RecordError, StackParts};
use crate::fold::Meta;

/// Interprets the samples of one mode.
pub(crate) trait Handler {
    /// Handles one sample (already in time order).
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector);
    /// Handles any other record (context switch, exit, ...), in the same time order as the
    /// samples, after `tasks` has applied it.
    fn side_band(&mut self, _r: &Record, _out: &mut Collector) {}
    /// Unit and event of the weights.
    fn meta(&self) -> Meta;
    /// Events left unpaired when recording stopped (or that could not be paired): the
    /// failures so far and the events still [`open`](Handler::open).
    fn unpaired(&self) -> u64 {
        0
    }
    /// Events begun and not ended yet (a task asleep, a thread inside a system call): they
    /// are added when they end, or count as unpaired if recording stops first.
    fn open(&self) -> u64 {
        0
    }
    /// Samples added to the stacks.
    fn added(&self) -> u64;
    /// Remarks on how the events were interpreted, for the user.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The events to open and the handler of one perf-based mode (`tfs` opened on first use).
fn build_one(
    mode: &Mode,
    config: &Config,
    tfs: &mut Option<Tracefs>,
) -> Result<(Vec<EventSpec>, Box<dyn Handler>), RecordError> {
    let tracefs = match mode {
        Mode::Mem { .. } | Mode::OffCpu(_) | Mode::Syscalls => match tfs {
            Some(t) => Some(&*t),
            None => Some(&*tfs.insert(Tracefs::open()?)),
        },
        Mode::Cpu { .. } | Mode::Blocked { .. } | Mode::Locks | Mode::Runq | Mode::Bio => None,
    };
    Ok(match (mode, tracefs) {
        (Mode::Cpu { frequency }, _) => cpu::build(*frequency, config.parts)?,
        (Mode::Mem { kmalloc }, Some(t)) => mem::build(t, *kmalloc, config.parts)?,
        (Mode::OffCpu(opts), Some(t)) => offcpu::build(t, config.parts, *opts)?,
        (Mode::Syscalls, Some(t)) => syscalls::build(t, config.parts)?,
        _ => return Err(RecordError::Unsupported(format!("{} takes no perf events", mode.name()))),
    })
}

/// A perf-based mode of a session: its handler and what it collected.
pub(crate) struct PerfKind {
    pub(crate) mode: Mode,
    pub(crate) handler: Box<dyn Handler>,
    pub(crate) collector: Collector,
}

/// The handlers of the perf-based modes recorded together, and which samples go to which:
/// a tracepoint sample to the mode that opened that tracepoint (its `common_type`), any other
/// sample (`cpu-clock`) to the CPU profile. Side-band records go to every mode.
pub(crate) struct Dispatch {
    pub(crate) kinds: Vec<PerfKind>,
    by_tracepoint: FxHashMap<u64, usize>,
    untyped: Option<usize>,
    /// Unwinds the user stacks copied with the samples (`--call-graph dwarf`).
    pub(crate) unwinder: Option<UserUnwinder>,
}

impl Dispatch {
    /// Hands one sample to the mode it belongs to. Samples without raw data, or with the
    /// empty raw field of a session that has tracepoints (type 0: no tracepoint has it), are
    /// `cpu-clock` samples.
    pub(crate) fn sample(&mut self, s: &mut Sample, tasks: &mut Tasks) {
        let to = match common_type(&s.raw) {
            None | Some(0) => self.untyped,
            Some(t) => self.by_tracepoint.get(&t).copied(),
        };
        let Some(i) = to else { return };
        if let Some(u) = &mut self.unwinder {
            u.complete(s, tasks);
        }
        let k = &mut self.kinds[i];
        k.handler.sample(s, tasks, &mut k.collector);
    }

    /// Hands a side-band record to every mode.
    pub(crate) fn side_band(&mut self, r: &Record) {
        for k in &mut self.kinds {
            k.handler.side_band(r, &mut k.collector);
        }
    }

    /// Samples added so far, all modes together.
    pub(crate) fn added(&self) -> u64 {
        self.kinds.iter().map(|k| k.handler.added()).sum()
    }
}

/// The events to open for every perf-based mode of `config` but those `served` otherwise
/// (by an aggregator), and their dispatch. When only served modes are left, one event that
/// samples nothing carries the task and mapping records their stacks are named with.
pub(crate) fn build(config: &Config, served: &[Mode]) -> Result<(Vec<EventSpec>, Dispatch), RecordError> {
    let mut tfs = None;
    let mut specs = Vec::new();
    let mut d =
        Dispatch { kinds: Vec::new(), by_tracepoint: FxHashMap::default(), untyped: None, unwinder: None };
    let perf = |m: &&Mode| !matches!(m, Mode::Blocked { .. }) && !served.contains(m);
    let mut copies = 0;
    for mode in config.modes.iter().filter(perf) {
        let (mut mine, handler) = build_one(mode, config, &mut tfs)?;
        if let Some(bytes) = stack_copy(mode, config) {
            for spec in mine.iter_mut() {
                copies = copies.max(ask_for_user_stack(&mut spec.attr, bytes));
            }
        }
        let i = d.kinds.len();
        for spec in &mine {
            if spec.attr.type_ == TYPE_TRACEPOINT {
                d.by_tracepoint.insert(spec.attr.config, i);
            } else if spec.attr.sample_period_or_freq != 0 {
                d.untyped = Some(i);
            }
        }
        specs.extend(mine);
        let collector = Collector::new(config.naming, config.keep_events, config.keep_samples);
        d.kinds.push(PerfKind { mode: mode.clone(), handler, collector });
    }
    if specs.is_empty() && !served.is_empty() {
        specs.push(task_records_spec());
    }
    if copies > 0 {
        d.unwinder = Some(UserUnwinder::new(Box::new(LiveImages), config.caches.unwind, copies));
    }
    Ok((specs, d))
}

/// The bytes of user stack each sample of `mode` copies for DWARF unwinding, if any (see
/// [`Config::call_graph`]).
fn stack_copy(mode: &Mode, config: &Config) -> Option<u32> {
    if config.parts == StackParts::KernelOnly {
        return None;
    }
    match (config.call_graph, mode) {
        (Some(CallGraph::Dwarf { stack_bytes }), _) => Some(stack_bytes),
        (None, Mode::Cpu { .. }) => Some(CallGraph::DEFAULT_STACK_BYTES),
        _ => None,
    }
}

/// Makes a sampling event's samples carry the user registers and `bytes` of user stack
/// instead of the kernel's frame-pointer walk of the user stack, as perf's `--call-graph
/// dwarf` does; says how many bytes it asked for (0 for an event that samples nothing or
/// takes no user stack).
pub(crate) fn ask_for_user_stack(attr: &mut super::sys::PerfEventAttr, bytes: u32) -> u32 {
    if attr.sample_period_or_freq == 0 || attr.flags & flag::EXCLUDE_CALLCHAIN_USER != 0 {
        return 0;
    }
    attr.sample_type |= sample::REGS_USER | sample::STACK_USER;
    attr.sample_regs_user = crate::unwind::USER_REGS_MASK;
    attr.sample_stack_user = bytes;
    attr.flags |= flag::EXCLUDE_CALLCHAIN_USER;
    bytes
}

/// A software dummy event: it samples nothing, but carries the task and mapping records.
fn task_records_spec() -> EventSpec {
    EventSpec {
        name: "task records (software dummy event)".into(),
        attr: base_attr(TYPE_SOFTWARE, SW_DUMMY, 1 << 20),
    }
}

/// A tracepoint event sampled on every occurrence, with callchains and raw data.
fn tracepoint_spec(id: u64, name: &str, parts: StackParts) -> EventSpec {
    let mut attr = base_attr(TYPE_TRACEPOINT, id, 1 << 20);
    attr.sample_type |= sample::RAW;
    attr.sample_period_or_freq = 1;
    attr.flags |= match parts {
        StackParts::Both => 0,
        StackParts::KernelOnly => flag::EXCLUDE_CALLCHAIN_USER,
        StackParts::UserOnly => flag::EXCLUDE_CALLCHAIN_KERNEL,
    };
    EventSpec { name: name.to_string(), attr }
}

/// Makes events that copy user stacks walk frame pointers instead (the kernel refused the
/// copies); says whether any did.
pub(crate) fn drop_user_stacks(specs: &mut [EventSpec]) -> bool {
    let mut any = false;
    for s in specs.iter_mut() {
        let a = &mut s.attr;
        if a.sample_type & sample::STACK_USER != 0 && a.sample_stack_user > 0 {
            a.flags &= !flag::EXCLUDE_CALLCHAIN_USER;
            any = true;
        }
        a.sample_type &= !(sample::REGS_USER | sample::STACK_USER);
        a.sample_regs_user = 0;
        a.sample_stack_user = 0;
    }
    any
}

/// The `common_type` of raw tracepoint data: which tracepoint fired.
fn common_type(raw: &[u8]) -> Option<u64> {
    Some(u16::from_le_bytes([*raw.first()?, *raw.get(1)?]) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::Unit;
    use crate::record::Naming;

    struct Count(u64);

    impl Handler for Count {
        fn sample(&mut self, _s: &Sample, _tasks: &mut Tasks, _out: &mut Collector) {
            self.0 += 1;
        }
        fn meta(&self) -> Meta {
            Meta::with_unit(Unit::Samples)
        }
        fn added(&self) -> u64 {
            self.0
        }
    }

    /// Tracepoint samples go to the mode that opened the tracepoint, cpu-clock samples (no raw
    /// data, or the empty raw field of a mixed session) to the CPU profile, others nowhere.
    #[test]
    fn samples_go_to_the_mode_of_their_event() {
        let kind = |mode| PerfKind {
            mode,
            handler: Box::new(Count(0)),
            collector: Collector::new(Naming::default(), false, false),
        };
        let mut d = Dispatch {
            kinds: vec![
                kind(Mode::Syscalls),
                kind(Mode::Cpu { frequency: 99 }),
                kind(Mode::Mem { kmalloc: false }),
            ],
            by_tracepoint: [(21, 0), (22, 0), (40, 2)].into_iter().collect(),
            untyped: Some(1),
            unwinder: None,
        };
        let mut tasks = Tasks::new(None);
        for raw in [&[21u8, 0, 1, 2][..], &[22, 0], &[0, 0, 0, 0], &[], &[40, 0, 9], &[41, 0]] {
            d.sample(&mut Sample { raw: raw.to_vec(), ..Sample::default() }, &mut tasks);
        }
        let added: Vec<u64> = d.kinds.iter().map(|k| k.handler.added()).collect();
        assert_eq!(added, [2, 2, 1]);
        assert_eq!(d.added(), 5);
    }
}
