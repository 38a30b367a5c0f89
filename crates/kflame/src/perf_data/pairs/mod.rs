//! `--mode syscalls|offcpu|probes` on perf.data: each sample of a paired tracepoint
//! (`raw_syscalls:sys_enter`/`sys_exit`, `syscalls:sys_enter_X`/`sys_exit_X`,
//! `sched:sched_switch`, `perf probe` entry and `__return` probes) becomes a [`TraceEvent`]
//! with its payload printed as perf script prints it (from the raw data, with the field
//! offsets and the `prev_state` letters of the file's tracing-data formats) and its resolved
//! stack, and goes to the perf script text front end's own pairing
//! ([`crate::collapse::perf::pairs::PerfPairs`]): the folded output is that of
//! `perf script --ns | kflame collapse --mode M` on the same file.
//!
//! Payload limits: `syscalls:sys_enter_X` arguments are printed as numbers
//! (`fd: 0x00000003`), and probe arguments (`perf probe ... arg=%di`) are not printed; the
//! pairing reads neither.

mod payload;

use std::fmt;

use linux_perf_data::linux_perf_event_reader::{PerfEventType, SampleRecord};

use self::payload::Kind;
use super::machine::Machine;
use crate::collapse::events_json::EventLog;
use crate::collapse::outliers::OutlierLog;
use crate::collapse::pairing::{OTHER_EVENTS, TraceEvent};
use crate::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions, kinds};
use crate::collapse::{Collapse, Output};

/// What `--mode` pairs in a perf.data file, and the options of its folded output.
#[derive(Clone)]
pub struct Pairing {
    /// What to measure.
    pub mode: PairMode,
    /// Root frame with the task name (`comm-TID` when [`super::Options::include_pid`] or
    /// `include_tid` is set, as for perf script text).
    pub comm: bool,
    /// Root frame `cpu-N`.
    pub cpu: bool,
    /// Receives one JSON line per paired interval.
    pub events: Option<EventLog>,
    /// Keep only the N longest intervals (`--top N`), each as its own tower.
    pub top: Option<usize>,
    /// With `top`, receives each kept interval on its own.
    pub outliers: Option<OutlierLog>,
}

impl Pairing {
    /// Pairing in `mode` with every option off.
    pub fn new(mode: PairMode) -> Pairing {
        Pairing { mode, comm: false, cpu: false, events: None, top: None, outliers: None }
    }
}

impl fmt::Debug for Pairing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pairing")
            .field("mode", &self.mode)
            .field("comm", &self.comm)
            .field("cpu", &self.cpu)
            .field("events", &self.events.is_some())
            .field("top", &self.top)
            .field("outliers", &self.outliers.is_some())
            .finish()
    }
}

/// Names (`system:event`) and payload kinds of the recorded events, by attribute index.
fn event_kinds(perf_file: &linux_perf_data::PerfFile) -> Vec<(String, Kind)> {
    let formats = perf_file
        .feature_section_data(linux_perf_data::Feature::TRACING_DATA)
        .and_then(super::tracing::formats)
        .unwrap_or_default();
    let kind = |(i, a): (usize, &linux_perf_data::AttributeDescription)| {
        let name = a.name().map_or_else(|| format!("event{i}"), str::to_string);
        let format = match a.attributes().type_ {
            PerfEventType::Tracepoint(id) => formats.get(&id),
            _ => None,
        };
        let kind = Kind::of(&name, format);
        (name, kind)
    };
    perf_file.event_attributes().iter().enumerate().map(kind).collect()
}

/// The pairing state of one perf.data read.
pub(crate) struct Pairs {
    mode: PairMode,
    collapser: PerfPairs,
    /// Names and payload kinds of the recorded events, by attribute index.
    events: Vec<(String, Kind)>,
}

