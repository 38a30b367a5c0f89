//! Recognizing the first line of a report and what it says (kind, title prefix, function).

use std::sync::LazyLock;

use memchr::memmem::Finder;

use super::Kind;

/// Substrings searched in every line, with their searchers built once.
static HARD_LOCKUP: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new("Watchdog detected hard LOCKUP on cpu"));
static OOM: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(" invoked oom-killer: "));
static ALLOC_FAILURE: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(": page allocation failure: order:"));

/// The title of an allocation failure report (mm/page_alloc.c warn_alloc()).
pub(crate) const ALLOC_FAILURE_TITLE: &str = "page allocation failure";

/// The title of a Rust panic until its message line is read (`extract.rs`).
pub(crate) const RUST_PANIC: &str = "rust_kernel: panicked";

/// Characters kept of a message in a title.
const MAX_TITLE: usize = 160;

fn find(t: &str, f: &Finder<'_>) -> Option<usize> {
    f.find(t.as_bytes())
}

/// How a start line relates to a report already open in the same context.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Starts a new report (closing an open one that already has frames or another kind).
    New,
    /// A consequence of the open report (`Kernel panic`, `Oops:`): absorbed when one is open.
    Follows,
    /// A preamble (`list_add corruption.`, `refcount_t: underflow`): the next report line
    /// printed before any frame is absorbed into it.
    Leads,
    /// A one-line report (`unregister_netdevice: waiting for ...`): complete by itself; it
    /// neither closes nor joins an open report.
    Single,
}

/// What a start line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Start {
    pub(crate) kind: Kind,
    /// Title without the ` in function` part (`WARNING`, `KASAN: use-after-free`).
    pub(crate) prefix: String,
    /// Function named by the line itself (`WARNING: ... at file:12 func+0x1/0x2`).
    pub(crate) function: Option<String>,
    pub(crate) role: Role,
    /// Task named by the line (`INFO: task sh:9657 blocked`, `[comm:pid]`).
    pub(crate) comm: Option<String>,
    pub(crate) pid: Option<u32>,
    /// CPU named by the line (`CPU#3 stuck`).
    pub(crate) cpu: Option<u32>,
    /// Only a report start on a line with a timestamp: the words are generic enough that
    /// boot firmware prints them too (`WARNING: RO_VPD is uninitialized`). Implies `generic`.
    pub(crate) needs_stamp: bool,
    /// Only a report start at the beginning of a line: the first words alone (`BUG: msg`),
    /// which other programs' output may hold too (see [`embedded`]).
    pub(crate) generic: bool,
}

impl Start {
    fn new(kind: Kind, prefix: impl Into<String>) -> Start {
        Start {
            kind,
            prefix: prefix.into(),
            function: None,
            role: Role::New,
            comm: None,
            pid: None,
            cpu: None,
            needs_stamp: false,
            generic: false,
        }
    }
    fn func(mut self, f: Option<String>) -> Start {
        self.function = f;
        self
    }
    fn role(mut self, r: Role) -> Start {
        self.role = r;
        self
    }
}

/// Classifies `text` (prefix stripped) as the first line of a report.
pub(crate) fn classify(text: &str) -> Option<Start> {
    let t = normalize(text);
    panic_line(t)
        .or_else(|| sanitizer(t))
        .or_else(|| lockups_and_stalls(t))
        .or_else(|| faults(t))
        .or_else(|| lockdep(t))
        .or_else(|| warning(t))
        .or_else(|| bug(t))
        .or_else(|| misc(t))
}

/// A first line as the header table (`headers.rs`) matches it: trimmed, without lockdep's
/// `[ ... ]` and the `rcu: `, `watchdog: ` prefixes.
pub(crate) fn normalize(text: &str) -> &str {
    let t = text.trim();
    let t = t.strip_prefix("[ ").and_then(|s| s.strip_suffix(" ]")).unwrap_or(t);
    strip_subsystem(t)
}

fn strip_subsystem(t: &str) -> &str {
    for p in ["watchdog: ", "NMI watchdog: ", "rcu: ", "kernel: "] {
        if let Some(r) = t.strip_prefix(p) {
            return r;
        }
    }
    t
}

fn panic_line(t: &str) -> Option<Start> {
    let msg = t.strip_prefix("Kernel panic - not syncing: ")?;
    // `stack-protector: Kernel stack is corrupted in: udp4_lib_lookup2+0x1/0x2`
    let func = msg.split_once(" in: ").map(|(_, f)| header_function(f));
    let prefix = if msg.starts_with("stack-protector") {
        "kernel panic: stack is corrupted".to_string()
    } else if msg.starts_with("corrupted stack end") {
        "kernel panic: corrupted stack end".to_string()
    } else if msg.starts_with("kernel stack overflow") {
        // arch/arm64/kernel/traps.c handle_bad_stack() (after `Insufficient stack space to
        // handle exception!`), x86 handle_stack_overflow(): named by the recursing code, as
        // syzkaller's `kernel stack overflow in FUNC`.
        "kernel stack overflow".to_string()
    } else {
        format!("kernel panic: {}", clean_panic(msg))
    };
    Some(Start::new(Kind::Panic, prefix).role(Role::Follows).func(func))
}

fn sanitizer(t: &str) -> Option<Start> {
    let table = [
        ("BUG: KASAN: ", Kind::Kasan, "KASAN: "),
        ("BUG: KMSAN: ", Kind::Kmsan, "KMSAN: "),
        ("BUG: KFENCE: ", Kind::Kfence, "KFENCE: "),
        ("BUG: KCSAN: ", Kind::Kcsan, "KCSAN: "),
        ("UBSAN: ", Kind::Ubsan, "UBSAN: "),
    ];
    for (pat, kind, title) in table {
        let Some(rest) = t.strip_prefix(pat) else { continue };
        if kind == Kind::Ubsan
            && !rest.contains(" in ")
            && let Some((check, at)) = rest.rsplit_once(" at ")
            && (at.contains('+') || at.starts_with("0x"))
        {
            // A UBSAN trap (CONFIG_UBSAN_TRAP): x86 handle_bug() prints lib/ubsan.c
            // report_ubsan_failure()'s name of the check and the trapping code,
            // `UBSAN: array index out of bounds at foo+0x12/0x30`.
            let func = Some(header_function(at)).filter(|f| !f.starts_with("0x"));
            return Some(Start::new(kind, format!("UBSAN: {}", ubsan_check(check))).func(func));
        }
        let (what, func) = match rest.split_once(" in ") {
            Some((w, f)) => (w, Some(f)),
            None => (rest, None),
        };
        let what = what.split(" on address ").next().unwrap_or(what);
        let what = match what {
            "double-free or invalid-free" | "double-free" => "invalid-free",
            "Undefined behaviour" => "undefined-behaviour",
            w => w,
        };
        let func = func.filter(|_| kind != Kind::Ubsan).map(header_function);
        return Some(Start::new(kind, format!("{title}{what}")).func(func));
    }
    if t.starts_with("KASAN: null-ptr-deref in range") || t.starts_with("KASAN: maybe wild-memory-access") {
        return Some(Start::new(Kind::Kasan, "KASAN: null-ptr-deref").role(Role::Follows));
    }
    None
}

