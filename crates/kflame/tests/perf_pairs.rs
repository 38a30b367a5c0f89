//! Syscall latency and off-CPU time from `perf script` tracepoint records, on real captures
//! (`tests/data/perf/README.md` says how each was made). Every duration is checked against
//! one computed here from the raw text by a separate, deliberately simple reader.

mod common;

use std::collections::HashMap;

use common::SharedBuf;
use common::mutate::Mutator;
use kflame::collapse::events_json::EventLog;
use kflame::collapse::pairing::syscall_name_x86_64;
use kflame::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions, kinds};
use kflame::collapse::perf::{PerfOptions, PerfScript};
use kflame::collapse::{Engine, Output};
use kflame::fold::Unit;

const SYSCALLS: &str = "perf/captures/perf-syscalls-dd.script.txt";
const SWITCHES: &str = "perf/captures/perf-sched-switch.script.txt";
const PROBES: &str = "perf/captures/perf-uprobe-getcwd.script.txt";

fn run(input: &[u8], opts: PerfPairsOptions, block_size: usize) -> (Output, String) {
    let buf = SharedBuf::default();
    let log = EventLog::new(buf.clone());
    let e = Engine { threads: 2, block_size, ..Engine::default() };
    let out = e.run(Box::new(PerfPairs::new(opts, Some(log.clone()))), input).expect("in-memory input");
    log.finish().unwrap();
    let text = buf.text();
    (out, text)
}

fn folded(out: &Output) -> Vec<(String, u64)> {
    out.stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole()))
        .collect()
}

// ---- the independent reader ----

/// `4528.382224524` or `2001.169107` as ns, by string padding.
fn ns(t: &str) -> u64 {
    let (s, f) = t.split_once('.').unwrap();
    let f = format!("{f:0<9}");
    s.parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap()
}

/// Header lines: (tid, ts_ns, event name, payload). Comms in these captures have no spaces
/// after the first word other than padding, so tokens are: comm, [pid/]tid, [cpu], ts:, ...
fn headers(text: &str) -> Vec<(u32, u64, String, String)> {
    let mut v = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with(char::is_whitespace) || !line.contains(" [0") {
            continue;
        }
        if let Some(at) = line.find(" probe_libc:") {
            let toks: Vec<&str> = line[..at].split_whitespace().collect();
            let rest = &line[at + 1..];
            let colon = rest.find(": ").unwrap();
            let ts = ns(toks[toks.len() - 1].trim_end_matches(':'));
            let tid = toks[toks.len() - 3].parse().unwrap();
            v.push((tid, ts, rest[..colon].to_string(), rest[colon + 2..].to_string()));
            continue;
        }
        let (head, payload) = match line.find(": ") {
            Some(_) => {
                let ev_at = line.find(" raw_syscalls:").or_else(|| line.find(" sched:")).unwrap();
                let rest = &line[ev_at + 1..];
                let colon = rest.find(": ").unwrap();
                (&line[..ev_at], (rest[..colon].to_string(), rest[colon + 2..].to_string()))
            }
            None => continue,
        };
        let toks: Vec<&str> = head.split_whitespace().collect();
        let cpu_at = toks.iter().position(|t| t.starts_with('[')).unwrap();
        let ids = toks[cpu_at - 1];
        // `2284/-1`: perf prints -1 for a thread it no longer knew (unused for sched_switch).
        let tid = ids.rsplit('/').next().unwrap().parse().unwrap_or(u32::MAX);
        let ts = ns(toks[cpu_at + 1].trim_end_matches(':'));
        v.push((tid, ts, payload.0, payload.1));
    }
    v
}

/// One JSON line's fields, read with string search.
#[derive(Debug, PartialEq)]
struct Json {
    ts_ns: u64,
    pid: u32,
    duration: u64,
    event: String,
    stack: Vec<String>,
}

fn json_lines(text: &str) -> Vec<Json> {
    let num = |l: &str, key: &str| {
        let at = l.find(key).unwrap() + key.len();
        l[at..].split([',', '}']).next().unwrap().to_string()
    };
    let strs = |l: &str, key: &str, end: &str| {
        let at = l.find(key).unwrap() + key.len();
        l[at..at + l[at..].find(end).unwrap()].to_string()
    };
    text.lines()
        .map(|l| Json {
            ts_ns: ns(&num(l, "\"ts\":")),
            pid: num(l, "\"pid\":").parse().unwrap(),
            duration: num(l, "\"duration_ns\":").parse().unwrap(),
            event: strs(l, "\"event\":\"", "\""),
            stack: {
                let inner = strs(l, "\"stack\":[", "],\"event\"");
                let inner = inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or("");
                inner.split("\",\"").filter(|s| !s.is_empty()).map(str::to_string).collect()
            },
        })
        .collect()
}

