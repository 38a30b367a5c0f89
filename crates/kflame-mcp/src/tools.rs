//! The tools: their arguments (JSON schemas generated from these types, descriptions from
//! their doc comments), and what each one does with the library. Every tool is a plain
//! function from a [`Context`] and its arguments to an [`Answer`] (structured JSON plus a
//! short text for the model) or a [`ToolError`]; the server runs it on a blocking thread
//! under the time limit.

use std::io::BufReader;
use std::path::PathBuf;

use kflame::collapse::Format;
use kflame::fold::tree::{StackTree, percent};
use kflame::fold::{Meta, Stacks};
use kflame::open::Input;
use kflame::render::html::{HtmlOptions, encode_tree};
use kflame_analyze::run::Run;
use kflame_analyze::source::SourceLookup;
use kflame_analyze::{FixSearch, ReportAnalyzer, output, profile};
use kflame_store::reports::{ReportGroup, group_reports};
use kflame_store::time::{format_time, now_ns, parse_time};
use kflame_store::{Event, Kind, OpenMode, ProfileQuery, Query, SeriesQuery, Sqlite};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Answer, Context, ToolError};

/// Most report groups, functions, paths, callers, fixes or events a tool returns.
pub const MAX_LIMIT: usize = 50;
/// Frame lines kept per report in a tool result (the rest are counted in `trace_more`).
const MAX_TRACE: usize = 24;
/// Source lines kept per definition in a tool result.
const MAX_SOURCE_LINES: usize = 80;
/// Stacks sent to the flame graph view at most, per profile (see [`for_view`]).
const MAX_VIEW_STACKS: usize = 20_000;

fn limit(l: Option<usize>, default: usize) -> usize {
    l.unwrap_or(default).clamp(1, MAX_LIMIT)
}

/// Arguments of `analyze_kernel_log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelLogArgs {
    /// Absolute path of a kernel log (dmesg, journalctl -k, serial console, kern.log,
    /// syzkaller report; gzip/zstd/xz read as they are), under a directory the server allows.
    pub path: String,
    /// At most this many report groups (default 5, at most 50), most frequent first.
    pub limit: Option<usize>,
}

/// Arguments of `analyze_crash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CrashArgs {
    /// Absolute path of the output of the `crash` utility (`bt`, `bt -a`, `foreach bt`).
    pub path: String,
    /// At most this many groups of tasks (default 5, at most 50).
    pub limit: Option<usize>,
}

/// A range of the history database (`kflame watch --db`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Range {
    /// Start: RFC 3339 (`2026-11-25T03:14:00Z`), `now`, or relative (`-1h`, `-10m`, `-2d`).
    pub from: String,
    /// End (exclusive), same forms; default `now`.
    pub to: Option<String>,
    /// Profile kind: `cpu` (default), `offcpu`, `mem`, `syscalls`, `blocked`.
    pub kind: Option<String>,
    /// Only this host.
    pub host: Option<String>,
}

/// Arguments of `summarize_profile`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileArgs {
    /// Absolute path of any profile kflame reads (perf.data, perf script, folded stacks,
    /// ftrace, bpftrace/bcc output, pprof, speedscope, ...). Give this or `range`.
    pub path: Option<String>,
    /// A range of the server's history database instead of a file.
    pub range: Option<Range>,
    /// At most this many functions and paths per list (default 10, at most 50).
    pub limit: Option<usize>,
}

/// One side of `diff_profiles`: a file or a range of the history.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileSource {
    /// Absolute path of a profile file.
    pub path: Option<String>,
    /// A range of the history database.
    pub range: Option<Range>,
}

/// Arguments of `diff_profiles`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// The baseline.
    pub before: ProfileSource,
    /// The profile compared with it.
    pub after: ProfileSource,
    /// At most this many functions that grew and that shrank (default 10, at most 50).
    pub limit: Option<usize>,
}

/// Arguments of `kernel_source`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceArgs {
    /// Function, macro or syscall name as a stack shows it (`vfs_read`,
    /// `__x64_sys_openat`, `foo.isra.0`; an offset `+0x1a/0x80` is ignored).
    pub function: String,
}

/// Arguments of `find_callers`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallersArgs {
    /// The function whose callers to list.
    pub function: String,
    /// At most this many callers (default 20, at most 50).
    pub limit: Option<usize>,
}

/// Arguments of `search_fixes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FixArgs {
    /// Function names, the culprit first, then nearby frames.
    #[serde(default)]
    pub functions: Vec<String>,
    /// Source paths (`mm/slub.c`) or base names.
    #[serde(default)]
    pub files: Vec<String>,
    /// Words of the report's title (`use-after-free`, `deadlock`).
    #[serde(default)]
    pub words: Vec<String>,
    /// A revision (tag or commit) of the reports' kernel: commits after it rank first.
    pub after: Option<String>,
    /// At most this many commits (default 5, at most 50).
    pub limit: Option<usize>,
}

