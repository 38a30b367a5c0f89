//! The index's life cycle on a real history (the first few hundred commits of
//! `data/libbpf-2023.bundle`): incremental updates, rebuilds of damaged or outdated indexes,
//! and the errors for bad repositories, revisions and queries.

use std::path::{Path, PathBuf};
use std::process::Command;

use kflame_fixes::{Error, Index, Query};

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A clone of the bundle with branch `small` checked out at its `n`-th commit (oldest first).
fn clone_at(into: &Path, n: usize) -> (PathBuf, Vec<String>) {
    let dst = into.join("libbpf");
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libbpf-2023.bundle");
    let out = Command::new("git")
        .args(["clone", "-q", "--no-checkout", "--branch", "history-2023"])
        .arg(bundle)
        .arg(&dst)
        .output()
        .unwrap();
    assert!(out.status.success());
    let order: Vec<String> =
        git(&dst, &["rev-list", "--topo-order", "--reverse", "HEAD"]).lines().map(str::to_string).collect();
    git(&dst, &["update-ref", "refs/heads/small", &order[n - 1]]);
    git(&dst, &["symbolic-ref", "HEAD", "refs/heads/small"]);
    (dst, order)
}

fn query(f: &str) -> Query {
    Query { functions: vec![f.to_string()], limit: 5, ..Query::default() }
}

#[test]
fn incremental_update_indexes_only_new_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, order) = clone_at(tmp.path(), 300);
    let first = Index::open_or_build(&repo, None).unwrap();
    assert_eq!(first.stats().added, 300);
    assert_eq!(first.stats().rebuilt.as_deref(), Some("no index yet"));
    assert!(first.dir().starts_with(repo.join(".git")), "default index inside the git directory");
    drop(first);

    let again = Index::open_or_build(&repo, None).unwrap();
    assert_eq!((again.stats().added, again.stats().total, again.stats().rebuilt.clone()), (0, 300, None));
    drop(again);

    git(&repo, &["update-ref", "refs/heads/small", &order[349]]);
    let next = Index::open_or_build(&repo, None).unwrap();
    assert_eq!((next.stats().added, next.stats().total, next.stats().rebuilt.clone()), (50, 350, None));
    assert_eq!(next.tip(), order[349]);
    // A commit of the new batch is found by a function its diff names.
    let c = &order[340];
    let show = git(&repo, &["show", "--format=", c]);
    let header =
        show.lines().find(|l| l.starts_with("@@") && l.matches("@@").count() >= 2 && l.contains('('));
    if let Some(f) = header.and_then(|h| kflame_fixes::defined_function(&h[h[2..].find("@@").unwrap() + 4..]))
    {
        let hits = next.search(&Query { limit: 50, ..query(f) }).unwrap();
        assert!(hits.iter().any(|h| h.id == *c), "{c} not found by {f}");
    }
}

#[test]
fn rewritten_history_and_damaged_indexes_are_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, order) = clone_at(tmp.path(), 120);
    let dir = tmp.path().join("idx");
    drop(Index::open_or_build(&repo, Some(&dir)).unwrap());

    // The branch moved to a commit that is not a descendant of the indexed tip.
    git(&repo, &["update-ref", "refs/heads/small", &order[99]]);
    let i = Index::open_or_build(&repo, Some(&dir)).unwrap();
    assert_eq!(i.stats().total, 100);
    assert!(i.stats().rebuilt.as_deref().unwrap().contains("no longer in HEAD's history"));
    drop(i);

    // Our record garbled.
    std::fs::write(dir.join("kflame-fixes.json"), "{\"format\": 1, \"tip\": ").unwrap();
    let i = Index::open_or_build(&repo, Some(&dir)).unwrap();
    assert!(i.stats().rebuilt.as_deref().unwrap().contains("corrupt"), "{:?}", i.stats().rebuilt);
    assert_eq!(i.stats().total, 100);
    drop(i);

    // A segment file truncated.
    let victim = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "store"))
        .expect("a segment store");
    let len = std::fs::metadata(&victim).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&victim).unwrap().set_len(len / 2).unwrap();
    let i = Index::open_or_build(&repo, Some(&dir)).unwrap();
    assert!(i.stats().rebuilt.is_some(), "a truncated segment must not be trusted");
    assert_eq!(i.stats().total, 100);
    assert!(!i.search(&query("bpf_object__open")).unwrap().is_empty());
}