/// Syscall pairs: (entry ts, tid, duration, name), in the order of their exits.
fn expected_syscalls(text: &str) -> Vec<(u64, u32, u64, String)> {
    let nr = |p: &str| p.split_whitespace().nth(1).unwrap().parse::<u32>().unwrap();
    let mut open: HashMap<u32, (u32, u64)> = HashMap::new();
    let mut pairs = Vec::new();
    for (tid, ts, name, payload) in headers(text) {
        match name.as_str() {
            "raw_syscalls:sys_enter" => {
                open.insert(tid, (nr(&payload), ts));
            }
            "raw_syscalls:sys_exit" => {
                if let Some((n, start)) = open.remove(&tid)
                    && n == nr(&payload)
                {
                    pairs.push((start, tid, ts - start, syscall_name_x86_64(n).unwrap().to_string()));
                }
            }
            _ => {}
        }
    }
    pairs
}

#[test]
fn syscall_durations_match_the_timestamps() {
    let input = common::read(SYSCALLS);
    let text = String::from_utf8(input.clone()).unwrap();
    let want = expected_syscalls(&text);
    assert!(want.len() > 100, "the capture has {} pairs", want.len());
    let (out, log) = run(&input, PerfPairsOptions::new(PairMode::Syscalls), 1 << 20);
    let got = json_lines(&log);
    assert_eq!(got.len(), want.len());
    for (g, (start, tid, dur, name)) in got.iter().zip(&want) {
        assert_eq!((g.ts_ns, g.pid, g.duration), (*start, *tid, *dur), "{g:?}");
        assert_eq!(g.event, format!("syscall:{name}"));
        // The stack is the one at entry: its leaf is where sys_enter fires.
        assert_eq!(g.stack.last().map(String::as_str), Some("syscall_trace_enter"), "{g:?}");
    }
    // Several pairs by hand from the capture: dd's brk() at 4528.380775 and its reads.
    let names: Vec<&str> = want.iter().map(|w| w.3.as_str()).collect();
    for n in ["read", "write", "brk", "mmap", "openat", "close"] {
        assert!(names.contains(&n), "no {n} pair");
    }
    assert_eq!(out.meta.unit, Unit::Nanoseconds);
    assert_eq!(out.meta.event.as_deref(), Some("syscalls"));
}

#[test]
fn syscall_totals_per_root_frame() {
    let input = common::read(SYSCALLS);
    let want = expected_syscalls(std::str::from_utf8(&input).unwrap());
    let (out, _) = run(&input, PerfPairsOptions::new(PairMode::Syscalls), 1 << 20);
    let mut by_root: HashMap<String, u64> = HashMap::new();
    for (stack, w) in folded(&out) {
        let root = stack.split(';').next().unwrap().to_string();
        assert!(root.starts_with("syscall:"), "{stack}");
        assert!(stack.ends_with(";syscall_trace_enter"), "{stack}");
        *by_root.entry(root).or_default() += w;
    }
    let mut expect: HashMap<String, u64> = HashMap::new();
    for (_, _, d, name) in &want {
        if *d > 0 {
            *expect.entry(format!("syscall:{name}")).or_default() += d;
        }
    }
    assert_eq!(by_root, expect);
    let total: u64 = want.iter().map(|w| w.2).sum();
    assert_eq!(out.stacks.total().whole(), total);
}

#[test]
fn syscall_edges_of_the_capture_are_noted() {
    // The capture starts with execve's exit (its entry was before perf attached) and ends
    // with exit_group's entry (it never returns).
    let (out, _) = run(&common::read(SYSCALLS), PerfPairsOptions::new(PairMode::Syscalls), 1 << 20);
    use kflame::collapse::pairing::syscalls::kinds as sk;
    let exit = out.diag.get(sk::EXIT_WITHOUT_ENTRY).expect("execve exit");
    assert_eq!((exit.count, exit.first_line), (1, 1));
    let entry = out.diag.get(sk::ENTRY_WITHOUT_EXIT).expect("exit_group entry");
    assert_eq!(entry.count, 1);
    assert!(entry.message.contains("exit_group"), "{}", entry.message);
    assert_eq!(out.diag.skipped(), 0);
}

