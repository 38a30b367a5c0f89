//! Golden tests of the `perf script` collapser against FlameGraph's and inferno's expected
//! outputs, plus real captures of this machine kind (see `tests/data/perf/README.md`).

mod common;

use std::io::Read;

use kflame::collapse::perf::{PerfOptions, PerfScript, PerfWeight, kinds};
use kflame::collapse::{Engine, Order, Output};
use kflame::fold::{Unit, Weight};

/// Collapses `input` on `threads` threads with small blocks (so that splitting is exercised).
fn collapse(input: &[u8], opts: &PerfOptions, threads: usize) -> Output {
    let engine = Engine { threads, order: Order::Sorted, block_size: 4096 };
    engine.run(Box::new(PerfScript::new(opts.clone())), input).expect("in-memory input")
}

fn folded(out: &Output) -> String {
    let mut s = String::new();
    for (stack, w) in out.stacks.in_output_order() {
        s.push_str(&String::from_utf8_lossy(stack));
        s.push(' ');
        s.push_str(&w.to_string());
        s.push('\n');
    }
    s
}

/// The reference's own tests remove `"` and `'` from the output before comparing
/// (stackcollapse-perf.pl deletes them; inferno keeps them).
fn strip_quotes(s: &str) -> String {
    s.chars().filter(|&c| c != '"' && c != '\'').collect()
}

fn options(flag: &str) -> PerfOptions {
    let mut o = PerfOptions::default();
    match flag {
        "pid" => o.include_pid = true,
        "tid" => o.include_tid = true,
        "kernel" => o.annotate_kernel = true,
        "jit" => o.annotate_jit = true,
        "all" => {
            o.annotate_kernel = true;
            o.annotate_jit = true;
        }
        "addrs" => o.include_addrs = true,
        "" => {}
        other => panic!("unknown flag {other}"),
    }
    o
}

/// Runs one golden case on 1 and 3 threads; returns a description of the mismatch, if any.
fn check(name: &str, input: &[u8], flag: &str, expected: &str, quotes: bool) -> Option<String> {
    let opts = options(flag);
    let one = collapse(input, &opts, 1);
    let three = collapse(input, &opts, 3);
    let got = folded(&one);
    if got != folded(&three) || one.diag != three.diag {
        return Some(format!("{name} --{flag}: 1 and 3 threads differ"));
    }
    let got = if quotes { got } else { strip_quotes(&got) };
    let exp: Vec<&str> = expected.lines().collect();
    let got: Vec<&str> = got.lines().collect();
    if got == exp {
        return None;
    }
    let first = got.iter().zip(&exp).position(|(a, b)| a != b).unwrap_or(got.len().min(exp.len()));
    Some(format!(
        "{name} --{flag}: {} lines vs {} expected; first difference at line {}:\n  got      {:?}\n  expected {:?}",
        got.len(),
        exp.len(),
        first + 1,
        got.get(first),
        exp.get(first)
    ))
}

const FLAMEGRAPH_INPUTS: &[&str] = &[
    "perf-cycles-instructions-01",
    "perf-dd-stacks-01",
    "perf-funcab-cmd-01",
    "perf-funcab-pid-01",
    "perf-iperf-stacks-pidtid-01",
    "perf-java-faults-01",
    "perf-java-stacks-01",
    "perf-java-stacks-02",
    "perf-js-stacks-01",
    "perf-mirageos-stacks-01",
    "perf-numa-stacks-01",
    "perf-rust-Yamakaky-dcpu",
    "perf-vertx-stacks-01",
];

const FLAGS: &[&str] = &["pid", "tid", "kernel", "jit", "all", "addrs"];

