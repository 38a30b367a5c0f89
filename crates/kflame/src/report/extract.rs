//! The streaming extractor: routes lines to open reports and grows them.

use std::collections::VecDeque;

use super::fields::{self, Fields};
use super::frame::{arm32_caller, parse_frame};
use super::prefix::strip;
use super::start::{ALLOC_FAILURE_TITLE, RUST_PANIC, Role, Start, classify, embedded, is_checker_warning};
use super::title::{
    is_address, is_machinery, names_a_function, title_function, title_name, volatile_parts_replaced,
};
use super::{
    ExtraStack, Frame, Kind, MAX_EXTRA_FRAMES, MAX_EXTRA_STACKS, MAX_FRAMES, MAX_OPEN, Report, Section,
};

/// Characters of a report's first line kept in [`Report::header`].
const MAX_HEADER: usize = 512;

/// Unrecognized lines tolerated inside a call trace before it is considered over.
const TRACE_GAP: u32 = 16;
/// Unrecognized lines after which an open report is closed.
const IDLE_LIMIT: u32 = 120;

/// Streaming extractor of kernel reports; see the [module documentation](super).
#[derive(Debug, Default)]
pub struct ReportExtractor {
    open: Vec<Open>,
    done: VecDeque<Report>,
    banner_kernel: Option<String>,
    tick: u64,
    split_task: Option<(u64, Option<Vec<u8>>, String)>,
    /// Time of the current line (see [`Report::time`]).
    time: Option<String>,
    /// Some kernel line so far carried a timestamp: the log is timestamped, so a generic
    /// `WARNING: message` without one is not the kernel's.
    seen_stamp: bool,
    /// A one-line report (`Role::Single`) held until the next line: the console may say that
    /// the line was cut and replay it (`** replaying previous printk message **`), and the
    /// whole line then makes the report once.
    single: Option<Open>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    /// Before any frame.
    Header,
    /// Inside a call trace.
    Trace,
    /// A trace ended; more stacks may follow.
    After,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Target {
    Main,
    Extra,
}

#[derive(Debug)]
struct Open {
    key: Option<Vec<u8>>,
    r: Report,
    prefix: String,
    function: Option<String>,
    /// Functions of the lockdep `at:` lines that name the lock sites of a deadlock, first two.
    lock_sites: Vec<String>,
    /// The first line up to the function it names, when it names one (see [`Open::repeats`]).
    stem: Option<String>,
    lead: bool,
    state: State,
    target: Target,
    sections: Vec<Section>,
    main_started: bool,
    extra_full: bool,
    /// The report's lines carry timestamps (so unstamped lines are someone else's).
    stamped: bool,
    /// The report asked other CPUs for their backtraces (`Sending NMI from CPU`).
    awaits_other_cpus: bool,
    /// The caller named by the last arm32 `(func) from (caller)` frame, pushed as the
    /// outermost frame if the trace ends without listing it.
    arm_caller: Option<Frame>,
    /// The main trace began at a bare frame, with no `Call Trace:` before it.
    bare_start: bool,
    /// ... and a dump header (`CPU: 0 PID: 9 Comm: ...`) followed those frames: they were
    /// another task's, printed in between, if a `Call Trace:` comes next.
    dump_after_bare: bool,
    /// `Preemption disabled at:` was read: the next frame is that site, not the trace.
    site: Option<&'static str>,
    /// A generic `WARNING: message` without a timestamp, in a log that has none so far:
    /// boot firmware prints such lines too (`WARNING: RO_VPD is uninitialized`), so it is a
    /// report only if a call trace follows; closed without a frame, it is dropped. (A
    /// timestamped one is the kernel's and a report, trace or not, as syzkaller takes every
    /// `WARNING:` line but its list of notices; drivers' pr_warn() notices among them.)
    tentative: bool,
    /// The title is a generic message's own words (`BUG: something odd`, a `WARNING:` notice):
    /// no title format of syzkaller's names a function for it, so a report of it without one
    /// is not "in corrupted".
    generic: bool,
    gap: u32,
    idle: u32,
    touched: u64,
}

impl ReportExtractor {
    /// A new extractor.
    pub fn new() -> ReportExtractor {
        ReportExtractor::default()
    }

    /// Every report of a whole log held in memory, in the order they start.
    pub fn extract_all(log: &[u8]) -> Vec<Report> {
        let mut x = ReportExtractor::new();
        let mut out = Vec::new();
        for (n, line) in crate::text::lines(log, 1) {
            x.push_line(n, line);
            out.extend(std::iter::from_fn(|| x.pop()));
        }
        x.finish();
        out.extend(std::iter::from_fn(|| x.pop()));
        out.sort_by_key(|r| r.line);
        out
    }

    /// True while some report is open (begun and not ended).
    pub fn has_open(&self) -> bool {
        !self.open.is_empty() || self.single.is_some()
    }

    /// The next finished report, in the order reports were completed.
    pub fn pop(&mut self) -> Option<Report> {
        self.done.pop_front()
    }

    /// End of input: closes every open report (marking those cut mid-trace as truncated).
    pub fn finish(&mut self) {
        self.release_single();
        let mut open = std::mem::take(&mut self.open);
        open.sort_by_key(|o| o.r.line);
        for mut o in open {
            o.r.truncated |= o.state != State::After && !matches!(o.r.kind(), Kind::Other | Kind::Panic);
            self.close(o);
        }
    }

    /// Feeds line `n` (1-based) of the log.
    pub fn push_line(&mut self, n: u64, line: &[u8]) {
        let s = strip(line);
        if !s.kernel {
            return;
        }
        let text = String::from_utf8_lossy(s.text);
        self.tick += 1;
        if let Some(k) = fields::banner_release(&text) {
            self.banner_kernel = Some(k);
        }
        if let Some(at) = text.find("** replaying previous printk message **") {
            // kernel/printk/printk.c console_prepend_replay(): the console prints again a
            // message it had begun. On a line of its own the marker says the line before was
            // cut: a report that line started, still without a frame, starts again with the
            // whole line. After other text, that text is the cut message, and the line
            // before it was whole.
            if text[..at].trim().is_empty() {
                if let Some(i) = self.open.iter().rposition(|o| o.r.line + 1 == n && o.r.frames.is_empty()) {
                    self.open.remove(i);
                }
                if self.single.as_ref().is_some_and(|o| o.r.line + 1 == n) {
                    self.single = None;
                }
            }
            return;
        }
        self.release_single();
        let seen_stamp = self.seen_stamp;
        self.seen_stamp |= s.stamped;
        if s.stamped && !seen_stamp {
            // The log turns out timestamped: an unstamped generic WARNING still waiting for
            // its trace was boot firmware's (see `Open::tentative`), and must not take over
            // the kernel's first report (a `Kernel panic` it would absorb).
            self.open.retain(|o| !o.unconfirmed());
        }
        let (idx, borrowed) = self.route(s.caller);
        // Another CPU's own report never joins the report that asked for its backtrace.
        let own = if borrowed { None } else { idx };
        if let Some((pn, joined)) = self.join_split_task_line(&text, s.caller)
            && let Some(start) = classify(&joined)
        {
            self.time = s.time.map(time_text);
            self.on_start(own, start, pn, &joined, s.caller, s.stamped);
            return;
        }
        if text.trim_start().starts_with("INFO: task ") && classify(&text).is_none() {
            self.split_task = Some((n, s.caller.map(<[u8]>::to_vec), text.into_owned()));
            return;
        }
        if let Some(start) = classify(&text).filter(|st| !st.needs_stamp || s.stamped || !seen_stamp) {
            // A generic `WARNING: message` without a timestamp (a console without printk.time)
            // is the kernel's only if a trace follows (see `Open::tentative`).
            self.time = s.time.map(time_text); // only report starts keep their time
            self.on_start(own, start, n, &text, s.caller, s.stamped);
            return;
        }
        if let Some((at, start)) = embedded(&text, s.stamped || !seen_stamp) {
            self.time = s.time.map(time_text);
            self.on_start(own, start, n, &text[at..], s.caller, s.stamped);
            return;
        }
        let Some(i) = idx else { return };
        if is_end_marker(&text) {
            let o = self.open.remove(i);
            self.close(o);
            return;
        }
        self.open[i].touched = self.tick;
        if !self.open[i].on_line(&text, s.stamped) {
            let o = &mut self.open[i];
            o.idle += 1;
            if o.idle > IDLE_LIMIT {
                let o = self.open.remove(i);
                self.close(o);
            }
        }
    }

