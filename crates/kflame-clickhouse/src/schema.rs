//! The tables, the SQL that makes them, and the check that a database has them.
//!
//! Every table has `day Date` (UTC day of the row's time, the partition key: retention drops
//! whole days) and `host String`. On one server the tables are `MergeTree`; on a cluster
//! (`?cluster=NAME`) each shard has `<table>_local` and every server has a `Distributed`
//! table of the plain name over them, sharded by `cityHash64(host)`: one host's rows live on
//! one shard, stack texts included, so a shard answers "which of my samples are in stacks
//! holding this frame" from its own tables. The SQL uses only what ClickHouse 18.16 (Debian
//! 12's) and current releases both run; `TTL` is added where the server has it (19.6 and
//! later).

use crate::http::{Client, HttpError};
use crate::location::Location;

/// A table: its name and columns (name, type), and its sort key.
#[derive(Debug)]
pub struct Table {
    /// Name (without database; `_local` is added on a cluster).
    pub name: &'static str,
    /// Columns in order: the order of every insert's `RowBinary` rows.
    pub columns: &'static [(&'static str, &'static str)],
    /// `ORDER BY` of the MergeTree: what range and stack queries filter on first.
    pub order_by: &'static str,
    /// The table engine (`MergeTree`, or `ReplacingMergeTree` for rows written many times).
    pub engine: &'static str,
    /// The `Distributed` sharding key.
    pub shard_by: &'static str,
}

impl Table {
    /// `a, b, c`: the column list of an insert.
    pub fn column_list(&self) -> String {
        self.columns.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    }
}

/// Profile samples: one row per sample with its own time (`timed` 1), or per aggregated
/// stack of a bucket (`timed` 0, time = the bucket's start).
pub const SAMPLES: Table = Table {
    name: "samples",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("kind", "UInt8"),
        ("time_ns", "Int64"),
        ("timed", "UInt8"),
        ("cpu", "UInt32"),
        ("cgroup", "String"),
        ("capture", "Int64"),
        ("unit", "String"),
        ("stack_id", "UInt64"),
        ("weight", "UInt64"),
        ("weight_nano", "UInt32"),
    ],
    order_by: "kind, host, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// One row per profile bucket: its span, unit and event, how many rows it wrote.
pub const BUCKETS: Table = Table {
    name: "buckets",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("kind", "UInt8"),
        ("start_ns", "Int64"),
        ("end_ns", "Int64"),
        ("capture", "Int64"),
        ("unit", "String"),
        ("event", "String"),
        ("samples", "UInt64"),
    ],
    order_by: "kind, host, start_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Stack texts by id (xxh3-64 of the text), written by each host once per day it uses them;
/// the copies of a day are merged into one row in the background (`ReplacingMergeTree`,
/// `host` is then one of the writers'). On a cluster the texts of a host are on its shard,
/// beside its samples: a text is kept at most once per shard and day.
pub const STACKS: Table = Table {
    name: "stacks",
    columns: &[("day", "Date"), ("host", "String"), ("stack_id", "UInt64"), ("stack", "String")],
    order_by: "stack_id",
    engine: "ReplacingMergeTree",
    shard_by: "cityHash64(host)",
};

/// Metric values.
pub const METRICS: Table = Table {
    name: "metrics",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("name", "String"),
        ("label", "String"),
        ("time_ns", "Int64"),
        ("value", "Float64"),
    ],
    order_by: "name, host, label, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Trigger firings.
pub const TRIGGERS: Table = Table {
    name: "triggers",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("id", "Int64"),
        ("time_ns", "Int64"),
        ("rule", "String"),
        ("metric", "String"),
        ("value", "Float64"),
        ("threshold", "Float64"),
    ],
    order_by: "host, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Captures as they start (`trigger` 0: none).
pub const CAPTURES: Table = Table {
    name: "captures",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("id", "Int64"),
        ("kind", "UInt8"),
        ("start_ns", "Int64"),
        ("trigger", "Int64"),
        ("unit", "String"),
        ("event", "String"),
    ],
    order_by: "host, start_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Captures as they end (a row of its own: rows are never updated).