/// The expected result: inferno's own for the Rust input (fixed demangling, quotes kept),
/// else the results of FlameGraph 57207af where they differ from master, else master's
/// (both without quotes). Returns the text and whether quotes are kept.
fn flamegraph_expected(input: &str, flag: &str) -> (String, bool) {
    let file = format!("{input}-collapsed-{flag}.txt");
    let candidates = [
        format!("perf/inferno/results/{file}"),
        format!("perf/flamegraph/results-57207af/{file}"),
        format!("perf/flamegraph/results-master/{file}"),
    ];
    let skip_inferno = !input.starts_with("perf-rust");
    for c in candidates.iter().skip(usize::from(skip_inferno)) {
        if common::data(c).exists() {
            let text = String::from_utf8(common::read(c)).expect("expected results are UTF-8");
            return (text, c.contains("/inferno/"));
        }
    }
    panic!("no expected result for {file}");
}

#[test]
fn flamegraph_test_suite_all_flags() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for input in FLAMEGRAPH_INPUTS {
        let data = common::read(&format!("perf/flamegraph/test/{input}.txt"));
        for flag in FLAGS {
            cases += 1;
            let (expected, quotes) = flamegraph_expected(input, flag);
            failures.extend(check(input, &data, flag, &expected, quotes));
        }
    }
    assert_eq!(cases, 78);
    assert!(failures.is_empty(), "{} of {cases} cases differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn inferno_collapse_perf_cases() {
    let mut gz = Vec::new();
    flate2::read::GzDecoder::new(&common::read("perf/flamegraph/example-perf-stacks.txt.gz")[..])
        .read_to_end(&mut gz)
        .expect("valid gzip fixture");
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("example-perf-stacks", gz, "", "example-perf-stacks-collapsed.txt"),
        ("go-stacks", common::read("perf/inferno/go-stacks.txt"), "", "go-stacks-collapsed.txt"),
        ("java-inline", common::read("perf/inferno/java-inline.txt"), "", "java-inline-collapsed.txt"),
        (
            "cpp-stacks-std-function",
            common::read("perf/inferno/cpp-stacks-std-function.txt"),
            "",
            "cpp-stacks-std-function-collapsed.txt",
        ),
        ("single-event", common::read("perf/inferno/single-event.txt"), "", "single-event-collapsed.txt"),
        (
            "single-line-stacks",
            common::read("perf/inferno/single-line-stacks.txt"),
            "",
            "single-line-stacks-collapsed.txt",
        ),
        ("no-events", common::read("perf/inferno/no-events.txt"), "", "no-events-collapsed.txt"),
        (
            "versioned-vmlinux",
            common::read("perf/inferno/versioned-vmlinux.txt"),
            "kernel",
            "versioned-vmlinux-collapsed-kernel.txt",
        ),
        (
            "sourcepawn-jitdump",
            common::read("perf/inferno/sourcepawn-jitdump.txt"),
            "jit",
            "sourcepawn-jitdump-collapsed-jit.txt",
        ),
    ];
    let mut failures = Vec::new();
    for (name, input, flag, result) in &cases {
        let expected = String::from_utf8(common::read(&format!("perf/inferno/results/{result}"))).unwrap();
        failures.extend(check(name, input, flag, &expected, true));
    }
    assert!(failures.is_empty(), "{} cases differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn no_events_gives_empty_output() {
    let out = collapse(&common::read("perf/inferno/no-events.txt"), &PerfOptions::default(), 2);
    assert!(out.stacks.is_empty());
    assert!(out.diag.is_empty());
}

