//! The kernel features kflame's live capture uses, the oldest mainline kernel that has each,
//! what needs it and what kflame does without it; and the one override of the probes,
//! `KFLAME_MASK_FEATURES`, which makes kflame act as a kernel without the features it names
//! (comma-separated keys of [`FEATURES`]). Old kernels cannot boot on every machine that
//! tests kflame: the mask is how each absence is tested here, and how a user sees on a new
//! kernel what kflame would do on an old one.
//!
//! A masked feature fails where the kernel would refuse it, at the lowest layer: the
//! `perf_event_open` call that asks for it answers `EINVAL` (or `ENOSYS` for perf events
//! themselves), a file the kernel would lack is not found, a BPF program is refused at load.
//! So the code paths that meet an old kernel are the ones the mask exercises.

use std::sync::OnceLock;

/// A feature of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// `perf_event_open` and the `cpu-clock` software event.
    PerfEvents,
    /// `PERF_SAMPLE_REGS_USER` and `PERF_SAMPLE_STACK_USER`: user stacks copied for DWARF
    /// unwinding.
    UserStackCopy,
    /// `PERF_RECORD_SWITCH`: context-switch records.
    ContextSwitch,
    /// `PERF_SAMPLE_CGROUP`: each sample's cgroup id.
    SampleCgroup,
    /// tracefs (or debugfs's `tracing`): tracepoint ids and formats.
    Tracefs,
    /// The memory tracepoints (`kmem:mm_page_alloc`, `kmem:kmalloc`).
    KmemTracepoints,
    /// `sched:sched_switch` (and the other scheduler tracepoints).
    SchedTracepoints,
    /// `raw_syscalls:sys_enter` and `sys_exit`.
    SyscallTracepoints,
    /// `lock:contention_begin` and `contention_end`.
    LockTracepoints,
    /// BPF programs on raw tracepoints, with global data, BTF (CO-RE) and ring buffers.
    Bpf,
    /// BPF programs on BTF tracepoints (`tp_btf`) with `bpf_get_task_stack`.
    BtfTracepoints,
    /// Pressure stall information, `/proc/pressure`.
    Psi,
    /// The kernel log device `/dev/kmsg`.
    Kmsg,
    /// The cgroup v2 hierarchy.
    CgroupV2,
    /// `/proc/PID/task/TID/stack`.
    ProcStack,
    /// `/proc/kallsyms` with addresses.
    Kallsyms,
}

/// What the table says of a feature.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    /// The feature.
    pub feature: Feature,
    /// Its key in `KFLAME_MASK_FEATURES`.
    pub key: &'static str,
    /// What it is, as the kernel names it.
    pub what: &'static str,
    /// The oldest mainline release that has it.
    pub since: &'static str,
    /// What in kflame uses it.
    pub used_by: &'static str,
    /// What kflame does without it.
    pub without: &'static str,
}

