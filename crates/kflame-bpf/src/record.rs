//! The programs as sources of kflame's recorder: each loader is an
//! [`Aggregator`](kflame::record::Aggregator) serving one mode of
//! [`Recorder::start_with`](kflame::record::Recorder::start_with), and [`check`] says what
//! this kernel allows, for `kflame record --check`.

use kflame::record::{Aggregate, AggregateLoss, AggregateTask, Aggregator, Capability, Mode, Target};

use crate::{BpfError, OffCpu, OffCpuOptions};

/// Starts the program that serves `mode` for `target` (its options from the mode's), or
/// `None` when no program serves that mode.
pub fn aggregator(mode: &Mode, target: &Target) -> Option<Result<Box<dyn Aggregator>, BpfError>> {
    let pid = match target {
        Target::Pids(p) if p.len() == 1 => Some(p[0]), // filtered in the kernel
        _ => None,                                     // filtered by the recorder
    };
    match mode {
        Mode::OffCpu(o) => {
            let opts = OffCpuOptions {
                min_block_ns: u64::try_from(o.min_block.as_nanos()).unwrap_or(u64::MAX).max(1),
                max_block_ns: u64::MAX,
                // `prev_state` bits (S = 0x01, ...) to the kernel's state indexes (S = 1, ...).
                states: u64::from(o.states.0) << 1,
                idle_kthreads: o.idle_kthreads,
                wakers: o.wakers,
                pid,
            };
            Some(
                OffCpu::start(&opts)
                    .map(|p| Box::new(OffCpuSource { p, wakers: o.wakers }) as Box<dyn Aggregator>),
            )
        }
        _ => None,
    }
}

struct OffCpuSource {
    p: OffCpu,
    wakers: bool,
}

impl Aggregator for OffCpuSource {
    fn drain(&mut self) -> Result<Vec<Aggregate>, String> {
        let got = self.p.drain().map_err(|e| e.to_string())?;
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
            .collect())
    }

    fn lost(&self) -> AggregateLoss {
        match self.p.lost() {
            Ok(l) => AggregateLoss {
                waits: l.blocks,
                stacks: l.stacks,
                other: vec![(
                    "blocks not timed: the kernel's map of blocked tasks was full".into(),
                    l.starts,
                )],
            },
            Err(e) => AggregateLoss {
                other: vec![(format!("(the loss counters could not be read: {e})"), 1)],
                ..AggregateLoss::default()
            },
        }
    }

    fn describe(&self) -> String {
        let tps = if self.wakers { "sched_switch and sched_waking" } else { "sched_switch" };
        format!("summed in the kernel by BPF (raw tracepoints {tps}), read once per window")
    }
}

/// What this kernel allows of the programs: each is loaded, attached and dropped again.
pub fn check() -> Vec<Capability> {
    let btf = std::path::Path::new("/sys/kernel/btf/vmlinux").exists();
    let mut out = vec![Capability {
        name: "kernel BTF (/sys/kernel/btf/vmlinux, BPF CO-RE)".into(),
        available: btf,
        detail: if btf {
            "present".into()
        } else {
            "missing (CONFIG_DEBUG_INFO_BTF, Linux 5.4 or later): the BPF modes are refused".into()
        },
    }];
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
    out
}
