//! System call latency: `raw_syscalls:sys_enter` and `sys_exit` paired per thread; the time
//! between them is added to the stack at entry, under a root frame naming the call.

use rustc_hash::FxHashMap;

use super::{Handler, Record, Sample, common_type, tracepoint_spec};
use crate::collapse::pairing::syscall_name_x86_64;
use crate::fold::{Meta, Unit};
use crate::record::stacks::{Collector, RawStack};
use crate::record::sys::attr::flag;
use crate::record::tasks::Tasks;
use crate::record::tracefs::{Field, Tracefs};
use crate::record::{RecordError, StackParts};

const ENTER: &str = "raw_syscalls:sys_enter";
const EXIT: &str = "raw_syscalls:sys_exit";

pub(super) fn build(
    tfs: &Tracefs,
    parts: StackParts,
) -> Result<(Vec<super::EventSpec>, Box<dyn Handler>), RecordError> {
    let enter = tfs.tracepoint(ENTER)?;
    let exit = tfs.tracepoint(EXIT)?;
    let mut exit_spec = tracepoint_spec(exit.id, EXIT, parts);
    // The stack at entry is the one reported; the exit needs none (an empty callchain keeps
    // the record layout of every event the same).
    exit_spec.attr.flags |= flag::EXCLUDE_CALLCHAIN_KERNEL | flag::EXCLUDE_CALLCHAIN_USER;
    let h = Syscalls {
        enter_id: enter.id,
        exit_id: exit.id,
        enter_nr: enter.field("id")?,
        exit_nr: exit.field("id")?,
        inside: FxHashMap::default(),
        added: 0,
        unpaired: 0,
    };
    Ok((vec![tracepoint_spec(enter.id, ENTER, parts), exit_spec], Box::new(h)))
}

struct Syscalls {
    enter_id: u64,
    exit_id: u64,
    enter_nr: Field,
    exit_nr: Field,
    /// Threads inside a system call: (number, entry time, stack at entry).
    inside: FxHashMap<u32, (i64, u64, RawStack)>,
    added: u64,
    unpaired: u64,
}

impl Syscalls {
    fn enter(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        let Some(nr) = self.enter_nr.read(&s.raw) else { return };
        let mut stack = out.raw(tasks, s);
        let name = u32::try_from(nr)
            .ok()
            .and_then(syscall_name_x86_64)
            .map_or_else(|| format!("syscall_{nr}"), str::to_string);
        stack.prefix = Some(name.into_bytes().into());
        if self.inside.insert(s.tid, (nr, s.time, stack)).is_some() {
            self.unpaired += 1; // an entry whose exit we never saw (restart, exec, lost)
        }
    }

    fn exit(&mut self, s: &Sample, out: &mut Collector) {
        let nr = self.exit_nr.read(&s.raw);
        match self.inside.remove(&s.tid) {
            Some((enr, since, stack)) if Some(enr) == nr => {
                let latency = s.time.saturating_sub(since);
                out.add(since, stack, latency, Some(latency));
                self.added += 1;
            }
            _ => self.unpaired += 1,
        }
    }
}

impl Handler for Syscalls {
    fn sample(&mut self, s: &Sample, tasks: &mut Tasks, out: &mut Collector) {
        if !tasks.wanted(s.pid, s.tid) {
            return;
        }
        match common_type(&s.raw) {
            Some(t) if t == self.enter_id => self.enter(s, tasks, out),
            Some(t) if t == self.exit_id => self.exit(s, out),
            _ => {}
        }
    }

    /// A thread that exits inside a system call (`exit_group` never returns) is forgotten:
    /// counted as unpaired now rather than kept open for the rest of the recording.
    fn side_band(&mut self, r: &Record, _out: &mut Collector) {
        if let Record::Exit { tid, .. } = r
            && self.inside.remove(tid).is_some()
        {
            self.unpaired += 1;
        }
    }

    fn meta(&self) -> Meta {
        Meta { unit: Unit::Nanoseconds, event: Some("raw_syscalls:sys_enter,sys_exit".into()) }
    }

    fn unpaired(&self) -> u64 {
        self.unpaired + self.inside.len() as u64
    }

    fn open(&self) -> u64 {
        self.inside.len() as u64
    }

    fn added(&self) -> u64 {
        self.added
    }
}
