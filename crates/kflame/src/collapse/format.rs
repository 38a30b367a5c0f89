//! The format registry: every input format kflame collapses, and content-based detection.

use std::fmt;

/// An input format. The CLI builds the matching collapser with its options.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Already folded stacks (`a;b;c 12`), merged and re-aggregated.
    Folded,
    /// `perf script` text (FlameGraph's `stackcollapse-perf.pl` input).
    PerfScript,
    /// ftrace `trace` / `trace_pipe` text with `<stack trace>` blocks.
    Ftrace,
    /// `trace-cmd report` text with `kernel_stack:` blocks.
    TraceCmd,
    /// function_graph tracer output (tracefs `trace` or `trace-cmd report`), latency in ns.
    FunctionGraph,
    /// A snapshot of every thread's `/proc/PID/task/TID/stack`, grouped by task state.
    ProcStacks,
    /// bpftrace map output with stack keys (`@[kstack]: N`).
    Bpftrace,
    /// bcc tool output (profile, offcputime, stackcount), multi-line or folded.
    Bcc,
    /// SystemTap `print_stack()` / `print_backtrace()` output followed by counts.
    Stap,
    /// Kernel logs (dmesg, /dev/kmsg, journalctl -k, syslog): one stack per report.
    KernelLog,
    /// `crash` utility `bt` / `foreach bt` output: one stack per task.
    Crash,
    /// perf.data recorded by `perf record`, read directly (binary; not line-based).
    PerfData,
}

impl Format {
    /// Every format, in detection priority order (earlier wins ties).
    pub const ALL: &'static [Format] = &[
        Format::Folded,
        Format::PerfScript,
        Format::Ftrace,
        Format::TraceCmd,
        Format::FunctionGraph,
        Format::ProcStacks,
        Format::Bpftrace,
        Format::Bcc,
        Format::Stap,
        Format::KernelLog,
        Format::Crash,
        Format::PerfData,
    ];

    /// The name used by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::PerfScript => "perf-script",
            Format::Ftrace => "ftrace",
            Format::TraceCmd => "trace-cmd",
            Format::FunctionGraph => "function-graph",
            Format::ProcStacks => "proc-stacks",
            Format::Bpftrace => "bpftrace",
            Format::Bcc => "bcc",
            Format::Stap => "stap",
            Format::KernelLog => "kernel-log",
            Format::Crash => "crash",
            Format::PerfData => "perf-data",
        }
    }

    /// Other accepted names.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Format::Folded => &["collapsed", "stackcollapse"],
            Format::PerfScript => &["perf"],
            Format::Ftrace => &["trace_pipe", "tracefs"],
            Format::TraceCmd => &["tracecmd", "trace-cmd-report"],
            Format::FunctionGraph => &["function_graph", "funcgraph", "fgraph"],
            Format::ProcStacks => &["proc-stack", "procstacks"],
            Format::Bpftrace => &[],
            Format::Bcc => &["bcc-profile", "bcc-offcputime", "bcc-stackcount"],
            Format::Stap => &["systemtap"],
            Format::KernelLog => &["dmesg", "kmsg", "kern.log", "oops"],
            Format::Crash => &["crash-bt"],
            Format::PerfData => &["perf.data", "perfdata"],
        }
    }

    /// One line for `--help` and error messages.
    pub fn summary(self) -> &'static str {
        match self {
            Format::Folded => "folded stacks `frame;frame;... count` (FlameGraph)",
            Format::PerfScript => "`perf script` text (samples with call stacks)",
            Format::Ftrace => "ftrace trace/trace_pipe events with `<stack trace>` blocks",
            Format::TraceCmd => "`trace-cmd report` events with `kernel_stack:` blocks",
            Format::FunctionGraph => "ftrace function_graph output, raw or `trace-cmd report` (latency, ns)",
            Format::ProcStacks => "snapshot of /proc/*/task/*/stack (`==> pid= comm= state=` blocks)",
            Format::Bpftrace => "bpftrace maps keyed by stacks (`@[kstack]: N`, `@x[ustack, comm]: N`)",
            Format::Bcc => "bcc profile/offcputime/stackcount output, multi-line or folded (`-f`)",
            Format::Stap => "SystemTap print_stack()/print_backtrace() output with counts",
            Format::KernelLog => {
                "kernel log with oopses, warnings, hung tasks, lockups... (dmesg, kmsg, syslog)"
            }
            Format::Crash => "crash utility `bt -a` / `foreach bt` output",
            Format::PerfData => "perf.data from `perf record`, symbolized in-process (no perf needed)",
        }
    }

    /// Confidence 0-100 that `head` (the first bytes of an input) is in this format.
    pub fn detect(self, head: &[u8]) -> u8 {
        match self {
            Format::Folded => super::folded::detect(head),
            Format::PerfScript => super::perf::detect(head),
            Format::Ftrace => super::ftrace::detect_ftrace(head),
            Format::TraceCmd => super::ftrace::detect_trace_cmd(head),
            Format::FunctionGraph => super::fgraph::detect(head),
            Format::ProcStacks => super::proc_stacks::detect(head),
            Format::Bpftrace => super::bpftrace::detect(head),
            Format::Bcc => super::bcc::detect(head),
            Format::Stap => super::stap::detect(head),
            Format::KernelLog => super::kernel_log::detect(head),
            Format::Crash => super::crash::detect(head),
            Format::PerfData => {
                if crate::perf_data::is_perf_data(head) {
                    100
                } else {
                    0
                }
            }
        }
    }

    /// Looks a format up by name or alias.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name || f.aliases().contains(&name))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The most likely format of `head`, if any format is at least fairly confident (score ≥ 30).
pub fn detect(head: &[u8]) -> Option<Format> {
    let mut best: Option<(u8, Format)> = None;
    for &f in Format::ALL {
        let score = f.detect(head);
        if score >= 30 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, f));
        }
    }
    best.map(|(_, f)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
    }

    #[test]
    fn detects_folded_and_rejects_noise() {
        assert_eq!(detect(b"a;b 1\na;c 2\n"), Some(Format::Folded));
        assert_eq!(detect(b"hello world\nthis is prose\n"), None);
        assert_eq!(detect(b""), None);
        assert_eq!(detect(b"PERFILE2\x68\0\0\0\0\0\0\0"), Some(Format::PerfData));
    }
}
