//! `kflame serve --kernel-src --kernel-git`: a stored report's `/api/report` analysis carries
//! the culprit's source, its maintainers and the fix candidates, exactly as `kflame analyze
//! --json` gives them for the same text with the same tree and history.
//!
//! The report is real (KernelCI's boot log of 5.10.219-rc1, the `apply_returns` WARNING, in
//! `crates/kflame/tests/data/kernel-log/kmsg/`). The kernel tree and its git history are made
//! by the test: the culprit's file with the function and its caller, a `MAINTAINERS` section,
//! and three commits made with git, one of which names the function.

mod common;
/// The history writer of the serve crate's tests (its corpus replay).
#[path = "../../kflame-serve/tests/common/history.rs"]
mod history;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use kflame_store::{Metric, OpenMode, Query, Sqlite, Store, StoredReport};
use serde_json::Value;

const KFLAME: &str = env!("CARGO_BIN_EXE_kflame");
const KMSG: &str = include_str!("../../kflame/tests/data/kernel-log/kmsg/kernelci-boot-005.kmsg.txt");
const SEC: i64 = 1_000_000_000;
const T0: i64 = 1_764_000_000 * SEC;

/// The WARNING's lines as the watcher stores them: each record's message, from the
/// `WARNING:` line through `---[ end trace`.
fn warning() -> String {
    let lines: Vec<&str> = KMSG.lines().collect();
    let start = lines.iter().position(|l| l.contains(";WARNING: CPU:")).unwrap();
    let end = lines.iter().position(|l| l.contains(";---[ end trace")).unwrap();
    let msgs: Vec<&str> =
        lines[start..=end].iter().filter_map(|l| l.split_once(';').map(|(_, m)| m)).collect();
    msgs.join("\n")
}

fn git(repo: &Path, args: &[&str], date: &str) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=Test Author",
            "-c",
            "user.email=author@example.org",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A kernel tree with `apply_returns` and its caller, and a git history of it.
fn kernel_tree(root: &Path) {
    let file = root.join("arch/x86/kernel/alternative.c");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::create_dir_all(root.join("kernel")).unwrap();
    std::fs::write(root.join("Makefile"), "VERSION = 5\nPATCHLEVEL = 10\nSUBLEVEL = 219\n").unwrap();
    std::fs::write(
        root.join("MAINTAINERS"),
        "X86 ARCHITECTURE (32-BIT AND 64-BIT)\nM:\tA Maintainer <a@example.org>\nL:\tlinux-kernel@vger.kernel.org\n\
         S:\tMaintained\nF:\tarch/x86/\n\nTHE REST\nM:\tLinus Torvalds <torvalds@linux-foundation.org>\nS:\tBuried alive in reports\nF:\t*\nF:\t*/\n",
    )
    .unwrap();
    let v1 = "void __init_or_module noinline apply_returns(s32 *start, s32 *end)\n{\n\ts32 *s;\n\n\
              \tfor (s = start; s < end; s++) {\n\t\tvoid *addr = (void *)s + *s;\n\t\tWARN_ON_ONCE(!addr);\n\t}\n}\n\n\
              void __init alternative_instructions(void)\n{\n\tapply_returns(__return_sites, __return_sites_end);\n}\n";
    std::fs::write(&file, v1).unwrap();
    git(root, &["init", "-q", "-b", "master"], "2024-01-01T00:00:00Z");
    git(root, &["add", "-A"], "2024-01-01T00:00:00Z");
    git(root, &["commit", "-q", "-m", "Initial import"], "2024-01-01T00:00:00Z");
    std::fs::write(root.join("kernel/fork.c"), "int copy_mm(int f)\n{\n\treturn f;\n}\n").unwrap();
    git(root, &["add", "-A"], "2024-02-01T00:00:00Z");
    git(root, &["commit", "-q", "-m", "fork: add copy_mm"], "2024-02-01T00:00:00Z");
    std::fs::write(&file, v1.replace("WARN_ON_ONCE(!addr);", "if (WARN_ON_ONCE(!addr))\n\t\t\tcontinue;"))
        .unwrap();
    git(root, &["add", "-A"], "2024-03-01T00:00:00Z");
    git(
        root,
        &[
            "commit",
            "-q",
            "-m",
            "x86/alternatives: Skip bad return sites in apply_returns()",
            "-m",
            "apply_returns() warned and patched a bad site.\n\nFixes: 0123456789ab (\"x86: Add return thunk\")",
        ],
        "2024-03-01T00:00:00Z",
    );
}

