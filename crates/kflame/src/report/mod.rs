//! Kernel reports (oopses, warnings, hung tasks, lockups, RCU stalls, sanitizer reports...)
//! extracted from kernel logs.
//!
//! [`reports`] iterates the reports of a log read from any [`BufRead`](std::io::BufRead).
//! Underneath, [`ReportExtractor`] is a pure streaming state machine: feed it the lines of a log in
//! order ([`ReportExtractor::push_line`]), collect finished [`Report`]s as they complete
//! ([`ReportExtractor::pop`]), and call [`ReportExtractor::finish`] at the end. Memory is
//! bounded by the number of reports open at once (one per printk caller, at most
//! [`MAX_OPEN`]) and by the per-report caps ([`MAX_FRAMES`], [`MAX_EXTRA_STACKS`],
//! [`MAX_EXTRA_FRAMES`], titles and headers of a few hundred characters), never by the size
//! of the log.
//!
//! Accepted line prefixes (stripped before parsing, see [`prefix`]): `dmesg` with or without
//! `-T`/`-x`, raw `/dev/kmsg` records, `journalctl -k`, syslog (`Mon DD HH:MM:SS host
//! kernel:`, with `kern.warn` before `kernel:` as some templates write it, and RFC 3339),
//! `<N>` priorities, printk caller ids `[  T123]` / `[    C0]`.
//! With caller ids, lines of reports printed concurrently by several CPUs are routed to the
//! report of their caller.
//!
//! How it works (one line at a time):
//! 1. [`prefix::strip`] removes the logging layers and yields the message, its printk
//!    caller id and its time. A line interleaved with other console output keeps its last
//!    kernel message.
//! 2. The line is routed to the open report of its caller id (without caller ids: the most
//!    recent report). A caller with no report of its own is lent to a report that sent
//!    NMIs to other CPUs, so a stall report gets the stalled CPU's backtrace.
//! 3. A report's first line (`start.rs`) has a role: it starts a new report (closing the
//!    caller's open one), *follows* an open one (`Kernel panic - not syncing`, `Oops:`,
//!    `invalid opcode:`), *leads* the next one (`list_del corruption.`, `refcount_t:`), or
//!    is a complete one-line report (`unregister_netdevice: waiting for ...`).
//! 4. Other lines fill the report: `CPU: PID: Comm:` / taint / `Hardware name:` fields, PC
//!    lines (`RIP:`, `pc :`, `NIP`), section markers (`<IRQ>`, `<NMI>`, `</TASK>`), frames,
//!    and the openers of extra stacks (`Freed by task 7:`, `-> #1 (...)`, `RCU grace-period
//!    kthread stack dump:`). Up to 16 unrecognized kernel lines are tolerated inside a trace
//!    (other messages printed meanwhile); untimestamped lines inside a timestamped report
//!    are console output of other programs and ignored.
//! 5. A report closes at `---[ end trace`, at the next report of its caller, after 120
//!    lines that say nothing to it, or at the end of input. It is marked truncated, with the
//!    frames that could be read, when cut mid-trace at the end of input, when the next report
//!    of its caller starts before any frame, or when printk dropped messages inside it.
//!    Its title is then built from the start line and the guilty frame (`title.rs`): the
//!    first frame that is not machinery (`skip.txt`, the list shared with the analyzer, and
//!    `machinery.txt`, per kind of report). The headers
//!    recognized, with the kernel code that prints each, are listed in `headers.rs`.
//!
//! ```
//! use kflame::report::{Kind, ReportExtractor};
//! let log = b"[ 1.0] BUG: kernel NULL pointer dereference, address: 0000000000000000\n\
//!             [ 1.0] CPU: 1 PID: 42 Comm: cat Not tainted 6.1.0 #1\n\
//!             [ 1.0] RIP: 0010:foo_read+0x12/0x40\n\
//!             [ 1.0] Call Trace:\n\
//!             [ 1.0]  <TASK>\n\
//!             [ 1.0]  vfs_read+0xa0/0x2f0\n\
//!             [ 1.0]  ? do_fault+0x10/0x80\n\
//!             [ 1.0]  ksys_read+0x5f/0xe0\n\
//!             [ 1.0]  </TASK>\n";
//! let reports = ReportExtractor::extract_all(log);
//! assert_eq!(reports.len(), 1);
//! let r = &reports[0];
//! assert_eq!(r.kind(), Kind::PageFault);
//! assert_eq!(r.title, "BUG: unable to handle kernel NULL pointer dereference in foo_read");
//! assert_eq!(r.comm.as_deref(), Some("cat"));
//! assert_eq!(r.function_names(false), ["ksys_read", "vfs_read", "foo_read"]);
//! ```

