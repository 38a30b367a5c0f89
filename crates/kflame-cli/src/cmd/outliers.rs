//! `--split-outliers DIR`: each of the `--top N` outliers of a latency collapse (or of the
//! outliers a history kept, `kflame query --kind syscall-outliers`) on its own, as a folded
//! file and its SVG flame graph, plus `index.tsv` listing them.
//!
//! Files are named `RANK-DURATION-COMM-PID-WHAT-START` (`03-1.204ms-dd-5310-syscall_write-
//! 5123.456789s.folded`; a history's START is wall-clock time, `20251124T160009.500Z`), the
//! rank zero-padded so that a directory listing is in latency order. With several inputs,
//! the ranks of the directory are across all inputs (the rank frames inside the files are
//! those of the shared graph, per input).

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use anyhow::{Context, Result, bail};
use kflame::collapse::outliers::{Outlier, OutlierLog, format_duration};
use kflame::fold::{Meta, Unit, Weight};
use kflame::render::{self, Options, Profile};
use kflame_store::time::format_time;

use super::collapse_args::LatencyArgs;
use crate::output;

static LOG: OnceLock<OutlierLog> = OnceLock::new();
static COLLECTED: Mutex<Vec<(String, Outlier)>> = Mutex::new(Vec::new());

/// The outlier log the collapsers hand their `--top` outliers to, with `--split-outliers`.
pub(crate) fn log(lat: &LatencyArgs) -> Option<OutlierLog> {
    lat.split_outliers.as_ref().map(|_| LOG.get_or_init(OutlierLog::new).clone())
}

/// Checks `--split-outliers` before anything is read: it needs `--top`, and its directory
/// must be new or empty (stale outliers of another run would mix with these).
pub(crate) fn prepare(lat: &LatencyArgs) -> Result<()> {
    match &lat.split_outliers {
        Some(dir) => prepare_dir(dir, lat.top.is_some()),
        None => Ok(()),
    }
}

/// [`check_dir`], then DIR made.
pub(crate) fn prepare_dir(dir: &Path, top: bool) -> Result<()> {
    check_dir(dir, top)?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// The checks of a `--split-outliers DIR` (of `collapse` or `query`): `--top` given (`top`),
/// DIR new or empty.
pub(crate) fn check_dir(dir: &Path, top: bool) -> Result<()> {
    if !top {
        bail!("--split-outliers writes the --top N outliers: give --top N too");
    }
    if dir.exists() {
        let mut entries = fs::read_dir(dir).with_context(|| format!("--split-outliers {}", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "--split-outliers {}: the directory is not empty; give a new or empty one (outliers of \
                 another run would mix with these)",
                dir.display()
            );
        }
    }
    Ok(())
}

/// Takes the outliers of the input just collapsed, remembering that they came from `input`.
pub(crate) fn collect(input: &str) {
    let Some(log) = LOG.get() else { return };
    if let Ok(mut all) = COLLECTED.lock() {
        all.extend(log.take().into_iter().map(|o| (input.to_string(), o)));
    }
}

/// Writes the collected outliers (the `--top N` longest of all inputs) into the
/// `--split-outliers` directory.
pub(crate) fn finish(lat: &LatencyArgs) -> Result<()> {
    let (Some(dir), Some(n)) = (&lat.split_outliers, lat.top) else { return Ok(()) };
    let mut all = COLLECTED.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
    all.sort_by_key(|(_, o)| std::cmp::Reverse(o.duration_ns)); // stable: input, then rank
    all.truncate(n as usize);
    write(dir, &all, Clock::Trace)
}

/// What the starts of outliers are, which says how they are written and what `input` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// A trace's own clock (`start_ns` since its origin): seconds with six decimals,
    /// `5123.456789s` in file names and `start_s` in `index.tsv`; `input` is the file the
    /// outlier was read from, listed with its line.
    Trace,
    /// The wall clock of a history (`start_ns` UTC since the epoch): RFC 3339 in `index.tsv`
    /// (`start`), its basic form in file names (`20251124T160009.500Z`); `input` is the host
    /// the outlier was kept on.
    Wall,
}

