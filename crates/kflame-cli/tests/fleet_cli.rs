//! The fleet on ClickHouse through the `kflame` command, against real `clickhouse-server`
//! processes started here on loopback (two shards, `kflame_clickhouse::rig`):
//! `store init` on both servers, hosts written by a replay of real stacks (and, live, by
//! three `kflame watch --store` processes through an outage of one server), then `query`
//! (hosts, a fleet-wide profile, a host subset, `--by-host`, `--reports`), `store stats` and
//! `serve --store`, each checked against what was written.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kflame::fold::{Meta, Unit};
use kflame_clickhouse::rig::Rig;
use kflame_clickhouse::rig::fleet::{self, OwnedSample};
use kflame_clickhouse::{Reader, Writer, WriterOptions};
use kflame_store::{Kind, ProfileQuery, Query, Store, StoredReport};

const KFLAME: &str = env!("CARGO_BIN_EXE_kflame");
const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-fleet-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn kflame(rig: &Rig, args: &[&str]) -> Output {
    Command::new(KFLAME).args(args).env("KFLAME_CLICKHOUSE_PASSWORD", &rig.password).output().unwrap()
}

fn ok(rig: &Rig, args: &[&str]) -> String {
    let out = kflame(rig, args);
    assert!(out.status.success(), "kflame {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn init_both(rig: &Rig) {
    for i in 0..2 {
        let text = ok(rig, &["store", "init", "--store", &rig.url(i, "fleet", true), "--retain", "30d"]);
        let ready = format!("{} tables ready on ClickHouse", kflame_clickhouse::schema::TABLES.len());
        assert!(text.contains(&ready), "{text}");
        assert!(text.contains("no TTL"), "Debian's 18.16 has none: {text}");
    }
}

/// Sum of folded output's counts, and that of the lines holding `frame`.
fn totals(folded: &str, frame: &str) -> (u64, u64) {
    let (mut all, mut inside) = (0, 0);
    for l in folded.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if stack.split(';').any(|f| f == frame) {
            inside += n;
        }
    }
    (all, inside)
}

