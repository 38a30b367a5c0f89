//! `kflame collapse` end to end on the function_graph, bcc, bpftrace, SystemTap and /proc
//! stack fixtures of the library (`crates/kflame/tests/data/`).

use std::process::{Command, Output};

fn fixture(rel: &str) -> String {
    format!("{}/../kflame/tests/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn total(folded: &str) -> u64 {
    folded
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn function_graph_top_and_events_json() {
    let events = std::env::temp_dir().join(format!("kflame-events-{}.json", std::process::id()));
    let ev = events.to_string_lossy().into_owned();
    let input = fixture("function-graph/raw-abstime-proc.txt");
    let o = kflame(&["collapse", "--top", "1", "--events-json", &ev, &input]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    assert!(text.starts_with("# unit=ns\n# event=function_graph\n"), "{text}");
    assert!(text.contains("[#1 52.000us @512.100000];sys_sendto;tcp_sendmsg;schedule 40000\n"), "{text}");
    assert!(!text.contains("queue_work"), "only the slowest call: {text}");
    let json = std::fs::read_to_string(&events).unwrap();
    std::fs::remove_file(&events).unwrap();
    assert_eq!(json.lines().count(), 2, "{json}");
    assert!(json.contains("\"comm\":\"nginx\",\"duration_ns\":52000"), "{json}");
}

#[test]
fn function_graph_total_latency_and_time_order() {
    let input = fixture("function-graph/raw-basic.txt");
    let o = kflame(&["collapse", "--latency", "total", &input]);
    assert!(stdout(&o).contains("\nvfs_read 30000\n"));
    let o = kflame(&["collapse", "--time-order", "-j", "2", &input]);
    let text = stdout(&o);
    let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} missing: {text}"));
    assert!(pos("\nvfs_read;") < pos("\n[unknown]") && pos("\n[unknown]") < pos("\ndo_sys_open"), "{text}");
}

#[test]
fn formats_are_detected_and_totals_kept() {
    let cases = [
        ("proc-stacks/proc-stacks-snapshot.txt", 92),
        ("stap/flamegraph-example.txt", 2404),
        ("bpftrace/inferno-pr55-1.trace", 3),
    ];
    for (rel, want) in cases {
        let o = kflame(&["collapse", &fixture(rel)]);
        assert!(o.status.success(), "{rel}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(total(&stdout(&o)), want, "{rel}");
    }
    let o = kflame(&["collapse", &fixture("bcc/offcputime-example-K.txt")]);
    assert!(stdout(&o).starts_with("# unit=ns\n"));
}

#[test]
fn bad_lines_are_reported_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("kflame-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.txt");
    std::fs::write(&path, " 0)               |  f() {\nthis is not a trace\n 0)   2.000 us    |  }\n")
        .unwrap();
    let p = path.to_string_lossy().into_owned();
    let o = kflame(&["collapse", "--format", "function-graph", &p]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(o.status.success());
    assert_eq!(stdout(&o), "# unit=ns\n# event=function_graph\nf 2000\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{p}:2: skipped 1 line (not a function_graph line)")), "{err}");
}
