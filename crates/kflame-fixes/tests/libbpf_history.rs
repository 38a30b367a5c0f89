//! Fix search on a real kernel-style history: libbpf's git history to 2023-12-13
//! (`data/libbpf-2023.bundle`, see `data/README.md`), whose `Fixes:` trailers give an
//! automatic relevance set.
//!
//! Method (issue 18): for each fixing commit F and each of its `Fixes: <hash> ("subject")`
//! trailers, the introducing commit I is the ancestor of F whose subject is the quoted one
//! (the hash is the kernel's, not this repository's). The query is one function F's diff
//! touches: the first one named in its hunk headers, as `git show` prints them. We measure
//! F's rank with I as `after` (first; top 5) and without (top 5), and the baseline the issue
//! gives: the commits after I whose hunk headers name the function, fixes first, oldest
//! first. Everything below is computed here from git's own output; only the thresholds are
//! written down.

#![allow(clippy::print_stdout)] // the figures are what this test is for

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use kflame_fixes::{Index, Query, parse_fixes};

fn bundle() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libbpf-2023.bundle")
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn clone(into: &Path) -> PathBuf {
    let dst = into.join("libbpf");
    let out = Command::new("git")
        .args(["clone", "-q", "--branch", "history-2023"])
        .arg(bundle())
        .arg(&dst)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git clone: {}", String::from_utf8_lossy(&out.stderr));
    dst
}

/// The function a hunk header names: the identifier right before its first `(`.
fn header_function(line: &str) -> Option<String> {
    let rest = line.strip_prefix("@@")?;
    let ctx = &rest[rest.find("@@")? + 2..];
    let before = ctx[..ctx.find('(')?].trim_end();
    let name: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let keyword = matches!(name.as_str(), "if" | "for" | "while" | "switch" | "return" | "sizeof");
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) && !keyword).then_some(name)
}

struct History {
    /// Oldest first (topological).
    order: Vec<String>,
    subject: HashMap<String, String>,
    message: HashMap<String, String>,
    /// Hunk-header functions of each commit, in diff order.
    headers: HashMap<String, Vec<String>>,
}

fn history(repo: &Path) -> History {
    let log = git(
        repo,
        &["log", "--topo-order", "--reverse", "--no-color", "--format=%x1e%H%x1f%s%x1f%B%x1d", "-p"],
    );
    let mut h =
        History { order: vec![], subject: HashMap::new(), message: HashMap::new(), headers: HashMap::new() };
    for rec in log.split('\u{1e}').filter(|r| !r.is_empty()) {
        let (head, diff) = rec.split_once('\u{1d}').unwrap_or((rec, ""));
        let mut parts = head.splitn(3, '\u{1f}');
        let id = parts.next().unwrap().to_string();
        h.subject.insert(id.clone(), parts.next().unwrap_or("").to_string());
        h.message.insert(id.clone(), parts.next().unwrap_or("").to_string());
        h.headers.insert(id.clone(), diff.lines().filter_map(header_function).collect());
        h.order.push(id);
    }
    h
}

struct Pair {
    fix: String,
    intro: String,
    function: String,
}

struct Pairs {
    pairs: Vec<Pair>,
    trailers: usize,
    no_intro: usize,
    no_function: usize,
}

fn pairs(repo: &Path, h: &History) -> Pairs {
    let pos: HashMap<&str, usize> = h.order.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    let mut by_subject: HashMap<&str, Vec<&str>> = HashMap::new();
    for c in &h.order {
        by_subject.entry(h.subject[c].as_str()).or_default().push(c);
    }
    let mut out = Pairs { pairs: vec![], trailers: 0, no_intro: 0, no_function: 0 };
    for fix in &h.order {
        for t in parse_fixes(&h.message[fix]) {
            out.trailers += 1;
            // The latest earlier commit with that subject that is an ancestor of the fix.
            let intro = by_subject.get(t.subject.as_str()).and_then(|cands| {
                cands.iter().rev().find(|c| {
                    pos[**c] < pos[fix.as_str()]
                        && Command::new("git")
                            .arg("-C")
                            .arg(repo)
                            .args(["merge-base", "--is-ancestor", c, fix])
                            .status()
                            .is_ok_and(|s| s.success())
                })
            });
            let Some(intro) = intro else {
                out.no_intro += 1;
                continue;
            };
            let Some(function) = h.headers[fix].first() else {
                out.no_function += 1;
                continue;
            };
            if !out.pairs.iter().any(|p| p.fix == *fix && p.intro == *intro) {
                out.pairs.push(Pair {
                    fix: fix.clone(),
                    intro: intro.to_string(),
                    function: function.clone(),
                });
            }
        }
    }
    out
}