#[test]
fn a_replayed_fleet_reads_back_through_query_store_and_serve() {
    let rig = Rig::start(2).unwrap();
    init_both(&rig);
    let stacks = fleet::real_stacks();
    let hung = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kflame/tests/data/kernel-log/captures/dmesg-hung-task-calltrace.txt"
    ))
    .unwrap();
    // Three hosts, each writing through a server of its own, two labelled web.
    let hosts = [("db1", "role=db"), ("web1", "role=web"), ("web7", "role=web")];
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let frame = "do_syscall_64";
    let mut expect: Vec<(String, u64, u64)> = Vec::new();
    for (h, (host, label)) in hosts.iter().enumerate() {
        let loc = rig.location(h % 2, "fleet", true);
        let opts = WriterOptions { labels: label.to_string(), ..WriterOptions::default() };
        let mut w = Writer::open(&loc, &dir(&format!("spool-{h}")).join("spool.db"), opts).unwrap();
        let samples: Vec<OwnedSample> = fleet::host_samples(h, T0, 60, 19, 2, &stacks);
        let n = fleet::write_buckets(&mut w, host, Kind::Cpu, &meta, &samples, T0, 10 * SEC).unwrap();
        let inside =
            samples.iter().filter(|s| s.stack.split(|&b| b == b';').any(|f| f == frame.as_bytes())).count();
        expect.push((host.to_string(), inside as u64, n));
        // The same hung task on two hosts; a report whose text gives nothing on the third.
        let (title, text) = if *host == "web7" {
            ("Out of memory: Killed process 4242 (java)", "garbled")
        } else {
            ("INFO: task sh:9657 blocked for more than 120 seconds.", hung.as_str())
        };
        w.append_report(&StoredReport {
            host,
            time_ns: T0 + (10 + h as i64) * SEC,
            kind: if *host == "web7" { "oom" } else { "hung_task" },
            title,
            stack: "",
            text,
        })
        .unwrap();
        w.flush().unwrap();
    }
    let url = rig.url(1, "fleet", true);
    let range = ["--from", "2025-11-24T16:00:00Z", "--to", "2025-11-24T16:01:00Z"];
    assert_eq!(T0, 1_764_000_000 * SEC, "the range above is T0's minute");
    // Hosts with their labels.
    let listed = ok(&rig, &["query", "--store", &url, "--list-hosts"]);
    assert_eq!(listed, "db1 role=db\nweb1 role=web\nweb7 role=web\n");
    // The fleet-wide profile: every host merged.
    let all = ok(&rig, &[&["query", "--store", &url], &range[..]].concat());
    let written: u64 = expect.iter().map(|e| e.2).sum();
    assert_eq!(totals(&all, frame).0, written);
    // A subset by glob and by label.
    let web: u64 = expect.iter().filter(|e| e.0.starts_with("web")).map(|e| e.2).sum();
    for sel in [&["--hosts", "web*"][..], &["--label", "role=web"][..], &["--hosts", "web1,web7"][..]] {
        let out = ok(&rig, &[&["query", "--store", &url], &range[..], sel].concat());
        assert_eq!(totals(&out, frame).0, web, "{sel:?}");
    }
    let e = kflame(&rig, &[&["query", "--store", &url], &range[..], &["--hosts", "nope*"]].concat());
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(
        !e.status.success() && err.contains("no host matches") && err.contains("web7 (role=web)"),
        "{err}"
    );
    // Which hosts spend time in a frame: the numbers the test counted from what it wrote.
    let by = ok(&rig, &[&["query", "--store", &url], &range[..], &["--by-host", frame]].concat());
    let mut rows: Vec<(String, u64, u64)> = by
        .lines()
        .skip(2)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    rows.sort();
    assert_eq!(rows, expect, "{by}");
    assert!(by.starts_with(&format!("# {frame}: 3 of 3 hosts")), "{by}");
    // Kernel reports grouped across hosts.
    let rep = ok(
        &rig,
        &[
            "query",
            "--store",
            &url,
            "--reports",
            "--from",
            "2025-11-24T16:00:00Z",
            "--to",
            "2025-11-24T16:01:00Z",
        ],
    );
    let first = rep.lines().next().unwrap();
    assert!(first.starts_with("2 reports on 2 hosts  INFO: task hung in "), "{rep}");
    assert!(rep.contains("hosts db1×1 web1×1"), "{rep}");
    assert!(rep.contains("kernels 6.18.44-fc-v669"), "{rep}");
    assert!(rep.contains("1 reports on 1 hosts  oom:Out of memory: Killed process 4242 (java)"), "{rep}");
    // Space per table (every shard's parts) and per host-day.
    let stats = ok(&rig, &["store", "stats", "--store", &url]);
    let rows: u64 = stats
        .lines()
        .find(|l| l.starts_with("samples_local\t"))
        .and_then(|l| l.split('\t').nth(1))
        .unwrap_or_else(|| panic!("{stats}"))
        .parse()
        .unwrap();
    assert_eq!(rows, written, "every shard's samples: {stats}");
    assert!(stats.contains("every shard's parts") && stats.contains("bytes per host-day"), "{stats}");
    // The same answers through the web server's API.
    let (mut serve, addr) = start_serve(&rig, &url, "serve", &[]);
    let get = |path: &str| api_get(&addr, path);
    let info = get("/api/info");
    // The Reports view and a report's panel from the fleet's store: the hung task on two
    // hosts is one bug, the report whose text gives nothing stays apart.
    let groups = get(&format!("/api/reports?from={T0}&to={}", T0 + 60 * SEC));
    let report = get(&format!("/api/report?time={}&host=db1", T0 + 10 * SEC));
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(info.starts_with("HTTP/1.1 200"), "{info}");
    assert!(info.contains(r#""hosts":["db1","web1","web7"]"#), "{info}");
    let body = |r: &str| -> serde_json::Value {
        serde_json::from_str(r.split_once("\r\n\r\n").map_or("", |x| x.1))
            .unwrap_or_else(|e| panic!("{e}: {r}"))
    };
    let g = body(&groups);
    let counts: Vec<(String, u64)> = g["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["signature"].as_str().unwrap().to_string(), g["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        counts,
        [
            ("INFO: task hung in mnt_want_write".to_string(), 2),
            ("oom:Out of memory: Killed process 4242 (java)".to_string(), 1)
        ],
        "{g}"
    );
    let r = body(&report);
    assert_eq!(r["signature"], "INFO: task hung in mnt_want_write");
    assert_eq!(r["similar"]["hosts"], serde_json::json!(["db1", "web1"]));
    assert!(r["before"]["cpu"]["total"].as_f64().is_some_and(|t| t > 0.0), "{}", r["before"]);
}

/// `kflame serve --store URL EXTRA` on a free loopback port: the process and its address.
fn start_serve(rig: &Rig, url: &str, name: &str, extra: &[&str]) -> (Child, String) {
    let d = dir(name);
    let token = d.join("token");
    std::fs::write(&token, "fleet-token-1\n").unwrap();
    let mut serve = Command::new(KFLAME)
        .args(["serve", "--store", url, "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token)
        .args(extra)
        .env("KFLAME_CLICKHOUSE_PASSWORD", &rig.password)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    (serve, addr)
}

/// A GET of the server's API with its token: the whole answer, head and body.
fn api_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer fleet-token-1\r\nConnection: close\r\n\r\n").unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    r
}

fn watcher(rig: &Rig, i: usize, d: &Path) -> Child {
    Command::new(KFLAME)
        .args(["watch", "--store", &rig.url(i % 2, "fleet", true), "--host", &format!("fleet-h{i}")])
        .args(["--label", &format!("n={i}"), "--spool"])
        .arg(d.join(format!("spool-{i}.db")))
        .args(["--no-kmsg", "--bucket", "2s", "--log-level", "info"])
        .env("KFLAME_CLICKHOUSE_PASSWORD", &rig.password)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn live_three_watchers_write_through_an_outage_and_lose_nothing() {
    let Some(_env) = common::Env::get("live_three_watchers_write_through_an_outage") else { return };
    let mut rig = Rig::start(2).unwrap();
    init_both(&rig);
    let d = dir("live");
    let mut ws: Vec<Child> = (0..3).map(|i| watcher(&rig, i, &d)).collect();
    std::thread::sleep(Duration::from_secs(8));
    // Shard 2 goes away for 6 s: its hosts' rows, and every write sent through it, wait in
    // the watchers' spools.
    rig.stop(1);
    std::thread::sleep(Duration::from_secs(6));
    rig.restart(1).unwrap();
    std::thread::sleep(Duration::from_secs(8));
    for w in &ws {
        assert!(Command::new("kill").arg("-INT").arg(w.id().to_string()).status().unwrap().success());
    }
    let mut stored = Vec::new();
    let started = Instant::now();
    for (i, w) in ws.drain(..).enumerate() {
        let out = w.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "watcher {i}: {err}");
        // "stopped after 22 s: 1234 samples in 11 buckets, ..."
        let stop = err.lines().find(|l| l.contains("stopped after")).unwrap_or_else(|| panic!("{err}"));
        let num = |word: &str| -> u64 {
            let at = stop.find(word).unwrap();
            stop[..at].trim_end().rsplit(' ').next().unwrap().parse().unwrap()
        };
        stored.push((num(" samples"), num(" buckets"), err));
    }
    assert!(started.elapsed() < Duration::from_secs(60));
    let outage_seen = stored.iter().any(|(_, _, e)| e.contains("unreachable") || e.contains("refused it"));
    assert!(
        outage_seen,
        "no watcher noticed the outage: {:?}",
        stored.iter().map(|s| &s.2).collect::<Vec<_>>()
    );
    assert!(stored.iter().any(|(_, _, e)| e.contains("answers again")));
    let r = Reader::open(&rig.location(0, "fleet", true)).unwrap();
    for (i, (samples, buckets, err)) in stored.iter().enumerate() {
        let host = format!("fleet-h{i}");
        let p = r
            .profile(&ProfileQuery { host: Some(&host), ..ProfileQuery::new(Kind::Cpu, 0, i64::MAX) })
            .unwrap();
        assert_eq!((p.samples, p.buckets), (*samples, *buckets), "{host}: {err}");
        assert!(*samples > 0);
        let spool = kflame_clickhouse::spool::Spool::open(&d.join(format!("spool-{i}.db")), 1 << 30).unwrap();
        assert!(spool.is_empty(), "{host}: spool left with {spool:?}");
    }
    // Each host's own label, and its kernel release, which the watcher adds.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap(); // live: the kernel's release
    assert_eq!(
        r.host_labels().unwrap(),
        (0..3)
            .map(|i| (format!("fleet-h{i}"), format!("n={i},kernel={}", release.trim())))
            .collect::<Vec<_>>()
    );
}

/// A comparison's `stack BEFORE AFTER` lines, by stack.
fn diff_columns(folded: &str) -> std::collections::BTreeMap<Vec<u8>, (u64, u64)> {
    let mut got = std::collections::BTreeMap::new();
    for l in folded.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let mut p = l.rsplitn(3, ' ');
        let (a, b, s) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
        got.insert(s.as_bytes().to_vec(), (b.parse().unwrap(), a.parse().unwrap()));
    }
    got
}

/// `query --base-label`: two hosts labelled with their kernels (as `watch --store` labels
/// them), one running the same real stacks as the other but for those through one frame;
/// the comparison's BEFORE and AFTER columns are each host's samples, stack by stack; the
/// frame is among the functions that grew; and, with a kernel git history made here (tags
/// v6.1 and v6.8, a commit between them changing the function), that commit is listed.
#[test]
fn kernels_compared_across_the_fleet_name_the_commits_between_them() {
    use std::collections::{BTreeMap, BTreeSet};
    let rig = Rig::start(1).unwrap();
    let url = rig.url(0, "kernels", false);
    ok(&rig, &["store", "init", "--store", &url]);
    let stacks = fleet::real_stacks();
    // A frame of 10 to 40% of the samples, not in every stack: the new kernel's regression.
    let mut count: BTreeMap<&[u8], usize> = BTreeMap::new();
    for s in &stacks {
        let frames: BTreeSet<&[u8]> = s.split(|&b| b == b';').collect();
        for f in frames {
            *count.entry(f).or_default() += 1;
        }
    }
    let n = stacks.len();
    let (frame, _) = count
        .iter()
        .find(|(f, c)| {
            **c * 10 >= n && **c * 10 <= n * 4 && f.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        })
        .expect("a frame of 10 to 40% of the samples");
    let frame = String::from_utf8(frame.to_vec()).unwrap();
    let has = |s: &[u8]| s.split(|&b| b == b';').any(|f| f == frame.as_bytes());
    let without: Vec<Vec<u8>> = stacks.iter().filter(|s| !has(s)).cloned().collect();
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let mut written: BTreeMap<&str, BTreeMap<Vec<u8>, u64>> = BTreeMap::new();
    for (h, (host, label, set)) in
        [("old-1", "kernel=6.1.0-13-amd64", &without), ("new-1", "kernel=6.8.0-1-amd64", &stacks)]
            .into_iter()
            .enumerate()
    {
        let opts = WriterOptions { labels: label.to_string(), ..WriterOptions::default() };
        let mut w =
            Writer::open(&rig.location(0, "kernels", false), &dir(&format!("kspool-{h}")).join("s.db"), opts)
                .unwrap();
        let samples = fleet::host_samples(h, T0, 60, 19, 2, set);
        fleet::write_buckets(&mut w, host, Kind::Cpu, &meta, &samples, T0, 10 * SEC).unwrap();
        w.flush().unwrap();
        let m = written.entry(host).or_default();
        for s in &samples {
            *m.entry(s.stack.clone()).or_default() += 1;
        }
    }
    // A kernel history: the function defined at v6.1, changed before v6.8.
    let git_dir = dir("kernel-git");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&git_dir)
            .args(["-c", "user.name=T", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let file = git_dir.join("kernel/x.c");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    git(&["init", "-q", "-b", "master"]);
    std::fs::write(&file, format!("int {frame}(int a)\n{{\n\treturn a;\n}}\n")).unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "Linux 6.1"]);
    git(&["tag", "v6.1"]);
    std::fs::write(&file, format!("int {frame}(int a)\n{{\n\treturn a + 1;\n}}\n")).unwrap();
    git(&["commit", "-q", "-am", &format!("x: make {frame} slower")]);
    git(&["tag", "v6.8"]);

    let range = ["--from", "2025-11-24T16:00:00Z", "--to", "2025-11-24T16:01:00Z"];
    let out = kflame(
        &rig,
        &[
            &["query", "--store", &url][..],
            &range[..],
            &["--label", "kernel=6.8.0-1-amd64", "--base-label", "kernel=6.1.0-13-amd64"],
            &["--kernel-git", git_dir.to_str().unwrap()],
        ]
        .concat(),
    );
    let err: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.strip_prefix("kflame: ").unwrap_or(l).to_string() + "\n")
        .collect();
    assert!(out.status.success(), "{err}");
    // Stack by stack, BEFORE is old-1's samples and AFTER new-1's.
    let got = diff_columns(&String::from_utf8(out.stdout).unwrap());
    let mut want: BTreeMap<Vec<u8>, (u64, u64)> = BTreeMap::new();
    for (s, c) in &written["old-1"] {
        want.entry(s.clone()).or_default().0 += c;
    }
    for (s, c) in &written["new-1"] {
        want.entry(s.clone()).or_default().1 += c;
    }
    assert_eq!(got, want);
    assert!(
        err.contains("BEFORE: old-1 (kernel 6.1.0-13-amd64)")
            && err.contains("AFTER: new-1 (kernel 6.8.0-1-amd64)"),
        "{err}"
    );
    let grew = err
        .lines()
        .find(|l| l.starts_with(&format!("grew: {frame} +")))
        .unwrap_or_else(|| panic!("{frame} grew: {err}"));
    assert!(grew.contains("(0.00% ->"), "{grew}");
    let after_grew = err.split(grew).nth(1).unwrap();
    assert!(after_grew.starts_with("\n  1 commit of v6.1..v6.8 changed it:"), "{err}");
    assert!(after_grew.contains(&format!("x: make {frame} slower")), "{err}");

    // The page's comparison of the two kernels' hosts (`serve --kernel-git`): the functions
    // the command listed, with the same shares, and the same commit.
    let (mut serve, addr) =
        start_serve(&rig, &url, "kernels-serve", &["--kernel-git", git_dir.to_str().unwrap()]);
    let answer = api_get(
        &addr,
        &format!(
            "/api/diff?kind=cpu&from={T0}&to={}&hosts=new-1&base_from={T0}&base_to={}&base_hosts=old-1",
            T0 + 60 * SEC,
            T0 + 60 * SEC
        ),
    );
    let _ = serve.kill();
    let _ = serve.wait();
    let body: serde_json::Value = serde_json::from_str(answer.split_once("\r\n\r\n").map_or("", |x| x.1))
        .unwrap_or_else(|e| panic!("{e}: {answer}"));
    let changed = &body["info"]["changed"];
    assert_eq!(
        changed["kernels"],
        serde_json::json!({ "before": ["6.1.0-13-amd64"], "after": ["6.8.0-1-amd64"] }),
        "{changed}"
    );
    for what in ["grew", "shrank"] {
        let from_cli: Vec<String> =
            err.lines().filter(|l| l.starts_with(&format!("{what}: "))).map(str::to_string).collect();
        let from_page: Vec<String> = changed[what]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{what}: {} {:+.2} points ({:.2}% -> {:.2}% of the total)",
                    c["function"].as_str().unwrap(),
                    c["delta"].as_f64().unwrap(),
                    c["total_before"].as_f64().unwrap(),
                    c["total_after"].as_f64().unwrap()
                )
            })
            .collect();
        assert_eq!(from_page, from_cli, "{changed}");
    }
    let own = changed["grew"].as_array().unwrap().iter().find(|c| c["function"] == frame.as_str()).unwrap();
    assert_eq!(
        (own["commits"]["from"].as_str(), own["commits"]["to"].as_str()),
        (Some("v6.1"), Some("v6.8"))
    );
    assert_eq!(own["commits"]["total"], 1);
    assert_eq!(own["commits"]["commits"][0]["subject"], format!("x: make {frame} slower"));

    // By share: BEFORE scaled to AFTER's total.
    let scaled = ok(
        &rig,
        &[
            &["query", "--store", &url][..],
            &range[..],
            &["--label", "kernel=6.8.0-1-amd64", "--base-label", "kernel=6.1.0-13-amd64", "--normalize"],
        ]
        .concat(),
    );
    let (mut b, mut a) = (0f64, 0f64);
    for l in scaled.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let mut p = l.rsplitn(3, ' ');
        a += p.next().unwrap().parse::<f64>().unwrap();
        b += p.next().unwrap().parse::<f64>().unwrap();
    }
    let after_total: u64 = written["new-1"].values().sum();
    assert!((a - after_total as f64).abs() < 1e-6 && (b - a).abs() < 1e-6, "{b} and {a}, not {after_total}");

    // Errors say what to do.
    let e = kflame(
        &rig,
        &[&["query", "--store", &url][..], &range[..], &["--base-label", "kernel=6.1.0-13-amd64"]].concat(),
    );
    assert!(String::from_utf8_lossy(&e.stderr).contains("choose the AFTER hosts with --label or --hosts"));
    let e = kflame(
        &rig,
        &[
            &["query", "--store", &url][..],
            &range[..],
            &["--label", "kernel=6.8.0-1-amd64", "--base-label", "kernel=5.4"],
        ]
        .concat(),
    );
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("no host matches"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
    let e = kflame(
        &rig,
        &[
            &["query", "--store", &url][..],
            &range[..],
            &["--label", "kernel=6.8.0-1-amd64", "--base-label", "kernel=6.1.0-13-amd64"],
            &["--kernel-git", git_dir.to_str().unwrap(), "--kernel-range", "v6.1..v9.9"],
        ]
        .concat(),
    );
    assert!(
        String::from_utf8_lossy(&e.stderr).contains("v9.9 names no commit"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );
}

/// A host upgraded in place (its watcher started again on a new kernel, labelled with it):
/// `query --base-label kernel=OLD --label kernel=NEW` over a range holding the upgrade
/// compares the host's samples before it with its samples after it, and says so; `--label`
/// alone takes the stretch that carried the label; the page's comparison of the host's two
/// ranges names the kernel each ran.
#[test]
fn a_host_upgraded_in_place_is_compared_with_itself_across_the_upgrade() {
    use std::collections::BTreeMap;
    let rig = Rig::start(1).unwrap();
    let url = rig.url(0, "upgraded", false);
    ok(&rig, &["store", "init", "--store", &url]);
    let stacks = fleet::real_stacks();
    let (old_set, new_set) = (&stacks[..stacks.len() / 2], &stacks[stacks.len() / 4..]);
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    // Thirty seconds on the old kernel, then thirty on the new one, each by its own writer
    // (the watcher before the reboot, and after it).
    let mut written: Vec<BTreeMap<Vec<u8>, u64>> = Vec::new();
    for (k, (label, set)) in
        [("kernel=6.1.0-13-amd64", old_set), ("kernel=6.8.0-1-amd64", new_set)].into_iter().enumerate()
    {
        let opts = WriterOptions { labels: format!("role=web,{label}"), ..WriterOptions::default() };
        let spool = dir(&format!("upgraded-spool-{k}")).join("s.db");
        let mut w = Writer::open(&rig.location(0, "upgraded", false), &spool, opts).unwrap();
        let start = T0 + k as i64 * 30 * SEC;
        let samples = fleet::host_samples(k, start, 30, 19, 2, set);
        fleet::write_buckets(&mut w, "web-1", Kind::Cpu, &meta, &samples, start, 10 * SEC).unwrap();
        w.flush().unwrap();
        let mut m = BTreeMap::new();
        for s in &samples {
            *m.entry(s.stack.clone()).or_insert(0u64) += 1;
        }
        written.push(m);
    }
    let range = ["--from", "2025-11-24T16:00:00Z", "--to", "2025-11-24T16:01:00Z"];
    let out = kflame(
        &rig,
        &[
            &["query", "--store", &url][..],
            &range[..],
            &["--label", "kernel=6.8.0-1-amd64", "--base-label", "kernel=6.1.0-13-amd64"],
        ]
        .concat(),
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let got = diff_columns(&String::from_utf8(out.stdout).unwrap());
    let mut want: BTreeMap<Vec<u8>, (u64, u64)> = BTreeMap::new();
    for (s, c) in &written[0] {
        want.entry(s.clone()).or_default().0 += c;
    }
    for (s, c) in &written[1] {
        want.entry(s.clone()).or_default().1 += c;
    }
    assert_eq!(got, want, "BEFORE is the host's first half, AFTER its second\n{err}");
    assert!(
        err.contains("BEFORE: web-1 2025-11-24T16:00:00Z to 2025-11-24T16:00:30Z (kernel 6.1.0-13-amd64)")
            && err
                .contains("AFTER: web-1 2025-11-24T16:00:30Z to 2025-11-24T16:01:00Z (kernel 6.8.0-1-amd64)"),
        "{err}"
    );
    // Half a host on each side: the same, no hint to normalize.
    assert!(!err.contains("add --normalize"), "{err}");

    // `--label` alone: the stretch that carried it, of a host that carries another today.
    let old = ok(
        &rig,
        &[&["query", "--store", &url][..], &range[..], &["--label", "kernel=6.1.0-13-amd64"]].concat(),
    );
    let old: BTreeMap<Vec<u8>, u64> = old
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (s, c) = l.rsplit_once(' ').unwrap();
            (s.as_bytes().to_vec(), c.parse().unwrap())
        })
        .collect();
    assert_eq!(old, written[0]);

    // The host on both sides at once: refused, naming it and when.
    let e = kflame(
        &rig,
        &[
            &["query", "--store", &url][..],
            &range[..],
            &["--hosts", "web-1", "--base-label", "kernel=6.1.0-13-amd64"],
        ]
        .concat(),
    );
    let e = String::from_utf8_lossy(&e.stderr);
    assert!(
        e.contains("web-1 is on both sides from 2025-11-24T16:00:00Z to 2025-11-24T16:00:30Z")
            && e.contains("must choose different hosts or times"),
        "{e}"
    );
    // A label no stretch of the range carried: what the history has, stretch by stretch.
    let e = kflame(&rig, &[&["query", "--store", &url][..], &range[..], &["--label", "kernel=5.4"]].concat());
    let e = String::from_utf8_lossy(&e.stderr);
    assert!(
        e.contains("no host matches --label kernel=5.4")
            && e.contains(
                "web-1 (role=web,kernel=6.1.0-13-amd64 2025-11-24T16:00:00Z to 2025-11-24T16:00:30Z)"
            ),
        "{e}"
    );

    // The page: the host's second half against its first names each half's kernel.
    let (mut serve, addr) = start_serve(&rig, &url, "upgraded-serve", &[]);
    let answer = api_get(
        &addr,
        &format!(
            "/api/diff?kind=cpu&from={}&to={}&hosts=web-1&base_from={T0}&base_to={}&base_hosts=web-1",
            T0 + 30 * SEC,
            T0 + 60 * SEC,
            T0 + 30 * SEC
        ),
    );
    let _ = serve.kill();
    let _ = serve.wait();
    let body: serde_json::Value = serde_json::from_str(answer.split_once("\r\n\r\n").map_or("", |x| x.1))
        .unwrap_or_else(|e| panic!("{e}: {answer}"));
    assert_eq!(
        body["info"]["changed"]["kernels"],
        serde_json::json!({ "before": ["6.1.0-13-amd64"], "after": ["6.8.0-1-amd64"] }),
        "{}",
        body["info"]
    );
}

