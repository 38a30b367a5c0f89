//! perf.data read directly must give the frames and weights of `perf script` output of the
//! same file collapsed by the stackcollapse-perf rules. The `perf script` text of every
//! fixture is committed next to it (made with perf 6.1 and the same kallsyms and symfs, see
//! tests/data/perf-data/README.md); it is collapsed here by a small independent parser.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kflame::collapse::Order;
use kflame::fold::Unit;
use kflame::perf_data::{Host, Options, collapse_bytes, collapse_file};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data")
}

/// (fixture, kallsyms file) pairs.
const FIXTURES: &[(&str, &str)] = &[
    ("perf-burn-fp-fp", "kallsyms-4a5a9b0a.txt"),
    ("perf-burn-nofp-fp", "kallsyms-4a5a9b0a.txt"),
    ("perf-kmalloc", "kallsyms-4a5a9b0a.txt"),
    ("perf-sched", "kallsyms-4a5a9b0a.txt"),
    ("perf-sys-cpuclock", "kallsyms-4a5a9b0a.txt"),
    ("workload-fp", "kallsyms-local.txt"),
    ("workload-dwarf", "kallsyms-local.txt"),
    ("inline-fp", "kallsyms-local.txt"),
    ("inline-dwarf", "kallsyms-local.txt"),
    ("inline-cxx", "kallsyms-local.txt"),
    ("inline-dwz", "kallsyms-local.txt"),
    ("jit-node", "kallsyms-local.txt"),
];

fn options(kallsyms: &str) -> Options {
    Options {
        kallsyms: Some(data_dir().join(kallsyms)),
        symfs: Some(data_dir().join("symfs")),
        perf_map_dir: Some(data_dir().join("perf-maps")),
        host: Host::Isolated,
        ..Options::default()
    }
}

fn read_perf_data(name: &str, opts: &Options) -> BTreeMap<String, u64> {
    let out = collapse_file(&data_dir().join(format!("{name}.data")), opts, Order::Sorted).unwrap();
    out.stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole()))
        .collect()
}

/// Rules of the reference parser (stackcollapse-perf.pl options).
#[derive(Default, Clone, Copy)]
struct Rules {
    counts: bool,
    kernel: bool,
    jit: bool,
    addrs: bool,
}

/// A small, independent implementation of stackcollapse-perf.pl's rules over perf script
/// text (plus kflame's bytes weighting of kmem allocation events), written for this test only.
fn collapse_script(text: &str, rules: Rules) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<String> = Vec::new();
    let mut pname: Option<String> = None;
    let (mut period, mut skip, mut filter) = (1u64, false, None::<String>);
    for line in text.lines().chain(std::iter::once("")) {
        if line.starts_with('#') {
            continue;
        }
        if line.is_empty() {
            if let (Some(p), false) = (pname.take(), skip) {
                let mut full = vec![p];
                full.append(&mut stack);
                *out.entry(full.join(";")).or_default() += if rules.counts { 1 } else { period };
            }
            stack.clear();
            skip = false;
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            let (comm, p, event) = header(line);
            period = p;
            match &filter {
                None => filter = Some(event),
                Some(f) if *f != event => skip = true,
                _ => {}
            }
            pname = Some(comm.replace(' ', "_"));
            continue;
        }
        let mut frames = frame(line, rules);
        frames.append(&mut stack);
        stack = frames;
    }
    out
}

/// `comm tid [cpu] time: period event:` (period optional).
fn header(line: &str) -> (String, u64, String) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let first_num = words
        .iter()
        .position(|w| w.split('/').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
        .unwrap();
    let comm = words[..first_num].join(" ");
    let time_at = words.iter().position(|w| w.ends_with(':') && w.contains('.')).unwrap();
    let rest = &words[time_at + 1..];
    let (period, event) = match rest[0].parse::<u64>() {
        Ok(p) => (p, rest[1]),
        Err(_) => (1, rest[0]),
    };
    let event = event.trim_end_matches(':').to_string();
    let period = alloc_bytes(&event, rest).unwrap_or(period);
    (comm, period.max(1), event)
}

/// kflame weighs kmem allocation tracepoints by allocated bytes: `bytes_alloc=N`, or
/// `order=N` pages of 4096 bytes.
fn alloc_bytes(event: &str, words: &[&str]) -> Option<u64> {
    if !event.starts_with("kmem:") || !event.contains("alloc") {
        return None;
    }
    let field = |key: &str| words.iter().find_map(|w| w.strip_prefix(key)?.parse::<u64>().ok());
    field("bytes_alloc=").or_else(|| field("order=").filter(|&o| o < 48).map(|o| 4096 << o))
}

