//! The fleet benchmark (bench/fleet.sh): a two-shard ClickHouse rig on loopback, 100
//! simulated hosts writing 1 h of 19 Hz samples on 2 CPUs each (stacks of the shared large
//! capture, the process id taken out of the command frame as `kflame watch` stores it,
//! drawn in a fixed shuffled order from a place of each host's own), then the fleet's
//! questions: the fleet-wide flame graph of the hour, the per-host breakdown of a frame, and
//! the space per host-day.
//!
//! Ingest is measured twice: end to end (the writers encode and send while the servers take
//! the rows, all on this machine's two cores), and the rig alone: the writers fill their
//! spools while both servers are down, then the servers come back and take the spooled
//! batches (what the target counts: on a fleet the writers run on the hosts).
//!
//! Usage: fleet_bench FOLDED [HOSTS] [WRITERS] [distributed|local]
//!
//! `local`: each writer puts its hosts' rows in the local tables of the server it writes to
//! (`?cluster=...&insert=local`), not through the Distributed tables.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use kflame::fold::{Meta, Unit, Weight};
use kflame_clickhouse::rig::Rig;
use kflame_clickhouse::{InitOptions, Reader, Writer, WriterOptions, schema};
use kflame_store_api::{Bucket, Kind, ProfileQuery, Query, Sample, Store};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let folded = std::fs::read(args.get(1).expect("usage: fleet_bench FOLDED [HOSTS] [WRITERS]")).unwrap();
    let hosts: usize = args.get(2).map_or(100, |s| s.parse().unwrap());
    let writers: usize = args.get(3).map_or(2, |s| s.parse().unwrap());
    let local = args.get(4).is_some_and(|m| m == "local");
    // Stacks by their counts, the command frame without `-PID`, shuffled (a fixed LCG).
    // The capture's counts are cpu-clock periods (ns): one sample is the smallest of them.
    let lines: Vec<(&[u8], u64)> = folded
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && l[0] != b'#')
        .filter_map(|l| {
            let sp = l.iter().rposition(|&b| b == b' ')?;
            Some((&l[..sp], std::str::from_utf8(&l[sp + 1..]).ok()?.parse().ok()?))
        })
        .collect();
    let period = lines.iter().map(|l| l.1).filter(|&n| n > 0).min().unwrap_or(1);
    let mut stacks: Vec<Vec<u8>> = lines
        .iter()
        .flat_map(|(s, n)| std::iter::repeat_n(s.to_vec(), ((n + period / 2) / period).max(1) as usize))
        .map(|s| {
            let first = s.iter().position(|&b| b == b';').unwrap_or(s.len());
            match s[..first].iter().rposition(|&b| b == b'-') {
                Some(d) if s[d + 1..first].iter().all(u8::is_ascii_digit) && d + 1 < first => {
                    [&s[..d], &s[first..]].concat()
                }
                _ => s,
            }
        })
        .collect();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..stacks.len()).rev() {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        stacks.swap(i, (x >> 33) as usize % (i + 1));
    }
    let distinct = stacks.iter().collect::<std::collections::HashSet<_>>().len();
    println!("stacks: {} samples, {distinct} distinct (command frames without pids)", stacks.len());

    let mut rig = Rig::start(2).unwrap();
    for db in ["fleet", "fleet_e2e"] {
        for i in 0..2 {
            let loc = rig.location(i, db, true);
            schema::init(&kflame_clickhouse::http::Client::new(&loc), &loc, &InitOptions::default()).unwrap();
        }
    }
    let per_host = 2 * 19 * 3600;
    let rows = hosts * per_host;
    println!(
        "ingest: {hosts} hosts x 1 h x 19 Hz x 2 CPUs = {rows} sample rows, {writers} writers, {}",
        if local {
            "into each server's local tables (insert=local)"
        } else {
            "through the Distributed tables"
        }
    );
    let spool_dir = std::env::temp_dir().join(format!("kflame-fleet-bench-{}", std::process::id()));
    let locs: Vec<[kflame_clickhouse::Location; 2]> =
        (0..2).map(|i| [rig.location(i, "fleet", true), rig.location(i, "fleet_e2e", true)]).collect();
    let open = |w: usize, db: &str| {
        let loc = kflame_clickhouse::Location {
            insert_local: local,
            ..locs[w % 2][usize::from(db == "fleet_e2e")].clone()
        };
        let opts = WriterOptions {
            batch_bytes: 64 << 20,
            batch_interval: Duration::from_secs(3600),
            spool_max_bytes: 8 << 30,
            ..WriterOptions::default()
        };
        Writer::open(&loc, &spool_dir.join(format!("spool-{db}-{w}.db")), opts).unwrap()
    };

    // 1. End to end: the writers encode and send while the servers take the rows, all on the
    // same two cores.
    let mut ws: Vec<Writer> = (0..writers).map(|w| open(w, "fleet_e2e")).collect();
    let start = Instant::now();
    std::thread::scope(|sc| {
        for (w, wr) in ws.iter_mut().enumerate() {
            let stacks = &stacks;
            sc.spawn(move || {
                write_hosts(wr, w, writers, hosts, stacks);
                wr.flush().unwrap();
                assert_eq!(wr.spooled(), (0, 0));
            });
        }
    });
    let took = start.elapsed().as_secs_f64();
    drop(ws);
    println!(
        "ingest end to end (writers and servers on the same 2 cores): {took:.2} s, {:.2} M rows/s",
        rows as f64 / took / 1e6
    );
    for i in 0..2 {
        let loc = rig.location(i, "fleet_e2e", true);
        kflame_clickhouse::http::Client::new(&loc).query("DROP DATABASE fleet_e2e", &[]).unwrap();
    }

    // 2. The rig's own rate: the writers fill their spools while both servers are down (an
    // outage), then the servers come back and take the spooled batches.
    rig.stop(0);
    rig.stop(1);
    let mut ws: Vec<Writer> = (0..writers).map(|w| open(w, "fleet")).collect();
    let start = Instant::now();
    std::thread::scope(|sc| {
        for (w, wr) in ws.iter_mut().enumerate() {
            let stacks = &stacks;
            sc.spawn(move || write_hosts(wr, w, writers, hosts, stacks));
        }
    });
    let took = start.elapsed().as_secs_f64();
    let spooled: u64 = ws.iter().map(|w| w.spooled().1).sum();
    println!(
        "writers alone (encoding, summing, spooling {:.0} MB): {took:.2} s, {:.2} M rows/s",
        spooled as f64 / 1e6,
        rows as f64 / took / 1e6
    );
    rig.restart(0).unwrap();
    rig.restart(1).unwrap();
    let start = Instant::now();
    std::thread::scope(|sc| {
        for wr in ws.iter_mut() {
            sc.spawn(move || {
                wr.flush().unwrap();
                assert_eq!(wr.spooled(), (0, 0));
            });
        }
    });
    let took = start.elapsed().as_secs_f64();
    let batches: u64 = ws.iter().map(|w| w.stats().batches_resent).sum();
    drop(ws);
    println!(
        "ingest into the rig ({batches} spooled batches sent): {took:.2} s, {:.2} M rows/s (target >= 1 M rows/s)",
        rows as f64 / took / 1e6
    );
    let _ = std::fs::remove_dir_all(&spool_dir);

    // The questions are asked of a settled store, as on a fleet, where 100 hosts write some
    // 4,000 rows a second, not a million: the background merges of the burst end first.
    let start = Instant::now();
    loop {
        let busy: u64 = (0..2)
            .map(|i| {
                let c = kflame_clickhouse::http::Client::new(&rig.location(i, "fleet", true));
                let n = c.query("SELECT count() FROM system.merges FORMAT TSV", &[]).unwrap();
                String::from_utf8_lossy(&n).trim().parse::<u64>().unwrap_or(1)
            })
            .sum();
        if busy == 0 || start.elapsed() > Duration::from_secs(300) {
            println!(
                "background merges of the ingest: done {:.1} s after it{}",
                start.elapsed().as_secs_f64(),
                if busy == 0 { "" } else { " (still running: asked anyway)" }
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let r = Reader::open(&rig.location(0, "fleet", true)).unwrap();
    let q = ProfileQuery::new(Kind::Cpu, T0, T0 + 3600 * SEC);
    let mut times = Vec::new();
    let mut p = None;
    for _ in 0..5 {
        let t = Instant::now();
        p = Some(r.profile(&q).unwrap());
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let p = p.unwrap();
    assert_eq!(p.samples as usize, rows, "every row is read back");
    times.sort_by(f64::total_cmp);
    println!(
        "fleet flame graph of 1 h, {hosts} hosts: {} samples, {} stacks; median {:.0} ms (min {:.0}, max {:.0}) (target <= 1000 ms)",
        p.samples,
        p.stacks.len(),
        times[2],
        times[0],
        times[4]
    );
    // The frame: the hottest non-root frame of the merged profile's stacks at depth 2.
    let mut by_frame: std::collections::HashMap<&[u8], u64> = std::collections::HashMap::new();
    let order = p.stacks.in_output_order();
    for (s, w) in &order {
        for f in s.split(|&b| b == b';').skip(1).take(3) {
            *by_frame.entry(f).or_insert(0) += w.whole();
        }
    }
    let total = p.stacks.total().whole();
    let frame = by_frame
        .iter()
        .filter(|(_, n)| **n < total / 2)
        .max_by_key(|(f, n)| (**n, *f))
        .map(|(f, _)| String::from_utf8_lossy(f).into_owned())
        .unwrap();
    let mut times = Vec::new();
    let mut shares = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        shares = r.host_shares(&q, &frame).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let inside: u64 = shares.iter().map(|s| s.frame.whole()).sum();
    println!(
        "per-host breakdown of {frame:?}: {} hosts, {:.1}% of the fleet; median {:.0} ms (min {:.0}, max {:.0}) (target <= 500 ms)",
        shares.len(),
        100.0 * inside as f64 / total as f64,
        times[2],
        times[0],
        times[4]
    );
    let storage = r.storage().unwrap();
    let comp: u64 = storage.iter().map(|t| t.1).sum();
    let uncomp: u64 = storage.iter().map(|t| t.2).sum();
    for (t, c, u, n) in &storage {
        println!("  {t}: {n} rows, {c} bytes compressed, {u} uncompressed");
    }
    let host_days = hosts as f64 / 24.0;
    println!(
        "storage: {comp} bytes compressed ({uncomp} uncompressed, {:.1}x) = {:.1} MB per host-day, {:.2} bytes per sample",
        uncomp as f64 / comp as f64,
        comp as f64 / host_days / 1e6,
        comp as f64 / rows as f64
    );
    // KFLAME_FLEET_BENCH_HOLD=SECONDS: keep the rig up that long to look at it by hand.
    if let Some(secs) = std::env::var("KFLAME_FLEET_BENCH_HOLD").ok().and_then(|s| s.parse::<u64>().ok()) {
        for (i, s) in rig.servers.iter().enumerate() {
            println!(
                "server {i}: http://127.0.0.1:{}/ (user default, password {})",
                s.http_port, rig.password
            );
        }
        std::thread::sleep(Duration::from_secs(secs));
    }
}

/// Writer `w` of `writers` writes its hosts' hour: 360 buckets of 10 s, 190 samples on each of
/// 2 CPUs, stacks drawn in order from a place of each host's own.
fn write_hosts(wr: &mut Writer, w: usize, writers: usize, hosts: usize, stacks: &[Vec<u8>]) {
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    for h in (w..hosts).step_by(writers) {
        let host = format!("host{h:03}");
        let mut k = h * 7919;
        for b in 0..360i64 {
            let (a, z) = (T0 + b * 10 * SEC, T0 + (b + 1) * 10 * SEC);
            let mut part: Vec<Sample<'_>> = Vec::with_capacity(380);
            for i in 0..190i64 {
                for cpu in 0..2u32 {
                    let t = a + i * (SEC / 19) + i64::from(cpu) * 7_000_000 + (h as i64 % 50) * 3_000;
                    part.push(Sample {
                        time_ns: t.min(z - 1),
                        cpu,
                        cgroup: None,
                        stack: &stacks[k % stacks.len()],
                        weight: Weight::from_u64(1),
                    });
                    k += 1;
                }
            }
            wr.append_bucket(&Bucket {
                host: &host,
                kind: Kind::Cpu,
                start_ns: a,
                end_ns: z,
                capture: None,
                meta: &meta,
                samples: &part,
                aggregated: &[],
            })
            .unwrap();
        }
    }
}
