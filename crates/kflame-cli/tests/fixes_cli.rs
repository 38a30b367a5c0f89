//! `kflame fixes` as a user runs it: on the first 200 commits of the real libbpf history
//! (`crates/kflame-fixes/tests/data/libbpf-2023.bundle`), text and JSON output, and the
//! messages and exit codes of bad input.

use std::path::Path;
use std::process::{Command, Output};

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("kflame runs")
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn fixes_text_json_and_bad_input() {
    let tmp = std::env::temp_dir().join(format!("kflame-fixes-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let repo = tmp.join("libbpf");
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame-fixes/tests/data/libbpf-2023.bundle");
    let ok = Command::new("git")
        .args(["clone", "-q", "--bare", "--branch", "history-2023"])
        .arg(&bundle)
        .arg(&repo)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let order: Vec<String> =
        git(&repo, &["rev-list", "--topo-order", "--reverse", "HEAD"]).lines().map(str::to_string).collect();
    git(&repo, &["update-ref", "refs/heads/history-2023", &order[199]]);
    let r = repo.to_str().unwrap();

    // Text: the first run says what it indexed; every hit shows its full id and why.
    let out = kflame(&["fixes", "--git", r, "--function", "bpf_object__open", "-n", "3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("indexed 200 commits"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(" 1. "), "{text}");
    assert!(text.contains("matched: function bpf_object__open"), "{text}");

    // JSON: the fields the issue names, with full hashes of commits in this history.
    let out =
        kflame(&["fixes", "--git", r, "--function", "bpf_object__open", "--after", &order[50], "--json"]);
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "nothing new to index: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hits = v.as_array().unwrap();
    assert!(!hits.is_empty());
    for h in hits {
        let id = h["id"].as_str().unwrap();
        assert!(order.iter().any(|c| c == id));
        assert!(h["date"].as_str().unwrap().len() >= 10);
        assert!(h["subject"].is_string() && h["score"].is_number() && h["fixes_trailer"].is_boolean());
        assert!(h["matched"].as_array().unwrap().iter().any(|m| m == "function:bpf_object__open"));
    }

    // Bad input: exit 1 with a message naming what is wrong; no query at all is a usage error.
    let plain = tmp.join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = kflame(&["fixes", "--git", plain.to_str().unwrap(), "--function", "f"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("plain is not a git repository"));
    let out = kflame(&["fixes", "--git", r, "--function", "f", "--after", "no-such-rev"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("revision `no-such-rev` does not name a commit"));
    let out = kflame(&["fixes", "--git", r]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&tmp);
}