fn frame(line: &str, rules: Rules) -> Vec<String> {
    let line = line.trim_start();
    let (pc, rest) = line.split_once(' ').unwrap();
    let rest = rest.trim_start();
    let open = rest.rfind(" (").unwrap();
    let (mut func, module) = (&rest[..open], &rest[open + 2..rest.len() - 1]);
    if let Some(i) = func.rfind("+0x") {
        func = &func[..i];
    }
    if func.starts_with('(') {
        return Vec::new();
    }
    let mut name = if func == "[unknown]" {
        let m = if module == "[unknown]" { "unknown" } else { module.rsplit('/').next().unwrap() };
        if rules.addrs { format!("[{m} <{pc}>]") } else { format!("[{m}]") }
    } else {
        func.replace(';', ":")
    };
    if let Some(i) = name.find('(').filter(|&i| !name[i..].starts_with("(anonymous namespace)")) {
        name.truncate(i);
    }
    let kernel = (module.starts_with('[') || module.ends_with("vmlinux")) && !module.contains("unknown");
    if rules.kernel && kernel {
        name.push_str("_[k]");
    } else if rules.jit && module.starts_with("/tmp/perf-") && module.ends_with(".map") {
        name.push_str("_[j]");
    }
    vec![name]
}

fn script(name: &str) -> String {
    std::fs::read_to_string(data_dir().join(format!("{name}.script.txt"))).unwrap()
}

fn assert_same(name: &str, got: &BTreeMap<String, u64>, want: &BTreeMap<String, u64>) {
    let only_got: Vec<_> = got.iter().filter(|(k, v)| want.get(*k) != Some(v)).take(3).collect();
    let only_want: Vec<_> = want.iter().filter(|(k, v)| got.get(*k) != Some(v)).take(3).collect();
    assert!(
        only_got.is_empty() && only_want.is_empty(),
        "{name}: perf.data and perf script differ\n  perf.data only: {only_got:#?}\n  perf script only: {only_want:#?}"
    );
    assert!(!got.is_empty(), "{name}: no stacks");
}

#[test]
fn same_frames_and_weights_as_perf_script() {
    for &(name, kallsyms) in FIXTURES {
        let want = collapse_script(&script(name), Rules::default());
        let got = read_perf_data(name, &options(kallsyms));
        assert_same(name, &got, &want);
    }
}

#[test]
fn counts_and_annotations_match_too() {
    for &(name, kallsyms) in FIXTURES {
        let rules = Rules { counts: true, kernel: true, jit: true, addrs: true };
        let want = collapse_script(&script(name), rules);
        let opts = Options {
            counts: true,
            annotate_kernel: true,
            annotate_jit: true,
            include_addrs: true,
            ..options(kallsyms)
        };
        assert_same(name, &read_perf_data(name, &opts), &want);
    }
}

#[test]
fn dwarf_capture_is_unwound_through_the_workload() {
    let got = read_perf_data("workload-dwarf", &options("kallsyms-local.txt"));
    let deep = got.keys().filter(|s| s.contains("main;level1;level2")).count();
    assert!(deep > 0, "no unwound stack reaches main;level1;level2: {got:#?}");
    let no_unwind =
        read_perf_data("workload-dwarf", &Options { no_unwind: true, ..options("kallsyms-local.txt") });
    assert!(no_unwind.keys().all(|s| !s.contains("main;level1")), "--no-unwind still unwinds");
    let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
    assert_eq!(total(&got), total(&no_unwind));
}

#[test]
fn pid_and_tid_name_the_root_frame() {
    let text = script("workload-fp");
    let tid: u64 = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let opts = Options { include_tid: true, ..options("kallsyms-local.txt") };
    let got = read_perf_data("workload-fp", &opts);
    let root = format!("workload-fp-{tid}/{tid}");
    assert!(got.keys().any(|s| s.split(';').next() == Some(root.as_str())), "no {root} root in {got:#?}");
    let opts = Options { include_pid: true, ..options("kallsyms-local.txt") };
    let got = read_perf_data("workload-fp", &opts);
    assert!(got.keys().any(|s| s.starts_with(&format!("workload-fp-{tid};"))));
}