/// A UBSAN trap's check as lib/ubsan.c report_ubsan_failure() names it (`array index out of
/// bounds`) in the words of the same check's full report (`array-index-out-of-bounds`,
/// lib/ubsan.c ubsan_prologue()), so that both forms of one bug share a title. A trap does
/// not say an overflow's signedness: the kernel instruments signed arithmetic. Names without
/// a counterpart are kept as printed.
fn ubsan_check(check: &str) -> &str {
    match check.trim() {
        "array index out of bounds" => "array-index-out-of-bounds",
        "shift out of bounds" => "shift-out-of-bounds",
        "integer addition overflow" | "integer subtraction overflow" | "integer multiplication overflow" => {
            "signed-integer-overflow"
        }
        "integer negation overflow" => "negation-overflow",
        "integer division overflow" => "division-overflow",
        "loading invalid value" => "invalid-load",
        "alignment assumption" => "alignment-assumption",
        c => c,
    }
}

/// `func+0x1/0x2` or `func / func2` → the function part(s).
fn header_function(f: &str) -> String {
    let f = f.trim();
    if f.contains(" / ") {
        return f.split(" / ").map(header_function).collect::<Vec<_>>().join(" / ");
    }
    let end = f.find(['+', ' ', '(']).unwrap_or(f.len());
    f[..end].to_string()
}

fn lockups_and_stalls(t: &str) -> Option<Start> {
    if let Some(rest) = t.strip_prefix("BUG: soft lockup - CPU#") {
        let mut s = Start::new(Kind::SoftLockup, "BUG: soft lockup");
        s.cpu = leading_number(rest);
        if let Some((comm, pid)) = bracket_task(rest) {
            s.comm = Some(comm);
            s.pid = Some(pid);
        }
        return Some(s);
    }
    if let Some(i) = find(t, &HARD_LOCKUP) {
        let mut s = Start::new(Kind::HardLockup, "BUG: hard lockup");
        s.cpu = leading_number(t[i + 36..].trim_start());
        return Some(s);
    }
    if t.starts_with("INFO: rcu") && t.contains("stall") {
        return Some(Start::new(Kind::RcuStall, "INFO: rcu detected stall"));
    }
    let rest = t.strip_prefix("INFO: task ")?;
    let (task, prefix) =
        if let Some(i) = rest.find(" blocked for more than").or_else(|| rest.find(" blocked in")) {
            (&rest[..i], "INFO: task hung")
        } else if let Some(i) = rest.find(" can't die for more than") {
            (&rest[..i], "INFO: task can't die")
        } else {
            return None;
        };
    let mut s = Start::new(Kind::HungTask, prefix);
    if let Some((comm, pid)) = task.rsplit_once(':') {
        s.comm = Some(comm.to_string());
        s.pid = pid.parse().ok();
    }
    Some(s)
}

fn faults(t: &str) -> Option<Start> {
    let page = Kind::PageFault;
    let paging = "BUG: unable to handle kernel paging request";
    let null = "BUG: unable to handle kernel NULL pointer dereference";
    let table: [(&str, Kind, &str, Role); 17] = [
        ("BUG: Unable to handle kernel data access", page, paging, Role::New),
        ("BUG: Unable to handle kernel instruction fetch", page, paging, Role::New),
        ("BUG: unable to handle kernel paging request", page, paging, Role::New),
        ("BUG: unable to handle page fault", page, paging, Role::New),
        ("BUG: unable to handle kernel NULL pointer dereference", page, null, Role::New),
        ("BUG: kernel NULL pointer dereference", page, null, Role::New),
        ("BUG: Kernel NULL pointer dereference", page, null, Role::New),
        (
            "BUG: unable to handle kernel access to user memory",
            page,
            "BUG: unable to handle kernel access to user memory",
            Role::New,
        ),
        ("BUG: unable to handle kernel", page, "BUG: unable to handle kernel", Role::New),
        ("Unable to handle kernel paging request", page, paging, Role::Leads),
        ("Unable to handle kernel NULL pointer dereference", page, null, Role::Leads),
        (
            "Unable to handle kernel access to user memory",
            page,
            "BUG: unable to handle kernel access to user memory",
            Role::Leads,
        ),
        ("Unable to handle kernel", page, paging, Role::Leads),
        ("Unhandled fault", Kind::Oops, "Unhandled fault", Role::New),
        // arch/arm/mm/alignment.c do_alignment(): `not handling swp instruction` and `ldm with
        // s-bit set` go on to `not handling instruction ... at [<pc>]`, then the fault's oops.
        ("Alignment trap: not handling ", Kind::Oops, "Alignment trap", Role::Leads),
        ("PANIC: double fault", Kind::Oops, "PANIC: double fault", Role::New),
        ("kernel BUG at ", Kind::Bug, "kernel BUG", Role::New),
    ];
    for (pat, kind, title, role) in table {
        if t.starts_with(pat) {
            // BUG()s of the kernel's checkers are named by what they check, as WARNINGs in
            // the same files are: lib/list_debug.c (`__list_add_valid()` and friends with
            // CONFIG_BUG_ON_DATA_CORRUPTION, older kernels' BUG_ON) and mm/usercopy.c
            // (usercopy_abort()).
            let title = match t.strip_prefix("kernel BUG at ") {
                Some(at) if at.starts_with("lib/list_debug.c") => "BUG: corrupted list",
                Some(at) if at.starts_with("mm/usercopy.c") => "BUG: bad usercopy",
                _ => title,
            };
            return Some(Start::new(kind, title).role(role));
        }
    }
    if t.starts_with("Oops - ") || t.starts_with("Oops [#") {
        // riscv die(): `Oops - illegal instruction [#1]`
        return Some(Start::new(Kind::Oops, "Oops").role(Role::Follows));
    }
    let oops = t.strip_prefix("Oops: ").unwrap_or(t);
    let oops = oops.strip_prefix("segment-related ").unwrap_or(oops);
    if oops.starts_with("general protection fault") && !is_user_fault(oops) {
        return Some(Start::new(Kind::GeneralProtectionFault, "general protection fault"));
    }
    exceptions(oops, oops.len() != t.len())
}

