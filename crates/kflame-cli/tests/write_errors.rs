//! Failed writes are errors (exit 1, a message naming where the data was going), for every
//! kind of output; only a closed pipe (`kflame ... | head`) is a quiet success.

use std::fs::File;
use std::process::{Command, Output, Stdio};

const RENDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/render");
const KERNEL_LOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../kflame/tests/data/kernel-log/captures/dmesg-hung-task-calltrace.txt"
);

/// Runs kflame with `args`, stdout going to `stdout`, stdin empty.
fn run_into(args: &[&str], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("kflame runs")
}

/// A write handle on /dev/full: every write fails with ENOSPC.
fn full() -> Stdio {
    Stdio::from(File::options().write(true).open("/dev/full").expect("/dev/full opens"))
}

/// The write end of a pipe whose read end is already closed: every write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn perf_folded() -> String {
    format!("{RENDER}/perf-sys-cpuclock.folded")
}

/// Every way kflame writes data to stdout, each with enough input to write something.
fn stdout_writers() -> Vec<Vec<String>> {
    let folded = perf_folded();
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    vec![
        s(&["completions", "bash"]),
        s(&["completions", "zsh"]),
        s(&["--help"]),
        s(&["--version"]),
        s(&["help", "collapse"]),
        s(&["collapse", "--help"]),
        s(&["flamegraph", "-h"]),
        s(&["collapse", &folded]),
        s(&["flamegraph", &folded]),
        s(&["flamegraph", "--format", "html", &folded]),
        s(&["diff", &folded, &folded]),
        s(&["collapse", "--json", KERNEL_LOG]),
    ]
}

#[test]
fn a_full_disk_is_an_error_naming_stdout() {
    for args in stdout_writers() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_into(&args, full());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "kflame {args:?} > /dev/full: {err}");
        assert!(!err.contains("panicked"), "kflame {args:?}: {err}");
        assert!(err.contains("stdout") && err.contains("No space left on device"), "kflame {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one error line, kflame {args:?}: {err}");
    }
}

#[test]
fn a_closed_pipe_stays_a_success() {
    for args in stdout_writers() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_into(&args, closed_pipe());
        assert_eq!(o.status.code(), Some(0), "kflame {args:?} | (closed): {}", stderr(&o));
        assert!(!stderr(&o).contains("error"), "kflame {args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_full_output_file_is_an_error_naming_it() {
    let folded = perf_folded();
    for args in [
        vec!["collapse", &folded, "-o", "/dev/full"],
        vec!["flamegraph", &folded, "-o", "/dev/full"],
        vec!["flamegraph", "--format", "html", &folded, "-o", "/dev/full"],
        vec!["diff", &folded, &folded, "-o", "/dev/full"],
    ] {
        let o = run_into(&args, Stdio::null());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "kflame {args:?}: {err}");
        assert!(err.contains("cannot write to /dev/full: No space left on device"), "kflame {args:?}: {err}");
    }
}

#[test]
fn usage_errors_still_exit_2_and_help_still_exits_0() {
    let o = run_into(&["flamegraph", "--no-such-option"], Stdio::piped());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--no-such-option"));
    let o = run_into(&["--help"], Stdio::piped());
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: kflame"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("kflame runs");
    let mut script = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut script).expect("read");
    assert!(child.wait().expect("exit").success());
    assert!(script.contains("complete -F _kflame"), "{script}");
}
