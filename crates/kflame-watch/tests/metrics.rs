//! The `/proc` metrics on real captures (`tests/data/proc`, see its README): exact against
//! the figures computed by hand from the same two reads, and close to what mpstat and iostat
//! showed for the same second.

use std::path::{Path, PathBuf};

use kflame_watch::metrics::{Options, Reading, Sampler};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc").join(rel)
}

fn two_reads(dir: &str) -> (Reading, Reading) {
    let mut s = Sampler::new(data(dir).join("a"), Options::default());
    let first = s.read();
    s.set_root(data(dir).join("b"));
    (first, s.read())
}

fn close(got: Option<f64>, want: f64, tol: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: not reported"));
    assert!((got - want).abs() <= tol, "{what}: got {got}, want {want} ± {tol}");
}

/// `expected.sh busy` output, parsed: `KEY=VALUE` per line prefix.
fn expected(dir: &str) -> Vec<(String, String, f64)> {
    let text = std::fs::read_to_string(data("README.md")).unwrap();
    let block = text.split("```text\n").nth(1).unwrap().split("```").next().unwrap();
    assert!(!dir.is_empty());
    let mut out = Vec::new();
    for line in block.lines() {
        let mut f = line.split_whitespace();
        let first = f.next().unwrap();
        let (label, rest): (&str, Vec<&str>) = match first.contains('=') {
            true => ("", std::iter::once(first).chain(f).collect()),
            false => (first, f.collect()),
        };
        for kv in rest {
            let (k, v) = kv.split_once('=').unwrap();
            out.push((label.to_string(), k.to_string(), v.parse().unwrap()));
        }
    }
    out
}

#[test]
fn first_read_has_no_rates_but_instant_values() {
    let (first, _) = two_reads("busy");
    assert!(first.problems.is_empty(), "{:?}", first.problems);
    assert_eq!(first.get("cpu.usr", ""), None);
    assert_eq!(first.get("io.util", "vda"), None);
    assert!(first.get("mem.available", "").is_some_and(|v| v > 0.0 && v <= 100.0));
    assert!(first.get("load1", "").is_some());
    assert!(first.get("psi.io.some", "").is_some());
}

#[test]
fn figures_equal_the_hand_computed_ones() {
    let (_, r) = two_reads("busy");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let map = |k: &str| match k {
        "usr" | "nice" | "sys" | "iowait" | "irq" | "soft" | "steal" | "idle" => format!("cpu.{k}"),
        "ctxt" | "forks" => k.to_string(),
        "rB/s" => "io.read_bytes".into(),
        "wB/s" => "io.write_bytes".into(),
        "r/s" => "io.reads".into(),
        "w/s" => "io.writes".into(),
        "util" => "io.util".into(),
        "r_await" => "io.r_await".into(),
        "w_await" => "io.w_await".into(),
        "aqu" => "io.queue".into(),
        _ => String::new(),
    };
    let mut checked = 0;
    for (label, key, want) in expected("busy") {
        let name = map(&key);
        if name.is_empty() {
            continue;
        }
        let label = if label == "cpu" { String::new() } else { label };
        close(r.get(&name, &label), want, 1e-5 + want.abs() * 1e-9, &format!("{name}[{label}]"));
        checked += 1;
    }
    assert_eq!(checked, 3 * 8 + 2 + 8);
    // busy = 100 - idle - iowait
    let busy = 100.0 - r.get("cpu.idle", "").unwrap() - r.get("cpu.iowait", "").unwrap();
    close(r.get("cpu", ""), busy, 1e-9, "cpu");
    // only the whole disk: no loop devices, no never-used zram
    let devices: std::collections::BTreeSet<&str> =
        r.values.iter().filter(|v| v.name.starts_with("io.")).map(|v| v.label.as_str()).collect();
    assert_eq!(devices.into_iter().collect::<Vec<_>>(), ["vda"]);
}

