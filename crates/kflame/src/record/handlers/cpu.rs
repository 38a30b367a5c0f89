//! CPU profiling: `cpu-clock` samples at a frequency on every CPU (no hardware counters are
//! needed, so it works in VMs without a PMU).

use super::{Handler, Sample};
use crate::fold::{Meta, Unit};
use crate::record::session::{EventSpec, base_attr};
use crate::record::stacks::Collector;
use crate::record::sys::attr::{SW_CPU_CLOCK, TYPE_SOFTWARE, flag};
use crate::record::tasks::Tasks;
use crate::record::{RecordError, StackParts};

/// The kernel's limit on `-F` (`kernel.perf_event_max_sample_rate`).
const MAX_RATE: &str = "/proc/sys/kernel/perf_event_max_sample_rate";

pub(super) fn build(
    frequency: u32,
    parts: StackParts,
) -> Result<(Vec<super::EventSpec>, Box<dyn Handler>), RecordError> {
    let max = std::fs::read_to_string(MAX_RATE).ok().and_then(|s| s.trim().parse::<u32>().ok());
    if let Some(max) = max.filter(|m| frequency > *m) {
        return Err(RecordError::Unsupported(format!(
            "-F {frequency} is above this kernel's limit of {max} samples per second ({MAX_RATE})"
        )));
    }
    let mut attr = base_attr(TYPE_SOFTWARE, SW_CPU_CLOCK, 64 << 10);
    attr.flags |= flag::FREQ;
    attr.sample_period_or_freq = u64::from(frequency.max(1));
    attr.flags |= match parts {
        StackParts::Both => 0,
        StackParts::KernelOnly => flag::EXCLUDE_USER | flag::EXCLUDE_CALLCHAIN_USER,
        StackParts::UserOnly => flag::EXCLUDE_KERNEL | flag::EXCLUDE_CALLCHAIN_KERNEL,
    };
    let spec = EventSpec { name: "cpu-clock".into(), attr };
    Ok((vec![spec], Box::new(Cpu { added: 0 })))
}

struct Cpu {
    added: u64,
}

impl Handler for Cpu {
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        if !tasks.wanted(s.pid, s.tid) {
            return;
        }
        let raw = out.raw(tasks, s);
        out.add(s.time, raw, 1, Some(s.period));
        self.added += 1;
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) }
    }

    fn added(&self) -> u64 {
        self.added
    }
}
