//! `kflame query`: read a history database (`kflame watch --db`): the merged profile of a
//! time range, metric series, events, or the difference of two ranges. The queries are the
//! store crate's; this file maps flags onto them and formats the answers.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use kflame::fold::diff::{self, DiffOptions};
use kflame::fold::write::write_lines;
use kflame::fold::{StackCounts, Stacks};
use kflame::render::html::{HtmlOptions, HtmlProfile, write_html};
use kflame::render::{self, Options, OutputKind};
use kflame_store::time::{format_time, now_ns, parse_time};
use kflame_store::{CaptureId, Event, Kind, OpenMode, Profile, ProfileQuery, Query, SeriesQuery, Sqlite};

use crate::output;

/// Arguments of `kflame query`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Times are RFC 3339 (2026-11-25T03:14:00Z, 2026-11-25T05:14:00+02:00), `now`, or relative
to now: -1h, -10m, -30s, -2d (`--from -1h` and `--from=-10m` both work).

Examples:
  kflame query --db /var/lib/kflame/history.db --from -1h -o last-hour.svg
  kflame query --db h.db --from 2026-11-25T03:14:00Z --to 2026-11-25T03:15:00Z --kind offcpu -o stall.html
  kflame query --db h.db --metrics --name cpu.usr --name psi.io.some --from -10m
  kflame query --db h.db --events --from -1d
  kflame query --db h.db --from -1h --diff-from -2h --diff-to -1h | kflame flamegraph > diff.svg")]
pub(crate) struct Args {
    /// The history database (written by `kflame watch --db`).
    #[arg(long, value_name = "FILE")]
    db: PathBuf,
    /// Start of the range (inclusive).
    #[arg(long, value_name = "TIME", default_value = "-1h", allow_hyphen_values = true)]
    from: String,
    /// End of the range (exclusive).
    #[arg(long, value_name = "TIME", default_value = "now", allow_hyphen_values = true)]
    to: String,
    /// Which profile: cpu, offcpu, mem, syscalls, blocked.
    #[arg(long, value_name = "KIND", default_value = "cpu")]
    kind: String,
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
    /// Compare: the range --diff-from..--diff-to is BEFORE, --from..--to AFTER; writes
    /// `stack BEFORE AFTER` lines for `kflame flamegraph`.
    #[arg(long, value_name = "TIME", requires = "diff_to", allow_hyphen_values = true)]
    diff_from: Option<String>,
    /// End of the BEFORE range.
    #[arg(long, value_name = "TIME", requires = "diff_from", allow_hyphen_values = true)]
    diff_to: Option<String>,
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
    let kind: Kind = args.kind.parse().map_err(|e| anyhow::anyhow!("--kind: {e}"))?;
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
    let db = Sqlite::open(&args.db, OpenMode::Read)?;
    if args.metrics {
        return metrics(&db, &args, from, to);
    }
    if args.events {
        return events(&db, &args, from, to);
    }
    let q = ProfileQuery {
        kind,
        from_ns: from,
        to_ns: to,
        host: args.host.as_deref(),
        hosts: None,
        capture: args.capture.map(CaptureId),
        cgroup: args.cgroup.as_deref(),
    };
    let after = db.profile(&q)?;
    note_mixed(&after);
    if let (Some(df), Some(dt)) = (&args.diff_from, &args.diff_to) {
        let (bf, bt) = range(df, dt, now).context("the BEFORE range")?;
        let before = db.profile(&ProfileQuery { from_ns: bf, to_ns: bt, ..q })?;
        note_mixed(&before);
        if out_kind != OutputKind::Folded {
            bail!(
                "a difference is written as folded text (`stack BEFORE AFTER`); draw it with `kflame flamegraph`"
            );
        }
        if before.samples == 0 && after.samples == 0 {
            bail!("no {kind} samples in either range in {}", args.db.display());
        }
        let lines = diff::diff(&counts(before.stacks), &counts(after.stacks), DiffOptions::default());
        let mut out = output::create(args.output.as_deref())?;
        out.write_all(after.meta.header().as_bytes())?;
        diff::write_diff(&mut out, &lines).context("writing the differential stacks")?;
        return out.finish();
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
            args.db.display()
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

fn counts(s: Stacks) -> StackCounts {
    match s {
        Stacks::Counts(c) => c,
        Stacks::Ordered(o) => {
            let mut c = StackCounts::new();
            for (s, w) in o.items() {
                c.add(s, *w);
            }
            c
        }
    }
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

fn metrics(db: &Sqlite, args: &Args, from: i64, to: i64) -> Result<()> {
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
            bail!("no metric {name:?} in {} (it has: {})", args.db.display(), known.join(", "));
        }
        all.extend(found);
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

fn events(db: &Sqlite, args: &Args, from: i64, to: i64) -> Result<()> {
    let evs = db.events(from, to, args.host.as_deref())?;
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
                "{} {host} trigger #{} {metric}={value} (threshold {threshold}) rule {rule:?}",
                format_time(*time_ns),
                id.0
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
