//! Choosing the guilty frame of a report, the function its title names: the first frame that
//! is not reporting, locking, scheduling, allocation or sanitizer machinery, with rules per
//! kind of report (stalls name the code that looped, hung tasks the code that waited).
//!
//! The machinery is data, `machinery.txt` (included at build time): one pattern per line with
//! the reason, in sections per kind of report.

use std::sync::LazyLock;

use super::start::{checker_of, is_kmalloc_warning};
use super::{Frame, Kind, Report, Section};

/// `machinery.txt`, the patterns of frames that are machinery, by section.
const MACHINERY: &str = include_str!("machinery.txt");

/// How a pattern matches a function name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Prefix(String),
    Suffix(String),
    Exact(String),
    Contains(String),
}

impl Pattern {
    fn parse(p: &str) -> Pattern {
        match (p.strip_prefix('^'), p.strip_suffix('$')) {
            (Some(_), Some(_)) => Pattern::Exact(p[1..p.len() - 1].to_string()),
            (Some(s), None) => Pattern::Prefix(s.to_string()),
            (None, Some(s)) => Pattern::Suffix(s.to_string()),
            (None, None) => Pattern::Contains(p.to_string()),
        }
    }

    fn matches(&self, f: &str) -> bool {
        match self {
            Pattern::Prefix(p) => f.starts_with(p.as_str()),
            Pattern::Suffix(p) => f.ends_with(p.as_str()),
            Pattern::Exact(p) => f == p,
            Pattern::Contains(p) => f.contains(p.as_str()),
        }
    }
}

/// One line of `machinery.txt`.
#[derive(Debug, Clone)]
struct Rule {
    pattern: Pattern,
    /// `pattern => name`: the name the title uses for a matching frame.
    rename: Option<String>,
}

/// The sections of `machinery.txt`.
struct Machinery {
    sections: Vec<(String, Vec<Rule>)>,
}

impl Machinery {
    fn parse(text: &str) -> Machinery {
        let mut sections: Vec<(String, Vec<Rule>)> = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                sections.push((name.to_string(), Vec::new()));
                continue;
            }
            let (pat, rename) = match line.split_once("=>") {
                Some((p, r)) => (p.trim(), Some(r.trim().to_string())),
                None => (line, None),
            };
            if let Some((_, rules)) = sections.last_mut() {
                rules.push(Rule { pattern: Pattern::parse(pat), rename });
            }
        }
        Machinery { sections }
    }

    fn section(&self, name: &str) -> &[Rule] {
        self.sections.iter().find(|(n, _)| n == name).map_or(&[], |(_, r)| r.as_slice())
    }

    /// Whether a pattern of `section` matches `f`, with its compiler suffixes (`.isra.0`,
    /// `.cold`) or without.
    fn matches(&self, section: &str, f: &str) -> bool {
        let base = base_name(f);
        self.section(section).iter().any(|r| r.pattern.matches(f) || r.pattern.matches(base))
    }
}

static RULES: LazyLock<Machinery> = LazyLock::new(|| Machinery::parse(MACHINERY));

/// `skip.txt`: frames skipped in every kind of report, one regular expression per line
/// (syzkaller's guilty-frame skip list and a few additions), shared with the analyzer.
const SKIP: &str = include_str!("skip.txt");

/// The patterns of `skip.txt`, compiled once. A line that does not compile is left out
/// (the unit test below checks that none is).
static SKIP_SET: LazyLock<regex::RegexSet> = LazyLock::new(|| {
    let lines: Vec<&str> = skip_lines().filter(|l| regex::Regex::new(l).is_ok()).collect();
    regex::RegexSet::new(lines).unwrap_or_else(|_| regex::RegexSet::empty())
});

fn skip_lines() -> impl Iterator<Item = &'static str> {
    SKIP.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// True when `function` (compiler suffixes ignored) is on the list of frames skipped in every
/// kind of report (`report/skip.txt`): reporting, sanitizer, locking, allocation, copying,
/// printing and waiting machinery, never the guilty frame.
pub fn is_skipped_frame(function: &str) -> bool {
    SKIP_SET.is_match(base_name(function))
}

/// True when `function` is the interrupt entry after which a stall report's trace shows the
/// stalled code (`machinery.txt [stall_start]`: x86 `apic_timer_interrupt` and its
/// `sysvec_` forms, arm64 `el1h_64_irq`, and `el1_irq` of older arm64 kernels).
pub fn is_stall_interrupt_entry(function: &str) -> bool {
    RULES.matches("stall_start", function)
}

