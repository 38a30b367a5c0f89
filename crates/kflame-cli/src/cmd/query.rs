//! `kflame query`: read a history (`kflame watch --db` or `--store`): the merged profile of a
//! time range, metric series, events, the difference of two ranges; over a fleet also the
//! hosts, which hosts spend time in a frame, and kernel reports grouped across hosts. The
//! queries are the store crates'; this file maps flags onto them and formats the answers.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use kflame::fold::diff::{self, DiffOptions};
use kflame::fold::write::write_lines;
use kflame::render::html::{HtmlOptions, HtmlProfile, write_html};
use kflame::render::{self, Options, OutputKind};
use kflame_store::labels::{self, LabelSpan};
use kflame_store::time::{format_time, now_ns, parse_time};
use kflame_store::{CaptureId, Event, Kind, Profile, ProfileQuery, Query, SeriesQuery};

use crate::cmd::history::{History, HistoryArgs, hosts_of, stretches};
use crate::cmd::outliers as outliers_split;

use crate::output;

/// Arguments of `kflame query`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Times are RFC 3339 (2026-11-25T03:14:00Z, 2026-11-25T05:14:00+02:00), `now`, or relative
to now: -1h, -10m, -30s, -2d (`--from -1h` and `--from=-10m` both work).

Examples:
  kflame query --from -1h -o last-hour.svg     # /var/lib/kflame/kflame.db
  kflame query --db other.db --from -1h -o other.svg
  kflame query --from 2026-11-25T03:14:00Z --to 2026-11-25T03:15:00Z \\
      --kind offcpu -o stall.html
  kflame query --metrics --name cpu.usr --name psi.io.some --from -10m
  kflame query --events --from -1d
  kflame query --kind syscall-outliers --from -10m --list
  kflame query --kind syscall-outliers --top 20 -o slowest.svg
  kflame query --kind syscall-outliers --top 10 --split-outliers slow/
  kflame query --from -1h --diff-from -2h --diff-to -1h |
      kflame flamegraph > diff.svg

A fleet in ClickHouse (`kflame watch --store`):
  kflame query --store clickhouse+https://ch1:8443/kflame --list-hosts
  kflame query --store URL --from -1h --hosts 'web*' -o web-fleet.svg
  kflame query --store URL --from -1h --by-host shrink_slab
  kflame query --store URL --from -7d --reports --label role=db
  kflame query --store URL --label kernel=6.8.0 --base-label kernel=6.1.0 -n
  kflame query --store URL --label kernel=6.8.0 --base-label kernel=6.1.0 \\
      --kernel-git ~/linux -n -o kernels.folded")]
