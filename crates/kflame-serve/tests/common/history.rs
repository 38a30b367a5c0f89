//! A history database written through the store's own API from real stacks (a real
//! system-wide capture, see crates/kflame/tests/data/render/README.md), for the server's
//! tests, the browser tests and the benchmark. Metric values follow a fixed pattern (a
//! slow wave with a burst), so every figure a test checks is computed from what was
//! written here.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;

use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{
    Bucket, CaptureStart, Histogram, Kind, LatencyKind, LatencyRow, Metric, OpenMode, Sample, Sqlite, Store,
    StoreError, StoredReport, TriggerFired,
};

/// The history starts here (UTC ns): 2025-11-24T16:00:00Z.
pub const T0: i64 = 1_764_000_000_000_000_000;
/// One second in ns.
pub const SEC: i64 = 1_000_000_000;
/// Samples per second on each CPU.
pub const HZ: i64 = 19;
/// CPUs sampled.
pub const CPUS: u32 = 2;
/// Buckets are this long.
pub const BUCKET: i64 = 10 * SEC;
/// A comm and a frame that a page must show as text, never as markup.
pub const HOSTILE_STACK: &[u8] = b"<img src=x onerror=alert(1)>;\"'><script>alert(2)</script>;leaf&amp;";
/// A report title that must be shown as text.
pub const HOSTILE_TITLE: &str = "WARNING: <script>alert(3)</script> at <b>kernel/x.c</b>";

const FOLDED: &str = include_str!("../../../kflame/tests/data/render/perf-sys-cpuclock.folded");

/// The capture's stacks, one entry per sample, in file order.
pub fn real_stacks() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in FOLDED.lines().filter(|l| !l.is_empty()) {
        let Some((stack, n)) = line.rsplit_once(' ') else { continue };
        let n: usize = n.parse().unwrap_or(0);
        for _ in 0..n {
            out.push(stack.as_bytes().to_vec());
        }
    }
    out
}

/// One written sample.
#[derive(Clone, Debug)]
pub struct Written {
    /// UTC ns.
    pub time_ns: i64,
    /// CPU.
    pub cpu: u32,
    /// Stack.
    pub stack: Vec<u8>,
}

/// The samples of second `s` (relative to T0): `HZ` a second on each CPU, with a burst of
/// four times as many in the first 100 ms of every 10th second on CPU 0 (what a heat map
/// shows and a per-minute chart averages away). Stacks are drawn in turn from `stacks`;
/// every 97th is the hostile one.
pub fn second_samples(stacks: &[Vec<u8>], s: i64, k: &mut usize, out: &mut Vec<Written>) {
    for cpu in 0..CPUS {
        let mut times: Vec<i64> = (0..HZ).map(|i| i * SEC / HZ + i64::from(cpu) * 7_000_000).collect();
        if cpu == 0 && s % 10 == 3 {
            times.extend((0..3 * HZ).map(|i| i * 100_000_000 / (3 * HZ) + 1_000));
        }
        for t in times {
            let stack = if (*k).is_multiple_of(97) {
                HOSTILE_STACK.to_vec()
            } else {
                stacks[*k % stacks.len()].clone()
            };
            *k += 1;
            out.push(Written { time_ns: T0 + s * SEC + t, cpu, stack });
        }
    }
}

/// The metric values of second `s`: CPU shares (percent) per CPU and in total, memory,
/// IO and PSI.
pub fn metrics_of(s: i64) -> Vec<(String, String, f64)> {
    let wave = ((s as f64) / 300.0 * std::f64::consts::TAU).sin();
    let burst = if s % 600 < 30 { 35.0 } else { 0.0 };
    let mut m = Vec::new();
    for (label, skew) in [("", 0.0), ("cpu0", 5.0), ("cpu1", -5.0)] {
        let usr = 30.0 + 15.0 * wave + burst + skew;
        let sys = 10.0 + 3.0 * wave + skew / 2.0;
        for (name, v) in [
            ("cpu.usr", usr),
            ("cpu.sys", sys),
            ("cpu.iowait", 4.0 + 2.0 * wave),
            ("cpu.irq", 0.5),
            ("cpu.softirq", 1.5),
            ("cpu.steal", 0.2),
        ] {
            m.push((name.to_string(), label.to_string(), v.max(0.0)));
        }
    }
    m.push(("mem.used".into(), String::new(), 8e9 + 1e9 * wave));
    m.push(("mem.available_bytes".into(), String::new(), 16e9 - 1e9 * wave));
    m.push(("io.read_bytes".into(), "sda".into(), 2e6 + 1e6 * wave.abs() + burst * 1e5));
    m.push(("io.write_bytes".into(), "sda".into(), 5e5 + 4e5 * wave.abs()));
    m.push(("io.util".into(), "sda".into(), 20.0 + 10.0 * wave));
    m.push(("psi.cpu.some".into(), String::new(), (5.0 + 4.0 * wave + burst / 5.0).max(0.0)));
    m
}

