//! The culprit of one report: the frame the report is about, and how much to trust it.
//!
//! The choice is the extractor's ([`kflame::report`]): its title names the function it
//! judged guilty (the first frame that is not reporting, locking, allocation, sanitizer or
//! printing machinery, possibly in an extra stack such as KASAN's access stack or a lock
//! chain). That function is looked up in the report's stacks to recover its offset and
//! module; a title naming no function falls back to [`Report::guilty_frame`], then to the
//! faulting PC. The confidence starts at 1 and loses a fixed amount for each reason to
//! doubt the frame; every deduction is listed in [`Culprit::doubts`].

use kflame::report::{Frame, Kind, Report};
use serde::Serialize;

/// Where the culprit was found.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A frame of the main call trace.
    MainTrace,
    /// A frame of an extra stack (KASAN access/alloc/free, lock chain, other CPU).
    ExtraStack,
    /// The faulting PC line (`RIP:`, `pc :`) only.
    Pc,
    /// Only the title names it; no frame could be read.
    Title,
}

/// The culprit frame of a report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Culprit {
    /// Function name as printed (compiler suffixes such as `.isra.0` kept).
    pub function: String,
    /// `0x1a/0x80` when the frame printed one.
    pub offset: Option<String>,
    /// Module (`ext4`) when the frame is in one; `None` for built-in code.
    pub module: Option<String>,
    /// 0.0 to 1.0: 1 minus the deductions in `doubts`.
    pub confidence: f64,
    /// `high` (≥ 0.8), `medium` (≥ 0.5) or `low`.
    pub level: &'static str,
    /// Where the culprit was found.
    pub origin: Origin,
    /// Why the confidence is below 1, one short phrase per deduction.
    pub doubts: Vec<String>,
    /// Source location printed with the frame (`fs/read_write.c:123`), if any.
    pub source: Option<String>,
    /// The name demangled, for Rust (`_R...`) and C++ symbols; `None` for C names.
    pub demangled: Option<String>,
}

/// The function name without compiler suffixes (`foo.isra.0` → `foo`, `bar.cold` → `bar`).
pub fn base_name(function: &str) -> &str {
    function.split('.').next().unwrap_or(function)
}

/// Names that are reporting or waiting machinery even when the extractor had nothing better
/// (a trace made only of them): the culprit is then a guess.
const MACHINERY_HINTS: &[&str] = &[
    "dump_stack",
    "show_stack",
    "__warn",
    "warn_slowpath",
    "report_bug",
    "panic",
    "kasan_",
    "__asan_",
    "kmsan_",
    "ubsan_",
    "__ubsan",
    "print_",
    "printk",
    "lock_acquire",
    "lock_release",
    "_raw_spin_",
    "schedule",
    "__schedule",
    "do_raw_spin",
    "mutex_lock",
    "rcu_",
    "nmi_",
    "watchdog",
];

fn looks_like_machinery(function: &str) -> bool {
    let f = base_name(function);
    MACHINERY_HINTS.iter().any(|p| f.starts_with(p))
}