fn pct(n: usize, d: usize) -> f64 {
    100.0 * n as f64 / d.max(1) as f64
}

#[test]
fn fix_search_targets_on_libbpf_history() {
    let t0 = std::time::Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let repo = clone(tmp.path());
    let h = history(&repo);
    let p = pairs(&repo, &h);
    println!("history read and pairs found in {:.1?}", t0.elapsed());
    let n = p.pairs.len();
    assert!(n >= 100, "only {n} pairs");

    let index = Index::open_or_build(&repo, Some(&tmp.path().join("index"))).unwrap();
    assert_eq!(index.stats().total, h.order.len(), "every commit indexed");
    println!("index built in {:.1?} (debug build)", index.stats().elapsed);

    let (mut first_after, mut top5_after, mut top5_plain) = (0, 0, 0);
    let (mut base_first, mut base_top5) = (0, 0);
    let mut misses = Vec::new();
    let pos: HashMap<&str, usize> = h.order.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    for pair in &p.pairs {
        let q = |after: bool| Query {
            functions: vec![pair.function.clone()],
            after: after.then(|| pair.intro.clone()),
            limit: 5,
            ..Query::default()
        };
        let with = index.search(&q(true)).unwrap();
        let rank = with.iter().position(|x| x.id == pair.fix);
        first_after += usize::from(rank == Some(0));
        top5_after += usize::from(rank.is_some());
        if rank != Some(0) {
            misses.push(format!(
                "  {} {} after {}: rank {:?}",
                &pair.fix[..12],
                pair.function,
                &pair.intro[..12],
                rank.map(|r| r + 1)
            ));
        }
        let without = index.search(&q(false)).unwrap();
        top5_plain += usize::from(without.iter().any(|x| x.id == pair.fix));

        // Baseline: commits after I whose hunk headers name the function; fixes first, then
        // oldest first.
        let after: HashSet<String> =
            git(&repo, &["rev-list", &format!("{}..HEAD", pair.intro)]).lines().map(str::to_string).collect();
        let mut cands: Vec<&String> =
            h.order.iter().filter(|c| after.contains(*c) && h.headers[*c].contains(&pair.function)).collect();
        cands.sort_by_key(|c| (parse_fixes(&h.message[*c]).is_empty(), pos[c.as_str()]));
        let brank = cands.iter().position(|c| **c == pair.fix);
        base_first += usize::from(brank == Some(0));
        base_top5 += usize::from(brank.is_some_and(|r| r < 5));
    }

    println!(
        "fix search on libbpf history ({} commits): {} Fixes: trailers, {n} (fix, introducing) pairs;",
        h.order.len(),
        p.trailers
    );
    println!(
        "  skipped: {} trailers quote a subject not found before the fix, {} fixes name no function in a hunk header",
        p.no_intro, p.no_function
    );
    println!("  query: the first hunk-header function of the fix's diff");
    println!(
        "  with --after INTRO:    fix first {first_after}/{n} = {:.1}% (target >= 90%), top 5 {top5_after}/{n} = {:.1}% (target >= 98%)",
        pct(first_after, n),
        pct(top5_after, n)
    );
    println!(
        "  without --after:       fix in top 5 {top5_plain}/{n} = {:.1}% (target >= 95%)",
        pct(top5_plain, n)
    );
    println!(
        "  baseline filter (after INTRO, touching the function, fixes first, oldest first): first {base_first}/{n} = {:.1}%, top 5 {base_top5}/{n} = {:.1}%",
        pct(base_first, n),
        pct(base_top5, n)
    );
    if !misses.is_empty() {
        println!("  not first with --after:\n{}", misses.join("\n"));
    }
    assert!(pct(first_after, n) >= 90.0);
    assert!(pct(top5_after, n) >= 98.0);
    assert!(pct(top5_plain, n) >= 95.0);
}
