//! Inputs in different units are not added up silently: CPU samples and bytes used to merge
//! into a graph labelled "6.20 MiB". The error names both files and both units; files
//! without a header (FlameGraph's tools write none) merge with samples; `--mixed-units`
//! adds anything, with a warning.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data");

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).stdin(Stdio::null()).output().expect("kflame runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// CPU samples as perf's stackcollapse script writes them: no header.
fn cpu_plain() -> String {
    format!("{DATA}/render/perf-sys-cpuclock.folded")
}

/// Page allocations in bytes (`# unit=bytes`), from bpftrace.
fn mem_bytes() -> String {
    format!("{DATA}/html/bpftrace-mm_page_alloc-bytes.folded")
}

/// Syscall latency in nanoseconds (`# unit=ns`), from ftrace.
fn syscalls_ns() -> String {
    format!("{DATA}/ftrace/expected/ftrace-dd-mixed.syscalls.folded")
}

/// The CPU profile with the header `kflame record` writes for CPU samples.
fn cpu_declared(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-units-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("cpu.folded");
    let body = std::fs::read_to_string(cpu_plain()).expect("fixture");
    std::fs::write(&path, format!("# unit=samples\n# event=cpu-clock\n{body}")).expect("written");
    path
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().expect("file name")
}

#[test]
fn samples_and_bytes_are_refused_everywhere_naming_both_files() {
    let cpu = cpu_declared("refused");
    let cpu = cpu.to_str().expect("utf-8 path");
    for (a, b) in [(cpu_plain(), mem_bytes()), (cpu.to_string(), mem_bytes()), (mem_bytes(), syscalls_ns())] {
        for cmd in [
            vec!["collapse", "--format", "folded", &a, &b],
            vec!["flamegraph", &a, &b],
            vec!["flamegraph", "--format", "html", &a, &b],
            vec!["diff", &a, &b],
        ] {
            let out = kflame(&cmd);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
            assert!(out.stdout.is_empty(), "{cmd:?} wrote output");
            assert!(err.contains(name_of(&a)) && err.contains(name_of(&b)), "{cmd:?}: {err}");
            assert!(err.contains("--mixed-units"), "{cmd:?}: {err}");
        }
    }
    let out = kflame(&["flamegraph", &cpu_plain(), &mem_bytes()]);
    let err = text(&out.stderr);
    assert!(
        err.contains("perf-sys-cpuclock.folded has no unit header")
            && err.contains("bpftrace-mm_page_alloc-bytes.folded has unit bytes"),
        "{err}"
    );
    let out = kflame(&["diff", &mem_bytes(), &syscalls_ns()]);
    assert!(text(&out.stderr).contains("unit bytes and") && text(&out.stderr).contains("has unit ns"));
}

#[test]
fn files_without_a_header_merge_with_declared_samples() {
    let cpu = cpu_declared("merge");
    let cpu = cpu.to_str().expect("utf-8 path");
    let out = kflame(&["collapse", "--format", "folded", &cpu_plain(), cpu]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let folded = text(&out.stdout);
    assert!(folded.starts_with("# unit=samples\n# event=cpu-clock\n"), "{:.200}", folded);
    // Every stack twice.
    let once = text(&kflame(&["collapse", "--format", "folded", &cpu_plain()]).stdout);
    let total = |s: &str| -> u64 {
        s.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(total(&folded), 2 * total(&once));
    let svg = text(&kflame(&["flamegraph", cpu, &cpu_plain()]).stdout);
    let n = total(&folded).to_string();
    let grouped = if n.len() > 3 { format!("{},{}", &n[..n.len() - 3], &n[n.len() - 3..]) } else { n };
    let all = format!("<title>all ({grouped} samples, 100%)</title>");
    assert!(svg.contains(&all), "{all} missing");
}

#[test]
fn mixed_units_adds_them_anyway_with_a_warning() {
    let out = kflame(&["flamegraph", "--mixed-units", &cpu_plain(), &mem_bytes()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("warning:") && err.contains("counted as bytes"), "{err}");
    let out = kflame(&["collapse", "--format", "folded", "--mixed-units", &mem_bytes(), &syscalls_ns()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("plain numbers"), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).starts_with('#'), "no unit header for a mix of units");
    let out = kflame(&["diff", "--mixed-units", &mem_bytes(), &syscalls_ns()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn the_same_unit_merges_and_keeps_its_header() {
    let out = kflame(&["collapse", "--format", "folded", &syscalls_ns(), &syscalls_ns()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("# unit=ns\n# event=syscalls\n"));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}
