//! Every tool of `kflame mcp` called through the server's own dispatch (`Server::run_tool`:
//! argument decoding, the blocking thread, the time limit, the result's shape) on real
//! inputs: syzkaller and hung-task reports, crash `bt` output, perf captures, a history
//! written by `kflame watch`, the libbpf git history, and a small kernel tree written here.
//! Expectations come from the library the CLI uses on the same inputs (`kflame analyze
//! --json` is `kflame_analyze::run::Run` + `output::json`). The real MCP clients (the
//! Python SDK, the inspector, the conformance suite) are driven by `tests/mcp/` over stdio
//! and HTTP.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kflame::collapse::Format;
use kflame::open::Input;
use kflame_mcp::{Config, Context, Server};
use serde_json::{Value, json};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame/tests/data").canonicalize().unwrap()
}

fn config(allow: Vec<PathBuf>, cache: &Path) -> Config {
    Config {
        allow,
        max_input_bytes: 64 << 20,
        timeout: Duration::from_secs(120),
        db: None,
        store: None,
        kernel_src: None,
        vmlinux: None,
        kernel_git: None,
        after: None,
        cache_dir: cache.to_path_buf(),
    }
}

fn server(c: Config) -> Server {
    Server::new(Arc::new(Context::new(c).unwrap()))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Calls `name`; returns (is_error, structured content or null, text).
fn call(s: &Server, name: &str, args: Value) -> (bool, Value, String) {
    let r = rt().block_on(s.run_tool(name, args));
    let v = serde_json::to_value(&r).unwrap();
    let text = v["content"][0]["text"].as_str().unwrap_or("").to_string();
    (v["isError"] == json!(true), v.get("structuredContent").cloned().unwrap_or(Value::Null), text)
}

fn cli_json(path: &Path, format: Format) -> Value {
    let mut run = kflame_analyze::run::Run::new(5);
    run.add(Input::open(path.to_str().unwrap()).unwrap(), Some(format)).unwrap();
    let a = run.finish(None, None).unwrap();
    serde_json::from_str(&kflame_analyze::output::json(&a)).unwrap()
}

#[test]
fn kernel_log_groups_carry_the_culprit_of_kflame_analyze_json() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(config(vec![data()], tmp.path()));
    for rel in ["kernel-log/syzkaller/report/106", "kernel-log/captures/dmesg-hung-task-calltrace.txt"] {
        let path = data().join(rel);
        let (err, got, text) = call(&s, "analyze_kernel_log", json!({"path": path.to_str().unwrap()}));
        assert!(!err, "{rel}: {text}");
        let want = cli_json(&path, Format::KernelLog);
        assert_eq!(got["schema"], "kflame-analyze");
        assert_eq!(
            got["groups"].as_array().unwrap().len(),
            want["groups"].as_array().unwrap().len(),
            "{rel}"
        );
        for (g, w) in got["groups"].as_array().unwrap().iter().zip(want["groups"].as_array().unwrap()) {
            assert_eq!(g["signature"], w["signature"], "{rel}");
            assert_eq!(g["error"]["culprit"], w["error"]["culprit"], "{rel}");
            assert!(text.contains(w["error"]["title"].as_str().unwrap()), "{rel}: {text}");
        }
    }
}