/// `divide error: 0000 [#1]`, `Oops: stack segment: 0000`, `Internal error: Oops: ...`.
fn exceptions(t: &str, after_oops: bool) -> Option<Start> {
    let table = [
        ("divide error", "divide error"),
        ("divide_error", "divide error"),
        ("int3", "int3"),
        ("stack segment", "stack segment fault"),
        ("invalid opcode", "invalid opcode"),
        ("double fault", "PANIC: double fault"),
        ("Internal error", "Internal error"),
    ];
    if let Some(rest) = t.strip_prefix("Internal error: UBSAN: ") {
        // arm64 ubsan_handler(): a UBSAN trap dies with report_ubsan_failure()'s name of the
        // check (`Internal error: UBSAN: array index out of bounds: 00000000f2005512 [#1]`).
        let check = rest.rsplit_once(": ").map_or(rest, |(c, _)| c);
        // It is the trap's first line (nothing is printed before die()): a report of its own.
        return Some(Start::new(Kind::Ubsan, format!("UBSAN: {}", ubsan_check(check))));
    }
    for (pat, title) in table {
        if t.starts_with(pat) && t[pat.len()..].starts_with(':') {
            return Some(Start::new(Kind::Oops, title).role(Role::Follows));
        }
    }
    let is_oops_count = || t.contains("[#") || t.contains("SMP") || t.contains("PREEMPT");
    (after_oops && is_oops_count()).then(|| Start::new(Kind::Oops, "Oops").role(Role::Follows))
}

fn lockdep(t: &str) -> Option<Start> {
    let body = t
        .strip_prefix("WARNING: ")
        .or_else(|| t.strip_prefix("INFO: "))
        .or_else(|| t.strip_prefix("BUG: "))?;
    let table = [
        ("possible circular locking dependency", "possible deadlock"),
        ("possible recursive locking", "possible deadlock"),
        ("possible irq lock inversion", "possible deadlock"),
        ("HARDIRQ-safe -> HARDIRQ-unsafe", "possible deadlock"),
        ("SOFTIRQ-safe -> SOFTIRQ-unsafe", "possible deadlock"),
        ("inconsistent lock state", "inconsistent lock state"),
        ("suspicious RCU usage", "WARNING: suspicious RCU usage"),
        // kernel/lockdep.c lockdep_rcu_dereference(), 2.6.34 to 3.2
        ("suspicious rcu_dereference_check() usage", "WARNING: suspicious RCU usage"),
        ("trying to register non-static key", "INFO: trying to register non-static key"),
        ("bad unlock balance", "WARNING: bad unlock balance"),
        ("lock held when returning to user space", "WARNING: lock held when returning to user space"),
        ("Nested lock was not taken", "WARNING: nested lock was not taken"),
        ("held lock freed", "BUG: held lock freed"),
        ("still has locks held", "WARNING: still has locks held"),
        ("lock held at task exit time", "WARNING: lock held at task exit time"),
        ("MAX_", "BUG: lockdep limit too low"),
        ("looking up invalid subclass", "BUG: looking up invalid subclass"),
    ];
    let anywhere = ["still has locks held", "lock held when returning to user space"];
    table
        .iter()
        .find(|(pat, _)| body.starts_with(pat) || (anywhere.contains(pat) && body.contains(pat)))
        .map(|(_, title)| Start::new(Kind::Lockdep, *title))
}

/// A checker that warns about its caller's misuse: a WARNING in its file is titled by the
/// checker (`WARNING: locking bug in foo`) and named by the caller, past the checker's
/// machinery (its `machinery.txt` section, syzkaller's skip list for the format).
pub(crate) struct Checker {
    /// The checker's file, as a WARNING's `at FILE:LINE` names it.
    file: &'static str,
    /// The line the checker prints before its WARNING (`refcount_t: underflow`), if any.
    lead: Option<&'static str>,
    title: &'static str,
    /// The sections of `machinery.txt` its reports skip.
    pub(crate) sections: &'static [&'static str],
}

const fn checker(
    file: &'static str,
    lead: Option<&'static str>,
    title: &'static str,
    sections: &'static [&'static str],
) -> Checker {
    Checker { file, lead, title, sections }
}

const CHECKERS: &[Checker] = &[
    // kernel/locking/lockdep.c (DEBUG_LOCKS_WARN_ON, register_lock_class...), mutex debug.
    checker("kernel/locking/", Some("DEBUG_LOCKS_WARN_ON("), "WARNING: locking bug", &["locking"]),
    // fs/proc/generic.c proc_register(): `proc_dir_entry 'x' already registered`.
    checker("fs/proc/generic.c", None, "WARNING: proc registration bug", &["proc_registration"]),
    // lib/kobject.c: a kobject added without a name, released while in use...
    checker("lib/kobject.c", None, "WARNING: kobject bug", &["kobject"]),
    // lib/refcount.c refcount_warn_saturate() (older kernels WARN there directly).
    checker("lib/refcount.c", Some("refcount_t:"), "WARNING: refcount bug", &["refcount"]),
    // lib/debugobjects.c debug_print_object().
    checker("lib/debugobjects.c", Some("ODEBUG:"), "WARNING: ODEBUG bug", &["odebug"]),
    // mm/usercopy.c usercopy_warn() (hardened usercopy in warn-only mode).
    checker("mm/usercopy.c", Some("usercopy:"), "WARNING: bad usercopy", &["usercopy"]),
];

/// Whether `prefix` is the title of a `WARNING` in a checker's file.
pub(crate) fn is_checker_warning(prefix: &str) -> bool {
    CHECKERS.iter().any(|c| c.title == prefix)
}

/// The checker a report's first line comes from: its file named in the line, or the line
/// it prints before its WARNING.
pub(crate) fn checker_of(header: &str) -> Option<&'static Checker> {
    CHECKERS.iter().find(|c| header.contains(c.file) || c.lead.is_some_and(|l| header.starts_with(l)))
}

/// A `WARNING` of an allocator in `mm/` about its caller's size or flags (syzkaller's
/// `WARNING: .*mm/.*\.c.* k?.?malloc`: `kmalloc_slab`, `kvmalloc_node`...).
pub(crate) fn is_kmalloc_warning(header: &str) -> bool {
    header.find(" mm/").is_some_and(|at| is_kmalloc_site(&header[at + 1..]))
}