#[test]
fn figures_agree_with_mpstat_and_iostat() {
    let (_, r) = two_reads("busy");
    let mp = std::fs::read_to_string(data("busy.mpstat.txt")).unwrap();
    let cols = ["cpu.usr", "cpu.nice", "cpu.sys", "cpu.iowait", "cpu.irq", "cpu.soft", "cpu.steal"];
    let mut rows = 0;
    for line in mp.lines().filter(|l| l.starts_with("Average:")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let label = match f[1] {
            "CPU" => continue,
            "all" => String::new(),
            n => format!("cpu{n}"),
        };
        for (i, name) in cols.iter().enumerate() {
            // mpstat's second starts a few ms from ours: a few points of difference at most
            close(r.get(name, &label), f[2 + i].parse().unwrap(), 3.0, &format!("{name}[{label}] vs mpstat"));
        }
        close(r.get("cpu.idle", &label), f[11].parse().unwrap(), 3.0, "idle vs mpstat");
        rows += 1;
    }
    assert_eq!(rows, 3);
    let io = std::fs::read_to_string(data("busy.iostat.txt")).unwrap();
    let header: Vec<&str> =
        io.lines().find(|l| l.starts_with("Device")).unwrap().split_whitespace().collect();
    let vda: Vec<&str> = io.lines().find(|l| l.starts_with("vda ")).unwrap().split_whitespace().collect();
    let col = |name: &str| -> f64 { vda[header.iter().position(|h| *h == name).unwrap()].parse().unwrap() };
    let rel = |got: Option<f64>, want: f64, what: &str| close(got, want, want.abs() * 0.06 + 0.05, what);
    rel(r.get("io.writes", "vda"), col("w/s"), "w/s");
    rel(r.get("io.write_bytes", "vda").map(|b| b / 1024.0), col("wkB/s"), "wkB/s");
    rel(r.get("io.util", "vda"), col("%util"), "%util");
    rel(r.get("io.w_await", "vda"), col("w_await"), "w_await");
    rel(r.get("io.queue", "vda"), col("aqu-sz"), "aqu-sz");
}

