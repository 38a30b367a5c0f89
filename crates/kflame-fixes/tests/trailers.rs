//! The `Fixes:` trailer parser on every real commit message of `data/libbpf-2023.bundle`,
//! and on every cut of every trailer line in it (hand-written text: it must never panic and
//! never invent a trailer).

use std::path::Path;
use std::process::Command;

use kflame_fixes::parse_fixes;

#[test]
fn real_trailers_and_their_cuts() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("libbpf");
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/libbpf-2023.bundle");
    let ok = Command::new("git")
        .args(["clone", "-q", "--bare", "--branch", "history-2023"])
        .arg(&bundle)
        .arg(&repo)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let out = Command::new("git").arg("-C").arg(&repo).args(["log", "--format=%B%x00"]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    let (mut lines, mut not_hash, mut parsed, mut with_subject) = (0, 0, 0, 0);
    for msg in log.split('\0') {
        let found = parse_fixes(msg);
        let written: Vec<&str> = msg
            .lines()
            .filter(|l| l.trim_start().get(..6).is_some_and(|h| h.eq_ignore_ascii_case("fixes:")))
            .collect();
        lines += written.len();
        // `Fixes: #337` (an issue number) is no commit trailer.
        not_hash += written
            .iter()
            .filter(|l| !l.trim_start()[6..].trim_start().starts_with(|c: char| c.is_ascii_hexdigit()))
            .count();
        parsed += found.len();
        assert!(found.len() <= written.len(), "more trailers than Fixes: lines in {msg:?}");
        for t in &found {
            assert!((7..=40).contains(&t.hash.len()) && t.hash.bytes().all(|b| b.is_ascii_hexdigit()));
            assert!(!t.subject.starts_with('"') && !t.subject.ends_with("\")"), "{:?}", t.subject);
            with_subject += usize::from(!t.subject.is_empty());
        }
        for line in written {
            for (i, _) in line.char_indices() {
                for cut in [&line[..i], &line[i..]] {
                    let _ = parse_fixes(cut);
                }
            }
        }
    }
    // Every Fixes: line naming a hash is a trailer with its subject (quoted or not).
    assert!(lines > 300);
    assert!(not_hash < 5, "{not_hash} Fixes: lines without a hash");
    assert_eq!(parsed, lines - not_hash);
    assert_eq!(with_subject, parsed);
}
