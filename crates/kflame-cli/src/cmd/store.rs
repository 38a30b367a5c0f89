//! `kflame store`: make and look after a ClickHouse store (`init`, `prune`, `stats`).

use std::io::Write;

use anyhow::{Context, Result, bail};
use kflame_clickhouse::http::Client;
use kflame_clickhouse::{InitOptions, Reader, schema};
use kflame_store::Query;
use kflame_store::time::{format_time, now_ns, parse_duration};

use crate::output;

/// Arguments of `kflame store`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  kflame store init --store clickhouse+https://ch1:8443/kflame --retain 30d
  # A cluster: run init on every server of it (each gets its local tables
  # and the Distributed ones over the cluster's shards):
  for h in ch1 ch2; do
    kflame store init --store \"clickhouse+https://$h:8443/kflame?cluster=fleet\"
  done
  # Servers without TTL:
  kflame store prune --store clickhouse+https://ch1:8443/kflame --retain 30d
  kflame store stats --store clickhouse+https://ch1:8443/kflame

The password comes from the file named by KFLAME_CLICKHOUSE_PASSWORD_FILE, or from
KFLAME_CLICKHOUSE_PASSWORD; the user from the URL (user@host) or KFLAME_CLICKHOUSE_USER.")]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Create the database and tables (MergeTree partitioned by day; with `?cluster=NAME`
    /// also the Distributed tables); safe to run again.
    Init {
        /// The store (`clickhouse+http://HOST:8123/DB[?cluster=NAME]`, or
        /// `clickhouse+https://HOST:8443/DB`, its CA in KFLAME_CLICKHOUSE_CA_FILE).
        #[arg(long, value_name = "URL")]
        store: String,
        /// Keep this many days of history: a TTL on servers that have it (19.6 and later);
        /// on older ones run `kflame store prune` daily.
        #[arg(long, value_name = "DURATION")]
        retain: Option<String>,
        /// Print the SQL and run nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Drop whole days older than --retain on the server of --store (its local tables).
    Prune {
        /// The store.
        #[arg(long, value_name = "URL")]
        store: String,
        /// Keep this much history (7d, 30d).
        #[arg(long, value_name = "DURATION")]
        retain: String,
    },
    /// Space on disk per table and per host-day (every shard with `?cluster=`), hosts, time
    /// span.
    Stats {
        /// The store.
        #[arg(long, value_name = "URL")]
        store: String,
    },
}

use crate::cmd::history::location;

fn days(retain: &str) -> Result<u32> {
    let ns = parse_duration(retain).map_err(|e| anyhow::anyhow!("--retain {retain:?}: {e}"))?;
    let d = ns / 86_400_000_000_000;
    if d < 1 {
        bail!("--retain {retain:?}: ClickHouse keeps whole days; give 1d or more");
    }
    Ok(u32::try_from(d).unwrap_or(u32::MAX))
}

pub(crate) fn run(args: Args) -> Result<()> {
    match args.action {
        Action::Init { store, retain, dry_run } => {
            let loc = location(&store)?;
            let opts = InitOptions { retain_days: retain.as_deref().map(days).transpose()? };
            let client = Client::new(&loc);
            let mut out = output::create(None)?;
            if dry_run {
                let version = schema::server_version(&client).unwrap_or((0, 0));
                for s in schema::ddl(&loc, &opts, version) {
                    writeln!(out, "{s};")?;
                }
                return out.finish();
            }
            let version = schema::server_version(&client).with_context(|| format!("{loc}"))?;
            let stmts = schema::init(&client, &loc, &opts).with_context(|| format!("{loc}"))?;
            writeln!(
                out,
                "{loc}: {} tables ready on ClickHouse {}.{}",
                schema::TABLES.len(),
                version.0,
                version.1
            )?;
            if let Some(d) = opts.retain_days {
                if schema::has_ttl(version) {
                    writeln!(out, "rows older than {d} days are dropped by the server (TTL)")?;
                } else {
                    writeln!(
                        out,
                        "this server has no TTL: run `kflame store prune --store ... --retain {d}d` daily on each server"
                    )?;
                }
            }
            let _ = stmts;
            out.finish()
        }
        Action::Prune { store, retain } => {
            let loc = location(&store)?;
            let d = days(&retain)?;
            let today = (now_ns() / 86_400_000_000_000) as u32;
            let keep_from = u16::try_from(today.saturating_sub(d)).unwrap_or(u16::MAX);
            let n = schema::prune(&Client::new(&loc), &loc, keep_from).with_context(|| format!("{loc}"))?;
            output::message(format!("{loc}: {n} day partitions older than {d} days dropped"));
            Ok(())
        }
        Action::Stats { store } => {
            let loc = location(&store)?;
            let r = Reader::open(&loc)?;
            let tables = r.storage()?;
            let hosts = r.hosts()?;
            let bounds = r.time_bounds()?;
            let mut out = output::create(None)?;
            writeln!(out, "{loc}")?;
            match bounds {
                Some((a, b)) => {
                    writeln!(out, "{} hosts, {} to {}", hosts.len(), format_time(a), format_time(b))?
                }
                None => writeln!(out, "{} hosts, no rows", hosts.len())?,
            }
            let whose = if loc.cluster.is_some() { "every shard's parts" } else { "this server's parts" };
            writeln!(out, "table\trows\tcompressed\tuncompressed\tratio   ({whose})")?;
            let (mut c, mut u) = (0u64, 0u64);
            for (t, comp, uncomp, rows) in &tables {
                c += comp;
                u += uncomp;
                let ratio = if *comp > 0 { *uncomp as f64 / *comp as f64 } else { 0.0 };
                writeln!(out, "{t}\t{rows}\t{comp}\t{uncomp}\t{ratio:.1}x")?;
            }
            if let (Some((a, b)), false) = (bounds, hosts.is_empty()) {
                let host_days = hosts.len() as f64 * ((b - a) as f64 / 86_400e9).max(60.0 / 86_400.0);
                writeln!(
                    out,
                    "total {c} bytes compressed ({u} uncompressed); {:.0} bytes per host-day over {:.2} host-days",
                    c as f64 / host_days,
                    host_days
                )?;
            }
            out.finish()
        }
    }
}
