//! End-to-end tests of the `kflame` binary: detection, exit codes, pipes, files, stdin,
//! merging and diagnostics.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn kflame() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kflame"))
}

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data")).join(rel)
}

fn run(args: &[&str]) -> Output {
    kflame().args(args).output().expect("kflame runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

const DD: &str = "perf/flamegraph/test/perf-dd-stacks-01.txt";

#[test]
fn detects_perf_script_and_writes_flamegraph_compatible_output() {
    let out = run(&["collapse", fixture(DD).to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // Periods are what stackcollapse-perf.pl sums too: no `# unit=` header line.
    assert!(!stdout.starts_with('#'), "{stdout}");
    assert!(
        stdout.contains("\ndd;[unknown];read;system_call;sys_read;vfs_read;fsnotify 10101010\n"),
        "{stdout}"
    );
    // Without a period column: counts, no header (byte-compatible with stackcollapse-perf.pl).
    let out = run(&["collapse", "--counts", fixture(DD).to_str().unwrap()]);
    assert!(text(&out.stdout).starts_with("dd;[unknown];[dd] 1\n"), "{}", text(&out.stdout));
}

#[test]
fn folded_input_is_detected_too() {
    let f = tmp("in.folded");
    std::fs::write(&f, "a;b 2\na;c 3\n").unwrap();
    let out = run(&["collapse", f.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "a;b 2\na;c 3\n");
}

#[test]
fn undetectable_input_fails_with_a_clear_message() {
    let f = tmp("prose.txt");
    std::fs::write(&f, "hello world\nthis is prose, not a profile\n").unwrap();
    let out = run(&["collapse", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("cannot tell the format of") && err.contains("--format"), "{err}");
    assert!(err.contains("perf-script"), "lists the known formats: {err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn usage_errors_exit_2() {
    for args in [&["collapse", "--no-such-flag"][..], &["collapse", "--format", "nope", "x"], &["frobnicate"]]
    {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
    }
    let out = run(&["collapse", "--format", "nope", "x"]);
    assert!(text(&out.stderr).contains("unknown format `nope`"), "{}", text(&out.stderr));
    let out = run(&["collapse", "--counts", "--weight", "bytes", fixture(DD).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--counts and --weight bytes"), "{}", text(&out.stderr));
}

#[test]
fn closed_pipe_is_success() {
    // Enough distinct stacks to overflow a pipe buffer.
    let mut input = String::new();
    for i in 0..20_000 {
        input.push_str(&format!(
            "proc{i} {i} 1.0: 1 cpu-clock:\n\tffffffff81000000 frame_{i} ([kernel.kallsyms])\n\n"
        ));
    }
    let f = tmp("many.script.txt");
    std::fs::write(&f, input).unwrap();
    let mut child = kflame()
        .args(["collapse", f.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn kflame");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).expect("some output");
    drop(stdout);
    let status = child.wait().expect("kflame exits");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn output_file_stdin_and_merging() {
    let dd = fixture(DD);
    let expected = run(&["collapse", dd.to_str().unwrap()]).stdout;
    let o = tmp("out.folded");
    let out = run(&["collapse", dd.to_str().unwrap(), "-o", o.to_str().unwrap()]);
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(std::fs::read(&o).unwrap(), expected);

    let mut child = kflame()
        .args(["collapse", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn kflame");
    let data = std::fs::read(&dd).unwrap();
    child.stdin.take().expect("stdin").write_all(&data).unwrap();
    let got = child.wait_with_output().expect("kflame exits");
    assert_eq!(got.stdout, expected);

    // Two inputs are merged: every count doubles.
    let twice = text(&run(&["collapse", dd.to_str().unwrap(), dd.to_str().unwrap()]).stdout);
    for (one, two) in text(&expected).lines().zip(twice.lines()) {
        if one.starts_with('#') {
            assert_eq!(one, two);
            continue;
        }
        let (s1, c1) = one.rsplit_once(' ').unwrap();
        let (s2, c2) = two.rsplit_once(' ').unwrap();
        assert_eq!(s1, s2);
        assert_eq!(c2.parse::<u64>().unwrap(), 2 * c1.parse::<u64>().unwrap());
    }
}

#[test]
fn diagnostics_name_file_and_line() {
    let f = fixture("perf/inferno/weird-stack-line.txt");
    let out = run(&["collapse", "--format", "perf", f.to_str().unwrap()]);
    assert!(out.status.success());
    let err = text(&out.stderr);
    let want = format!("{}:5: skipped 1 line (weird stack line); first:", f.display());
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("THIS_IS_A_WEIRD_LINE"), "{err}");
}

#[test]
fn perf_data_input_equals_its_perf_script_text() {
    let dir = fixture("perf-data");
    let data = dir.join("workload-fp.data");
    let (kallsyms, symfs) = (dir.join("kallsyms-local.txt"), dir.join("symfs"));
    let direct = run(&[
        "collapse",
        "--no-host-lookups",
        "--kallsyms",
        kallsyms.to_str().unwrap(),
        "--symfs",
        symfs.to_str().unwrap(),
        data.to_str().unwrap(),
    ]);
    assert!(direct.status.success(), "{}", text(&direct.stderr));
    let script = run(&["collapse", dir.join("workload-fp.script.txt").to_str().unwrap()]);
    assert!(script.status.success(), "{}", text(&script.stderr));
    assert!(text(&direct.stdout).lines().any(|l| l.contains("main;level1")), "{}", text(&direct.stdout));
    assert_eq!(text(&direct.stdout), text(&script.stdout));
}

#[test]
fn perf_data_refuses_options_it_would_ignore() {
    let data = fixture("perf-data/perf-sched.data");
    let out = run(&["collapse", "--no-host-lookups", "--group-by", "pid", "--cpu", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("perf-sched.data is perf-data input without --mode (sample counting)"),
        "{stderr}"
    );
    assert!(stderr.contains("\n  --cpu: taken by ftrace, trace-cmd, function-graph, kernel-log, crash, and perf-script and perf-data with --mode syscalls|offcpu|probes\n"), "{stderr}");
    assert!(stderr.contains("\n  --group-by: taken by kernel-log and crash"), "{stderr}");
    assert!(!stderr.contains("perf script"), "the perf script route does not apply them either: {stderr}");
    assert!(out.stdout.is_empty());
}

/// `kflame --version` names the version, the commit the binary was built from (git's `HEAD`
/// of this checkout, unless the build was given `KFLAME_COMMIT`) and the build date.
#[test]
fn version_names_the_commit_and_the_build_date() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    let v = text(&out.stdout);
    let v = v.trim();
    let rest = v
        .strip_prefix(&format!("kflame {} (commit ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{v}"));
    let (commit, rest) = rest.split_once(", built ").unwrap_or_else(|| panic!("{v}"));
    let date = rest.strip_suffix(')').unwrap_or_else(|| panic!("{v}"));
    assert!(
        date.len() == 10
            && date.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }),
        "{v}"
    );
    let head = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| text(&o.stdout).trim().to_string());
    // The build script's answer, and git's now when it came from git.
    assert_eq!(commit, env!("KFLAME_COMMIT"), "{v}");
    if env!("KFLAME_COMMIT_SOURCE") == "git" {
        assert_eq!(Some(commit.to_string()), head, "{v}");
    }
}