#[test]
fn warns_like_the_reference() {
    // An empty line right after a header: the following frame is a weird event line.
    let out = collapse(&common::read("perf/inferno/empty-line.txt"), &PerfOptions::default(), 1);
    let e = out.diag.get(kinds::WEIRD_EVENT).expect("weird event line reported");
    assert_eq!((e.count, e.first_line), (1, 6));
    assert!(e.message.contains("main+0x1c"), "{}", e.message);
    let out = collapse(&common::read("perf/inferno/weird-stack-line.txt"), &PerfOptions::default(), 1);
    let e = out.diag.get(kinds::WEIRD_STACK).expect("weird stack line reported");
    assert_eq!(e.count, 1);
    assert!(e.message.contains("THIS_IS_A_WEIRD_LINE"), "{}", e.message);
    // Its second sample has no valid frame left: kept as the process name alone.
    assert_eq!(folded(&out), "inline-counter 250000\ninline-counter;main 250000\n");
    // The second sample of empty-line.txt has no frame: kept as the process alone, noted.
    let out = collapse(&common::read("perf/inferno/empty-line.txt"), &PerfOptions::default(), 1);
    assert_eq!(folded(&out), "inline-counter 250000\ninline-counter;main 250000\n");
    assert_eq!(out.diag.get(kinds::NO_FRAMES).map(|e| (e.count, e.first_line)), Some((1, 4)));
}

#[test]
fn other_events_are_skipped_with_a_note() {
    let input = common::read("perf/flamegraph/test/perf-cycles-instructions-01.txt");
    let out = collapse(&input, &PerfOptions::default(), 2);
    let note = out.diag.get(kinds::OTHER_EVENT).expect("a note about cycles samples");
    let text = String::from_utf8_lossy(&input);
    let count = |ev: &str| text.lines().filter(|l| l.trim_end().ends_with(&format!(" {ev}:"))).count() as u64;
    assert_eq!(note.count, count("cycles"));
    assert!(note.message.contains("instructions") && note.message.contains("cycles"), "{}", note.message);
    assert_eq!(out.stacks.total().whole(), count("instructions"));
    let opts = PerfOptions { event_filter: Some("cycles".into()), ..Default::default() };
    let out = collapse(&input, &opts, 2);
    assert_eq!(out.stacks.total().whole(), count("cycles"));
    assert_eq!(out.diag.get(kinds::OTHER_EVENT).unwrap().count, count("instructions"));
}