    /// A task name holding a newline splits `INFO: task NAME:PID blocked` over two lines:
    /// the previous line joined with this one, if the previous was such a first half.
    fn join_split_task_line(&mut self, text: &str, caller: Option<&[u8]>) -> Option<(u64, String)> {
        let (n, c, first) = self.split_task.take()?;
        (c.as_deref() == caller).then(|| (n, format!("{first}\n{text}")))
    }

    /// The open report a line of `caller` belongs to.
    /// A line of another CPU goes to a report that asked for other CPUs' backtraces
    /// (`Sending NMI from CPU 1 to CPUs 0:`), when that CPU has no report of its own.
    fn route(&self, caller: Option<&[u8]>) -> (Option<usize>, bool) {
        let recent = |ok: &dyn Fn(&Open) -> bool| {
            (0..self.open.len()).filter(|&i| ok(&self.open[i])).max_by_key(|&i| self.open[i].touched)
        };
        match caller {
            Some(c) => match self.open.iter().position(|o| o.key.as_deref() == Some(c)) {
                Some(i) => (Some(i), false),
                None => (recent(&|o: &Open| o.awaits_other_cpus), true),
            },
            None => (recent(&|_| true), false),
        }
    }

    fn on_start(
        &mut self,
        idx: Option<usize>,
        start: Start,
        n: u64,
        text: &str,
        caller: Option<&[u8]>,
        stamped: bool,
    ) {
        if start.role == Role::Single {
            let mut o = Open::new(start, n, text, caller, self.tick, stamped);
            o.r.time = self.time.take();
            o.state = State::After;
            self.release_single();
            self.single = Some(o);
            return;
        }
        if let Some(i) = idx {
            if self.open[i].repeats(&start, text) {
                self.open[i].touched = self.tick;
                self.open[i].idle = 0;
                return;
            }
            if self.open[i].absorbs(&start) {
                let o = &mut self.open[i];
                o.touched = self.tick;
                o.idle = 0;
                o.lead = false;
                o.absorb(start);
                return;
            }
            let mut o = self.open.remove(i);
            // Another report of the same context took over before any frame of this one.
            o.r.truncated |=
                o.r.frames.is_empty() && !matches!(o.r.kind(), Kind::Other | Kind::Panic | Kind::Oom);
            self.close(o);
        }
        if self.open.len() >= MAX_OPEN {
            let oldest = (0..self.open.len()).min_by_key(|&i| self.open[i].touched).unwrap_or(0);
            let o = self.open.remove(oldest);
            self.close(o);
        }
        let mut o = Open::new(start, n, text, caller, self.tick, stamped);
        o.r.time = self.time.take();
        self.open.push(o);
    }

    /// Ends the held one-line report (see `single`).
    fn release_single(&mut self) {
        if let Some(o) = self.single.take() {
            self.close(o);
        }
    }

    fn close(&mut self, mut o: Open) {
        o.flush_arm_caller();
        if o.unconfirmed() {
            return;
        }
        let mut r = o.r;
        r.extra_stacks.retain(|e| !e.frames.is_empty());
        if r.kernel.is_none() {
            r.kernel = self.banner_kernel.clone();
        }
        // Panics name a function only when their message does (`corrupted in: foo`), or when
        // the stack itself is the problem (`corrupted stack end`, stack protector).
        let stack_panic = o.prefix.contains("stack end")
            || o.prefix.contains("stack is corrupted")
            || o.prefix.starts_with("kernel stack overflow");
        let function = if r.kind == Some(Kind::Panic) && !stack_panic {
            o.function.filter(|f| !f.bytes().all(|b| b.is_ascii_hexdigit()))
        } else {
            // The first reliable frame that is not locking machinery in the extra stacks
            // whose label `wanted` accepts, when the header says `about`.
            let caller = |about: &str, wanted: &dyn Fn(&str) -> bool| {
                (r.kind == Some(Kind::Lockdep) && r.header.contains(about))
                    .then(|| {
                        r.extra_stacks.iter().filter(|e| wanted(&e.label)).find_map(|e| {
                            e.frames.iter().find(|f| {
                                !f.unreliable && !is_machinery(&f.function, Kind::Lockdep, &r.header)
                            })
                        })
                    })
                    .flatten()
                    .map(|f| f.function.clone())
            };
            // An IRQ lock inversion (`HARDIRQ-safe -> HARDIRQ-unsafe lock order detected`,
            // kernel/locking/lockdep.c print_bad_irq_dependency) is about the lock taken
            // where it `became HARDIRQ-irq-safe`: that stack's caller, before the lock sites.
            let irq_safe = caller("lock order detected", &|l| l.contains("-irq-safe at:"));
            // A circular dependency whose lock sites are all machinery (work items and
            // workqueues: `process_one_work`): the caller in the dependency chain's stacks
            // (`-> #N (...):`, the oldest link first).
            let chain = caller("circular locking", &|l| l.starts_with("-> #"));
            raw_site(&r, &o.lock_sites).or_else(|| {
                let candidates: Vec<String> =
                    irq_safe.into_iter().chain(o.function).chain(o.lock_sites).chain(chain).collect();
                title_function(&r, &candidates)
            })
        };
        r.title = volatile_parts_replaced(&match function {
            Some(f) => format!("{} in {f}", o.prefix),
            // No frame could be named where the title names one: syzkaller's form.
            None if !o.generic && names_a_function(r.kind(), &o.prefix) => {
                format!("{} in corrupted", o.prefix)
            }
            None => o.prefix,
        });
        self.done.push_back(r);
    }
}

impl Open {
    /// A tentative report no trace has confirmed (see [`Open::tentative`]): not a report.
    fn unconfirmed(&self) -> bool {
        self.tentative && self.r.frames.is_empty()
    }

    fn new(start: Start, n: u64, text: &str, caller: Option<&[u8]>, tick: u64, stamped: bool) -> Open {
        let r = Report {
            kind: Some(start.kind),
            header: text.trim().chars().take(MAX_HEADER).collect(),
            cpu: start.cpu,
            pid: start.pid,
            comm: start.comm,
            line: n,
            caller: caller.map(|c| String::from_utf8_lossy(c).into_owned()),
            ..Report::default()
        };
        let stem = stem(text.trim(), start.function.as_deref()).map(str::to_string);
        Open {
            stem,
            key: caller.map(<[u8]>::to_vec),
            r,
            prefix: start.prefix,
            function: start.function,
            lock_sites: Vec::new(),
            lead: start.role == Role::Leads,
            state: State::Header,
            target: Target::Main,
            sections: Vec::new(),
            main_started: false,
            extra_full: false,
            stamped,
            awaits_other_cpus: false,
            arm_caller: None,
            site: None,
            tentative: start.needs_stamp && !stamped,
            generic: start.generic,
            bare_start: false,
            dump_after_bare: false,
            gap: 0,
            idle: 0,
            touched: tick,
        }
    }