/// The sections of `machinery.txt` a report of `kind` (first line `header`) skips, besides
/// `[all]`.
fn kind_sections(kind: Kind, header: &str) -> &'static [&'static str] {
    match kind {
        Kind::Kasan if header.contains("invalid-free") || header.contains("double-free") => {
            &["kasan", "kasan_invalid_free", "fault"]
        }
        Kind::Kasan => &["kasan", "fault"],
        Kind::Ubsan => &["ubsan"],
        Kind::AtomicSleep if header.contains("scheduling while atomic") => &["atomic_schedule"],
        Kind::Lockdep if header.contains("non-static key") => &["non_static_key"],
        Kind::Warning if header.contains("Invalid wait context") => &["locking"],
        Kind::Bug if header.starts_with("kernel BUG at") && !header.contains("mm/usercopy.c") => {
            &["kernel_bug"]
        }
        Kind::PageFault | Kind::GeneralProtectionFault | Kind::Oops | Kind::Kfence => &["fault"],
        Kind::Kmsan if header.contains("kernel-usb-infoleak") => &["kmsan_usb"],
        Kind::Kmsan => &["kmsan"],
        Kind::MemoryLeak => &["memory_leak"],
        Kind::HungTask if header.contains("can't die") => &["hang_cant_die"],
        Kind::HungTask => &["hung_task"],
        Kind::RcuStall | Kind::SoftLockup | Kind::HardLockup => &["stall"],
        Kind::Lockdep if header.contains("circular locking") => &["deadlock"],
        Kind::Bug if header.contains("Bad page") => &["bad_page"],
        Kind::Bug if header.contains("in preemptible") => &["preemptible"],
        Kind::Bug if header.contains("BUG: spinlock") || header.contains("BUG: rwlock") => &["spinlock"],
        Kind::Lockdep if header.contains("suspicious RCU usage") => &["rcu_usage"],
        Kind::Panic if header.contains("corrupted stack end") => &["stall", "stack_end"],
        Kind::Panic if header.contains("kernel stack overflow") => &["stall", "stack_overflow"],
        Kind::Panic if header.contains("stack-protector") => &["stack_protector"],
        // `kernel BUG at mm/usercopy.c` and `usercopy: Kernel memory exposure attempt` too.
        Kind::Warning | Kind::Bug | Kind::Lockdep if let Some(c) = checker_of(header) => match kind {
            Kind::Bug if c.sections != ["usercopy"] => &[],
            _ => c.sections,
        },
        Kind::Warning if is_kmalloc_warning(header) => &["kmalloc"],
        Kind::Warning if header.contains(" usb_submit_urb") => &["usb_submit_urb"],
        _ => &[],
    }
}

/// True when `function` is machinery rather than the culprit in a report of `kind`.
pub(crate) fn is_machinery(function: &str, kind: Kind, header: &str) -> bool {
    is_skipped_frame(function)
        || RULES.matches("all", function)
        || kind_sections(kind, header).iter().any(|s| RULES.matches(s, function))
}

/// Reports whose trace shows code that looped (stalls, lockups, stack overflows): the title
/// names the function called by the first dispatcher (syscall entry, work item, timer...).
fn is_stall(kind: Kind, header: &str) -> bool {
    matches!(kind, Kind::RcuStall | Kind::SoftLockup | Kind::HardLockup)
        || header.contains("stack guard page was hit")
        || header.contains("corrupted stack end")
        // arm32 `Internal error: kernel stack overflow` (arch/arm/kernel/traps.c
        // handle_bad_stack() -> die()) is titled as any `Internal error`, by its first frame.
        || (header.contains("kernel stack overflow") && !header.starts_with("Internal error"))
}

/// The guilty frame of a report's main trace: see [`Report::guilty_frame`].
pub(crate) fn guilty_frame(r: &Report) -> Option<&Frame> {
    guilty_in(r).map(|(f, _)| f)
}

