//! Every `kflame collapse` option against every input format, through the binary: an option
//! is either applied (the run succeeds and its output differs from the same run without the
//! option) or refused (exit 1, a message naming the option and the formats that take it).
//! It is never silently ignored. The table below is the specification: for each option, the
//! inputs that take it; every other input must refuse it.

use std::collections::BTreeMap;
use std::process::{Command, Output};

fn data(rel: &str) -> String {
    format!("{}/../kflame/tests/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn kflame(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

/// One input kind: a name, its base arguments (format, mode, symbol sources) and files.
struct Target {
    name: &'static str,
    base: Vec<String>,
    files: Vec<String>,
}

fn targets() -> Vec<Target> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let pd = |f: &str| data(&format!("perf-data/{f}"));
    let t = |name, base: Vec<String>, files: Vec<String>| Target { name, base, files };
    let logs = vec![
        data("kernel-log/captures/dmesg-hung-task-calltrace.txt"),
        data("kernel-log/syzkaller/report/100"),
    ];
    vec![
        t("folded", s(&["--format", "folded"]), vec![data("html/bpftrace-mm_page_alloc-bytes.folded")]),
        t(
            "perf-script",
            s(&["--format", "perf-script"]),
            vec![
                data("perf/captures/perf-syscalls-dd.script.txt"),
                pd("jit-node.script.txt"),
                pd("inline-dwarf.script.txt"),
            ],
        ),
        t(
            "perf-script kmem",
            s(&["--format", "perf-script"]),
            vec![data("perf/captures/perf-mm-page-alloc.script.txt")],
        ),
        t(
            "perf-script --mode syscalls",
            s(&["--format", "perf-script", "--mode", "syscalls"]),
            vec![data("perf/captures/perf-syscalls-dd.script.txt")],
        ),
        t(
            "perf-data",
            vec![
                "--no-host-lookups".into(),
                "--kallsyms".into(),
                pd("kallsyms-local.txt"),
                "--symfs".into(),
                pd("symfs"),
                "--perf-map-dir".into(),
                pd("perf-maps"),
            ],
            vec![pd("jit-node.data"), pd("inline-dwarf.data")],
        ),
        t(
            "perf-data --mode offcpu",
            vec![
                "--no-host-lookups".into(),
                "--kallsyms".into(),
                pd("kallsyms-pairs.txt"),
                "--symfs".into(),
                pd("symfs"),
                "--mode".into(),
                "offcpu".into(),
            ],
            vec![pd("pairs-offcpu.data")],
        ),
        t(
            "ftrace alloc",
            s(&["--format", "ftrace"]),
            vec![data("ftrace/ftrace-mm_page_alloc-stacktrace.txt")],
        ),
        t("ftrace syscalls", s(&["--format", "ftrace"]), vec![data("ftrace/ftrace-dd-mixed-stacktrace.txt")]),
        t(
            "trace-cmd alloc",
            s(&["--format", "trace-cmd"]),
            vec![data("ftrace/trace-cmd-report-mm_page_alloc.txt")],
        ),
        t(
            "function-graph",
            s(&["--format", "function-graph"]),
            vec![data("function-graph/raw-abstime-proc.txt")],
        ),
        t("proc-stacks", s(&["--format", "proc-stacks"]), vec![data("proc-stacks/proc-stacks-snapshot.txt")]),
        t(
            "bpftrace",
            s(&["--format", "bpftrace"]),
            vec![
                data("bpftrace/bpftrace-profile-kstack.txt"),
                data("bpftrace/bpftrace-uprobe-and-syscall-latency.txt"),
            ],
        ),
        t("bcc", s(&["--format", "bcc"]), vec![data("bcc/stackcount-example-P-d.txt")]),
        t("stap", s(&["--format", "stap"]), vec![data("stap/handwritten-profile.txt")]),
        t("kernel-log", s(&["--format", "kernel-log"]), logs.clone()),
        t("crash", s(&["--format", "crash"]), vec![data("crash/bt-a-irq-nmi.txt")]),
        t("kernel-log --json", s(&["--format", "kernel-log", "--json"]), logs.clone()),
        t("crash --json", s(&["--format", "crash", "--json"]), vec![data("crash/foreach-UN-bt.txt")]),
        t("pprof", s(&[]), vec![data("pprof/go-heap.pb.gz")]),
    ]
}

/// Inputs that take every option except `--json`.
const NOT_JSON: &[&str] = &[
    "folded",
    "perf-script",
    "perf-script kmem",
    "perf-script --mode syscalls",
    "perf-data",
    "perf-data --mode offcpu",
    "ftrace alloc",
    "ftrace syscalls",
    "trace-cmd alloc",
    "function-graph",
    "proc-stacks",
    "bpftrace",
    "bcc",
    "stap",
    "kernel-log",
    "crash",
    "pprof",
];

/// The specification: option (with its value) → the inputs that take it.
fn spec(scratch: &str) -> Vec<(Vec<String>, Vec<&'static str>)> {
    let o = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let perf = [
        "perf-script",
        "perf-script kmem",
        "perf-script --mode syscalls",
        "perf-data",
        "perf-data --mode offcpu",
    ];
    let perf_samples = ["perf-script", "perf-script kmem", "perf-data"];
    let spans = ["perf-script --mode syscalls", "perf-data --mode offcpu", "ftrace syscalls"];
    let trace = ["ftrace alloc", "ftrace syscalls", "trace-cmd alloc"];
    let single_events = ["ftrace alloc", "trace-cmd alloc"];
    let cat = |parts: &[&[&'static str]]| parts.concat();
    vec![
        (o(&["--time-order"]), NOT_JSON.to_vec()),
        (o(&["--pid"]), cat(&[&perf, &trace, &["function-graph", "bcc"]])),
        (o(&["--tid"]), cat(&[&perf, &trace, &["function-graph"]])),
        (o(&["--comm"]), cat(&[&perf, &trace, &["function-graph", "proc-stacks", "kernel-log", "crash"]])),
        (o(&["--cpu"]), cat(&[&spans, &trace, &["function-graph", "kernel-log", "crash"]])),
        (o(&["--weight", "count"]), cat(&[&perf_samples, &single_events])),
        (o(&["--weight", "bytes"]), cat(&[&["perf-script", "perf-script kmem"], &single_events])),
        (o(&["--group-by", "comm"]), vec!["kernel-log", "crash"]),
        (o(&["--json"]), vec!["kernel-log", "crash", "kernel-log --json", "crash --json"]),
        (
            o(&["--events-json", &format!("{scratch}/events.jsonl")]),
            cat(&[&spans, &trace, &["function-graph"]]),
        ),
        (o(&["--kernel"]), perf.to_vec()),
        (o(&["--jit"]), perf.to_vec()),
        (o(&["--all"]), perf.to_vec()),
        (o(&["--addrs"]), perf.to_vec()),
        (o(&["--inline"]), perf.to_vec()),
        (o(&["--event-filter", "raw_syscalls:sys_exit"]), perf_samples.to_vec()),
        (o(&["--counts"]), perf_samples.to_vec()),
        (o(&["--mode", "syscalls"]), cat(&[&perf, &trace])),
        (o(&["--mode", "events"]), trace.to_vec()),
        (o(&["--order"]), single_events.to_vec()),
        (o(&["--page-type"]), single_events.to_vec()),
        (o(&["--latency", "total"]), vec!["function-graph"]),
        (o(&["--top", "2"]), cat(&[&spans, &["function-graph"]])),
        (
            o(&["--top", "2", "--split-outliers", &format!("{scratch}/outliers")]),
            cat(&[&spans, &["function-graph"]]),
        ),
        (o(&["--bpftrace-map", "@wk"]), vec!["bpftrace"]),
        (o(&["--bcc-unit", "us"]), vec!["bcc"]),
        (o(&["--sample-type", "inuse_space"]), vec!["pprof"]),
        (o(&["--offsets"]), vec!["kernel-log"]),
        (o(&["--unreliable"]), vec!["kernel-log"]),
        (
            o(&["--kallsyms", &data("perf-data/kallsyms-4a5a9b0a.txt")]),
            vec!["perf-data", "perf-data --mode offcpu"],
        ),
        (o(&["--symfs", "/nonexistent"]), vec!["perf-data", "perf-data --mode offcpu"]),
        (o(&["--no-unwind"]), vec!["perf-data", "perf-data --mode offcpu"]),
        (o(&["--no-inline"]), vec!["perf-data", "perf-data --mode offcpu"]),
        (o(&["--perf-map-dir", "/nonexistent"]), vec!["perf-data", "perf-data --mode offcpu"]),
        (o(&["--no-host-lookups"]), vec!["perf-data", "perf-data --mode offcpu"]),
    ]
}

/// Accepted pairs whose effect this input does not show, with the reason. Nothing else may
/// leave the output unchanged.
fn no_visible_effect(option: &str, target: &str) -> Option<&'static str> {
    let no_jit = ["perf-script kmem", "perf-script --mode syscalls", "perf-data --mode offcpu"];
    Some(match (option, target) {
        ("--comm", "perf-script" | "perf-script kmem" | "perf-data" | "proc-stacks") => {
            "the comm is always the root frame of these inputs"
        }
        ("--weight bytes", "perf-script kmem" | "ftrace alloc" | "trace-cmd alloc") => {
            "page allocations weigh their bytes already"
        }
        ("--mode syscalls", "ftrace syscalls") => "the mode chosen from its events is syscalls already",
        ("--jit" | "--perf-map-dir", t) if no_jit.contains(&t) => "no JIT frames in this capture",
        ("--inline", t) if no_jit.contains(&t) => "no DWARF inline frames in this capture",
        ("--no-unwind" | "--no-inline", "perf-data --mode offcpu") => {
            "recorded with frame pointers: no DWARF user stack to unwind"
        }
        _ => return None,
    })
}

fn stdout_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn every_option_is_applied_or_refused_for_every_input() {
    let dir = std::env::temp_dir().join(format!("kflame-cli-options-{}", std::process::id()));
    let scratch = dir.to_str().unwrap().to_string();
    let targets = targets();
    let mut baselines = BTreeMap::new();
    for t in &targets {
        let o = kflame(&[&["collapse".to_string()][..], &t.base, &t.files].concat());
        assert!(o.status.success(), "{}: {}", t.name, String::from_utf8_lossy(&o.stderr));
        assert!(!o.stdout.is_empty(), "{}", t.name);
        baselines.insert(t.name, stdout_of(&o));
    }
    let mut failures = Vec::new();
    for (option, takes) in spec(&scratch) {
        for t in &targets {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let label = option.iter().filter(|w| w.starts_with("--")).cloned().collect::<Vec<_>>().join(" ");
            let shown =
                if option.len() == 2 && !option[1].starts_with('/') { option.join(" ") } else { label };
            let out = kflame(&[&["collapse".to_string()][..], &t.base, &option, &t.files].concat());
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let applies = takes.contains(&t.name);
            let first = option[0].as_str();
            if t.base.iter().any(|b| b == first) {
                continue; // in the base arguments of this input: covered by its own tests
            }
            if !applies {
                let named = stderr.contains(&format!("\n  {first}")) && stderr.contains(" taken by ")
                    || stderr.contains(&format!("\n  {first}")) && stderr.contains("not with --json");
                if out.status.code() != Some(1) || !named || !out.stdout.is_empty() {
                    failures.push(format!(
                        "{shown} on {}: expected a refusal, got {:?}: {stderr}",
                        t.name, out.status
                    ));
                }
                continue;
            }
            // Applied, and it left nothing valid in this input (e.g. `--weight bytes` on samples
            // that carry no size): an error that names the empty result, not a refusal.
            let emptied = out.status.code() == Some(1)
                && stderr.contains("no stacks found")
                && !stderr.contains(" taken by ")
                && out.stdout.is_empty();
            if emptied {
                continue;
            }
            if !out.status.success() {
                failures.push(format!(
                    "{shown} on {}: expected it applied, got {:?}: {stderr}",
                    t.name, out.status
                ));
                continue;
            }
            let changed = match first {
                "--events-json" => std::fs::metadata(dir.join("events.jsonl")).is_ok_and(|m| m.len() > 0),
                "--top" if option.len() > 2 => dir.join("outliers/index.tsv").exists(),
                _ => stdout_of(&out) != baselines[t.name],
            };
            let excused = no_visible_effect(&shown, t.name);
            if changed == excused.is_some() {
                failures.push(match excused {
                    Some(why) => format!(
                        "{shown} on {}: listed as without effect ({why}) but changed the output",
                        t.name
                    ),
                    None => {
                        format!("{shown} on {}: accepted but the output is the same as without it", t.name)
                    }
                });
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} pairs wrong:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn spec_covers_every_input_and_option() {
    let names: Vec<&str> = targets().iter().map(|t| t.name).collect();
    for (option, takes) in spec("/tmp") {
        for t in &takes {
            assert!(names.contains(t), "{option:?}: unknown input {t}");
        }
    }
    let help = kflame(&["collapse".to_string(), "--help".to_string()]);
    let help = stdout_of(&help);
    let given: Vec<String> =
        spec("/tmp").into_iter().flat_map(|(o, _)| o.into_iter().filter(|w| w.starts_with("--"))).collect();
    let generic = ["--format", "--output", "--threads", "--mixed-units", "--help"];
    for line in help.lines() {
        let t = line.trim_start();
        // Option lines are indented by 2 (`-o, --output`) or 6 (`--pid`); descriptions deeper.
        if !t.starts_with('-') || line.len() - t.len() > 6 {
            continue;
        }
        let Some(flag) = t.split([' ', ',', '=']).find(|w| w.starts_with("--")) else { continue };
        if !generic.contains(&flag) {
            assert!(given.iter().any(|g| g == flag), "{flag} of `collapse --help` is not in the table");
        }
    }
}