    /// Whether a new start line continues this report rather than starting another.
    fn absorbs(&self, s: &Start) -> bool {
        let fresh = !self.main_started;
        match s.role {
            // A consequence (a panic, die()'s `Oops:`) never joins an OOM kill or an
            // allocation failure, which are memory running out, not bugs: mm/oom_kill.c
            // panics after its report when nothing can be killed (`Out of memory and no
            // killable processes...`, `System is deadlocked on memory`, panic_on_oom), and
            // the machine dying is a report of its own.
            Role::Follows => !self.is_exhaustion(),
            _ if fresh && self.lead => true,
            Role::Leads => fresh && self.refinable(s),
            _ if fresh && matches!(s.kind, Kind::HardLockup | Kind::SoftLockup) && self.refinable(s) => true,
            // `BUG: Dentry ... still in use` followed by the WARN() that prints its stack
            _ if fresh && self.generic_bug() && matches!(s.kind, Kind::Warning | Kind::Bug) => true,
            _ => fresh && self.r.kind == Some(s.kind) && s.kind == Kind::MemoryLeak,
        }
    }

    /// The same first line again, naming the next function out: a symbolizer (syzkaller's,
    /// `scripts/decode_stacktrace.sh`) prints a header whose function was inlined once per
    /// inlining level (`BUG: KASAN: use-after-free in atomic_read ... [inline]`, then `... in
    /// queued_spin_lock_slowpath+0xb0a/0xfd0 ...`). One report; the first function that is
    /// not machinery names it.
    fn repeats(&mut self, s: &Start, text: &str) -> bool {
        let same = !self.main_started
            && self.r.frames.is_empty()
            && self.r.kind == Some(s.kind)
            && self.r.header.contains(" [inline]")
            && self.stem.as_deref().is_some_and(|a| stem(text.trim(), s.function.as_deref()) == Some(a));
        if !same {
            return false;
        }
        let kind = s.kind;
        if self.function.as_deref().is_none_or(|f| is_machinery(f, kind, &self.r.header)) {
            self.function = s.function.clone().or(self.function.take());
        }
        true
    }

    /// A generic `WARNING`/`kernel BUG` whose next line names the problem (`refcount_t:
    /// underflow`, `ODEBUG: free active`, `list_del corruption`).
    fn refinable(&self, s: &Start) -> bool {
        (matches!(self.prefix.as_str(), "WARNING" | "kernel BUG") || is_checker_warning(&self.prefix))
            && matches!(s.kind, Kind::Warning | Kind::Bug)
    }

    /// An OOM kill or an allocation failure ([`Report::is_bug`] is false for them).
    fn is_exhaustion(&self) -> bool {
        self.r.kind == Some(Kind::Oom) || self.prefix.starts_with(ALLOC_FAILURE_TITLE)
    }

    fn generic_bug(&self) -> bool {
        self.r.kind == Some(Kind::Bug) && self.prefix.starts_with("BUG: ")
    }

    fn absorb(&mut self, s: Start) {
        // lib/list_debug.c CHECK_DATA_CORRUPTION(): with CONFIG_BUG_ON_DATA_CORRUPTION its
        // message is followed by `kernel BUG at lib/list_debug.c` ("BUG: corrupted list");
        // without it the check WARN()s, and the report is that WARNING, whichever of its
        // message and its `WARNING:` line the kernel printed first.
        let corrupted_list = "BUG: corrupted list";
        if !self.main_started
            && ((self.prefix == corrupted_list && s.kind == Kind::Warning && s.prefix == "WARNING")
                || (self.prefix == "WARNING" && s.prefix == corrupted_list))
        {
            self.r.kind = Some(Kind::Warning);
            self.prefix = "WARNING".to_string();
            self.generic = false;
            self.function = self.function.take().or(s.function);
            return;
        }
        if (s.role == Role::Leads || s.kind != Kind::Panic) && self.refinable(&s) && !self.main_started {
            self.prefix = s.prefix.clone();
            self.generic = s.generic;
            if matches!(s.kind, Kind::HardLockup | Kind::SoftLockup) {
                self.r.kind = Some(s.kind);
            }
        }
        if self.function.is_none() {
            self.function = s.function;
        }
        // (A generic line absorbed after a panic, `INFO: msg`, is one of its lines, not what
        // the panic was.)
        if self.r.kind == Some(Kind::Panic) && s.kind != Kind::Panic && !s.generic && !self.main_started {
            self.r.kind = Some(s.kind);
            self.prefix = s.prefix;
            self.generic = false;
        }
        self.r.cpu = self.r.cpu.or(s.cpu);
        self.r.pid = self.r.pid.or(s.pid);
        self.r.comm = self.r.comm.take().or(s.comm);
    }

    /// Handles a non-start line; false when the line meant nothing to the report.
    fn on_line(&mut self, text: &str, stamped: bool) -> bool {
        let t = text.trim();
        if self.stamped && !stamped {
            return true; // console output of another program between the kernel's lines
        }
        if self.prefix == RUST_PANIC && !self.main_started && !t.is_empty() && !t.starts_with("---") {
            // The line after `rust_kernel: panicked at ...` is the panic's message.
            self.prefix = t.chars().take(MAX_HEADER).collect();
            return true;
        }
        // A site (`Preemption disabled at:`, lockdep's `... at:`) is the very next line's frame.
        let site = self.site.take();
        if let Some(f) = fields::parse_fields(t) {
            self.fill(f);
            return true;
        }
        if let Some(pc) = fields::pc_line(t) {
            self.on_pc(pc);
            return true;
        }
        if self.on_marker(t) || self.on_stack_opener(t) {
            return true;
        }
        if let Some(f) = parse_frame(text.as_bytes()) {
            self.site = site;
            return self.on_frame(f);
        }
        self.on_other(t)
    }

    fn fill(&mut self, f: Fields) {
        let r = &mut self.r;
        if self.target == Target::Extra {
            // The task of a secondary stack (`task:rcu_preempt ...`) is not the report's.
            r.kernel = r.kernel.take().or(f.kernel);
            r.hardware = r.hardware.take().or(f.hardware);
            return;
        }
        if self.bare_start && self.state == State::Trace && f.pid.is_some() && f.comm.is_some() {
            self.dump_after_bare = true;
        }
        r.cpu = r.cpu.or(f.cpu);
        r.pid = r.pid.or(f.pid);
        r.comm = r.comm.take().or(f.comm);
        r.taint = r.taint.take().or(f.taint);
        r.kernel = r.kernel.take().or(f.kernel);
        r.hardware = r.hardware.take().or(f.hardware);
    }

    fn on_pc(&mut self, pc: &str) {
        let first = pc.split_whitespace().next().unwrap_or(pc);
        let frame = parse_frame(pc.as_bytes()).or_else(|| parse_frame(first.as_bytes()));
        let user_pc_after_trace = frame.is_none() && self.main_started;
        if self.r.rip.is_none() && self.target == Target::Main && !user_pc_after_trace {
            self.r.rip = Some(frame.as_ref().map_or_else(|| first.to_string(), |f| f.function.clone()));
        }
        let Some(mut f) = frame.filter(|f| !f.function.starts_with("0x")) else { return };
        f.section = self.section();
        f.raw = format!("RIP: {}", f.raw);
        if self.state == State::Trace || !self.main_started || self.target == Target::Extra {
            self.push(f);
        }
    }

    /// `<IRQ>`, `</IRQ>`, `<EOI>`, `<NMI>`, `<TASK>`, `</TASK>`... and trace headers.
    fn on_marker(&mut self, t: &str) -> bool {
        let section = match t {
            "<IRQ>" => Some(Section::Irq),
            "<NMI>" => Some(Section::Nmi),
            "<SOFTIRQ>" => Some(Section::Softirq),
            _ if t.starts_with("<#") && t.ends_with('>') => Some(Section::Exception),
            _ => None,
        };
        if let Some(s) = section {
            self.enter_trace();
            self.sections.push(s);
            return true;
        }
        match t {
            "</IRQ>" | "<EOI>" | "</NMI>" | "</SOFTIRQ>" | "<EOE>" => {
                self.sections.pop();
                true
            }
            _ if t.starts_with("</#") => {
                self.sections.pop();
                true
            }
            "<TASK>" => {
                self.enter_trace();
                self.sections.clear();
                true
            }
            "</TASK>" => {
                self.end_trace();
                true
            }
            "Call Trace:" | "Call trace:" | "Call Trace" | "Backtrace:" | "Call Trace: " => {
                self.restart_after_stray_frames();
                self.start_trace();
                true
            }
            _ => false,
        }
    }