/// The stack of the slow write [`write`] keeps every tenth second.
pub const OUTLIER_STACK: &str =
    "write;testapp;main;save_file;entry_SYSCALL_64;ksys_write;ext4_sync_file;submit_bio_wait";

/// The latency histograms of second `s` of [`write`]: `write` calls (ten of 2 µs to 20 µs,
/// and in every tenth second one of 50 ms) and CPU 0's run queue (one wait of 1 ms).
pub fn latency_of(s: i64) -> (Histogram, Histogram) {
    let mut write = Histogram::default();
    for i in 0..10u64 {
        write.record(2_000 * (i + 1));
    }
    if s % 10 == 9 {
        write.record(50_000_000);
    }
    let mut cpu0 = Histogram::default();
    cpu0.record(1_000_000);
    (write, cpu0)
}

/// What [`write`] wrote, for the tests to compute expectations from.
#[derive(Debug, Default)]
pub struct History {
    /// Every always-on CPU sample.
    pub samples: Vec<Written>,
    /// The capture's samples.
    pub capture: Vec<Written>,
    /// The capture's id.
    pub capture_id: i64,
    /// When the trigger fired.
    pub trigger_ns: i64,
    /// When the report was logged.
    pub report_ns: i64,
}

/// Writes `seconds` of history to `path` (created); with `keep`, the samples are returned.
pub fn write(path: &Path, seconds: i64, keep: bool) -> Result<History, StoreError> {
    let mut db = Sqlite::open(path, OpenMode::Write)?;
    let meta = Meta::with_unit(Unit::Samples);
    let stacks = real_stacks();
    let mut hist = History::default();
    let mut k = 0usize;
    let mut bucket: Vec<Written> = Vec::new();
    let host = "testhost";
    for s in 0..seconds {
        let ms = metrics_of(s);
        let metrics: Vec<Metric<'_>> =
            ms.iter().map(|(n, l, v)| Metric { name: n, label: l, value: *v }).collect();
        db.append_metrics(host, T0 + s * SEC, &metrics)?;
        let (write, cpu0) = latency_of(s);
        let rows = [
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "",
                histogram: &write,
                slow: u64::from(s % 10 == 9),
                span_ms: 1000,
            },
            LatencyRow {
                kind: LatencyKind::Syscall,
                label: "write",
                histogram: &write,
                slow: u64::from(s % 10 == 9),
                span_ms: 1000,
            },
            LatencyRow { kind: LatencyKind::Runq, label: "cpu0", histogram: &cpu0, slow: 0, span_ms: 1000 },
        ];
        db.append_latency(host, T0 + s * SEC + SEC - 1_000_000, &rows)?;
        if s % 10 == 9 {
            // The slow write of the second, kept with its stacks.
            let frames: Vec<Vec<u8>> = OUTLIER_STACK.split(';').map(|f| f.as_bytes().to_vec()).collect();
            let o = kflame::events::EventRecord {
                kind: kflame::events::EventKind::Syscall,
                ts_ns: Some((T0 + s * SEC + SEC / 2) as u64),
                duration_ns: Some(50_000_000),
                cpu: 1,
                pid: Some(4242),
                tid: Some(4243),
                comm: Some("testapp"),
                event: "syscall:write",
                weight: 50_000_000,
                stack: kflame::events::Frames::Owned(&frames),
            };
            db.append_outliers(host, LatencyKind::Syscall, &[o])?;
        }
        second_samples(&stacks, s, &mut k, &mut bucket);
        if (s + 1) * SEC % BUCKET == 0 || s + 1 == seconds {
            let start = T0 + (s * SEC / BUCKET) * BUCKET;
            append(&mut db, host, Kind::Cpu, start, start + BUCKET, None, &meta, &bucket)?;
            if keep {
                hist.samples.append(&mut bucket);
            }
            bucket.clear();
        }
    }
    // A trigger at 60 s that starts a 10 s CPU capture, and a kernel report at 120 s.
    if seconds > 130 {
        hist.trigger_ns = T0 + 60 * SEC;
        let trig = db.append_trigger(&TriggerFired {
            host,
            time_ns: hist.trigger_ns,
            rule: "cpu > 60% for 5s => cpu 10s",
            metric: "cpu",
            value: 65.0,
            threshold: 60.0,
        })?;
        let cap = db.begin_capture(&CaptureStart {
            host,
            kind: Kind::Cpu,
            start_ns: hist.trigger_ns,
            trigger: Some(trig),
            meta: &meta,
        })?;
        hist.capture_id = cap.0;
        let mut cap_samples = Vec::new();
        let mut kc = 5usize;
        for s in 60..70 {
            second_samples(&stacks[..40], s, &mut kc, &mut cap_samples);
        }
        append(&mut db, host, Kind::Cpu, T0 + 60 * SEC, T0 + 70 * SEC, Some(cap), &meta, &cap_samples)?;
        db.end_capture(cap, T0 + 70 * SEC, "done")?;
        hist.capture = cap_samples;
        hist.report_ns = T0 + 120 * SEC;
        db.append_report(&StoredReport {
            host,
            time_ns: hist.report_ns,
            kind: "warning",
            title: HOSTILE_TITLE,
            stack: "ret_from_fork;kthread;worker_thread;process_one_work;<b>bad_work_fn</b>",
            text: "------------[ cut here ]------------\nWARNING: CPU: 1 PID: 42 at kernel/x.c:10 \
                   <b>bad_work_fn</b>+0x10/0x20\n<script>alert(4)</script>\n---[ end trace ]---",
        })?;
    }
    db.flush()?;
    Ok(hist)
}

