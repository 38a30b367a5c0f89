//! `--call-graph dwarf` samples: the user stack copied at sample time, unwound in-process
//! with the binaries' `.eh_frame` / `.debug_frame` tables (framehop), as perf does with
//! libdw. Caller frames are looked up at `return address - 1`, the address perf prints.

use framehop::Unwinder as _;
use linux_perf_data::linux_perf_event_reader::SampleRecord;
use rustc_hash::FxHashMap;

use super::dso::DsoId;
use super::machine::Machine;
use super::resolve::Resolver;
use crate::unwind::{self, Cache, End, REG_BP, REG_IP, REG_SP, Regs, Tables, Unwinder};

/// Per-process unwinders (rebuilt when the process maps something new) and per-binary
/// unwind tables.
#[derive(Default)]
pub(crate) struct Unwinders {
    per_pid: FxHashMap<i32, (u64, Unwinder)>,
    tables: FxHashMap<DsoId, Option<Tables>>,
    cache: Option<Box<Cache>>,
}

impl Unwinders {
    /// Appends the user frames of a DWARF sample to `frames`, at most `max` of them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn unwind(
        &mut self,
        s: &SampleRecord<'_>,
        pid: i32,
        java: bool,
        machine: &Machine,
        resolver: &mut Resolver,
        frames: &mut Vec<u32>,
        max: usize,
    ) {
        let (Some(regs), Some((stack, dyn_size))) = (&s.user_regs, &s.user_stack) else { return };
        let reg = |r: u32| regs.get(u64::from(r));
        let (Some(ip), Some(sp), Some(bp)) = (reg(REG_IP), reg(REG_SP), reg(REG_BP)) else {
            return;
        };
        let stack = stack.as_slice();
        let stack = &stack[..(*dyn_size as usize).min(stack.len())];
        self.ensure_unwinder(pid, machine, resolver);
        let Some((_, unwinder)) = self.per_pid.get(&pid) else { return };
        let cache = self.cache.get_or_insert_with(|| Box::new(Cache::new()));
        let mut n = 0;
        let w = unwind::walk(unwinder, cache, Regs { ip, sp, bp }, stack, max, |addr| {
            n += 1;
            frames.push(resolver.unwound_frame(machine, pid, addr, java));
            true
        });
        // A return address of 0, or one outside the copied stack (read as 0), is still a
        // frame for perf (libdw), at address 0 - 1.
        let lost = w.end == End::NullReturn || (w.end == End::Complete && w.outside);
        if lost && n < max {
            frames.push(resolver.unwound_frame(machine, pid, u64::MAX, java));
        }
    }

    fn ensure_unwinder(&mut self, pid: i32, machine: &Machine, resolver: &mut Resolver) {
        let Some(space) = machine.space(pid) else { return };
        if self.per_pid.get(&pid).is_some_and(|(g, _)| *g == space.generation) {
            return;
        }
        let mut unwinder = Unwinder::new();
        for m in space.maps.mappings() {
            let Some(info) = self.table(m.object, resolver) else { continue };
            let name = resolver.dsos.get(m.object).name.clone();
            if let Some(module) = info.module(name, m.start, m.end, m.pgoff) {
                unwinder.add_module(module);
            }
        }
        self.per_pid.insert(pid, (space.generation, unwinder));
    }

    fn table(&mut self, dso: DsoId, resolver: &mut Resolver) -> Option<Tables> {
        if let Some(t) = self.tables.get(&dso) {
            return t.clone();
        }
        let t = resolver.dsos.image(dso).and_then(|file| Tables::read(&**file, |_| None));
        self.tables.insert(dso, t.clone());
        t
    }
}
