//! The catalog of the metrics the watcher records: each metric's name, unit, labels, chart
//! group and meaning, written once. The watcher checks rule names against it and prints it
//! in `kflame watch --help`; a server sends it to its page (`/api/info`), which draws one
//! chart per group with the group's title, in the order of [`GROUPS`], and formats values in
//! the metric's unit.

/// One metric of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricInfo {
    /// The name rules and queries use.
    pub name: &'static str,
    /// Unit of the value: `%`, `bytes`, `bytes/s`, `ms`, `ms/s`, `/s`, `tasks`, `requests`.
    pub unit: &'static str,
    /// Labels it carries: `total+cpu` (the machine and each CPU), `total`, `device`,
    /// `total+call` (all system calls and each busy one by name), `total+device` (all disks
    /// and each), `total+state` (every task state and each), `total+lock` (every lock kind
    /// and each).
    pub labels: &'static str,
    /// The chart it is drawn in (a key of [`GROUPS`]): metrics of one group share a unit.
    pub group: &'static str,
    /// What it measures, and from where.
    pub meaning: &'static str,
}

macro_rules! m {
    ($n:expr, $u:expr, $l:expr, $g:expr, $m:expr) => {
        MetricInfo { name: $n, unit: $u, labels: $l, group: $g, meaning: $m }
    };
}