/// The place a `WARNING` names (`mm/slab_common.c:1000 kmalloc_slab+0x10/0x20`) is an
/// allocator in `mm/` and a `k?.?malloc` function after its file.
pub(crate) fn is_kmalloc_site(at: &str) -> bool {
    let Some(rest) = at.strip_prefix("mm/") else { return false };
    let Some(c) = rest.find(".c") else { return false };
    rest[c..].split(' ').skip(1).any(|w| {
        let w = w.strip_prefix('k').unwrap_or(w);
        let w = if w.starts_with("malloc") { w } else { w.get(1..).unwrap_or("") };
        w.starts_with("malloc")
    })
}

/// The title of a `WARNING` at `at` (`kernel/locking/lockdep.c:734 func+0x1/0x2`).
fn warning_title(at: &str) -> &'static str {
    if let Some(c) = CHECKERS.iter().find(|c| at.starts_with(c.file)) {
        return c.title;
    }
    // An allocator warning about its caller's size or flags (mm/slab_common.c, mm/util.c
    // kvmalloc_node(), mm/page_alloc.c), and vmalloc's warning on a zero size; syzkaller's
    // `WARNING: kmalloc bug` and `WARNING: zero-size vmalloc`.
    if is_kmalloc_site(at) {
        "WARNING: kmalloc bug"
    } else if at.starts_with("mm/vmalloc.c") && at.contains("__vmalloc_node") {
        "WARNING: zero-size vmalloc"
    } else {
        "WARNING"
    }
}

fn warning(t: &str) -> Option<Start> {
    if let Some(r) = t.strip_prefix("WARNING: CPU: ") {
        let at = r.split_once(" at ").map(|(_, at)| at);
        let mut s = Start::new(Kind::Warning, warning_title(at.unwrap_or("")));
        s.cpu = leading_number(r);
        s.function = at.and_then(|at| at.split_whitespace().nth(1)).map(header_function);
        return Some(s);
    }
    if let Some(r) = t.strip_prefix("WARNING: at ")
        && is_source_line(r.split_whitespace().next().unwrap_or(""))
    {
        // Before 3.x: `WARNING: at kernel/foo.c:12 func+0x1/0x2()`.
        let func = r.split_whitespace().nth(1).map(header_function);
        return Some(Start::new(Kind::Warning, warning_title(r)).func(func));
    }
    if let Some(r) = t.strip_prefix("WARNING: ") {
        // 6.17+: `WARNING: kernel/foo.c:12 at func+0x1/0x2, CPU#0: comm/123`, possibly after a
        // `[module]` tag, `at 0x0` when the address has no symbol.
        let r = match r.strip_prefix('[').and_then(|x| x.split_once("] ")) {
            Some((_, rest)) => rest,
            None => r,
        };
        let mut words = r.split_whitespace();
        let first = words.next().unwrap_or("");
        if is_source_line(first) && words.next() == Some("at") {
            let func = r
                .split_once(" at ")
                .map(|(_, f)| header_function(f.trim_end_matches(',')))
                .filter(|f| !f.starts_with("0x"));
            return Some(Start::new(Kind::Warning, warning_title(r)).func(func));
        }
        for (pat, title) in [
            ("kernel stack regs", "WARNING: kernel stack regs has bad value"),
            ("kernel stack frame pointer", "WARNING: kernel stack frame pointer has bad value"),
            ("stack recursion", "WARNING: stack recursion"),
        ] {
            if r.starts_with(pat) {
                return Some(Start::new(Kind::Warning, title));
            }
        }
        // Any other `WARNING:` the kernel prints is a report (WARN() with a message, the
        // unwinders' `can't access registers`), except the notices below.
        if !WARNING_NOTICES.iter().any(|n| r.starts_with(n))
            && !is_legacy_api_notice(r)
            && !r.trim().is_empty()
        {
            let mut s = Start::new(Kind::Warning, format!("WARNING: {}", clean(r)));
            s.needs_stamp = true;
            s.generic = true;
            return Some(s);
        }
    }
    None
}

/// `kernel/foo.c:12`: a source file of the kernel (`.c`, `.h`, `.rs`, `.S`) and a line.
fn is_source_line(w: &str) -> bool {
    let Some((file, line)) = w.trim_end_matches(',').rsplit_once(':') else { return false };
    [".c", ".h", ".rs", ".S"].iter().any(|e| file.ends_with(e))
        && !line.is_empty()
        && line.bytes().all(|b| b.is_ascii_digit())
}

/// `WARNING:` lines that are notices, not bug reports: mount options, CPU mitigations, fbcon.
const WARNING_NOTICES: &[&str] = &[
    "The mand mount option",
    "the mand mount option",
    "workqueue cpumask: online intersect > possible intersect",
    "Unprivileged eBPF is enabled",
    "fbcon: Driver",
    "See https",
    "kernel not compiled with CPU_SRSO",
    "Unsupported flag value",
    "/etc/ssh/moduli",
];

/// kernel/capability.c warn_legacy_capability_use() and net/wireless/wext-core.c
/// wireless_warn_cfg80211_wext(): `capability: warning: `comm' uses deprecated v2
/// capabilities ...`, `warning: `comm' uses wireless extensions ...`, in whatever case a
/// syslog copy put them.
fn is_legacy_api_notice(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    m.contains(" uses deprecated v2 capabilities") || m.contains(" uses wireless extensions")
}

fn bug(t: &str) -> Option<Start> {
    if let Some(msg) = slub_bug(t) {
        return Some(Start::new(Kind::Bug, format!("BUG: {}", clean(msg))));
    }
    let msg = t.strip_prefix("BUG: ")?;
    if msg.starts_with("no syscalls can create resource") {
        // syz-executor's own message on the console, not the kernel's (one of syzkaller's
        // suppressions for `BUG:`).
        return None;
    }
    if msg.starts_with("Invalid wait context") {
        // kernel/locking/lockdep.c print_lock_invalid_wait_context()
        return Some(Start::new(Kind::Warning, "WARNING: locking bug"));
    }
    let table = [
        ("sleeping function called from invalid context", Kind::AtomicSleep),
        ("scheduling while atomic", Kind::AtomicSleep),
        ("memory leak", Kind::MemoryLeak),
    ];
    for (pat, kind) in table {
        if msg.starts_with(pat) {
            let title = if kind == Kind::MemoryLeak { pat.to_string() } else { format!("BUG: {pat}") };
            return Some(Start::new(kind, title).role(Role::Leads));
        }
    }
    if msg.contains("stack guard page was hit at") {
        // arch/x86/mm/fault.c (`BUG: stack guard page was hit at`, 6.x `BUG: TASK stack
        // guard page was hit at`): the recursion is named by the trace, as syzkaller does.
        return Some(Start::new(Kind::Bug, "BUG: stack guard page was hit"));
    }
    if msg.starts_with("using ") && msg.contains("preemptible") {
        let what = msg.split(" in preemptible").next().unwrap_or(msg);
        return Some(Start::new(Kind::Bug, format!("BUG: {what} in preemptible code")));
    }
    // fs/dcache.c umount_check(): `BUG: Dentry ... still in use (1) [unmount of ext4 sda1]`
    // names the operation, not a function; syzkaller's title names it (`in unmount`).
    let op = (msg.starts_with("Dentry ") && msg.contains("[unmount of ")).then(|| "unmount".to_string());
    let mut s = Start::new(Kind::Bug, format!("BUG: {}", clean(msg))).func(op);
    // kernel/locking/lockdep.c: `BUG: key <addr> has not been registered!`, `not in .data!`
    let lockdep_key =
        msg.starts_with("key ") && (msg.contains("not been registered") || msg.contains("not in .data"));
    s.generic = !lockdep_key && !KNOWN_BUGS.iter().any(|k| msg.starts_with(k));
    Some(s)
}