/// The hosts of [`write_fleet`], and the labels a fleet's store would keep for them.
pub const FLEET: [(&str, &str); 3] =
    [("db-1", "role=db,zone=a"), ("db-2", "role=db,zone=b"), ("web-1", "role=web,zone=a")];
/// A frame only `web-1` runs (in every fifth of its samples), under the comm `nginx`.
pub const WEB_FRAME: &str = "ngx_http_process_request";

/// What [`write_fleet`] wrote: each host's samples.
#[derive(Debug, Default)]
pub struct Fleet {
    /// (host, its always-on CPU samples), in the order of [`FLEET`].
    pub hosts: Vec<(String, Vec<Written>)>,
    /// When `db-2`'s trigger fired and `web-1`'s report was logged.
    pub trigger_ns: i64,
    /// See `trigger_ns`.
    pub report_ns: i64,
}

/// Writes `seconds` of history of the three hosts of [`FLEET`] to `path` (created), as a
/// fleet's store holds them: each host its own mix of the real stacks and its own amount
/// (`db-1` every sample of [`second_samples`], `db-2` two thirds, `web-1` one third, a fifth
/// of those in [`WEB_FRAME`]), its own metric values (the pattern of [`metrics_of`] shifted by
/// 10 % a host), a trigger on `db-2` and a kernel report on `web-1`.
pub fn write_fleet(path: &Path, seconds: i64) -> Result<Fleet, StoreError> {
    let mut db = Sqlite::open(path, OpenMode::Write)?;
    let meta = Meta::with_unit(Unit::Samples);
    let stacks = real_stacks();
    let web_stack = format!("nginx;entry_SYSCALL_64;do_syscall_64;{WEB_FRAME};tcp_sendmsg").into_bytes();
    let mut fleet = Fleet::default();
    for (i, (host, _)) in FLEET.iter().enumerate() {
        let mut k = i * 7919;
        let mut kept = Vec::new();
        let mut bucket: Vec<Written> = Vec::new();
        for s in 0..seconds {
            let ms = metrics_of(s);
            let metrics: Vec<Metric<'_>> = ms
                .iter()
                .map(|(n, l, v)| Metric { name: n, label: l, value: *v * (1.0 + 0.1 * i as f64) })
                .collect();
            db.append_metrics(host, T0 + s * SEC, &metrics)?;
            let mut all = Vec::new();
            second_samples(&stacks, s, &mut k, &mut all);
            for (n, mut w) in all.into_iter().enumerate() {
                if n % 3 < i {
                    continue;
                }
                if i == 2 && n % 5 == 0 {
                    w.stack = web_stack.clone();
                }
                bucket.push(w);
            }
            if (s + 1) * SEC % BUCKET == 0 || s + 1 == seconds {
                let start = T0 + (s * SEC / BUCKET) * BUCKET;
                append(&mut db, host, Kind::Cpu, start, start + BUCKET, None, &meta, &bucket)?;
                kept.append(&mut bucket);
            }
        }
        fleet.hosts.push((host.to_string(), kept));
    }
    fleet.trigger_ns = T0 + 20 * SEC;
    db.append_trigger(&TriggerFired {
        host: "db-2",
        time_ns: fleet.trigger_ns,
        rule: "cpu > 60% for 5s => cpu 10s",
        metric: "cpu",
        value: 65.0,
        threshold: 60.0,
    })?;
    fleet.report_ns = T0 + 40 * SEC;
    db.append_report(&StoredReport {
        host: "web-1",
        time_ns: fleet.report_ns,
        kind: "warning",
        title: "WARNING: <i>web-1</i> at net/x.c",
        stack: "ret_from_fork;kthread;<b>net_rx</b>",
        text: "WARNING: <script>alert(5)</script>",
    })?;
    db.flush()?;
    Ok(fleet)
}