    /// Lines that introduce a secondary stack (or, for kmemleak/KCSAN, the main one).
    fn on_stack_opener(&mut self, t: &str) -> bool {
        let t = t.strip_prefix("rcu: ").unwrap_or(t);
        if let Some(rest) = t.strip_prefix(PREEMPT_SITE) {
            // kernel/sched/core.c (__might_resched(), __schedule_bug()): where preemption
            // was disabled, one frame printed before the report's own trace, on this line
            // or the next: kept as an extra stack, never the start of the main trace.
            match parse_frame(rest.as_bytes()) {
                Some(f) => self.site_stack(f, PREEMPT_SITE),
                None => self.site = Some(PREEMPT_SITE),
            }
            return true;
        }
        if t.starts_with("Sending NMI from CPU") {
            self.awaits_other_cpus = true;
            return true;
        }
        let extra = [
            "Allocated by task",
            "Freed by task",
            "Last potentially related work creation",
            "Second to last potentially related work creation",
            "Uninit was stored to memory at",
            "Uninit was created at",
            "allocated by task",
            "freed by task",
            "Last call_rcu",
            "Second to last call_rcu",
            "RCU grace-period kthread stack dump",
            "Stack dump where RCU GP kthread last ran",
        ];
        // lockdep's earlier stacks (kernel/locking/lockdep.c: print_lock_trace() after
        // `{IN-HARDIRQ-W} state was registered at:`, `... which became HARDIRQ-irq-safe at:`)
        // and page_owner's (mm/page_owner.c: `page last allocated via order 0, ...`).
        let lockdep_stack = t.ends_with("state was registered at:")
            || (t.starts_with("... which became") && t.ends_with(" at:"))
            || t == "... acquired at:";
        let page_owner = t.starts_with("page last allocated via") || t.starts_with("page last free ");
        if extra.iter().any(|p| t.starts_with(p))
            || (t.starts_with("-> #") && t.ends_with(':'))
            || lockdep_stack
            || page_owner
        {
            self.open_extra(t);
            return true;
        }
        if self.r.kind == Some(Kind::Lockdep) && !self.main_started && t.ends_with(" at:") {
            // kernel/locking/lockdep.c print_unlock_imbalance_bug(): `is trying to release
            // lock (X) at:` and the site on the next line, before `stack backtrace:`: a lock
            // site (named first, as syzkaller does), not the start of the trace.
            self.site = Some(LOCK_SITE);
            return true;
        }
        let main_or_extra = t.starts_with("backtrace:")
            || t.starts_with("backtrace (crc")
            || (t.contains(" by task ") && t.contains(" on cpu ") && t.ends_with(':'))
            || t.starts_with("NMI backtrace for cpu")
            || t.starts_with("Task dump for CPU")
            || t.starts_with("stack backtrace:");
        if !main_or_extra {
            return false;
        }
        // kernel/rcu/tree_stall.h rcu_check_gp_kthread_starvation(): `Stack dump where RCU GP
        // kthread last ran:` then dump_cpu_task()'s `Task dump for CPU 0:`: that CPU's stack
        // is about the grace-period kthread, not the stall.
        if t.starts_with("Task dump for CPU")
            && self.state == State::Trace
            && self.target == Target::Extra
            && self.r.extra_stacks.last().is_some_and(|e| {
                e.frames.is_empty() && e.label.starts_with("Stack dump where RCU GP kthread last ran")
            })
        {
            return true;
        }
        if self.main_started {
            self.open_extra(t);
        } else if t.starts_with("backtrace") || t.contains(" by task ") {
            self.start_trace();
        } else {
            // `NMI backtrace for cpu 0` before any main trace: the next trace is the main one.
            self.state = State::Header;
            self.target = Target::Main;
            self.sections.clear();
        }
        true
    }

    /// One frame as an extra stack of its own ([`PREEMPT_SITE`], [`LOCK_SITE`]), the main
    /// trace untouched.
    fn site_stack(&mut self, f: Frame, label: &str) {
        if label == LOCK_SITE && self.lock_sites.len() < 2 {
            self.lock_sites.push(f.function.clone());
        }
        if self.r.extra_stacks.len() < MAX_EXTRA_STACKS {
            self.r.extra_stacks.push(ExtraStack { label: label.to_string(), frames: vec![f] });
        }
    }

    fn on_frame(&mut self, mut f: Frame) -> bool {
        if let Some(label) = self.site.take()
            && !self.main_started
        {
            self.site_stack(f, label);
            return true;
        }
        match self.state {
            State::Trace => {}
            State::Header if !self.main_started => {
                self.start_trace();
                self.bare_start = true;
            }
            _ => return false,
        }
        self.gap = 0;
        f.section = self.section();
        self.push(f);
        true
    }

    fn on_other(&mut self, t: &str) -> bool {
        // Deadlocks are named by their lock sites; other lockdep reports by their stack.
        let by_site = [
            "possible deadlock",
            "BUG: held lock freed",
            "WARNING: lock held when returning",
            "WARNING: still has locks held",
            // kernel/locking/lockdep.c print_lock_nested_lock_not_held(): `is trying to
            // lock: ... at: site` before its stack, which another report often cuts off.
            "WARNING: nested lock was not taken",
        ];
        // Before 4.15 lockdep printed `[ INFO: inconsistent lock state ]`, a report named by
        // the lock site of its `... takes:` line (syzkaller's format for it has no stack);
        // the `WARNING:` form of later kernels is named by its stack.
        let old_inconsistent = self.r.header.contains("INFO: inconsistent lock state");
        let sites = if old_inconsistent { 1 } else { 2 };
        if self.r.kind == Some(Kind::Lockdep)
            && self.lock_sites.len() < sites
            && (old_inconsistent || by_site.iter().any(|p| self.prefix.starts_with(p)))
            && let Some((_, at)) = t.split_once("}, at: ")
            // A symbolizer prints a site once per inlining level, the real frame last.
            && !at.trim_end().ends_with("[inline]")
            && let Some(f) = lock_site(at)
        {
            self.lock_sites.push(f);
        }
        if let Some(f) = t.strip_prefix("last function: ") {
            self.function.get_or_insert_with(|| f.trim().to_string());
            return true;
        }
        if let Some(pc) = t.strip_prefix("--- interrupt: ").and_then(|r| r.split_once(" at ")) {
            // powerpc: the PC an exception interrupted, mid-trace
            self.on_pc(pc.1);
            return true;
        }
        if let Some(rw) = ["Read of size", "Write of size"].iter().find(|p| t.starts_with(*p)) {
            if self.r.kind == Some(Kind::Kasan)
                && !self.prefix.ends_with(" Read")
                && !self.prefix.ends_with(" Write")
            {
                self.prefix.push_str(if rw.starts_with("Read") { " Read" } else { " Write" });
            }
            return true;
        }
        let sanitizer =
            matches!(self.r.kind(), Kind::Kasan | Kind::Kmsan | Kind::Kcsan | Kind::Kfence | Kind::Ubsan);
        if sanitizer && self.main_started && t.len() >= 20 && t.bytes().all(|b| b == b'=') {
            self.state = State::After;
            self.idle = IDLE_LIMIT; // closes at the next unrecognized line
            return false;
        }
        if t.contains("printk messages dropped") {
            // `** 12 printk messages dropped **`: the trace has holes
            self.r.truncated = true;
            return true;
        }
        if is_register_line(t) || t.is_empty() || t.starts_with("Modules linked in") {
            return true;
        }
        if self.state == State::Trace {
            self.gap += 1;
            if self.gap > TRACE_GAP {
                self.end_trace();
            }
        }
        false
    }

