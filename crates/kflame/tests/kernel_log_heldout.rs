//! The kernel report extractor measured on reports that were set aside and not read while
//! its rules were written (see `tests/data/kernel-log/README.md`, "Held-out reports"):
//!
//! - syzkaller: every file of `syzkaller/heldout/` (the upstream reports never copied into
//!   `syzkaller/report/`), plus the files of `syzkaller/report/` whose name hashes to 0
//!   modulo 5 (`common::syzkaller::held_out_name`, 32-bit FNV-1a of the file name's bytes);
//! - kernelci: the kernel reports that kernelci/logspec's own test suite expects in the
//!   `kernelci/` logs, and the real hung task captures of `captures/`.
//!
//! Scored as syzkaller scores its own parser: a file holds a report when its `TITLE` is not
//! empty (detection: we report a bug exactly when it does; an OOM kill or an allocation
//! failure is memory running out, not a report syzkaller's parser gives, see
//! `Report::is_bug`, and the first bug report is the one scored); the kind is ours for the
//! `TITLE` or for one of the `ALT` titles; the guilty function is the function our title
//! names (that is, [`kflame::report::Report::guilty_frame`] unless the report's first line
//! names its function itself), compared with the function named by `TITLE` or any `ALT`,
//! and files marked `CORRUPTED: Y` are not scored for it. `guilty_frame()` alone is printed
//! beside it.
//!
//! The figures are printed (`cargo test -p kflame --test kernel_log_heldout -- --nocapture`)
//! and compared with the targets (detection >= 99%, kind >= 98%, guilty function >= 95%);
//! floors at the figures reached are asserted so that they do not go back. Per-file
//! misses are printed only with `KFLAME_HELDOUT_DETAILS=1`, so that writing rules does not
//! start from them.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fs;
use std::path::Path;

use kflame::report::{Kind, Report, ReportExtractor};

mod common;
use common::syzkaller::{crash_reports, expected_kind, held_out_name, split, title_functions};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kernel-log");

fn base(f: &str) -> &str {
    let f = f.strip_prefix('.').unwrap_or(f);
    f.split('.').next().unwrap_or(f)
}

#[derive(Default)]
struct Score {
    files: u32,
    detected: u32,
    kind_n: u32,
    kind_ok: u32,
    frame_n: u32,
    frame_ok: u32,
    guilty_ok: u32,
    truncated: u32,
    details: Vec<String>,
    /// Misses by check and expected kind (counts only: where to look, not what).
    by_kind: std::collections::BTreeMap<(String, Kind), u32>,
}

impl Score {
    fn print(&self, what: &str) {
        let pct = |a: u32, b: u32| 100.0 * f64::from(a) / f64::from(b.max(1));
        println!("{what}: {} inputs", self.files);
        println!("  detection: {}/{} = {:.1}%", self.detected, self.files, pct(self.detected, self.files));
        println!("  kind:      {}/{} = {:.1}%", self.kind_ok, self.kind_n, pct(self.kind_ok, self.kind_n));
        println!(
            "  guilty function (as the title names it): {}/{} = {:.1}%",
            self.frame_ok,
            self.frame_n,
            pct(self.frame_ok, self.frame_n)
        );
        println!(
            "  Report::guilty_frame() alone (informative): {}/{} = {:.1}%",
            self.guilty_ok,
            self.frame_n,
            pct(self.guilty_ok, self.frame_n)
        );
        println!("  reports flagged truncated: {}", self.truncated);
        let misses: Vec<String> = self.by_kind.iter().map(|((c, k), n)| format!("{c}/{k}: {n}")).collect();
        println!("  misses by check and expected kind: {}", misses.join(", "));
        if std::env::var_os("KFLAME_HELDOUT_DETAILS").is_some() {
            for d in &self.details {
                println!("  miss {d}");
            }
        }
    }

    fn rates(&self) -> (f64, f64, f64) {
        let r = |a: u32, b: u32| f64::from(a) / f64::from(b.max(1));
        (r(self.detected, self.files), r(self.kind_ok, self.kind_n), r(self.frame_ok, self.frame_n))
    }

    fn add(&mut self, o: &Score) {
        self.files += o.files;
        self.detected += o.detected;
        self.kind_n += o.kind_n;
        self.kind_ok += o.kind_ok;
        self.frame_n += o.frame_n;
        self.frame_ok += o.frame_ok;
        self.guilty_ok += o.guilty_ok;
        self.truncated += o.truncated;
    }
}

