//! `--check`: what this kernel lets `kflame record` use, probed for real (each event is
//! opened and closed again), and what to use instead when something is refused.

use super::CallGraph;
use super::handlers;
use super::session::base_attr;
use super::sys::{self, PerfEventAttr, attr};
use super::tracefs::Tracefs;

/// One line of the capability table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capability {
    /// What was probed.
    pub name: String,
    /// Whether it works here.
    pub available: bool,
    /// The kernel's answer, and what works instead when unavailable.
    pub detail: String,
}

const PERF_TYPE_HARDWARE: u32 = 0;

/// Probes every interface recording may use.
pub fn check() -> Vec<Capability> {
    let mut out = vec![
        probe_perf("cpu-clock sampling (CPU profiles)", attr::TYPE_SOFTWARE, attr::SW_CPU_CLOCK, ""),
        probe_perf(
            "hardware cycles",
            PERF_TYPE_HARDWARE,
            0,
            "CPU profiles use cpu-clock instead (the default)",
        ),
    ];
    out.push(user_stack_copies());
    out.push(switch_records());
    out.push(cgroup_ids());
    match Tracefs::open() {
        Ok(tfs) => {
            for (tp, used_by) in [
                ("kmem:mm_page_alloc", "--mem"),
                ("kmem:kmalloc", "--mem --kmalloc"),
                ("sched:sched_switch", "--off-cpu"),
                ("raw_syscalls:sys_enter", "--syscalls"),
                ("raw_syscalls:sys_exit", "--syscalls"),
                ("sched:sched_waking", "--wakers"),
                ("lock:contention_begin", "--locks"),
                ("lock:contention_end", "--locks"),
            ] {
                out.push(probe_tracepoint(&tfs, tp, used_by));
            }
        }
        Err(e) => out.push(Capability {
            name: "tracefs".into(),
            available: false,
            detail: crate::diag::error_chain(&e),
        }),
    }
    out.push(kprobes());
    out.push(proc_stacks());
    out.push(kallsyms());
    out
}

fn probe_perf(name: &str, type_: u32, config: u64, instead: &str) -> Capability {
    probe(name, &sampling(type_, config), instead)
}

/// A sampling event of `type_`/`config`, as the probes open it.
fn sampling(type_: u32, config: u64) -> PerfEventAttr {
    let mut a = base_attr(type_, config, 1);
    a.sample_period_or_freq = 1_000_000;
    a
}

/// Opens `a` on CPU 0 for every task (closed again at once); refused, the kernel's answer
/// and, unless empty, what works `instead`.
fn probe(name: &str, a: &PerfEventAttr, instead: &str) -> Capability {
    match sys::perf_event_open(a, -1, 0) {
        Ok(_) => Capability { name: name.into(), available: true, detail: "perf_event_open works".into() },
        Err(e) => Capability {
            name: name.into(),
            available: false,
            detail: if instead.is_empty() { e.to_string() } else { format!("{e}; {instead}") },
        },
    }
}

/// CPU samples copy the user stack for DWARF unwinding by default: the event a recording
/// opens for it.
fn user_stack_copies() -> Capability {
    let mut a = sampling(attr::TYPE_SOFTWARE, attr::SW_CPU_CLOCK);
    handlers::ask_for_user_stack(&mut a, CallGraph::DEFAULT_STACK_BYTES);
    probe(
        "user stack copies (--call-graph dwarf, the default for CPU samples)",
        &a,
        "user stacks walk frame pointers instead (--call-graph fp)",
    )
}

/// Samples carry their cgroup's id where the kernel gives it.
fn cgroup_ids() -> Capability {
    let mut a = sampling(attr::TYPE_SOFTWARE, attr::SW_CPU_CLOCK);
    a.sample_type |= super::sys::attr::sample::CGROUP;
    probe(
        "cgroup ids of samples (PERF_SAMPLE_CGROUP)",
        &a,
        "samples carry no cgroup (it needs Linux 5.7 or later)",
    )
}

/// `--off-cpu` ends each blocked interval at the task's switch-in record.
fn switch_records() -> Capability {
    let mut a = base_attr(attr::TYPE_SOFTWARE, attr::SW_DUMMY, 1);
    a.flags |= attr::flag::CONTEXT_SWITCH;
    probe(
        "context-switch records (--off-cpu switch-in times)",
        &a,
        "they need Linux 4.3 or later, and --off-cpu needs them",
    )
}

fn probe_tracepoint(tfs: &Tracefs, tp: &str, used_by: &str) -> Capability {
    let name = format!("tracepoint {tp} ({used_by})");
    match tfs.tracepoint(tp) {
        Ok(t) => {
            let mut c = probe_perf(&name, attr::TYPE_TRACEPOINT, t.id, "");
            if c.available {
                c.detail = format!("id {}, with callchains", t.id);
            }
            c
        }
        Err(e) => Capability { name, available: false, detail: e.to_string() },
    }
}

fn kprobes() -> Capability {
    let present = std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists();
    Capability {
        name: "kprobes / function tracer".into(),
        available: present,
        detail: if present {
            "kprobe PMU present (not used by kflame record)".into()
        } else {
            "not in this kernel; kflame record uses tracepoints and cpu-clock sampling only".into()
        },
    }
}

fn proc_stacks() -> Capability {
    let probed = super::blocked::Snapshots::probe();
    Capability {
        name: "/proc/PID/task/TID/stack (--blocked)".into(),
        available: probed.is_ok(),
        detail: match probed {
            Ok(()) => "readable".into(),
            Err(e) => format!("{e}; --blocked is refused"),
        },
    }
}

fn kallsyms() -> Capability {
    let name = "/proc/kallsyms addresses (kernel frame names)".to_string();
    let text = match super::sym::read_kallsyms() {
        Ok(t) => t,
        Err(e) => {
            let detail = format!("{e}; kernel frames are shown as [kernel.kallsyms]");
            return Capability { name, available: false, detail };
        }
    };
    let visible = text.lines().take(100).any(|l| !l.starts_with("0000000000000000"));
    Capability {
        name,
        available: visible,
        detail: if visible {
            "visible".into()
        } else {
            "hidden: run as root or set kernel.kptr_restrict=0".into()
        },
    }
}