/// Every feature, in the order of the README's table.
pub const FEATURES: &[Info] = &[
    Info {
        feature: Feature::PerfEvents,
        key: "perf-events",
        what: "perf_event_open, cpu-clock sampling with call chains",
        since: "2.6.32",
        used_by: "record (every perf mode), watch's always-on CPU profile",
        without: "record refuses its perf modes, naming the call; watch records metrics, PSI and kernel reports without its CPU profile",
    },
    Info {
        feature: Feature::UserStackCopy,
        key: "user-stack-copy",
        what: "PERF_SAMPLE_REGS_USER + PERF_SAMPLE_STACK_USER",
        since: "3.7",
        used_by: "--call-graph dwarf (the default for CPU samples)",
        without: "user stacks walk frame pointers, with a note",
    },
    Info {
        feature: Feature::ContextSwitch,
        key: "context-switch",
        what: "PERF_RECORD_SWITCH (attr.context_switch)",
        since: "4.3",
        used_by: "--off-cpu by perf events (switch-in times)",
        without: "--off-cpu takes the BPF path where it loads (not for an event per block: JSON events, flame charts); else it is refused naming the record",
    },
    Info {
        feature: Feature::SampleCgroup,
        key: "sample-cgroup",
        what: "PERF_SAMPLE_CGROUP",
        since: "5.7",
        used_by: "the cgroup of each sample watch stores (query --cgroup, the page's cgroup filter)",
        without: "samples carry no cgroup, with a note",
    },
    Info {
        feature: Feature::Tracefs,
        key: "tracefs",
        what: "tracefs (or debugfs's tracing directory)",
        since: "2.6.31 (tracefs itself 4.1)",
        used_by: "tracepoint ids and formats of --mem, --off-cpu, --syscalls",
        without: "the tracepoint modes are refused naming tracefs; CPU profiles, --blocked and BPF modes work",
    },
    Info {
        feature: Feature::KmemTracepoints,
        key: "kmem-tracepoints",
        what: "kmem:mm_page_alloc, kmem:kmalloc",
        since: "2.6.32",
        used_by: "--mem, watch's mem captures",
        without: "--mem is refused naming the tracepoint",
    },
    Info {
        feature: Feature::SchedTracepoints,
        key: "sched-tracepoints",
        what: "sched:sched_switch, sched_waking (4.3), sched_wakeup",
        since: "2.6.32",
        used_by: "--off-cpu, --wakers, --runq; watch's syscall, run-queue and off-CPU latency",
        without: "--off-cpu is refused naming the tracepoint; watch records none of those latencies, a line for each",
    },
    Info {
        feature: Feature::SyscallTracepoints,
        key: "syscall-tracepoints",
        what: "raw_syscalls:sys_enter, raw_syscalls:sys_exit",
        since: "2.6.33",
        used_by: "--syscalls, watch's syscall latency",
        without: "--syscalls is refused naming the tracepoint",
    },
    Info {
        feature: Feature::LockTracepoints,
        key: "lock-tracepoints",
        what: "lock:contention_begin, lock:contention_end",
        since: "5.19",
        used_by: "--locks",
        without: "--locks is refused naming the tracepoints",
    },
    Info {
        feature: Feature::Bpf,
        key: "bpf",
        what: "BPF raw tracepoint programs (4.17), global data (5.2), vmlinux BTF (5.4), ring buffers (5.8)",
        since: "5.8",
        used_by: "aggregation in the kernel: --off-cpu --wakers, --locks, --runq, --bio, watch's latency histograms",
        without: "record --off-cpu falls back to perf events (saying so); --wakers, --locks, --runq, --bio are refused; watch records no latency histograms, a line for each",
    },
    Info {
        feature: Feature::BtfTracepoints,
        key: "btf-tracepoints",
        what: "BPF on BTF tracepoints (tp_btf, 5.5) with bpf_get_task_stack (5.9)",
        since: "5.9",
        used_by: "the kernel stack of a slow system call's longest wait",
        without: "slow calls are kept without the stack of their wait",
    },
    Info {
        feature: Feature::Psi,
        key: "psi",
        what: "pressure stall information, /proc/pressure",
        since: "4.20",
        used_by: "watch's psi.* metrics and rules on them",
        without: "psi.* metrics are not recorded, with a line",
    },
    Info {
        feature: Feature::Kmsg,
        key: "kmsg",
        what: "/dev/kmsg",
        since: "3.5",
        used_by: "watch's kernel reports (oops, WARNING, hung task, ...) and report rules",
        without: "no kernel reports are stored, with a line; everything else is recorded",
    },
    Info {
        feature: Feature::CgroupV2,
        key: "cgroup2",
        what: "the cgroup v2 hierarchy (unified, or hybrid beside v1)",
        since: "4.5",
        used_by: "cgroup names of samples",
        without: "samples carry no cgroup name",
    },
    Info {
        feature: Feature::ProcStack,
        key: "proc-stack",
        what: "/proc/PID/task/TID/stack",
        since: "2.6.29",
        used_by: "--blocked (the kernel stacks of blocked tasks)",
        without: "--blocked is refused naming the file",
    },
    Info {
        feature: Feature::Kallsyms,
        key: "kallsyms",
        what: "/proc/kallsyms with addresses",
        since: "2.6",
        used_by: "kernel frame names",
        without: "kernel frames are shown as [kernel.kallsyms], with a note",
    },
];

/// The table's line of `f`.
pub fn info(f: Feature) -> &'static Info {
    FEATURES.iter().find(|i| i.feature == f).unwrap_or(&FEATURES[0])
}

/// The mask of the environment: its known features, and the names it gave that are none.
fn mask() -> &'static (Vec<Feature>, Vec<String>) {
    static MASK: OnceLock<(Vec<Feature>, Vec<String>)> = OnceLock::new();
    MASK.get_or_init(|| parse_mask(&std::env::var("KFLAME_MASK_FEATURES").unwrap_or_default()))
}

/// Parses a mask's text: comma- or space-separated keys.
pub fn parse_mask(text: &str) -> (Vec<Feature>, Vec<String>) {
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for k in text.split([',', ' ']).map(str::trim).filter(|k| !k.is_empty()) {
        match FEATURES.iter().find(|i| i.key == k) {
            Some(i) => known.push(i.feature),
            None => unknown.push(k.to_string()),
        }
    }
    (known, unknown)
}

/// True when `KFLAME_MASK_FEATURES` names `f`: kflame acts as a kernel without it.
pub fn masked(f: Feature) -> bool {
    mask().0.contains(&f)
}