/// Writes `outliers` (each with its input), in this order (rank 1 first), into `dir` (made
/// by [`prepare_dir`]): one folded file and one SVG each, named
/// `RANK-DURATION-COMM-PID-WHAT-START`, and `index.tsv` listing them.
pub(crate) fn write(dir: &Path, outliers: &[(String, Outlier)], clock: Clock) -> Result<()> {
    let width = outliers.len().max(1).to_string().len();
    let index_path = dir.join("index.tsv");
    let mut index = BufWriter::new(
        File::create(&index_path).with_context(|| format!("cannot create {}", index_path.display()))?,
    );
    let header = match clock {
        Clock::Trace => {
            "rank\tduration_ns\tduration\tstart_s\tcomm\tpid\tcpu\twhat\tinput\tline\tfolded\tsvg"
        }
        Clock::Wall => "rank\tduration_ns\tduration\tstart\tcomm\tpid\tcpu\twhat\thost\tfolded\tsvg",
    };
    writeln!(index, "{header}").with_context(|| format!("writing {}", index_path.display()))?;
    for (i, (input, o)) in outliers.iter().enumerate() {
        let base = file_name(i + 1, width, o, clock);
        let (folded, svg) = (format!("{base}.folded"), format!("{base}.svg"));
        write_folded(&dir.join(&folded), o)?;
        write_svg(&dir.join(&svg), o, input, clock)?;
        let start = o.start_ns.map_or(String::new(), |ns| start_text(ns, clock));
        let pid = o.pid.map_or(String::new(), |p| p.to_string());
        let origin = match clock {
            Clock::Trace => format!("{}\t{}", tsv(input), o.line),
            Clock::Wall => tsv(input),
        };
        writeln!(
            index,
            "{}\t{}\t{}\t{start}\t{}\t{pid}\t{}\t{}\t{origin}\t{folded}\t{svg}",
            i + 1,
            o.duration_ns,
            format_duration(o.duration_ns),
            tsv(o.comm.as_deref().unwrap_or("")),
            o.cpu,
            tsv(&o.what),
        )
        .with_context(|| format!("writing {}", index_path.display()))?;
    }
    index.flush().with_context(|| format!("writing {}", index_path.display()))?;
    output::message(match outliers.len() {
        0 => format!("{}: no outliers (nothing with a duration was found); see index.tsv", dir.display()),
        k => {
            format!("{}: {k} outliers, each as folded stacks and an SVG; listed in index.tsv", dir.display())
        }
    });
    Ok(())
}

/// A start as `index.tsv` says it: `5123.456789` (trace seconds) or RFC 3339 (wall clock).
fn start_text(ns: u64, clock: Clock) -> String {
    match clock {
        Clock::Trace => seconds(ns),
        Clock::Wall => format_time(i64::try_from(ns).unwrap_or(i64::MAX)),
    }
}