#[test]
fn root_frames_and_block_boundaries() {
    let input = common::read(SYSCALLS);
    let opts = PerfPairsOptions { pid: true, cpu: true, ..PerfPairsOptions::new(PairMode::Syscalls) };
    let (big, log_big) = run(&input, opts.clone(), 1 << 20);
    let (small, log_small) = run(&input, opts, 4096);
    assert_eq!(folded(&big), folded(&small));
    assert_eq!(log_big, log_small);
    for (stack, _) in folded(&big) {
        let f: Vec<&str> = stack.split(';').collect();
        assert!(f[1].starts_with("dd-") && f[2].starts_with("cpu-"), "{stack}");
    }
}

/// Off-CPU intervals: (switch-out ts, pid, duration, state), in the order they close.
fn expected_offcpu(text: &str) -> Vec<(u64, u32, u64, String)> {
    let field = |p: &str, k: &str| {
        let at = p.find(k).unwrap() + k.len();
        p[at..].split(' ').next().unwrap().to_string()
    };
    let mut open: HashMap<u32, (u64, String)> = HashMap::new();
    let mut spans = Vec::new();
    for (_, ts, name, payload) in headers(text) {
        assert_eq!(name, "sched:sched_switch");
        let next: u32 = field(&payload, " next_pid=").parse().unwrap();
        let prev: u32 = field(&payload, " prev_pid=").parse().unwrap();
        if let Some((start, state)) = open.remove(&next) {
            spans.push((start, next, ts - start, state));
        }
        if prev != 0 {
            open.insert(prev, (ts, field(&payload, " prev_state=")));
        }
    }
    spans
}

#[test]
fn offcpu_durations_match_the_timestamps() {
    let input = common::read(SWITCHES);
    let want = expected_offcpu(std::str::from_utf8(&input).unwrap());
    assert!(want.len() > 100, "{} intervals", want.len());
    let (out, log) = run(&input, PerfPairsOptions::new(PairMode::OffCpu), 1 << 20);
    let got = json_lines(&log);
    assert_eq!(got.len(), want.len());
    for (g, (start, pid, dur, state)) in got.iter().zip(&want) {
        assert_eq!((g.ts_ns, g.pid, g.duration), (*start, *pid, *dur), "{g:?}");
        assert_eq!(g.event, format!("offcpu:{state}"));
        assert_eq!(g.stack.last().map(String::as_str), Some("__schedule"), "{g:?}");
    }
    let total: u64 = want.iter().map(|w| w.2).sum();
    assert_eq!(out.stacks.total().whole(), total);
    assert_eq!(out.meta.unit, Unit::Nanoseconds);
    // perf's own stderr lines at the top of the capture are reported, not folded.
    let weird = out.diag.get(kflame::collapse::perf::kinds::WEIRD_EVENT).expect("perf's warnings");
    assert_eq!((weird.count, weird.first_line), (7, 1));
}