/// Every metric the watcher records: name, unit, labels, chart group, meaning.
pub const METRICS: &[MetricInfo] = &[
    m!("cpu", "%", "total+cpu", "cpu", "busy time: 100 - idle - iowait (/proc/stat)"),
    m!("cpu.usr", "%", "total+cpu", "cpu", "user time without guest time, as mpstat %usr"),
    m!("cpu.nice", "%", "total+cpu", "cpu", "niced user time without guest time, as mpstat %nice"),
    m!("cpu.sys", "%", "total+cpu", "cpu", "kernel time, as mpstat %sys"),
    m!("cpu.iowait", "%", "total+cpu", "cpu", "idle with IO outstanding, as mpstat %iowait"),
    m!("cpu.irq", "%", "total+cpu", "cpu", "hard interrupts, as mpstat %irq"),
    m!("cpu.soft", "%", "total+cpu", "cpu", "softirqs, as mpstat %soft"),
    m!("cpu.steal", "%", "total+cpu", "cpu", "stolen by the hypervisor, as mpstat %steal"),
    m!("cpu.guest", "%", "total+cpu", "cpu", "running guests, as mpstat %guest + %gnice"),
    m!("cpu.idle", "%", "total+cpu", "cpu", "idle, as mpstat %idle"),
    m!("ctxt", "/s", "total", "ctxt", "context switches per second (/proc/stat ctxt)"),
    m!("forks", "/s", "total", "forks", "tasks created per second (/proc/stat processes)"),
    m!("procs.running", "tasks", "total", "procs", "runnable tasks (/proc/stat procs_running)"),
    m!("procs.blocked", "tasks", "total", "procs", "tasks blocked on IO (/proc/stat procs_blocked)"),
    m!("mem.available", "%", "total", "mem-util", "MemAvailable, share of MemTotal (/proc/meminfo)"),
    m!("mem.available_bytes", "bytes", "total", "mem", "MemAvailable"),
    m!("mem.cached", "bytes", "total", "mem", "Cached (page cache)"),
    m!("mem.dirty", "bytes", "total", "mem", "Dirty: waiting to be written back"),
    m!("mem.writeback", "bytes", "total", "mem", "Writeback: being written back"),
    m!("mem.slab", "bytes", "total", "mem", "Slab: kernel slab caches"),
    m!("swap.used", "%", "total", "swap-util", "swap in use, share of SwapTotal (absent without swap)"),
    m!("swap.used_bytes", "bytes", "total", "swap", "SwapTotal - SwapFree"),
    m!("io.read_bytes", "bytes/s", "device", "io", "bytes read (/proc/diskstats), as iostat rkB/s"),
    m!("io.write_bytes", "bytes/s", "device", "io", "bytes written, as iostat wkB/s"),
    m!("io.reads", "/s", "device", "io-ops", "reads completed, as iostat r/s"),
    m!("io.writes", "/s", "device", "io-ops", "writes completed, as iostat w/s"),
    m!("io.iops", "/s", "device", "io-ops", "reads, writes, discards and flushes completed"),
    m!("io.util", "%", "device", "io-util", "time with IO in flight (io_ticks), as iostat %util"),
    m!("io.await", "ms", "device", "io-ms", "mean time of a request, queue included"),
    m!("io.r_await", "ms", "device", "io-ms", "mean time of a read request, as iostat r_await"),
    m!("io.w_await", "ms", "device", "io-ms", "mean time of a write request, as iostat w_await"),
    m!("io.queue", "requests", "device", "io-ops", "mean requests in flight, as iostat aqu-sz"),
    m!("load1", "tasks", "total", "load", "load average over 1 minute (/proc/loadavg)"),
    m!("load5", "tasks", "total", "load", "load average over 5 minutes"),
    m!("load15", "tasks", "total", "load", "load average over 15 minutes"),
    m!("psi.cpu.some", "%", "total", "psi", "some task waited for a CPU, avg10 (/proc/pressure/cpu)"),
    m!("psi.cpu.full", "%", "total", "psi", "all non-idle tasks waited for a CPU, avg10"),
    m!("psi.mem.some", "%", "total", "psi", "some task stalled on memory, avg10 (pressure/memory)"),
    m!("psi.mem.full", "%", "total", "psi", "all non-idle tasks stalled on memory, avg10"),
    m!("psi.io.some", "%", "total", "psi", "some task stalled on IO, avg10 (/proc/pressure/io)"),
    m!("psi.io.full", "%", "total", "psi", "all non-idle tasks stalled on IO, avg10"),
    m!(
        "syscall.lat.p50",
        "ms",
        "total+call",
        "syscall-lat",
        "median system call latency of the second, per call (the busiest; `other`: the rest), from histograms summed in the kernel (BPF)"
    ),
    m!(
        "syscall.lat.p99",
        "ms",
        "total+call",
        "syscall-lat",
        "99th percentile of system call latency, per call"
    ),
    m!("syscall.lat.max", "ms", "total+call", "syscall-lat", "slowest system call of the second, per call"),
    m!(
        "syscall.slow",
        "/s",
        "total+call",
        "syscall-slow",
        "system calls slower than the outlier threshold (10 ms by default) per second, per call"
    ),
    m!(
        "bio.lat.p50",
        "ms",
        "total+device",
        "bio-lat",
        "median block IO latency (issue to completion) of the second, per disk (BPF)"
    ),
    m!("bio.lat.p99", "ms", "total+device", "bio-lat", "99th percentile of block IO latency, per disk"),
    m!("bio.lat.max", "ms", "total+device", "bio-lat", "slowest block IO of the second, per disk"),
    m!(
        "bio.slow",
        "/s",
        "total+device",
        "slow",
        "block IOs slower than the outlier threshold (50 ms by default) per second"
    ),
    m!(
        "runq.lat.p50",
        "ms",
        "total+cpu",
        "runq-lat",
        "median run-queue latency (runnable to running) of the second, per CPU (BPF)"
    ),
    m!("runq.lat.p99", "ms", "total+cpu", "runq-lat", "99th percentile of run-queue latency, per CPU"),
    m!("runq.lat.max", "ms", "total+cpu", "runq-lat", "longest run-queue wait of the second, per CPU"),
    m!(
        "runq.slow",
        "/s",
        "total+cpu",
        "slow",
        "run-queue waits longer than the outlier threshold (10 ms by default) per second"
    ),
    m!("runq.wait", "ms/s", "total+cpu", "wait", "time tasks waited runnable, ms per second, per CPU"),
    m!(
        "offcpu.lat.p50",
        "ms",
        "total+state",
        "offcpu-lat",
        "median off-CPU block of the second, per task state (S, D, I) (BPF)"
    ),
    m!(
        "offcpu.lat.p99",
        "ms",
        "total+state",
        "offcpu-lat",
        "99th percentile of off-CPU blocks, per task state"
    ),
    m!(
        "offcpu.lat.max",
        "ms",
        "total+state",
        "offcpu-lat",
        "longest off-CPU block ended in the second, per task state"
    ),
    m!(
        "offcpu.slow",
        "/s",
        "total+state",
        "slow",
        "off-CPU blocks longer than the outlier threshold (1 s by default) per second"
    ),
    m!(
        "offcpu.wait",
        "ms/s",
        "total+state",
        "wait",
        "time tasks spent blocked, ms per second, per task state"
    ),
    m!(
        "lock.lat.p50",
        "ms",
        "total+lock",
        "lock-lat",
        "median kernel lock wait of the second, per lock kind (mutex, rwsem:W, ...) (BPF)"
    ),
    m!("lock.lat.p99", "ms", "total+lock", "lock-lat", "99th percentile of kernel lock waits, per lock kind"),
    m!(
        "lock.lat.max",
        "ms",
        "total+lock",
        "lock-lat",
        "longest kernel lock wait of the second, per lock kind"
    ),
    m!(
        "lock.slow",
        "/s",
        "total+lock",
        "slow",
        "lock waits longer than the outlier threshold (10 ms by default) per second"
    ),
    m!(
        "lock.wait",
        "ms/s",
        "total+lock",
        "wait",
        "time spent waiting for kernel locks, ms per second, per lock kind"
    ),
];

