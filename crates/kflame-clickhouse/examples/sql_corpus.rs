//! Runs every statement kflame sends to ClickHouse once against a real server of the rig
//! (Debian's 18.16): the tables made, three hosts' history written (metrics, profile buckets
//! timed and aggregated, a trigger, a capture with its events, kernel reports), and every
//! question of `kflame_store_api::Query` asked. With `KFLAME_CLICKHOUSE_SQL_LOG=DIR` set, the
//! statements, their data and their answers land in DIR: `tests/clickhouse/test_chdb.py`
//! runs the same SQL on a current ClickHouse (chdb) and compares the answers.

use kflame_clickhouse::rig::Rig;
use kflame_clickhouse::rig::fleet;
use kflame_clickhouse::{InitOptions, Location, Reader, Writer, WriterOptions, schema};
use kflame_store_api::{Kind, ProfileQuery, Query, SeriesQuery, Store};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn main() {
    let stacks = fleet::real_stacks();
    let rig = Rig::start(1).expect("a ClickHouse server");
    let loc = rig.location(0, "kflame", false);
    // What `kflame store init --retain 30d` sends to a current server (TTL and all), for the
    // test to run there too.
    if let Some(dir) = std::env::var_os("KFLAME_CLICKHOUSE_SQL_LOG") {
        let modern = Location { database: "kflame_modern".into(), ..loc.clone() };
        let ddl = schema::ddl(&modern, &InitOptions { retain_days: Some(30) }, (26, 9));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join("ddl-26.sql"), ddl.join(";\n") + ";\n").unwrap();
    }
    schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions { retain_days: Some(30) })
        .unwrap();
    let spool = std::env::temp_dir().join(format!("kflame-sql-corpus-{}", std::process::id()));
    {
        let opts = WriterOptions { labels: "role=corpus".into(), ..WriterOptions::default() };
        let mut w = Writer::open(&loc, &spool.join("spool.db"), opts).unwrap();
        for (h, host) in ["db1", "web1", "web2"].iter().enumerate() {
            fleet::write_history(&mut w, host, h, T0, 60, &stacks).unwrap();
        }
        w.flush().unwrap();
    }
    let _ = std::fs::remove_dir_all(&spool);
    let r = Reader::open(&loc).unwrap();
    let full = ProfileQuery::new(Kind::Cpu, T0, T0 + 60 * SEC);
    let some: Vec<String> = vec!["db1".into(), "web2".into()];
    r.profile(&full).unwrap();
    // Whole 10-minute slots over every host: the fleet's per-slot sums.
    r.profile(&ProfileQuery::new(Kind::Cpu, T0 - 590 * SEC, T0 + 630 * SEC)).unwrap();
    r.profile(&ProfileQuery { host: Some("web1"), cgroup: Some("/system.slice"), ..full }).unwrap();
    r.profile(&ProfileQuery {
        hosts: Some(&some),
        ..ProfileQuery::new(Kind::Cpu, T0 + 3 * SEC, T0 + 17 * SEC)
    })
    .unwrap();
    let evs = r.events(T0, T0 + 60 * SEC, None).unwrap();
    let cap = evs.iter().find_map(|e| match e {
        kflame_store_api::Event::Capture { id, .. } => Some(*id),
        _ => None,
    });
    r.profile(&ProfileQuery { capture: cap, ..ProfileQuery::new(Kind::Syscalls, T0, T0 + 60 * SEC) })
        .unwrap();
    let pts = r.samples(&ProfileQuery { host: Some("db1"), ..full }).unwrap();
    r.stack_texts(&pts.iter().take(20).map(|p| p.stack).collect::<Vec<_>>()).unwrap();
    for points in [None, Some(10)] {
        r.series(&SeriesQuery {
            name: "cpu.usr",
            label: None,
            host: None,
            from_ns: T0,
            to_ns: T0 + 60 * SEC,
            points,
        })
        .unwrap();
    }
    r.series_many(
        &["cpu.usr"],
        &SeriesQuery {
            name: "",
            label: Some("cpu1"),
            host: Some("web1"),
            from_ns: T0,
            to_ns: T0 + 60 * SEC,
            points: Some(1000),
        },
    )
    .unwrap();
    r.metric_names(None).unwrap();
    r.metric_names(Some("db1")).unwrap();
    r.events(T0, T0 + 60 * SEC, Some("web2")).unwrap();
    if let Some(c) = cap {
        r.capture_events(c, T0, T0 + 60 * SEC).unwrap();
    }
    r.hosts().unwrap();
    r.host_labels().unwrap();
    r.time_bounds().unwrap();
    r.host_shares(&full, "ksys_write").unwrap();
    r.host_shares(&ProfileQuery { hosts: Some(&some), ..full }, "do_syscall_64").unwrap();
    r.storage().unwrap();
}
