//! `kflame collapse --top N [--split-outliers DIR]` end to end: the N longest syscalls,
//! off-CPU intervals, probed calls or function_graph calls, each as its own tower in the
//! shared graph and, with `--split-outliers`, as its own folded file and SVG listed in
//! `index.tsv`, for ftrace text, perf script text and perf.data alike.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(rel: &str) -> String {
    format!("{}/../kflame/tests/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A fresh (absent) directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-cli-outliers-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Folded lines without the headers, as (stack, weight).
fn stacks(folded: &str) -> Vec<(String, u64)> {
    folded
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (s, w) = l.rsplit_once(' ').unwrap();
            (s.to_string(), w.parse().unwrap())
        })
        .collect()
}

/// One row of index.tsv.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    rank: usize,
    duration_ns: u64,
    comm: String,
    pid: String,
    what: String,
    start: String,
    input: String,
    folded: String,
    svg: String,
}

fn index(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("index.tsv")).expect("index.tsv");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("rank\tduration_ns\tduration\tstart_s\tcomm\tpid\tcpu\twhat\tinput\tline\tfolded\tsvg")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 12, "{l}");
            Row {
                rank: f[0].parse().unwrap(),
                duration_ns: f[1].parse().unwrap(),
                comm: f[4].into(),
                pid: f[5].into(),
                what: f[7].into(),
                start: f[3].into(),
                input: f[8].into(),
                folded: f[10].into(),
                svg: f[11].into(),
            }
        })
        .collect()
}

/// Checks a split directory against the shared graph of the same run (one input): one
/// folded file per tower holding exactly that tower's stacks, an SVG each, rows in rank
/// order with decreasing durations; returns the rows.
fn check_split(dir: &Path, shared: &str, n: usize) -> Vec<Row> {
    let rows = index(dir);
    let towers = stacks(shared);
    let ranks: std::collections::BTreeSet<&str> =
        towers.iter().map(|(s, _)| s.split(';').next().unwrap()).collect();
    assert_eq!(rows.len(), ranks.len().min(n), "{rows:#?}");
    let mut files: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files.len(), 2 * rows.len() + 1, "{files:?}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.rank, i + 1);
        if i > 0 {
            assert!(row.duration_ns <= rows[i - 1].duration_ns, "{rows:#?}");
        }
        assert_eq!(files[2 * i], row.folded, "listing order is rank order");
        let folded = std::fs::read_to_string(dir.join(&row.folded)).unwrap();
        assert!(folded.starts_with("# unit=ns\n"), "{folded}");
        let own = stacks(&folded);
        let rank_frame = own[0].0.split(';').next().unwrap().to_string();
        let want: Vec<(String, u64)> =
            towers.iter().filter(|(s, _)| s.split(';').next() == Some(&rank_frame)).cloned().collect();
        assert_eq!(own, want, "{}", row.folded);
        assert_eq!(own.iter().map(|(_, w)| w).sum::<u64>(), row.duration_ns, "{}", row.folded);
        let svg = std::fs::read_to_string(dir.join(&row.svg)).unwrap();
        assert!(svg.starts_with("<?xml") && svg.contains(&row.what), "{}", row.svg);
        for part in [&row.comm, &row.pid] {
            assert!(row.folded.contains(part.replace('/', "_").as_str()), "{} lacks {part}", row.folded);
        }
    }
    rows
}