/// `3.000000` s from ns: six decimals, as in the rank frames.
fn seconds(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

/// `03-1.204ms-dd-5310-syscall_write-5123.456789s` (a history's start:
/// `20251124T160009.500Z`, RFC 3339 without `-` and `:`).
fn file_name(rank: usize, width: usize, o: &Outlier, clock: Clock) -> String {
    let mut parts = vec![format!("{rank:0width$}"), format_duration(o.duration_ns)];
    parts.push(safe(o.comm.as_deref().unwrap_or("unknown")));
    if let Some(pid) = o.pid {
        parts.push(pid.to_string());
    }
    parts.push(safe(&o.what));
    parts.push(match (o.start_ns, clock) {
        (Some(ns), Clock::Trace) => format!("{}s", seconds(ns)),
        (Some(ns), Clock::Wall) => start_text(ns, clock).replace(['-', ':'], ""),
        (None, _) => format!("line{}", o.line),
    });
    parts.join("-")
}

/// A name part safe in a file name: letters, digits, `.`, `_` and `+` kept, the rest `_`
/// (at most 40 characters).
fn safe(s: &str) -> String {
    let t: String = s
        .chars()
        .take(40)
        .map(|c| if c.is_ascii_alphanumeric() || "._+".contains(c) { c } else { '_' })
        .collect();
    if t.is_empty() || t.starts_with('.') { format!("_{t}") } else { t }
}

/// A TSV field: tabs and newlines become spaces.
fn tsv(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

fn write_folded(path: &Path, o: &Outlier) -> Result<()> {
    let mut f =
        BufWriter::new(File::create(path).with_context(|| format!("cannot create {}", path.display()))?);
    let meta = Meta { unit: Unit::Nanoseconds, event: None };
    let mut text = meta.header();
    let mut stacks: Vec<&(Vec<u8>, Weight)> = o.stacks.iter().collect();
    stacks.sort_by(|a, b| a.0.cmp(&b.0));
    for (stack, w) in stacks {
        text.push_str(&String::from_utf8_lossy(stack));
        text.push(' ');
        text.push_str(&w.to_string());
        text.push('\n');
    }
    f.write_all(text.as_bytes())
        .and_then(|()| f.flush())
        .with_context(|| format!("writing {}", path.display()))
}

fn write_svg(path: &Path, o: &Outlier, input: &str, clock: Clock) -> Result<()> {
    let mut profile = Profile::new(false, false);
    for (stack, w) in &o.stacks {
        profile.add(&String::from_utf8_lossy(stack), *w, Weight::ZERO);
    }
    profile.meta = Meta { unit: Unit::Nanoseconds, event: None };
    profile.finish();
    let task = match (&o.comm, o.pid) {
        (Some(c), Some(p)) => format!(" {c}-{p}"),
        (Some(c), None) => format!(" {c}"),
        _ => String::new(),
    };
    let subtitle = match clock {
        Clock::Trace => {
            let when =
                o.start_ns.map_or_else(|| format!(" at line {}", o.line), |ns| format!(" @{}", seconds(ns)));
            format!("outlier #{} of {input}, started{when} on CPU {}", o.rank, o.cpu)
        }
        Clock::Wall => {
            let when = o.start_ns.map_or_else(String::new, |ns| format!(" {}", start_text(ns, clock)));
            format!("outlier #{} of host {input}, started{when} on CPU {}", o.rank, o.cpu)
        }
    };
    let opts = Options {
        title: Some(format!("{} {}{task}", o.what, format_duration(o.duration_ns))),
        subtitle: Some(subtitle),
        ..Options::default()
    };
    let mut f =
        BufWriter::new(File::create(path).with_context(|| format!("cannot create {}", path.display()))?);
    render::write_svg(&profile, &opts, None, &mut f)
        .and_then(|_| f.flush())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_sort_and_are_safe() {
        let o = Outlier {
            rank: 3,
            duration_ns: 1_204_000,
            start_ns: Some(5_123_456_789_000),
            line: 9,
            cpu: 1,
            pid: Some(5310),
            comm: Some("kworker/0:2 x".into()),
            what: "syscall:write".into(),
            stacks: Vec::new(),
        };
        assert_eq!(
            file_name(3, 2, &o, Clock::Trace),
            "03-1.204ms-kworker_0_2_x-5310-syscall_write-5123.456789s"
        );
        let wall = Outlier { start_ns: Some(1_764_000_009_500_000_000), ..o.clone() };
        assert_eq!(
            file_name(3, 2, &wall, Clock::Wall),
            "03-1.204ms-kworker_0_2_x-5310-syscall_write-20251124T160009.500Z"
        );
        assert_eq!(start_text(1_764_000_009_500_000_000, Clock::Wall), "2025-11-24T16:00:09.500Z");
        let anon = Outlier { comm: None, pid: None, start_ns: None, what: "..".into(), ..o };
        assert_eq!(file_name(12, 2, &anon, Clock::Trace), "12-1.204ms-unknown-_..-line9");
    }
}
