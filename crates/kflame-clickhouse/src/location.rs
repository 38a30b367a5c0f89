//! Where the store is: `clickhouse+http://[USER@]HOST:PORT/DATABASE[?cluster=NAME]`, or
//! `clickhouse+https://` for ClickHouse's `https_port` (8443 by default), the server's
//! certificate checked against the system's roots, or against the CA certificates (PEM) of
//! the file named by `KFLAME_CLICKHOUSE_CA_FILE` (or `ca_file=` in the URL's query).
//!
//! The password never goes in the URL (it would show in `ps` and in shell history): it is
//! read from the file named by `KFLAME_CLICKHOUSE_PASSWORD_FILE` (or `password_file=` in the
//! URL's query), else from `KFLAME_CLICKHOUSE_PASSWORD`. The user is the URL's, else
//! `KFLAME_CLICKHOUSE_USER`, else `default`.

use std::fmt;
use std::path::PathBuf;

/// A parsed store URL.
#[derive(Clone, PartialEq, Eq)]
pub struct Location {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// HTTP port (ClickHouse's default is 8123).
    pub port: u16,
    /// The database kflame's tables live in.
    pub database: String,
    /// User name.
    pub user: String,
    /// Password (empty: none).
    pub password: String,
    /// The cluster of `remote_servers` whose shards hold the data: tables are
    /// `Distributed` over `<name>_local` tables on every shard. `None`: one server.
    pub cluster: Option<String>,
    /// `insert=local` (with a cluster): a writer puts its rows in the local tables of the
    /// server named, not through the `Distributed` tables: one hop and one split less per
    /// row. Each host must then write to one server only (its rows stay on one shard, as
    /// readers expect); reads still go over the whole cluster.
    pub insert_local: bool,
    /// `clickhouse+https://`: TLS, the server's certificate verified.
    pub tls: bool,
    /// The CA certificates (PEM) a TLS server's certificate must chain to, instead of the
    /// system's roots.
    pub ca_file: Option<PathBuf>,
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the password.
        write!(f, "Location({self})")
    }
}

impl fmt::Display for Location {
    /// The URL without password: what messages name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "clickhouse+{scheme}://{}@{host}:{}/{}", self.user, self.port, self.database)?;
        if let Some(c) = &self.cluster {
            write!(f, "?cluster={c}")?;
            if self.insert_local {
                write!(f, "&insert=local")?;
            }
        }
        Ok(())
    }
}

/// A store URL that cannot be used, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("store {url:?}: {detail}")]
pub struct LocationError {
    /// The URL as given (password removed).
    pub url: String,
    /// What is wrong.
    pub detail: String,
}

/// True for what names a ClickHouse store (`clickhouse+http://`, `clickhouse+https://`,
/// `clickhouse://`).
pub fn is_clickhouse(s: &str) -> bool {
    s.starts_with("clickhouse+http://")
        || s.starts_with("clickhouse+https://")
        || s.starts_with("clickhouse://")
}

/// Names allowed for databases and clusters: they go into SQL unquoted.
fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !s.as_bytes()[0].is_ascii_digit()
}