/// `BUG:` messages of the kernel's own checks (besides those named above), distinctive
/// enough to be a report start in the middle of a line (see [`embedded`]); any other `BUG:
/// msg` is one only at the start of a line.
const KNOWN_BUGS: &[&str] = &[
    "spinlock ",                       // kernel/locking/spinlock_debug.c spin_bug()
    "rwlock ",                         // kernel/locking/spinlock_debug.c rwlock_bug()
    "workqueue lockup",                // kernel/workqueue.c wq_watchdog_timer_fn()
    "workqueue leaked lock or atomic", // kernel/workqueue.c process_one_work()
    "Bad page ",                       // mm/page_alloc.c bad_page(), mm/memory.c print_bad_pte()
    "Bad rss-counter state",           // kernel/fork.c check_mm()
    "non-zero nr_",                    // kernel/fork.c check_mm(), older kernels
    "non-zero pgtables_bytes",         // kernel/fork.c check_mm()
    "Dentry ",                         // fs/dcache.c umount_check()
    "recent printk recursion",         // kernel/printk/printk.c
];

/// mm/slub.c slab_bug(): `BUG kmalloc-8 (Not tainted): Object already free`, the message
/// when it is one of SLUB's object checks (other `BUG cache (...)` lines are not reports).
fn slub_bug(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("BUG ")?;
    // `BUG cache (Not tainted): msg`; before 2.6.35 `BUG cache: msg`, no taint.
    let (cache, msg) = match rest.split_once(" (") {
        Some((cache, rest)) if !cache.contains(':') => (cache, rest.split_once("): ")?.1),
        _ => rest.split_once(": ")?,
    };
    if cache.is_empty() || cache.contains(' ') {
        return None;
    }
    let known = [
        "Object already free",
        "Freepointer corrupt",
        "Freechain corrupt",
        "Invalid object pointer",
        "Object at 0x",
        "Wrong number of objects",
        "Wrong object count",
        "Padding overwritten",
        "Attempt to free object",
        "Not a valid slab page",
        "Freelist Pointer check fails",
        "Objects remaining",
    ];
    let first = msg.split('.').next().unwrap_or(msg);
    (known.iter().any(|k| msg.starts_with(k)) || first.ends_with(" overwritten")).then_some(msg)
}

fn misc(t: &str) -> Option<Start> {
    let leads = [
        ("kasan: GPF could be caused by", Kind::GeneralProtectionFault, "general protection fault"),
        ("list_add corruption", Kind::Bug, "BUG: corrupted list"),
        ("list_del corruption", Kind::Bug, "BUG: corrupted list"),
        // mm/usercopy.c usercopy_abort() (`usercopy: Kernel memory exposure attempt detected
        // ...`), not its boot option's notice (`usercopy: Invalid option string ...`).
        ("usercopy: Kernel memory ", Kind::Bug, "BUG: bad usercopy"),
        ("usercopy: kernel memory ", Kind::Bug, "BUG: bad usercopy"),
        ("DEBUG_LOCKS_WARN_ON(", Kind::Warning, "WARNING: locking bug"),
        ("refcount_t: ", Kind::Warning, "WARNING: refcount bug"),
        ("ODEBUG: ", Kind::Warning, "WARNING: ODEBUG bug"),
    ];
    for (pat, kind, title) in leads {
        if t.starts_with(pat) && (pat != "ODEBUG: " || is_odebug_bug(t)) {
            return Some(Start::new(kind, title).role(Role::Leads));
        }
    }
    if t.starts_with("VFS: Busy inodes after unmount") {
        // fs/super.c generic_shutdown_super()
        return Some(
            Start::new(Kind::Other, "VFS: Busy inodes after unmount (use-after-free)").role(Role::Single),
        );
    }
    if let Some(r) = t.strip_prefix("INFO: Allocated in ").or_else(|| t.strip_prefix("INFO: Freed in ")) {
        // mm/slub.c print_track(): the object's history in a SLUB report (old kernels)
        let what = if t.starts_with("INFO: Allocated") { "INFO: Allocated" } else { "INFO: Freed" };
        let mut s = Start::new(Kind::Other, what).role(Role::Follows).func(Some(header_function(r)));
        s.generic = true; // inside a SLUB report, never after other output on its line
        return Some(s);
    }
    if t.starts_with("Kernel BUG") {
        // lib/bug.c report_bug() without file and line; riscv die("Kernel BUG")
        return Some(Start::new(Kind::Bug, "kernel BUG"));
    }
    if t.starts_with("VFS: Close: file count is 0") {
        return Some(
            Start::new(Kind::Other, "VFS: Close: file count is zero (use-after-free)").role(Role::Single),
        );
    }
    if let Some(s) = trusty_panic(t) {
        return Some(s);
    }
    if t.starts_with("rust_kernel: panicked at ") {
        // rust/kernel/lib.rs, the kernel's Rust panic handler: `panicked at file:line:col:`,
        // the panic message on the next line, then BUG() (absorbed). The title is the message.
        return Some(Start::new(Kind::Other, RUST_PANIC).role(Role::Leads));
    }
    if let Some(i) = t.find("SYZFATAL:") {
        // syzkaller's Go tools failing (pkg/log Fatal): `2024/06/11 12:53:40 SYZFATAL: ...`
        let msg = message_title(&t[i + 9..]);
        return Some(Start::new(Kind::Other, format!("SYZFATAL: {msg}")).role(Role::Single));
    }
    if t.starts_with("fatal error: ") && !t.contains("cannot create timer") {
        // The Go runtime's fatal error (runtime.fatal) of syzkaller's programs on the console;
        // no kernel message starts so (ALSA's `seq fatal error: cannot create timer` is not one).
        return Some(Start::new(Kind::Other, "go runtime error").role(Role::Single));
    }
    if let Some(msg) = t.strip_prefix("panic: ") {
        // The Go runtime's panic (`panic: runtime error: index out of range`, then the
        // goroutines) of a Go program on the console: syzkaller's tools, gVisor's sentry.
        // No kernel message starts so (the kernel's own is `Kernel panic - not syncing:`).
        let title = if msg.starts_with("Sentry detected ") && msg.contains(" stuck task") {
            "panic: Sentry detected stuck tasks".to_string()
        } else {
            format!("panic: {}", message_title(msg))
        };
        return Some(Start::new(Kind::Other, title).role(Role::Single));
    }
    if let Some(r) = t.strip_prefix("SYZFAIL:") {
        // syzkaller's executor failing (executor/common.h fail()): not the kernel's output,
        // but printed on the same console; `SYZFAIL: SIGBUS` is memory exhaustion, not a bug.
        if !r.trim_start().starts_with("SIGBUS") {
            let msg = message_title(r);
            return Some(Start::new(Kind::Other, format!("SYZFAIL: {msg}")).role(Role::Single));
        }
    }
    // A report's first words alone on their line, its message gone to another line when
    // two CPUs' output interleaved: a report whose kind is all that can be read.
    let alone = [("BUG:", Kind::Bug), ("WARNING:", Kind::Warning), ("INFO:", Kind::Other)];
    if let Some((w, kind)) = alone.iter().find(|(w, _)| t == *w) {
        let mut s = Start::new(*kind, format!("{w} corrupted"));
        s.generic = true;
        return Some(s);
    }
    if t.starts_with("Booting the kernel.")
        && !["Parsing ELF", "Decompressing Linux", "Unknown parameter '"].iter().any(|p| t.contains(p))
    {
        // arch/x86/boot/compressed/misc.c extract_kernel(): the decompressor hands over to a
        // new kernel, so the one that was running rebooted (syzkaller's `unexpected kernel
        // reboot`). Only the exact line: a boot option echoed back in a message is not one.
        return Some(Start::new(Kind::Other, "unexpected kernel reboot").role(Role::Single));
    }
    if t.starts_with("unreferenced object 0x") {
        return Some(Start::new(Kind::MemoryLeak, "memory leak"));
    }
    if let Some(i) = find(t, &ALLOC_FAILURE) {
        let mut s = Start::new(Kind::Other, ALLOC_FAILURE_TITLE);
        s.comm = Some(t[..i].to_string());
        return Some(s);
    }
    if let Some(i) = find(t, &OOM) {
        let mut s = Start::new(Kind::Oom, "oom-killer invoked");
        s.comm = Some(t[..i].to_string());
        return Some(s);
    }
    if t.starts_with("unregister_netdevice: waiting for") {
        return Some(
            Start::new(Kind::Other, "unregister_netdevice: waiting for DEV to become free")
                .role(Role::Single),
        );
    }
    generic_info(t)
}