/// Arguments of `list_reports`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportsArgs {
    /// Start (default `-7d`): RFC 3339, `now`, or relative (`-1h`).
    pub from: Option<String>,
    /// End (default `now`).
    pub to: Option<String>,
    /// Only this host.
    pub host: Option<String>,
    /// At most this many groups (default 10, at most 50).
    pub limit: Option<usize>,
}

/// Arguments of `get_report`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportArgs {
    /// The report's time as `list_reports` gives it (a group's `latest[].time`): RFC 3339
    /// (exact to the ns) or UTC ns since the epoch.
    pub time: String,
    /// Its host (needed only when two hosts logged a report at the same ns).
    pub host: Option<String>,
    /// Seconds before the report whose CPU and off-CPU profiles of its host are summarized
    /// (default 60, 1 to 3600).
    pub before: Option<u32>,
    /// Functions and paths listed per profile (default 10, at most 50).
    pub limit: Option<usize>,
}

/// What `query_history` reads.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HistoryWhat {
    /// Metric series (CPU, memory, IO, pressure ...), resampled.
    Metrics,
    /// Triggers, captures and kernel reports, in time order.
    Events,
    /// What the database holds: hosts (with their labels), time span, metric names.
    Overview,
    /// Which hosts spend time in `frame` over the range: per host, the weight of samples
    /// whose stack holds it, the total, the share (a fleet's ClickHouse store answers in one
    /// statement).
    ByHost,
}

/// Arguments of `query_history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// `overview`, `metrics` or `events`.
    pub what: HistoryWhat,
    /// Start (default `-1h`).
    pub from: Option<String>,
    /// End (default `now`).
    pub to: Option<String>,
    /// Only this host.
    pub host: Option<String>,
    /// Metrics: these names only (`cpu.usr`, `psi.io.some`; default the first 8 stored).
    #[serde(default)]
    pub names: Vec<String>,
    /// Metrics: at most this many points per series (default 30, at most 200).
    pub points: Option<usize>,
    /// Events: at most this many (default 20, at most 50).
    pub limit: Option<usize>,
    /// ByHost: the frame (a function name as in the stacks, `shrink_slab`).
    pub frame: Option<String>,
    /// ByHost: the profile kind (`cpu` default, `offcpu`, `mem`, `syscalls`, `blocked`).
    pub kind: Option<String>,
}

fn input(ctx: &Context, path: &str, what: &str) -> Result<Input, ToolError> {
    let real = ctx.roots.file(path, what)?;
    let name = path.to_string();
    let f = std::fs::File::open(&real).map_err(|e| ToolError::input(format!("{what} {path:?}: {e}")))?;
    Input::from_reader(name, Some(real), Box::new(f)).map_err(|e| ToolError::input(e.to_string()))
}

/// Trims an analysis (as `kflame analyze --json` writes it) to what fits a model's context:
/// frame lines and source text cut, with counts of what was cut.
fn trim_analysis(v: &mut Value) {
    let Some(groups) = v.get_mut("groups").and_then(Value::as_array_mut) else { return };
    for g in groups {
        if let Some(err) = g.get_mut("error").and_then(Value::as_object_mut)
            && let Some(Value::Array(t)) = err.get_mut("trace")
            && t.len() > MAX_TRACE
        {
            let cut = t.len() - MAX_TRACE;
            t.truncate(MAX_TRACE);
            let more = err.get("trace_more").and_then(Value::as_u64).unwrap_or(0) + cut as u64;
            err.insert("trace_more".into(), json!(more));
        }
        if let Some(Value::Object(src)) = g.pointer_mut("/resolution/source")
            && let Some(Value::String(text)) = src.get_mut("text")
        {
            *text = cut_lines(text, MAX_SOURCE_LINES);
        }
    }
}

fn cut_lines(text: &str, max: usize) -> String {
    let n = text.lines().count();
    if n <= max {
        return text.to_string();
    }
    let mut out: String = text.lines().take(max).map(|l| format!("{l}\n")).collect();
    out.push_str(&format!("... ({} more lines)\n", n - max));
    out
}

fn reports_answer(ctx: &Context, path: &str, format: Format, limit: usize) -> Result<Answer, ToolError> {
    let mut run = Run::new(limit);
    let read = run.add(input(ctx, path, "path")?, Some(format)).map_err(|e| ToolError::input(e.0))?;
    if read.is_none() {
        return Err(ToolError::input(format!("{path} is empty")));
    }
    let (source, fixes) = (ctx.source()?, ctx.fixes()?);
    let analysis = run
        .finish(
            source.as_deref().map(|s| s as &dyn SourceLookup),
            fixes.as_deref().map(|f| f as &dyn FixSearch),
        )
        .map_err(|e| ToolError::input(e.0))?;
    let text = output::text(&analysis, true);
    let mut v = output::value(&analysis).map_err(ToolError::internal)?;
    trim_analysis(&mut v);
    Ok(Answer::new(v, cut_lines(&text, 120)))
}

