//! What TLS costs the fleet store (bench/clickhouse-tls.sh): one clickhouse-server of the rig
//! serving HTTP and HTTPS on loopback, and the same work through each, alternating:
//! statements (`SELECT 1`: the connection and, over HTTPS, the handshake, as every statement
//! opens its own), a host's history written (`WRITE_SECONDS` of 19 Hz samples on 2 CPUs in
//! 10 s buckets, the shared capture's stacks), and its profile read back.
//!
//! Usage: tls_bench FOLDED [ROUNDS]

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use kflame_clickhouse::http::Client;
use kflame_clickhouse::rig::{Rig, fleet};
use kflame_clickhouse::{InitOptions, Location, Reader, Writer, WriterOptions, schema};
use kflame_store_api::{Kind, ProfileQuery, Query};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;
const WRITE_SECONDS: i64 = 600;
const STATEMENTS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let folded = args.get(1).expect("usage: tls_bench FOLDED [ROUNDS]");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let stacks = fleet::expand(&std::fs::read(folded).expect("the folded input"));
    let rig = Rig::start_tls(1).expect("the rig");
    let ca = rig.tls.as_ref().expect("TLS").ca.display().to_string();
    let env = |k: &str| match k {
        "KFLAME_CLICKHOUSE_PASSWORD" => Some(rig.password.clone()),
        "KFLAME_CLICKHOUSE_CA_FILE" => Some(ca.clone()),
        _ => None,
    };
    let http = Location::parse_with(&rig.url(0, "plain", false), &env).unwrap();
    let https = Location::parse_with(&rig.https_url(0, "tls"), &env).unwrap();
    let dir = std::env::temp_dir().join(format!("kflame-tls-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sides = [("http", &http), ("https", &https)];
    for (_, loc) in sides {
        schema::init(&Client::new(loc), loc, &InitOptions::default()).unwrap();
    }
    let mut select = [Vec::new(), Vec::new()];
    let mut write = [Vec::new(), Vec::new()];
    let mut read = [Vec::new(), Vec::new()];
    let mut rows = 0;
    for round in 0..rounds {
        for (i, (name, loc)) in sides.iter().enumerate() {
            let c = Client::new(loc);
            let t = Instant::now();
            for _ in 0..STATEMENTS {
                c.query("SELECT 1", &[]).unwrap();
            }
            select[i].push(t.elapsed() / STATEMENTS as u32);
            let host = format!("{name}-{round}");
            let t = Instant::now();
            let mut w =
                Writer::open(loc, &dir.join(format!("{host}.spool")), WriterOptions::default()).unwrap();
            rows = fleet::write_history(&mut w, &host, round, T0, WRITE_SECONDS, &stacks).unwrap();
            drop(w);
            write[i].push(t.elapsed());
            let r = Reader::open(loc).unwrap();
            let q = ProfileQuery {
                host: Some(&host),
                ..ProfileQuery::new(Kind::Cpu, T0, T0 + WRITE_SECONDS * SEC)
            };
            let t = Instant::now();
            let p = r.profile(&q).unwrap();
            read[i].push(t.elapsed());
            assert!(p.samples > 0);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let line = |what: &str, v: &[Vec<Duration>; 2]| {
        let (a, b) = (median(v[0].clone()), median(v[1].clone()));
        println!(
            "{what:<44} http {:>9.3} ms   https {:>9.3} ms   https/http {:.2}",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            b.as_secs_f64() / a.as_secs_f64()
        );
    };
    println!("{rounds} rounds, medians; one clickhouse-server 18.16 on loopback");
    line("a statement (SELECT 1, its own connection)", &select);
    line(&format!("{WRITE_SECONDS} s of a host written ({rows} samples)"), &write);
    line("its profile read back", &read);
}
