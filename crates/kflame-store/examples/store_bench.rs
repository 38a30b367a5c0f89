//! Generates a history of default watching from real stacks and measures its size and
//! query times (see `bench/store.sh`).
//!
//! `store_bench FOLDED[.zst] SAMPLES[.zst] METRICS[.zst] DB [HOURS]`, as the watcher writes:
//! 10 s buckets, metric blocks of one bucket.
//!
//! - SAMPLES: a real 19 Hz sample stream, lines `CPU TIME_NS STACK` (bench/data/README.md):
//!   the times and CPUs are replayed as recorded, tiled over HOURS; each distinct STACK of a
//!   tile is given a stack drawn (weighted by its count, deterministically) from FOLDED,
//!   whose first frame may be `comm-PID` (kflame collapse --pid), afresh for every tile.
//! - METRICS: real metric values read at 1 Hz, lines `TIME_NS NAME LABEL VALUE` (an empty
//!   label as `-`), replayed as recorded and tiled over HOURS.

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
    if args.len() < 5 {
        return Err("usage: store_bench FOLDED[.zst] SAMPLES[.zst] METRICS[.zst] DB [HOURS]".into());
    }
    let hours: i64 = args.get(5).map_or(Ok(24), |s| s.parse())?;
    if std::env::var_os("STORE_BENCH_QUERY_ONLY").is_some() {
        let db = Sqlite::open(&args[4], OpenMode::Read)?;
        // STORE_BENCH_QUERY_ONLY=FROM_H:TO_H queries that range (hours from the start).
        let (a, b) = std::env::var("STORE_BENCH_QUERY_ONLY")
            .ok()
            .and_then(|r| {
                let (a, b) = r.split_once(':')?;
                Some((a.parse::<f64>().ok()?, b.parse::<f64>().ok()?))
            })
            .unwrap_or((0.0, hours as f64));
        let (from, to) = (T0 + (a * 3600e9) as i64, T0 + (b * 3600e9) as i64);
        let t = Instant::now();
        for _ in 0..5 {
            db.profile(&ProfileQuery::new(Kind::Cpu, from, to))?;
        }
        println!("5 queries of {a} h to {b} h: {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
        return Ok(());
    }
    let raw = read_all(&args[1])?;
    let (stream, stream_ns, cpus) = sample_stream(&read_all(&args[2])?)?;
    let (readings, readings_ns) = metric_stream(&read_all(&args[3])?)?;
    let db_path = &args[4];
    // Stacks without the pid (the store keeps the command, not the process id), and their
    // cumulative counts.
    let mut stacks: Vec<Vec<u8>> = Vec::new();
    let mut cumulative: Vec<u64> = Vec::new();
    let mut total = 0u64;
    for line in raw.split(|&b| b == b'\n') {
        let Some(sp) = line.iter().rposition(|&b| b == b' ') else { continue };
        let Ok(n) = std::str::from_utf8(&line[sp + 1..]).unwrap_or("").parse::<u64>() else { continue };
        let stack = &line[..sp];
        let first_end = stack.iter().position(|&b| b == b';').unwrap_or(stack.len());
        let first = &stack[..first_end];
        let comm = match first.iter().rposition(|&b| b == b'-') {
            Some(d) if first[d + 1..].iter().all(u8::is_ascii_digit) && d + 1 < first.len() => &first[..d],
            _ => first,
        };
        let mut text = comm.to_vec();
        text.extend_from_slice(&stack[first_end..]);
        // Sample counts: a perf period file counts each sample as its period.
        total += n.div_ceil(1_000_000).max(1);
        stacks.push(text);
        cumulative.push(total);
    }
    println!("stacks in the input: {} (weight {total})", stacks.len());
    println!(
        "sample stream: {} samples on {cpus} CPUs over {:.1} s; metrics: {} reads over {:.1} s",
        stream.len(),
        stream_ns as f64 / 1e9,
        readings.len(),
        readings_ns as f64 / 1e9
    );
    let _ = std::fs::remove_file(db_path);
    let mut db = Sqlite::open(db_path, OpenMode::Write)?;
    let bucket = 10 * SEC;
    // As `kflame watch`: metric values are buffered for one bucket.
    db.set_metric_block(bucket);
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    let mut samples_total = 0u64;
    let mut values_total = 0u64;
    let end_all = T0 + hours * 3600 * SEC;
    // The stream of samples, tiled: (tile, index in the stream).
    let mut next = (0i64, 0usize);
    let mut tile_stacks: Vec<usize> = Vec::new();
    let mut next_read = (0i64, 0usize);
    let buckets = hours * 3600 * SEC / bucket;
    let mut these: Vec<(i64, u32, usize)> = Vec::new();
    let mut m: Vec<Metric<'_>> = Vec::new();
    for b in 0..buckets {
        let start = T0 + b * bucket;
        let end = start + bucket;
        these.clear();
        loop {
            let (tile, i) = next;
            let (cpu, dt, real) = stream[i];
            let t = T0 + tile * stream_ns + dt;
            if t >= end {
                break;
            }
            if i == 0 {
                tile_stacks.clear();
            }
            while tile_stacks.len() <= real {
                let r = rng.next() % total;
                tile_stacks.push(cumulative.partition_point(|&c| c <= r));
            }
            these.push((t, cpu, tile_stacks[real]));
            next = if i + 1 == stream.len() { (tile + 1, 0) } else { (tile, i + 1) };
        }
        let samples: Vec<Sample<'_>> = these
            .iter()
            .map(|&(t, cpu, i)| Sample {
                time_ns: t,
                cpu,
                cgroup: None,
                stack: &stacks[i],
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
        loop {
            let (tile, i) = next_read;
            let (dt, values) = &readings[i];
            let t = T0 + tile * readings_ns + dt;
            if t >= end || t >= end_all {
                break;
            }
            m.clear();
            m.extend(values.iter().map(|(n, l, v)| Metric { name: n, label: l, value: *v }));
            values_total += m.len() as u64;
            db.append_metrics("bench", t, &m)?;
            next_read = if i + 1 == readings.len() { (tile + 1, 0) } else { (tile, i + 1) };
        }
    }
    db.flush()?;
    // As the watcher's maintenance every minute would have done by the end: the closed
    // hours compacted (no retention, downsampling or budget).
    // Each run compacts for a bounded time: run it until nothing is left.
    let mut compacted = 0;
    loop {
        let m = db.maintain(&Policy::new(end_all + 3600 * SEC))?;
        compacted += m.compacted_buckets;
        if m.compacted_buckets == 0 {
            break;
        }
    }
    println!("maintenance: {compacted} buckets compacted");
    let gen_s = started.elapsed().as_secs_f64();
    drop(db);
    // Sizes, from a fresh reader on the finished file.
    let c = rusqlite_sizes(db_path)?;
    let file = std::fs::metadata(db_path)?.len();
    let per_cpu_day = file as f64 / f64::from(cpus) / (hours as f64 / 24.0) / 1e6;
    println!("generated {hours} h, {cpus} CPUs, {samples_total} samples in {gen_s:.1} s");
    println!("database file: {file} bytes = {per_cpu_day:.2} MB per CPU per 24 h (target <= 5)");
    println!(
        "  sample blobs {} B ({:.2} B/sample), stacks+frames {} B, metric rows {} B ({:.2} B/value)",
        c.0,
        c.0 as f64 / samples_total as f64,
        c.1,
        c.2,
        c.2 as f64 / values_total as f64
    );
    println!("whole file per sample: {:.2} B", file as f64 / samples_total as f64);
    println!("metric values: {values_total}");
    if std::env::var_os("STORE_BENCH_DOWNSAMPLE").is_some() {
        // The day a day later, as the watcher keeps it: downsampled after 24 h.
        let mut db = Sqlite::open(db_path, OpenMode::Write)?;
        let mut p = Policy::new(end_all + 24 * 3600 * SEC);
        p.downsample_after_ns = Some(24 * 3600 * SEC);
        let m = db.maintain(&p)?;
        drop(db);
        let file = std::fs::metadata(db_path)?.len();
        println!(
            "downsampled: {} buckets, file {file} bytes = {:.2} MB per CPU per 24 h",
            m.downsampled_buckets,
            file as f64 / f64::from(cpus) / (hours as f64 / 24.0) / 1e6
        );
    }
    let db = Sqlite::open(db_path, OpenMode::Read)?;
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
    // The same length across two hours, as a brush in the web UI may select it.
    let half = mid + 1800 * SEC;
    let (ms, n) = best(&|| {
        db.profile(&ProfileQuery::new(Kind::Cpu, half, half + 3600 * SEC)).map(|p| p.samples).unwrap_or(0)
    });
    println!("query merged profile 1 h across two hours: {ms:.1} ms ({n} samples; target <= 50 ms)");
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

/// A file's bytes, zstd-decompressed when its name ends in `.zst`.
fn read_all(path: &str) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut raw = Vec::new();
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    if path.ends_with(".zst") {
        zstd::stream::read::Decoder::new(f)?.read_to_end(&mut raw)?;
    } else {
        std::io::BufReader::new(f).read_to_end(&mut raw)?;
    }
    Ok(raw)
}

/// The sample stream: (cpu, time from the first sample, stack index), its length (the last
/// time plus one mean period of a CPU), and the number of CPUs.
type Stream = (Vec<(u32, i64, usize)>, i64, u32);

fn sample_stream(raw: &[u8]) -> Result<Stream, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for (n, line) in std::str::from_utf8(raw)?.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [cpu, t, s] = f[..] else {
            return Err(format!("sample stream line {}: 3 fields expected", n + 1).into());
        };
        out.push((cpu.parse::<u32>()?, t.parse::<i64>()?, s.parse::<usize>()?));
    }
    out.sort_by_key(|s| s.1);
    let cpus = out.iter().map(|s| s.0).max().ok_or("empty sample stream")? + 1;
    let last = out.last().map_or(0, |s| s.1);
    let period = last / (out.len() as i64 / i64::from(cpus)).max(1);
    Ok((out, last + period, cpus))
}