/// `kflame` with the rig's password and, when given, its CA in `KFLAME_CLICKHOUSE_CA_FILE`.
fn kflame_tls(rig: &Rig, ca: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(KFLAME);
    c.args(args).env("KFLAME_CLICKHOUSE_PASSWORD", &rig.password).env_remove("KFLAME_CLICKHOUSE_CA_FILE");
    if let Some(ca) = ca {
        c.env("KFLAME_CLICKHOUSE_CA_FILE", ca);
    }
    c.output().unwrap()
}

/// The fleet store over HTTPS: `store init`, a history written through TLS, then `query` and
/// `store stats`, all given the server's CA; refused without it, with another CA, and a
/// password never sent over plain HTTP to an address off loopback.
#[test]
fn the_fleet_store_over_https_with_its_ca_and_refused_without() {
    let rig = Rig::start_tls(1).unwrap();
    let ca = rig.tls.as_ref().unwrap().ca.clone();
    let url = rig.https_url(0, "fleet");
    // Without the CA (the system's roots) and with another one: refused, saying which. The
    // system's roots are made this machine's or any other's alike: OpenSSL's variables name
    // another CA's certificate and an empty directory.
    let d = dir("tls");
    let other = kflame_clickhouse::rig::make_certificates(&d.join("other"), "another").unwrap();
    std::fs::create_dir_all(d.join("no-certs")).unwrap();
    let out = Command::new(KFLAME)
        .args(["store", "init", "--store", &url])
        .env("KFLAME_CLICKHOUSE_PASSWORD", &rig.password)
        .env_remove("KFLAME_CLICKHOUSE_CA_FILE")
        .env("SSL_CERT_FILE", &other.ca)
        .env("SSL_CERT_DIR", d.join("no-certs"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not signed by a CA in the system's CA certificates"), "{err}");
    assert!(err.contains("KFLAME_CLICKHOUSE_CA_FILE"), "{err}");
    let out = kflame_tls(&rig, Some(&other.ca), &["query", "--store", &url, "--list-hosts"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not signed by a CA in the CA file"), "{err}");
    // With it.
    let ok_tls = |args: &[&str]| {
        let out = kflame_tls(&rig, Some(&ca), args);
        assert!(out.status.success(), "kflame {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = ok_tls(&["store", "init", "--store", &url, "--retain", "30d"]);
    assert!(text.contains("tables ready on ClickHouse"), "{text}");
    let stacks = fleet::real_stacks();
    let loc = kflame_clickhouse::Location::parse_with(&url, &|k| match k {
        "KFLAME_CLICKHOUSE_PASSWORD" => Some(rig.password.clone()),
        "KFLAME_CLICKHOUSE_CA_FILE" => Some(ca.display().to_string()),
        _ => None,
    })
    .unwrap();
    let mut w = Writer::open(&loc, &d.join("spool.db"), WriterOptions::default()).unwrap();
    let meta = Meta { unit: Unit::Samples, event: Some("cpu-clock".into()) };
    let samples: Vec<OwnedSample> = fleet::host_samples(0, T0, 60, 19, 2, &stacks);
    let n = fleet::write_buckets(&mut w, "tls1", Kind::Cpu, &meta, &samples, T0, 10 * SEC).unwrap();
    w.flush().unwrap();
    drop(w);
    assert_eq!(ok_tls(&["query", "--store", &url, "--list-hosts"]), "tls1\n");
    let range = ["--from", "2025-11-24T16:00:00Z", "--to", "2025-11-24T16:01:00Z"];
    let all = ok_tls(&[&["query", "--store", &url], &range[..]].concat());
    assert_eq!(totals(&all, "do_syscall_64").0, n);
    assert_eq!(n, samples.len() as u64);
    let stats = ok_tls(&["store", "stats", "--store", &url]);
    assert!(stats.contains("1 hosts") && stats.starts_with("clickhouse+https://"), "{stats}");
    // A password over plain HTTP to a documentation address (RFC 5737): refused before any
    // connection is tried, with the way out.
    let out = kflame_tls(&rig, None, &["store", "init", "--store", "clickhouse+http://192.0.2.7:8123/fleet"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("in clear text") && err.contains("clickhouse+https://default@192.0.2.7:8443/fleet"),
        "{err}"
    );
    assert!(!err.contains(&rig.password), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// `watch --store clickhouse+https://` with the CA: the samples the watcher says it stored
/// are read back over TLS by `query`.
#[test]
fn live_watch_writes_to_the_fleet_store_over_https() {
    let Some(_env) = common::Env::get("live_watch_writes_to_the_fleet_store_over_https") else { return };
    let rig = Rig::start_tls(1).unwrap();
    let ca = rig.tls.as_ref().unwrap().ca.clone();
    let url = rig.https_url(0, "fleet");
    let out = kflame_tls(&rig, Some(&ca), &["store", "init", "--store", &url]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir("tls-live");
    let mut w = Command::new(KFLAME)
        .args(["watch", "--store", &url, "--host", "tls-live", "--spool"])
        .arg(d.join("spool.db"))
        .args(["--no-kmsg", "--bucket", "1s", "--log-level", "info"])
        .env("KFLAME_CLICKHOUSE_PASSWORD", &rig.password)
        .env("KFLAME_CLICKHOUSE_CA_FILE", &ca)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Until the host's samples are readable over TLS (30 s at most).
    let started = Instant::now();
    loop {
        let out = kflame_tls(&rig, Some(&ca), &["query", "--store", &url, "--list-hosts"]);
        if String::from_utf8_lossy(&out.stdout).contains("tls-live") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(Command::new("kill").arg("-INT").arg(w.id().to_string()).status().unwrap().success());
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(w.wait().unwrap().code(), Some(0), "{err}");
    let stop = err.lines().find(|l| l.contains("stopped after")).unwrap_or_else(|| panic!("{err}"));
    let at = stop.find(" samples").unwrap();
    let samples: u64 = stop[..at].trim_end().rsplit(' ').next().unwrap().parse().unwrap();
    let r = Reader::open(
        &kflame_clickhouse::Location::parse_with(&url, &|k| match k {
            "KFLAME_CLICKHOUSE_PASSWORD" => Some(rig.password.clone()),
            "KFLAME_CLICKHOUSE_CA_FILE" => Some(ca.display().to_string()),
            _ => None,
        })
        .unwrap(),
    )
    .unwrap();
    let p = r
        .profile(&ProfileQuery { host: Some("tls-live"), ..ProfileQuery::new(Kind::Cpu, 0, i64::MAX) })
        .unwrap();
    assert!(samples > 0);
    assert_eq!(p.samples, samples, "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}