#[test]
fn bad_repositories_revisions_and_queries_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let e = Index::open_or_build(&missing, None).unwrap_err();
    assert!(matches!(e, Error::NoDirectory { .. }));
    assert!(e.to_string().contains("nope: no such directory"), "{e}");

    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let e = Index::open_or_build(&plain, None).unwrap_err();
    assert!(matches!(e, Error::NotARepository { .. }), "{e:?}");
    assert!(e.to_string().contains("plain is not a git repository"), "{e}");

    let empty = tmp.path().join("empty");
    git(tmp.path(), &["init", "-q", empty.to_str().unwrap()]);
    let e = Index::open_or_build(&empty, None).unwrap_err();
    assert!(matches!(e, Error::EmptyRepository { .. }), "{e:?}");
    assert!(e.to_string().contains("has no commits"), "{e}");

    // A directory holding someone else's files is never emptied.
    let (repo, _) = clone_at(tmp.path(), 30);
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let e = Index::open_or_build(&repo, Some(&foreign)).unwrap_err();
    assert!(matches!(e, Error::ForeignDirectory { .. }), "{e:?}");
    assert!(foreign.join("notes.txt").exists());

    let idx = Index::open_or_build(&repo, Some(&tmp.path().join("idx"))).unwrap();
    for rev in ["v9.9-does-not-exist", "0123456789abcdef", "--all"] {
        let e = idx.search(&Query { after: Some(rev.to_string()), ..query("bpf_object__open") }).unwrap_err();
        assert!(matches!(e, Error::UnknownRevision { .. }), "{e:?}");
        assert!(e.to_string().contains(&format!("revision `{rev}` does not name a commit")), "{e}");
    }
    let e = idx.search(&Query { limit: 5, ..Query::default() }).unwrap_err();
    assert!(matches!(e, Error::EmptyQuery));
}

/// `--after` reads the commits after a revision from the graph kept beside the index; the
/// answers are git's (`rev-list REV..HEAD`, asked when the graph is missing), merges and
/// their side branches included, after an incremental update too.
#[test]
fn after_from_the_graph_is_what_git_says() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, order) = clone_at(tmp.path(), 2000);
    drop(Index::open_or_build(&repo, None).unwrap());
    git(&repo, &["update-ref", "refs/heads/small", order.last().unwrap()]);
    let idx = Index::open_or_build(&repo, None).unwrap();
    assert_eq!(idx.stats().added, order.len() - 2000);
    let graph = idx.dir().join("kflame-fixes.graph");
    assert_eq!(std::fs::read_to_string(&graph).unwrap().lines().count(), order.len());
    // Revisions: the side parents of the merges (commits after them include the mainline's
    // commits that are not their ancestors), and points along the history.
    let merges = git(&repo, &["rev-list", "--merges", "HEAD"]);
    assert!(!merges.is_empty(), "the history has merges");
    let mut revs: Vec<String> =
        merges.lines().map(|m| git(&repo, &["rev-parse", &format!("{m}^2")])).collect();
    revs.extend([order[10].clone(), order[1500].clone(), order[2100].clone()]);
    let queries = ["bpf_object__load", "btf__parse", "libbpf_find_kernel_btf", "bpf_map__set_value_size"];
    let run = |idx: &Index| -> Vec<Vec<(String, bool)>> {
        let mut all = Vec::new();
        for rev in &revs {
            for f in queries {
                let q = Query { after: Some(rev.clone()), limit: 20, ..query(f) };
                all.push(idx.search(&q).unwrap().into_iter().map(|h| (h.id, h.after)).collect());
            }
        }
        all
    };
    let from_graph = run(&idx);
    assert!(from_graph.iter().any(|hits| hits.iter().any(|h| h.1)), "some hits come after");
    drop(idx);
    std::fs::remove_file(&graph).unwrap();
    let idx = Index::open_or_build(&repo, None).unwrap();
    assert_eq!(idx.stats().added, 0);
    let from_git = run(&idx);
    for (k, (g, r)) in from_graph.iter().zip(&from_git).enumerate() {
        let (rev, f) = (&revs[k / queries.len()], queries[k % queries.len()]);
        let only = |a: &[(String, bool)], b: &[(String, bool)]| -> Vec<String> {
            a.iter().filter(|x| !b.contains(x)).map(|x| format!("{}:{}", &x.0[..8], x.1)).collect()
        };
        assert_eq!(g, r, "after {rev} for {f}: graph only {:?}, git only {:?}", only(g, r), only(r, g));
    }
}