/// Any other `INFO: message` the kernel prints (kernel/time/timekeeping.c `INFO: timekeeping:
/// Cycle offset ... is larger than ...`, drivers' own) is a report, as syzkaller takes every
/// `INFO:` line but its list of notices. It is generic: a report on a timestamped line (at
/// its start, or after a message prefix, see [`embedded`]), and without timestamps only if
/// a trace follows. A report open in its context takes it as one of its lines (SLUB's `INFO:
/// Slab 0x... objects=`, `INFO: Object 0x... @offset=`), as `Role::Follows` makes it, except
/// an OOM kill or an allocation failure (`Open::absorbs`).
fn generic_info(t: &str) -> Option<Start> {
    let msg = t.strip_prefix("INFO: ")?.trim();
    // `INFO: task NAME:PID blocked` split by a newline in NAME waits for its second half
    // (`extract.rs`); the rest are notices no report follows.
    if msg.is_empty() || msg.starts_with("task ") || INFO_NOTICES.iter().any(|n| msg.starts_with(n)) {
        return None;
    }
    if (msg.contains("handler") || msg.contains("interrupt")) && msg.contains("took too long") {
        return None; // syzkaller's `(handler|interrupt).*took too long` notice
    }
    if msg.starts_with("sys_") && msg.contains(" is not present in /proc/kallsyms") {
        return None; // syz-executor's own message in debug mode
    }
    let mut s = Start::new(Kind::Other, format!("INFO: {}", clean(msg))).role(Role::Follows);
    s.needs_stamp = true;
    s.generic = true;
    Some(s)
}

/// `INFO:` lines that are notices, not bug reports (syzkaller's list for `INFO:`).
const INFO_NOTICES: &[&str] = &[
    "lockdep is turned off",                    // kernel/locking/lockdep.c, inside reports
    "Stall ended before state dump start",      // kernel/rcu/tree_stall.h
    "NMI handler",                              // arch/x86/kernel/nmi.c nmi_check_duration()
    "recovery required on readonly filesystem", // fs/ext4, fs/jbd2 notices
    "no syscalls can create resource",          // syz-executor's own message
];

/// lib/debugobjects.c: the messages that come before its WARNING (debug_print_object()'s
/// `ODEBUG: free active (active state 0) object type: timer_list hint: ...`, the on-stack
/// checks, a failed selftest); not its notices (`ODEBUG: Out of memory. ODEBUG disabled`,
/// `selftest passed`, `N of N active objects replaced`), which no report follows.
fn is_odebug_bug(t: &str) -> bool {
    t.contains("object type:")
        || t.contains("(active state")
        || t.contains("on stack")
        || (t.contains("selftest") && !t.contains("passed"))
}

/// The Trusty TEE's log relayed by its Linux driver (drivers/trusty/trusty-log.c of Android
/// kernels): the secure OS panicked, `trusty: panic (caller 0x...): message`, or an assertion
/// failed, `... ASSERT FAILED at (file:line): condition` (the `caller` part is often cut by
/// the driver's next log line, so the assertion is matched anywhere after `trusty: `).
fn trusty_panic(t: &str) -> Option<Start> {
    let i = t.find("trusty: ")?;
    let r = &t[i..];
    let detail = |r: &str| r.split_once("): ").map_or("", |(_, m)| m).trim().to_string();
    let title = if let Some(j) = r.find("ASSERT FAILED at (") {
        format!("trusty: ASSERT FAILED: {}", detail(&r[j..]))
    } else if r.starts_with("trusty: panic (") {
        format!("trusty: panic: {}", detail(r))
    } else {
        return None;
    };
    let title: String = title.trim_end().chars().take(MAX_TITLE).collect();
    Some(Start::new(Kind::Other, title).role(Role::Single))
}