impl Location {
    /// Parses a URL, reading the password as the module says (`env` looks up a variable).
    pub fn parse_with(url: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Location, LocationError> {
        let err = |detail: String| LocationError { url: strip_password(url), detail };
        let (tls, rest) = if let Some(r) = url.strip_prefix("clickhouse+https://") {
            (true, r)
        } else {
            let r = url.strip_prefix("clickhouse+http://").or_else(|| url.strip_prefix("clickhouse://"));
            (
                false,
                r.ok_or_else(|| {
                    err("expected clickhouse+http://HOST:PORT/DATABASE or clickhouse+https://".into())
                })?,
            )
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, q),
            None => (rest, ""),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if userinfo.is_some_and(|u| u.contains(':')) {
            return Err(err("a password in the URL would show in process lists; put it in a file named by \
                 KFLAME_CLICKHOUSE_PASSWORD_FILE (or password_file= in the URL), or in \
                 KFLAME_CLICKHOUSE_PASSWORD"
                .into()));
        }
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, p) = v6.split_once(']').ok_or_else(|| err("unclosed [ in the host".into()))?;
            (h.to_string(), p.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(err("no host".into()));
        }
        let port = match port {
            None if tls => 8443,
            None => 8123,
            Some(p) => {
                p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| err(format!("bad port {p:?}")))?
            }
        };
        let database = path.trim_end_matches('/');
        let database = if database.is_empty() { "kflame" } else { database };
        if !is_identifier(database) {
            return Err(err(format!(
                "database name {database:?}: letters, digits and _ only, not starting with a digit"
            )));
        }
        let mut cluster = None;
        let mut insert_local = false;
        let mut password_file = env("KFLAME_CLICKHOUSE_PASSWORD_FILE").map(PathBuf::from);
        // The variable applies to https URLs only; `ca_file=` in a plain one is a mistake.
        let mut ca_file =
            env("KFLAME_CLICKHOUSE_CA_FILE").filter(|p| tls && !p.is_empty()).map(PathBuf::from);
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("cluster", c)) if is_identifier(c) => cluster = Some(c.to_string()),
                Some(("cluster", c)) => {
                    return Err(err(format!("cluster name {c:?}: letters, digits and _ only")));
                }
                Some(("password_file", p)) if !p.is_empty() => password_file = Some(PathBuf::from(p)),
                Some(("ca_file", p)) if !p.is_empty() => ca_file = Some(PathBuf::from(p)),
                Some(("insert", "local")) => insert_local = true,
                Some(("insert", "distributed")) => insert_local = false,
                _ => {
                    return Err(err(format!(
                        "unknown parameter {kv:?} (known: cluster=, insert=local|distributed, password_file=, ca_file=)"
                    )));
                }
            }
        }
        let user = match userinfo {
            Some(u) if !u.is_empty() => u.to_string(),
            _ => env("KFLAME_CLICKHOUSE_USER").filter(|u| !u.is_empty()).unwrap_or_else(|| "default".into()),
        };
        let password = match password_file {
            Some(p) => std::fs::read_to_string(&p)
                .map_err(|e| err(format!("cannot read the password file {}: {e}", p.display())))?
                .trim_end_matches(['\n', '\r'])
                .to_string(),
            None => env("KFLAME_CLICKHOUSE_PASSWORD").unwrap_or_default(),
        };
        if insert_local && cluster.is_none() {
            return Err(err("insert=local needs cluster=NAME (one server has only local tables)".into()));
        }
        if let Some(ca) = &ca_file {
            if !tls {
                return Err(err(format!(
                    "a CA file ({}) is for clickhouse+https://: this URL is plain HTTP",
                    ca.display()
                )));
            }
            crate::tls::read_ca_file(ca).map_err(err)?;
        }
        Ok(Location {
            host,
            port,
            database: database.to_string(),
            user,
            password,
            cluster,
            insert_local,
            tls,
            ca_file,
        })
    }

    /// Parses a URL, with the password from the process environment.
    pub fn parse(url: &str) -> Result<Location, LocationError> {
        Location::parse_with(url, &|k| std::env::var(k).ok())
    }

    /// True when the host is a loopback address or `localhost`.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost" || self.host.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
    }

    /// The name of a table readers and writers use (`samples`): the `Distributed` table on a
    /// cluster, the `MergeTree` table otherwise.
    pub fn table(&self, name: &str) -> String {
        format!("{}.{name}", self.database)
    }

    /// The name of a table's data on one server: `<db>.<name>_local` on a cluster,
    /// `<db>.<name>` otherwise.
    pub fn local_table(&self, name: &str) -> String {
        match self.cluster {
            Some(_) => format!("{}.{name}_local", self.database),
            None => format!("{}.{name}", self.database),
        }
    }
}

