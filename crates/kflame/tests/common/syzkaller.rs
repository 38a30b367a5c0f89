//! syzkaller's report corpus files: the header its authors wrote above each log, and the
//! definitions the report tests score against. Also read by the analyzer's tests
//! (`kflame-analyze/tests/culprit_syzkaller.rs`, by path).

use kflame::report::{Kind, Report, ReportExtractor};

/// The header syzkaller's authors wrote above a log.
#[derive(Default)]
pub struct Expected {
    /// `TITLE:`, empty when no report is expected.
    pub title: String,
    /// `ALT:` titles, accepted as well.
    pub alts: Vec<String>,
    /// `CORRUPTED: Y`: not scored for the function.
    pub corrupted: bool,
    /// `FILE:` of the `guilty/` reports: the source file syzkaller blames (`None` without the
    /// key, empty when it blames none).
    pub file: Option<String>,
}

/// Whether a file of `syzkaller/report/` is held out (see `tests/data/kernel-log/README.md`):
/// the 32-bit FNV-1a hash of its name is 0 modulo 5. The tests print no detail of these files.
pub fn held_out_name(name: &str) -> bool {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.is_multiple_of(5)
}

/// Splits a syzkaller corpus file into its header and the log. The log ends where an
/// empty line and `REPORT:` begin the report syzkaller's authors expect to be cut from it
/// (pkg/report/report_test.go parseReport()): that text is not console output.
pub fn split(data: &[u8]) -> (Expected, &[u8]) {
    let (exp, rest) = split_header(data);
    let log = memchr::memmem::find(rest, b"\n\nREPORT:\n").map_or(rest, |i| &rest[..i + 1]);
    (exp, log)
}

fn split_header(data: &[u8]) -> (Expected, &[u8]) {
    let mut exp = Expected::default();
    let mut rest = data;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        let line = String::from_utf8_lossy(&rest[..nl]).into_owned();
        if line.starts_with('#') {
            rest = &rest[nl + 1..];
            continue;
        }
        let key = line.split(':').next().unwrap_or("");
        let is_header = !key.is_empty() && key.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
        if line.is_empty() || !is_header {
            rest = if line.is_empty() { &rest[nl + 1..] } else { rest };
            break;
        }
        let value = line[key.len() + 1..].trim().to_string();
        match key {
            "TITLE" => exp.title = value,
            "ALT" => exp.alts.push(value),
            "CORRUPTED" => exp.corrupted = value == "Y",
            "FILE" => exp.file = Some(value),
            _ => {}
        }
        rest = &rest[nl + 1..];
    }
    (exp, rest)
}

/// Our kind for a syzkaller title, by its prefix. This mapping is the definition the tests
/// check against; it follows the kernel's own words for each report.
pub fn expected_kind(title: &str) -> Kind {
    let table: &[(&str, Kind)] = &[
        ("KASAN:", Kind::Kasan),
        ("KMSAN:", Kind::Kmsan),
        ("KFENCE:", Kind::Kfence),
        ("KCSAN:", Kind::Kcsan),
        ("UBSAN:", Kind::Ubsan),
        ("BUG: unable to handle kernel", Kind::PageFault),
        ("general protection fault", Kind::GeneralProtectionFault),
        ("INFO: task hung", Kind::HungTask),
        ("INFO: task can't die", Kind::HungTask),
        ("BUG: soft lockup", Kind::SoftLockup),
        ("BUG: hard lockup", Kind::HardLockup),
        ("INFO: rcu detected stall", Kind::RcuStall),
        ("possible deadlock", Kind::Lockdep),
        ("inconsistent lock state", Kind::Lockdep),
        ("WARNING: suspicious RCU usage", Kind::Lockdep),
        ("INFO: suspicious RCU usage", Kind::Lockdep),
        ("INFO: trying to register non-static key", Kind::Lockdep),
        ("WARNING: bad unlock balance", Kind::Lockdep),
        ("BUG: bad unlock balance", Kind::Lockdep),
        ("WARNING: lock held when returning to user space", Kind::Lockdep),
        ("WARNING: nested lock was not taken", Kind::Lockdep),
        ("BUG: held lock freed", Kind::Lockdep),
        ("WARNING: still has locks held", Kind::Lockdep),
        ("BUG: MAX_", Kind::Lockdep),
        ("memory leak", Kind::MemoryLeak),
        ("BUG: sleeping function called from invalid context", Kind::AtomicSleep),
        ("BUG: scheduling while atomic", Kind::AtomicSleep),
        ("kernel panic:", Kind::Panic),
        ("WARNING: possible circular locking dependency", Kind::Lockdep),
        ("WARNING", Kind::Warning),
        ("kernel BUG", Kind::Bug),
        ("BUG:", Kind::Bug),
        ("divide error", Kind::Oops),
        ("stack segment fault", Kind::Oops),
        ("PANIC: double fault", Kind::Oops),
        ("Internal error", Kind::Oops),
        ("Unhandled fault", Kind::Oops),
        ("invalid opcode", Kind::Oops),
        // Titles of the kernel's own words that fell to `Other` by default: x86's int3 trap
        // and arm's alignment trap die() as oopses (`int3: 0000 [#1]`, `Alignment trap:`);
        // syzkaller's `kernel stack overflow in FUNC` is `Kernel panic - not syncing: kernel
        // stack overflow` (arm64 handle_bad_stack(), x86 handle_stack_overflow()).
        ("int3", Kind::Oops),
        ("Alignment trap", Kind::Oops),
        ("kernel stack overflow", Kind::Panic),
    ];
    table.iter().find(|(p, _)| title.starts_with(p)).map_or(Kind::Other, |(_, k)| *k)
}

/// Functions named after the last ` in ` of a title (`f1 / f2` for races).
pub fn title_functions(title: &str) -> Vec<String> {
    let Some((_, f)) = title.rsplit_once(" in ") else { return Vec::new() };
    let f = f.split_whitespace().next().unwrap_or("");
    f.split('/').map(str::trim).filter(|s| !s.is_empty() && *s != "corrupted").map(str::to_string).collect()
}

/// The reports of `log` that syzkaller's parser would give: kernel bugs, in order. An OOM
/// kill or an allocation failure is memory running out, which syzkaller does not report
/// (neither is one of its report headers; [`Report::is_bug`]).
pub fn crash_reports(log: &[u8]) -> Vec<Report> {
    ReportExtractor::extract_all(log).into_iter().filter(Report::is_bug).collect()
}