mod extract;
mod fields;
mod frame;
mod headers;
pub mod kmsg;
pub mod prefix;
mod start;
mod stream;
mod title;

use serde::Serialize;

pub use extract::{LOCK_SITE, ReportExtractor};
pub use frame::parse_frame;
pub use stream::{Reports, reports};
pub use title::{is_skipped_frame, is_stall_interrupt_entry, title_name};

/// True when `text` (a log line with its prefixes stripped, see [`prefix::strip`]) is the
/// first line of a kernel report, or holds one after other output printed without a
/// newline. Generic `WARNING: message` and `INFO: message` lines, which start a report only
/// when timestamped, are not counted.
pub fn is_report_start(text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text);
    start::classify(&text).is_some_and(|s| !s.needs_stamp) || start::embedded(&text, false).is_some()
}

/// Most reports open at the same time (one per printk caller); the oldest is closed when
/// another one starts.
pub const MAX_OPEN: usize = 32;
/// Most frames kept per stack; later frames are counted in [`Report::dropped_frames`].
pub const MAX_FRAMES: usize = 1024;
/// Most extra stacks (allocated-by, freed-by, lock chains, other CPUs) kept per report.
pub const MAX_EXTRA_STACKS: usize = 16;
/// Most frames kept per extra stack.
pub const MAX_EXTRA_FRAMES: usize = 128;

/// What kind of problem a report describes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `Oops:` / `Internal error: Oops` and other CPU exceptions (divide error, double fault).
    Oops,
    /// Unable to handle page fault / paging request / NULL pointer dereference.
    PageFault,
    /// `general protection fault`.
    GeneralProtectionFault,
    /// `kernel BUG at` and other `BUG:` reports.
    Bug,
    /// `WARNING:` (WARN_ON and friends).
    Warning,
    /// `Kernel panic - not syncing` on its own.
    Panic,
    /// `INFO: task ... blocked for more than N seconds` (hung task detector).
    HungTask,
    /// `BUG: soft lockup`.
    SoftLockup,
    /// `Watchdog detected hard LOCKUP`.
    HardLockup,
    /// RCU CPU stall warnings.
    RcuStall,
    /// The OOM killer was invoked.
    Oom,
    /// KASAN memory-safety report.
    Kasan,
    /// KMSAN uninitialized-memory report.
    Kmsan,
    /// KFENCE memory-safety report.
    Kfence,
    /// KCSAN data race.
    Kcsan,
    /// UBSAN undefined behaviour.
    Ubsan,
    /// Lock validator: possible deadlock, inconsistent lock state, suspicious RCU usage...
    Lockdep,
    /// kmemleak: unreferenced object.
    MemoryLeak,
    /// Sleeping function called from invalid context, scheduling while atomic.
    AtomicSleep,
    /// Anything else recognized as a report.
    Other,
}