/// Headers recognized in the middle of a line, where console output printed without a
/// newline (another program's, or a `pr_cont()` left open) puts them, as syzkaller matches
/// its headers anywhere in a line. A line matched at one of these is classified from there
/// and kept when what it says is specific to a kernel report: not the first words alone
/// (`BUG: msg`, `WARNING: msg`, see [`Start::generic`]).
const EMBEDDED: &[&str] = &[
    "BUG: ",
    "WARNING: ",
    "INFO: ",
    "UBSAN: ",
    "general protection fault",
    "kernel BUG at ",
    "Kernel BUG at ",
    "Kernel panic - not syncing: ",
    "Unable to handle kernel ",
    "divide error: ",
    "divide_error: ",
    "invalid opcode: ",
    "stack segment: ",
    "int3: ",
    "PANIC: double fault",
    "Internal error: ",
    "Unhandled fault: ",
    "Alignment trap: not handling",
    "Watchdog detected hard LOCKUP",
    "unreferenced object 0x",
    "VFS: Busy inodes after unmount",
    "VFS: Close: file count is 0",
    "unregister_netdevice: waiting for",
    "list_add corruption",
    "list_del corruption",
    "refcount_t: ",
    "Oops: ",
    "BUG kmalloc-",
    "SYZFAIL:",
];

/// One searcher for every [`EMBEDDED`] header.
static EMBEDDED_RE: LazyLock<regex::Regex> = LazyLock::new(|| {
    let alternatives: Vec<String> = EMBEDDED.iter().map(|h| regex::escape(h)).collect();
    // Literals only: the prefilter finds them; a small lazy-DFA cache is plenty.
    regex::RegexBuilder::new(&alternatives.join("|"))
        .unicode(false)
        .dfa_size_limit(1 << 16)
        .build()
        .expect("literal alternatives")
});

/// The report start inside `text` when the line does not start with one: the first
/// [`EMBEDDED`] header that says something specific, classified from there; nor inside a
/// word (`DEBUG:`) or a quotation (`'refcount_t: underflow'`); an exception's first line must
/// carry die()'s `[#N]`. The first words alone (`BUG: msg`) count only on a line taken for
/// the kernel's (`printk_line`: it carries a timestamp, or no line of the log so far did;
/// a program writing to /dev/kmsg gets a timestamp too), after
/// a message prefix (`md: WARNING: sda appears to be on the same physical disk as sdb`,
/// `eth0: BUG: no free descriptors`), as syzkaller takes them anywhere in a line; without
/// a timestamp they wait for a trace like a line-start generic `WARNING:`. A user task's
/// fault (`traps: a[1] general protection fault ip:... error:0 in ...`) is not a kernel
/// report.
pub(crate) fn embedded(text: &str, printk_line: bool) -> Option<(usize, Start)> {
    let bare = |h: &str| matches!(h, "BUG: " | "WARNING: " | "INFO: ");
    // die()'s counter: the exceptions' first lines mid-line must be the kernel's own.
    let die = |h: &str| {
        matches!(
            h,
            "Internal error: "
                | "Oops: "
                | "divide error: "
                | "divide_error: "
                | "invalid opcode: "
                | "stack segment: "
                | "int3: "
        )
    };
    // A few matches, each classified from at most EMBEDDED_SPAN bytes: a line of many
    // `INFO: ` (a progress bar redrawn with `\r`) costs no more than a short one.
    EMBEDDED_RE.find_iter(text).filter(|m| m.start() > 0).take(EMBEDDED_TRIES).find_map(|m| {
        let before = text.as_bytes()[m.start() - 1];
        if bare(m.as_str()) && (before.is_ascii_alphabetic() || before == b'_') {
            return None; // `DEBUG:`, `CPUINFO:`: not the word
        }
        if matches!(before, b'\'' | b'"' | b'`') {
            return None; // a message quoting another (drivers/of/dynamic.c: `... 'refcount_t: underflow; ...'`)
        }
        let rest = &text[m.start()..];
        let mut end = rest.len().min(EMBEDDED_SPAN);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let rest = &rest[..end];
        if die(m.as_str()) && !rest.contains("[#") {
            return None;
        }
        // (`classify` itself refuses a user task's fault.)
        let mut s = classify(rest)?;
        if s.generic {
            if !printk_line || is_notice_prefix(&text[..m.start()]) {
                return None;
            }
            s.needs_stamp = true;
        }
        Some((m.start(), s))
    })
}

/// A message prefix whose `WARNING:`/`BUG:`/`INFO:` are the filesystem's notices about its
/// image, not kernel bugs: ext4's messages (`EXT4-fs (loop0): ...`, upper-cased whole by some
/// syslog copies, `EXT4-FS (LOOP0): WARNING: ...`), XFS's `xfs_warn()` (`XFS (loop4): WARNING:
/// Reset corrupted AGFL ...`), as syzkaller's list of notices has them (its `\w+` device: not
/// `dm-0`).
fn is_notice_prefix(before: &str) -> bool {
    if before.contains("EXT4-fs") || before.contains("EXT4-FS") {
        return true;
    }
    let b = before.trim_end();
    b.strip_suffix("):").and_then(|b| b.rsplit_once("XFS (")).is_some_and(|(_, dev)| {
        !dev.is_empty() && dev.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
    })
}

/// Header matches tried in one line by [`embedded`].
const EMBEDDED_TRIES: usize = 4;
/// Bytes of a line classified from a header match by [`embedded`] (report first lines are
/// shorter).
const EMBEDDED_SPAN: usize = 512;

/// x86 show_signal() of a user task's fault: `general protection fault ip:... sp:...
/// error:0 in libc.so[...]` (after `traps: comm[pid] `), not a kernel report.
fn is_user_fault(t: &str) -> bool {
    t.starts_with("general protection fault ip:")
        || (t.starts_with("general protection fault") && t.contains(" error:") && t.contains(" in "))
}

/// A message made title-sized: cut at the first detail (`:`, `!`, ` at 0x`...), numbers
/// replaced by `NUM` as syzkaller does.
fn clean(msg: &str) -> String {
    let is_addr = |w: &str| w.len() >= 8 && w.bytes().take(8).all(|b| b.is_ascii_hexdigit());
    let msg = msg.split_whitespace().filter(|w| !is_addr(w)).collect::<Vec<_>>().join(" ");
    let mut end = msg.len();
    for stop in [" at 0x", ":", "!", ", ", " (", " [", " - ", " pfn"] {
        if let Some(i) = msg.find(stop) {
            end = end.min(i);
        }
    }
    let number = |w: &str| w.bytes().all(|b| b.is_ascii_hexdigit()) && w.bytes().any(|b| b.is_ascii_digit());
    let words: Vec<&str> = msg[..end].split_whitespace().map(|w| if number(w) { "NUM" } else { w }).collect();
    let s = words.join(" ");
    let s = s.trim_end_matches(['.', ' ']);
    let s = s.strip_suffix(" at").unwrap_or(s).to_string(); // `... at ADDR`, the address gone
    if s.is_empty() { msg.trim().chars().take(80).collect() } else { s.chars().take(MAX_TITLE).collect() }
}

