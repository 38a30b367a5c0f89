//! The three renderings of an [`Analysis`]: plain text, Markdown and JSON.

use std::fmt::Write as _;

use crate::profile::{FunctionHeat, ProfileAnalysis};
use crate::reports::Group;
use crate::{Analysis, SCHEMA, SCHEMA_VERSION};

/// The analysis as one JSON document (see the schema in the crate documentation).
pub fn json(a: &Analysis) -> String {
    serde_json::to_string_pretty(&Doc { schema: SCHEMA, version: SCHEMA_VERSION, a }).unwrap_or_default()
        + "\n"
}

/// The document of [`json`] as a JSON value (for a caller that adds to it before encoding).
pub fn value(a: &Analysis) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(Doc { schema: SCHEMA, version: SCHEMA_VERSION, a })
}

/// The `--json` document: the schema's name and version, then the analysis.
#[derive(serde::Serialize)]
struct Doc<'a> {
    schema: &'static str,
    version: u32,
    #[serde(flatten)]
    a: &'a Analysis,
}

/// Text (`md` false) or Markdown (`md` true).
pub fn text(a: &Analysis, md: bool) -> String {
    let mut o = String::new();
    if !a.groups.is_empty() {
        let n = a.groups.len();
        let head = format!(
            "{} kernel report{} in {} group{}",
            a.reports,
            if a.reports == 1 { "" } else { "s" },
            n,
            if n == 1 { "" } else { "s" }
        );
        if md {
            let _ = writeln!(o, "# {head}\n");
        } else {
            let _ = writeln!(o, "{head}\n");
        }
        if a.groups_total > n {
            let _ = writeln!(o, "(the {n} most frequent of {} groups; --limit shows more)\n", a.groups_total);
        }
        for (i, g) in a.groups.iter().enumerate() {
            group(&mut o, i + 1, g, md);
        }
    }
    for p in &a.profiles {
        profile(&mut o, p, md);
    }
    for n in &a.notes {
        let _ = writeln!(o, "{}{n}", if md { "> " } else { "note: " });
    }
    o
}

fn heading(o: &mut String, md: bool, level: usize, s: &str) {
    if md {
        let _ = writeln!(o, "{} {s}\n", "#".repeat(level));
    } else if level <= 2 {
        let _ = writeln!(o, "== {s} ==");
    } else {
        let _ = writeln!(o, "{s}:");
    }
}

fn code_line(md: bool, s: &str) -> String {
    if md { format!("`{s}`") } else { s.to_string() }
}