/// `analyze_kernel_log`.
pub fn analyze_kernel_log(ctx: &Context, a: KernelLogArgs) -> Result<Answer, ToolError> {
    reports_answer(ctx, &a.path, Format::KernelLog, limit(a.limit, 5))
}

/// `analyze_crash`.
pub fn analyze_crash(ctx: &Context, a: CrashArgs) -> Result<Answer, ToolError> {
    reports_answer(ctx, &a.path, Format::Crash, limit(a.limit, 5))
}

/// A profile read from a file or the store: its stacks and metadata, and its name.
struct Loaded {
    name: String,
    stacks: Stacks,
    meta: Meta,
    notes: Vec<String>,
}

fn range_of(r: &Range) -> Result<(i64, i64, Kind), ToolError> {
    let (from, to) = times(Some(&r.from), r.to.as_deref(), "-1h", "range.")?;
    let kind: Kind = r
        .kind
        .as_deref()
        .unwrap_or("cpu")
        .parse()
        .map_err(|e| ToolError::input(format!("range.kind: {e}")))?;
    Ok((from, to, kind))
}

fn load(ctx: &Context, path: Option<&str>, range: Option<&Range>, what: &str) -> Result<Loaded, ToolError> {
    match (path, range) {
        (Some(p), None) => {
            // The reader of another tool's profile stops at the server's time limit, as the
            // answer does, rather than going on once the call is abandoned.
            let limits = kflame::import::Limits {
                deadline: std::time::Instant::now().checked_add(ctx.config().timeout),
                ..kflame::import::Limits::default()
            };
            let input = input(ctx, p, what)?.with_limits(limits);
            if input.is_empty() {
                return Err(ToolError::input(format!("{what} {p:?} is empty")));
            }
            let Some(format) = input.detect() else {
                return Err(ToolError::input(format!(
                    "{what} {p:?}: its first lines match none of the formats kflame reads"
                )));
            };
            if matches!(format, Format::KernelLog | Format::Crash) {
                return Err(ToolError::input(format!(
                    "{what} {p:?} is {format} input: use analyze_kernel_log or analyze_crash"
                )));
            }
            let out =
                kflame_analyze::run::collapse_profile(input, format).map_err(|e| ToolError::input(e.0))?;
            let mut notes = Vec::new();
            let d = out.diag.report(p).to_string();
            if !d.is_empty() {
                notes.push(d);
            }
            Ok(Loaded { name: p.to_string(), stacks: out.stacks, meta: out.meta, notes })
        }
        (None, Some(r)) => {
            let (from, to, kind) = range_of(r)?;
            let db = ctx.db()?;
            let q = ProfileQuery { host: r.host.as_deref(), ..ProfileQuery::new(kind, from, to) };
            let p = db.profile(&q).map_err(|e| ToolError::input(e.to_string()))?;
            let mut notes = Vec::new();
            if p.mixed_units > 0 {
                notes.push(format!("{} buckets of another unit left out", p.mixed_units));
            }
            let name = format!("{kind} {}..{}", format_time(from), format_time(to));
            Ok(Loaded { name, stacks: p.stacks, meta: p.meta, notes })
        }
        _ => Err(ToolError::input(format!("{what}: give exactly one of `path` and `range`"))),
    }
}

/// The flame graph view's data for a profile, or for a comparison with the baseline
/// `before`: what the `ui://` viewer draws. Stacks are drawn summed (a time-ordered profile's
/// runs too); more than [`MAX_VIEW_STACKS`] of a side are pruned ([`for_view`]).
fn view(stacks: &Stacks, before: Option<&Stacks>, meta: &Meta, title: &str) -> Value {
    fn summed(s: &Stacks) -> std::borrow::Cow<'_, Stacks> {
        match s {
            Stacks::Counts(_) => std::borrow::Cow::Borrowed(s),
            Stacks::Ordered(_) => std::borrow::Cow::Owned(Stacks::Counts(s.clone().into_counts())),
        }
    }
    let after = summed(stacks);
    let before = before.map(summed);
    let tree = StackTree::from_stacks(&after, before.as_deref(), false, true);
    let (tree, notes) = for_view(tree, before.is_some());
    let opts = HtmlOptions { title: Some(title.to_string()), notes, ..HtmlOptions::default() };
    let data = encode_tree(&tree, meta, &opts, before.is_some());
    serde_json::to_value(&data).unwrap_or(Value::Null)
}

/// Distinct stacks of each side of a tree: (BEFORE, AFTER).
fn side_stacks(tree: &StackTree) -> (u64, u64) {
    let ends = tree.nodes().iter().filter(|n| n.ends);
    ends.fold((0, 0), |(b, a), n| {
        (b + u64::from(!n.self_before.is_zero()), a + u64::from(!n.self_weight.is_zero()))
    })
}