#[test]
fn serve_explains_reports_with_the_kernel_tree_and_history_as_analyze_does() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("linux");
    kernel_tree(&tree);
    let index = dir.path().join("source.idx");
    let fix_index = dir.path().join("fixes");
    let db = dir.path().join("history.db");
    let text = warning();
    {
        let mut s = Sqlite::open(&db, OpenMode::Write).unwrap();
        for k in 0..3 {
            s.append_metrics("testhost", T0 + k * SEC, &[Metric { name: "cpu.usr", label: "", value: 10.0 }])
                .unwrap();
        }
        s.append_report(&StoredReport {
            host: "testhost",
            time_ns: T0 + SEC,
            kind: "warning",
            title: "WARNING in apply_returns",
            stack: "start_kernel;arch_cpu_finalize_init;alternative_instructions",
            text: &text,
        })
        .unwrap();
        s.flush().unwrap();
    }
    let (t, i, g, f) = (
        tree.to_str().unwrap(),
        index.to_str().unwrap(),
        tree.to_str().unwrap(),
        fix_index.to_str().unwrap(),
    );

    // What `kflame analyze --json` says of the same text (it also builds both indexes).
    let report = dir.path().join("warning.txt");
    std::fs::write(&report, format!("{text}\n")).unwrap();
    let out = Command::new(KFLAME)
        .args(["analyze", "--json", "--kernel-src", t, "--index", i, "--kernel-git", g, "--fix-index", f])
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = &cli["groups"][0];

    let served = common::Served::start(
        dir.path(),
        &[OsStr::new("--db"), db.as_os_str()]
            .into_iter()
            .chain(["--kernel-src", t, "--index", i, "--kernel-git", g, "--fix-index", f].map(OsStr::new))
            .collect::<Vec<_>>(),
        "reports-token-3",
    );
    let (status, body) = served.get(&format!("/api/report?time={}", T0 + SEC));
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let r: Value = serde_json::from_str(&body).unwrap();
    let a = &r["analysis"];

    // The source: the culprit's definition in the tree, its caller, the maintainers.
    let src = &a["resolution"]["source"];
    assert_eq!(src["function"], "apply_returns");
    assert_eq!(src["file"], "arch/x86/kernel/alternative.c");
    assert!(
        src["text"].as_str().unwrap().starts_with("void __init_or_module noinline apply_returns("),
        "{src}"
    );
    assert_eq!(src["callers"][0]["function"], "alternative_instructions");
    assert_eq!(a["resolution"]["maintainers"][0]["name"], "X86 ARCHITECTURE (32-BIT AND 64-BIT)");
    // The fix candidates: the commit that names the function first, with its subject.
    let fixes = a["resolution"]["fixes"].as_array().unwrap();
    assert_eq!(fixes[0]["subject"], "x86/alternatives: Skip bad return sites in apply_returns()");
    assert_eq!(fixes[0]["fixes_trailer"], true);
    // And all of it as `kflame analyze` gives it.
    assert_eq!(a["resolution"], want["resolution"]);
    assert_eq!(a["error"], want["error"]);
    assert_eq!(a["signature"], want["signature"]);
    assert_eq!(r["signature"], want["signature"]);
}

#[test]
fn the_syzkaller_corpus_replayed_into_a_history_groups_as_the_analyzer_groups_it() {
    use std::collections::{BTreeMap, BTreeSet};
    let dir = tempfile::tempdir().unwrap();
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame/tests/data/kernel-log/syzkaller/report");
    let mut names: Vec<_> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    let db = dir.path().join("history.db");
    {
        // Three hosts over the span the reports are spread on.
        let mut s = Sqlite::open(&db, OpenMode::Write).unwrap();
        for (k, host) in ["syz-0", "syz-1", "syz-2"].iter().enumerate() {
            s.append_metrics(host, T0 + k as i64, &[Metric { name: "cpu.usr", label: "", value: 1.0 }])
                .unwrap();
        }
        s.append_metrics("syz-0", T0 + 3600 * SEC, &[Metric { name: "cpu.usr", label: "", value: 1.0 }])
            .unwrap();
        s.flush().unwrap();
    }
    history::add_corpus_reports(&db, &corpus, 1).unwrap();
    // What the analyzer makes of the stored reports: its groups, and each group's hosts.
    let mut analyzer = kflame_analyze::ReportAnalyzer::new();
    let mut want_hosts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stored = Vec::new();
    let events = Sqlite::open(&db, OpenMode::Read).unwrap().events(0, i64::MAX, None).unwrap();
    for e in &events {
        let kflame_store::Event::Report { host, time_ns, text, .. } = e else { continue };
        let r = kflame::report::ReportExtractor::extract_all(text.as_bytes()).into_iter().next().unwrap();
        analyzer.add_report("corpus", &r);
        let (signature, _) = kflame_analyze::reports::signature(&r);
        want_hosts.entry(signature.clone()).or_default().insert(host.clone());
        stored.push((host.clone(), *time_ns, signature));
    }
    assert!(stored.len() > 400, "{} reports replayed", stored.len());
    let want: BTreeMap<String, usize> =
        analyzer.finish(None, None, 0).into_iter().map(|g| (g.signature, g.count)).collect();
    assert!(want.len() > 100, "{} bugs", want.len());

    let served = common::Served::start(dir.path(), &[OsStr::new("--db"), db.as_os_str()], "corpus-token-5");
    let (status, body) = served.get("/api/reports?from=0&to=4000000000000000000");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    let a: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(a["explained"], true);
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    for g in a["groups"].as_array().unwrap() {
        let sig = g["signature"].as_str().unwrap().to_string();
        let hosts: BTreeSet<String> =
            g["hosts"].as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_string()).collect();
        assert_eq!(Some(&hosts), want_hosts.get(&sig), "{sig}");
        got.insert(sig, g["count"].as_u64().unwrap() as usize);
    }
    assert_eq!(got, want);
    // A report's "seen before" is its group, over the whole history.
    for (host, time, signature) in stored.iter().step_by(50) {
        let (status, body) = served.get(&format!("/api/report?time={time}&host={host}"));
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        let r: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(r["signature"], signature.as_str());
        assert_eq!(
            r["similar"]["count"].as_u64().map(|n| n as usize),
            want.get(signature).copied(),
            "{signature}"
        );
    }
}