pub(crate) struct Args {
    #[command(flatten)]
    history: HistoryArgs,
    /// Start of the range (inclusive).
    #[arg(long, value_name = "TIME", default_value = "-1h", allow_hyphen_values = true)]
    from: String,
    /// End of the range (exclusive).
    #[arg(long, value_name = "TIME", default_value = "now", allow_hyphen_values = true)]
    to: String,
    /// Which profile: cpu, offcpu, mem, syscalls, blocked, locks; or the outliers the watcher
    /// kept: syscall-outliers, lock-outliers, offcpu-outliers (blocks in D), runq-outliers,
    /// bio-outliers.
    #[arg(long, value_name = "KIND", default_value = "cpu")]
    kind: String,
    /// With `--kind FAMILY-outliers`: one line per outlier (time, host, duration, call,
    /// task, CPU, stack) instead of their stacks folded.
    #[arg(long)]
    list: bool,
    /// With `--kind FAMILY-outliers`: only the N longest (the earliest first among equals).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// With `--kind FAMILY-outliers --top N`: also write each of the N on its own into DIR
    /// (new or empty), as `kflame collapse --split-outliers` does for a trace: its stack
    /// folded and as an SVG, named RANK-DURATION-COMM-PID-CALL-START (START its wall-clock
    /// time, 20261125T031400.250Z), all listed in DIR/index.tsv (start as RFC 3339, host).
    #[arg(long, value_name = "DIR")]
    split_outliers: Option<PathBuf>,
    /// Only this host (a database may hold several).
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Only the buckets of this capture (its id, as `--events` lists it).
    #[arg(long, value_name = "ID")]
    capture: Option<i64>,
    /// Only samples of this cgroup or below it (`/system.slice/nginx.service`).
    #[arg(long, value_name = "PATH")]
    cgroup: Option<String>,
    /// Metric series instead of a profile: CSV (time,host,name,label,value), or JSON with
    /// --json.
    #[arg(long, conflicts_with_all = ["events", "diff_from"])]
    metrics: bool,
    /// With --metrics: only these metrics (repeatable; default every stored one).
    #[arg(long, value_name = "NAME", requires = "metrics")]
    name: Vec<String>,
    /// With --metrics: at most this many points per series (min, max and mean of each span).
    #[arg(long, value_name = "N", requires = "metrics")]
    points: Option<usize>,
    /// With --metrics: JSON instead of CSV.
    #[arg(long, requires = "metrics")]
    json: bool,
    /// Triggers (with the metric and value that fired), captures (kind, range) and kernel
    /// reports of the range, one a line.
    #[arg(long, conflicts_with = "diff_from")]
    events: bool,
    /// The hosts of the history with their labels, one a line.
    #[arg(long, conflicts_with_all = ["metrics", "events", "diff_from", "by_host", "reports"])]
    list_hosts: bool,
    /// Which hosts spend time in FRAME (a function name, as in the stacks): per host, the
    /// weight of its samples whose stack holds it, its total, and the share.
    #[arg(long, value_name = "FRAME", conflicts_with_all = ["metrics", "events", "diff_from", "reports"])]
    by_host: Option<String>,
    /// Kernel reports of the range grouped by signature (the title in syzkaller's form) across hosts:
    /// reports, hosts, first and last seen, kernel versions; the widest spread first.
    #[arg(long, conflicts_with_all = ["metrics", "events", "diff_from"])]
    reports: bool,
    /// Compare: the range --diff-from..--diff-to is BEFORE, --from..--to AFTER; writes
    /// `stack BEFORE AFTER` lines for `kflame flamegraph`.
    #[arg(long, value_name = "TIME", requires = "diff_to", allow_hyphen_values = true)]
    diff_from: Option<String>,
    /// End of the BEFORE range.
    #[arg(long, value_name = "TIME", requires = "diff_from", allow_hyphen_values = true)]
    diff_to: Option<String>,
    /// Compare hosts over the range: those with this label (`kernel=6.1.0-13-amd64`;
    /// repeatable: all must hold) are BEFORE, those --label or --hosts choose AFTER; writes
    /// `stack BEFORE AFTER` lines for `kflame flamegraph`, and on stderr the functions whose
    /// share changed most. `kflame watch --store` labels every host with its kernel.
    #[arg(
        long = "base-label",
        value_name = "KEY=VALUE",
        conflicts_with_all = ["metrics", "events", "diff_from", "by_host", "reports", "list_hosts", "capture"]
    )]
    base_labels: Vec<String>,
    /// With --diff-from or --base-label: scale BEFORE to AFTER's total (as `kflame diff -n`),
    /// so that sides of different sizes (a range of other length, more hosts) compare by
    /// share.
    #[arg(short = 'n', long)]
    normalize: bool,
    /// With --base-label: a kernel git history (indexed on first use, as `kflame fixes`
    /// does): the commits between the two sides' kernels that changed the functions whose
    /// share changed most.
    #[arg(long, value_name = "DIR", requires = "base_labels")]
    kernel_git: Option<PathBuf>,
    /// With --kernel-git: the revisions of the two sides (`v6.1..v6.8`), instead of the
    /// tags of their hosts' `kernel=` labels.
    #[arg(long, value_name = "A..B", requires = "kernel_git")]
    kernel_range: Option<String>,
    /// Write here instead of stdout; the extension says the kind: .folded, .svg, .html,
    /// .json.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Title of an SVG or HTML graph.
    #[arg(long)]
    title: Option<String>,
}

fn range(args_from: &str, args_to: &str, now: i64) -> Result<(i64, i64)> {
    let from = parse_time(args_from, now).context("--from")?;
    let to = parse_time(args_to, now).context("--to")?;
    if to <= from {
        bail!("the range is empty: --to ({}) is not after --from ({})", format_time(to), format_time(from));
    }
    Ok((from, to))
}