/// The function named after the last ` in ` of a title (the first of `f1 / f2`), if any.
pub fn title_function(title: &str) -> Option<&str> {
    let (_, f) = title.rsplit_once(" in ")?;
    let f = f.split_whitespace().next()?.split('/').next()?.trim();
    (!f.is_empty() && f != "corrupted" && f.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.$".contains(&b)))
        .then_some(f)
}

/// Picks the culprit of `report` and weighs it. `None` when the report names no function
/// and has no frame or PC at all.
pub fn culprit(report: &Report) -> Option<Culprit> {
    let mut doubts: Vec<(f64, String)> = Vec::new();
    let (frame, origin) = pick(report)?;
    let (function, offset, module, source, unreliable) = match frame {
        Picked::Frame(f) => {
            (f.function.clone(), f.offset.clone(), f.module.clone(), f.source.clone(), f.unreliable)
        }
        Picked::Name(n) => (n, None, None, None, false),
        Picked::Pc(rip) => {
            let (f, off) = rip.split_once('+').unwrap_or((rip, ""));
            let off = off.split_whitespace().next().filter(|o| !o.is_empty()).map(str::to_string);
            (f.trim().to_string(), off, None, None, false)
        }
    };
    if unreliable {
        doubts.push((0.3, "the frame is marked `?` (the unwinder could not vouch for it)".into()));
    }
    match origin {
        Origin::Pc => doubts.push((0.2, "no call trace frame names it; taken from the faulting PC".into())),
        Origin::Title => {
            doubts.push((0.4, "no frame of the report could be read; only the title names it".into()))
        }
        Origin::ExtraStack => {}
        Origin::MainTrace => {}
    }
    if report.truncated {
        doubts.push((0.2, "the report was cut before it ended".into()));
    }
    let frames = &report.frames;
    if frames.is_empty() && origin != Origin::Title && origin != Origin::Pc {
        doubts.push((0.2, "the report has no main call trace".into()));
    }
    let unreliable_frames = frames.iter().filter(|f| f.unreliable).count();
    if !frames.is_empty() && unreliable_frames * 2 > frames.len() {
        doubts.push((0.1, format!("{unreliable_frames} of {} frames are unreliable (`?`)", frames.len())));
    }
    if frames.len() == 1 && origin == Origin::MainTrace {
        doubts.push((0.1, "the trace has a single frame".into()));
    }
    if looks_like_machinery(&function) {
        doubts.push((0.3, "only reporting, locking or scheduling machinery could be named".into()));
    }
    match report.kind() {
        Kind::HungTask | Kind::RcuStall | Kind::SoftLockup | Kind::HardLockup => doubts.push((
            0.15,
            "a stall or hang names where a task waited or spun, which may not be where the bug is".into(),
        )),
        Kind::Lockdep => doubts.push((0.1, "a lock report involves several call chains".into())),
        Kind::Other if report.title.is_empty() => doubts.push((0.1, "the kind of report is unknown".into())),
        _ => {}
    }
    let lost: f64 = doubts.iter().map(|(d, _)| d).sum();
    let confidence = ((1.0 - lost).clamp(0.05, 1.0) * 100.0).round() / 100.0;
    let level = if confidence >= 0.8 {
        "high"
    } else if confidence >= 0.5 {
        "medium"
    } else {
        "low"
    };
    let demangled = Some(kflame::symbols::demangle(&function).into_owned()).filter(|d| *d != function);
    Some(Culprit {
        demangled,
        function,
        offset,
        module,
        confidence,
        level,
        origin,
        doubts: doubts.into_iter().map(|(_, d)| d).collect(),
        source,
    })
}

enum Picked<'a> {
    Frame(&'a Frame),
    Name(String),
    /// The PC line's value (`foo_read+0x12/0x40`).
    Pc(&'a str),
}

/// The skip list ([`skip.txt`](../skip.txt)): patterns for every report and per kind.
struct Skip {
    by_kind: Vec<(String, regex::RegexSet)>,
    stall_anchors: regex::RegexSet,
    /// (substring, group name it stands for: itself when empty).
    hang_anchors: Vec<(String, String)>,
    hang_skip: Vec<String>,
    rules: Vec<Rule>,
}

/// How a report picks its culprit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Mode {
    /// From the main trace's leaf.
    Leaf,
    /// The stall rule.
    Stall,
    /// From the frame the title names.
    Title,
}

/// A `@title` line of `skip.txt`.
struct Rule {
    mode: Mode,
    text: String,
    skip: regex::RegexSet,
}

const SKIP_DATA: &str = include_str!("skip.txt");

fn skip_list() -> &'static Skip {
    static SKIP: std::sync::OnceLock<Skip> = std::sync::OnceLock::new();
    SKIP.get_or_init(|| {
        let mut kinds: Vec<(String, Vec<String>)> = Vec::new();
        for line in SKIP_DATA.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            if let Some(rest) = line.strip_prefix('@') {
                let (kind, pat) = rest.split_once(' ').unwrap_or((rest, ""));
                match kinds.iter_mut().find(|(k, _)| k == kind) {
                    Some((_, v)) => v.push(pat.trim().to_string()),
                    None => kinds.push((kind.to_string(), vec![pat.trim().to_string()])),
                }
            }
        }
        // The list is part of the program: a pattern that does not compile is dropped
        // rather than taking the analysis down (the unit test checks that none is).
        let set = |v: &[String]| {
            regex::RegexSet::new(v).unwrap_or_else(|_| {
                regex::RegexSet::new(v.iter().filter(|p| regex::Regex::new(p).is_ok()))
                    .unwrap_or_else(|_| regex::RegexSet::empty())
            })
        };
        let take = |kinds: &mut Vec<(String, Vec<String>)>, name: &str| {
            kinds.iter().position(|(k, _)| k == name).map(|i| kinds.remove(i).1).unwrap_or_default()
        };
        let stall = take(&mut kinds, "stall_anchor");
        let hang_anchors = take(&mut kinds, "hang_anchor")
            .into_iter()
            .map(|a| match a.split_once('=') {
                Some((n, g)) => (n.to_string(), g.to_string()),
                None => (a, String::new()),
            })
            .collect();
        let hang_skip = take(&mut kinds, "hang_skip");
        let rules = take(&mut kinds, "title")
            .into_iter()
            .filter_map(|r| {
                let (mode, rest) = r.split_once(' ')?;
                let mode = match mode {
                    "leaf" => Mode::Leaf,
                    "stall" => Mode::Stall,
                    "title" => Mode::Title,
                    _ => return None,
                };
                let (text, pats) = rest.split_once('|').unwrap_or((rest, ""));
                let pats: Vec<String> = pats.split_whitespace().map(str::to_string).collect();
                Some(Rule { mode, text: text.trim().to_string(), skip: set(&pats) })
            })
            .collect();
        Skip {
            by_kind: kinds.iter().map(|(k, v)| (k.clone(), set(v))).collect(),
            stall_anchors: set(&stall),
            hang_anchors,
            hang_skip,
            rules,
        }
    })
}