fn group(o: &mut String, n: usize, g: &Group, md: bool) {
    let e = &g.error;
    heading(o, md, 2, &format!("{n}. {} ({}×)", e.title, g.count));
    let bullet = if md { "- " } else { "  " };
    heading(o, md, 3, "Error");
    let _ = writeln!(o, "{bullet}kind: {}", e.kind);
    let _ = writeln!(o, "{bullet}signature: {}", code_line(md, &g.signature));
    if !g.kernels.is_empty() {
        let _ = writeln!(o, "{bullet}kernel: {}", g.kernels.join(", "));
    }
    if let Some(t) = &e.taint {
        let _ = writeln!(o, "{bullet}taint: {}", if t.is_empty() { "not tainted" } else { t });
    }
    let mut task = Vec::new();
    if let Some(c) = e.cpu {
        task.push(format!("CPU {c}"));
    }
    if let Some(p) = e.pid {
        task.push(format!("PID {p}"));
    }
    if let Some(c) = &e.comm {
        task.push(format!("comm {c}"));
    }
    if !task.is_empty() {
        let _ = writeln!(o, "{bullet}task: {}", task.join(", "));
    }
    let seen = |s: &crate::reports::Seen| {
        let t = s.time.as_deref().map(|t| format!(" [{t}]")).unwrap_or_default();
        format!("{} line {}{t}", s.input, s.line)
    };
    if g.count == 1 {
        let _ = writeln!(o, "{bullet}seen: {}", seen(&g.first_seen));
    } else {
        let _ = writeln!(o, "{bullet}first seen: {}", seen(&g.first_seen));
        let _ = writeln!(o, "{bullet}last seen: {}", seen(&g.last_seen));
    }
    match &e.culprit {
        Some(c) => {
            let mut f = c.function.clone();
            if let Some(off) = &c.offset {
                f.push_str(&format!("+{off}"));
            }
            if let Some(m) = &c.module {
                f.push_str(&format!(" [{m}]"));
            }
            let _ = writeln!(
                o,
                "{bullet}culprit: {} (confidence {} {:.2})",
                code_line(md, &f),
                c.level,
                c.confidence
            );
            for d in &c.doubts {
                let _ = writeln!(o, "{}- {d}", if md { "  " } else { "    " });
            }
            if !e.callers.is_empty() {
                let _ = writeln!(
                    o,
                    "{bullet}called from: {}",
                    e.callers.iter().take(5).cloned().collect::<Vec<_>>().join(" ← ")
                );
            }
        }
        None => {
            let _ = writeln!(o, "{bullet}culprit: none could be read from the report");
        }
    }
    if let Some(b) = &e.blame {
        let from = match b.function.as_deref() {
            Some(f) => format!(" (frame {})", code_line(md, f)),
            None => " (the report's first line)".to_string(),
        };
        let _ = writeln!(o, "{bullet}file to blame: {}{from}", code_line(md, &b.file));
    }
    if e.truncated && e.culprit.is_none() {
        // (With a culprit, its doubts say so.)
        let _ = writeln!(o, "{bullet}the report was cut before it ended");
    }
    if g.titles.len() > 1 {
        let _ = writeln!(o, "{bullet}other titles: {}", g.titles[1..].join("; "));
    }
    let _ = writeln!(o);
    heading(o, md, 3, "Resolution");
    let r = &g.resolution;
    if let Some(s) = &r.source {
        let _ =
            writeln!(o, "{bullet}{} ({}) is defined in {}:{}-{}", s.function, s.kind, s.file, s.start, s.end);
        if let Some(l) = &s.line {
            let _ = writeln!(
                o,
                "{bullet}the culprit's line (vmlinux DWARF, {}): {}:{}",
                l.address, l.file, l.line
            );
            for i in &l.inlined {
                let _ = writeln!(o, "{}- inlined: {i}", if md { "  " } else { "    " });
            }
        }
        if !s.others.is_empty() {
            let _ = writeln!(o, "{bullet}also defined in: {}", s.others.join(", "));
        }
        if s.callers_total > 0 {
            let list: Vec<String> =
                s.callers.iter().map(|c| format!("{} ({}:{})", c.function, c.file, c.line)).collect();
            let more = if s.callers_total > s.callers.len() {
                format!(" and {} more", s.callers_total - s.callers.len())
            } else {
                String::new()
            };
            let _ = writeln!(o, "{bullet}called by: {}{more}", list.join(", "));
        }
        let excerpt: Vec<&str> = s.text.lines().take(30).collect();
        if md {
            let _ = writeln!(o, "\n```c\n{}\n```", excerpt.join("\n"));
        } else {
            let _ = writeln!(o);
            for (k, l) in excerpt.iter().enumerate() {
                let _ = writeln!(o, "    {:>6} | {l}", s.start as usize + k);
            }
        }
        let all = s.text.lines().count();
        if all > excerpt.len() {
            let _ = writeln!(o, "{}... {} more lines", if md { "" } else { "    " }, all - excerpt.len());
        }
    }
    for m in r.maintainers.iter().take(3) {
        let status = m.status.as_deref().map(|s| format!(", {s}")).unwrap_or_default();
        let mut who: Vec<String> = m.maintainers.clone();
        who.extend(m.reviewers.iter().map(|r| format!("{r} (reviewer)")));
        who.extend(m.lists.iter().map(|l| format!("list {l}")));
        let _ = writeln!(
            o,
            "{bullet}maintainers of {} ({}{status}, F: {}): {}",
            e.blame.as_ref().map_or("", |b| b.file.as_str()),
            m.name,
            m.matched,
            if who.is_empty() { "nobody listed".to_string() } else { who.join("; ") }
        );
    }
    if r.maintainers.len() > 3 {
        let _ =
            writeln!(o, "{bullet}and {} broader MAINTAINERS sections (see --json)", r.maintainers.len() - 3);
    }
    if let Some(fixes) = &r.fixes {
        if fixes.is_empty() {
            let _ = writeln!(o, "{bullet}no candidate fix found");
        }
        for f in fixes {
            let short = f.id.get(..12).unwrap_or(&f.id);
            let _ = writeln!(
                o,
                "{bullet}fix candidate {short} {} \"{}\"{} (score {:.2}; matched {})",
                f.date,
                f.subject,
                if f.fixes_trailer { " [Fixes:]" } else { "" },
                f.score,
                f.matched.join(", ")
            );
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "{bullet}{n}");
    }
    let _ = writeln!(o);
    heading(o, md, 3, "Summary");
    let _ = writeln!(o, "{}", g.summary.join(" "));
    let _ = writeln!(o);
}