/// Runs `kflame query`.
pub(crate) fn run(args: Args) -> Result<()> {
    let now = now_ns();
    let (from, to) = range(&args.from, &args.to, now)?;
    if let Some(family) = args.kind.strip_suffix("-outliers") {
        let family = kflame_store::LatencyKind::from_name(family).with_context(|| {
            format!("--kind {}: expected syscall-, bio-, runq-, offcpu- or lock-outliers", args.kind)
        })?;
        return outliers(&args, family, from, to);
    }
    if args.normalize && args.diff_from.is_none() && args.base_labels.is_empty() {
        bail!("--normalize goes with --diff-from or --base-label (a comparison)");
    }
    if args.list || args.top.is_some() || args.split_outliers.is_some() {
        bail!("--list, --top and --split-outliers go with --kind FAMILY-outliers (syscall-outliers, ...)");
    }
    let kind: Kind = args.kind.parse().map_err(|e| {
        anyhow::anyhow!(
            "--kind: {e}; or syscall-outliers, lock-outliers, offcpu-outliers, runq-outliers, \
             bio-outliers (the slow calls and waits the watcher kept, with their stacks)"
        )
    })?;
    let out_kind = match args.output.as_deref().filter(|p| *p != Path::new("-") && p.extension().is_some()) {
        None => OutputKind::Folded,
        Some(p) => OutputKind::from_path(p).with_context(|| {
            format!(
                "unknown output extension of {}: use one of {}",
                p.display(),
                OutputKind::KNOWN_EXTENSIONS
            )
        })?,
    };
    let history = args.history.open()?;
    let db = history.query.as_ref();
    if args.list_hosts {
        return list_hosts(&history, &args);
    }
    // Labels choose hosts at the time asked: a profile takes each host's samples of the
    // stretches that carried them, metrics and events all of a chosen host's. The hosts'
    // labels over the range are read once, for the comparison's base too.
    let spans = match args.history.narrows() || !args.base_labels.is_empty() {
        true => db.host_label_spans(from, to)?,
        false => Vec::new(),
    };
    let chosen = match args.history.narrows() {
        true => Some(stretches(&spans, &args.history.hosts, &args.history.labels, "--label", (from, to))?),
        false => None,
    };
    let hosts = chosen.as_deref().map(hosts_of);
    let by_label = chosen.as_deref().filter(|_| !args.history.labels.is_empty());
    if args.metrics {
        return metrics(&history, &args, hosts.as_deref(), from, to);
    }
    if args.events || args.reports {
        return events(&history, &args, hosts.as_deref(), from, to);
    }
    let q = ProfileQuery {
        kind,
        from_ns: from,
        to_ns: to,
        host: args.host.as_deref(),
        hosts: hosts.as_deref(),
        capture: args.capture.map(CaptureId),
        cgroup: args.cgroup.as_deref(),
    };
    if let Some(frame) = &args.by_host {
        return by_host(&history, &args, &q, frame);
    }
    if !args.base_labels.is_empty() {
        return compare_hosts(&history, &args, &q, out_kind, &spans, chosen.as_deref().unwrap_or_default());
    }
    let after = profile(db, &q, by_label)?;
    note_mixed(&after);
    note_captures_apart(db, &q)?;
    if let (Some(df), Some(dt)) = (&args.diff_from, &args.diff_to) {
        let (bf, bt) = range(df, dt, now).context("the BEFORE range")?;
        let before_stretches = match by_label {
            Some(_) => {
                let all = db.host_label_spans(bf, bt)?;
                let labels = &args.history.labels;
                Some(
                    stretches(&all, &args.history.hosts, labels, "--label", (bf, bt))
                        .context("the BEFORE range")?,
                )
            }
            None => None,
        };
        let bq = ProfileQuery { from_ns: bf, to_ns: bt, ..q };
        let before = profile(db, &bq, before_stretches.as_deref())?;
        note_mixed(&before);
        if out_kind != OutputKind::Folded {
            bail!(
                "a difference is written as folded text (`stack BEFORE AFTER`); draw it with `kflame flamegraph`"
            );
        }
        if before.samples == 0 && after.samples == 0 {
            bail!("no {kind} samples in either range in {}", history.name);
        }
        return write_difference(args.output.as_deref(), args.normalize, before, after);
    }
    if after.samples == 0 {
        let hint = match db.time_bounds()? {
            Some((lo, hi)) => format!("the database holds {} to {}", format_time(lo), format_time(hi)),
            None => "the database holds nothing yet".to_string(),
        };
        bail!(
            "no {kind} samples from {} to {} in {} ({hint})",
            format_time(from),
            format_time(to),
            history.name
        );
    }
    let mut out = output::create(args.output.as_deref())?;
    match out_kind {
        OutputKind::Folded => {
            out.write_all(after.meta.declared_header().as_bytes())?;
            write_lines(&mut out, after.stacks.in_output_order().into_iter())
                .context("writing folded stacks")?;
        }
        OutputKind::Json => write_json(&mut out, &after, kind, from, to)?,
        OutputKind::Svg => {
            let profile = render::Profile::from_stacks(&after.stacks, &after.meta, false);
            let opts = Options { title: Some(title(&args, kind, from, to)), ..Options::default() };
            render::write_svg(&profile, &opts, None, &mut out).context("writing the SVG")?;
        }
        OutputKind::Html => {
            let page = HtmlOptions { title: Some(title(&args, kind, from, to)), ..HtmlOptions::default() };
            write_html(&mut out, &HtmlProfile::new(&after.stacks, &after.meta), &page)
                .context("writing the HTML page")?;
        }
    }
    out.finish()
}

/// The stretches of `host` alone, when it names one.
fn of_host<'a>(stretches: &'a [LabelSpan], host: Option<&str>) -> Vec<&'a LabelSpan> {
    stretches.iter().filter(|s| host.is_none_or(|h| h == s.host)).collect()
}

/// The profile of `q`; with `stretches`, of each host's samples over its stretches (and of
/// `q.host` alone, when it names one).
fn profile(db: &dyn Query, q: &ProfileQuery<'_>, stretches: Option<&[LabelSpan]>) -> Result<Profile> {
    let Some(stretches) = stretches else { return Ok(db.profile(q)?) };
    Ok(labels::profile_of(db, q, &of_host(stretches, q.host))?)
}