pub const CAPTURE_ENDS: Table = Table {
    name: "capture_ends",
    columns: &[("day", "Date"), ("host", "String"), ("id", "Int64"), ("end_ns", "Int64"), ("note", "String")],
    order_by: "host, id",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Per-event records of captures (`duration_ns` -1: a single event).
pub const EVENTS: Table = Table {
    name: "events",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("capture", "Int64"),
        ("time_ns", "Int64"),
        ("duration_ns", "Int64"),
        ("pid", "UInt32"),
        ("tid", "UInt32"),
        ("comm", "String"),
        ("cpu", "UInt32"),
        ("kind", "String"),
        ("event", "String"),
        ("stack_id", "UInt64"),
        ("weight", "UInt64"),
    ],
    order_by: "capture, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Kernel reports.
pub const REPORTS: Table = Table {
    name: "reports",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("time_ns", "Int64"),
        ("kind", "String"),
        ("title", "String"),
        ("stack", "String"),
        ("text", "String"),
    ],
    order_by: "host, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Latency histograms, one row per second, family and label: `buckets` holds the non-empty
/// buckets of `kflame::latency` as (u8 bucket, LEB128 count) pairs; `span_ms` the
/// milliseconds the histogram covers (the read's interval), which the rates `FAMILY.slow` and
/// `FAMILY.wait` are read over (added by `kflame store init`, [`ADDED`]: rows from before it
/// read as [`SPAN_MS_BEFORE`]).
pub const LATENCY: Table = Table {
    name: "latency",
    columns: &[
        ("day", "Date"),
        ("host", "String"),
        ("time_ns", "Int64"),
        ("kind", "UInt8"),
        ("label", "String"),
        ("slow", "UInt64"),
        ("max_ns", "UInt64"),
        ("sum_ns", "UInt64"),
        ("buckets", "String"),
        ("span_ms", "UInt32"),
    ],
    order_by: "kind, label, host, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// The span of the latency rows written before `span_ms` was: a read of a second.
pub const SPAN_MS_BEFORE: u32 = 1000;

/// Columns added to tables after kflame first made them, each the last of its table when it
/// was added (table, column, default of the rows already there): `init` adds those a database
/// lacks; `check` asks for `init` when they are missing.
pub const ADDED: &[(&str, &str, &str)] = &[("latency", "span_ms", "1000")];

/// The non-empty buckets of a histogram as `LATENCY`'s `buckets` holds them.
pub fn encode_buckets(counts: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    for (slot, &c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        out.push(slot as u8);
        let mut v = c;
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    out
}

/// [`encode_buckets`] read back into `counts`; `None` for bytes it did not write.
pub fn decode_buckets(mut data: &[u8], counts: &mut [u64]) -> Option<()> {
    while let Some((&slot, rest)) = data.split_first() {
        let (mut v, mut shift, mut at) = (0u64, 0u32, 0usize);
        loop {
            let b = *rest.get(at)?;
            at += 1;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b < 0x80 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
        *counts.get_mut(slot as usize)? += v;
        data = &rest[at..];
    }
    Some(())
}

/// Hosts as they start writing (and once a day): their labels (`key=value,...`).
pub const HOSTS: Table = Table {
    name: "hosts",
    columns: &[("day", "Date"), ("host", "String"), ("time_ns", "Int64"), ("labels", "String")],
    order_by: "host, time_ns",
    engine: "MergeTree",
    shard_by: "cityHash64(host)",
};

/// Every table.
/// The length of a slot of [`SAMPLES_10M`].
pub const SLOT_NS: i64 = 600_000_000_000;

/// The columns of the tables of sums: the slot (its start), the stack, and the sums of the
/// whole parts and billionths of the weights and of the rows.
const SUMS_COLUMNS: &[(&str, &str)] = &[
    ("day", "Date"),
    ("host", "String"),
    ("kind", "UInt8"),
    ("slot", "Int64"),
    ("unit", "String"),
    ("stack_id", "UInt64"),
    ("weight", "UInt64"),
    ("weight_nano", "UInt64"),
    ("samples", "UInt64"),
];

/// The fleet's profile by 10-minute slot: the samples of `samples` summed per (kind, unit,
/// slot, stack), `host` `*` (every host). Each writer sums the samples of a batch and sends
/// the sums with them (the server then adds up rows of one key as it merges parts): a range of
/// whole slots over every host reads this, tens of times fewer rows than the samples.
pub const SAMPLES_10M: Table = Table {
    name: "samples_10m",
    columns: SUMS_COLUMNS,
    order_by: "kind, unit, slot, stack_id",
    // Only these are summed when rows of one key merge (not `day`).
    engine: "SummingMergeTree((weight, weight_nano, samples))",
    shard_by: "stack_id",
};

/// The length of a slot of [`HOST_STACKS_1H`].
pub const HOUR_NS: i64 = 3_600_000_000_000;

/// Nanoseconds in a day.
pub(crate) const NS_PER_DAY: i64 = 86_400_000_000_000;

/// The `Date` (days since 1970-01-01) of a time; times outside `Date`'s range are clamped.
pub fn day_of(time_ns: i64) -> u16 {
    time_ns.div_euclid(NS_PER_DAY).clamp(0, i64::from(u16::MAX)) as u16
}

/// Each host's profile by hour: the samples of `samples` summed per (kind, unit, hour, host,
/// stack), sent by the writer with each batch like [`SAMPLES_10M`]. Which hosts spend time in
/// a frame over whole hours, and how much each spends in all, is read here (five times fewer
/// rows than the samples of 100 hosts' hour in `bench/fleet.sh`, and no time column to
/// read); the range's edges come from the samples.
pub const HOST_STACKS_1H: Table = Table {
    name: "host_stacks_1h",
    columns: SUMS_COLUMNS,
    order_by: "kind, unit, slot, host, stack_id",
    engine: "SummingMergeTree((weight, weight_nano, samples))",
    shard_by: "cityHash64(host)",
};

/// Every table, in the order a writer sends its batches: stacks before the samples that
/// name them, samples before the bucket row that counts them.
pub const TABLES: [&Table; 13] = [
    &STACKS,
    &HOSTS,
    &SAMPLES,
    &BUCKETS,
    &METRICS,
    &TRIGGERS,
    &CAPTURES,
    &CAPTURE_ENDS,
    &EVENTS,
    &REPORTS,
    &LATENCY,
    &SAMPLES_10M,
    &HOST_STACKS_1H,
];

/// What `kflame store init` makes.
#[derive(Clone, Copy, Debug, Default)]
pub struct InitOptions {
    /// Keep this many days (a `TTL` on servers that have it; `kflame store prune` elsewhere).
    pub retain_days: Option<u32>,
}

/// A server's version, `(major, minor)`.
pub fn server_version(client: &Client) -> Result<(u32, u32), HttpError> {
    let v = client.query("SELECT version() FORMAT TSV", &[])?;
    let v = String::from_utf8_lossy(&v);
    let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    Ok((parts.next().unwrap_or(0), parts.next().unwrap_or(0)))
}

/// True when a server of this version takes `TTL` on MergeTree tables.
pub fn has_ttl(version: (u32, u32)) -> bool {
    version >= (19, 6)
}

/// The statements that make the database and its tables (every one `IF NOT EXISTS`).
pub fn ddl(loc: &Location, opts: &InitOptions, version: (u32, u32)) -> Vec<String> {
    let mut out = vec![format!("CREATE DATABASE IF NOT EXISTS {}", loc.database)];
    for t in TABLES {
        let cols: Vec<String> = t
            .columns
            .iter()
            .map(|(n, ty)| match ADDED.iter().find(|a| a.0 == t.name && a.1 == *n) {
                Some((_, _, default)) => format!("{n} {ty} DEFAULT {default}"),
                None => format!("{n} {ty}"),
            })
            .collect();
        let ttl = match opts.retain_days {
            Some(d) if has_ttl(version) => format!(" TTL day + toIntervalDay({d})"),
            _ => String::new(),
        };
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {} ({}) ENGINE = {} PARTITION BY day ORDER BY ({}){ttl} \
             SETTINGS index_granularity = 8192",
            loc.local_table(t.name),
            cols.join(", "),
            t.engine,
            t.order_by,
        ));
        if let Some(cluster) = &loc.cluster {
            out.push(format!(
                "CREATE TABLE IF NOT EXISTS {} AS {} ENGINE = Distributed({cluster}, {}, {}_local, {})",
                loc.table(t.name),
                loc.local_table(t.name),
                loc.database,
                t.name,
                t.shard_by,
            ));
        }
    }
    out
}

/// The materialized view that filled `samples_10m` in databases of earlier kflame versions.
const OLD_VIEW: &str = "samples_10m_mv";

fn has_old_view(client: &Client, loc: &Location) -> Result<bool, HttpError> {
    let n = client.query(
        &format!(
            "SELECT count() FROM system.tables WHERE database = '{}' AND name = '{OLD_VIEW}' FORMAT TSV",
            loc.database
        ),
        &[],
    )?;
    Ok(String::from_utf8_lossy(&n).trim() != "0")
}

/// Why a database cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The server did not answer or refused.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// Tables are missing or have other columns.
    #[error("{0}")]
    Mismatch(String),
}

/// Makes the tables on the server of `loc` (on a cluster: run it once per server; each gets
/// its local tables and the distributed ones). Returns the statements run.
pub fn init(client: &Client, loc: &Location, opts: &InitOptions) -> Result<Vec<String>, SchemaError> {
    let version = server_version(client)?;
    if let Some(cluster) = &loc.cluster {
        let found = client.query(
            &format!("SELECT count() FROM system.clusters WHERE cluster = '{cluster}' FORMAT TSV"),
            &[],
        )?;
        if String::from_utf8_lossy(&found).trim() == "0" {
            return Err(SchemaError::Mismatch(format!(
                "the server has no cluster {cluster:?} in its remote_servers configuration"
            )));
        }
    }
    let mut stmts = ddl(loc, opts, version);
    // Databases made by kflame before writers summed the slots themselves have a
    // materialized view doing it on the server: with both, every sample would count twice.
    if has_old_view(client, loc)? {
        stmts.push(format!("DROP TABLE {}.{OLD_VIEW}", loc.database));
    }
    for s in &stmts {
        client.query(s, &[])?;
    }
    // Tables made by an earlier kflame lack the columns added since: added last, with the
    // value of the rows already there as their default.
    let have = columns(client, loc)?;
    for (table, column, default) in ADDED {
        let Some(t) = TABLES.iter().find(|t| t.name == *table) else { continue };
        let Some((_, ty)) = t.columns.iter().find(|c| c.0 == *column) else { continue };
        let mut names = vec![loc.local_table(table)];
        if loc.cluster.is_some() {
            names.push(loc.table(table));
        }
        for name in names {
            let short = name.rsplit_once('.').map_or(name.as_str(), |(_, n)| n);
            let found =
                have.lines().filter_map(|l| l.split_once('\t')).any(|(tb, c)| tb == short && c == *column);
            if !found {
                let s = format!("ALTER TABLE {name} ADD COLUMN {column} {ty} DEFAULT {default}");
                client.query(&s, &[])?;
                stmts.push(s);
            }
        }
    }
    check(client, loc)?;
    Ok(stmts)
}

/// `table\tcolumn` lines of every column of the database, in each table's order.
fn columns(client: &Client, loc: &Location) -> Result<String, HttpError> {
    let answer = client.query(
        &format!(
            "SELECT table, name FROM system.columns WHERE database = '{}' ORDER BY table, position FORMAT TSV",
            loc.database
        ),
        &[],
    );
    // 18.16's system.columns has no `position`: fall back to its natural order.
    let answer = match answer {
        Err(HttpError::Server { .. }) => client.query(
            &format!("SELECT table, name FROM system.columns WHERE database = '{}' FORMAT TSV", loc.database),
            &[],
        )?,
        other => other?,
    };
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// Checks that every table exists with kflame's columns (names in order).
pub fn check(client: &Client, loc: &Location) -> Result<(), SchemaError> {
    let text = columns(client, loc)?;
    let mut missing = Vec::new();
    for t in TABLES {
        let want: Vec<&str> = t.columns.iter().map(|(n, _)| *n).collect();
        let mut have = Vec::new();
        for local in [false, true] {
            if local && loc.cluster.is_none() {
                continue;
            }
            let name = if local { format!("{}_local", t.name) } else { t.name.to_string() };
            have.clear();
            have.extend(
                text.lines().filter_map(|l| l.split_once('\t')).filter(|(tb, _)| *tb == name).map(|(_, c)| c),
            );
            let added: Vec<&str> =
                ADDED.iter().filter(|a| a.0 == t.name && !have.contains(&a.1)).map(|a| a.1).collect();
            if have.is_empty() {
                missing.push(format!("{}.{name}", loc.database));
            } else if !added.is_empty() && have.len() + added.len() == want.len() && want.starts_with(&have) {
                return Err(SchemaError::Mismatch(format!(
                    "{}.{name} has no column {}, which this kflame writes: run `kflame store init --store {loc}` \
                     to add it",
                    loc.database,
                    added.join(", ")
                )));
            } else if have != want {
                return Err(SchemaError::Mismatch(format!(
                    "{}.{name} has columns ({}), kflame writes ({}): made by another kflame version",
                    loc.database,
                    have.join(", "),
                    want.join(", ")
                )));
            }
        }
    }
    if text.lines().any(|l| l.starts_with(&format!("{OLD_VIEW}\t"))) {
        return Err(SchemaError::Mismatch(format!(
            "{}.{OLD_VIEW} fills samples_10m on the server, as kflame did before its writers sent the \
             sums themselves: run `kflame store init --store {loc}` to drop it",
            loc.database
        )));
    }
    if !missing.is_empty() {
        return Err(SchemaError::Mismatch(format!(
            "{loc}: no table {}; run `kflame store init --store {loc}` first",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Drops the day partitions before `keep_from_day` (days since the epoch) of every local
/// table on the server of `loc`; returns how many were dropped.
pub fn prune(client: &Client, loc: &Location, keep_from_day: u16) -> Result<u64, HttpError> {
    let mut dropped = 0;
    for t in TABLES {
        let local = loc.local_table(t.name);
        let (db, table) = local.split_once('.').unwrap_or((&loc.database, t.name));
        let parts = client.query(
            &format!(
                "SELECT DISTINCT partition_id FROM system.parts WHERE database = '{db}' AND table = '{table}' \
                 AND active AND max_date < toDate({keep_from_day}) FORMAT TSV"
            ),
            &[],
        )?;
        for id in String::from_utf8_lossy(&parts).lines().filter(|l| !l.is_empty()) {
            if !id.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            client.query(&format!("ALTER TABLE {local} DROP PARTITION ID '{id}'"), &[])?;
            dropped += 1;
        }
    }
    Ok(dropped)
}