fn title_function(r: &Report) -> Option<&str> {
    r.title.rsplit_once(" in ").map(|(_, f)| f)
}

fn score_syzkaller(name: &str, data: &[u8], s: &mut Score) {
    let (exp, log) = split(data);
    let reports = crash_reports(log);
    s.files += 1;
    let want = !exp.title.is_empty();
    if want != reports.is_empty() {
        s.detected += 1;
    } else {
        s.details.push(format!(
            "{name} detection: expected {:?}, got {:?}",
            exp.title,
            reports.first().map(|r| &r.title)
        ));
        let what = if want { "detection (missed)" } else { "detection (no report expected)" };
        *s.by_kind.entry((what.into(), expected_kind(&exp.title))).or_default() += 1;
    }
    let Some(r) = reports.first().filter(|_| want) else { return };
    s.truncated += u32::from(r.truncated);
    s.kind_n += 1;
    let titles: Vec<&String> = std::iter::once(&exp.title).chain(&exp.alts).collect();
    if titles.iter().any(|t| expected_kind(t) == r.kind()) {
        s.kind_ok += 1;
    } else {
        s.details.push(format!("{name} kind: expected {:?}, got {:?} ({})", exp.title, r.title, r.kind()));
        *s.by_kind.entry(("kind".into(), expected_kind(&exp.title))).or_default() += 1;
    }
    let funcs: Vec<String> = titles.iter().flat_map(|t| title_functions(t)).collect();
    if exp.corrupted || funcs.is_empty() {
        return;
    }
    s.frame_n += 1;
    let named =
        |f: Option<&str>| f.is_some_and(|f| f.split(" / ").any(|f| funcs.iter().any(|w| base(w) == base(f))));
    if named(title_function(r)) {
        s.frame_ok += 1;
    } else {
        s.details.push(format!("{name} frame: expected {:?}, got {:?}", exp.title, r.title));
        *s.by_kind.entry(("frame".into(), expected_kind(&exp.title))).or_default() += 1;
    }
    if named(r.guilty_frame().map(|f| f.function.as_str())) {
        s.guilty_ok += 1;
    }
}

/// The held-out syzkaller files; with `complement`, the other files of `syzkaller/report/`
/// instead (those the rules may be written from).
fn syzkaller(complement: bool) -> Score {
    let mut s = Score::default();
    let dirs: &[(&str, bool)] = if complement {
        &[("syzkaller/report", false)]
    } else {
        &[("syzkaller/heldout", true), ("syzkaller/report", false)]
    };
    for &(dir, all) in dirs {
        let path = Path::new(DATA).join(dir);
        let mut names: Vec<String> = fs::read_dir(&path)
            .expect("corpus folder")
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| all || held_out_name(n) != complement)
            .collect();
        names.sort();
        for n in names {
            let data = fs::read(path.join(&n)).unwrap();
            score_syzkaller(&format!("{dir}/{n}"), &data, &mut s);
        }
    }
    s
}

/// The kernel reports kernelci/logspec's test suite (`tests/test_linux_boot.py`,
/// `tests/test_baseline.py` at the commit the logs come from) expects in each log: a
/// substring of its `error_summary`, the kind its `error_type` and summary mean here, and
/// the function the summary names, if any. The real captures: a hung task.
const KERNELCI: &[(&str, &str, Kind, Option<&str>)] = &[
    ("kernelci/linux_boot/linux_boot_002.log", "VFS: Unable to mount root fs", Kind::Panic, None),
    (
        "kernelci/linux_boot/linux_boot_005.log",
        "at arch/x86/kernel/alternative.c:730",
        Kind::Warning,
        Some("apply_returns"),
    ),
    (
        "kernelci/linux_boot/linux_boot_005.log",
        "unable to handle page fault for address",
        Kind::PageFault,
        None,
    ),
    ("kernelci/linux_boot/linux_boot_005.log", "Fatal exception", Kind::Panic, None),
    ("kernelci/linux_boot/linux_boot_006.log", "shift-out-of-bounds", Kind::Ubsan, None),
    ("kernelci/linux_boot/linux_boot_007.log", "shift-out-of-bounds", Kind::Ubsan, None),
    ("kernelci/linux_boot/linux_boot_007.log", "kernel NULL pointer dereference", Kind::PageFault, None),
    (
        "kernelci/linux_boot/linux_boot_007.log",
        "sleeping function called from invalid context",
        Kind::AtomicSleep,
        None,
    ),
    ("kernelci/linux_boot/linux_boot_007.log", "workqueue lockup", Kind::Bug, None),
    ("kernelci/linux_boot/linux_boot_008.log", "Attempted to kill init!", Kind::Panic, None),
    (
        "kernelci/test_baseline/test_baseline_004.log",
        "kernel NULL pointer dereference",
        Kind::PageFault,
        None,
    ),
    ("captures/dmesg-hung-task-calltrace.txt", "blocked for more than", Kind::HungTask, None),
    ("captures/kmsg-raw-hung-task.txt", "blocked for more than", Kind::HungTask, None),
];