fn profile(o: &mut String, p: &ProfileAnalysis, md: bool) {
    heading(o, md, 2, &format!("Profile {} ({})", p.input, p.unit));
    let _ = writeln!(o, "{}\n", p.summary.join(" "));
    // The weight columns are as wide as their widest entry, in both tables alike.
    let all = || p.by_self.iter().chain(&p.by_total);
    let ws = all().map(|f| f.self_.display.chars().count()).max().unwrap_or(0);
    let wt = all().map(|f| f.total.display.chars().count()).max().unwrap_or(0);
    let row = |f: &FunctionHeat| {
        let k = if f.kernel { " [k]" } else { "" };
        if md {
            format!(
                "| {:.2}% | {} | {:.2}% | {} | `{}`{k} |",
                f.self_.percent, f.self_.display, f.total.percent, f.total.display, f.function
            )
        } else {
            format!(
                "  {:>6.2}% {:>ws$}  {:>6.2}% {:>wt$}  {}{k}",
                f.self_.percent, f.self_.display, f.total.percent, f.total.display, f.function
            )
        }
    };
    for (title, list) in
        [("Hottest functions by self", &p.by_self), ("Hottest functions by total", &p.by_total)]
    {
        heading(o, md, 3, title);
        if md {
            let _ = writeln!(o, "| self % | self | total % | total | function |\n|---:|---:|---:|---:|---|");
        } else {
            let _ = writeln!(o, "  {:>7} {:>ws$}  {:>7} {:>wt$}  function", "self", "", "total", "");
        }
        for f in list {
            let _ = writeln!(o, "{}", row(f));
        }
        let _ = writeln!(o);
    }
    heading(o, md, 3, "Top contributors (root frames)");
    for r in &p.by_root {
        let line = format!("{:.2}% ({}) {}", r.share.percent, r.share.display, r.frames.join(";"));
        let _ = writeln!(o, "{}{line}", if md { "- " } else { "  " });
    }
    let _ = writeln!(o);
    heading(o, md, 3, "Hottest paths");
    for (i, path) in p.paths.iter().enumerate() {
        let shown: Vec<&str> = path.frames.iter().rev().take(8).map(String::as_str).collect();
        let more = if path.frames.len() > shown.len() { " ← …" } else { "" };
        let line = format!("{:.2}% ({}) {}{more}", path.share.percent, path.share.display, shown.join(" ← "));
        if md {
            let _ = writeln!(o, "{}. {line}", i + 1);
        } else {
            let _ = writeln!(o, "  {:>2}. {line}", i + 1);
        }
    }
    let _ = writeln!(o);
}
