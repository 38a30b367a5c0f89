//! Kernel reports grouped by signature (their syzkaller-form title), most frequent first, each
//! with its Error, Resolution and Summary.

use std::collections::{BTreeSet, HashMap};

use kflame::collapse::crash::CrashTask;
use kflame::report::{Frame, Kind, Report};
use serde::Serialize;

use crate::blame::{Blame, blame};
use crate::culprit::{Culprit, Origin, base_name, culprit};
use crate::fixes::{FixQuery, FixSearch, Resolution};
use crate::source::SourceLookup;

/// Where and when one report was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Seen {
    /// The input's name as given (a file name, `-` for stdin).
    pub input: String,
    /// 1-based line of the report's first line in that input.
    pub line: u64,
    /// The log's time stamp of that line, as printed, when it had one.
    pub time: Option<String>,
}

/// The Error section: what the kernel reported, from the group's first report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorInfo {
    /// Report kind (`kasan`, `warning`, `hung_task`...; `crash_task` for crash `bt` output).
    pub kind: String,
    /// The report's title in syzkaller's style.
    pub title: String,
    /// The report's first line as printed.
    pub header: String,
    /// Kernel release of the first report, when printed.
    pub kernel: Option<String>,
    /// Taint flags (empty when `Not tainted`).
    pub taint: Option<String>,
    /// CPU, PID and command of the task that hit it.
    pub cpu: Option<u32>,
    /// PID.
    pub pid: Option<u32>,
    /// Command name.
    pub comm: Option<String>,
    /// The culprit frame, with its confidence; `None` when no frame, PC or title names one.
    pub culprit: Option<Culprit>,
    /// The source file the report is blamed on (whose maintainers should hear of it), when
    /// the report names source files ([`crate::blame`]).
    pub blame: Option<Blame>,
    /// Frames of the culprit's stack after it (its callers), as printed, reliable ones only,
    /// at most 8.
    pub callers: Vec<String>,
    /// The main call trace as printed, leaf first (at most 64 lines).
    pub trace: Vec<String>,
    /// Frames beyond those printed in `trace`.
    pub trace_more: usize,
    /// The report was cut before it ended.
    pub truncated: bool,
}

/// One group of reports that share a signature.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The reports' title as syzkaller writes it (`WARNING in shrink_slab`): see
    /// [`signature`].
    pub signature: String,
    /// How many reports have this signature.
    pub count: usize,
    /// The first and last report of the group, in input order.
    pub first_seen: Seen,
    /// Last report.
    pub last_seen: Seen,
    /// Distinct kernel releases of the group's reports, sorted.
    pub kernels: Vec<String>,
    /// Distinct titles, in order of first appearance (at most 8).
    pub titles: Vec<String>,
    /// The Error section.
    pub error: ErrorInfo,
    /// The Resolution section.
    pub resolution: Resolution,
    /// The Summary: plain sentences.
    pub summary: Vec<String>,
}

/// Collects reports (and crash task backtraces) and groups them.
#[derive(Debug, Default)]
pub struct ReportAnalyzer {
    groups: Vec<Building>,
    by_signature: HashMap<String, usize>,
    reports: usize,
}

#[derive(Debug)]
struct Building {
    group: Group,
    kernels: BTreeSet<String>,
    query: FixQuery,
    culprit_file: Option<String>,
}

/// The group a report belongs to, its title as syzkaller writes titles (`WARNING in
/// shrink_slab`, `KASAN: use-after-free Read in consume_skb`, `INFO: task hung in corrupted`:
/// what syzbot, lore and the mailing lists name a bug by, so that the key pasted into their
/// search finds it; what changes between occurrences already replaced); and the culprit.
pub fn signature(report: &Report) -> (String, Option<Culprit>) {
    (report.title.clone(), culprit(report))
}

/// The signature (see [`signature`]) and kernel release of the first report `text` holds:
/// a stored report's text, as the history keeps it.
pub fn sign_text(text: &str) -> Option<(String, Option<String>)> {
    let r = kflame::report::ReportExtractor::extract_all(text.as_bytes()).into_iter().next()?;
    Some((signature(&r).0, r.kernel))
}

/// The group of the first report `text` holds, as `kflame analyze` gives it without a kernel
/// tree or git history (error and culprit, resolution query, summary).
pub fn explain_text(text: &str, input: &str) -> Option<Group> {
    explain_text_with(text, input, None, None, 0)
}

