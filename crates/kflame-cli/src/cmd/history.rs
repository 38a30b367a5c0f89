//! Where history is kept: an embedded SQLite file (`--db FILE`) or a ClickHouse store
//! (`--store clickhouse+http[s]://HOST:PORT/DB`), and which of its hosts a question is about
//! (`--hosts`, `--label`). Shared by `query`, `serve` and `mcp`.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use kflame_clickhouse::{Location, Reader, is_clickhouse};
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
    /// --label` wrote it.
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

    /// The hosts the selection allows, `None` when it allows every host.
    pub(crate) fn select(&self, h: &History) -> Result<Option<Vec<String>>> {
        select(h.query.as_ref(), &self.hosts, &self.labels)
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

/// The hosts of `q` that match one of `patterns` (all when none) and have every label.
pub(crate) fn select(q: &dyn Query, patterns: &[String], labels: &[String]) -> Result<Option<Vec<String>>> {
    if patterns.is_empty() && labels.is_empty() {
        return Ok(None);
    }
    for l in labels {
        if !l.contains('=') {
            bail!("--label {l:?}: expected KEY=VALUE");
        }
    }
    let all = q.host_labels()?;
    let chosen: Vec<String> = all
        .iter()
        .filter(|(h, _)| patterns.is_empty() || patterns.iter().any(|p| glob(p, h)))
        .filter(|(_, l)| labels.iter().all(|want| l.split(',').any(|have| have.trim() == want)))
        .map(|(h, _)| h.clone())
        .collect();
    if chosen.is_empty() {
        let known: Vec<String> =
            all.iter().map(|(h, l)| if l.is_empty() { h.clone() } else { format!("{h} ({l})") }).collect();
        bail!(
            "no host matches --hosts {} --label {} (the history has: {})",
            patterns.join(","),
            labels.join(" --label "),
            if known.is_empty() { "no host".to_string() } else { known.join(", ") }
        );
    }
    Ok(Some(chosen))
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