impl Kind {
    /// The stable name used in JSON and folded root frames (`page_fault`).
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Oops => "oops",
            PageFault => "page_fault",
            GeneralProtectionFault => "general_protection_fault",
            Bug => "bug",
            Warning => "warning",
            Panic => "panic",
            HungTask => "hung_task",
            SoftLockup => "soft_lockup",
            HardLockup => "hard_lockup",
            RcuStall => "rcu_stall",
            Oom => "oom",
            Kasan => "kasan",
            Kmsan => "kmsan",
            Kfence => "kfence",
            Kcsan => "kcsan",
            Ubsan => "ubsan",
            Lockdep => "lockdep",
            MemoryLeak => "memory_leak",
            AtomicSleep => "atomic_sleep",
            Other => "other",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The execution context a frame ran in, from the `<IRQ>`, `<NMI>`, `<SOFTIRQ>`, `<#DF>`,
/// `<TASK>` markers of x86 traces (task when unmarked).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// Process context (the default).
    #[default]
    Task,
    /// Hard interrupt.
    Irq,
    /// Soft interrupt.
    Softirq,
    /// Non-maskable interrupt.
    Nmi,
    /// An exception stack (`<#DF>`, `<#MC>`, `<#DB>`...).
    Exception,
}

/// One frame of a call trace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Frame {
    /// Function name as printed, compiler suffixes included (`foo.cold`, `bar.isra.0`).
    pub function: String,
    /// `+0x12/0x34` as printed, without the `+` (`0x12/0x34`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// Module in brackets after the frame (`[ext4]`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Source location of a symbolized frame (`fs/read_write.c:123`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// An inlined frame (`file.c:123 [inline]`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inline: bool,
    /// A `? ` frame: an address found on the stack the unwinder could not vouch for.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unreliable: bool,
    /// Execution context of the frame.
    pub section: Section,
    /// The frame's line as printed (prefix stripped, trimmed, lossily UTF-8).
    pub raw: String,
}

impl Frame {
    /// The function name with `+offset/size` appended when the frame had one.
    pub fn with_offset(&self) -> String {
        match &self.offset {
            Some(o) => format!("{}+{}", self.function, o),
            None => self.function.clone(),
        }
    }
}

/// A secondary stack of a report: KASAN's allocated-by / freed-by, a lockdep chain, the
/// backtrace of another CPU. Frames are leaf first, as printed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ExtraStack {
    /// What the stack is (the line that introduced it, e.g. `Freed by task 42:`).
    pub label: String,
    /// Frames, leaf first.
    pub frames: Vec<Frame>,
}

/// One kernel report, as extracted from a log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// What kind of problem this is.
    pub kind: Option<Kind>,
    /// One-line title in syzkaller's style (`WARNING in foo`, `KASAN: use-after-free Read in
    /// bar`, `INFO: task hung in baz`).
    pub title: String,
    /// The report's first line as printed (prefix stripped).
    pub header: String,
    /// Kernel release (`6.1.0-13-amd64`) from the report or, failing that, from the boot
    /// banner seen earlier in the log.
    pub kernel: Option<String>,
    /// CPU the report was printed on.
    pub cpu: Option<u32>,
    /// PID of the current (or blocked) task.
    pub pid: Option<u32>,
    /// Command name of that task (lossily UTF-8; may contain any byte the kernel printed).
    pub comm: Option<String>,
    /// Taint flags (`G        W`, whitespace collapsed), empty when `Not tainted`.
    pub taint: Option<String>,
    /// `Hardware name:` line.
    pub hardware: Option<String>,
    /// Function of the faulting PC (`RIP:`, `pc :`, `PC is at`, `NIP`, `epc :`), or the raw
    /// address when it is not symbolized (user-space RIP).
    pub rip: Option<String>,
    /// The main call trace, leaf first (as printed).
    pub frames: Vec<Frame>,
    /// Other stacks of the report.
    pub extra_stacks: Vec<ExtraStack>,
    /// Frames beyond [`MAX_FRAMES`] that were not kept.
    pub dropped_frames: u32,
    /// The trace is incomplete: the log ended mid-trace, another report of the same context
    /// started before any frame, or printk dropped messages inside it. The frames that could
    /// be read are kept.
    pub truncated: bool,
    /// 1-based line of the report's first line in the input.
    pub line: u64,
    /// Time of the report's first line as the log prints it: dmesg seconds since boot
    /// (`3626.182076`, /dev/kmsg microseconds converted), `dmesg -T` or syslog date.
    pub time: Option<String>,
    /// Printk caller id (`T123`, `C0`) of the report's lines, if the log has them.
    pub caller: Option<String>,
}