/// Goes on writing the history [`write`] wrote to `path`, as a running watcher does: second
/// `from_s` to `to_s` (relative to T0), one second of history every `pace` of wall time,
/// metrics flushed each second, a bucket at each bucket's end.
pub fn follow(path: &Path, from_s: i64, to_s: i64, pace: std::time::Duration) -> Result<(), StoreError> {
    let mut db = Sqlite::open(path, OpenMode::Write)?;
    // Metric blocks of one bucket, as `kflame watch` writes them.
    db.set_metric_block(BUCKET);
    let meta = Meta::with_unit(Unit::Samples);
    let stacks = real_stacks();
    let mut k = 0usize;
    let mut bucket: Vec<Written> = Vec::new();
    let host = "testhost";
    for s in from_s..to_s {
        let ms = metrics_of(s);
        let metrics: Vec<Metric<'_>> =
            ms.iter().map(|(n, l, v)| Metric { name: n, label: l, value: *v }).collect();
        db.append_metrics(host, T0 + s * SEC, &metrics)?;
        second_samples(&stacks, s, &mut k, &mut bucket);
        if (s + 1) * SEC % BUCKET == 0 || s + 1 == to_s {
            let start = T0 + (s * SEC / BUCKET) * BUCKET;
            append(&mut db, host, Kind::Cpu, start, start + BUCKET, None, &meta, &bucket)?;
            bucket.clear();
        }
        db.flush()?;
        std::thread::sleep(pace);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn append(
    db: &mut Sqlite,
    host: &str,
    kind: Kind,
    start: i64,
    end: i64,
    capture: Option<kflame_store::CaptureId>,
    meta: &Meta,
    samples: &[Written],
) -> Result<(), StoreError> {
    let these: Vec<Sample<'_>> = samples
        .iter()
        .map(|w| Sample {
            time_ns: w.time_ns,
            cpu: w.cpu,
            cgroup: None,
            stack: &w.stack,
            weight: Weight::from_u64(1),
        })
        .collect();
    db.append_bucket(&Bucket {
        host,
        kind,
        start_ns: start,
        end_ns: end,
        capture,
        meta,
        samples: &these,
        aggregated: &[],
    })
}

/// A real kernel WARNING (KernelCI's boot log, `crates/kflame/tests/data/kernel-log/kmsg/`:
/// `apply_returns` on 5.10.219-rc1) stored twice beside [`write`]'s history, as reports of
/// one bug on two hosts: its text and when each was stored.
#[derive(Debug)]
pub struct Similar {
    pub warning: String,
    pub earlier_ns: i64,
    pub warning_ns: i64,
}

/// Adds the reports of [`Similar`] to the history at `path` (written by [`write`]).
pub fn add_similar_reports(path: &Path) -> Result<Similar, StoreError> {
    let kmsg = include_str!("../../../kflame/tests/data/kernel-log/kmsg/kernelci-boot-005.kmsg.txt");
    let lines: Vec<&str> = kmsg.lines().collect();
    // From the `WARNING:` line to `---[ end trace`, each record's message, as the watcher
    // stores a report's text.
    let start = lines.iter().position(|l| l.contains(";WARNING: CPU:")).expect("WARNING");
    let end = lines.iter().position(|l| l.contains(";---[ end trace")).expect("end trace");
    let warning: Vec<&str> =
        lines[start..=end].iter().filter_map(|l| l.split_once(';').map(|(_, m)| m)).collect();
    let warning = warning.join("\n");
    let similar = Similar { warning, earlier_ns: T0 + 90 * SEC, warning_ns: T0 + 150 * SEC };
    let mut db = Sqlite::open(path, OpenMode::Write)?;
    for (host, time_ns) in [("otherhost", similar.earlier_ns), ("testhost", similar.warning_ns)] {
        db.append_report(&StoredReport {
            host,
            time_ns,
            kind: "warning",
            title: "WARNING in apply_returns",
            stack: "secondary_startup_64_no_verify;start_kernel;arch_cpu_finalize_init;alternative_instructions",
            text: &similar.warning,
        })?;
    }
    db.flush()?;
    Ok(similar)
}

/// The log of a syzkaller corpus file: after its `KEY: value` header lines, before its
/// `REPORT:` section.
fn corpus_log(data: &str) -> &str {
    let mut rest = data;
    while let Some((line, after)) = rest.split_once('\n') {
        let key = line.split(':').next().unwrap_or("");
        let header = line.starts_with('#')
            || (!key.is_empty()
                && line.contains(':')
                && key.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
        if line.is_empty() {
            rest = after;
            break;
        }
        if !header {
            break;
        }
        rest = after;
    }
    rest.find("\n\nREPORT:\n").map_or(rest, |i| &rest[..=i])
}

/// Adds every report of syzkaller's corpus in `dir` (real reports of many bugs), `rounds`
/// times over, to the history at `path`, spread evenly over its time span and its hosts, as
/// the watcher stores reports (kind, title and stack from the extractor, the log as text).
/// Returns how many were stored.
pub fn add_corpus_reports(path: &Path, dir: &Path, rounds: usize) -> Result<usize, String> {
    use kflame_store::Query;
    let mut logs = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    for p in names {
        let data = String::from_utf8_lossy(&std::fs::read(&p).map_err(|e| e.to_string())?).into_owned();
        let log = corpus_log(&data).to_string();
        if let Some(r) = kflame::report::ReportExtractor::extract_all(log.as_bytes()).into_iter().next() {
            let stack: Vec<&str> = r.frames.iter().rev().map(|f| f.function.as_str()).collect();
            logs.push((r.kind().name().to_string(), r.title.clone(), stack.join(";"), log));
        }
    }
    let (hosts, (lo, hi)) = {
        let q = Sqlite::open(path, OpenMode::Read).map_err(|e| e.to_string())?;
        let bounds = q.time_bounds().map_err(|e| e.to_string())?.ok_or("the history is empty")?;
        (q.hosts().map_err(|e| e.to_string())?, bounds)
    };
    let n = logs.len() * rounds;
    let step = ((hi - lo) / (n as i64 + 1)).max(1);
    let mut db = Sqlite::open(path, OpenMode::Write).map_err(|e| e.to_string())?;
    for k in 0..n {
        let (kind, title, stack, text) = &logs[k % logs.len()];
        let host = &hosts[k % hosts.len().max(1)];
        db.append_report(&StoredReport {
            host,
            time_ns: lo + step * (k as i64 + 1),
            kind,
            title,
            stack,
            text,
        })
        .map_err(|e| e.to_string())?;
    }
    db.flush().map_err(|e| e.to_string())?;
    Ok(n)
}