#[test]
fn a_missing_file_is_a_problem_naming_it_and_the_rest_is_read() {
    let dir = std::env::temp_dir().join(format!("kflame-watch-metrics-{}", std::process::id()));
    let proc_ = dir.join("proc");
    std::fs::create_dir_all(&proc_).unwrap();
    std::fs::copy(data("busy/a/proc/loadavg"), proc_.join("loadavg")).unwrap();
    std::fs::write(proc_.join("meminfo"), "MemTotal: 100 kB\nMemAvailable: abc kB\nCached: 5 kB\n").unwrap();
    let mut s = Sampler::new(&dir, Options::default());
    assert!(!s.has_pressure());
    let r = s.read();
    assert!(r.get("load1", "").is_some());
    assert_eq!(r.get("mem.cached", ""), Some(5.0 * 1024.0));
    let msgs: Vec<String> = r.problems.iter().map(ToString::to_string).collect();
    assert!(msgs.iter().any(|m| m.contains("proc/stat: cannot read")), "{msgs:?}");
    assert!(msgs.iter().any(|m| m.contains("meminfo:2: expected `MemAvailable: NUMBER kB`")), "{msgs:?}");
    assert!(!msgs.iter().any(|m| m.contains("pressure")), "PSI absent is not a problem: {msgs:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A latency source with fixed histograms whose losses grow by `step` each read (the real
/// one, the BPF program, is read in the live tests).
struct Counted {
    lost: u64,
    step: u64,
}

impl kflame_watch::metrics::LatencySource for Counted {
    fn read(&mut self) -> Result<Vec<kflame_watch::metrics::LatencyReading>, String> {
        self.lost += self.step;
        let mut histogram = kflame::latency::Histogram::default();
        for ms in 1..=100u64 {
            histogram.record(ms * 1_000_000);
        }
        Ok(vec![kflame_watch::metrics::LatencyReading {
            kind: kflame_watch::metrics::LatencyKind::Syscall,
            label: "write".into(),
            histogram,
            slow: 91,
        }])
    }

    fn describe(&self) -> String {
        "test histograms".into()
    }

    fn lost(&self) -> u64 {
        self.lost
    }
}

/// The sampler reads its latency source with every read: the percentiles per call join the
/// `/proc` metrics, and events the source could not count are a problem of the read they
/// grew in, with how many, never silent; no growth, no problem.
#[test]
fn latency_metrics_join_the_reading_and_losses_are_said() {
    let dir = data("busy");
    let mut s = Sampler::new(dir.join("a"), Options::default());
    s.add_latency(Box::new(Counted { lost: 0, step: 3 }));
    let first = s.read();
    close(first.get("syscall.lat.max", "write"), 100.0, 0.0, "max[write]");
    let p99 = first.get("syscall.lat.p99", "write").expect("p99[write]");
    assert!((p99 - 99.0).abs() <= 0.125 * 99.0, "{p99}");
    let said: Vec<String> = first.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("(test histograms)") && said[0].contains("3 events could not be counted"),
        "{said:?}"
    );
    s.set_root(dir.join("b"));
    let second = s.read();
    // From the second read on, a rate: 91 slow calls over the fixture's interval.
    assert!(second.get("syscall.slow", "write").is_some_and(|v| v > 0.0));
    assert!(second.problems.iter().any(|p| p.to_string().contains("3 events could not be counted")));
    let mut quiet = Sampler::new(dir.join("a"), Options::default());
    quiet.add_latency(Box::new(Counted { lost: 0, step: 0 }));
    assert!(quiet.read().problems.is_empty(), "no losses, nothing said");
}

/// The latency metrics a rule sees are those a store answers from the histograms the reading
/// hands it (with their span): percentiles, maxima and the rates `syscall.slow` (91 slow
/// calls over the fixture's interval) alike, none of them stored as a metric.
#[test]
fn latency_values_are_what_the_store_reads_back() {
    use kflame_store::{OpenMode, Query, SeriesQuery, Sqlite, Store};
    let dir = data("busy");
    let mut s = Sampler::new(dir.join("a"), Options::default());
    s.add_latency(Box::new(Counted { lost: 0, step: 0 }));
    let _ = s.read();
    s.set_root(dir.join("b"));
    let second = s.read();
    let uptime = |d: &str| -> f64 {
        let t = std::fs::read_to_string(dir.join(d).join("proc/uptime")).unwrap();
        t.split_whitespace().next().unwrap().parse().unwrap()
    };
    let secs = uptime("b") - uptime("a");
    assert_eq!(second.latency_span_ms, (secs * 1000.0).round() as u32);
    close(second.get("syscall.slow", "write"), 91.0 / secs, 0.005, "slow[write]");
    let out = std::env::temp_dir().join(format!("kflame-watch-{}-latency-derived", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let t = 1_764_000_000_999_000_000;
    {
        let mut db = Sqlite::open(out.join("h.db"), OpenMode::Write).unwrap();
        db.append_latency("web1", t, &second.latency_rows()).unwrap();
        db.flush().unwrap();
    }
    let db = Sqlite::open(out.join("h.db"), OpenMode::Read).unwrap();
    let latency: Vec<&kflame_watch::metrics::Value> =
        second.values.iter().filter(|v| v.name.starts_with("syscall.")).collect();
    assert_eq!(latency.len(), 2 * 4, "p50, p99, max and slow of the total and of write");
    for v in latency {
        let q = SeriesQuery {
            name: v.name,
            label: Some(&v.label),
            host: None,
            from_ns: t - 1_000_000_000,
            to_ns: t + 1_000_000_000,
            points: None,
        };
        let back = db.series(&q).unwrap();
        let got: Vec<f64> = back.iter().flat_map(|s| s.points.iter().map(|p| p.avg)).collect();
        assert_eq!(got, [v.value], "{}[{}]", v.name, v.label);
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// System calls and lock waits of a second, as a latency source gives them.
struct Busy;

impl kflame_watch::metrics::LatencySource for Busy {
    fn read(&mut self) -> Result<Vec<kflame_watch::metrics::LatencyReading>, String> {
        use kflame_watch::metrics::{LatencyKind, LatencyReading};
        let hist = |ms: u64, n: usize| {
            let mut h = kflame::latency::Histogram::default();
            (0..n).for_each(|_| h.record(ms * 1_000_000));
            h
        };
        Ok(vec![
            LatencyReading {
                kind: LatencyKind::Syscall,
                label: "write".into(),
                histogram: hist(20, 12),
                slow: 12,
            },
            LatencyReading {
                kind: LatencyKind::Syscall,
                label: "read".into(),
                histogram: hist(1, 50),
                slow: 0,
            },
            LatencyReading {
                kind: LatencyKind::Lock,
                label: "mutex".into(),
                histogram: hist(30, 6),
                slow: 6,
            },
        ])
    }

    fn describe(&self) -> String {
        "busy histograms".into()
    }

    fn lost(&self) -> u64 {
        0
    }
}

/// Triggers on the rates read from the histograms (`syscall.slow[write] > 5`: 12 slow writes
/// in a second; `lock.wait > 100`: 180 ms of mutex waits) fire on the reading's values, and
/// those under their thresholds do not.
#[test]
fn triggers_on_latency_rates_fire() {
    use kflame_watch::rules::{Evaluator, Limits, Rule};
    let dir = data("busy");
    let mut s = Sampler::new(dir.join("a"), Options::default());
    s.add_latency(Box::new(Busy));
    let first = s.read();
    assert_eq!(first.latency_span_ms, 1000, "the first read counts as a second");
    let rules = ["syscall.slow[write] > 5", "lock.wait > 100", "syscall.slow[read] > 0", "lock.wait > 200"];
    let limits = Limits { cooldown: std::time::Duration::ZERO, per_hour: 100 };
    let mut ev = Evaluator::new(rules.iter().map(|r| Rule::parse(r).unwrap()).collect(), limits, 2);
    let (fired, _) = ev.push(0, &first.values);
    let got: Vec<(usize, &str, f64)> = fired.iter().map(|f| (f.rule, f.metric.as_str(), f.value)).collect();
    assert_eq!(got, [(0, "syscall.slow[write]", 12.0), (1, "lock.wait", 180.0)]);
}