/// The group of the first report `text` holds, as `kflame analyze --kernel-src --kernel-git`
/// gives it: the culprit's source looked up in `source`, at most `fix_limit` fixes searched
/// with `fixes`, when given.
pub fn explain_text_with(
    text: &str,
    input: &str,
    source: Option<&dyn SourceLookup>,
    fixes: Option<&dyn FixSearch>,
    fix_limit: usize,
) -> Option<Group> {
    let r = kflame::report::ReportExtractor::extract_all(text.as_bytes()).into_iter().next()?;
    let mut a = ReportAnalyzer::new();
    a.add_report(input, &r);
    a.finish(source, fixes, fix_limit).into_iter().next()
}

impl ReportAnalyzer {
    /// An empty analyzer.
    pub fn new() -> ReportAnalyzer {
        ReportAnalyzer::default()
    }

    /// Reports added so far.
    pub fn reports(&self) -> usize {
        self.reports
    }

    /// Adds one report of the input named `input`.
    pub fn add_report(&mut self, input: &str, report: &Report) {
        self.reports += 1;
        let (signature, c) = signature(report);
        let seen = Seen { input: input.to_string(), line: report.line, time: report.time.clone() };
        if let Some(&i) = self.by_signature.get(&signature) {
            let b = &mut self.groups[i];
            b.group.count += 1;
            b.group.last_seen = seen;
            if let Some(k) = &report.kernel {
                b.kernels.insert(k.clone());
            }
            if b.group.titles.len() < 8 && !b.group.titles.contains(&report.title) {
                b.group.titles.push(report.title.clone());
            }
            // The most trusted culprit of the group stands for it.
            let better = match (&c, &b.group.error.culprit) {
                (Some(new), Some(old)) => new.confidence > old.confidence,
                (Some(_), None) => true,
                _ => false,
            };
            if better {
                let (error, query, file) = error_info(report, c);
                b.group.error = error;
                b.query = query;
                b.culprit_file = file;
            }
            return;
        }
        let (error, query, culprit_file) = error_info(report, c);
        let group = Group {
            signature: signature.clone(),
            count: 1,
            first_seen: seen.clone(),
            last_seen: seen,
            kernels: Vec::new(),
            titles: vec![report.title.clone()],
            error,
            resolution: Resolution::default(),
            summary: Vec::new(),
        };
        let kernels = report.kernel.iter().cloned().collect();
        self.by_signature.insert(signature, self.groups.len());
        self.groups.push(Building { group, kernels, query, culprit_file });
    }

    /// Adds one task backtrace of crash `bt` output, as a report of kind `crash_task`
    /// titled by its state and command.
    pub fn add_task(&mut self, input: &str, task: &CrashTask) {
        let report = task_report(task);
        self.add_report(input, &report);
    }

    /// The groups, most frequent first (ties in order of first appearance), with their
    /// Resolution filled from `source` (the kernel tree, `--kernel-src`) and `fixes` (the
    /// git log, `--kernel-git`) when given, and their Summary.
    pub fn finish(
        self,
        source: Option<&dyn SourceLookup>,
        fixes: Option<&dyn FixSearch>,
        fix_limit: usize,
    ) -> Vec<Group> {
        let mut out: Vec<Group> = Vec::with_capacity(self.groups.len());
        // Read only when a group names a file to blame.
        let maintainers = std::cell::OnceCell::new();
        for b in self.groups {
            let mut g = b.group;
            g.kernels = b.kernels.into_iter().collect();
            let mut query = b.query;
            let mut notes = Vec::new();
            let mut info = None;
            match (source, &g.error.culprit) {
                (Some(src), Some(c)) => match src.describe(c) {
                    Ok(Some(i)) => {
                        if query.file.is_none() {
                            query.file = Some(i.file.clone());
                        }
                        info = Some(i);
                    }
                    Ok(None) => notes.push(format!(
                        "`{}` is not defined in the kernel tree given (another version, a module built \
                         elsewhere, or generated code)",
                        base_name(&c.function)
                    )),
                    Err(e) => notes.push(format!("source lookup failed: {e}")),
                },
                (None, Some(_)) => {
                    notes.push("no kernel tree given (--kernel-src): source not looked up".into())
                }
                (_, None) => notes.push("no culprit function: nothing to look up".into()),
            }
            if query.file.is_none() {
                query.file = b.culprit_file;
            }
            let found = match fixes {
                None => {
                    notes.push("no kernel git history given (--kernel-git): fixes not searched".into());
                    None
                }
                Some(_) if query.functions.is_empty() => {
                    notes.push("no function to search the git log for".into());
                    None
                }
                Some(s) => match s.search(&query, fix_limit) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        notes.push(format!("fix search failed: {e}"));
                        None
                    }
                },
            };
            let blamed = g.error.blame.as_ref().map(|b| b.file.as_str());
            let owners = match (blamed, source) {
                (Some(file), Some(tree)) => match maintainers.get_or_init(|| tree.maintainers()) {
                    Some(m) => m.for_file(file),
                    None => {
                        notes.push(
                            "the kernel tree has no MAINTAINERS file: maintainers not looked up".into(),
                        );
                        Vec::new()
                    }
                },
                _ => Vec::new(),
            };
            g.resolution = Resolution { source: info, fixes: found, query, maintainers: owners, notes };
            g.summary = summary(&g);
            out.push(g);
        }
        // Stable: equal counts keep their order of first appearance.
        out.sort_by_key(|g| std::cmp::Reverse(g.count));
        out
    }
}