/// The tree the view draws: the whole tree when each side has at most [`MAX_VIEW_STACKS`]
/// stacks; else with those narrower than a share of the total merged into placeholder frames
/// by the pruning `kflame serve` uses ([`StackTree::prune`], both sides of a comparison cut at
/// the same frames), the share raised from serve's 0.005% until they fit. Weights are moved,
/// never dropped: every total is the tool's. The note says what was merged.
fn for_view(tree: StackTree, comparison: bool) -> (StackTree, Option<String>) {
    let fits = |t: &StackTree| {
        let (b, a) = side_stacks(t);
        b as usize <= MAX_VIEW_STACKS && a as usize <= MAX_VIEW_STACKS
    };
    if fits(&tree) {
        return (tree, None);
    }
    let (before, after) = side_stacks(&tree);
    let mut fraction = 0.000_05;
    loop {
        let mut t = tree.clone();
        let Some(p) = t.prune(fraction) else {
            // Nothing that narrow (stacks that are prefixes of others can be many and wide).
            if fraction >= 0.5 {
                return (tree, None);
            }
            fraction *= 4.0;
            continue;
        };
        if fits(&t) || fraction >= 0.5 {
            let pct = percent(fraction);
            let said = if comparison {
                format!("{} of {} and {} of {}", p.merged_before, before, p.merged_after, after)
            } else {
                format!("{} of {}", p.merged_after, after)
            };
            let note = format!(
                "{said} stacks narrower than {pct} of the total are merged into the frame above them \
                 (\"(N stacks below {pct} merged)\"); totals are exact"
            );
            return (t, Some(note));
        }
        fraction *= 4.0;
    }
}

/// `summarize_profile`.
pub fn summarize_profile(ctx: &Context, a: ProfileArgs) -> Result<Answer, ToolError> {
    let p = load(ctx, a.path.as_deref(), a.range.as_ref(), "profile")?;
    if p.stacks.is_empty() {
        return Err(ToolError::input(format!("{}: no stacks in this profile", p.name)));
    }
    let analysis = profile::analyze(&p.name, p.stacks.in_output_order(), &p.meta.unit, limit(a.limit, 10));
    let mut text = String::new();
    for s in &analysis.summary {
        text.push_str(s);
        text.push('\n');
    }
    let mut v = serde_json::to_value(&analysis).map_err(ToolError::internal)?;
    if !p.notes.is_empty() {
        v["notes"] = json!(p.notes);
    }
    Ok(Answer::new(v, text).with_view(view(&p.stacks, None, &p.meta, &p.name)))
}

/// `diff_profiles`.
pub fn diff_profiles(ctx: &Context, a: DiffArgs) -> Result<Answer, ToolError> {
    let b = load(ctx, a.before.path.as_deref(), a.before.range.as_ref(), "before")?;
    let af = load(ctx, a.after.path.as_deref(), a.after.range.as_ref(), "after")?;
    if b.meta.unit.name() != af.meta.unit.name() {
        return Err(ToolError::input(format!(
            "before is in {} and after in {}: profiles of different units do not compare",
            b.meta.unit.name(),
            af.meta.unit.name()
        )));
    }
    let d = profile::diff(
        b.stacks.in_output_order(),
        af.stacks.in_output_order(),
        &af.meta.unit,
        limit(a.limit, 10),
    );
    let text = d.summary.join("\n") + "\n";
    let mut v = serde_json::to_value(&d).map_err(ToolError::internal)?;
    v["before"] = json!(b.name);
    v["after"] = json!(af.name);
    let title = format!("{} → {}", b.name, af.name);
    Ok(Answer::new(v, text).with_view(view(&af.stacks, Some(&b.stacks), &af.meta, &title)))
}

/// `kernel_source`.
pub fn kernel_source(ctx: &Context, a: SourceArgs) -> Result<Answer, ToolError> {
    let src = ctx.source()?.ok_or_else(|| ToolError::unavailable("kernel source", "--kernel-src DIR"))?;
    let name = a.function.split('+').next().unwrap_or("").trim();
    if name.is_empty() {
        return Err(ToolError::input("function: empty name".into()));
    }
    let defs = src.definitions(name);
    if defs.is_empty() {
        return Err(ToolError::input(format!(
            "{name} is not defined in the kernel tree {}",
            src.index.root().display()
        )));
    }
    let mut out = Vec::new();
    let mut text = String::new();
    for d in defs.iter().take(5) {
        let body = src.text(&d.file, d.start, d.end).map_err(|e| ToolError::input(e.to_string()))?;
        let body = cut_lines(&body, MAX_SOURCE_LINES);
        text.push_str(&format!("{}:{}-{} ({})\n{body}", d.file, d.start, d.end, d.kind));
        out.push(json!({"name": d.name, "file": d.file, "start": d.start, "end": d.end, "kind": d.kind, "text": body}));
    }
    Ok(Answer::new(json!({"function": name, "definitions": out, "definitions_total": defs.len()}), text))
}