impl Pairs {
    /// Pairing of the events of `perf_file` as `p` and `opts` ask.
    pub(crate) fn new(p: &Pairing, opts: &super::Options, perf_file: &linux_perf_data::PerfFile) -> Pairs {
        let events = event_kinds(perf_file);
        let collapser_opts = PerfPairsOptions {
            mode: p.mode,
            comm: p.comm,
            pid: opts.include_pid || opts.include_tid,
            cpu: p.cpu,
            annotate_kernel: opts.annotate_kernel,
            annotate_jit: opts.annotate_jit,
            include_addrs: opts.include_addrs,
            mark_inlined: opts.mark_inlined,
            top: p.top,
        };
        let mut collapser = PerfPairs::new(collapser_opts, p.events.clone());
        if let Some(log) = &p.outliers {
            collapser = collapser.with_outliers(log.clone());
        }
        Pairs { mode: p.mode, collapser, events }
    }

    /// The event of sample `s` of event `attr` without its stack, or `None` (reported) when
    /// the mode does not use it or it cannot be read.
    pub(crate) fn event(
        &mut self,
        attr: usize,
        s: &SampleRecord<'_>,
        m: &Machine,
        at: Option<u64>,
        out: &mut Output,
    ) -> Option<TraceEvent> {
        let at = || super::at_byte(at);
        let (name, kind) = self.events.get(attr)?;
        if !kind.used_by(self.mode) {
            out.diag.note(OTHER_EVENTS, 0, || {
                format!("`{name}` samples are not used in this mode (choose another with --mode)")
            });
            return None;
        }
        let raw = s.raw.as_ref().map(|r| r.as_slice()).unwrap_or_default();
        let payload = match kind.print(&raw) {
            Ok(p) => p,
            Err(msg) => {
                out.diag
                    .skip("unreadable tracepoint payload", 0, || format!("`{name}` sample{}: {msg}", at()));
                return None;
            }
        };
        let Some(ts_ns) = s.timestamp else {
            out.diag.skip(kinds::NO_TIME, 0, || {
                format!(
                    "`{name}` samples without a time, the first{} (record them with perf record -T or a tracepoint)",
                    at()
                )
            });
            return None;
        };
        let tid = match s.tid.map(u32::try_from) {
            Some(Ok(t)) => t,
            // A thread perf could not name: sched_switch names its tasks itself.
            _ if self.mode == PairMode::OffCpu => 0,
            _ => {
                out.diag.skip(kinds::BAD_TID, 0, || format!("a `{name}` sample without a thread id{}", at()));
                return None;
            }
        };
        if s.cpu.is_none() {
            out.diag.note(kinds::NO_CPU, 0, || "samples without a CPU: their CPU is reported as 0".into());
        }
        let comm = m.comm(s.tid.unwrap_or(-1)).into_owned();
        let name = name.clone();
        Some(TraceEvent {
            ts_ns,
            cpu: s.cpu.unwrap_or(0),
            pid: tid,
            comm,
            name,
            payload,
            stack: Vec::new(),
            line: 0,
        })
    }

    /// Pairs `ev` with `stack` (folded frame texts, leaf first; empty ones are skipped as in
    /// the sample-counting output).
    pub(crate) fn feed<'a>(
        &mut self,
        mut ev: TraceEvent,
        stack: impl DoubleEndedIterator<Item = &'a [u8]>,
        out: &mut Output,
    ) {
        ev.stack =
            stack.rev().filter(|t| !t.is_empty()).map(|t| String::from_utf8_lossy(t).into_owned()).collect();
        let name = ev.name.clone();
        if !self.collapser.feed_event(ev, out) {
            out.diag.note(OTHER_EVENTS, 0, || {
                format!("a `{name}` sample whose payload this mode cannot pair (choose another with --mode)")
            });
        }
    }

    /// Closes the pairing: intervals still open are reported, the unit is nanoseconds.
    pub(crate) fn finish(mut self, out: &mut Output) {
        self.collapser.finish(out);
        out.meta = self.collapser.meta();
    }
}

#[cfg(test)]
mod tests;
