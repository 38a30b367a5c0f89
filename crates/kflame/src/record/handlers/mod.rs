//! One handler per recording mode: which events to open, and what a sample means.

mod cpu;
mod mem;
mod offcpu;
mod syscalls;

use super::parse::{Record, Sample};
use super::session::{EventSpec, base_attr};
use super::stacks::Collector;
use super::sys::attr::{TYPE_TRACEPOINT, flag, sample};
use super::tasks::Tasks;
use super::tracefs::Tracefs;
use super::{Config, Mode, RecordError, StackParts};
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
    /// Events left unpaired when recording stopped (or that could not be paired).
    fn unpaired(&self) -> u64 {
        0
    }
    /// Samples added to the stacks.
    fn added(&self) -> u64;
    /// Remarks on how the events were interpreted, for the user.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The events to open and the handler of `config.mode`.
pub(crate) fn build(config: &Config) -> Result<(Vec<EventSpec>, Box<dyn Handler>), RecordError> {
    Ok(match &config.mode {
        Mode::Cpu { frequency } => cpu::build(*frequency, config.parts)?,
        Mode::Mem { kmalloc } => mem::build(&Tracefs::open()?, *kmalloc, config.parts)?,
        Mode::OffCpu => offcpu::build(&Tracefs::open()?, config.parts)?,
        Mode::Syscalls => syscalls::build(&Tracefs::open()?, config.parts)?,
        Mode::Blocked => return Err(RecordError::Unsupported("--blocked takes no perf events".into())),
    })
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

/// The `common_type` of raw tracepoint data: which tracepoint fired.
fn common_type(raw: &[u8]) -> Option<u64> {
    Some(u16::from_le_bytes([*raw.first()?, *raw.get(1)?]) as u64)
}