/// The URL with anything between `//` and `@` after a `:` removed.
fn strip_password(url: &str) -> String {
    let Some(start) = url.find("//") else { return url.to_string() };
    let auth_end = url[start + 2..].find(['/', '?']).map_or(url.len(), |i| start + 2 + i);
    match url[start + 2..auth_end].rfind('@') {
        Some(at) => {
            let user = &url[start + 2..start + 2 + at];
            let user = user.split(':').next().unwrap_or("");
            format!("{}{user}{}", &url[..start + 2], &url[start + 2 + at..])
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn urls_parse_with_defaults() {
        let l = Location::parse_with("clickhouse+http://127.0.0.1:18123/fleet", &env(&[])).unwrap();
        assert_eq!(
            (l.host.as_str(), l.port, l.database.as_str(), l.user.as_str()),
            ("127.0.0.1", 18123, "fleet", "default")
        );
        assert!(l.cluster.is_none() && l.is_loopback());
        let l = Location::parse_with(
            "clickhouse://ops@[::1]/?cluster=two_shards",
            &env(&[("KFLAME_CLICKHOUSE_PASSWORD", "s3cret")]),
        )
        .unwrap();
        assert_eq!((l.host.as_str(), l.port, l.database.as_str()), ("::1", 8123, "kflame"));
        assert_eq!((l.user.as_str(), l.password.as_str()), ("ops", "s3cret"));
        assert_eq!(l.table("samples"), "kflame.samples");
        assert_eq!(l.local_table("samples"), "kflame.samples_local");
        assert_eq!(l.to_string(), "clickhouse+http://ops@[::1]:8123/kflame?cluster=two_shards");
        let l = Location::parse_with("clickhouse+http://h/db?cluster=c&insert=local", &env(&[])).unwrap();
        assert!(l.insert_local);
        assert_eq!(l.to_string(), "clickhouse+http://default@h:8123/db?cluster=c&insert=local");
        assert!(!format!("{l:?}").contains("s3cret"));
    }

    #[test]
    fn https_urls_default_to_8443_and_take_the_ca_of_the_variable() {
        let l = Location::parse_with("clickhouse+https://ch1.example.com/fleet", &env(&[])).unwrap();
        assert_eq!((l.tls, l.port, l.ca_file.as_deref()), (true, 8443, None));
        assert_eq!(l.to_string(), "clickhouse+https://default@ch1.example.com:8443/fleet");
        assert!(is_clickhouse("clickhouse+https://ch1/fleet"));
        // The variable applies to https only: a plain loopback URL is not refused for it.
        let vars = env(&[("KFLAME_CLICKHOUSE_CA_FILE", "/nonexistent/ca.pem")]);
        let l = Location::parse_with("clickhouse+http://127.0.0.1:8123/fleet", &vars).unwrap();
        assert_eq!((l.tls, l.ca_file.as_deref()), (false, None));
        let e = Location::parse_with("clickhouse+https://127.0.0.1/fleet", &vars).unwrap_err();
        assert!(e.to_string().contains("cannot read the CA file /nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn bad_urls_say_why_and_hide_passwords() {
        for (url, want) in [
            ("http://h:8123/db", "expected clickhouse+http://"),
            ("clickhouse+http://u:pw@h:8123/db", "password in the URL"),
            ("clickhouse+http://h:99999/db", "bad port"),
            ("clickhouse+http://h/db;drop", "database name"),
            ("clickhouse+http://h/db?cluster=a b", "cluster name"),
            ("clickhouse+http://h/db?shard=1", "unknown parameter"),
            ("clickhouse+http://h/db?insert=local", "insert=local needs cluster"),
            ("clickhouse+http://:8123/db", "no host"),
            ("clickhouse+http://h/db?password_file=/nonexistent/pw", "cannot read the password file"),
            ("clickhouse+http://h/db?ca_file=/etc/hostname", "is for clickhouse+https://"),
            ("clickhouse+https://h/db?ca_file=/nonexistent/ca.pem", "cannot read the CA file"),
            ("https://h/db", "or clickhouse+https://"),
        ] {
            let e = Location::parse_with(url, &env(&[])).unwrap_err();
            assert!(e.to_string().contains(want), "{url}: {e}");
            assert!(!e.to_string().contains("pw@"), "{e}");
        }
    }
}