#[test]
fn crash_output_and_profiles() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(config(vec![data()], tmp.path()));
    let crash = data().join("crash/foreach-UN-bt.txt");
    let (err, got, text) = call(&s, "analyze_crash", json!({"path": crash.to_str().unwrap(), "limit": 2}));
    assert!(!err, "{text}");
    let want = cli_json(&crash, Format::Crash);
    assert_eq!(got["reports"], want["reports"]);
    assert!(got["groups"].as_array().unwrap().len() <= 2);
    assert_eq!(got["groups"][0]["signature"], want["groups"][0]["signature"]);

    // A perf capture: the same hottest functions as the library computes, and the view.
    let perf = data().join("perf/captures/perf-sys-cpuclock.script.txt");
    let (err, got, text) = call(&s, "summarize_profile", json!({"path": perf.to_str().unwrap(), "limit": 3}));
    assert!(!err, "{text}");
    let out = kflame::open::Input::open(perf.to_str().unwrap()).unwrap();
    let opts = kflame::collapse::options::CollapseOptions::default();
    let target = kflame::collapse::options::Target::of(Format::PerfScript, &opts, &out.head);
    let c = target.collapser("x", &opts, kflame::input::Sinks::default()).unwrap();
    let collapsed = out.collapse(&kflame::collapse::Engine::default(), c).unwrap();
    let want =
        kflame_analyze::profile::analyze("x", collapsed.stacks.in_output_order(), &collapsed.meta.unit, 3);
    assert_eq!(got["by_self"][0]["function"], json!(want.by_self[0].function));
    assert_eq!(got["total"]["weight"], json!(want.total.weight));
    assert_eq!(got["by_self"].as_array().unwrap().len(), 3);
    assert!(text.contains('%'), "{text}");
    let r = rt().block_on(s.run_tool("summarize_profile", json!({"path": perf.to_str().unwrap()})));
    let v = serde_json::to_value(&r).unwrap();
    let view = &v["_meta"]["kflame/view"];
    assert_eq!(view["profile"]["total"], json!(want.total.weight), "the view draws the same total");
    assert!(view["nodes"].as_str().is_some_and(|n| !n.is_empty()));

    // Two captures compared: the function whose share grew most in AFTER is first.
    let before = data().join("perf/captures/perf-burn-fp-fp.script.txt");
    let (err, got, text) = call(
        &s,
        "diff_profiles",
        json!({"before": {"path": before.to_str().unwrap()}, "after": {"path": perf.to_str().unwrap()}, "limit": 5}),
    );
    assert!(!err, "{text}");
    let grew = got["grew"].as_array().unwrap();
    assert!(!grew.is_empty() && grew.len() <= 5);
    let deltas: Vec<f64> = grew.iter().map(|c| c["delta"].as_f64().unwrap()).collect();
    assert!(deltas.windows(2).all(|w| w[0] >= w[1]) && deltas[0] > 0.0, "{deltas:?}");
    for c in grew {
        let d = c["total_after"].as_f64().unwrap() - c["total_before"].as_f64().unwrap();
        assert!((d - c["delta"].as_f64().unwrap()).abs() < 0.011, "{c}");
    }
}