    /// A report's dump (`CPU: 0 PID: 9 Comm: ...`, then `Call Trace:`) after bare frames
    /// that began its main trace: those frames were the end of another task's trace,
    /// printed between the report's first lines and its dump (`entry_SYSCALL_64_after_hwframe`
    /// then a user-mode `RIP: 0033:`). They are kept as an extra stack, and the main trace
    /// starts again at this `Call Trace:`.
    fn restart_after_stray_frames(&mut self) {
        if !std::mem::take(&mut self.dump_after_bare) || self.target != Target::Main {
            return;
        }
        self.bare_start = false;
        let stray = std::mem::take(&mut self.r.frames);
        if self.r.extra_stacks.len() < MAX_EXTRA_STACKS {
            self.r
                .extra_stacks
                .push(ExtraStack { label: "printed before the report's dump".into(), frames: stray });
        }
        self.main_started = false;
        self.state = State::Header;
        self.sections.clear();
    }

    fn section(&self) -> Section {
        self.sections.last().copied().unwrap_or_default()
    }

    fn enter_trace(&mut self) {
        if self.state != State::Trace {
            self.start_trace();
        }
    }

    /// A `Call Trace:` header: the main trace if none yet, else an extra stack.
    fn start_trace(&mut self) {
        let opener_pending = self.state == State::Trace
            && self.target == Target::Extra
            && self.r.extra_stacks.last().is_some_and(|e| e.frames.is_empty());
        if opener_pending {
            return; // `Call Trace:` right after `Allocated by task 1:` and the like
        }
        if self.main_started && self.state != State::Trace {
            self.open_extra("Call Trace:");
            return;
        }
        self.state = State::Trace;
        self.gap = 0;
        if !self.main_started {
            self.target = Target::Main;
            self.main_started = true;
        }
    }

    fn open_extra(&mut self, label: &str) {
        self.flush_arm_caller();
        self.state = State::Trace;
        self.gap = 0;
        self.target = Target::Extra;
        self.sections.clear();
        if self.r.extra_stacks.len() < MAX_EXTRA_STACKS {
            self.r.extra_stacks.push(ExtraStack { label: label.to_string(), frames: Vec::new() });
        } else {
            self.extra_full = true;
        }
    }

    fn end_trace(&mut self) {
        self.flush_arm_caller();
        self.state = State::After;
        self.sections.clear();
    }

    fn flush_arm_caller(&mut self) {
        if let Some(f) = self.arm_caller.take() {
            self.push(f);
            self.arm_caller = None;
        }
    }

    fn push(&mut self, f: Frame) {
        self.arm_caller = if f.raw.contains(" from ") {
            arm32_caller(&f.raw).map(|c| Frame { section: f.section, ..c })
        } else {
            None
        };
        let frames = match (self.target, self.r.extra_stacks.last_mut()) {
            (Target::Main, _) => &mut self.r.frames,
            (Target::Extra, Some(e)) if !self.extra_full => &mut e.frames,
            (Target::Extra, _) => return,
        };
        if frames.last().is_some_and(|l| {
            l.raw.starts_with("RIP: ") && l.function == f.function && !f.raw.starts_with("RIP: ")
        }) {
            return; // arm64 prints the pc function again as the first frame
        }
        let cap = if self.target == Target::Main { MAX_FRAMES } else { MAX_EXTRA_FRAMES };
        if frames.len() >= cap {
            self.r.dropped_frames = self.r.dropped_frames.saturating_add(1);
            return;
        }
        frames.push(f);
    }
}

/// A first line up to the function it names (`WARNING: CPU: 1 PID: 9 at lib/x.c:38 `).
fn stem<'a>(line: &'a str, function: Option<&str>) -> Option<&'a str> {
    let f = function?;
    line.find(&format!(" {f}")).map(|i| &line[..i])
}

/// The line before the frame where preemption was disabled, in sleep-in-atomic reports.
const PREEMPT_SITE: &str = "Preemption disabled at:";

/// The label of the extra stack holding the lock site lockdep prints on the line after its
/// `... at:` (`is trying to release lock (X) at:`).
pub const LOCK_SITE: &str = "lock site";

/// A time as the report keeps it: /dev/kmsg microseconds become seconds like dmesg's
/// (`220317` is `0.220317`, a record of the first second after boot).
fn time_text(t: &[u8]) -> String {
    let t = String::from_utf8_lossy(t);
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        let padded = format!("{t:0>7}");
        let (s, us) = padded.split_at(padded.len() - 6);
        return format!("{s}.{us}");
    }
    t.into_owned()
}

/// Lockdep reports that syzkaller's formats (pkg/report/linux.go) name by their first lock
/// site as printed, with no skip list (a `report:` pattern and no stack): recursive locking
/// and irq lock inversion (`is trying to acquire lock:`/`just changed the state of lock:`,
/// then `..., at: FUNC`), a held lock freed, locks still held, a lock held when returning to
/// user space, and the pre-4.15 `[ INFO: ... ]` forms. The site is the `_RET_IP_` lockdep
/// was given: a locking wrapper there (`lock_sock_nested` taking `sk_lock.slock`) is what
/// those titles name. A circular dependency is not one of them: its format skips machinery.
const RAW_SITE_HEADERS: &[&str] = &[
    "possible recursive locking detected",
    "possible irq lock inversion dependency detected",
    "held lock freed",
    "still has locks held",
    "lock held when returning to user space",
    "INFO: possible circular locking dependency detected",
    "INFO: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
    "INFO: inconsistent lock state",
];

/// The first lock site of `r` when its format names it as printed ([`RAW_SITE_HEADERS`]).
fn raw_site(r: &Report, sites: &[String]) -> Option<String> {
    let site = sites.first()?;
    let named = r.kind == Some(Kind::Lockdep) && RAW_SITE_HEADERS.iter().any(|h| r.header.contains(h));
    (named && !site.is_empty() && !is_address(site)).then(|| title_name(site).to_string())
}

/// `[<ffffffff81234567>] func+0x1/0x2 file.c:12` / `func+0x1/0x2` after lockdep's `at: `.
fn lock_site(at: &str) -> Option<String> {
    let f = parse_frame(at.as_bytes()).or_else(|| parse_frame(at.split_whitespace().last()?.as_bytes()))?;
    Some(f.function)
}

fn is_end_marker(t: &str) -> bool {
    let t = t.trim_start();
    t.starts_with("---[ end trace")
        || t.starts_with("---[ end Kernel panic")
        || t.starts_with("Kernel Offset:")
        || t.starts_with("Rebooting in ")
}

/// Register dump lines (`RSP: 0018:...`, `RAX: ...`, `Code: ...`, `x29: ...`, `lr : ...`).
fn is_register_line(t: &str) -> bool {
    let Some(colon) = t.find(':') else { return false };
    let name = t[..colon].trim_end();
    let short = !name.is_empty() && name.len() <= 8;
    let regname = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b' ');
    let value = t[colon + 1..].trim_start();
    short && regname && (value.bytes().next().is_some_and(|b| b.is_ascii_hexdigit()) || name == "Code")
}

#[cfg(test)]
mod tests {
    use super::{ReportExtractor, time_text};
    use crate::report::Kind;

    /// An x86 oops dump after its first line: the task, the faulting PC in `rip`, and a
    /// call trace of `callers`.
    fn x86_dump(rip: &str, callers: &[&str]) -> String {
        let mut s = format!(
            "[ 12.5] CPU: 0 PID: 5000 Comm: syz Not tainted 6.1.0 #1\n[ 12.5] RIP: 0010:{rip}+0x1/0x2\n\
             [ 12.5] Call Trace:\n[ 12.5]  <TASK>\n"
        );
        for c in callers {
            s.push_str(&format!("[ 12.5]  {c}+0x1/0x2\n"));
        }
        s
    }

