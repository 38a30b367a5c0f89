//! `kflame collapse --mode syscalls|offcpu|probes FILE.data` end to end: the same folded
//! output and events JSON as the perf script `--ns` text of the same file, and the options
//! that still do not apply refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kflame/tests/data/perf-data").join(name)
}

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `collapse` on the .data (with its symbols) and on its text, both with `args`.
fn both(name: &str, args: &[&str], events: Option<(&Path, &Path)>) -> (String, String) {
    let (kallsyms, symfs) = (fixture("kallsyms-pairs.txt"), fixture("symfs"));
    let data = fixture(&format!("{name}.data"));
    let script = fixture(&format!("{name}.ns.script.txt"));
    let mut d: Vec<&str> = vec!["collapse", "--no-host-lookups", "--kallsyms", kallsyms.to_str().unwrap()];
    d.extend(["--symfs", symfs.to_str().unwrap()]);
    d.extend(args);
    let mut s: Vec<&str> = vec!["collapse"];
    s.extend(args);
    if let Some((de, se)) = events {
        d.extend(["--events-json", de.to_str().unwrap()]);
        s.extend(["--events-json", se.to_str().unwrap()]);
    }
    d.push(data.to_str().unwrap());
    s.push(script.to_str().unwrap());
    let (direct, via_text) = (kflame(&d), kflame(&s));
    assert!(direct.status.success(), "{}", text(&direct.stderr));
    assert!(via_text.status.success(), "{}", text(&via_text.stderr));
    (text(&direct.stdout), text(&via_text.stdout))
}

#[test]
fn modes_equal_the_script_text() {
    for (name, mode) in
        [("pairs-syscalls", "syscalls"), ("pairs-offcpu", "offcpu"), ("pairs-probes", "probes")]
    {
        let (direct, via_text) = both(name, &["--mode", mode, "--comm", "--cpu"], None);
        assert!(direct.starts_with("# unit=ns\n"), "{direct}");
        assert!(direct.lines().any(|l| !l.starts_with('#')), "{direct}");
        assert_eq!(direct, via_text, "{name}");
    }
}

#[test]
fn offcpu_tid_roots_and_events_json() {
    let dir = std::env::temp_dir().join(format!("kflame-cli-pd-pairs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (de, se) = (dir.join("data.jsonl"), dir.join("text.jsonl"));
    let (direct, via_text) = both("pairs-offcpu", &["--mode", "offcpu", "--tid"], Some((&de, &se)));
    assert!(direct.lines().any(|l| l.starts_with("offcpu:S;sleeper-")), "{direct}");
    assert_eq!(direct, via_text);
    let (dj, sj) = (std::fs::read_to_string(&de).unwrap(), std::fs::read_to_string(&se).unwrap());
    assert!(dj.lines().count() > 10, "{dj}");
    assert_eq!(dj, sj);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn options_that_do_not_apply_are_refused() {
    let data = fixture("pairs-offcpu.data");
    let data = data.to_str().unwrap();
    for (args, msg) in [
        (
            &["--mode", "alloc"][..],
            "with --mode alloc; this option does not apply to it:\n  --mode alloc|events: taken by ftrace and trace-cmd",
        ),
        (
            &["--mode", "offcpu", "--counts"][..],
            "--counts: taken by perf-script and perf-data without --mode",
        ),
        (
            &["--mode", "offcpu", "--event-filter", "sched:sched_switch"][..],
            "--event-filter: taken by perf-script and perf-data without --mode",
        ),
        (&["--mode", "offcpu", "--group-by", "comm"][..], "--group-by: taken by kernel-log and crash"),
        (&["--order"][..], "--order: taken by ftrace and trace-cmd in alloc and events modes"),
    ] {
        let mut a = vec!["collapse", "--no-host-lookups"];
        a.extend(args);
        a.push(data);
        let out = kflame(&a);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(text(&out.stderr).contains(msg), "{args:?}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
}