#[test]
fn ftrace_syscalls_top_split_and_events_json() {
    let input = data("ftrace/ftrace-dd-mixed-stacktrace.txt");
    let dir = scratch("ftrace");
    let events = scratch("ftrace-events.jsonl");
    let all_events = scratch("ftrace-all-events.jsonl");
    let (d, e, a) = (dir.to_str().unwrap(), events.to_str().unwrap(), all_events.to_str().unwrap());
    let shared = ok(&kflame(&[
        "collapse",
        "--mode",
        "syscalls",
        "--top",
        "4",
        "--split-outliers",
        d,
        "--events-json",
        e,
        &input,
    ]));
    let towers = stacks(&shared);
    assert_eq!(towers.len(), 4, "{shared}");
    for (i, (s, _)) in towers.iter().enumerate() {
        assert!(s.starts_with(&format!("[#{} ", i + 1)) && s.contains("];syscall:"), "{s}");
    }
    let rows = check_split(&dir, &shared, 4);
    assert!(
        rows.iter().all(|r| r.comm == "dd" && r.what.starts_with("syscall:") && r.input == input),
        "{rows:#?}"
    );
    assert_eq!(
        towers.iter().map(|t| t.1).collect::<Vec<_>>(),
        rows.iter().map(|r| r.duration_ns).collect::<Vec<_>>()
    );
    // The events log lists every syscall, as without --top.
    ok(&kflame(&["collapse", "--mode", "syscalls", "--events-json", a, &input]));
    let (with_top, without) =
        (std::fs::read_to_string(&events).unwrap(), std::fs::read_to_string(&all_events).unwrap());
    assert!(with_top.lines().count() > 100);
    assert_eq!(with_top, without);
    // The longest of them all is rank 1.
    let longest = without
        .lines()
        .map(|l| {
            l.split("\"duration_ns\":").nth(1).unwrap().split(',').next().unwrap().parse::<u64>().unwrap()
        })
        .max()
        .unwrap();
    assert_eq!(rows[0].duration_ns, longest);
    for p in [&dir, &events, &all_events] {
        let _ = std::fs::remove_dir_all(p);
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn perf_data_and_its_script_text_split_alike() {
    let pd = |f: &str| data(&format!("perf-data/{f}"));
    let (kallsyms, symfs) = (pd("kallsyms-pairs.txt"), pd("symfs"));
    for (name, mode) in
        [("pairs-offcpu", "offcpu"), ("pairs-syscalls", "syscalls"), ("pairs-probes", "probes")]
    {
        let (dd, sd) = (scratch(&format!("{name}-data")), scratch(&format!("{name}-text")));
        let data_file = pd(&format!("{name}.data"));
        let text_file = pd(&format!("{name}.ns.script.txt"));
        let direct = ok(&kflame(&[
            "collapse",
            "--no-host-lookups",
            "--kallsyms",
            &kallsyms,
            "--symfs",
            &symfs,
            "--mode",
            mode,
            "--top",
            "3",
            "--split-outliers",
            dd.to_str().unwrap(),
            &data_file,
        ]));
        let via_text = ok(&kflame(&[
            "collapse",
            "--mode",
            mode,
            "--top",
            "3",
            "--split-outliers",
            sd.to_str().unwrap(),
            &text_file,
        ]));
        assert_eq!(direct, via_text, "{name}");
        let (d, s) = (check_split(&dd, &direct, 3), check_split(&sd, &via_text, 3));
        assert!(!d.is_empty(), "{name}");
        let key = |r: &Row| {
            (
                r.rank,
                r.duration_ns,
                r.comm.clone(),
                r.pid.clone(),
                r.what.clone(),
                r.start.clone(),
                r.folded.clone(),
            )
        };
        assert_eq!(d.iter().map(key).collect::<Vec<_>>(), s.iter().map(key).collect::<Vec<_>>(), "{name}");
        for (r, f) in d.iter().zip(&s) {
            let (a, b) =
                (std::fs::read(dd.join(&r.folded)).unwrap(), std::fs::read(sd.join(&f.folded)).unwrap());
            assert_eq!(a, b, "{name}: {}", r.folded);
        }
        let _ = std::fs::remove_dir_all(&dd);
        let _ = std::fs::remove_dir_all(&sd);
    }
}

#[test]
fn function_graph_calls_split_with_their_call_trees() {
    let dir = scratch("fgraph");
    let input = data("function-graph/raw-abstime-proc.txt");
    let shared = ok(&kflame(&["collapse", "--top", "2", "--split-outliers", dir.to_str().unwrap(), &input]));
    let rows = check_split(&dir, &shared, 2);
    assert_eq!(
        rows.iter().map(|r| (r.comm.as_str(), r.pid.as_str(), r.what.as_str())).collect::<Vec<_>>(),
        [("nginx", "733", "sys_sendto"), ("kworker", "41", "queue_work")]
    );
    let tree = std::fs::read_to_string(dir.join(&rows[0].folded)).unwrap();
    assert_eq!(stacks(&tree).len(), 4, "the whole call tree of the outlier: {tree}");
    let svg = std::fs::read_to_string(dir.join(&rows[0].svg)).unwrap();
    assert!(svg.contains(">sys_sendto 52.000us nginx-733</text>"), "title names the call and the task");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_inputs_rank_together_in_the_directory() {
    let (a, b) = (
        data("ftrace/ftrace-dd-mixed-stacktrace.txt"),
        data("ftrace/ftrace-raw_syscalls-write-enter-exit-stacktrace.txt"),
    );
    let dir = scratch("multi");
    let shared = ok(&kflame(&[
        "collapse",
        "--mode",
        "syscalls",
        "--top",
        "2",
        "--split-outliers",
        dir.to_str().unwrap(),
        &a,
        &b,
    ]));
    let towers = stacks(&shared);
    assert_eq!(towers.len(), 4, "two per input in the shared graph: {shared}");
    let rows = index(&dir);
    assert_eq!(rows.len(), 2, "the two longest of both inputs: {rows:#?}");
    let mut weights: Vec<u64> = towers.iter().map(|t| t.1).collect();
    weights.sort_unstable_by(|x, y| y.cmp(x));
    assert_eq!(rows.iter().map(|r| r.duration_ns).collect::<Vec<_>>(), weights[..2]);
    assert!(rows.iter().all(|r| r.input == a || r.input == b));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_uses_are_refused_before_reading() {
    let input = data("ftrace/ftrace-dd-mixed-stacktrace.txt");
    let dir = scratch("refused");
    let d = dir.to_str().unwrap();
    let o = kflame(&["collapse", "--mode", "syscalls", "--split-outliers", d, &input]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("give --top N too"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!dir.exists(), "nothing created");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("old.folded"), "a 1\n").unwrap();
    let o = kflame(&["collapse", "--mode", "syscalls", "--top", "2", "--split-outliers", d, &input]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not empty"), "{err}");
    assert!(o.stdout.is_empty(), "refused before collapsing");
    let o = kflame(&["collapse", "--mode", "syscalls", "--top", "0", &input]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least 1"));
    let _ = std::fs::remove_dir_all(&dir);
}