    fn titles(log: &str) -> Vec<(String, Kind)> {
        ReportExtractor::extract_all(log.as_bytes())
            .into_iter()
            .map(|r| (r.title.clone(), r.kind()))
            .collect()
    }

    /// Recursive locking is named by the site printed after `is trying to acquire lock:`,
    /// locking wrapper or not (lockdep's `_RET_IP_`, as syzkaller's format takes it).
    #[test]
    fn recursive_locking_is_named_by_the_site_as_printed() {
        let log = "\
[   40.1] WARNING: possible recursive locking detected
[   40.1] 6.1.0 #1 Not tainted
[   40.1] --------------------------------------------
[   40.1] syz-executor/5000 is trying to acquire lock:
[   40.1] ffff8880 (slock-AF_INET){+.-.}-{2:2}, at: lock_sock_nested+0x3a/0xf0
[   40.1] 
[   40.1] but task is already holding lock:
[   40.1] ffff8880 (slock-AF_INET){+.-.}-{2:2}, at: tcp_v4_rcv+0x1f00/0x2c00
[   40.1] stack backtrace:
[   40.1] Call Trace:
[   40.1]  <TASK>
[   40.1]  dump_stack_lvl+0x1/0x2
[   40.1]  __lock_acquire+0x1/0x2
[   40.1]  lock_acquire+0x1/0x2
[   40.1]  _raw_spin_lock_bh+0x1/0x2
[   40.1]  lock_sock_nested+0x3a/0xf0
[   40.1]  tcp_sendmsg+0x1/0x2
";
        assert_eq!(titles(log), [("possible deadlock in lock_sock_nested".to_string(), Kind::Lockdep)]);
    }

    /// A UBSAN check reported in full (`UBSAN: array-index-out-of-bounds in file:line`) and
    /// the same check trapping (CONFIG_UBSAN_TRAP: x86 `UBSAN: array index out of bounds at
    /// func+off`, arm64 `Internal error: UBSAN: ...`) are one bug with one title.
    #[test]
    fn ubsan_reports_and_traps_share_a_title() {
        let x86 = &x86_dump("foo_bar", &["baz"]);
        let want = [("UBSAN: array-index-out-of-bounds in foo_bar".to_string(), Kind::Ubsan)];
        let full = format!("[ 12.3] UBSAN: array-index-out-of-bounds in net/foo.c:12:3\n{x86}");
        assert_eq!(titles(&full), want);
        let trap = format!(
            "[ 12.3] UBSAN: array index out of bounds at foo_bar+0x12/0x30\n\
             [ 12.3] Oops: invalid opcode: 0000 [#1] PREEMPT SMP KASAN\n{x86}"
        );
        assert_eq!(titles(&trap), want);
        let arm64 = "\
[ 12.4] Internal error: UBSAN: array index out of bounds: 00000000f2005512 [#1] PREEMPT SMP
[ 12.4] CPU: 0 PID: 5000 Comm: syz Not tainted 6.1.0 #1
[ 12.4] pc : foo_bar+0x1/0x2
[ 12.4] lr : baz+0x1/0x2
[ 12.4] Call trace:
[ 12.4]  foo_bar+0x1/0x2
[ 12.4]  baz+0x1/0x2
";
        assert_eq!(titles(arm64), want);
        // Another check, and a trap in code without a symbol (named by its trace).
        let div = format!("[ 12.3] UBSAN: integer division overflow at foo_bar+0x12/0x30\n{x86}");
        assert_eq!(titles(&div), [("UBSAN: division-overflow in foo_bar".to_string(), Kind::Ubsan)]);
        let anon = format!("[ 12.3] UBSAN: shift out of bounds at 0xffffffffc0001234\n{x86}");
        assert_eq!(titles(&anon), [("UBSAN: shift-out-of-bounds in foo_bar".to_string(), Kind::Ubsan)]);
        // The arm64 trap after another report is a report of its own.
        let after =
            format!("[ 11.0] BUG: sleeping function called from invalid context at fs/foo.c:1\n{x86}{arm64}");
        assert_eq!(titles(&after).len(), 2);
    }

    /// mm/oom_kill.c panics when nothing can be killed: the OOM kill is memory running out,
    /// the panic that follows it is a report of its own (a crash), not part of the kill's.
    #[test]
    fn a_panic_after_an_oom_kill_is_its_own_report() {
        let log = "\
[ 12.1] syz invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000
[ 12.1] CPU: 0 PID: 5000 Comm: syz Not tainted 6.1.0 #1
[ 12.1] Call Trace:
[ 12.1]  <TASK>
[ 12.1]  dump_stack_lvl+0x1/0x2
[ 12.1]  dump_header+0x1/0x2
[ 12.1]  out_of_memory+0x1/0x2
[ 12.1]  __alloc_pages+0x1/0x2
[ 12.1]  </TASK>
[ 12.2] Kernel panic - not syncing: System is deadlocked on memory
";
        let reports = ReportExtractor::extract_all(log.as_bytes());
        let kinds: Vec<Kind> = reports.iter().map(|r| r.kind()).collect();
        assert_eq!(kinds, [Kind::Oom, Kind::Panic]);
        assert_eq!(reports[1].title, "kernel panic: System is deadlocked on memory");
        // A panic after a bug report is still that report's consequence.
        let bug = log.replace(
            "syz invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000",
            "kernel BUG at mm/foo.c:12!",
        );
        assert_eq!(ReportExtractor::extract_all(bug.as_bytes()).len(), 1);
    }

    /// lib/list_debug.c's check BUG()s with CONFIG_BUG_ON_DATA_CORRUPTION and WARN()s
    /// without it: the same message makes a corrupted-list BUG or a WARNING, as printed.
    #[test]
    fn a_list_corruption_is_the_bug_or_the_warning_the_kernel_printed() {
        let trace = &x86_dump("__list_del_entry_valid", &["foo_bar", "baz"]);
        let msg = "[ 12.4] list_del corruption. prev->next should be ffff888, but was ffff999\n";
        let bug = format!(
            "{msg}[ 12.4] kernel BUG at lib/list_debug.c:62!\n[ 12.4] invalid opcode: 0000 [#1] SMP\n{trace}"
        );
        assert_eq!(titles(&bug), [("BUG: corrupted list in foo_bar".to_string(), Kind::Bug)]);
        let warn =
            "[ 12.4] WARNING: CPU: 0 PID: 5000 at lib/list_debug.c:62 __list_del_entry_valid+0x1/0x2\n";
        let expected = [("WARNING in foo_bar".to_string(), Kind::Warning)];
        assert_eq!(titles(&format!("{msg}{warn}{trace}")), expected);
        // Before 4.10 WARN() printed its message after the `WARNING:` line.
        assert_eq!(titles(&format!("{warn}{msg}{trace}")), expected);
    }

    /// A fault in a function whose name looks like a primitive (`raw_sendmsg` of
    /// net/ipv4/raw.c) is named by it: only syzkaller's skip list and what prints a report
    /// are machinery for every report.
    #[test]
    fn a_fault_in_raw_sendmsg_is_named_by_it() {
        let log = "\
[   50.1] general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN
[   50.1] CPU: 0 PID: 5000 Comm: syz-executor Not tainted 6.1.0 #1
[   50.1] RIP: 0010:raw_sendmsg+0x123/0x1a00
[   50.1] Call Trace:
[   50.1]  <TASK>
[   50.1]  inet_sendmsg+0x1/0x2
[   50.1]  sock_sendmsg+0x1/0x2
";
        assert_eq!(
            titles(log),
            [("general protection fault in raw_sendmsg".to_string(), Kind::GeneralProtectionFault)]
        );
    }