/// `find_callers`.
pub fn find_callers(ctx: &Context, a: CallersArgs) -> Result<Answer, ToolError> {
    let src = ctx.source()?.ok_or_else(|| ToolError::unavailable("kernel source", "--kernel-src DIR"))?;
    let name = a.function.split('+').next().unwrap_or("").trim().to_string();
    let callers = src.callers(&name);
    let n = limit(a.limit, 20);
    let text: String =
        callers.iter().take(n).map(|c| format!("{}:{}: {}\n", c.file, c.line, c.function)).collect();
    let text = if callers.is_empty() { format!("no function of the tree calls {name}\n") } else { text };
    let shown: Vec<_> = callers.iter().take(n).collect();
    Ok(Answer::new(json!({"function": name, "callers": shown, "callers_total": callers.len()}), text))
}

/// `search_fixes`.
pub fn search_fixes(ctx: &Context, a: FixArgs) -> Result<Answer, ToolError> {
    let index = ctx.fixes()?.ok_or_else(|| ToolError::unavailable("fix search", "--kernel-git DIR"))?;
    if a.functions.is_empty() && a.files.is_empty() && a.words.is_empty() {
        return Err(ToolError::input("give at least one of functions, files and words".into()));
    }
    let q = kflame_fixes::Query {
        functions: a.functions,
        files: a.files,
        words: a.words,
        after: a.after.or_else(|| index.after.clone()),
        limit: limit(a.limit, 5),
    };
    let hits = index.index.search(&q).map_err(|e| ToolError::input(e.to_string()))?;
    let text: String = hits
        .iter()
        .map(|h| {
            format!(
                "{} {} {} (matched: {})\n",
                &h.id[..h.id.len().min(12)],
                h.date,
                h.subject,
                h.matched.join(", ")
            )
        })
        .collect();
    let text = if hits.is_empty() { "no commit matches\n".to_string() } else { text };
    let hits: Vec<Value> = hits
        .into_iter()
        .map(|h| {
            json!({"id": h.id, "date": h.date, "subject": h.subject, "score": h.score,
                   "matched": h.matched, "fixes_trailer": h.fixes_trailer})
        })
        .collect();
    Ok(Answer::new(json!({"fixes": hits}), text))
}

/// `[from, to)` in UTC ns (`to` defaults to now); `what` prefixes the argument names in errors.
fn times(
    from: Option<&str>,
    to: Option<&str>,
    default_from: &str,
    what: &str,
) -> Result<(i64, i64), ToolError> {
    let now = now_ns();
    let f = parse_time(from.unwrap_or(default_from), now)
        .map_err(|e| ToolError::input(format!("{what}from: {e}")))?;
    let t = parse_time(to.unwrap_or("now"), now).map_err(|e| ToolError::input(format!("{what}to: {e}")))?;
    if t <= f {
        return Err(ToolError::input(format!(
            "the range is empty: to ({}) is not after from ({})",
            format_time(t),
            format_time(f)
        )));
    }
    Ok((f, t))
}