/// True when `function` is machinery for a report of `kind`: on the list shared with the report
/// extractor ([`kflame::report::is_skipped_frame`]) or on a per-kind line of `skip.txt`.
pub fn is_skipped(function: &str, kind: Kind) -> bool {
    let f = base_name(function);
    let s = skip_list();
    kflame::report::is_skipped_frame(f)
        || s.by_kind.iter().any(|(k, set)| k == kind.name() && set.is_match(f))
}

/// The first frame of `stack` from `from` on (towards the root) that is reliable and not
/// machinery; `None` when there is none.
fn walk<'a>(
    stack: &'a [Frame],
    from: usize,
    kind: Kind,
    extra: Option<&regex::RegexSet>,
) -> Option<&'a Frame> {
    let ok = |f: &&Frame| {
        !is_skipped(&f.function, kind) && !extra.is_some_and(|x| x.is_match(base_name(&f.function)))
    };
    let rest = stack.get(from..)?;
    rest.iter().filter(|f| !f.unreliable).find(ok).or_else(|| rest.iter().find(ok))
}

/// The frames of the timer interrupt that reports a stall.
const TIMER_IRQ: &[&str] = &[
    "apic_timer_interrupt",
    "sysvec_apic_timer_interrupt",
    "hrtimer_interrupt",
    "arch_timer_handler",
    "watchdog_timer_fn",
    "rcu_sched_clock_irq",
    "tick_sched_timer",
];