/// The chart groups, in the order a page shows them, with their titles. CPU shares are
/// stacked (`cpu` and `cpu.idle` are what the stack shows already and are not drawn).
pub const GROUPS: &[(&str, &str)] = &[
    ("cpu", "CPU"),
    ("mem", "Memory"),
    ("mem-util", "Memory available"),
    ("io", "IO"),
    ("io-ops", "IO operations"),
    ("io-util", "IO util"),
    ("io-ms", "IO wait"),
    ("psi", "Pressure (PSI)"),
    ("ctxt", "ctxt"),
    ("forks", "forks"),
    ("load", "load"),
    ("procs", "procs"),
    ("swap", "Swap"),
    ("swap-util", "Swap used"),
    ("syscall-lat", "System call latency"),
    ("syscall-slow", "Slow system calls"),
    ("bio-lat", "Block IO latency"),
    ("runq-lat", "Run-queue latency"),
    ("offcpu-lat", "Off-CPU blocks"),
    ("lock-lat", "Kernel lock waits"),
    ("wait", "Time waiting"),
    ("slow", "Slow waits"),
];

/// The catalog entry of `name`.
pub fn info(name: &str) -> Option<&'static MetricInfo> {
    METRICS.iter().find(|m| m.name == name)
}

/// The catalog as text, one metric a line: for `--help`.
pub fn table() -> String {
    let mut s = String::new();
    for m in METRICS {
        s.push_str(&format!("  {:<20} {:<8} {:<10} {}\n", m.name, m.unit, m.labels, m.meaning));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric is in a group that is listed, and the metrics of one group share a unit
    /// (one chart, one scale); names are unique.
    #[test]
    fn groups_are_listed_and_share_a_unit() {
        for m in METRICS {
            assert!(GROUPS.iter().any(|(g, _)| *g == m.group), "{}: group {} is not listed", m.name, m.group);
            let first = METRICS.iter().find(|o| o.group == m.group).map(|o| o.unit);
            let same = |u: &str| matches!(u, "/s" | "tasks" | "requests");
            assert!(
                first == Some(m.unit) || (same(m.unit) && first.is_some_and(same)),
                "{}: unit {} in group {}",
                m.name,
                m.unit,
                m.group
            );
            assert_eq!(METRICS.iter().filter(|o| o.name == m.name).count(), 1, "{} twice", m.name);
        }
        for (g, _) in GROUPS {
            assert!(METRICS.iter().any(|m| m.group == *g), "group {g} has no metric");
        }
    }
}