/// `list_reports`: the kernel reports `kflame watch` stored, grouped by signature as
/// `analyze_kernel_log` groups them.
pub fn list_reports(ctx: &Context, a: ReportsArgs) -> Result<Answer, ToolError> {
    let db = ctx.db()?;
    let (from, to) = times(a.from.as_deref(), a.to.as_deref(), "-7d", "")?;
    let events = db.events(from, to, a.host.as_deref()).map_err(|e| ToolError::input(e.to_string()))?;
    let mut analyzer = ReportAnalyzer::new();
    // Each stored report's signature, from the report read here (its text is read once).
    let mut signs: std::collections::HashMap<(&str, i64), (String, Option<String>)> = Default::default();
    let (mut stored, mut unread) = (0, Vec::new());
    for ev in &events {
        let Event::Report { host, time_ns, text, title, .. } = ev else { continue };
        stored += 1;
        let before = analyzer.reports();
        let mut reports = kflame::report::reports(BufReader::new(text.as_bytes()));
        let mut failed = None;
        let found: Vec<_> =
            reports.by_ref().filter_map(|r| r.map_err(|e| failed = Some(e.to_string())).ok()).collect();
        if let Some(r) = found.first() {
            let signature = kflame_analyze::reports::signature(r).0;
            signs.insert((host.as_str(), *time_ns), (signature, r.kernel.clone()));
        }
        for r in found {
            let input = format!("{host} {}", format_time(*time_ns));
            analyzer.add_report(&input, &r);
        }
        if analyzer.reports() == before {
            // Stored, but its text gives no report now (an older extractor stored it, or it
            // was cut): counted and named, not dropped.
            let why = failed
                .map_or("no report in its text".to_string(), |e| format!("its text could not be read: {e}"));
            unread.push(json!({"host": host, "time": format_time(*time_ns), "title": title, "why": why}));
        }
    }
    // When and where each signature was stored, and its latest reports (for `get_report`):
    // the grouping `kflame serve` shows (the events are of `host` already).
    let mut sign = |e: &Event| match e {
        Event::Report { host, time_ns, .. } => signs.get(&(host.as_str(), *time_ns)).cloned(),
        _ => None,
    };
    let stored_groups = group_reports(&events, |_| true, &mut sign, LATEST_LISTED);
    let n = limit(a.limit, 10);
    let mut groups = analyzer.finish(None, None, n);
    let total = groups.len();
    groups.truncate(n);
    let mut text = format!(
        "{stored} kernel reports stored from {} to {}; {total} groups\n",
        format_time(from),
        format_time(to)
    );
    let mut out = Vec::new();
    for g in &groups {
        let mut v = serde_json::to_value(g).map_err(ToolError::internal)?;
        if let Some(s) = stored_groups.iter().find(|s| s.signature == g.signature) {
            v["stored_first"] = json!(format_time(s.first_seen));
            v["stored_last"] = json!(format_time(s.last_seen));
            v["hosts"] = json!(s.hosts);
            v["latest"] = latest_json(s);
        } else {
            v["hosts"] = json!([]);
        }
        text.push_str(&format!(
            "{} x{}: {}\n",
            g.signature,
            g.count,
            g.titles.first().map_or("", |s| s.as_str())
        ));
        out.push(v);
    }
    if !unread.is_empty() {
        text.push_str(&format!("{} stored reports could not be grouped (see `unread`)\n", unread.len()));
    }
    let mut v = json!({"reports": stored, "groups_total": total, "groups": out, "unread": unread});
    trim_analysis(&mut v);
    Ok(Answer::new(v, text))
}

/// Reports listed per group by `list_reports` and `get_report`.
const LATEST_LISTED: usize = 10;

/// The stored reports of `events` with signature `signature`, as one group of the grouping
/// `kflame serve` shows.
fn group_of(events: &[Event], signature: &str, listed: usize) -> Option<ReportGroup> {
    let mut sign = |e: &Event| match e {
        Event::Report { text, .. } => kflame_analyze::reports::sign_text(text),
        _ => None,
    };
    group_reports(events, |_| true, &mut sign, listed).into_iter().find(|g| g.signature == signature)
}

/// A group's latest reports: time (RFC 3339, what `get_report` takes), host, title.
fn latest_json(g: &ReportGroup) -> Value {
    g.latest
        .iter()
        .map(|r| json!({"time": format_time(r.time_ns), "host": r.host, "title": r.title}))
        .collect()
}

/// The default and largest `before` of `get_report`, seconds.
const BEFORE_SECS: u32 = 60;
const BEFORE_MAX_SECS: u32 = 3600;
/// Fix candidates in a report's analysis.
const REPORT_FIXES: usize = 5;
/// Lines of a report's text in `get_report`'s answer.
const MAX_REPORT_LINES: usize = 200;