/// How a side of a comparison is said: each host, with the part of the range its stretches
/// cover when not all of it.
fn side_hosts(stretches: &[&LabelSpan], (from_ns, to_ns): (i64, i64)) -> String {
    stretches
        .iter()
        .map(|s| match s.covers(from_ns, to_ns) {
            true => s.host.clone(),
            false => format!(
                "{} {} to {}",
                s.host,
                format_time(s.from_ns.max(from_ns)),
                format_time(s.to_ns.min(to_ns))
            ),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many hosts `stretches` make over `range`: each host weighs the part of the range its
/// stretches cover.
fn host_time(stretches: &[&LabelSpan], (from_ns, to_ns): (i64, i64)) -> f64 {
    let covered: i128 =
        stretches.iter().map(|s| (s.to_ns.min(to_ns) as i128 - s.from_ns.max(from_ns) as i128).max(0)).sum();
    covered as f64 / (to_ns as i128 - from_ns as i128).max(1) as f64
}

/// A count of hosts over time as said: whole when it is, else to one decimal.
fn round_hosts(n: f64) -> String {
    if (n - n.round()).abs() < 0.05 { format!("{}", n.round()) } else { format!("{n:.1}") }
}

/// Functions of `--base-label`'s report, and commits listed for each.
const COMPARE_FUNCTIONS: usize = 5;
const COMPARE_COMMITS: usize = 3;

/// `--base-label`: the profile of the hosts the base labels choose (BEFORE) against the
/// hosts `--label`/`--hosts` choose (AFTER) over one range, as differential folded lines; on
/// stderr the functions whose share changed most and, with `--kernel-git`, the commits
/// between the two kernels that changed them. Labels choose stretches of hosts: a host
/// upgraded in place within the range is BEFORE until its upgrade and AFTER from it. `spans`
/// are the hosts' labels over the range, `chosen` the AFTER stretches of them.
fn compare_hosts(
    history: &History,
    args: &Args,
    q: &ProfileQuery<'_>,
    out_kind: OutputKind,
    spans: &[LabelSpan],
    chosen: &[LabelSpan],
) -> Result<()> {
    let db = history.query.as_ref();
    if !args.history.narrows() {
        bail!("--base-label chooses the BEFORE hosts: choose the AFTER hosts with --label or --hosts");
    }
    let range = (q.from_ns, q.to_ns);
    let base = stretches(spans, &[], &args.base_labels, "--base-label", range)?;
    let before = of_host(&base, q.host);
    let after = of_host(chosen, q.host);
    if let Some((b, a)) = labels::overlap(&before, &after) {
        bail!(
            "{} is on both sides from {} to {} ({}): the two label sets must choose different hosts or times",
            b.host,
            format_time(b.from_ns.max(a.from_ns).max(q.from_ns)),
            format_time(b.to_ns.min(a.to_ns).min(q.to_ns)),
            b.labels
        );
    }
    if out_kind != OutputKind::Folded {
        bail!(
            "a comparison is written as folded text (`stack BEFORE AFTER`); draw it with `kflame flamegraph`"
        );
    }
    let before_profile = labels::profile_of(db, q, &before)?;
    let after_profile = labels::profile_of(db, q, &after)?;
    note_mixed(&before_profile);
    note_mixed(&after_profile);
    if before_profile.samples == 0 || after_profile.samples == 0 {
        let empty = if before_profile.samples == 0 { &before } else { &after };
        bail!(
            "no {} samples of {} from {} to {} in {}",
            q.kind,
            side_hosts(empty, range),
            format_time(q.from_ns),
            format_time(q.to_ns),
            history.name
        );
    }
    let side = |name: &str, s: &[&LabelSpan], k: &[String]| {
        format!(
            "{name}: {} ({})",
            side_hosts(s, range),
            if k.is_empty() { "no kernel label".to_string() } else { format!("kernel {}", k.join(", ")) }
        )
    };
    let (kb, ka) =
        (labels::values(before.iter().copied(), "kernel"), labels::values(after.iter().copied(), "kernel"));
    output::message(side("BEFORE", &before, &kb));
    output::message(side("AFTER", &after, &ka));
    let d = kflame_analyze::profile::diff(
        before_profile.stacks.in_output_order(),
        after_profile.stacks.in_output_order(),
        &after_profile.meta.unit,
        COMPARE_FUNCTIONS,
    );
    for line in &d.summary {
        output::message(line.clone());
    }
    let commits = match &args.kernel_git {
        Some(git) => Some(kernel_commits(git, args, &kb, &ka)?),
        None => None,
    };
    let listed: Vec<(&str, &kflame_analyze::profile::FunctionChange)> =
        d.grew.iter().map(|c| ("grew", c)).chain(d.shrank.iter().map(|c| ("shrank", c))).collect();
    // The commits of every listed function, the range listed once for all of them.
    let found = match &commits {
        Some((index, from, to)) => {
            let names: Vec<&str> =
                listed.iter().map(|(_, c)| c.function.split('+').next().unwrap_or(&c.function)).collect();
            index.touching_each(&names, from, to, COMPARE_COMMITS)?
        }
        None => Vec::new(),
    };
    for (k, (what, c)) in listed.iter().enumerate() {
        output::message(format!(
            "{what}: {} {:+.2} points ({:.2}% -> {:.2}% of the total)",
            c.function, c.delta, c.total_before, c.total_after
        ));
        let (Some((_, from, to)), Some((hits, total))) = (&commits, found.get(k)) else { continue };
        if *total > 0 {
            output::message(format!(
                "  {total} commit{} of {from}..{to} changed it{}",
                if *total == 1 { "" } else { "s" },
                if *total > hits.len() { format!(", the newest {}:", hits.len()) } else { ":".to_string() }
            ));
        }
        for h in hits {
            output::message(format!("    {} {} {}", &h.id[..12], &h.date[..h.date.len().min(10)], h.subject));
        }
    }
    // Each side's hosts over time (a host over half the range counts half).
    let (hb, ha) = (host_time(&before, range), host_time(&after, range));
    if !args.normalize && (hb - ha).abs() > 0.05 * hb.max(ha) {
        output::message(format!(
            "{} hosts BEFORE, {} AFTER over the range: add --normalize to compare the flame graph by share",
            round_hosts(hb),
            round_hosts(ha)
        ));
    }
    write_difference(args.output.as_deref(), args.normalize, before_profile, after_profile)
}

/// Writes BEFORE against AFTER as `stack BEFORE AFTER` lines (BEFORE scaled to AFTER's total
/// when `normalize`) to `output` or stdout: `--diff-from`'s and `--base-label`'s answer.
fn write_difference(output: Option<&Path>, normalize: bool, before: Profile, after: Profile) -> Result<()> {
    let opts = DiffOptions { normalize, ..DiffOptions::default() };
    let lines = diff::diff(&before.stacks.into_counts(), &after.stacks.into_counts(), opts);
    let mut out = output::create(output)?;
    out.write_all(after.meta.header().as_bytes())?;
    diff::write_diff(&mut out, &lines).context("writing the differential stacks")?;
    out.finish()
}

/// The fix index of `git` and the revisions of the two sides: `--kernel-range A..B`, or the
/// tags of the kernel releases the sides' hosts are labelled with (one each).
fn kernel_commits(
    git: &Path,
    args: &Args,
    before: &[String],
    after: &[String],
) -> Result<(kflame_fixes::Index, String, String)> {
    let index = crate::cmd::fixes::open_index(git, None)?;
    let (from, to) = match &args.kernel_range {
        Some(r) => {
            let Some((a, b)) = r.split_once("..").filter(|(a, b)| !a.is_empty() && !b.is_empty()) else {
                bail!("--kernel-range {r:?}: expected A..B (two revisions, `v6.1..v6.8`)");
            };
            for rev in [a, b] {
                if index.resolve(rev)?.is_none() {
                    bail!("--kernel-range: {rev} names no commit of {}", git.display());
                }
            }
            (a.to_string(), b.to_string())
        }
        None => {
            let tag = |side: &str, k: &[String]| -> Result<String> {
                let [release] = k else {
                    bail!(
                        "the {side} hosts run {}: give the revisions with --kernel-range A..B",
                        if k.is_empty() {
                            "no labelled kernel".to_string()
                        } else {
                            format!("kernels {}", k.join(", "))
                        }
                    );
                };
                match index.release_tag(release) {
                    Err(e @ kflame_fixes::Error::NoReleaseTag { .. }) => {
                        bail!("{e}: give the revisions with --kernel-range A..B")
                    }
                    r => Ok(r?),
                }
            };
            (tag("BEFORE", before)?, tag("AFTER", after)?)
        }
    };
    Ok((index, from, to))
}

/// `--kind FAMILY-outliers`: the slow events the watcher kept with their stacks over the
/// range, the longest `--top` only, listed (`--list`) or folded weighted by their durations
/// (ns), to any output a profile goes to; with `--split-outliers`, each one on its own too.
fn outliers(args: &Args, family: kflame_store::LatencyKind, from: i64, to: i64) -> Result<()> {
    if args.top == Some(0) {
        bail!("--top 0: expected at least 1");
    }
    if let Some(dir) = &args.split_outliers {
        outliers_split::check_dir(dir, args.top.is_some())?;
    }
    let history = args.history.open()?;
    let db = history.query.as_ref();
    // Read host by host, so that each outlier is known by its host (the --hosts and --label
    // selection applies as to profiles).
    let hosts = match (&args.host, args.history.select(&history, (from, to))?) {
        (Some(h), sel) => sel.is_none_or(|s| s.contains(h)).then(|| h.clone()).into_iter().collect(),
        (None, Some(sel)) => sel,
        (None, None) => db.hosts()?,
    };
    let mut found: Vec<(String, kflame_store::StoredEvent)> = Vec::new();
    for h in &hosts {
        found.extend(db.outliers(family, from, to, Some(h))?.into_iter().map(|e| (h.clone(), e)));
    }
    if found.is_empty() {
        bail!(
            "no {family} outliers from {} to {} in {} (kept by `kflame watch` for calls over their \
             threshold: --slow-syscall, --slow-call)",
            format_time(from),
            format_time(to),
            history.name
        );
    }
    // Longest first, the earliest among equals: the ranks of --top and --split-outliers.
    found.sort_by(|(_, a), (_, b)| b.duration_ns.cmp(&a.duration_ns).then(a.time_ns.cmp(&b.time_ns)));
    if let Some(n) = args.top {
        found.truncate(n);
    }
    let ids: Vec<kflame_store::StackId> = found.iter().map(|(_, e)| e.stack).collect();
    let ranked_texts = db.stack_texts(&ids)?;
    if let Some(dir) = &args.split_outliers {
        outliers_split::prepare_dir(dir, true)?;
        let split: Vec<(String, kflame::collapse::outliers::Outlier)> = found
            .iter()
            .zip(&ranked_texts)
            .enumerate()
            .map(|(i, ((host, e), stack))| {
                let duration_ns = e.duration_ns.unwrap_or(0);
                let o = kflame::collapse::outliers::Outlier {
                    rank: i + 1,
                    duration_ns,
                    start_ns: u64::try_from(e.time_ns).ok(),
                    line: 0,
                    cpu: e.cpu,
                    pid: (e.pid != 0).then_some(e.pid),
                    comm: Some(e.comm.clone()).filter(|c| !c.is_empty()),
                    what: e.event.clone(),
                    stacks: vec![(stack.clone(), kflame::fold::Weight::from(duration_ns))],
                };
                (host.clone(), o)
            })
            .collect();
        outliers_split::write(dir, &split, outliers_split::Clock::Wall)?;
    }
    // Listed and folded in time order.
    let mut order: Vec<usize> = (0..found.len()).collect();
    order.sort_by_key(|&i| (found[i].1.time_ns, i));
    let texts: Vec<&Vec<u8>> = order.iter().map(|&i| &ranked_texts[i]).collect();
    let (hosts_of, found): (Vec<&str>, Vec<&kflame_store::StoredEvent>) =
        order.iter().map(|&i| (found[i].0.as_str(), &found[i].1)).unzip();
    let mut out = output::create(args.output.as_deref())?;
    if args.list {
        for ((e, stack), host) in found.iter().zip(&texts).zip(&hosts_of) {
            writeln!(
                out,
                "{}  {host}  {:>10.3} ms  {:<24} {}[{}/{}] cpu{}  {}",
                format_time(e.time_ns),
                e.duration_ns.unwrap_or(0) as f64 / 1e6,
                e.event,
                e.comm,
                e.pid,
                e.tid,
                e.cpu,
                String::from_utf8_lossy(stack)
            )?;
        }
        return out.finish();
    }
    let mut counts = kflame::fold::StackCounts::default();
    for (e, stack) in found.iter().zip(&texts) {
        counts.add(stack, kflame::fold::Weight::from(e.duration_ns.unwrap_or(0)));
    }
    let stacks = kflame::fold::Stacks::Counts(counts);
    let meta = kflame::fold::Meta {
        unit: kflame::fold::Unit::Nanoseconds,
        event: Some(format!("{family} outliers")),
    };
    let what = format!("{family} outliers");
    let title =
        args.title.clone().unwrap_or_else(|| format!("{what}, {} to {}", format_time(from), format_time(to)));
    match args
        .output
        .as_deref()
        .filter(|p| *p != Path::new("-") && p.extension().is_some())
        .map(OutputKind::from_path)
    {
        None | Some(Some(OutputKind::Folded)) => {
            out.write_all(meta.declared_header().as_bytes())?;
            write_lines(&mut out, stacks.in_output_order().into_iter()).context("writing folded stacks")?;
        }
        Some(Some(OutputKind::Svg)) => {
            let profile = render::Profile::from_stacks(&stacks, &meta, false);
            let opts = Options { title: Some(title), ..Options::default() };
            render::write_svg(&profile, &opts, None, &mut out).context("writing the SVG")?;
        }
        Some(Some(OutputKind::Html)) => {
            let page = HtmlOptions { title: Some(title), ..HtmlOptions::default() };
            write_html(&mut out, &HtmlProfile::new(&stacks, &meta), &page)
                .context("writing the HTML page")?;
        }
        Some(_) => bail!("outliers are written as folded stacks, SVG or HTML (or listed with --list)"),
    }
    out.finish()
}

/// A range's profile of a kind with an always-on profile leaves its captures out (another
/// rate over the same seconds): says which captures the range holds and how to see one.
fn note_captures_apart(db: &dyn kflame_store::Query, q: &ProfileQuery<'_>) -> Result<()> {
    if q.capture.is_some() || !q.kind.has_always_on() {
        return Ok(());
    }
    let ids: Vec<String> = db
        .events(q.from_ns, q.to_ns, q.host)?
        .iter()
        .filter_map(|e| match e {
            Event::Capture { id, kind, .. } if *kind == q.kind => Some(format!("#{}", id.0)),
            _ => None,
        })
        .collect();
    if let Some(first) = ids.first() {
        output::message(format!(
            "the always-on {} profile; {} of this range ({}) sampled at {} own rate and {} kept apart: \
             --capture {} shows {}",
            q.kind,
            output::count(ids.len() as u64, "capture"),
            ids.join(", "),
            if ids.len() == 1 { "its" } else { "their" },
            if ids.len() == 1 { "is" } else { "are" },
            &first[1..],
            if ids.len() == 1 { "it" } else { "the first" },
        ));
    }
    Ok(())
}

fn note_mixed(p: &Profile) {
    if p.mixed_units > 0 {
        output::message(format!(
            "{} buckets of another unit than {} were left out (the kind changed its event)",
            p.mixed_units, p.meta.unit
        ));
    }
}

fn title(args: &Args, kind: Kind, from: i64, to: i64) -> String {
    args.title.clone().unwrap_or_else(|| format!("{kind} {} to {}", format_time(from), format_time(to)))
}

fn write_json(out: &mut impl Write, p: &Profile, kind: Kind, from: i64, to: i64) -> Result<()> {
    let stacks: Vec<serde_json::Value> = p
        .stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| serde_json::json!({"stack": String::from_utf8_lossy(s), "weight": w.to_string()}))
        .collect();
    let v = serde_json::json!({
        "kind": kind.as_str(),
        "from": format_time(from),
        "to": format_time(to),
        "unit": p.meta.unit.name(),
        "event": p.meta.event,
        "samples": p.samples,
        "stacks": stacks,
    });
    serde_json::to_writer(&mut *out, &v).context("writing JSON")?;
    out.write_all(b"\n")?;
    Ok(())
}

fn list_hosts(history: &History, args: &Args) -> Result<()> {
    let all = history.query.host_labels()?;
    if all.is_empty() {
        output::message(format!("{} holds no host yet", history.name));
    }
    let mut out = output::create(args.output.as_deref())?;
    for (h, labels) in all {
        if labels.is_empty() {
            writeln!(out, "{h}")?;
        } else {
            writeln!(out, "{h} {labels}")?;
        }
    }
    out.finish()
}

/// Per host: the weight in stacks holding `frame`, the total, the share.
fn by_host(history: &History, args: &Args, q: &ProfileQuery<'_>, frame: &str) -> Result<()> {
    let shares = history.query.host_shares(q, frame)?;
    if shares.is_empty() {
        bail!(
            "no {} samples from {} to {} in {}",
            q.kind,
            format_time(q.from_ns),
            format_time(q.to_ns),
            history.name
        );
    }
    let mut out = output::create(args.output.as_deref())?;
    let (mut inside, mut total) = (kflame::fold::Weight::ZERO, kflame::fold::Weight::ZERO);
    for s in &shares {
        inside += s.frame;
        total += s.total;
    }
    let pct = |a: kflame::fold::Weight, b: kflame::fold::Weight| {
        if b.is_zero() { 0.0 } else { 100.0 * a.as_f64() / b.as_f64() }
    };
    writeln!(
        out,
        "# {frame}: {} of {} hosts, {:.2}% of the fleet's {} profile",
        shares.iter().filter(|s| !s.frame.is_zero()).count(),
        shares.len(),
        pct(inside, total),
        q.kind
    )?;
    writeln!(out, "host\tin_frame\ttotal\tshare")?;
    for s in &shares {
        writeln!(out, "{}\t{}\t{}\t{:.2}%", s.host, s.frame, s.total, pct(s.frame, s.total))?;
    }
    out.finish()
}

fn metrics(history: &History, args: &Args, hosts: Option<&[String]>, from: i64, to: i64) -> Result<()> {
    let db = history.query.as_ref();
    let mut names: Vec<String> = args.name.clone();
    if names.is_empty() {
        names = db.metric_names(args.host.as_deref())?.into_iter().map(|(n, _)| n).collect();
        names.dedup();
    }
    let mut all = Vec::new();
    for name in &names {
        let q = SeriesQuery {
            name,
            label: None,
            host: args.host.as_deref(),
            from_ns: from,
            to_ns: to,
            points: args.points,
        };
        let found = db.series(&q)?;
        if found.is_empty() && !args.name.is_empty() {
            let known: Vec<String> = db
                .metric_names(None)?
                .into_iter()
                .map(|(n, _)| n)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            bail!("no metric {name:?} in {} (it has: {})", history.name, known.join(", "));
        }
        all.extend(found.into_iter().filter(|s| hosts.is_none_or(|h| h.contains(&s.host))));
    }
    let mut out = output::create(args.output.as_deref())?;
    if args.json {
        let v: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                let points: Vec<serde_json::Value> = s
                    .points
                    .iter()
                    .map(|p| serde_json::json!({"time": format_time(p.time_ns), "min": p.min, "max": p.max, "avg": p.avg, "count": p.count}))
                    .collect();
                serde_json::json!({"host": s.host, "name": s.name, "label": s.label, "points": points})
            })
            .collect();
        serde_json::to_writer(&mut out, &v).context("writing JSON")?;
        out.write_all(b"\n")?;
    } else if args.points.is_some() {
        writeln!(out, "time,host,name,label,min,max,avg,count")?;
        for s in &all {
            for p in &s.points {
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},{}",
                    format_time(p.time_ns),
                    s.host,
                    s.name,
                    s.label,
                    p.min,
                    p.max,
                    p.avg,
                    p.count
                )?;
            }
        }
    } else {
        writeln!(out, "time,host,name,label,value")?;
        for s in &all {
            for p in &s.points {
                writeln!(out, "{},{},{},{},{}", format_time(p.time_ns), s.host, s.name, s.label, p.avg)?;
            }
        }
    }
    out.finish()
}