    /// Before 4.15 lockdep's `[ INFO: inconsistent lock state ]` is named by the lock site of
    /// its `takes:` line, not by its stack (which starts in lockdep's own `valid_state`).
    #[test]
    fn old_inconsistent_lock_state_is_named_by_the_site_it_takes() {
        let log = "\
[  762.903890] [ INFO: inconsistent lock state ]
[  762.903903] 3.3.4 #8 Not tainted
[  762.904344] inconsistent {IN-SOFTIRQ-W} -> {SOFTIRQ-ON-W} usage.
[  762.904542] squid/1603 [HC0[0]:SC0[0]:HE1:SE1] takes:
[  762.904542]  (key#3){+.?...}, at: [<c0232cc4>] __percpu_counter_sum+0xd/0x58
[  762.904542] {IN-SOFTIRQ-W} state was registered at:
[  762.904542]   [<c0158b84>] __lock_acquire+0x284/0xc26
[  762.904542]   [<c0232c93>] __percpu_counter_add+0x58/0x7c
[  762.904542] 1 lock held by squid/1603:
[  762.904542]  #0:  (sk_lock-AF_INET){+.+.+.}, at: [<c03055c0>] tcp_sendmsg+0xa/0xc
[  762.904542] stack backtrace:
[  762.904542] Pid: 1603, comm: squid Not tainted 3.3.4 #8
[  762.904542] Call Trace:
[  762.904542]  [<c015873a>] valid_state+0x1f6/0x201
[  762.904542]  [<c0158816>] mark_lock+0xd1/0x1bb
[  762.904542]  [<c0159111>] mark_irqflags+0x9a/0x130
[  762.904542]  [<c0232cc4>] __percpu_counter_sum+0xd/0x58
";
        assert_eq!(
            titles(log),
            [("inconsistent lock state in __percpu_counter_sum".to_string(), Kind::Lockdep)]
        );
        // The form of later kernels is named by its stack, past lockdep's own frames.
        let new = log.replace("[ INFO: inconsistent lock state ]", "WARNING: inconsistent lock state");
        assert_eq!(
            titles(&new),
            [("inconsistent lock state in __percpu_counter_sum".to_string(), Kind::Lockdep)]
        );
        let new = new.replace(
            "]  [<c0232cc4>] __percpu_counter_sum+0xd/0x58\n",
            "]  [<c0232cc4>] tcp_push+0xd/0x58\n",
        );
        assert_eq!(titles(&new), [("inconsistent lock state in tcp_push".to_string(), Kind::Lockdep)]);
    }

    /// A report's first word alone on its line (the rest went to another line when two CPUs'
    /// output interleaved) is a report of that kind, named `corrupted` as syzkaller does.
    #[test]
    fn a_first_word_alone_is_a_corrupted_report() {
        let log = "[ 10.1] BUG:\n[ 10.2] CPU: 0 PID: 1 Comm: sh Not tainted 6.1.0 #1\n[ 10.3] Call Trace:\n[ 10.4]  foo+0x1/0x2\n";
        let t = titles(log);
        assert_eq!((t.len(), t[0].1), (1, Kind::Bug));
        assert!(t[0].0.starts_with("BUG: corrupted"), "{t:?}");
        assert_eq!(titles(&log.replace("BUG:", "WARNING:"))[0].1, Kind::Warning);
        // Not a word inside a message, and not the word with its message.
        assert!(titles("[ 10.1] foo: BUG:\n").is_empty());
        // syz-executor's message is not the kernel's.
        assert!(titles("[ 10.1] BUG: no syscalls can create resource fd_bpf_map\n").is_empty());
    }

    /// SLUB before 2.6.35 printed no taint in its first line (`BUG cache: message`); an
    /// object's `INFO: Allocated in 0xfdc88c28` (an unsymbolized module) names no function.
    #[test]
    fn old_slub_reports() {
        let log = "\
BUG sas_task: Objects remaining on kmem_cache_close()
INFO: Slab 0xffffea001f0eba00 objects=34 used=1 fp=0xffff8807c3aecb00 flags=0x8000000000004080
Pid: 22919, comm: modprobe Not tainted 3.2.0 #2
Call Trace:
 [<ffffffff810fcdcd>] slab_err+0xb0/0xd2
 [<ffffffff81100486>] kmem_cache_destroy+0x11d/0x270
 [<ffffffffa0112bdc>] sas_class_exit+0x10/0x12 [libsas]
";
        let t = titles(log);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].1, Kind::Bug);
        assert!(t[0].0.starts_with("BUG: Objects remaining on kmem_cache_close()"), "{t:?}");
        let log = "\
BUG kmalloc-64 (Not tainted): Poison overwritten
INFO: 0xf2751962-0xf2751995. First byte 0x98 instead of 0x6b
INFO: Allocated in 0xfdc88c28 age=79 cpu=0 pid=1329
 __slab_alloc+0x49f/0x533
 kmem_cache_alloc_trace+0x10d/0x140
 0xfdc88c28
";
        let t = titles(log);
        assert!(!t[0].0.contains("0xfdc88c28"), "{t:?}");
    }

    /// arm32's `Internal error: kernel stack overflow` is titled by its first frame as any
    /// `Internal error`, not by the stall rule of the panic that arm64 and x86 print.
    #[test]
    fn arm32_stack_overflow_is_an_internal_error() {
        let log = "\
Insufficient stack space to handle exception!
Internal error: kernel stack overflow: 0 [#1] PREEMPT SMP ARM
CPU: 0 PID: 29545 Comm: syz-executor.0 Not tainted 6.3.0 #0
PC is at should_fail_ex+0x4/0x1f4
Backtrace:
[<80471b28>] (__alloc_pages) from [<80436d94>] (__kmalloc_large_node+0x50/0xac)
[<80436d44>] (__kmalloc_large_node) from [<812ffc04>] (kmalloc_reserve+0x68/0xfc)
[<812ffb9c>] (kmalloc_reserve) from [<81304bd0>] (pskb_expand_head+0x84/0x368)
[<81304b4c>] (pskb_expand_head) from [<8151cf58>] (ip_tunnel_xmit+0x4e8/0xaf4)
[<8151ca70>] (ip_tunnel_xmit) from [<8152dae0>] (__gre_xmit+0x140/0x234)
[<80d1e2c0>] (sock_sendmsg) from [<80d1f0a0>] (packet_sendmsg+0x24/0x30)
";
        let t = titles(log);
        assert_eq!(t[0].1, Kind::Oops);
        assert_eq!(t[0].0, "Internal error in pskb_expand_head");
    }

    /// /dev/kmsg microseconds read as dmesg prints them, in the first second after boot too.
    #[test]
    fn a_generic_warning_without_timestamps_needs_a_trace() {
        let trace = "CPU: 0 PID: 1 Comm: sh Not tainted 6.1.0 #1\nCall Trace:\n foo_bar+0x1/0x2\n";
        // A console without printk.time: the WARN() message and its trace.
        let log = format!("random: crng init done\nWARNING: something odd happened\n{trace}");
        let t = titles(&log);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0], ("WARNING: something odd happened in foo_bar".to_string(), Kind::Warning));
        // Boot firmware's line, no trace after it, before a timestamped kernel log.
        let firmware =
            "WARNING: RO_VPD is uninitialized\nStarting kernel ...\n[    0.000000] Linux version 6.1.0\n";
        assert!(titles(firmware).is_empty(), "{:?}", titles(firmware));
        // Firmware's line does not take over the kernel's first report.
        let panic = "WARNING: RO_VPD is uninitialized\n[    0.0] Linux version 6.1.0\n\
[    0.5] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n\
[    0.6] Call Trace:\n[    0.7]  mount_block_root+0x1/0x2\n";
        let t = titles(panic);
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(t[0].0.starts_with("kernel panic: VFS: Unable to mount root fs"), "{t:?}");
        // Once the log is timestamped, an unstamped one is someone else's.
        let late = format!("[    0.000000] Linux version 6.1.0\nWARNING: something odd happened\n{trace}");
        assert!(titles(&late).iter().all(|(t, _)| !t.starts_with("WARNING")), "{:?}", titles(&late));
    }

    #[test]
    fn specific_headers_are_found_in_the_middle_of_a_line() {
        let trace = "[ 10.2] Call Trace:\n[ 10.3]  foo_bar+0x1/0x2\n";
        for (line, want) in [
            ("executing program 1WARNING: possible circular locking dependency detected", Kind::Lockdep),
            ("syz-executor: INFO: trying to register non-static key.", Kind::Lockdep),
            ("xyz BUG: spinlock lockup suspected on CPU#0, sh/1", Kind::Bug),
            ("abc WARNING: kernel/foo.c:12 at foo_bar+0x1/0x2, CPU#0: sh/1", Kind::Warning),
            ("abcgeneral protection fault: 0000 [#1] SMP KASAN", Kind::GeneralProtectionFault),
        ] {
            let t = titles(&format!("[ 10.1] {line}\n{trace}"));
            assert_eq!(t.iter().map(|t| t.1).collect::<Vec<_>>(), [want], "{line}: {t:?}");
        }
        // Inside another word, in a quotation, a user task's fault, or an exception's words
        // without die()'s counter: not a report mid-line.
        for line in [
            "Boot_DEBUG: Bad page state",
            "traps: a[1] general protection fault ip:4004 sp:7ffc error:0 in a[400000+1000]",
            "general protection fault ip:4004 sp:7ffc error:0",
            "foo: Internal error: bad state",
            "CPUINFO: task foo blocked for more than 10 seconds.",
            "OF: ERROR: next of_node_put() will result in a kobject warning 'refcount_t: underflow; use-after-free.'",
        ] {
            assert!(titles(&format!("[ 10.1] {line}\n")).is_empty(), "{line}");
        }
        // The first words alone after a message prefix, on a line printk stamped, are the
        // kernel's (`pr_fmt()`, dev_printk()): a report, as syzkaller takes them; but not
        // the filesystems' notices about their images.
        for (line, want) in [
            ("usb 1-1: BUG: something odd", "BUG: something odd"),
            (
                "md: WARNING: sda1 appears to be on the same physical disk as sdb1.",
                "WARNING: sda1 appears to be on the same physical disk as sdb1",
            ),
            ("eth0: rxq[0]: HW BUG: zero DMA desc", "BUG: zero DMA desc"),
        ] {
            let t = titles(&format!("[ 10.1] {line}\n"));
            assert_eq!(t.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(), [want], "{line}");
        }
        for line in [
            "XFS (loop4): WARNING: Reset corrupted AGFL on AG 0. 1 blocks leaked.",
            "EXT4-fs (loop0): warning: mounting fs with errors, running e2fsck is recommended",
            "capability: warning: `syz' uses deprecated v2 capabilities in a way that may be insecure",
            // The same upper-cased whole by a syslog copy: `WARNING:` as syzkaller's header.
            "EXT4-FS (LOOP0): WARNING: MOUNTING FS WITH ERRORS, RUNNING E2FSCK IS RECOMMENDED",
            "CAPABILITY: WARNING: `SYZ' USES DEPRECATED V2 CAPABILITIES IN A WAY THAT MAY BE INSECURE",
        ] {
            assert!(titles(&format!("[ 10.1] {line}\n")).is_empty(), "{line}");
        }
        // Without a timestamp in a timestamped log, the line is another program's.
        for line in ["mkfs: WARNING: at least 1 block needed", "ssh-agent BUG: key not found"] {
            assert!(titles(&format!("[ 10.0] Linux version 6.1.0\n{line}\n")).is_empty(), "{line}");
        }
    }

    #[test]
    fn a_line_the_console_replays_starts_its_report_once() {
        let log = "\
[ 10.1] WARNING: CPU: 0 PID: 1 at fs/fo
** replaying previous printk message **
[ 10.1] WARNING: CPU: 0 PID: 1 at fs/foo.c:12 foo_bar+0x1/0x2
[ 10.2] Call Trace:
[ 10.3]  foo_bar+0x1/0x2
";
        let t = titles(log);
        assert_eq!(t, [("WARNING in foo_bar".to_string(), Kind::Warning)]);
    }

    /// A one-line report the console cut and replays is one report, not two.
    #[test]
    fn a_one_line_report_the_console_replays_counts_once() {
        let log = "\
[ 10.1] unregister_netdevice: waiting for lo to be
** replaying previous printk message **
[ 10.1] unregister_netdevice: waiting for lo to become free. Usage count = 2
[ 20.1] unregister_netdevice: waiting for lo to become free. Usage count = 2
";
        let r = ReportExtractor::extract_all(log.as_bytes());
        assert_eq!(r.iter().map(|r| r.line).collect::<Vec<_>>(), [3, 4]);
        assert!(r.iter().all(|r| r.title == "unregister_netdevice: waiting for DEV to become free"));
        // The marker after other text: that text is the message cut, the line before is whole.
        let log = "\
[ 10.0] unregister_netdevice: waiting for lo to become free. Usage count = 2
[ 10.1] e1000e: eth0 NIC Link is Up 1000 Mbps Fu** replaying previous printk message **
[ 10.1] e1000e: eth0 NIC Link is Up 1000 Mbps Full Duplex
";
        let r = ReportExtractor::extract_all(log.as_bytes());
        assert_eq!(r.iter().map(|r| r.line).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn memory_running_out_is_not_a_bug() {
        let log = "\
[ 10.1] syz-executor invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
[ 10.2] Call Trace:
[ 10.3]  dump_stack+0x1/0x2
[ 10.4]  oom_kill_process+0x1/0x2
[ 11.1] syz-executor: page allocation failure: order:4, mode:0x40dc0(GFP_KERNEL|__GFP_COMP)
[ 11.2] Call Trace:
[ 11.3]  warn_alloc+0x1/0x2
[ 12.1] WARNING: CPU: 0 PID: 1 at fs/foo.c:1 foo_bar+0x1/0x2
[ 12.2] Call Trace:
[ 12.3]  foo_bar+0x1/0x2
";
        let r = ReportExtractor::extract_all(log.as_bytes());
        let bugs: Vec<bool> = r.iter().map(super::Report::is_bug).collect();
        assert_eq!(bugs, [false, false, true], "{:?}", r.iter().map(|r| &r.title).collect::<Vec<_>>());
    }

    #[test]
    fn go_runtime_panics_are_one_line_reports() {
        let log = "[ 10.1] ok\npanic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\n";
        assert_eq!(
            titles(log),
            [("panic: runtime error: index out of range [NUM] with length NUM".to_string(), Kind::Other)]
        );
        let sentry = "panic: Sentry detected 1 stuck task(s):\n";
        assert_eq!(titles(sentry)[0].0, "panic: Sentry detected stuck tasks");
        // Not a kernel function's name ending in `panic:`.
        assert!(titles("[ 10.1] skb_over_panic: text:0000 len:1\n").is_empty());
    }

    #[test]
    fn kmsg_microseconds_become_dmesg_seconds() {
        assert_eq!(time_text(b"3626182076"), "3626.182076");
        assert_eq!(time_text(b"220317"), "0.220317");
        assert_eq!(time_text(b"0"), "0.000000");
        assert_eq!(time_text(b"1000000"), "1.000000");
        assert_eq!(time_text(b"12.5"), "12.5");
        assert_eq!(time_text(b"Nov 22 00:32:10"), "Nov 22 00:32:10");
    }
}