/// `get_report`: one stored report with its analysis (source and fixes where the server has a
/// kernel tree and git history), the reports of the same signature in the history, and what
/// its host was doing in the seconds before it.
pub fn get_report(ctx: &Context, a: ReportArgs) -> Result<Answer, ToolError> {
    let db = ctx.db()?;
    let t = a.time.trim();
    let time = match t.parse::<i64>() {
        Ok(ns) => ns,
        Err(_) => parse_time(t, now_ns()).map_err(|e| ToolError::input(format!("time: {e}")))?,
    };
    let before = a.before.unwrap_or(BEFORE_SECS);
    if !(1..=BEFORE_MAX_SECS).contains(&before) {
        return Err(ToolError::input(format!("before: {before}: expected 1 to {BEFORE_MAX_SECS} seconds")));
    }
    let err = |e: kflame_store::StoreError| ToolError::input(e.to_string());
    let found = db.reports(time, time.saturating_add(1), a.host.as_deref()).map_err(err)?;
    let Some(Event::Report { host, time_ns, kind, title, stack, text }) =
        found.into_iter().find(|e| matches!(e, Event::Report { .. }))
    else {
        return Err(ToolError::input(format!(
            "no kernel report at {}{}: list_reports gives each group's latest reports with their times",
            format_time(time),
            a.host.as_deref().map_or(String::new(), |h| format!(" on {h}"))
        )));
    };
    let (source, fixes) = (ctx.source()?, ctx.fixes()?);
    let input = format!("{host} {}", format_time(time_ns));
    let group = kflame_analyze::reports::explain_text_with(
        &text,
        &input,
        source.as_deref().map(|s| s as &dyn SourceLookup),
        fixes.as_deref().map(|f| f as &dyn FixSearch),
        REPORT_FIXES,
    );
    let signature = group.as_ref().map(|g| g.signature.clone());
    let mut analysis = json!({ "groups": [serde_json::to_value(&group).map_err(ToolError::internal)?] });
    trim_analysis(&mut analysis);
    let analysis = analysis["groups"][0].take();

    // The same signature over the whole history.
    let similar = match &signature {
        Some(sig) => match db.time_bounds().map_err(err)? {
            Some((lo, hi)) => {
                let all = db.reports(lo, hi.saturating_add(1), None).map_err(err)?;
                group_of(&all, sig, LATEST_LISTED).map(|g| {
                    json!({
                        "count": g.count, "first_seen": format_time(g.first_seen),
                        "last_seen": format_time(g.last_seen), "hosts": g.hosts, "kernels": g.kernels,
                        "titles": g.titles, "latest": latest_json(&g),
                    })
                })
            }
            None => None,
        },
        None => None,
    };

    // Its host in the seconds before it.
    let from = time_ns.saturating_sub(i64::from(before) * 1_000_000_000);
    let n = limit(a.limit, 10);
    let mut before_json = json!({ "seconds": before, "from": format_time(from), "to": format_time(time_ns) });
    let mut view_of = None;
    for kind in [Kind::Cpu, Kind::OffCpu] {
        let q = ProfileQuery { host: Some(&host), ..ProfileQuery::new(kind, from, time_ns) };
        let p = db.profile(&q).map_err(err)?;
        if p.stacks.is_empty() {
            before_json[kind.as_str()] = Value::Null;
            continue;
        }
        let name = format!("{kind} of {host}, {before} s before the report");
        let summary = profile::analyze(&name, p.stacks.in_output_order(), &p.meta.unit, n);
        before_json[kind.as_str()] = serde_json::to_value(&summary).map_err(ToolError::internal)?;
        if view_of.is_none() {
            view_of = Some(view(&p.stacks, None, &p.meta, &name));
        }
    }

    let mut out = format!("{kind}: {title}\n{} on {host}\n", format_time(time_ns));
    if let Some(sig) = &signature {
        out.push_str(&format!("signature {sig}\n"));
    }
    if let Some(g) = &group {
        for line in &g.summary {
            out.push_str(line);
            out.push('\n');
        }
    }
    match &similar {
        Some(s) if s["count"].as_u64() > Some(1) => out.push_str(&format!(
            "{} reports with this signature on {} hosts, first {}, last {}\n",
            s["count"],
            s["hosts"].as_array().map_or(0, Vec::len),
            s["first_seen"].as_str().unwrap_or(""),
            s["last_seen"].as_str().unwrap_or("")
        )),
        Some(_) => out.push_str("the only report with this signature in the history\n"),
        None => {}
    }
    for kind in [Kind::Cpu, Kind::OffCpu] {
        if let Some(first) = before_json[kind.as_str()]["summary"].get(0).and_then(Value::as_str) {
            out.push_str(&format!("{kind} before: {first}\n"));
        }
    }
    let v = json!({
        "host": host, "time": format_time(time_ns), "time_ns": time_ns, "kind": kind, "title": title,
        "stack": stack, "text": cut_lines(&text, MAX_REPORT_LINES), "signature": signature,
        "analysis": analysis, "similar": similar, "before": before_json,
    });
    let answer = Answer::new(v, out);
    Ok(match view_of {
        Some(view) => answer.with_view(view),
        None => answer,
    })
}