#[test]
fn bad_input_is_a_tool_error_and_the_server_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(
        root.join("garbage.bin"),
        (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(root.join("big.log"), vec![b'x'; 2048]).unwrap();
    std::fs::write(root.join("empty.log"), b"").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
    let mut c = config(vec![root.clone()], tmp.path());
    c.max_input_bytes = 1024;
    let s = server(c);
    let p = |n: &str| root.join(n).to_str().unwrap().to_string();
    let cases: Vec<(&str, Value, &str)> = vec![
        ("analyze_kernel_log", json!({"path": "/etc/shadow"}), "outside the directories"),
        ("analyze_kernel_log", json!({"path": p("passwd")}), "outside the directories"),
        ("analyze_kernel_log", json!({"path": p("missing.log")}), "No such file"),
        ("analyze_kernel_log", json!({"path": p("big.log")}), "over this server's limit"),
        ("analyze_kernel_log", json!({"path": p("empty.log")}), "is empty"),
        ("analyze_kernel_log", json!({"path": 7}), "invalid arguments"),
        ("analyze_kernel_log", json!({"path": p("empty.log"), "bogus": 1}), "invalid arguments"),
        ("summarize_profile", json!({"path": p("garbage.bin")}), "over this server's limit"),
        ("summarize_profile", json!({}), "exactly one of"),
        ("kernel_source", json!({"function": "vfs_read"}), "--kernel-src"),
        ("search_fixes", json!({"functions": ["x"]}), "--kernel-git"),
        ("query_history", json!({"what": "overview"}), "--db"),
        ("query_history", json!({"what": "everything"}), "invalid arguments"),
        ("no_such_tool", json!({}), "unknown tool"),
    ];
    for (tool, args, want) in cases {
        let (err, _, text) = call(&s, tool, args.clone());
        assert!(err, "{tool} {args}: not an error");
        assert!(text.contains(want), "{tool} {args}: {text:?} lacks {want:?}");
    }
    // Binary data under the limit: read, and said not to be a profile.
    let mut c = config(vec![root.clone()], tmp.path());
    c.max_input_bytes = 1 << 20;
    let s = server(c);
    let (err, _, text) = call(&s, "summarize_profile", json!({"path": p("garbage.bin")}));
    assert!(err && text.contains("match none of the formats"), "{text}");
    // And the server still answers.
    let log = data().join("kernel-log/syzkaller/report/106");
    let mut c = config(vec![data()], tmp.path());
    c.max_input_bytes = 1 << 20;
    let (err, _, _) = call(&server(c), "analyze_kernel_log", json!({"path": log.to_str().unwrap()}));
    assert!(!err);
}

/// A folded profile of `n` distinct stacks with weights of several magnitudes (a few heavy
/// paths, a long tail of light ones), seeded by `salt`.
fn many_stacks(n: u32, salt: u32) -> String {
    let mut out = String::new();
    for i in 0..n {
        let heavy = i % 1000 == 0;
        let w = if heavy { 1_000_000 + u64::from(i) } else { 1 + u64::from((i ^ salt) % 97) };
        out.push_str(&format!(
            "main;loop_{};work_{};step_{};leaf_{} {w}\n",
            i % 7,
            (i / 7) % 50,
            (i ^ salt) % 400,
            i
        ));
    }
    out
}

/// The view of a profile of more than 20,000 distinct stacks, summary or comparison, draws
/// the same totals as the tool's answer and the input: what is too narrow to draw is merged
/// into placeholder frames, never left out.
#[test]
fn the_view_of_a_large_profile_keeps_every_total() {
    let tmp = tempfile::tempdir().unwrap();
    let (after, before) = (tmp.path().join("after.folded"), tmp.path().join("before.folded"));
    std::fs::write(&after, many_stacks(60_000, 0)).unwrap();
    std::fs::write(&before, many_stacks(45_000, 0x5bd1)).unwrap();
    let total = |p: &Path| -> u64 {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let s = server(config(vec![tmp.path().to_path_buf()], tmp.path()));
    let r = rt().block_on(s.run_tool("summarize_profile", json!({"path": after.to_str().unwrap()})));
    let v = serde_json::to_value(&r).unwrap();
    assert_ne!(v["isError"], json!(true), "{v}");
    let answer = &v["structuredContent"]["total"]["weight"];
    let view = &v["_meta"]["kflame/view"];
    assert_eq!(*answer, json!(total(&after).to_string()));
    assert_eq!(view["profile"]["total"], *answer, "the view draws the tool's total");
    let notes = view["profile"]["notes"].as_str().unwrap_or("");
    assert!(notes.contains("merged into the frame above them"), "{notes}");

    let r = rt().block_on(s.run_tool(
        "diff_profiles",
        json!({"before": {"path": before.to_str().unwrap()}, "after": {"path": after.to_str().unwrap()}}),
    ));
    let v = serde_json::to_value(&r).unwrap();
    assert_ne!(v["isError"], json!(true), "{v}");
    let got = &v["structuredContent"];
    let view = &v["_meta"]["kflame/view"]["profile"];
    assert_eq!(got["total_after"]["weight"], json!(total(&after).to_string()));
    assert_eq!(got["total_before"]["weight"], json!(total(&before).to_string()));
    assert_eq!(view["total"], got["total_after"]["weight"], "the view's after total");
    assert_eq!(view["totalBefore"], got["total_before"]["weight"], "the view's before total");
}

#[test]
fn a_call_over_the_time_limit_is_abandoned_with_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = config(vec![data()], tmp.path());
    c.timeout = Duration::from_millis(1);
    let big = data().join("perf/captures/perf-sys-cpuclock.script.txt");
    let (err, _, text) = call(&server(c), "summarize_profile", json!({"path": big.to_str().unwrap()}));
    assert!(err && text.contains("longer than this server's limit"), "{text}");
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn kernel_source_and_callers_from_a_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("linux");
    write(&tree, "Makefile", "VERSION = 6\nPATCHLEVEL = 1\n");
    write(&tree, "include/linux/fs.h", "struct file;\nssize_t vfs_read(struct file *f);\n");
    write(
        &tree,
        "fs/read_write.c",
        "#include <linux/fs.h>\n\nssize_t vfs_read(struct file *f)\n{\n\treturn 0;\n}\n\n\
         SYSCALL_DEFINE3(read, unsigned int, fd, char __user *, buf, size_t, count)\n{\n\treturn vfs_read(0);\n}\n",
    );
    let mut c = config(vec![], &tmp.path().join("cache"));
    c.kernel_src = Some(tree);
    let s = server(c);
    let (err, got, text) = call(&s, "kernel_source", json!({"function": "vfs_read+0x1a/0x80"}));
    assert!(!err, "{text}");
    assert_eq!(got["definitions"][0]["file"], "fs/read_write.c");
    assert_eq!(got["definitions"][0]["start"], 3);
    assert!(got["definitions"][0]["text"].as_str().unwrap().contains("return 0;"));
    let (err, got, _) = call(&s, "kernel_source", json!({"function": "__x64_sys_read"}));
    assert!(!err);
    assert_eq!(got["definitions"][0]["kind"], "syscall");
    let (err, got, text) = call(&s, "find_callers", json!({"function": "vfs_read"}));
    assert!(!err, "{text}");
    assert_eq!(got["callers"][0]["file"], "fs/read_write.c");
    assert!(tmp.path().join("cache").read_dir().unwrap().count() > 0, "the index is in the cache");
    let (err, _, text) = call(&s, "kernel_source", json!({"function": "no_such_function"}));
    assert!(err && text.contains("not defined"), "{text}");
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").arg("-C").arg(repo).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn fixes_are_real_commits_that_touch_the_function() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("libbpf");
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame-fixes/tests/data/libbpf-2023.bundle");
    let out = std::process::Command::new("git")
        .args(["clone", "-q", "--no-checkout", "--branch", "history-2023"])
        .arg(bundle)
        .arg(&repo)
        .output()
        .unwrap();
    assert!(out.status.success());
    // The first 400 commits keep the index build short.
    let order: Vec<String> =
        git(&repo, &["rev-list", "--topo-order", "--reverse", "HEAD"]).lines().map(str::to_string).collect();
    git(&repo, &["update-ref", "refs/heads/small", &order[399]]);
    git(&repo, &["symbolic-ref", "HEAD", "refs/heads/small"]);
    let mut c = config(vec![], &tmp.path().join("cache"));
    c.kernel_git = Some(repo.clone());
    let s = server(c);
    let (err, got, text) = call(&s, "search_fixes", json!({"functions": ["bpf_object__load"], "limit": 3}));
    assert!(!err, "{text}");
    let fixes = got["fixes"].as_array().unwrap();
    assert!(!fixes.is_empty() && fixes.len() <= 3, "{got}");
    for f in fixes {
        let id = f["id"].as_str().unwrap();
        assert_eq!(id.len(), 40);
        let patch = git(&repo, &["show", "--format=%s", id]);
        assert!(patch.contains("bpf_object__load"), "{id} does not touch bpf_object__load");
        assert!(f["matched"].to_string().contains("bpf_object__load"));
    }
}

/// A copy in `dir` of a history `kflame watch` wrote (`kflame-serve`'s test data).
fn watched_db(dir: &Path) -> PathBuf {
    let db = dir.join("history.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame-serve/tests/data/watched-cgroups.db"),
        &db,
    )
    .unwrap();
    db
}

