//! Generates a history of default watching from real stacks and measures its size and
//! query times (see `bench/store.sh`).
//!
//! `store_bench FOLDED[.zst] DB [HOURS] [CPUS]`: 19 Hz on every CPU, 10 s buckets, stacks
//! drawn (weighted by their counts, deterministically) from FOLDED, whose first frame may be
//! `comm-PID` (kflame collapse --pid); 40 metric series at 1 Hz.

#![allow(clippy::print_stdout)]

use std::io::Read;
use std::time::Instant;

use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{
    Bucket, Kind, Metric, OpenMode, Policy, ProfileQuery, Query, Sample, SeriesQuery, Sqlite, Store,
};

const SEC: i64 = 1_000_000_000;
const T0: i64 = 1_764_000_000_000_000_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: store_bench FOLDED[.zst] DB [HOURS] [CPUS]".into());
    }
    let hours: i64 = args.get(3).map_or(Ok(24), |s| s.parse())?;
    let cpus: u32 = args.get(4).map_or(Ok(2), |s| s.parse())?;
    let mut raw = Vec::new();
    let f = std::fs::File::open(&args[1])?;
    if args[1].ends_with(".zst") {
        ruzstd::decoding::StreamingDecoder::new(f)?.read_to_end(&mut raw)?;
    } else {
        std::io::BufReader::new(f).read_to_end(&mut raw)?;
    }
    // (stack without the pid, pid, cumulative count)
    let mut stacks: Vec<(Vec<u8>, u32)> = Vec::new();
    let mut cumulative: Vec<u64> = Vec::new();
    let mut total = 0u64;
    for line in raw.split(|&b| b == b'\n') {
        let Some(sp) = line.iter().rposition(|&b| b == b' ') else { continue };
        let Ok(n) = std::str::from_utf8(&line[sp + 1..]).unwrap_or("").parse::<u64>() else { continue };
        let stack = &line[..sp];
        let first_end = stack.iter().position(|&b| b == b';').unwrap_or(stack.len());
        let first = &stack[..first_end];
        let (comm, pid) = match first.iter().rposition(|&b| b == b'-') {
            Some(d) if first[d + 1..].iter().all(u8::is_ascii_digit) && d + 1 < first.len() => {
                (&first[..d], std::str::from_utf8(&first[d + 1..]).unwrap_or("0").parse().unwrap_or(0))
            }
            _ => (first, 0),
        };
        let mut text = comm.to_vec();
        text.extend_from_slice(&stack[first_end..]);
        // Sample counts: a perf period file counts each sample as its period.
        total += n.div_ceil(1_000_000).max(1);
        stacks.push((text, pid));
        cumulative.push(total);
    }
    println!("stacks in the input: {} (weight {total})", stacks.len());
    let _ = std::fs::remove_file(&args[2]);
    let mut db = Sqlite::open(&args[2], OpenMode::Write)?;
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let period = SEC / 19;
    let bucket = 10 * SEC;
    let names: Vec<(String, String)> = (0..40)
        .map(|i| match i {
            0..8 => (
                [
                    "cpu.usr",
                    "cpu.sys",
                    "cpu.iowait",
                    "cpu.idle",
                    "cpu.irq",
                    "cpu.softirq",
                    "cpu.steal",
                    "cpu.nice",
                ][i]
                    .to_string(),
                String::new(),
            ),
            8..14 => (
                ["mem.available", "mem.cached", "mem.dirty", "mem.writeback", "mem.slab", "mem.swap"][i - 8]
                    .to_string(),
                String::new(),
            ),
            14..30 => (
                ["io.read_bytes", "io.write_bytes", "io.util", "io.await"][(i - 14) % 4].to_string(),
                format!("sda{}", (i - 14) / 4),
            ),
            _ => (
                [
                    "load1",
                    "load5",
                    "load15",
                    "ctxt",
                    "forks",
                    "psi.cpu.some",
                    "psi.io.some",
                    "psi.io.full",
                    "psi.memory.some",
                    "psi.memory.full",
                ][i - 30]
                    .to_string(),
                String::new(),
            ),
        })
        .collect();
    let mut values = vec![50.0f64; names.len()];
    let started = Instant::now();
    let mut samples_total = 0u64;
    let mut next_cpu_t: Vec<i64> = (0..cpus).map(|c| T0 + i64::from(c) * 3_000_000).collect();
    let mut current: Vec<usize> = vec![0; cpus as usize];
    let buckets = hours * 3600 * SEC / bucket;
    for b in 0..buckets {
        let start = T0 + b * bucket;
        let end = start + bucket;
        let mut these: Vec<(i64, u32, usize)> = Vec::new();
        for cpu in 0..cpus as usize {
            while next_cpu_t[cpu] < end {
                // A task keeps its CPU for a while: a new stack one time in three.
                if rng.next().is_multiple_of(3) || b == 0 {
                    let r = rng.next() % total;
                    current[cpu] = cumulative.partition_point(|&c| c <= r);
                }
                let jitter = (rng.next() % 40_000) as i64 - 20_000;
                let t = (next_cpu_t[cpu] + jitter).clamp(start, end - 1);
                these.push((t, cpu as u32, current[cpu]));
                next_cpu_t[cpu] += period;
            }
        }
        let samples: Vec<Sample<'_>> = these
            .iter()
            .map(|&(t, cpu, i)| Sample {
                time_ns: t,
                cpu,
                pid: stacks[i].1,
                tid: stacks[i].1,
                cgroup: None,
                stack: &stacks[i].0,
                weight: Weight::ONE,
            })
            .collect();
        samples_total += samples.len() as u64;
        db.append_bucket(&Bucket {
            host: "bench",
            kind: Kind::Cpu,
            start_ns: start,
            end_ns: end,
            capture: None,
            meta: &meta,
            samples: &samples,
            aggregated: &[],
        })?;
        for s in 0..10 {
            let t = start + s * SEC + (rng.next() % 2_000_000) as i64;
            for v in values.iter_mut() {
                let step = ((rng.next() % 201) as f64 - 100.0) / 100.0;
                *v = ((*v + step).clamp(0.0, 100.0) * 100.0).round() / 100.0;
            }
            let m: Vec<Metric<'_>> = names
                .iter()
                .zip(&values)
                .map(|((n, l), v)| Metric { name: n, label: l, value: *v })
                .collect();
            db.append_metrics("bench", t, &m)?;
        }
    }
    db.flush()?;
    db.maintain(&Policy::new(T0))?;
    let gen_s = started.elapsed().as_secs_f64();
    drop(db);
    // Sizes, from a fresh reader on the finished file.
    let c = rusqlite_sizes(&args[2])?;
    let file = std::fs::metadata(&args[2])?.len();
    let per_cpu_day = file as f64 / f64::from(cpus) / (hours as f64 / 24.0) / 1e6;
    println!("generated {hours} h, {cpus} CPUs, {samples_total} samples in {gen_s:.1} s");
    println!("database file: {file} bytes = {per_cpu_day:.2} MB per CPU per 24 h (target <= 5)");
    println!(
        "  sample blobs {} B ({:.2} B/sample), stacks+frames {} B, metric blocks {} B ({:.2} B/value)",
        c.0,
        c.0 as f64 / samples_total as f64,
        c.1,
        c.2,
        c.2 as f64 / (hours * 3600 * names.len() as i64) as f64
    );
    println!("whole file per sample: {:.2} B", file as f64 / samples_total as f64);
    let db = Sqlite::open(&args[2], OpenMode::Read)?;
    let best = |f: &dyn Fn() -> u64| {
        let mut best = f64::MAX;
        let mut n = 0;
        for _ in 0..3 {
            let t = Instant::now();
            n = f();
            best = best.min(t.elapsed().as_secs_f64() * 1000.0);
        }
        (best, n)
    };
    let mid = T0 + hours * 3600 * SEC / 2;
    let (ms, n) = best(&|| {
        db.profile(&ProfileQuery::new(Kind::Cpu, mid, mid + 3600 * SEC)).map(|p| p.samples).unwrap_or(0)
    });
    println!("query merged profile 1 h: {ms:.1} ms ({n} samples; target <= 50 ms)");
    let (ms, n) = best(&|| {
        db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + hours * 3600 * SEC)).map(|p| p.samples).unwrap_or(0)
    });
    println!("query merged profile {hours} h: {ms:.1} ms ({n} samples; target <= 500 ms)");
    let (ms, n) = best(&|| {
        let q = SeriesQuery {
            name: "cpu.usr",
            label: Some(""),
            host: None,
            from_ns: T0,
            to_ns: T0 + hours * 3600 * SEC,
            points: None,
        };
        db.series(&q).map(|s| s[0].points.len() as u64).unwrap_or(0)
    });
    println!("query one metric {hours} h at 1 s: {ms:.1} ms ({n} values; target <= 50 ms)");
    Ok(())
}

/// Bytes of sample blobs, of stack and frame records, of metric blocks.
fn rusqlite_sizes(path: &str) -> Result<(i64, i64, i64), Box<dyn std::error::Error>> {
    let c = rusqlite::Connection::open(path)?;
    let blobs: i64 = c.query_row("SELECT coalesce(sum(length(data)), 0) FROM buckets", [], |r| r.get(0))?;
    let stacks: i64 = c.query_row(
        "SELECT (SELECT coalesce(sum(length(frames)) + 8 * count(*), 0) FROM stacks) + (SELECT coalesce(sum(length(name)), 0) FROM frames)",
        [],
        |r| r.get(0),
    )?;
    let metrics: i64 =
        c.query_row("SELECT coalesce(sum(length(data)), 0) FROM metric_blocks", [], |r| r.get(0))?;
    Ok((blobs, stacks, metrics))
}