/// `query_history`.
pub fn query_history(ctx: &Context, a: HistoryArgs) -> Result<Answer, ToolError> {
    let db = ctx.db()?;
    let host = a.host.as_deref();
    let err = |e: kflame_store::StoreError| ToolError::input(e.to_string());
    match a.what {
        HistoryWhat::ByHost => {
            let frame = a.frame.as_deref().filter(|f| !f.is_empty()).ok_or_else(|| {
                ToolError::input(
                    "by_host needs `frame`: the function to look for (`shrink_slab`)".to_string(),
                )
            })?;
            let (from, to) = times(a.from.as_deref(), a.to.as_deref(), "-1h", "")?;
            let kind: kflame_store::Kind = a
                .kind
                .as_deref()
                .unwrap_or("cpu")
                .parse()
                .map_err(|e: kflame_store::UnknownKind| ToolError::input(e.to_string()))?;
            let q = ProfileQuery { host, ..ProfileQuery::new(kind, from, to) };
            let shares = db.host_shares(&q, frame).map_err(err)?;
            let limit = a.limit.unwrap_or(20).clamp(1, MAX_LIMIT);
            let mut text = format!(
                "{frame} on {} of {} hosts ({kind}, {} to {})\n",
                shares.iter().filter(|s| !s.frame.is_zero()).count(),
                shares.len(),
                format_time(from),
                format_time(to)
            );
            let mut out = Vec::new();
            for s in shares.iter().take(limit) {
                let pct = if s.total.is_zero() { 0.0 } else { 100.0 * s.frame.as_f64() / s.total.as_f64() };
                text.push_str(&format!("{} {} of {} ({pct:.2}%)\n", s.host, s.frame, s.total));
                out.push(
                    json!({"host": s.host, "in_frame": s.frame.to_string(), "total": s.total.to_string(),
                    "percent": (pct * 100.0).round() / 100.0}),
                );
            }
            Ok(Answer::new(
                json!({"frame": frame, "kind": kind.as_str(), "hosts_total": shares.len(), "hosts": out}),
                text,
            ))
        }
        HistoryWhat::Overview => {
            let hosts = db.hosts().map_err(err)?;
            let bounds = db.time_bounds().map_err(err)?;
            let names = db.metric_names(host).map_err(err)?;
            let names: Vec<&str> = names
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let span = bounds.map(|(f, t)| json!({"from": format_time(f), "to": format_time(t)}));
            let text = format!(
                "hosts: {}; span: {}; {} metrics\n",
                hosts.join(", "),
                bounds.map_or("empty".to_string(), |(f, t)| format!(
                    "{} to {}",
                    format_time(f),
                    format_time(t)
                )),
                names.len()
            );
            Ok(Answer::new(json!({"hosts": hosts, "span": span, "metrics": names}), text))
        }
        HistoryWhat::Metrics => {
            let (from, to) = times(a.from.as_deref(), a.to.as_deref(), "-1h", "")?;
            let mut names = a.names.clone();
            if names.is_empty() {
                let mut all: Vec<String> =
                    db.metric_names(host).map_err(err)?.into_iter().map(|(n, _)| n).collect();
                all.sort();
                all.dedup();
                names = all.into_iter().take(8).collect();
            }
            let points = a.points.unwrap_or(30).clamp(1, 200);
            let mut out = Vec::new();
            let mut text = String::new();
            for name in names.iter().take(MAX_LIMIT) {
                let q = SeriesQuery {
                    name,
                    label: Some(""),
                    host,
                    from_ns: from,
                    to_ns: to,
                    points: Some(points),
                };
                for s in db.series(&q).map_err(err)? {
                    let (mut lo, mut hi, mut sum, mut n) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0u64);
                    let pts: Vec<Value> = s
                        .points
                        .iter()
                        .map(|p| {
                            lo = lo.min(p.min);
                            hi = hi.max(p.max);
                            sum += p.avg * f64::from(p.count);
                            n += u64::from(p.count);
                            json!({"t": format_time(p.time_ns), "min": p.min, "max": p.max, "avg": p.avg})
                        })
                        .collect();
                    if n > 0 {
                        text.push_str(&format!(
                            "{} {}: min {lo:.2} avg {:.2} max {hi:.2}\n",
                            s.host,
                            s.name,
                            sum / n as f64
                        ));
                    }
                    out.push(json!({"host": s.host, "name": s.name, "label": s.label, "points": pts}));
                }
            }
            if out.is_empty() {
                text.push_str("no values of these metrics in the range\n");
            }
            Ok(Answer::new(json!({"from": format_time(from), "to": format_time(to), "series": out}), text))
        }
        HistoryWhat::Events => {
            let (from, to) = times(a.from.as_deref(), a.to.as_deref(), "-1h", "")?;
            let evs = db.events(from, to, host).map_err(err)?;
            let n = limit(a.limit, 20);
            let mut text = format!("{} events\n", evs.len());
            let mut out = Vec::new();
            for ev in evs.iter().take(n) {
                let v = match ev {
                    Event::Trigger { host, time_ns, rule, metric, value, threshold, .. } => json!({
                        "type": "trigger", "host": host, "time": format_time(*time_ns), "rule": rule,
                        "metric": metric, "value": value, "threshold": threshold}),
                    Event::Capture { id, host, kind, start_ns, end_ns, note, .. } => json!({
                        "type": "capture", "id": id.0, "host": host, "kind": kind.as_str(), "time": format_time(*start_ns),
                        "end": end_ns.map(format_time), "note": note}),
                    Event::Report { host, time_ns, kind, title, .. } => json!({
                        "type": "report", "host": host, "time": format_time(*time_ns), "kind": kind, "title": title}),
                };
                text.push_str(&format!(
                    "{} {} {}\n",
                    v["time"].as_str().unwrap_or(""),
                    v["type"].as_str().unwrap_or(""),
                    v.get("title").or(v.get("rule")).or(v.get("kind")).and_then(Value::as_str).unwrap_or("")
                ));
                out.push(v);
            }
            Ok(Answer::new(json!({"events_total": evs.len(), "events": out}), text))
        }
    }
}

/// Where the server's history database is, for messages.
pub(crate) fn open_db(path: &PathBuf) -> Result<Sqlite, ToolError> {
    Sqlite::open(path, OpenMode::Read).map_err(|e| ToolError::input(format!("history database: {e}")))
}