/// The Error section of `report` with culprit `c`, the fix query, and the culprit's source
/// file as printed with its frame (`fs/x.c:12` → `fs/x.c`), if any.
fn error_info(report: &Report, c: Option<Culprit>) -> (ErrorInfo, FixQuery, Option<String>) {
    let stack: &[Frame] = match c.as_ref().map(|c| c.origin) {
        Some(Origin::ExtraStack) => report
            .extra_stacks
            .iter()
            .find(|s| {
                s.frames.iter().any(|f| Some(f.function.as_str()) == c.as_ref().map(|c| c.function.as_str()))
            })
            .map_or(&report.frames[..], |s| &s.frames[..]),
        _ => &report.frames,
    };
    let at = c.as_ref().and_then(|c| stack.iter().position(|f| f.function == c.function));
    let after: Vec<&Frame> = match at {
        Some(i) => stack[i + 1..].iter().filter(|f| !f.unreliable).collect(),
        None => Vec::new(),
    };
    let callers: Vec<String> = after.iter().take(8).map(|f| frame_text(f)).collect();
    let file =
        c.as_ref().and_then(|c| c.source.as_deref()).map(|s| s.split(':').next().unwrap_or(s).to_string());
    let query = FixQuery::new(
        report.kind().name(),
        &report.title,
        c.as_ref().map(|c| c.function.as_str()),
        after.iter().map(|f| f.function.as_str()),
        file.clone(),
    );
    let trace: Vec<String> = report.frames.iter().take(64).map(|f| f.raw.clone()).collect();
    let error = ErrorInfo {
        kind: if report.kind.is_none() && report.header.starts_with("crash bt") {
            "crash_task".to_string()
        } else {
            report.kind().name().to_string()
        },
        title: report.title.clone(),
        header: report.header.clone(),
        kernel: report.kernel.clone(),
        taint: report.taint.clone(),
        cpu: report.cpu,
        pid: report.pid,
        comm: report.comm.clone(),
        culprit: c,
        blame: blame(report),
        callers,
        trace_more: report.frames.len().saturating_sub(trace.len()) + report.dropped_frames as usize,
        trace,
        truncated: report.truncated,
    };
    (error, query, file)
}

fn frame_text(f: &Frame) -> String {
    let mut s = f.with_offset();
    if let Some(m) = &f.module {
        s.push_str(&format!(" [{m}]"));
    }
    s
}