fn events(history: &History, args: &Args, hosts: Option<&[String]>, from: i64, to: i64) -> Result<()> {
    let mut evs = history.query.events(from, to, args.host.as_deref())?;
    evs.retain(|e| hosts.is_none_or(|h| h.iter().any(|x| x == e.host())));
    if args.reports {
        return report_groups(args, &evs, from, to);
    }
    if evs.is_empty() {
        output::message(format!(
            "no triggers, captures or reports from {} to {}",
            format_time(from),
            format_time(to)
        ));
    }
    let mut out = output::create(args.output.as_deref())?;
    for e in &evs {
        match e {
            Event::Trigger { id, host, time_ns, rule, metric, value, threshold } => writeln!(
                out,
                "{} {host} trigger #{} {metric}={} (threshold {}) rule {rule:?}",
                format_time(*time_ns),
                id.0,
                short_number(*value),
                short_number(*threshold),
            )?,
            Event::Capture { id, host, kind, start_ns, end_ns, trigger, note } => {
                let end = end_ns.map_or_else(|| "(not ended)".to_string(), format_time);
                let by = trigger.map_or_else(String::new, |t| format!(" by trigger #{}", t.0));
                let note = note.as_deref().map_or_else(String::new, |n| format!(": {n}"));
                writeln!(
                    out,
                    "{} {host} capture #{} {kind} until {end}{by}{note}",
                    format_time(*start_ns),
                    id.0
                )?
            }
            Event::Report { host, time_ns, kind, title, .. } => {
                writeln!(out, "{} {host} report {kind}: {title}", format_time(*time_ns))?
            }
        }
    }
    out.finish()
}