/// The metric reads: (time from the first read, values), and the length of the recording
/// (the last time plus one mean interval).
type Reads = (Vec<Reading>, i64);

/// One read: its time and (name, label, value)s.
type Reading = (i64, Vec<(String, String, f64)>);

fn metric_stream(raw: &[u8]) -> Result<Reads, Box<dyn std::error::Error>> {
    let mut out: Vec<Reading> = Vec::new();
    for (n, line) in std::str::from_utf8(raw)?.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [t, name, label, v] = f[..] else {
            return Err(format!("metric stream line {}: 4 fields expected", n + 1).into());
        };
        let t: i64 = t.parse()?;
        let label = if label == "-" { "" } else { label };
        if out.last().is_none_or(|r| r.0 != t) {
            out.push((t, Vec::new()));
        }
        if let Some(r) = out.last_mut() {
            r.1.push((name.to_string(), label.to_string(), v.parse()?));
        }
    }
    let last = out.last().ok_or("empty metric stream")?.0;
    let step = last / (out.len() as i64 - 1).max(1);
    Ok((out, last + step))
}

/// Bytes of sample blobs, of stack and frame chunks, of metric rows.
fn rusqlite_sizes(path: &str) -> Result<(i64, i64, i64), Box<dyn std::error::Error>> {
    let c = rusqlite::Connection::open(path)?;
    let blobs: i64 = c.query_row("SELECT coalesce(sum(length(data)), 0) FROM buckets", [], |r| r.get(0))?;
    let stacks: i64 = c.query_row(
        "SELECT (SELECT coalesce(sum(length(data)), 0) FROM stack_chunks) + (SELECT coalesce(sum(length(data)), 0) FROM frame_chunks)",
        [],
        |r| r.get(0),
    )?;
    // Rows of one series (schema 3 and older) and of one host (schema 4).
    let metrics: i64 = c.query_row(
        "SELECT (SELECT coalesce(sum(length(data)), 0) FROM metric_blocks)
              + (SELECT coalesce(sum(length(data)), 0) FROM metric_spans)",
        [],
        |r| r.get(0),
    )?;
    Ok((blobs, stacks, metrics))
}
