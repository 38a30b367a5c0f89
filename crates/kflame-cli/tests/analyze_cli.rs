//! `kflame analyze` and `kflame source` as a user runs them, on real reports and profiles.

use std::fs;
use std::process::{Command, Output};

use serde_json::Value;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data");

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(args: &[&str]) -> Value {
    let out = kflame(args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// A syzkaller corpus file: its expected title (header) and the log after the header.
fn syzkaller(name: &str) -> (String, String) {
    let data = text(&fs::read(format!("{DATA}/kernel-log/syzkaller/report/{name}")).unwrap());
    let title = data.lines().find_map(|l| l.strip_prefix("TITLE: ")).unwrap().to_string();
    let log = data.split_once("\n\n").unwrap().1.to_string();
    (title, log)
}

#[test]
fn reports_are_grouped_with_the_culprit_syzkaller_names() {
    let (title, log) = syzkaller("730");
    let want = title.rsplit_once(" in ").unwrap().1;
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.log");
    let b = dir.path().join("b.log");
    fs::write(&a, format!("{log}{log}")).unwrap();
    let (_, other) = syzkaller("113");
    fs::write(&b, &other).unwrap();
    let v = json(&["analyze", "--json", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(v["schema"], "kflame-analyze");
    assert_eq!(v["version"], 1);
    assert_eq!(v["reports"], 3);
    let g = &v["groups"][0];
    assert_eq!(g["count"], 2, "{g:#}");
    assert_eq!(g["error"]["culprit"]["function"].as_str().unwrap().split('.').next(), Some(want));
    assert!(g["error"]["culprit"]["offset"].as_str().unwrap().starts_with("0x"));
    let conf = g["error"]["culprit"]["confidence"].as_f64().unwrap();
    assert!(conf > 0.0 && conf <= 1.0);
    assert!(g["first_seen"]["line"].as_u64() < g["last_seen"]["line"].as_u64());
    assert_eq!(v["groups"][1]["count"], 1);
    // No git history given: said plainly, no empty list.
    assert_eq!(g["resolution"]["fixes"], Value::Null);
    assert!(g["resolution"]["notes"].to_string().contains("--kernel-git"));
    assert_eq!(g["resolution"]["query"]["functions"][0].as_str(), Some(want));
    // Text and Markdown carry the three sections.
    for fmt in ["text", "md"] {
        let out = kflame(&["analyze", "--format", fmt, a.to_str().unwrap()]);
        let s = text(&out.stdout);
        for section in ["Error", "Resolution", "Summary"] {
            assert!(s.contains(section), "{fmt}: {s}");
        }
        assert!(s.contains(want), "{s}");
    }
    let limited = json(&["analyze", "--json", "--limit", "1", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(limited["groups"].as_array().unwrap().len(), 1);
    assert_eq!(limited["groups_total"], 2);
}

#[test]
fn a_cut_trace_still_gives_an_error_with_less_confidence() {
    let (_, log) = syzkaller("730");
    let lines: Vec<&str> = log.lines().collect();
    // Cut just after the culprit's frame: the rest of the trace is lost.
    let at = lines.iter().position(|l| l.contains(" udf_rmdir+")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.log");
    let cut = dir.path().join("cut.log");
    fs::write(&full, &log).unwrap();
    fs::write(&cut, lines[..=at].join("\n") + "\n").unwrap();
    let f = json(&["analyze", "--json", full.to_str().unwrap()]);
    let c = json(&["analyze", "--json", cut.to_str().unwrap()]);
    let (f, c) = (&f["groups"][0]["error"], &c["groups"][0]["error"]);
    assert_eq!(c["truncated"], true, "{c:#}");
    assert_eq!(c["culprit"]["function"], f["culprit"]["function"]);
    assert!(c["culprit"]["confidence"].as_f64() < f["culprit"]["confidence"].as_f64());
    assert!(c["culprit"]["doubts"].to_string().contains("cut"));
    // Garbage alone: no report, said so, not a failure.
    let junk = dir.path().join("junk.log");
    fs::write(&junk, "[    1.000000] hello\n[    1.000001] Call Trace:\n[    1.000002]  ???\n").unwrap();
    let out = kflame(&["analyze", junk.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("no kernel report found"), "{}", text(&out.stdout));
}

#[test]
fn a_latency_profile_in_its_unit() {
    let f = format!("{DATA}/ftrace/expected/ftrace-dd-mixed.syscalls.folded");
    let v = json(&["analyze", "--json", "--limit", "3", &f]);
    let p = &v["profiles"][0];
    assert_eq!(p["unit"], "ns");
    // The total is the sum of the folded weights.
    let folded = fs::read_to_string(&f).unwrap();
    let lines: Vec<(&str, u64)> = folded
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (stack, w) = l.rsplit_once(' ').unwrap();
            (stack, w.parse::<u64>().unwrap())
        })
        .collect();
    let sum: u64 = lines.iter().map(|l| l.1).sum();
    assert_eq!(p["total"]["weight"], sum.to_string());
    // The hottest leaf and its self weight, computed here from the folded lines.
    let mut leaves: std::collections::BTreeMap<&str, u64> = Default::default();
    for (stack, w) in &lines {
        *leaves.entry(stack.rsplit(';').next().unwrap()).or_default() += w;
    }
    assert_eq!(p["by_self"].as_array().unwrap().len(), leaves.len().min(3));
    let top = leaves.values().max().unwrap();
    assert_eq!(p["by_self"][0]["self"]["weight"], top.to_string());
    assert_eq!(p["paths"].as_array().unwrap().len(), lines.len().min(3));
    // The top contributor in the unit: the heaviest root frame (here the syscall).
    let mut roots: std::collections::BTreeMap<&str, u64> = Default::default();
    for (stack, w) in &lines {
        *roots.entry(stack.split(';').next().unwrap()).or_default() += w;
    }
    let (root, w) = roots.iter().max_by_key(|(_, w)| **w).unwrap();
    assert_eq!(p["by_root"][0]["frames"][0], *root);
    assert_eq!(p["by_root"][0]["share"]["weight"], w.to_string());
    assert!(p["total"]["display"].as_str().unwrap().ends_with('s'), "{p:#}");
}

#[test]
fn source_lookup_and_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("linux");
    fs::create_dir_all(tree.join("kernel")).unwrap();
    fs::write(tree.join("Makefile"), "VERSION = 6\nPATCHLEVEL = 1\n").unwrap();
    fs::write(tree.join("kernel/fork.c"), "static int copy_mm(int f)\n{\n\treturn dup_mm(f);\n}\n").unwrap();
    let idx = dir.path().join("idx");
    let (t, i) = (tree.to_str().unwrap(), idx.to_str().unwrap());
    let out = kflame(&["source", "copy_mm", "--kernel-src", t, "--index", i]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("kernel/fork.c:1-4 (static)\nstatic int copy_mm(int f)\n"));
    let out = kflame(&["source", "dup_mm", "--callers", "--kernel-src", t, "--index", i]);
    assert_eq!(text(&out.stdout), "kernel/fork.c:1: copy_mm\n");
    let out = kflame(&["source", "nothing_here", "--kernel-src", t, "--index", i]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("nothing_here is not defined"), "{}", text(&out.stderr));
    let out = kflame(&["source", "x", "--kernel-src", dir.path().to_str().unwrap(), "--index", i]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not a kernel source tree"), "{}", text(&out.stderr));
    let (_, log) = syzkaller("730");
    let l = dir.path().join("r.log");
    fs::write(&l, log).unwrap();
    let out = kflame(&["analyze", "--kernel-git", t, l.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("is not a git repository"), "{}", text(&out.stderr));
}