/// Stalls and lockups: the frame before the first dispatch point (syscall entry, work
/// item, softirq) of the first stack that has one, machinery skipped.
fn stall_frame<'a>(
    report: &'a Report,
    kind: Kind,
    extra: Option<&regex::RegexSet>,
) -> Option<(&'a Frame, Origin)> {
    let stacks = std::iter::once((&report.frames[..], Origin::MainTrace))
        .chain(report.extra_stacks.iter().map(|s| (&s.frames[..], Origin::ExtraStack)));
    for (stack, origin) in stacks {
        // The stalled code is what the timer interrupt that noticed the stall interrupted
        // (the first timer interrupt entry: a second one further down is an older one).
        // Some kernels print the interrupt after the task's frames: then the whole stack.
        // Lockup detectors print the interrupted context itself (show_regs()): its stack
        // starts at the looping code, an interrupt entry in it is where that code runs.
        let from_tick = !matches!(kind, Kind::SoftLockup | Kind::HardLockup);
        let entry = |f: &Frame| kflame::report::is_stall_interrupt_entry(&f.function);
        let from = stack
            .iter()
            .position(entry)
            .or_else(|| stack.iter().rposition(|f| TIMER_IRQ.iter().any(|t| f.function.contains(t))))
            .filter(|_| from_tick)
            .map_or(0, |i| i + 1);
        if let Some(f) = stall_in(&stack[from..], kind, extra).or_else(|| stall_in(stack, kind, extra)) {
            return Some((f, origin));
        }
    }
    None
}

/// The frame before the first stall anchor of `stack` (machinery skipped).
fn stall_in<'a>(stack: &'a [Frame], kind: Kind, extra: Option<&regex::RegexSet>) -> Option<&'a Frame> {
    let anchors = &skip_list().stall_anchors;
    let frames: Vec<&Frame> = stack
        .iter()
        .filter(|f| {
            !f.unreliable
                && !is_skipped(&f.function, kind)
                && !extra.is_some_and(|x| x.is_match(base_name(&f.function)))
        })
        .collect();
    let mut prev = *frames.first()?;
    for f in frames {
        let name = base_name(&f.function);
        // Matched as syzkaller matches it, system call prefixes stripped too.
        if anchors.is_match(name) || anchors.is_match(kflame::report::title_name(name)) {
            return Some(if name.contains("smp_call_function") { f } else { prev });
        }
        prev = f;
    }
    None
}

/// Hung tasks: a wait on an anchor (`rtnl_lock`, `synchronize_rcu`...), else the first frame
/// that is not scheduling, locking or waiting.
fn hang_frame(report: &Report, kind: Kind) -> Option<&Frame> {
    let s = skip_list();
    let frames: Vec<&Frame> =
        report.frames.iter().filter(|f| !f.unreliable && !is_skipped(&f.function, kind)).collect();
    for f in &frames {
        if s.hang_anchors.iter().any(|(a, _)| f.function.contains(a.as_str())) {
            return Some(f);
        }
    }
    frames.into_iter().find(|f| !s.hang_skip.iter().any(|w| f.function.contains(w.as_str())))
}