#[test]
fn history_tools_read_a_watched_database() {
    let tmp = tempfile::tempdir().unwrap();
    let db = watched_db(tmp.path());
    // Two real kernel reports stored as kflame watch stores them.
    {
        use kflame_store::{OpenMode, Sqlite, Store, StoredReport};
        let mut st = Sqlite::open(&db, OpenMode::Write).unwrap();
        let text = std::fs::read_to_string(data().join("kernel-log/captures/dmesg-hung-task-calltrace.txt"))
            .unwrap();
        for (i, host) in ["testvm", "othervm"].iter().enumerate() {
            st.append_report(&StoredReport {
                host,
                time_ns: 1_764_062_990_000_000_000 + i as i64 * 1_000_000_000,
                kind: "hung_task",
                title: "INFO: task hung",
                stack: "",
                text: &text,
            })
            .unwrap();
        }
        // A stored report whose text holds no report (cut before its header): counted, not dropped.
        st.append_report(&StoredReport {
            host: "testvm",
            time_ns: 1_764_062_995_000_000_000,
            kind: "oops",
            title: "Oops: cut",
            stack: "",
            text: "[  12.000000] Modules linked in: x\n",
        })
        .unwrap();
        st.flush().unwrap();
    }
    let mut c = config(vec![], tmp.path());
    c.db = Some(db.clone());
    let s = server(c);
    let (err, got, text) = call(&s, "query_history", json!({"what": "overview"}));
    assert!(!err, "{text}");
    assert!(got["hosts"].to_string().contains("testvm"));
    let span = &got["span"];
    let (from, to) = (span["from"].as_str().unwrap().to_string(), span["to"].as_str().unwrap().to_string());
    let (err, got, text) = call(
        &s,
        "query_history",
        json!({"what": "metrics", "from": from, "to": to, "names": ["cpu.usr"], "points": 5}),
    );
    assert!(!err, "{text}");
    assert!(got["series"][0]["points"].as_array().is_some_and(|p| !p.is_empty() && p.len() <= 5), "{got}");
    let (err, got, _) = call(&s, "query_history", json!({"what": "events", "from": "2020-01-01T00:00:00Z"}));
    assert!(!err);
    assert!(got["events"].to_string().contains("trigger"));
    let (err, got, text) = call(&s, "summarize_profile", json!({"range": {"from": from, "to": to}}));
    assert!(!err, "{text}");
    let db_read = kflame_store::Sqlite::open(&db, kflame_store::OpenMode::Read).unwrap();
    let now = kflame_store::time::now_ns();
    let q = kflame_store::ProfileQuery::new(
        kflame_store::Kind::Cpu,
        kflame_store::time::parse_time(&from, now).unwrap(),
        kflame_store::time::parse_time(&to, now).unwrap(),
    );
    use kflame_store::Query;
    let p = db_read.profile(&q).unwrap();
    assert_eq!(got["total"]["weight"], json!(p.stacks.total().to_string()));
    let (err, got, text) = call(&s, "list_reports", json!({"from": "2020-01-01T00:00:00Z"}));
    assert!(!err, "{text}");
    assert_eq!(got["reports"], 3);
    assert_eq!(got["unread"].as_array().unwrap().len(), 1, "{got}");
    assert_eq!(got["unread"][0]["title"], "Oops: cut");
    assert_eq!(got["groups"][0]["count"], 2);
    assert_eq!(got["groups"][0]["signature"], "INFO: task hung in mnt_want_write");
    assert_eq!(got["groups"][0]["hosts"], json!(["othervm", "testvm"]));
}