impl Report {
    /// The report's kind ([`Kind::Other`] when unknown).
    pub fn kind(&self) -> Kind {
        self.kind.unwrap_or(Kind::Other)
    }

    /// Whether the report is of a kernel bug rather than of memory running out: an OOM
    /// kill (`invoked oom-killer`) or an allocation failure (mm/page_alloc.c warn_alloc(),
    /// `page allocation failure`) is the kernel handling exhaustion as designed. Crash
    /// collectors, syzkaller's parser among them, report neither; `watch` keeps them as
    /// events.
    pub fn is_bug(&self) -> bool {
        !(self.kind() == Kind::Oom || self.title.starts_with(start::ALLOC_FAILURE_TITLE))
    }

    /// The guilty frame of the main trace, as syzkaller picks it: the leaf-most reliable
    /// frame that is not reporting, locking, allocation, sanitizer or printing machinery
    /// (the patterns of `report/machinery.txt`, per kind of report), falling back to the
    /// leaf-most reliable frame; for stalls and lockups the function the first dispatcher
    /// (syscall entry, work item, timer...) called in the interrupted code; `None` for a
    /// report without frames.
    pub fn guilty_frame(&self) -> Option<&Frame> {
        title::guilty_frame(self)
    }

    /// Function names of the main trace, root first; `?` frames only if `unreliable`.
    pub fn function_names(&self, unreliable: bool) -> Vec<&str> {
        self.frames
            .iter()
            .rev()
            .filter(|f| unreliable || !f.unreliable)
            .map(|f| f.function.as_str())
            .collect()
    }

    /// The report as one JSON object (one line), with `frames` root first as plain names
    /// (no `?` frames), `raw_frames` root first as printed, and every other field.
    pub fn to_json(&self) -> String {
        let json = JsonReport {
            kind: self.kind().name(),
            title: &self.title,
            kernel: self.kernel.as_deref(),
            cpu: self.cpu,
            pid: self.pid,
            comm: self.comm.as_deref(),
            taint: self.taint.as_deref(),
            hardware: self.hardware.as_deref(),
            rip: self.rip.as_deref(),
            frames: self.function_names(false),
            raw_frames: self.frames.iter().rev().map(|f| f.raw.as_str()).collect(),
            frame_details: self.frames.iter().rev().collect(),
            extra_stacks: &self.extra_stacks,
            line: self.line,
            time: self.time.as_deref(),
            caller: self.caller.as_deref(),
            truncated: self.truncated,
            header: &self.header,
        };
        serde_json::to_string(&json).unwrap_or_default()
    }
}

/// The JSON shape of a report (see [`Report::to_json`]).
#[derive(Serialize)]
struct JsonReport<'a> {
    kind: &'static str,
    title: &'a str,
    kernel: Option<&'a str>,
    cpu: Option<u32>,
    pid: Option<u32>,
    comm: Option<&'a str>,
    taint: Option<&'a str>,
    hardware: Option<&'a str>,
    rip: Option<&'a str>,
    frames: Vec<&'a str>,
    raw_frames: Vec<&'a str>,
    frame_details: Vec<&'a Frame>,
    extra_stacks: &'a [ExtraStack],
    line: u64,
    time: Option<&'a str>,
    caller: Option<&'a str>,
    truncated: bool,
    header: &'a str,
}