/// A one-line report's whole message made a title that groups its repeats: what looks like
/// an address (6 or more hex digits, so also a decimal number that long) becomes `ADDR`, a
/// shorter decimal number `NUM`, as syzkaller's titles do (`executor 2: failed (errno 0)`
/// → `executor NUM: failed (errno NUM)`).
fn message_title(msg: &str) -> String {
    let msg: String = msg.trim().chars().take(MAX_TITLE).collect();
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg.as_str();
    while let Some(c) = rest.chars().next() {
        let n = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len()).max(c.len_utf8());
        let (w, tail) = rest.split_at(n);
        let hex = w.strip_prefix("0x").unwrap_or(w);
        if hex.len() >= 6
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
            && hex.bytes().any(|b| b.is_ascii_digit())
        {
            out.push_str("ADDR");
        } else if w.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str("NUM");
        } else {
            out.push_str(w);
        }
        rest = tail;
    }
    out
}

/// A panic message made title-sized: panics often say `subsystem: what`, so unlike
/// [`clean`] it keeps colons.
fn clean_panic(msg: &str) -> String {
    let mut end = msg.len();
    for stop in [", ", " (", " [", " on \"", " on unknown-block", " - ", " exitcode="] {
        if let Some(i) = msg.find(stop) {
            end = end.min(i);
        }
    }
    let s = msg[..end].trim_end_matches(['.', ' ']);
    if s.is_empty() { msg.trim().chars().take(80).collect() } else { s.chars().take(MAX_TITLE).collect() }
}

fn leading_number(s: &str) -> Option<u32> {
    let d: String = s.chars().take_while(char::is_ascii_digit).collect();
    d.parse().ok()
}

/// `... [comm:pid]` at the end of a soft lockup line.
fn bracket_task(s: &str) -> Option<(String, u32)> {
    let open = s.rfind('[')?;
    let inner = s[open + 1..].strip_suffix(']')?;
    let (comm, pid) = inner.rsplit_once(':')?;
    Some((comm.to_string(), pid.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(t: &str) -> Option<(Kind, String, Option<String>)> {
        classify(t).map(|s| (s.kind, s.prefix, s.function))
    }

    #[test]
    fn start_lines() {
        let w = k("WARNING: CPU: 0 PID: 1 at kernel/foo.c:12 bar_baz+0x1/0x2").unwrap();
        assert_eq!(w, (Kind::Warning, "WARNING".into(), Some("bar_baz".into())));
        let w = k("WARNING: kernel/foo.c:12 at bar_baz+0x1/0x2, CPU#0: sh/1").unwrap();
        assert_eq!(w.2.as_deref(), Some("bar_baz"));
        let a = k("BUG: KASAN: use-after-free in foo+0x1/0x2").unwrap();
        assert_eq!(a, (Kind::Kasan, "KASAN: use-after-free".into(), Some("foo".into())));
        let h = classify("INFO: task kworker/0:1:57 blocked for more than 120 seconds.").unwrap();
        assert_eq!((h.kind, h.comm.as_deref(), h.pid), (Kind::HungTask, Some("kworker/0:1"), Some(57)));
        let s = classify("watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [a b:77]").unwrap();
        assert_eq!(
            (s.kind, s.cpu, s.comm.as_deref(), s.pid),
            (Kind::SoftLockup, Some(3), Some("a b"), Some(77))
        );
        assert_eq!(k("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:").unwrap().0, Kind::RcuStall);
        assert_eq!(
            k("BUG: Bad page state in process x  pfn:1234").unwrap().1,
            "BUG: Bad page state in process x"
        );
        assert_eq!(
            k("BUG: Dentry ffff88810e2ca880{i=0,n=.index}  still in use (1)").unwrap().1,
            "BUG: Dentry still in use"
        );
        assert_eq!(
            k("Kernel panic - not syncing: Attempted to kill init! exitcode=0x9").unwrap().1,
            "kernel panic: Attempted to kill init!"
        );
        assert_eq!(
            k("general protection fault, probably for non-canonical address").unwrap().0,
            Kind::GeneralProtectionFault
        );
        assert_eq!(k("Oops: general protection fault, probably").unwrap().0, Kind::GeneralProtectionFault);
    }

    #[test]
    fn not_reports() {
        for t in [
            "WARNING: The mand mount option is being deprecated.",
            "INFO: lockdep is turned off.",
            "INFO: NMI handler (perf_event_nmi_handler) took too long to run",
            "Spectre V2 : WARNING: Unprivileged eBPF",
            "BUG UNIX (Not tainted): kasan: bad access detected",
            "Oops, something",
            "ODEBUG: Out of memory. ODEBUG disabled",
            "ODEBUG: selftest passed",
            "ODEBUG: 12 of 12 active objects replaced",
            "INFO: Stall ended before state dump start",
            "INFO: recovery required on readonly filesystem.",
            "INFO: task syz-executor",
            "usercopy: Invalid option string for hardened_usercopy: 'x'",
            "WARNING: `syz' uses wireless extensions which will stop working for Wi-Fi 7 hardware",
        ] {
            assert_eq!(k(t), None, "{t}");
        }
    }

    /// Messages syzkaller takes for reports by their first words, and the kernel prints.
    #[test]
    fn generic_info_and_leads() {
        // kernel/time/timekeeping.c timekeeping_check_update(): generic, timestamped only, a
        // line of an open report.
        let s = classify("INFO: timekeeping: Cycle offset (31) is larger than the 'kvm-clock' clock's 50% safety margin (7)")
            .unwrap();
        assert_eq!((s.kind, s.prefix.as_str(), s.role), (Kind::Other, "INFO: timekeeping", Role::Follows));
        assert!(s.generic && s.needs_stamp);
        // arch/arm/mm/alignment.c do_alignment(): each `not handling` leads the fault's oops.
        for t in [
            "Alignment trap: not handling swp instruction",
            "Alignment trap: not handling ldm with s-bit set",
        ] {
            let s = classify(t).unwrap();
            assert_eq!((s.kind, s.role), (Kind::Oops, Role::Leads), "{t}");
        }
        assert_eq!(
            k("usercopy: Kernel memory overwrite attempt detected to kernel text (offset 1, size 7)!")
                .map(|s| s.1),
            Some("BUG: bad usercopy".to_string())
        );
    }
}
