//! Where history is kept: an embedded SQLite file (`--db FILE`) or a ClickHouse store
//! (`--store clickhouse+http[s]://HOST:PORT/DB`), and which of its hosts a question is about
//! (`--hosts`, `--label`). Shared by `query`, `serve` and `mcp`.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use kflame_clickhouse::{Location, Reader, is_clickhouse};
use kflame_store::labels::{LabelSpan, matching};
use kflame_store::time::format_time;
use kflame_store::{OpenMode, Query, Sqlite};

/// The options that name a history and select its hosts.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct HistoryArgs {
    /// The history database (written by `kflame watch --db`) [default:
    /// /var/lib/kflame/kflame.db, where `kflame watch` writes].
    #[arg(long, value_name = "FILE", conflicts_with = "store")]
    pub(crate) db: Option<PathBuf>,
    /// A ClickHouse store instead (`clickhouse+http://HOST:8123/DB[?cluster=NAME]`; user
    /// from the URL or KFLAME_CLICKHOUSE_USER, password from the file named by
    /// KFLAME_CLICKHOUSE_PASSWORD_FILE or from KFLAME_CLICKHOUSE_PASSWORD).
    /// `clickhouse+https://HOST:8443/DB` verifies the server against the system's CAs or
    /// those of KFLAME_CLICKHOUSE_CA_FILE; a password goes over plain HTTP to loopback only.
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<String>,
    /// Only these hosts (comma-separated, repeatable; `*` matches any characters: `web*`).
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    pub(crate) hosts: Vec<String>,
    /// Only hosts with this label (`role=db`; repeatable: all must hold), as `kflame watch
    /// --label` wrote it, at the time asked: a host relabelled on the way (a kernel upgraded
    /// in place: `kernel=`) is chosen for its stretch that carried it.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub(crate) labels: Vec<String>,
}

/// An open history and its name for messages.
pub(crate) struct History {
    pub(crate) query: Box<dyn Query>,
    pub(crate) name: String,
}

impl HistoryArgs {
    /// Opens the history for reading.
    pub(crate) fn open(&self) -> Result<History> {
        match (&self.db, &self.store) {
            (Some(p), None) => open_file(p),
            (None, Some(url)) => open_url(url),
            (None, None) => open_file(Path::new(kflame_watch::config::DEFAULT_DB)),
            _ => bail!("give --db FILE or --store URL"),
        }
    }

    /// The hosts the selection allows over `range`, `None` when it allows every host.
    pub(crate) fn select(&self, h: &History, range: (i64, i64)) -> Result<Option<Vec<String>>> {
        select(h.query.as_ref(), &self.hosts, &self.labels, range)
    }

    /// True when `--hosts` or `--label` narrows the choice of hosts.
    pub(crate) fn narrows(&self) -> bool {
        !(self.hosts.is_empty() && self.labels.is_empty())
    }
}

/// Opens a SQLite history read-only.
pub(crate) fn open_file(path: &Path) -> Result<History> {
    let db = Sqlite::open(path, OpenMode::Read)?;
    Ok(History { query: Box::new(db), name: path.display().to_string() })
}

/// The ClickHouse store a `--store URL` names (a file goes in `--db`).
pub(crate) fn location(url: &str) -> Result<Location> {
    if !is_clickhouse(url) {
        bail!("--store {url:?}: expected clickhouse+http[s]://HOST:PORT/DATABASE (a file goes in --db)");
    }
    Ok(Location::parse(url)?)
}

/// Opens a ClickHouse store for reading.
pub(crate) fn open_url(url: &str) -> Result<History> {
    let r = open_remote(url)?;
    Ok(History { query: Box::new(r.store), name: r.name })
}

/// Opens a ClickHouse store to be shared between threads (`serve`, `mcp`).
pub(crate) fn open_remote(url: &str) -> Result<kflame_store::RemoteStore> {
    let loc = location(url)?;
    let name = loc.to_string();
    // Its errors name the store already.
    let reader = Reader::open(&loc)?;
    Ok(kflame_store::RemoteStore { store: std::sync::Arc::new(reader), name })
}

/// True when `name` matches `pattern`, where `*` stands for any characters.
fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

/// The hosts of `q` that match one of `patterns` (all when none) and carried every label
/// at some time of `range` (`None` when nothing narrows the choice).
pub(crate) fn select(
    q: &dyn Query,
    patterns: &[String],
    labels: &[String],
    range: (i64, i64),
) -> Result<Option<Vec<String>>> {
    if patterns.is_empty() && labels.is_empty() {
        return Ok(None);
    }
    let all = q.host_label_spans(range.0, range.1)?;
    Ok(Some(hosts_of(&stretches(&all, patterns, labels, "--label", range)?)))
}

/// Each host once, of stretches sorted by host.
pub(crate) fn hosts_of(stretches: &[LabelSpan]) -> Vec<String> {
    let mut hosts: Vec<String> = stretches.iter().map(|s| s.host.clone()).collect();
    hosts.dedup();
    hosts
}

/// The stretches of `all` (a store's [`Query::host_label_spans`] over `[from_ns, to_ns)`)
/// over which the hosts `patterns` match (all when none) carried every label of `labels`
/// (given as `flag`): a host upgraded in place carries `kernel=` of each release over its
/// own stretch. Sorted by host. An error that names what the history has when none does.
pub(crate) fn stretches(
    all: &[LabelSpan],
    patterns: &[String],
    labels: &[String],
    flag: &str,
    (from_ns, to_ns): (i64, i64),
) -> Result<Vec<LabelSpan>> {
    for l in labels {
        if !l.contains('=') {
            bail!("{flag} {l:?}: expected KEY=VALUE");
        }
    }
    let chosen: Vec<LabelSpan> =
        matching(all, labels, |h| patterns.is_empty() || patterns.iter().any(|p| glob(p, h)))
            .into_iter()
            .cloned()
            .collect();
    if chosen.is_empty() {
        let span = |s: &LabelSpan| {
            let part = if s.covers(from_ns, to_ns) {
                String::new()
            } else {
                format!(" {} to {}", format_time(s.from_ns), format_time(s.to_ns))
            };
            match (s.labels.is_empty(), part.is_empty()) {
                (true, true) => s.host.clone(),
                (true, false) => format!("{}{part}", s.host),
                (false, _) => format!("{} ({}{part})", s.host, s.labels),
            }
        };
        let known: Vec<String> = all.iter().map(span).collect();
        let mut asked = Vec::new();
        if !patterns.is_empty() {
            asked.push(format!("--hosts {}", patterns.join(",")));
        }
        for l in labels {
            asked.push(format!("{flag} {l}"));
        }
        bail!(
            "no host matches {} from {} to {} (the history has: {})",
            asked.join(" "),
            format_time(from_ns),
            format_time(to_ns),
            if known.is_empty() { "no host then".to_string() } else { known.join(", ") }
        );
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_match_like_shells() {
        assert!(glob("web*", "web12"));
        assert!(glob("*db*", "eu-db-3"));
        assert!(glob("a*c*e", "abcde"));
        assert!(!glob("a*c*e", "abde"));
        assert!(!glob("web*", "db1"));
        assert!(glob("db1", "db1") && !glob("db1", "db12"));
        assert!(!glob("ab*ba", "aba"));
    }
}