#[test]
fn probe_durations_match_the_timestamps() {
    let input = common::read(PROBES);
    // Entry `(FUNC)`, return `(FUNC <- SITE)` as perf prints them: pair per thread by FUNC.
    let mut open: HashMap<(u32, String), u64> = HashMap::new();
    let mut want = Vec::new();
    for (tid, ts, name, payload) in headers(std::str::from_utf8(&input).unwrap()) {
        let inner = payload.trim_start_matches('(').trim_end_matches(')');
        match inner.split_once(" <- ") {
            None => {
                open.insert((tid, inner.to_string()), ts);
            }
            Some((func, _)) => {
                let start = open.remove(&(tid, func.to_string())).expect("entry before return");
                want.push((start, tid, ts - start, name.trim_end_matches("__return").to_string()));
            }
        }
    }
    assert_eq!(want.len(), 3);
    let (out, log) = run(&input, PerfPairsOptions::new(PairMode::Probes), 1 << 20);
    let got = json_lines(&log);
    assert_eq!(got.len(), want.len());
    for (g, (start, tid, dur, entry)) in got.iter().zip(&want) {
        assert_eq!((g.ts_ns, g.pid, g.duration), (*start, *tid, *dur), "{g:?}");
        assert_eq!(g.event, format!("probe:{entry}"));
        assert_eq!(g.stack.last().map(String::as_str), Some("__GI___getcwd"), "{g:?}");
    }
    assert_eq!(out.stacks.total().whole(), want.iter().map(|w| w.2).sum::<u64>());
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

#[test]
fn records_of_other_events_are_noted_not_folded() {
    let input = common::read(SYSCALLS);
    let (out, log) = run(&input, PerfPairsOptions::new(PairMode::OffCpu), 1 << 20);
    assert!(out.stacks.is_empty() && log.is_empty());
    assert_eq!(out.diag.get(kinds::OTHER_EVENTS).unwrap().count, 290);
}

#[test]
fn default_collapser_hints_at_the_pairing_modes() {
    let e = Engine::default();
    for (file, mode) in [(SYSCALLS, "--mode syscalls"), (SWITCHES, "--mode offcpu")] {
        let out = e.run(Box::new(PerfScript::new(PerfOptions::default())), &common::read(file)[..]).unwrap();
        let hint = out.diag.get(kinds::HINT).unwrap_or_else(|| panic!("{file}: no hint"));
        assert!(hint.message.contains(mode), "{}", hint.message);
        // Still the sample-counting collapser: comm root frames, one per sample.
        assert!(folded(&out).iter().all(|(s, _)| !s.starts_with("syscall:") && !s.starts_with("offcpu:")));
    }
    let cpu = e
        .run(
            Box::new(PerfScript::new(PerfOptions::default())),
            &common::read("perf/captures/perf-sys-cpuclock.script.txt")[..],
        )
        .unwrap();
    assert!(cpu.diag.get(kinds::HINT).is_none());
}

const BROKEN: &str = "\
dd 10/10 [001]  5.000000100: raw_syscalls:sys_enter: NR 0 (0, 1, 2)
\tffffffff81415b70 syscall_trace_enter+0x180 ([kernel.kallsyms])
\tthis is not a frame
\t           1234 read+0x7 (/usr/lib/libc.so.6)

dd 10/10 [001] raw_syscalls:sys_exit: NR 0 = 1

garbage line here
dd 10/10 [001]  5.000000350: raw_syscalls:sys_exit: NR 0 = 1
\tffffffff81415c9c syscall_exit_work+0xbc ([kernel.kallsyms])

dd 11 5.000001000: raw_syscalls:sys_enter: NR 1 (0, 1, 2)

dd 11 5.000003000: raw_syscalls:sys_exit: NR 1 = 1
dd 99999999999 [000] 5.000004000: raw_syscalls:sys_enter: NR 1 (0, 1, 2)
dd 12 [000] 5.000004000: raw_syscalls:sys_enter: NR 1 (0,
";

#[test]
fn bad_input_is_counted_and_the_rest_kept() {
    let (out, log) = run(BROKEN.as_bytes(), PerfPairsOptions::new(PairMode::Syscalls), 1 << 20);
    let f = folded(&out);
    assert_eq!(
        f,
        vec![
            ("syscall:read;read;syscall_trace_enter".to_string(), 250),
            ("syscall:write;[no stack]".to_string(), 2000),
        ]
    );
    let skip = |k: &str| out.diag.get(k).map(|e| (e.count, e.first_line));
    assert_eq!(skip(kflame::collapse::perf::kinds::WEIRD_STACK), Some((1, 3)));
    assert_eq!(skip(kinds::NO_TIME), Some((1, 6)));
    assert_eq!(skip(kflame::collapse::perf::kinds::WEIRD_EVENT), Some((1, 8)));
    assert_eq!(skip(kinds::BAD_TID), Some((1, 15)));
    assert_eq!(skip(kinds::NO_CPU), Some((2, 12)));
    assert_eq!(json_lines(&log).len(), 2);
}

#[test]
fn mutated_captures_never_panic() {
    let mut m = Mutator::new(7);
    for file in [SYSCALLS, SWITCHES] {
        let input = common::read(file);
        let cut = &input[..input.len().min(40_000)];
        for mode in [PairMode::Syscalls, PairMode::OffCpu] {
            for _ in 0..150 {
                let bad = m.mutate(cut);
                let _ = run(&bad, PerfPairsOptions::new(mode), 1 << 12);
            }
        }
    }
}

/// `top`: the N longest intervals of each capture, each its own tower under its rank frame,
/// checked against every interval of the events log (whose durations the tests above check
/// against the raw text).
#[test]
fn top_keeps_the_longest_intervals() {
    use common::outliers::{assert_top_spans, logged_spans};
    use kflame::collapse::outliers::OutlierLog;
    for (rel, mode) in
        [(SYSCALLS, PairMode::Syscalls), (SWITCHES, PairMode::OffCpu), (PROBES, PairMode::Probes)]
    {
        let input = common::read(rel);
        let (_, json) = run(&input, PerfPairsOptions::new(mode), 1 << 20);
        let all = logged_spans(&json);
        assert!(all.len() >= 3, "{rel}: {}", all.len());
        for n in [1, 2, all.len() + 1] {
            let log = OutlierLog::new();
            let opts = PerfPairsOptions { top: Some(n), ..PerfPairsOptions::new(mode) };
            let collapser = PerfPairs::new(opts, None).with_outliers(log.clone());
            let out =
                Engine::single_threaded().run(Box::new(collapser), &input[..]).expect("in-memory input");
            assert_top_spans(&all, &out, n, Some(&log.take()));
        }
    }
}