/// The guilty frame and, when a rule names it otherwise, the name the title uses.
fn guilty_in(r: &Report) -> Option<(&Frame, Option<&'static str>)> {
    let kind = r.kind();
    // A bad page is the fault of who allocated it (mm/page_owner.c prints that stack).
    let owner = r
        .header
        .contains("Bad page")
        .then(|| r.extra_stacks.iter().find(|e| e.label.starts_with("page last allocated")))
        .flatten();
    let trace = owner.map_or(&r.frames, |e| &e.frames);
    // Inlined frames of symbolized traces (`func file.c:12 [inline]`) are not candidates:
    // the title names the function they were compiled into, the one an unsymbolized trace
    // of the same bug shows (syzkaller's frame pattern does not match them either).
    let frames: Vec<&Frame> =
        trace.iter().filter(|f| !f.unreliable && !f.inline && !f.function.starts_with("0x")).collect();
    let skip = |f: &&Frame| is_machinery(&f.function, kind, &r.header);
    // Lockup detectors (kernel/watchdog.c, watchdog_hld.c) print the trace of the interrupted
    // context (show_regs()): it starts at the looping code, and an interrupt entry in it is
    // where that code runs. RCU stall warnings (kernel/rcu/tree_stall.h) dump the stack from
    // the tick that noticed the stall: the looping code is after its interrupt entry.
    let from_tick = !matches!(kind, Kind::SoftLockup | Kind::HardLockup);
    if is_stall(kind, &r.header)
        && let Some(found) = stall_frame(&frames, &skip, from_tick)
    {
        return Some(found);
    }
    if kind == Kind::HungTask && !r.header.contains("can't die") {
        let rules: &'static Machinery = &RULES;
        for f in &frames {
            if let Some(rule) = rules.section("hang_anchor").iter().find(|a| a.pattern.matches(&f.function)) {
                return Some((f, rule.rename.as_deref()));
            }
        }
    }
    // Only machinery (a trace cut after `dump_stack`, an interleaved one): no guilty frame
    // rather than a reporting function, which no title should name.
    frames.iter().find(|f| !skip(f)).map(|f| (*f, None))
}