/// A crash task as a report: its frames (leaf first), command, PID, CPU, and a title that
/// says what state it was in and where.
fn task_report(t: &CrashTask) -> Report {
    let frames: Vec<Frame> = t
        .frames
        .iter()
        .map(|f| Frame {
            function: f.function.clone(),
            module: f.module.clone(),
            section: f.section,
            raw: match &f.module {
                Some(m) => format!("{} [{m}]", f.function),
                None => f.function.clone(),
            },
            ..Frame::default()
        })
        .collect();
    let mut r = Report {
        kind: None,
        header: format!(
            "crash bt: PID {} TASK {} CPU {} COMMAND \"{}\"",
            t.pid,
            t.task,
            t.cpu.map_or("?".into(), |c| c.to_string()),
            t.comm
        ),
        cpu: t.cpu,
        pid: u32::try_from(t.pid).ok(),
        comm: Some(t.comm.clone()),
        frames,
        line: t.line,
        ..Report::default()
    };
    let state = t.state.as_deref().unwrap_or("task");
    let exception = t.frames.iter().find(|f| f.exception).map(|f| f.function.clone());
    let at = exception.or_else(|| r.guilty_frame().map(|f| f.function.clone()));
    r.title = match at {
        Some(f) => format!("{state} task {} in {f}", t.comm),
        None => format!("{state} task {}", t.comm),
    };
    r
}

/// The Summary of a finished group: a few plain sentences, the same for the same input.
fn summary(g: &Group) -> Vec<String> {
    let e = &g.error;
    let mut s = Vec::new();
    let times = match g.count {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        n => format!("{n} times"),
    };
    let kernels = match g.kernels.len() {
        0 => String::new(),
        1 => format!(" on kernel {}", g.kernels[0]),
        n => format!(" on {n} kernels ({})", g.kernels.join(", ")),
    };
    let span = if g.count == 1 {
        format!(" ({} line {})", g.first_seen.input, g.first_seen.line)
    } else if g.first_seen.input == g.last_seen.input {
        format!(" ({} lines {} to {})", g.first_seen.input, g.first_seen.line, g.last_seen.line)
    } else {
        format!(
            " (first {} line {}, last {} line {})",
            g.first_seen.input, g.first_seen.line, g.last_seen.input, g.last_seen.line
        )
    };
    s.push(format!("\"{}\" was reported {times}{kernels}{span}.", e.title));
    match &e.culprit {
        Some(c) => {
            let mut at = format!("`{}", c.function);
            if let Some(o) = &c.offset {
                at.push_str(&format!("+{o}"));
            }
            at.push('`');
            if let Some(m) = &c.module {
                at.push_str(&format!(" in module {m}"));
            }
            let chain: Vec<&str> =
                e.callers.iter().take(3).map(|f| f.split('+').next().unwrap_or(f)).collect();
            let from = if chain.is_empty() {
                String::new()
            } else {
                format!(", called from {}", chain.join(" ← "))
            };
            let src = match &g.resolution.source {
                Some(i) => match &i.line {
                    Some(l) => format!(" ({}:{})", l.file, l.line),
                    None => format!(" (defined in {}:{})", i.file, i.start),
                },
                None => String::new(),
            };
            s.push(format!("The likely culprit is {at}{src}{from}."));
            if c.doubts.is_empty() {
                s.push(format!(
                    "Confidence is {} ({:.2}): the frame is reliable and the report complete.",
                    c.level, c.confidence
                ));
            } else {
                s.push(format!("Confidence is {} ({:.2}): {}.", c.level, c.confidence, c.doubts.join("; ")));
            }
        }
        None => s.push("No frame of the report names a culprit: the trace is missing or unreadable.".into()),
    }
    if e.kind == Kind::Warning.name() || e.kind == Kind::Bug.name() {
        s.push("A WARN or BUG assertion failed: its condition is at the PC line of the report, and the culprit is the first caller that is not generic code.".into());
    }
    match &g.resolution.fixes {
        Some(f) if f.is_empty() => s.push("No commit of the git history given matches it.".into()),
        Some(f) => {
            let first = &f[0];
            let short = first.id.get(..12).unwrap_or(&first.id);
            s.push(format!(
                "The best matching commit is {short} (\"{}\"){}.",
                first.subject,
                if first.fixes_trailer { ", which carries a Fixes: trailer" } else { "" }
            ));
        }
        None => {}
    }
    if let (Some(b), Some(m)) = (&e.blame, g.resolution.maintainers.first()) {
        let mut to: Vec<&str> = m.maintainers.iter().map(|x| x.split(" <").next().unwrap_or(x)).collect();
        to.extend(m.lists.iter().map(|l| l.split(' ').next().unwrap_or(l)));
        let to = if to.is_empty() { "no one listed".to_string() } else { to.join(", ") };
        s.push(format!("Its file to blame, {}, belongs to {} in MAINTAINERS ({to}).", b.file, m.name));
    }
    s
}