/// Logs in which kernelci/logspec expects no kernel report (only firmware and probe errors).
const KERNELCI_CLEAN: &[&str] = &[
    "kernelci/linux_boot/linux_boot_001.log",
    "kernelci/linux_boot/linux_boot_003.log",
    "kernelci/linux_boot/linux_boot_004.log",
    "kernelci/linux_boot/linux_boot_009.log",
    "kernelci/test_baseline/test_baseline_001.log",
    "kernelci/test_baseline/test_baseline_002.log",
    "kernelci/test_baseline/test_baseline_003.log",
    "captures/dmesg-full.txt",
];

fn kernelci() -> Score {
    let mut s = Score::default();
    for (rel, summary, kind, func) in KERNELCI {
        let reports = ReportExtractor::extract_all(&fs::read(Path::new(DATA).join(rel)).unwrap());
        let found: Vec<&Report> = reports.iter().filter(|r| r.header.contains(summary)).collect();
        s.files += 1;
        if found.is_empty() {
            s.details.push(format!("{rel} detection: no report with {summary:?}"));
            continue;
        }
        s.detected += 1;
        s.kind_n += 1;
        if found.iter().all(|r| r.kind() == *kind) {
            s.kind_ok += 1;
        } else {
            s.details.push(format!("{rel} kind: {summary:?} is not {kind}"));
        }
        s.truncated += found.iter().filter(|r| r.truncated).count() as u32;
        if let Some(f) = func {
            s.frame_n += 1;
            s.frame_ok += u32::from(found.iter().all(|r| title_function(r) == Some(*f)));
            s.guilty_ok +=
                u32::from(found.iter().all(|r| r.guilty_frame().is_some_and(|g| base(&g.function) == *f)));
        }
    }
    for rel in KERNELCI_CLEAN {
        let reports = ReportExtractor::extract_all(&fs::read(Path::new(DATA).join(rel)).unwrap());
        s.files += 1;
        if reports.is_empty() {
            s.detected += 1;
        } else {
            s.details.push(format!("{rel} detection: no report expected, got {:?}", reports[0].title));
        }
    }
    s
}

#[test]
fn held_out_reports_meet_the_targets() {
    let syz = syzkaller(false);
    let kci = kernelci();
    syz.print("held-out syzkaller reports");
    kci.print("kernelci logs and real captures (kernelci/logspec's expectations)");
    let mut all = Score::default();
    all.add(&syz);
    all.add(&kci);
    all.print("all held-out inputs");
    let (det, kind, frame) = all.rates();
    println!("targets (99% / 98% / 95%) met: {}", det >= 0.99 && kind >= 0.98 && frame >= 0.95);
    // The targets are met, on the held-out syzkaller reports alone (99.1%, 98.8%, 96.4%) and
    // on all held-out inputs (99.2%, 98.8%, 96.4%): asserted, the guilty function at the
    // 96% floor it reached rather than the 95% target.
    for (what, (det, kind, frame)) in
        [("held-out syzkaller reports", syz.rates()), ("all held-out inputs", (det, kind, frame))]
    {
        assert!(det >= 0.99, "{what}: detection {:.1}% fell below the 99% target", det * 100.0);
        assert!(kind >= 0.98, "{what}: kind {:.1}% fell below the 98% target", kind * 100.0);
        assert!(frame >= 0.96, "{what}: guilty function {:.1}% fell below 96% (target 95%)", frame * 100.0);
    }
}

/// The same figures on the rest of `syzkaller/report/` (not held out), printed with every
/// miss: the part of the corpus rules may be written from.
#[test]
fn rest_of_the_corpus_figures() {
    let s = syzkaller(true);
    s.print("syzkaller reports not held out");
    if std::env::var_os("KFLAME_HELDOUT_DETAILS").is_none() {
        for d in &s.details {
            println!("  miss {d}");
        }
    }
}