#[test]
fn metadata_event_filter_and_notes() {
    let dir = data_dir();
    let out =
        collapse_file(&dir.join("perf-sys-cpuclock.data"), &options("kallsyms-4a5a9b0a.txt"), Order::Sorted)
            .unwrap();
    assert_eq!(out.meta.unit, Unit::Period);
    assert_eq!(out.meta.event.as_deref(), Some("cpu-clock"));
    // Several tracepoints: the first sample's event is kept, the others are counted.
    let out = collapse_file(&dir.join("perf-sched.data"), &options("kallsyms-4a5a9b0a.txt"), Order::Sorted)
        .unwrap();
    let note = out.diag.get("other events").expect("other events are reported");
    assert!(note.count > 0);
    let event = out.meta.event.clone().unwrap();
    let other =
        Options { event_filter: Some("sched:sched_switch".into()), ..options("kallsyms-4a5a9b0a.txt") };
    let switched = collapse_file(&dir.join("perf-sched.data"), &other, Order::Sorted).unwrap();
    assert_eq!(switched.meta.event.as_deref(), Some("sched:sched_switch"));
    assert_ne!(event, "sched:sched_switch");
    assert!(switched.stacks.total().whole() > 0);
    // Without kernel symbols, kernel frames are named after the kernel image, and it is said.
    let bare = Options { symfs: Some(dir.join("symfs")), host: Host::Isolated, ..Options::default() };
    let out = collapse_file(&dir.join("perf-kmalloc.data"), &bare, Order::Sorted).unwrap();
    let note = out.diag.get("no kernel symbols").expect("missing kernel symbols are reported");
    assert!(note.message.contains("4a5a9b0a"), "{}", note.message);
    assert!(out.stacks.in_output_order().iter().all(|(s, _)| s.ends_with(b";[[kernel.kallsyms]]")));
    assert!(out.diag.get("header repaired").is_some(), "the shifted EVENT_DESC section is reported");
}

#[test]
fn time_order_keeps_the_total() {
    let opts = options("kallsyms-local.txt");
    let dir = data_dir();
    let sorted = collapse_file(&dir.join("workload-fp.data"), &opts, Order::Sorted).unwrap();
    let timed = collapse_file(&dir.join("workload-fp.data"), &opts, Order::Time).unwrap();
    assert_eq!(sorted.stacks.total(), timed.stacks.total());
    assert!(timed.stacks.len() >= sorted.stacks.len());
}

/// A sample whose call chain runs past its record is skipped, and the note says where it
/// is in the file; the other samples are kept.
#[test]
fn a_damaged_sample_is_skipped_and_located() {
    let good = std::fs::read(data_dir().join("perf-burn-fp-fp.data")).unwrap();
    let word = |at: usize| u64::from_le_bytes(good[at..at + 8].try_into().unwrap()) as usize;
    // The first sample record (type 9) of the data section.
    let (start, size) = (word(40), word(48));
    let mut at = start;
    while u32::from_le_bytes(good[at..at + 4].try_into().unwrap()) != 9 {
        at += u16::from_le_bytes([good[at + 6], good[at + 7]]) as usize;
        assert!(at < start + size, "no sample in the fixture");
    }
    // IP|TID|TIME|CALLCHAIN|PERIOD: the chain's length follows four words of the body.
    let period = word(at + 8 + 24);
    let mut bad = good.clone();
    bad[at + 8 + 32..at + 8 + 40].copy_from_slice(&1000u64.to_le_bytes());
    let opts = options("kallsyms-4a5a9b0a.txt");
    let full = collapse_bytes(&good, &opts, Order::Sorted).unwrap();
    let out = collapse_bytes(&bad, &opts, Order::Sorted).unwrap();
    let note = out.diag.get("damaged record").expect("the damaged sample is reported");
    assert_eq!(note.count, 1);
    assert!(note.message.contains(&format!("at byte {at} of the file")), "{}", note.message);
    assert_eq!(out.stacks.total().whole() + period as u64, full.stacks.total().whole());
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let good = std::fs::read(data_dir().join("perf-burn-fp-fp.data")).unwrap();
    let opts = options("kallsyms-4a5a9b0a.txt");
    let err = collapse_bytes(b"hello, this is not perf.data", &opts, Order::Sorted).unwrap_err();
    assert!(err.to_string().contains("PERFILE2"), "{err}");
    let err = collapse_bytes(&[], &opts, Order::Sorted).unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");
    let full = collapse_bytes(&good, &opts, Order::Sorted).unwrap().stacks.total();
    for cut in [8, 50, 104, 200, 1000, 4000, good.len() / 2, good.len() - 100, good.len() - 1] {
        match collapse_bytes(&good[..cut], &opts, Order::Sorted) {
            Ok(out) => assert!(out.stacks.total() <= full),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    // Flipped bytes in the data section: records may be skipped, nothing may panic.
    let mut state = 0x2545f4914f6cdd1du64;
    for _ in 0..200 {
        let mut bad = good.clone();
        for _ in 0..8 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let i = (state as usize) % bad.len();
            bad[i] = (state >> 32) as u8;
        }
        let _ = collapse_bytes(&bad, &opts, Order::Sorted);
    }
}