/// Samples and the sum of their periods, read independently from the event lines.
fn samples_and_periods(text: &str) -> (u64, u64) {
    let mut samples = 0;
    let mut periods = 0;
    for line in text.lines() {
        if line.starts_with(['\t', ' ', '#']) || line.is_empty() || !line.contains(": ") {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words.iter().position(|w| *w == "cpu-clock:") {
            samples += 1;
            periods += words[i - 1].parse::<u64>().expect("period before the event");
        }
    }
    (samples, periods)
}

#[test]
fn captures_totals_match_samples_times_period() {
    for name in [
        "perf-sys-cpuclock",
        "perf-burn-fp-fp",
        "perf-burn-fp-dwarf",
        "perf-burn-nofp-fp",
        "perf-burn-nofp-dwarf",
    ] {
        let input = common::read(&format!("perf/captures/{name}.script.txt"));
        let (samples, periods) = samples_and_periods(&String::from_utf8_lossy(&input));
        assert!(samples > 50, "{name}: {samples} samples");
        let out = collapse(&input, &PerfOptions::default(), 2);
        assert_eq!(out.diag.skipped(), 0, "{name}: {}", out.diag.report(name));
        assert_eq!(out.stacks.total(), Weight::from_u64(periods), "{name}");
        assert_eq!(out.meta.unit, Unit::Period);
        assert_eq!(out.meta.event.as_deref(), Some("cpu-clock"));
        let counted = collapse(&input, &PerfOptions { weight: PerfWeight::Samples, ..Default::default() }, 2);
        assert_eq!(counted.stacks.total().whole(), samples, "{name}");
        assert_eq!(folded(&collapse(&input, &PerfOptions::default(), 1)), folded(&out), "{name}");
    }
}

#[test]
fn dwarf_inlined_frames() {
    let input = common::read("perf/captures/perf-burn-fp-dwarf.script.txt");
    let plain = folded(&collapse(&input, &PerfOptions::default(), 1));
    assert!(plain.contains(";__libc_start_main_impl;__libc_start_call_main;main;"), "{plain}");
    let opts = PerfOptions { mark_inlined: true, ..Default::default() };
    let marked = folded(&collapse(&input, &opts, 2));
    assert!(marked.contains(";__libc_start_main_impl_[i];__libc_start_call_main;"), "{marked}");
}

/// `perf report -g folded,0,caller,count` of the same perf.data: per-command sample
/// counts, and every stack perf names the same way (no raw addresses, no argument lists).
#[test]
fn agrees_with_perf_report_folded() {
    let report =
        String::from_utf8(common::read("perf/captures/perf-sys-cpuclock.report-folded-caller-count.txt"))
            .expect("UTF-8 report");
    let mut by_stack = std::collections::BTreeMap::<String, u64>::new();
    let mut by_comm = std::collections::BTreeMap::<String, u64>::new();
    let mut comm = String::new();
    for line in report.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with(' ') {
            // `    29.88%  burn-fp          burn-fp   `: columns of the header's widths.
            comm = line.get(12..27).expect("command column").trim_end().replace(' ', "_");
            continue;
        }
        let (count, stack) = line.split_once(' ').expect("count and stack");
        let count: u64 = count.parse().expect("a sample count");
        *by_comm.entry(comm.clone()).or_default() += count;
        let raw_address = |f: &str| f.starts_with("0x") || f.bytes().all(|b| b.is_ascii_hexdigit());
        if !stack.contains('(') && !stack.split(';').any(raw_address) {
            *by_stack.entry(format!("{comm};{stack}")).or_default() += count;
        }
    }
    let input = common::read("perf/captures/perf-sys-cpuclock.script.txt");
    let out = collapse(&input, &PerfOptions { weight: PerfWeight::Samples, ..Default::default() }, 2);
    // perf report leaves samples without frames out of its folded lines; we keep them as the
    // process name alone. Count them from the script: a header directly followed by a blank.
    let text = String::from_utf8_lossy(&input);
    let lines: Vec<&str> = text.lines().collect();
    let frameless = lines.windows(2).filter(|w| w[0].ends_with("cpu-clock: ") && w[1].is_empty()).count();
    assert_eq!(out.diag.get(kinds::NO_FRAMES).map_or(0, |e| e.count), frameless as u64);
    let mut ours_by_comm = std::collections::BTreeMap::<String, u64>::new();
    let mut ours_frameless = 0;
    for (stack, w) in out.stacks.in_output_order() {
        let s = String::from_utf8_lossy(stack);
        match s.split_once(';') {
            Some((comm, _)) => *ours_by_comm.entry(comm.to_string()).or_default() += w.whole(),
            None => ours_frameless += w.whole(),
        }
    }
    assert_eq!(ours_frameless, frameless as u64);
    let diff: Vec<_> = ours_by_comm
        .iter()
        .filter(|(c, n)| by_comm.get(*c) != Some(n))
        .map(|(c, n)| format!("{c}: ours {n}, report {:?}", by_comm.get(c)))
        .collect();
    assert!(diff.is_empty(), "{diff:?}");
    let header: u64 = report
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a `# Samples:` header");
    assert_eq!(by_comm.values().sum::<u64>() + frameless as u64, header);
    let Output { stacks, .. } = out;
    let mut mismatches = Vec::new();
    for (stack, count) in &by_stack {
        let ours = match &stacks {
            kflame::fold::Stacks::Counts(c) => c.get(stack.as_bytes()).map_or(0, |w| w.whole()),
            kflame::fold::Stacks::Ordered(_) => unreachable!("sorted engine"),
        };
        if ours != *count {
            mismatches.push(format!("{stack}: ours {ours}, perf report {count}"));
        }
    }
    assert!(by_stack.len() > 50, "{}", by_stack.len());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The payload lines of the capture, read independently: `4096 << order` per sample.
#[test]
fn page_alloc_bytes_total() {
    let input = common::read("perf/captures/perf-mm-page-alloc.script.txt");
    let text = String::from_utf8_lossy(&input);
    let expected: u64 = text
        .lines()
        .filter(|l| l.contains(" kmem:mm_page_alloc: "))
        .map(|l| {
            let order = l.split(" order=").nth(1).and_then(|r| r.split(' ').next()).expect("order field");
            4096u64 << order.parse::<u32>().expect("numeric order")
        })
        .sum();
    assert!(expected > 0);
    for threads in [1, 2] {
        let out = collapse(&input, &PerfOptions::default(), threads);
        assert_eq!(out.stacks.total(), Weight::from_u64(expected));
        assert_eq!(out.meta.unit, Unit::Bytes);
        assert_eq!(out.meta.event.as_deref(), Some("kmem:mm_page_alloc"));
    }
    let opts = PerfOptions { weight: PerfWeight::Samples, ..Default::default() };
    let samples = text.lines().filter(|l| l.contains(" kmem:mm_page_alloc: ")).count() as u64;
    assert_eq!(collapse(&input, &opts, 2).stacks.total().whole(), samples);
}

#[test]
fn kmalloc_bytes_total() {
    let input = common::read("perf/captures/perf-kmalloc.script.txt");
    let text = String::from_utf8_lossy(&input);
    let expected: u64 = text
        .lines()
        .filter(|l| l.contains(" kmem:kmalloc: "))
        .map(|l| {
            l.split(" bytes_alloc=").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse::<u64>().unwrap()
        })
        .sum();
    let out = collapse(&input, &PerfOptions::default(), 2);
    assert!(out.diag.is_empty(), "{}", out.diag.report("kmalloc"));
    assert_eq!(out.stacks.total(), Weight::from_u64(expected));
    assert_eq!(out.meta.unit, Unit::Bytes);
    // Frames without a dso column are kept.
    assert!(folded(&out).contains(";__kmalloc_cache_node_noprof "), "{}", folded(&out));
}

#[test]
fn sched_switch_tracepoint_counts_samples() {
    let input = common::read("perf/captures/perf-sched-switch.script.txt");
    let text = String::from_utf8_lossy(&input);
    let samples = text.lines().filter(|l| l.contains(" sched:sched_switch: ")).count() as u64;
    let out = collapse(&input, &PerfOptions::default(), 2);
    // perf prints period 1 for tracepoints: the total is the number of switches.
    assert_eq!(out.stacks.total().whole(), samples);
    // perf's own stderr lines at the top of the capture are reported, not folded.
    assert_eq!(out.diag.get(kinds::WEIRD_EVENT).map(|e| (e.count, e.first_line)), Some((7, 1)));
}

/// `perf script` of samples without call chains prints one header per line and no blank
/// lines: the input is still cut (before headers) and runs in parallel with equal results.
#[test]
fn stackless_samples_without_blank_lines() {
    let mut input = String::new();
    for i in 0..6000 {
        match i % 3 {
            0 => input.push_str(&format!(
                "comm{} {i} 1.{i}: 7 cpu-clock:  ffffffff810{i:05x} f{} ([kernel.kallsyms])\n",
                i % 5,
                i % 11
            )),
            1 => input.push_str(&format!("comm{} {i}/{i} [001] 2.{i}: 3 cpu-clock: \n", i % 4)),
            _ => input.push_str(&format!("       comm{} {i} 3.{i}: 5 cpu-clock:\n", i % 2)),
        }
    }
    let one = collapse(input.as_bytes(), &PerfOptions::default(), 1);
    let three = collapse(input.as_bytes(), &PerfOptions::default(), 3);
    assert_eq!(folded(&one), folded(&three));
    assert_eq!(one.diag, three.diag);
    assert_eq!(one.stacks.total().whole(), 2000 * (7 + 3 + 5));
    assert_eq!(one.diag.get(kinds::NO_FRAMES).map(|e| e.count), Some(4000));
}

/// Real `perf script` text of a capture without call chains (`perf-data/pairs-syscalls-nocc`):
/// perf pads each comm on the left, so every header is indented like a frame, and the comm
/// `dd` reads as a hex address. Each line is still a sample of its own, on one thread or
/// several.
#[test]
fn padded_headers_with_a_hex_comm_are_samples_not_frames() {
    let text = common::read("perf-data/pairs-syscalls-nocc.ns.script.txt");
    let lines = String::from_utf8_lossy(&text);
    assert!(
        lines.lines().all(|l| l.starts_with("              dd ")),
        "the capture is all padded `dd` headers"
    );
    // The first event (sys_exit) is kept; each of its samples weighs 1 (tracepoints).
    let exits = lines.lines().filter(|l| l.contains(" raw_syscalls:sys_exit: ")).count();
    let one = collapse(&text, &PerfOptions::default(), 1);
    assert_eq!(folded(&one), format!("dd {exits}\n"));
    assert_eq!(folded(&collapse(&text, &PerfOptions::default(), 2)), folded(&one));
    assert_eq!(one.diag.get(kinds::NO_FRAMES).map(|e| e.count), Some(exits as u64));
    assert!(one.diag.get(kinds::WEIRD_STACK).is_none());
}

/// CRLF line ends (files that went through Windows tools) collapse exactly like LF.
#[test]
fn crlf_input_equals_lf_input() {
    for name in
        ["perf/flamegraph/test/perf-iperf-stacks-pidtid-01.txt", "perf/captures/perf-kmalloc.script.txt"]
    {
        let lf = common::read(name);
        let crlf: Vec<u8> =
            lf.iter().flat_map(|&b| if b == b'\n' { vec![b'\r', b'\n'] } else { vec![b] }).collect();
        let expected = collapse(&lf, &PerfOptions::default(), 1);
        for threads in [1, 3] {
            let got = collapse(&crlf, &PerfOptions::default(), threads);
            assert_eq!(folded(&got), folded(&expected), "{name} on {threads} threads");
            assert_eq!(got.meta, expected.meta);
        }
    }
}

/// Time order (flame charts): the same sequence of stacks on 1 and 3 threads, and the same
/// total as the sorted aggregation.
#[test]
fn time_order_is_thread_independent() {
    let input = common::read("perf/captures/perf-burn-fp-fp.script.txt");
    let run = |threads| {
        let engine = Engine { threads, order: Order::Time, block_size: 4096 };
        engine.run(Box::new(PerfScript::new(PerfOptions::default())), &input[..]).expect("in-memory input")
    };
    let one = run(1);
    let three = run(3);
    assert_eq!(one.stacks.in_output_order(), three.stacks.in_output_order());
    assert!(matches!(one.stacks, kflame::fold::Stacks::Ordered(_)));
    assert_eq!(one.stacks.total(), collapse(&input, &PerfOptions::default(), 2).stacks.total());
    // One busy process: consecutive identical stacks are merged into fewer runs than samples.
    let (samples, _) = samples_and_periods(&String::from_utf8_lossy(&input));
    assert!((one.stacks.len() as u64) < samples);
}

/// `--event-filter` names an event without its modifiers: `cpu-clock` selects the
/// `cpu-clock:uhH` samples, and an event absent from the input selects nothing.
#[test]
fn event_filter_ignores_modifiers() {
    let input = common::read("perf/inferno/weird-stack-line.txt");
    let opts = PerfOptions { event_filter: Some("cpu-clock".into()), ..Default::default() };
    assert_eq!(collapse(&input, &opts, 1).stacks.total().whole(), 2 * 250000);
    let opts = PerfOptions { event_filter: Some("cycles".into()), ..Default::default() };
    let out = collapse(&input, &opts, 1);
    assert!(out.stacks.is_empty());
    assert_eq!(out.diag.get(kinds::OTHER_EVENT).map(|e| e.count), Some(2));
}
