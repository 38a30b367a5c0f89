//! Bad input, tried as a user would: garbage and forced formats, a forgotten `collapse`,
//! binary and endless input, compressed and empty files in a merge, over-long lines, stdin
//! named twice, long first lines for detection. Nothing valid found is exit 1 with a hint,
//! and an existing output file is kept.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data");
const HUNG: &str = "kernel-log/captures/dmesg-hung-task-calltrace.txt";
const PERF_SCRIPT: &str = "perf/flamegraph/test/perf-dd-stacks-01.txt";
const FOLDED: &str = "render/perf-sys-cpuclock.folded";

fn data(rel: &str) -> String {
    format!("{DATA}/{rel}")
}

fn kflame(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kflame runs");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // kflame may stop reading early (and exit): a closed pipe is fine.
        let _ = pipe.write_all(&input);
    });
    let out = child.wait_with_output().expect("kflame finishes");
    writer.join().expect("writer thread");
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-bad-input-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

/// Bytes that are no text format: a real perf.data file's samples, without its header.
fn binary() -> Vec<u8> {
    let perf_data = fs::read(data("perf-data/inline-fp.data")).expect("fixture");
    perf_data[perf_data.len() / 2..].to_vec()
}

fn fails_with(out: &Output, wanted: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", text(&out.stdout));
    for w in wanted {
        assert!(err.contains(w), "`{w}` in: {err}");
    }
}

#[test]
fn forced_formats_on_garbage_fail_with_a_hint() {
    let garbage = tmp("garbage.bin");
    fs::write(&garbage, binary()).unwrap();
    let g = garbage.to_str().unwrap();
    let out = kflame(&["collapse", "--format", "folded", g], b"");
    fails_with(&out, &["garbage.bin: no stacks found in this folded input, only", "binary data"]);
    let out = kflame(&["collapse", "--format", "kernel-log", g], b"");
    fails_with(&out, &["garbage.bin: no kernel report found in this kernel-log input", "binary data"]);

    let out = kflame(&["collapse", "--format", "perf-script", &data(FOLDED)], b"");
    fails_with(
        &out,
        &["no stacks found in this perf-script input, only", "it looks like folded input", "--format folded"],
    );
    // host-free: read as folded text, refused before the perf.data reader would run.
    let out = kflame(&["collapse", "--format", "folded", &data("perf-data/inline-fp.data")], b"");
    fails_with(&out, &["it is a perf.data file: leave --format out"]);
    // Read as what they are, the same files are fine.
    assert!(kflame(&["collapse", &data(FOLDED)], b"").status.success());
}

