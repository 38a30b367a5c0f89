//! CPU profiling: `cpu-clock` samples at a frequency on every CPU (no hardware counters are
//! needed, so it works in VMs without a PMU).

use super::{Handler, Sample};
use crate::fold::{Meta, Unit};
use crate::record::StackParts;
use crate::record::session::{EventSpec, base_attr};
use crate::record::stacks::Collector;
use crate::record::sys::attr::{SW_CPU_CLOCK, TYPE_SOFTWARE, flag};
use crate::record::tasks::Tasks;

pub(super) fn build(frequency: u32, parts: StackParts) -> (Vec<super::EventSpec>, Box<dyn Handler>) {
    let mut attr = base_attr(TYPE_SOFTWARE, SW_CPU_CLOCK, 64 << 10);
    attr.flags |= flag::FREQ;
    attr.sample_period_or_freq = u64::from(frequency.max(1));
    attr.flags |= match parts {
        StackParts::Both => 0,
        StackParts::KernelOnly => flag::EXCLUDE_USER | flag::EXCLUDE_CALLCHAIN_USER,
        StackParts::UserOnly => flag::EXCLUDE_KERNEL | flag::EXCLUDE_CALLCHAIN_KERNEL,
    };
    let spec = EventSpec { name: "cpu-clock".into(), attr };
    (vec![spec], Box::new(Cpu { added: 0 }))
}

struct Cpu {
    added: u64,
}

impl Handler for Cpu {
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        if !tasks.wanted(s.pid) {
            return;
        }
        let raw = out.raw(tasks, s.pid, s.tid, s.cpu, &s.chain);
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