/// The stalled code: the frames after the interrupt that found the stall when `from_tick`
/// (or outside the NMI that printed it), machinery left out; the frame called by the first
/// dispatcher (`[stall_anchor]`), else the first frame. A cross-CPU call is named
/// `smp_call_function` whatever its variant, as syzkaller names it: one bucket for the
/// stalls waiting on other CPUs.
fn stall_frame<'a>(
    frames: &[&'a Frame],
    skip: &dyn Fn(&&'a Frame) -> bool,
    from_tick: bool,
) -> Option<(&'a Frame, Option<&'static str>)> {
    let start =
        if from_tick { frames.iter().position(|f| is_stall_interrupt_entry(&f.function)) } else { None };
    let interrupted: Vec<&Frame> = match start {
        Some(i) => frames[i + 1..].to_vec(),
        None => frames.iter().copied().filter(|f| f.section != Section::Nmi).collect(),
    };
    // An anchor matches the name as titles print it too (syzkaller strips the system call
    // prefixes before it looks for anchors): `__sys_setsockopt` is the `^setsockopt$` anchor.
    let anchor = |f: &Frame| {
        RULES.matches("stall_anchor", &f.function) || RULES.matches("stall_anchor", title_name(&f.function))
    };
    // Dispatchers stay even when they are machinery (softirq, timers): they are the anchors.
    let kept: Vec<&Frame> = interrupted.into_iter().filter(|f| anchor(f) || !skip(f)).collect();
    let mut prev: Option<&Frame> = None;
    for f in &kept {
        if anchor(f) {
            if f.function.contains("smp_call_function") {
                return Some((f, Some("smp_call_function")));
            }
            return prev.or(Some(f)).map(|f| (f, None));
        }
        prev = Some(f);
    }
    kept.first().map(|f| (*f, None))
}

/// Prefixes of system call entry points that differ between architectures and kernel
/// versions (`__x64_sys_read`, `__arm64_sys_read`, `SyS_read`): removed in titles so that
/// one bug has one title.
const SYSCALL_PREFIXES: &[&str] = &[
    "SYSC_",
    "SyS_",
    "sys_",
    "__x64_",
    "__ia32_",
    "__arm64_",
    "____sys_",
    "___sys_",
    "__sys_",
    "__se_",
    "__se_sys_",
    "__do_sys_",
    "compat_SYSC_",
    "compat_SyS_",
    "ksys_",
];

/// A function name as a title names it: compiler suffixes dropped, the longest system call
/// prefix removed, one of them (`__x64_sys_rmdir` → `sys_rmdir`, `__sys_setsockopt` → `setsockopt`),
/// as syzkaller strips frames.
pub fn title_name(function: &str) -> &str {
    let f = base_name(function);
    let shortest = SYSCALL_PREFIXES
        .iter()
        .filter_map(|p| f.strip_prefix(p))
        .filter(|s| !s.is_empty())
        .min_by_key(|s| s.len());
    shortest.unwrap_or(f)
}

/// The function a report's title names: the first of `named` (the function the report's
/// first line names, lockdep's lock sites) that is not machinery, else the guilty frame's.
pub(crate) fn title_function(r: &Report, named: &[String]) -> Option<String> {
    let kind = r.kind();
    let first = named
        .iter()
        .find(|f| !is_machinery(f, kind, &r.header) && !is_address(f) && !is_stall(kind, &r.header));
    if let Some(f) = first {
        return Some(title_names(f));
    }
    let Some((frame, rename)) = guilty_in(r) else {
        // No frame is left to vouch for another function (the trace was cut or dropped):
        // the function the report's own line names, machinery or not, is the only evidence
        // (`BUG: KASAN: slab-out-of-bounds in do_raw_write_lock+0x1a3/0x1d0`, printed from
        // the faulting ip by `%pS`).
        return named_fallback(r, kind, named);
    };
    // Rust v0 symbols are named demangled (`<kernel::Foo>::bar`), as syzkaller titles them.
    let name = |f: &str| match f.starts_with("_R") {
        true => crate::symbols::demangle(f).into_owned(),
        false => title_name(f).to_string(),
    };
    Some(rename.map_or_else(|| name(&frame.function), str::to_string))
}

/// Titles that name no function, as syzkaller's title formats (`pkg/report/linux.go`) give
/// them: those formats extract no frame, so a report of theirs that is cut is not "in
/// corrupted". Every other report whose kind names a function is titled `PREFIX in FUNC`,
/// and `PREFIX in corrupted` when no frame can be named (syzkaller: a format with a stack
/// whose frame extraction fails names the frame `corrupted`).
const NO_FUNCTION_TITLES: &[&str] = &[
    // kernel/workqueue.c wq_watchdog_timer_fn()
    "BUG: workqueue lockup",
    // kernel/fork.c check_mm()
    "BUG: Bad rss-counter state",
    "BUG: non-zero nr_ptes on freeing mm",
    "BUG: non-zero nr_pmds on freeing mm",
    "BUG: non-zero pgtables_bytes on freeing mm",
    // mm/memory.c print_bad_pte()
    "BUG: Bad page map",
    // mm/slub.c slab_bug()
    "BUG: Object already free",
    // arch/x86/kernel/unwind_frame.c
    "WARNING: kernel stack regs has bad value",
    "WARNING: kernel stack frame pointer has bad value",
    // A report of which only the first words came (syzkaller's own corrupted titles).
    "BUG: corrupted",
    "WARNING: corrupted",
    "INFO: corrupted",
    // A page fault header whose kind of fault was cut.
    "BUG: unable to handle kernel",
];

/// Whether a report of `kind` titled `prefix` names a function in its title (see
/// [`NO_FUNCTION_TITLES`]): panics name one only when their message does, OOM kills and
/// one-line reports never, KCSAN races by their own line.
pub(crate) fn names_a_function(kind: Kind, prefix: &str) -> bool {
    !matches!(kind, Kind::Panic | Kind::Oom | Kind::Other | Kind::Kcsan)
        && !NO_FUNCTION_TITLES.contains(&prefix)
        && !prefix.starts_with("KCSAN: ")
}

/// The first function the report's lines name that is not an address, for a report whose
/// trace holds no frame: none for stalls, whose lines name no culprit.
fn named_fallback(r: &Report, kind: Kind, named: &[String]) -> Option<String> {
    if is_stall(kind, &r.header) || r.frames.iter().any(|f| !f.unreliable) {
        return None;
    }
    named.iter().find(|f| !is_address(f)).map(|f| title_names(f))
}

/// `a / b` (a race's two functions) or one function, each as a title names it.
fn title_names(f: &str) -> String {
    f.split(" / ").map(title_name).collect::<Vec<_>>().join(" / ")
}

/// A bare address where a name should be (`ffffffff81000000`, `0xfdc88c28`): an
/// unsymbolized frame names no function.
pub(crate) fn is_address(f: &str) -> bool {
    let hex = f.strip_prefix("0x").unwrap_or(f);
    !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `foo.cold.12` → `foo`; `.foo` (ppc64 ELFv1 entry points) → `foo`.
pub(crate) fn base_name(function: &str) -> &str {
    let function = function.strip_prefix('.').unwrap_or(function);
    match function.find('.') {
        Some(i) if i > 0 => &function[..i],
        _ => function,
    }
}

/// The parts of a title that change from one occurrence of a bug to the next replaced by
/// placeholders, so that its repeats share one title (and one group): syzkaller's
/// `dynamicTitleReplacement` (pkg/report/report.go), rule for rule and in its order.
/// Executor processes lose their number (`syz-executor209` → `syz-executor`), what looks
/// like an address becomes `ADDR`, an IPv4 address `IP`, a `file.c:123` line `file.c:LINE`,
/// `func+0x12/0x34` its function, `CPU#0` `CPU`, and any other decimal number standing
/// alone `NUM` (`failed(-5)` → `failed(-NUM)`; digits inside a word, as in `nl80211_x`,
/// stay).
pub(crate) fn volatile_parts_replaced(title: &str) -> String {
    use regex::Regex;
    static RULES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
        [
            (r"syz-executor\.?[0-9]+((/|:)[0-9]+)?", "syz-executor"),
            (r"syzkaller[0-9]+((/|:)[0-9]+)?", "syzkaller"),
            (r"([^a-zA-Z0-9])(?:0x)?[0-9a-f]{6,}", "${1}ADDR"),
            (r"([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})", "IP"),
            (r"(\.\w+)(:[0-9]+)+", "${1}:LINE"),
            (r"([a-zA-Z][a-zA-Z0-9_.]+)\+0x[0-9a-z]+/0x[0-9a-z]+", "${1}"),
            (r"CPU#[0-9]+", "CPU"),
            (r"(\W)(\d+)(\W|$)", "${1}NUM${3}"),
            (r"\d{7,}", "NUM"),
        ]
        .into_iter()
        .map(|(re, with)| (Regex::new(re).expect("a valid pattern"), with))
        .collect()
    });
    let mut t = title.to_string();
    for (re, with) in RULES.iter() {
        // Matches may overlap (`0,1,2`): replaced again until nothing changes, as syzkaller
        // notes of its NUM rule; each pass shortens or keeps the text, so this ends.
        for _ in 0..8 {
            let next = re.replace_all(&t, *with);
            if next == t {
                break;
            }
            t = next.into_owned();
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title_of(text: &str) -> String {
        let reports = crate::report::ReportExtractor::extract_all(text.as_bytes());
        reports.first().map(|r| r.title.clone()).unwrap_or_default()
    }

    /// A stack overflow recursing in a protocol's handler, entered by a system call whose
    /// entry is printed with its prefix (`__sys_setsockopt`, net/socket.c): the anchor is the
    /// stripped name, as syzkaller matches it, and the title names the recursing handler.
    #[test]
    fn stall_anchors_match_stripped_system_call_names() {
        let mut text = String::from(
            "BUG: TASK stack guard page was hit at ffffc900054afff8 (stack is ffffc900054b0000..ffffc900054b8000)\n\
             stack guard page: 0000 [#1] PREEMPT SMP KASAN\n\
             CPU: 0 PID: 12932 Comm: syz-executor.5 Not tainted 5.16.0-rc1 #0\n\
             RIP: 0010:__sanitizer_cov_trace_const_cmp4+0x17/0x70\n\
             Call Trace:\n <TASK>\n tls_setsockopt+0x90/0xe40\n",
        );
        for _ in 0..20 {
            text.push_str(" tls_setsockopt+0x128/0xe40\n");
        }
        text.push_str(
            " __sys_setsockopt+0x2db/0x610\n __x64_sys_setsockopt+0xba/0x150\n do_syscall_64+0x35/0xb0\n\
             entry_SYSCALL_64_after_hwframe+0x44/0xae\n </TASK>\n",
        );
        assert_eq!(title_of(&text), "BUG: stack guard page was hit in tls_setsockopt");
    }

    /// A KASAN report whose trace was lost (`printk messages dropped`): the function its
    /// first line names (`%pS` of the faulting ip), locking machinery or not, since no frame
    /// is left to name another.
    #[test]
    fn a_report_without_frames_is_named_by_its_own_line() {
        let text = "CPU: 0 PID: 23312 Comm: syz-executor7 Not tainted 4.9.60 #81\n\
                    BUG: KASAN: slab-out-of-bounds in do_raw_write_lock+0x1a3/0x1d0 at addr ffff8801c464b568\n\
                    ffff8801c464b400: fb fb fb fb fb fb fb fb fb fb fb fb fc fc fc fc\n";
        assert_eq!(title_of(text), "KASAN: slab-out-of-bounds in do_raw_write_lock");
    }

    /// Every line of `machinery.txt` is a section or a pattern with its reason.
    #[test]
    fn machinery_lines_have_reasons() {
        for line in MACHINERY.lines() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || (l.starts_with('[') && l.ends_with(']')) {
                continue;
            }
            let (pat, why) = l.split_once('#').unwrap_or((l, ""));
            assert!(!pat.trim().is_empty() && !why.trim().is_empty(), "no reason: {line}");
        }
        for s in [
            "all",
            "hung_task",
            "hang_anchor",
            "stall",
            "stall_start",
            "stall_anchor",
            "memory_leak",
            "odebug",
            "usercopy",
            "kobject",
            "refcount",
            "kmalloc",
            "usb_submit_urb",
        ] {
            assert!(!RULES.section(s).is_empty(), "section {s}");
        }
    }

    #[test]
    fn skip_patterns_compile() {
        for l in skip_lines() {
            assert!(regex::Regex::new(l).is_ok(), "{l}");
        }
        assert!(is_skipped_frame("kasan_report") && is_skipped_frame("__might_resched.cold"));
        assert!(!is_skipped_frame("ext4_readdir"));
    }

    #[test]
    fn patterns() {
        assert!(
            Pattern::parse("^kfree$").matches("kfree") && !Pattern::parse("^kfree$").matches("kfree_skb")
        );
        assert!(Pattern::parse("readl$").matches("__raw_readl"));
        assert!(Pattern::parse("^rb_").matches("rb_erase") && !Pattern::parse("^rb_").matches("herb_x"));
        assert!(Pattern::parse("kasan").matches("__kasan_report"));
    }

    #[test]
    fn syscall_prefixes() {
        assert_eq!(title_name("__x64_sys_rmdir"), "sys_rmdir");
        assert_eq!(title_name("__do_sys_futex"), "futex");
        assert_eq!(title_name("SyS_ioctl"), "ioctl");
        assert_eq!(title_name("foo.isra.0"), "foo");
        assert_eq!(title_name("sys_"), "sys_");
    }
}

#[cfg(test)]
mod volatile_tests {
    use super::volatile_parts_replaced as v;

    #[test]
    fn what_changes_between_occurrences_is_replaced() {
        assert_eq!(v("WARNING in dev_watchdog on CPU#0"), "WARNING in dev_watchdog on CPU");
        assert_eq!(
            v("BUG: Bad page state in process syz-executor209"),
            "BUG: Bad page state in process syz-executor"
        );
        assert_eq!(v("INFO: task syz-executor.3:1234 blocked"), "INFO: task syz-executor blocked");
        assert_eq!(
            v("EXT4-fs error: ext4_read_inode_bitmap failed(-5)"),
            "EXT4-fs error: ext4_read_inode_bitmap failed(-NUM)"
        );
        assert_eq!(v("kernel BUG at fs/ext4/inode.c:1234!"), "kernel BUG at fs/ext4/inode.c:LINE!");
        assert_eq!(
            v("general protection fault in ip6_fragment+0x1052/0x2d80"),
            "general protection fault in ip6_fragment"
        );
        assert_eq!(
            v("unable to handle page fault for address ffff888012345678"),
            "unable to handle page fault for address ADDR"
        );
        assert_eq!(v("executor 2: failed (errno 0,1,2)"), "executor NUM: failed (errno NUM,NUM,NUM)");
        // Digits inside names stay: they are part of the function.
        assert_eq!(v("WARNING in nl80211_send_iface"), "WARNING in nl80211_send_iface");
        assert_eq!(
            v("KASAN: use-after-free Read in ext4_xattr_set_entry"),
            "KASAN: use-after-free Read in ext4_xattr_set_entry"
        );
    }
}