fn pick(report: &Report) -> Option<(Picked<'_>, Origin)> {
    let kind = report.kind();
    let rule = skip_list()
        .rules
        .iter()
        .find(|r| report.title.starts_with(&r.text) || report.header.contains(&r.text));
    let extra = rule.map(|r| &r.skip);
    // An IRQ lock inversion (`HARDIRQ-safe -> HARDIRQ-unsafe lock order detected`) is about
    // the lock taken where it `became HARDIRQ-irq-safe`: the culprit is the first frame of
    // that stack that is not locking machinery (syzkaller names its reports by the same stack).
    if kind == Kind::Lockdep
        && let Some(f) = report
            .extra_stacks
            .iter()
            .find(|s| s.label.contains("-irq-safe at:"))
            .and_then(|s| walk(&s.frames, 0, kind, extra))
    {
        return Some((Picked::Frame(f), Origin::ExtraStack));
    }
    match rule.map(|r| r.mode) {
        Some(Mode::Leaf) => {
            // lockdep's site line (`is trying to release lock (X) at:` and the frame after
            // it) comes first, as in syzkaller's format for it; then the trace.
            let site = report.extra_stacks.iter().find(|s| s.label == kflame::report::LOCK_SITE);
            if let Some(f) = site.and_then(|s| walk(&s.frames, 0, kind, extra)) {
                return Some((Picked::Frame(f), Origin::ExtraStack));
            }
            if let Some(f) = walk(&report.frames, 0, kind, extra) {
                return Some((Picked::Frame(f), Origin::MainTrace));
            }
        }
        Some(Mode::Stall) => {
            if let Some((f, origin)) = stall_frame(report, kind, extra) {
                return Some((Picked::Frame(f), origin));
            }
        }
        _ => {}
    }
    match kind {
        Kind::RcuStall | Kind::SoftLockup | Kind::HardLockup => {
            if let Some((f, origin)) = stall_frame(report, kind, extra) {
                return Some((Picked::Frame(f), origin));
            }
        }
        Kind::HungTask => {
            if let Some(f) = hang_frame(report, kind) {
                return Some((Picked::Frame(f), Origin::MainTrace));
            }
        }
        _ => {}
    }
    if let Some(name) = title_function(&report.title) {
        let want = base_name(name);
        let matches = |f: &Frame| base_name(&f.function) == want;
        // The title's frame in the main trace (a reliable one first), then the first frame
        // from there towards the root that is not machinery.
        let at = report
            .frames
            .iter()
            .position(|f| !f.unreliable && matches(f))
            .or_else(|| report.frames.iter().position(matches));
        if let Some(i) = at {
            let f = walk(&report.frames, i, kind, extra).unwrap_or(&report.frames[i]);
            return Some((Picked::Frame(f), Origin::MainTrace));
        }
        for s in &report.extra_stacks {
            if let Some(i) = s.frames.iter().position(matches) {
                let f = walk(&s.frames, i, kind, extra).unwrap_or(&s.frames[i]);
                return Some((Picked::Frame(f), Origin::ExtraStack));
            }
        }
        if let Some(rip) = report.rip.as_deref().filter(|r| base_name(rip_function(r)) == want) {
            if is_skipped(want, kind)
                && let Some(f) = walk(&report.frames, 0, kind, extra)
            {
                return Some((Picked::Frame(f), Origin::MainTrace));
            }
            return Some((Picked::Pc(rip), Origin::Pc));
        }
        // The title names machinery that no stack holds (a sanitizer's access site in
        // `memcmp`): the main trace from its leaf, machinery skipped, when it has a frame left.
        if kind != Kind::Kasan
            && is_skipped(want, kind)
            && let Some(f) = walk(&report.frames, 0, kind, extra)
        {
            return Some((Picked::Frame(f), Origin::MainTrace));
        }
        return Some((Picked::Name(name.to_string()), Origin::Title));
    }
    if let Some(f) = walk(&report.frames, 0, kind, extra).or_else(|| report.guilty_frame()) {
        return Some((Picked::Frame(f), Origin::MainTrace));
    }
    if let Some(rip) = report.rip.as_deref() {
        let f = rip_function(rip);
        if !f.is_empty() && !f.starts_with("0x") {
            return Some((Picked::Pc(rip), Origin::Pc));
        }
    }
    None
}

/// The function of a PC line's value (`foo_read+0x12/0x40` → `foo_read`).
fn rip_function(rip: &str) -> &str {
    rip.split('+').next().unwrap_or(rip).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_skip_pattern_compiles() {
        for line in SKIP_DATA.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let pat = line.strip_prefix('@').map_or(line, |r| r.split_once(' ').map_or("", |(_, p)| p));
            assert!(regex::Regex::new(pat).is_ok(), "{pat}");
        }
        assert!(is_skipped("kasan_report", Kind::Kasan));
        assert!(is_skipped("__schedule", Kind::HungTask));
        assert!(!is_skipped("ext4_readdir", Kind::Warning));
    }

    #[test]
    fn title_functions() {
        assert_eq!(title_function("WARNING in foo_bar"), Some("foo_bar"));
        assert_eq!(title_function("KCSAN: data-race in a / b"), Some("a"));
        assert_eq!(title_function("INFO: task hung in corrupted"), None);
        assert_eq!(title_function("kernel panic: Fatal exception"), None);
    }
}