/// The features masked, and the names of the mask that are no feature (to be warned about).
pub fn mask_in_force() -> (&'static [Feature], &'static [String]) {
    let m = mask();
    (&m.0, &m.1)
}

/// Why a masked feature is missing, for messages: `masked by KFLAME_MASK_FEATURES=KEY`.
pub fn masked_why(f: Feature) -> String {
    format!("masked by KFLAME_MASK_FEATURES={}", info(f).key)
}

/// The error a kernel without `f` gives where kflame asks for it (`EINVAL` for a sample
/// type or record the kernel does not know, `ENOSYS` for a missing call, `ENOENT` for a
/// missing file), its text saying it is masked.
pub fn masked_error(f: Feature) -> std::io::Error {
    let errno = match f {
        Feature::PerfEvents | Feature::Bpf | Feature::BtfTracepoints => libc::ENOSYS,
        Feature::UserStackCopy | Feature::ContextSwitch | Feature::SampleCgroup => libc::EINVAL,
        _ => libc::ENOENT,
    };
    let kind = std::io::Error::from_raw_os_error(errno).kind();
    std::io::Error::new(kind, Masked { errno, feature: f })
}

/// The error of a masked feature: the errno the kernel would give, and why.
#[derive(Debug)]
pub struct Masked {
    /// What a kernel without the feature answers.
    pub errno: i32,
    /// The feature masked.
    pub feature: Feature,
}

impl std::fmt::Display for Masked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, {}", std::io::Error::from_raw_os_error(self.errno), masked_why(self.feature))
    }
}

impl std::error::Error for Masked {}

/// The errno of an error: the system's, or the one a masked feature stands for (so that code
/// deciding on errnos runs on a mask as on a real old kernel).
pub fn errno_of(e: &std::io::Error) -> Option<i32> {
    e.raw_os_error().or_else(|| e.get_ref().and_then(|i| i.downcast_ref::<Masked>()).map(|m| m.errno))
}

/// The feature whose tracepoints hold `group:name`, if it is one of the table's.
pub fn tracepoint_feature(full: &str) -> Option<Feature> {
    match full.split_once(':').map_or(full, |(g, _)| g) {
        "kmem" => Some(Feature::KmemTracepoints),
        "sched" => Some(Feature::SchedTracepoints),
        "raw_syscalls" => Some(Feature::SyscallTracepoints),
        "lock" => Some(Feature::LockTracepoints),
        _ => None,
    }
}

/// The feature whose tracepoints hold the raw tracepoint `name` (no group: `sys_enter`).
pub fn raw_tracepoint_feature(name: &str) -> Option<Feature> {
    match name {
        "sys_enter" | "sys_exit" => Some(Feature::SyscallTracepoints),
        n if n.starts_with("contention_") => Some(Feature::LockTracepoints),
        n if n.starts_with("sched_") => Some(Feature::SchedTracepoints),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_has_one_line_and_a_key() {
        let mut keys: Vec<&str> = FEATURES.iter().map(|i| i.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), FEATURES.len());
        for i in FEATURES {
            assert_eq!(info(i.feature).key, i.key);
            assert!(!i.since.is_empty() && !i.without.is_empty());
        }
    }

    /// The README's table is this one: a line per feature, with its release and key.
    #[test]
    fn the_readme_table_is_the_feature_table() {
        let readme = include_str!("../../../../README.md");
        let section = readme.split("\n## Old kernels").nth(1).expect("the README's section on old kernels");
        let section = section.split("\n## ").next().unwrap_or(section);
        let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| ") && l.ends_with("` |")).collect();
        assert_eq!(rows.len(), FEATURES.len(), "{rows:#?}");
        for (row, i) in rows.iter().zip(FEATURES) {
            let want = format!("| {} | {} | {} | {} | `{}` |", i.what, i.since, i.used_by, i.without, i.key);
            assert_eq!(*row, want);
        }
    }

    #[test]
    fn masks_parse_keys_and_keep_unknown_names() {
        let (known, unknown) = parse_mask("psi, kmsg,,sample-cgroup nope");
        assert_eq!(known, [Feature::Psi, Feature::Kmsg, Feature::SampleCgroup]);
        assert_eq!(unknown, ["nope"]);
        assert_eq!(tracepoint_feature("lock:contention_begin"), Some(Feature::LockTracepoints));
        assert_eq!(tracepoint_feature("block:block_rq_issue"), None);
        let e = masked_error(Feature::SampleCgroup);
        assert_eq!(errno_of(&e), Some(libc::EINVAL));
        let e = e.to_string();
        assert!(e.contains("Invalid argument") && e.contains("KFLAME_MASK_FEATURES=sample-cgroup"), "{e}");
    }
}