/// `list_reports` lists each group's latest reports; `get_report` explains one of them: the
/// analysis `kflame analyze` gives for its text (with the culprit's source from a tree), the
/// same signature over the whole history, and its host's CPU profile before it, whose total is
/// the store's for that window.
#[test]
fn get_report_explains_a_stored_report_with_what_came_before_it() {
    use kflame_store::{OpenMode, Query, Sqlite, Store, StoredReport};
    let tmp = tempfile::tempdir().unwrap();
    let db = watched_db(tmp.path());
    let report = data().join("kernel-log/captures/dmesg-hung-task-calltrace.txt");
    let text = std::fs::read_to_string(&report).unwrap();
    // The same real hung-task report on two hosts: on `testvm`, the watched host, at the end of
    // its history (so that its CPU profile covers the minute before), and a day earlier on
    // `othervm`.
    let (_, end) = Sqlite::open(&db, OpenMode::Read).unwrap().time_bounds().unwrap().unwrap();
    let at = end - 1_000_000_000;
    {
        let mut st = Sqlite::open(&db, OpenMode::Write).unwrap();
        for (host, t) in [("othervm", at - 86_400_000_000_000), ("testvm", at)] {
            st.append_report(&StoredReport {
                host,
                time_ns: t,
                kind: "hung_task",
                title: "INFO: task hung",
                stack: "",
                text: &text,
            })
            .unwrap();
        }
        st.flush().unwrap();
    }
    let tree = tmp.path().join("linux");
    write(&tree, "Makefile", "VERSION = 6\nPATCHLEVEL = 1\n");
    write(&tree, "include/linux/fs.h", "struct vfsmount;\nint mnt_want_write(struct vfsmount *m);\n");
    write(
        &tree,
        "fs/namespace.c",
        "#include <linux/fs.h>\n\nint mnt_want_write(struct vfsmount *m)\n{\n\treturn __mnt_want_write(m);\n}\n",
    );
    let mut c = config(vec![], &tmp.path().join("cache"));
    c.db = Some(db.clone());
    c.kernel_src = Some(tree);
    let s = server(c);

    let (err, got, text) =
        call(&s, "list_reports", json!({"from": "2020-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z"}));
    assert!(!err, "{text}");
    let g = &got["groups"][0];
    assert_eq!(g["signature"], "INFO: task hung in mnt_want_write");
    let latest = g["latest"].as_array().unwrap();
    assert_eq!(latest.len(), 2);
    assert_eq!(latest[0]["host"], "testvm");
    let time = latest[0]["time"].as_str().unwrap().to_string();

    let (err, got, out) = call(&s, "get_report", json!({"time": time}));
    assert!(!err, "{out}");
    assert_eq!(got["host"], "testvm");
    assert_eq!(got["time_ns"], json!(at));
    assert_eq!(got["signature"], "INFO: task hung in mnt_want_write");
    // The analysis is analyze's for the same text (its trace cut to what fits a model's
    // context, as analyze_kernel_log cuts it), with the culprit's source.
    let want = cli_json(&report, Format::KernelLog);
    let (e, w) = (&got["analysis"]["error"], &want["groups"][0]["error"]);
    for k in ["kind", "title", "header", "kernel", "comm", "pid", "culprit", "callers", "blame"] {
        assert_eq!(e[k], w[k], "{k}");
    }
    let (t, wt) = (e["trace"].as_array().unwrap(), w["trace"].as_array().unwrap());
    assert_eq!(t[..], wt[..t.len()]);
    assert_eq!(e["trace_more"], json!(wt.len() - t.len()));
    assert_eq!(got["analysis"]["resolution"]["source"]["file"], "fs/namespace.c");
    assert_eq!(got["analysis"]["resolution"]["source"]["start"], 3);
    // Seen on both hosts.
    assert_eq!(got["similar"]["count"], 2);
    assert_eq!(got["similar"]["hosts"], json!(["othervm", "testvm"]));
    // The minute before: the store's CPU profile of testvm over it.
    let q = kflame_store::ProfileQuery {
        host: Some("testvm"),
        ..kflame_store::ProfileQuery::new(kflame_store::Kind::Cpu, at - 60_000_000_000, at)
    };
    let p = Sqlite::open(&db, OpenMode::Read).unwrap().profile(&q).unwrap();
    assert!(!p.stacks.total().is_zero());
    assert_eq!(got["before"]["seconds"], 60);
    assert_eq!(got["before"]["cpu"]["total"]["weight"], json!(p.stacks.total().to_string()));
    assert!(
        out.contains("hung_task: INFO: task hung")
            && out.contains("2 reports with this signature on 2 hosts"),
        "{out}"
    );
    // The other host's report a day earlier: nothing stored before it.
    let (err, got, out) = call(&s, "get_report", json!({"time": latest[1]["time"], "host": "othervm"}));
    assert!(!err, "{out}");
    assert_eq!(got["before"]["cpu"], Value::Null);

    // Bad arguments are tool errors that say what to do.
    let (err, _, out) = call(&s, "get_report", json!({"time": "2020-01-01T00:00:00Z"}));
    assert!(
        err && out.contains("no kernel report at 2020-01-01T00:00:00Z") && out.contains("list_reports"),
        "{out}"
    );
    let (err, _, out) = call(&s, "get_report", json!({"time": time, "before": 0}));
    assert!(err && out.contains("expected 1 to 3600"), "{out}");
    let (err, _, out) = call(&s, "get_report", json!({"time": "yesterday-ish"}));
    assert!(err && out.contains("time"), "{out}");
}