/// `touching`: the commits between two revisions whose diffs touch a function are those git
/// gives for the range with a hunk in the function, newest first.
#[test]
fn touching_gives_the_commits_of_a_range_that_change_a_function() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, order) = clone_at(tmp.path(), 600);
    let idx = Index::open_or_build(&repo, None).unwrap();
    let (from, to) = (&order[100], &order[500]);
    let in_range: std::collections::HashSet<String> =
        git(&repo, &["rev-list", &format!("{from}..{to}")]).lines().map(str::to_string).collect();
    let f = "bpf_object__load";
    // What git says: the commits of the range with a hunk header in the function.
    let log = git(&repo, &["log", "-p", "--format=COMMIT %H", &format!("{from}..{to}")]);
    let mut want = std::collections::HashSet::new();
    let mut current = String::new();
    for line in log.lines() {
        if let Some(id) = line.strip_prefix("COMMIT ") {
            current = id.to_string();
        } else if line.starts_with("@@") && line.matches("@@").count() >= 2 {
            let header = &line[line[2..].find("@@").unwrap() + 4..];
            if kflame_fixes::defined_function(header) == Some(f) {
                want.insert(current.clone());
            }
        }
    }
    assert!(!want.is_empty(), "the range changes {f}");
    let (hits, total) = idx.touching(f, from, to, 1000).unwrap();
    assert_eq!(hits.len(), total);
    let got: std::collections::HashSet<String> = hits.iter().map(|h| h.id.clone()).collect();
    assert!(want.is_subset(&got), "missing: {:?}", want.difference(&got).collect::<Vec<_>>());
    for h in &hits {
        assert!(in_range.contains(&h.id), "{} is outside the range", h.id);
        assert!(git(&repo, &["show", "--format=", &h.id]).contains(f), "{} does not touch {f}", h.id);
    }
    assert!(hits.windows(2).all(|w| w[0].date >= w[1].date), "newest first");
    // A limit keeps the newest, the count stays.
    let (two, all) = idx.touching(f, from, to, 2).unwrap();
    assert_eq!((two.len(), all), (2.min(total), total));
    assert_eq!(two[..], hits[..two.len()]);
    // Unknown revisions are named.
    assert!(matches!(idx.touching(f, "no-such-tag", to, 5), Err(Error::UnknownRevision { .. })));
    // Several functions over one range: each as alone.
    let g = "bpf_object__open";
    let each = idx.touching_each(&[f, g], from, to, 1000).unwrap();
    assert_eq!(each, [idx.touching(f, from, to, 1000).unwrap(), idx.touching(g, from, to, 1000).unwrap()]);
    // A kernel release none of whose tags is in the history (this one has no v tags).
    let e = idx.release_tag("6.1.0-13-amd64").unwrap_err();
    assert!(matches!(&e, Error::NoReleaseTag { tried, .. } if tried == &["v6.1"]), "{e}");
    assert!(e.to_string().contains("for kernel 6.1.0-13-amd64 (tried v6.1)"), "{e}");
}