#[test]
fn flamegraph_of_perf_script_text_says_to_collapse_first_and_keeps_the_file() {
    let keep = tmp("keep.svg");
    fs::write(&keep, "an earlier graph").unwrap();
    let k = keep.to_str().unwrap();
    let out = kflame(&["flamegraph", "-o", k, &data(PERF_SCRIPT)], b"");
    fails_with(
        &out,
        &["no stacks found, only", "this looks like perf script text: run `kflame collapse` first"],
    );
    assert_eq!(fs::read_to_string(&keep).unwrap(), "an earlier graph", "the existing file is kept");
    for format in ["svg", "html"] {
        let out = kflame(&["flamegraph", "--format", format, "-o", k], &fs::read(data(PERF_SCRIPT)).unwrap());
        fails_with(&out, &["<stdin>: no stacks found", "run `kflame collapse` first"]);
        assert_eq!(fs::read_to_string(&keep).unwrap(), "an earlier graph", "{format}");
    }
    let out = kflame(&["flamegraph", &data("perf-data/inline-fp.data")], b"");
    fails_with(&out, &["not folded stacks; it is a perf.data file", "kflame collapse"]);
    // A good input replaces the file, and leaves no temporary file behind.
    let out = kflame(&["flamegraph", "-o", k, &data(FOLDED)], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fs::read_to_string(&keep).unwrap().starts_with("<?xml"));
    let leftovers: Vec<_> = fs::read_dir(keep.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `kflame flamegraph /dev/zero` used to grow without end; it now looks at the head and
/// stops at once.
#[test]
fn endless_binary_input_fails_at_once() {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(["flamegraph", "-"])
        .stdin(fs::File::open("/dev/zero").expect("/dev/zero"))
        .output()
        .expect("kflame runs");
    fails_with(&out, &["<stdin>: not folded stacks; it looks like binary data"]);
    assert!(start.elapsed() < Duration::from_secs(20));
    let out = kflame(&["collapse", "/dev/zero"], b"");
    fails_with(&out, &["cannot tell the format of /dev/zero: it looks like binary data"]);
    assert!(!text(&out.stderr).contains("name one with --format"), "a format would not help");
}

#[test]
fn an_over_long_line_is_reported_and_the_rest_read() {
    let mut input = vec![0u8; kflame::text::MAX_LINE + 1000];
    input.extend_from_slice(b"\na;b 1\n");
    input.extend_from_slice(&fs::read(data(FOLDED)).unwrap());
    let want = kflame(&["collapse", "--format", "folded", &data(FOLDED)], b"");
    for cmd in [&["collapse", "--format", "folded"][..], &["collapse", "--format", "folded", "-j", "1"]] {
        let out = kflame(cmd, &input);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("<stdin>:1: skipped 1 line (line too long)"), "{err}");
        assert!(err.contains(&format!("found one of {} bytes", kflame::text::MAX_LINE + 1000)), "{err}");
        let got = text(&out.stdout);
        assert!(got.starts_with("a;b 1\n"), "the lines after it are read");
        assert!(got.ends_with(&text(&want.stdout)));
    }
    // The renderer, with a long line of text (a binary head would be refused at once).
    let mut input = "frame;".repeat(kflame::text::MAX_LINE / 6 + 1).into_bytes();
    input.extend_from_slice(b"leaf 1\n");
    input.extend_from_slice(&fs::read(data(FOLDED)).unwrap());
    let out = kflame(&["flamegraph"], &input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("<stdin>:1: skipped 1 line (line too long)"));
    assert_eq!(out.stdout, kflame(&["flamegraph", &data(FOLDED)], b"").stdout);
}

#[test]
fn compressed_and_empty_logs_merge_like_plain_ones() {
    let plain = data(HUNG);
    let one = kflame(&["collapse", &plain], b"");
    assert!(one.status.success());
    let empty = tmp("kern.log");
    fs::write(&empty, "").unwrap();
    let c = |ext: &str| data(&format!("compressed/dmesg-hung-task.txt.{ext}"));
    let (gz, zst, xz) = (c("gz"), c("zst"), c("xz"));
    for compressed in [&gz, &zst, &xz] {
        let out = kflame(&["collapse", compressed], b"");
        assert!(out.status.success(), "{compressed}: {}", text(&out.stderr));
        assert_eq!(out.stdout, one.stdout, "{compressed} reads as the plain file");
    }
    let out = kflame(&["collapse", empty.to_str().unwrap(), &plain, &gz, &zst, &xz], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("warning: ") && text(&out.stderr).contains("kern.log is empty"));
    let count = |o: &[u8]| -> u64 {
        text(o)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(count(&out.stdout), 4 * count(&one.stdout), "four copies of the report");

    // --json reads them alike.
    let out = kflame(&["collapse", "--json", empty.to_str().unwrap(), &gz], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 1);
    assert!(text(&out.stdout).contains("\"kind\":\"hung_task\""));

    // stdin is decompressed too.
    let out = kflame(&["collapse"], &fs::read(&gz).unwrap());
    assert_eq!(out.stdout, one.stdout);
    // A compressed folded file draws as the plain one.
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&fs::read(data(FOLDED)).unwrap()).unwrap();
    let folded_gz = tmp("cpu.folded.gz");
    fs::write(&folded_gz, e.finish().unwrap()).unwrap();
    let a = kflame(&["flamegraph", folded_gz.to_str().unwrap()], b"");
    let b = kflame(&["flamegraph", &data(FOLDED)], b"");
    assert!(a.status.success() && a.stdout == b.stdout, "{}", text(&a.stderr));

    // Only empty input: nothing to collapse.
    let out = kflame(&["collapse", empty.to_str().unwrap()], b"");
    fails_with(&out, &["nothing to collapse: the input is empty"]);
}

#[test]
fn binary_kinds_get_their_hint_and_the_format_list_comes_once() {
    let bz2 = data("compressed/dmesg-hung-task.txt.bz2");
    let dat = data("compressed/trace-cmd-extract-head.dat");
    let prose1 = tmp("notes1.txt");
    let prose2 = tmp("notes2.txt");
    fs::write(&prose1, "hello world\nthis is prose, not a profile\n").unwrap();
    fs::write(&prose2, "more prose\n").unwrap();
    let out = kflame(
        &["collapse", &bz2, &dat, prose1.to_str().unwrap(), prose2.to_str().unwrap(), &data(HUNG)],
        b"",
    );
    fails_with(
        &out,
        &[
            "it is bzip2-compressed, which kflame does not read",
            "it is a binary trace-cmd .dat file: turn it into text first, `trace-cmd report -i ",
            "notes1.txt: its first lines match none of the known formats",
            "notes2.txt: its first lines match none of the known formats",
            "4 of 5 inputs failed (see above); nothing written",
        ],
    );
    assert_eq!(
        text(&out.stderr).matches("perf-script ").count(),
        1,
        "one format list: {}",
        text(&out.stderr)
    );
}

#[test]
fn stdin_is_read_once() {
    let folded = fs::read(data(FOLDED)).unwrap();
    let out = kflame(&["diff", "-", "-"], &folded);
    fails_with(&out, &["BEFORE and AFTER are both stdin"]);
    for cmd in ["collapse", "flamegraph"] {
        let out = kflame(&[cmd, "-", "-"], &folded);
        fails_with(&out, &["stdin (`-`) is named more than once"]);
    }
}

#[test]
fn diff_needs_stacks_in_both_or_an_empty_one() {
    let out = kflame(&["diff", &data(PERF_SCRIPT), &data(FOLDED)], b"");
    fails_with(&out, &["perf-dd-stacks-01.txt: no stacks found", "run `kflame collapse` first"]);
    let out = kflame(&["diff", &data(FOLDED), &data(PERF_SCRIPT)], b"");
    fails_with(&out, &["perf-dd-stacks-01.txt: no stacks found"]);
    // An empty BEFORE: every stack is new.
    let empty = tmp("before.folded");
    fs::write(&empty, "").unwrap();
    let out = kflame(&["diff", empty.to_str().unwrap(), &data(FOLDED)], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("before.folded is empty"));
    let lines = text(&out.stdout);
    assert!(!lines.is_empty() && lines.lines().all(|l| l.split(' ').rev().nth(1) == Some("0")), "{lines}");
}

#[test]
fn detection_reads_whole_records() {
    // A real profile whose first stack is very deep: its first line is over 64 KiB.
    let real = fs::read_to_string(data(FOLDED)).unwrap();
    let (first, count) = real.lines().max_by_key(|l| l.len()).unwrap().rsplit_once(' ').unwrap();
    let deep = format!("{}{first} {count}\n", format!("{first};").repeat(100_000 / first.len() + 1));
    assert!(deep.len() > 100_000);
    let long_first = tmp("deep.folded");
    fs::write(&long_first, format!("{deep}{real}")).unwrap();
    // The same profile with one malformed record among its first lines, and a short one.
    let one_bad = tmp("one-bad.folded");
    let mut lines: Vec<&str> = real.lines().take(3).collect();
    lines.insert(1, "this line is not a stack");
    fs::write(&one_bad, lines.join("\n") + "\n").unwrap();
    for f in [&long_first, &one_bad] {
        let f = f.to_str().unwrap();
        let forced = kflame(&["collapse", "--format", "folded", f], b"");
        let detected = kflame(&["collapse", f], b"");
        assert!(detected.status.success(), "{f}: {}", text(&detected.stderr));
        assert_eq!(detected.stdout, forced.stdout, "{f}");
        assert!(!detected.stdout.is_empty());
    }
}

#[test]
fn format_values_are_listed_and_completed() {
    let help = text(&kflame(&["collapse", "--help"], b"").stdout);
    assert!(help.contains("Possible values:"), "{help}");
    for f in ["folded", "perf-script", "kernel-log", "perf-data"] {
        assert!(help.contains(&format!("- {f}:")), "{f} in: {help}");
    }
    let bash = text(&kflame(&["completions", "bash"], b"").stdout);
    assert!(bash.contains("compgen -W \"folded perf-script ftrace"), "format names completed after -F");
    let out = kflame(&["collapse", "--format", "nope", "x"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown format `nope`"));
    // Aliases still work.
    assert!(kflame(&["collapse", "--format", "collapsed", &data(FOLDED)], b"").status.success());
}

/// A perf.data file that gives no stack is an error whose reason its own notes give, not a
/// hint to read it as what it already is: an event filter naming no event of the file
/// (quipper's hybrid_topology.data), a record damaged before the first sample (its
/// callgraph-3.8.data with the size of its first SAMPLE record damaged).
#[test]
fn perf_data_without_stacks_is_an_error_saying_why() {
    let hybrid = data("perf-data/quipper/hybrid_topology.data");
    let out = kflame(&["collapse", "--no-host-lookups", "--event-filter", "instructions", &hybrid], b"");
    fails_with(
        &out,
        &[
            "no event of the file is named `instructions` (--event-filter); it recorded `cpu_core/cycles:ppp/`",
            "hybrid_topology.data: no stacks found in this perf-data input",
        ],
    );
    assert!(!text(&out.stderr).contains("leave --format out"), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());

    let mut bytes = fs::read(data("perf-data/quipper/callgraph-3.8.data")).expect("fixture");
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let mut at = word(&bytes, 40);
    // Records: { u32 type, u16 misc, u16 size }; 9 is SAMPLE.
    while u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) != 9 {
        at += u16::from_le_bytes(bytes[at + 6..at + 8].try_into().unwrap()) as usize;
    }
    bytes[at + 6..at + 8].copy_from_slice(&3u16.to_le_bytes());
    let damaged = tmp("callgraph-damaged.data");
    fs::write(&damaged, &bytes).unwrap();
    let out = kflame(&["collapse", "--no-host-lookups", damaged.to_str().unwrap()], b"");
    fails_with(
        &out,
        &[
            "record size 3 is impossible here",
            "the 0 samples read before it are kept",
            "callgraph-damaged.data: no stacks found in this perf-data input, only 1 damaged record",
        ],
    );
    assert!(!text(&out.stderr).contains("leave --format out"), "{}", text(&out.stderr));
}

/// `perf record -o - | kflame collapse -`: a pipe-mode file read from stdin folds as the
/// same file named on the command line (quipper's piped.header_feautres_group_desc-6.8).
#[test]
fn pipe_mode_perf_data_from_stdin() {
    let file = data("perf-data/quipper/piped.header_feautres_group_desc-6.8.data");
    let named = kflame(&["collapse", "--no-host-lookups", &file], b"");
    let piped = kflame(&["collapse", "--no-host-lookups", "-"], &fs::read(&file).unwrap());
    assert!(named.status.success() && piped.status.success(), "{}", text(&piped.stderr));
    assert!(!named.stdout.is_empty());
    assert_eq!(text(&piped.stdout), text(&named.stdout));
}