/// A measured value as a person reads it: 4 significant digits at most (2 decimals at most
/// above 1), no trailing zeros: `78.02`, `0.001234`, `1500`, `3`.
fn short_number(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, if v.abs() >= 1.0 { 2 } else { 12 }) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// Kernel reports grouped by signature across hosts.
fn report_groups(args: &Args, evs: &[Event], from: i64, to: i64) -> Result<()> {
    use kflame_analyze::fleet::{HostReport, fleet_groups};
    let reports = evs.iter().filter_map(|e| match e {
        Event::Report { host, time_ns, kind, title, text, .. } => {
            Some(HostReport { host, time_ns: *time_ns, kind, title, text })
        }
        _ => None,
    });
    let groups = fleet_groups(reports);
    if groups.is_empty() {
        output::message(format!("no kernel reports from {} to {}", format_time(from), format_time(to)));
    }
    let mut out = output::create(args.output.as_deref())?;
    for g in &groups {
        let hosts: Vec<String> = g.hosts.iter().take(8).map(|(h, n)| format!("{h}×{n}")).collect();
        let more = g.hosts.len().saturating_sub(8);
        writeln!(out, "{} reports on {} hosts  {}  {}", g.count, g.hosts.len(), g.signature, g.title)?;
        writeln!(out, "  first {}  last {}", format_time(g.first_ns), format_time(g.last_ns))?;
        if !g.kernels.is_empty() {
            writeln!(out, "  kernels {}", g.kernels.iter().cloned().collect::<Vec<_>>().join(", "))?;
        }
        writeln!(
            out,
            "  hosts {}{}",
            hosts.join(" "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        )?;
    }
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::short_number;

    #[test]
    fn values_are_short() {
        assert_eq!(short_number(78.01956368991597), "78.02");
        assert_eq!(short_number(60.0), "60");
        assert_eq!(short_number(1500.25), "1500");
        assert_eq!(short_number(0.00123456), "0.001235");
        assert_eq!(short_number(-2.5), "-2.5");
        assert_eq!(short_number(0.0), "0");
    }
}
