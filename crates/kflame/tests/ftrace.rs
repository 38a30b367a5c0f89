//! ftrace / trace-cmd collapser on real captures and hand-written fixtures
//! (`tests/data/ftrace/README.md` says where each file comes from).
//!
//! Golden files: `tests/data/ftrace/expected/*.folded`; regenerate with `KFLAME_BLESS=1
//! cargo test -p kflame --test ftrace` and review the diff.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::SharedBuf;
use kflame::collapse::events_json::EventLog;
use kflame::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};
use kflame::collapse::{Engine, Format, Output, detect};
use kflame::fold::Unit;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ftrace").join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run(name: &str, opts: FtraceOptions) -> Output {
    run_bytes(&read(name), opts, None, 1 << 20)
}

fn run_bytes(input: &[u8], opts: FtraceOptions, log: Option<EventLog>, block_size: usize) -> Output {
    let e = Engine { threads: 2, block_size, ..Engine::default() };
    e.run(Box::new(Ftrace::new(opts, log)), input).expect("in-memory input cannot fail")
}

fn mode(m: Mode) -> FtraceOptions {
    FtraceOptions { mode: Some(m), ..FtraceOptions::default() }
}

fn run_with_events(name: &str, opts: FtraceOptions) -> (Output, String) {
    let buf = SharedBuf::default();
    let log = EventLog::new(buf.clone());
    let out = run_bytes(&read(name), opts, Some(log.clone()), 1 << 20);
    log.finish().unwrap();
    let text = buf.text();
    (out, text)
}

fn folded(out: &Output) -> String {
    let mut s = out.meta.header();
    for (stack, w) in out.stacks.in_output_order() {
        s.push_str(&format!("{} {}\n", String::from_utf8_lossy(stack), w.whole()));
    }
    s
}

/// The output's stacks and whole weights, in output order.
fn stack_weights(out: &Output) -> Vec<(String, u64)> {
    let v = out.stacks.in_output_order();
    v.into_iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole())).collect()
}

fn golden(out: &Output, expected: &str) {
    let path = data("expected").join(expected);
    let got = folded(out);
    if std::env::var_os("KFLAME_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(got, want, "{expected} differs (KFLAME_BLESS=1 to regenerate, then review)");
}

// ---- independent readers of the raw text, for checks that must hold exactly ----

/// Every event line of the file as (comm-pid token, ts ns, event name, payload), read with
/// plain whitespace splitting (the files used with it have no spaces in comms).
fn simple_events(text: &str) -> Vec<(String, u64, String, String)> {
    let mut v = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim_start().starts_with("=>") {
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(ts_i) = toks.iter().position(|t| t.ends_with(':') && t[..t.len() - 1].contains('.')) else {
            continue;
        };
        let Some(name) = toks.get(ts_i + 1).and_then(|n| n.strip_suffix(':')) else { continue };
        let (secs, frac) = toks[ts_i].trim_end_matches(':').split_once('.').unwrap();
        let ts = secs.parse::<u64>().unwrap() * 1_000_000_000 + format!("{frac:0<9}").parse::<u64>().unwrap();
        v.push((toks[0].to_string(), ts, name.to_string(), toks[ts_i + 2..].join(" ")));
    }
    v
}

fn value_of(payload: &str, key: &str) -> u64 {
    let tok = payload.split(' ').find_map(|t| t.strip_prefix(&format!("{key}="))).unwrap();
    tok.parse().unwrap()
}

#[test]
fn mm_page_alloc_total_is_the_sum_of_page_sizes_exactly() {
    for name in ["ftrace-mm_page_alloc-stacktrace.txt", "trace-cmd-report-mm_page_alloc.txt"] {
        let text = String::from_utf8(read(name)).unwrap();
        let want: u64 = text
            .lines()
            .filter_map(|l| l.split_once("mm_page_alloc:").map(|(_, p)| p))
            .map(|p| 4096u64 << value_of(p.trim(), "order"))
            .sum();
        let out = run(name, FtraceOptions::default());
        assert_eq!(out.meta.unit, Unit::Bytes, "{name}");
        assert_eq!(out.stacks.total().whole(), want, "{name}");
        assert_eq!(out.diag.skipped(), 0, "{name}: {:?}", out.diag);
    }
}

#[test]
fn kmalloc_total_is_the_sum_of_bytes_alloc() {
    let name = "ftrace-kmalloc-options-stacktrace.txt";
    let text = String::from_utf8(read(name)).unwrap();
    let events = simple_events(&text);
    let want: u64 = events.iter().filter(|e| e.2 == "kmalloc").map(|e| value_of(&e.3, "bytes_alloc")).sum();
    assert!(want > 0);
    let out = run(name, FtraceOptions::default());
    assert_eq!(out.stacks.total().whole(), want);
    let count = run(name, FtraceOptions { weight: Some(WeightBy::Count), ..FtraceOptions::default() });
    assert_eq!(count.meta.unit, Unit::Events);
    assert_eq!(count.stacks.total().whole(), events.iter().filter(|e| e.2 == "kmalloc").count() as u64);
}

/// Durations of the JSON records against enter/exit timestamps paired independently here.
#[test]
fn syscall_durations_match_the_timestamps() {
    let name = "ftrace-raw_syscalls-write-enter-exit-stacktrace.txt";
    let text = String::from_utf8(read(name)).unwrap();
    let mut open: HashMap<String, u64> = HashMap::new();
    let mut want: Vec<(u64, u64)> = Vec::new();
    for (task, ts, ev, _) in simple_events(&text) {
        match ev.as_str() {
            "sys_enter" => {
                open.insert(task, ts);
            }
            "sys_exit" => {
                if let Some(start) = open.remove(&task) {
                    want.push((start, ts - start));
                }
            }
            _ => {}
        }
    }
    assert_eq!(want.len(), 190);
    let (out, json) = run_with_events(name, FtraceOptions::default());
    assert_eq!(out.meta.unit, Unit::Nanoseconds);
    let got: Vec<(u64, u64)> = json.lines().map(|l| (json_ts(l), json_u64(l, "duration_ns"))).collect();
    assert_eq!(got, want);
    assert!(json.lines().all(|l| l.contains("\"event\":\"syscall:write\"")));
    assert_eq!(out.stacks.total().whole(), want.iter().map(|w| w.1).sum::<u64>());
    // A few pairs read straight off the file: enter 2664.872806 / exit 2664.872811 etc.
    assert_eq!(want[0], (2_664_872_806_000, 5_000));
    golden(&out, "ftrace-raw_syscalls-write.syscalls.folded");
}

fn json_u64(line: &str, key: &str) -> u64 {
    let at = line.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
    line[at..].split([',', '}']).next().unwrap().parse().unwrap()
}

fn json_ts(line: &str) -> u64 {
    let at = line.find("\"ts\":").unwrap() + 5;
    let v = line[at..].split(',').next().unwrap();
    let (s, f) = v.split_once('.').unwrap();
    s.parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap()
}

/// Off-CPU intervals against switch-out/switch-in timestamps paired independently here.
#[test]
fn offcpu_durations_match_switch_timestamps() {
    let name = "ftrace-trace_pipe-sched_switch-2s.txt";
    let text = String::from_utf8(read(name)).unwrap();
    let mut out_at: HashMap<u64, u64> = HashMap::new();
    let mut want: Vec<(u64, u64, u64)> = Vec::new();
    for line in text.lines().filter(|l| l.contains(" sched_switch: ")) {
        let ts_tok = line.split(": sched_switch:").next().unwrap().split_whitespace().last().unwrap();
        let (s, f) = ts_tok.split_once('.').unwrap();
        let ts = s.parse::<u64>().unwrap() * 1_000_000_000 + format!("{f:0<9}").parse::<u64>().unwrap();
        let prev: u64 =
            value_of(line.split(" prev_pid=").nth(1).map(|r| format!("p={r}")).unwrap().as_str(), "p");
        let next: u64 =
            value_of(line.split(" next_pid=").nth(1).map(|r| format!("p={r}")).unwrap().as_str(), "p");
        if let Some(t0) = out_at.remove(&next) {
            want.push((next, t0, ts - t0));
        }
        if prev != 0 {
            out_at.insert(prev, ts);
        }
    }
    assert!(want.len() > 100, "{}", want.len());
    let (out, json) = run_with_events(name, mode(Mode::OffCpu));
    let got: Vec<(u64, u64, u64)> =
        json.lines().map(|l| (json_u64(l, "pid"), json_ts(l), json_u64(l, "duration_ns"))).collect();
    assert_eq!(got, want);
    assert_eq!(out.stacks.total().whole(), want.iter().map(|w| w.2).sum::<u64>());
    golden(&out, "ftrace-trace_pipe-sched_switch.offcpu.folded");
}

/// uprobe entry/return durations against timestamps paired independently here.
#[test]
fn probe_durations_match_entry_and_return_timestamps() {
    let name = "ftrace-uprobe-doio-entry-ret.txt";
    let text = String::from_utf8(read(name)).unwrap();
    let mut open: HashMap<String, u64> = HashMap::new();
    let mut want: Vec<(u64, u64)> = Vec::new();
    for (task, ts, ev, _) in simple_events(&text) {
        match ev.as_str() {
            "doio_entry" => {
                open.insert(task, ts);
            }
            "doio_ret" => {
                if let Some(start) = open.remove(&task) {
                    want.push((start, ts - start));
                }
            }
            _ => {}
        }
    }
    assert_eq!(want.len(), 132);
    let (out, json) = run_with_events(name, FtraceOptions::default());
    let got: Vec<(u64, u64)> = json.lines().map(|l| (json_ts(l), json_u64(l, "duration_ns"))).collect();
    assert_eq!(got, want);
    assert_eq!(out.meta.unit, Unit::Nanoseconds);
    golden(&out, "ftrace-uprobe-doio.probes.folded");
}

#[test]
fn golden_outputs() {
    let cases: &[(&str, FtraceOptions, &str)] = &[
        (
            "ftrace-mm_page_alloc-stacktrace.txt",
            FtraceOptions::default(),
            "ftrace-mm_page_alloc.alloc.folded",
        ),
        (
            "ftrace-mm_page_alloc-stacktrace.txt",
            FtraceOptions { pid: true, order: true, page_type: true, ..FtraceOptions::default() },
            "ftrace-mm_page_alloc.alloc-pid-order-page_type.folded",
        ),
        (
            "trace-cmd-report-mm_page_alloc.txt",
            FtraceOptions::default(),
            "trace-cmd-mm_page_alloc.alloc.folded",
        ),
        ("ftrace-kmalloc-options-stacktrace.txt", FtraceOptions::default(), "ftrace-kmalloc.alloc.folded"),
        ("ftrace-sched_switch-stacktrace.txt", mode(Mode::Events), "ftrace-sched_switch.events.folded"),
        ("ftrace-dd-mixed-stacktrace.txt", mode(Mode::Alloc), "ftrace-dd-mixed.alloc.folded"),
        ("ftrace-dd-mixed-stacktrace.txt", mode(Mode::Syscalls), "ftrace-dd-mixed.syscalls.folded"),
        (
            "ftrace-dd-mixed-stacktrace.txt",
            FtraceOptions { mode: Some(Mode::OffCpu), comm: true, ..FtraceOptions::default() },
            "ftrace-dd-mixed.offcpu-comm.folded",
        ),
        ("ftrace-dd-mixed-stacktrace.txt", mode(Mode::Events), "ftrace-dd-mixed.events.folded"),
        ("ftrace-uprobe-doio-entry-ret.txt", mode(Mode::Events), "ftrace-uprobe-doio.events.folded"),
        (
            "handwritten-old-kernel-mm_page_alloc.txt",
            FtraceOptions::default(),
            "handwritten-old-kernel.alloc.folded",
        ),
        (
            "handwritten-trace-cmd-sched_switch.txt",
            FtraceOptions::default(),
            "handwritten-trace-cmd.offcpu.folded",
        ),
    ];
    for (input, opts, expected) in cases {
        golden(&run(input, opts.clone()), expected);
    }
}

/// The hand-written fixtures exercise every odd case; their results were worked out by hand
/// (see the README) and are checked here in full, not only against golden files.
#[test]
fn old_kernel_format_odd_cases() {
    let out = run(
        "handwritten-old-kernel-mm_page_alloc.txt",
        FtraceOptions { comm: true, ..FtraceOptions::default() },
    );
    let got = stack_weights(&out);
    let want = [
        (
            "<...>;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_exit_group;do_group_exit;do_exit;[unknown];__get_free_pages;alloc_pages_current;__alloc_pages_nodemask",
            8192,
        ),
        ("bash;[unknown];do_anonymous_page;__alloc_pages_nodemask", 4096),
        (
            "kworker/u8:2;ret_from_fork;kthread;worker_thread;process_one_work;xfs_buf_get_map;xfs_buf_allocate_memory;__alloc_pages_nodemask",
            4096,
        ),
        ("my-app-v2 [x];0x5600aabbccdd;0x7f0a12345678", 32768),
    ];
    let want: Vec<(String, u64)> = want.iter().map(|(s, w)| (s.to_string(), *w)).collect();
    assert_eq!(got, want);
    let d = &out.diag;
    assert_eq!(d.get("events lost by the kernel").map(|e| e.count), Some(12));
    assert_eq!(d.get("frames without stack header").map(|e| e.first_line), Some(12));
    assert_eq!(d.get("stack without event").map(|e| e.first_line), Some(45));
    let bad = d.get("unreadable trace line").unwrap();
    assert_eq!((bad.count, bad.first_line), (1, 47));
    assert!(bad.message.contains("800755.73"), "{}", bad.message);
}

/// kprobe events weigh the size their fetched arguments give (`order=` first, else
/// `bytes=`/`size=`/`request=`); results worked out by hand (see the README).
#[test]
fn kprobe_allocations_weigh_their_fetched_size() {
    let out = run("handwritten-kprobe-alloc.txt", FtraceOptions { comm: true, ..FtraceOptions::default() });
    let got = stack_weights(&out);
    let write = "entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;vfs_write";
    let begin = "ext4_buffered_write_iter;generic_perform_write;ext4_write_begin";
    let want = [
        (
            "dd;entry_SYSCALL_64_after_hwframe;do_syscall_64;__do_sys_clone;kernel_clone;copy_process;dup_fd;\
             alloc_fdtable"
                .to_string(),
            2048,
        ),
        (format!("dd;{write};{begin};__filemap_get_folio;filemap_alloc_folio;folio_alloc;alloc_pages_mpol"), 4096),
        (
            format!(
                "dd;{write};{begin};ext4_map_blocks;ext4_ext_map_blocks;ext4_ext_find_extent;__kmalloc;\
                 ___slab_alloc;new_slab;alloc_pages_mpol"
            ),
            16384,
        ),
        (format!("dd;{write};pipe_write;alloc_pages_mpol;__alloc_pages"), 8192),
        (
            "kworker/0:2;ret_from_fork_asm;ret_from_fork;kthread;worker_thread;process_one_work;kvmalloc_node;\
             __kmalloc;__kmalloc_large_node;alloc_pages_mpol"
                .to_string(),
            4096 << 10,
        ),
        (
            "mount;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_mount;path_mount;vfs_get_tree;\
             get_tree_bdev;ext4_fill_super;ext4_kvmalloc;__vmalloc_node"
                .to_string(),
            65536,
        ),
    ];
    assert_eq!(got, want, "sorted output");
    assert_eq!(out.meta.unit, Unit::Bytes);
    let chosen = out.diag.get("mode").expect("the mode is chosen from the content");
    assert!(chosen.message.contains("6 allocation events"), "{}", chosen.message);
    let other =
        out.diag.get("events not used in this mode").expect("the return probe and the sizeless kprobe");
    assert_eq!((other.count, other.first_line), (2, 62));
    assert_eq!(out.diag.skipped(), 0);

    let orders = run("handwritten-kprobe-alloc.txt", FtraceOptions { order: true, ..mode(Mode::Alloc) });
    let roots: Vec<(String, u64)> = stack_weights(&orders)
        .into_iter()
        .map(|(s, w)| (s.split(';').next().unwrap().to_string(), w))
        .collect();
    let roots: Vec<(&str, u64)> = roots.iter().map(|(r, w)| (r.as_str(), *w)).collect();
    let size_probes = "entry_SYSCALL_64_after_hwframe";
    assert_eq!(
        roots,
        [
            (size_probes, 2048),
            (size_probes, 65536),
            ("order-0", 4096),
            ("order-10", 4096 << 10),
            ("order-1", 8192),
            ("order-2", 16384)
        ],
        "probes that fetched no order have no order frame"
    );
}

#[test]
fn events_without_stacks_keep_their_weight() {
    let out = run("bboymimi-ftrace-mm_page_alloc-new-format-snippets.txt", FtraceOptions::default());
    // cursor order 0, byobu-status order 1, tmux order 0, trace-cmd `<...>` line order 1.
    assert_eq!(out.stacks.total().whole(), 4096 + 8192 + 4096 + 8192);
    assert!(out.stacks.in_output_order().iter().all(|(s, _)| s.ends_with(b"[no stack]")));
}

#[test]
fn trace_cmd_compact_sched_switch_off_cpu() {
    let out = run("handwritten-trace-cmd-sched_switch.txt", FtraceOptions::default());
    assert_eq!(out.meta.unit, Unit::Nanoseconds);
    let got = stack_weights(&out);
    assert_eq!(
        got,
        [
            ("offcpu:D;filemap_fault;folio_wait_bit;io_schedule".to_string(), 1_000_000),
            ("offcpu:I;ret_from_fork;kthread;worker_thread;schedule".to_string(), 1_450_000),
            (
                "offcpu:S;do_syscall_64;__x64_sys_nanosleep;hrtimer_nanosleep;do_nanosleep;schedule"
                    .to_string(),
                100_000
            ),
        ]
    );
}

/// Cutting the input into tiny blocks (records straddling every boundary) changes nothing.
#[test]
fn block_size_does_not_change_results() {
    for name in ["ftrace-dd-mixed-stacktrace.txt", "ftrace-raw_syscalls-write-enter-exit-stacktrace.txt"] {
        let input = read(name);
        for m in [Mode::Alloc, Mode::Syscalls, Mode::OffCpu, Mode::Probes, Mode::Events] {
            let big = run_bytes(&input, mode(m), None, 1 << 20);
            let small = run_bytes(&input, mode(m), None, 4096);
            assert_eq!(folded(&big), folded(&small), "{name} {m:?}");
            assert_eq!(big.diag, small.diag, "{name} {m:?}");
        }
    }
}

#[test]
fn detection() {
    let cases = [
        ("ftrace-mm_page_alloc-stacktrace.txt", Some(Format::Ftrace)),
        ("ftrace-trace_pipe-sched_switch-2s.txt", Some(Format::Ftrace)),
        ("ftrace-raw_syscalls-write-enter-exit-stacktrace.txt", Some(Format::Ftrace)),
        ("ftrace-dd-mixed-stacktrace.txt", Some(Format::Ftrace)),
        ("handwritten-old-kernel-mm_page_alloc.txt", Some(Format::Ftrace)),
        ("trace-cmd-report-mm_page_alloc.txt", Some(Format::TraceCmd)),
        ("ftrace-uprobe-doio-entry-ret.txt", Some(Format::Ftrace)),
        ("handwritten-trace-cmd-sched_switch.txt", Some(Format::TraceCmd)),
        ("handwritten-kprobe-alloc.txt", Some(Format::Ftrace)),
    ];
    for (name, want) in cases {
        assert_eq!(detect(&read(name)), want, "{name}");
    }
    for name in ["handwritten-function_graph.txt", "pr325-trace-cmd-report-funcgraph-example.txt"] {
        let head = read(name);
        assert_eq!(Format::Ftrace.detect(&head), 0, "{name}");
        assert_eq!(Format::TraceCmd.detect(&head), 0, "{name}");
    }
}

/// Other formats of the shared captures must not be claimed (skipped when they are absent).
#[test]
fn does_not_claim_other_formats() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures/text");
    if !dir.is_dir() {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("note: {} absent, skipping", dir.display());
        }
        return;
    }
    for name in [
        "perf-sys-cpuclock.script.txt",
        "perf-mm-page-alloc.script.txt",
        "perf-sched-switch.script.txt",
        "bpftrace-profile-kstack.txt",
        "bpftrace-mm_page_alloc-bytes-by-kstack.txt",
        "dmesg-hung-task-calltrace.txt",
        "kmsg-raw-hung-task.txt",
        "dmesg-full.txt",
        "bcc-profile-folded.txt",
        "proc-stacks-snapshot.txt",
    ] {
        let Ok(bytes) = std::fs::read(dir.join(name)) else { continue };
        let head = &bytes[..bytes.len().min(1 << 20)];
        assert_eq!(Format::Ftrace.detect(head), 0, "{name}");
        assert_eq!(Format::TraceCmd.detect(head), 0, "{name}");
    }
}

/// Time order (flame charts): stacks come out in the order of their events.
#[test]
fn time_order_follows_the_events() {
    let input = read("handwritten-old-kernel-mm_page_alloc.txt");
    let e = Engine { threads: 2, order: kflame::collapse::Order::Time, ..Engine::default() };
    let out = e.run(Box::new(Ftrace::new(FtraceOptions::default(), None)), &input[..]).unwrap();
    let leaves: Vec<String> = out
        .stacks
        .in_output_order()
        .iter()
        .map(|(s, w)| format!("{}:{}", String::from_utf8_lossy(s).rsplit(';').next().unwrap(), w.whole()))
        .collect();
    // Event lines in file order: <...>-503310 (order 1), kworker (order 0), my-app (order 3), bash.
    let want = [
        "__alloc_pages_nodemask:8192",
        "__alloc_pages_nodemask:4096",
        "0x7f0a12345678:32768",
        "__alloc_pages_nodemask:4096",
    ];
    assert_eq!(leaves, want);
}

/// `top`: the N longest syscalls, off-CPU intervals and probed calls, each its own tower
/// under its rank frame; every span still goes to the events log.
#[test]
fn top_keeps_the_longest_spans_each_as_its_own_tower() {
    use common::outliers::{assert_top_spans, logged_spans};
    use kflame::collapse::outliers::OutlierLog;
    let cases = [
        ("ftrace-raw_syscalls-write-enter-exit-stacktrace.txt", Mode::Syscalls),
        ("ftrace-trace_pipe-sched_switch-2s.txt", Mode::OffCpu),
        ("ftrace-uprobe-doio-entry-ret.txt", Mode::Probes),
        ("ftrace-dd-mixed-stacktrace.txt", Mode::Syscalls),
    ];
    for (name, m) in cases {
        let (_, all_json) = run_with_events(name, mode(m));
        let all = logged_spans(&all_json);
        assert!(all.len() > 20, "{name}");
        for n in [1, 5, all.len() + 3] {
            let log = OutlierLog::new();
            let buf = SharedBuf::default();
            let events = EventLog::new(buf.clone());
            let opts = FtraceOptions { top: Some(n), ..mode(m) };
            let collapser = Ftrace::new(opts, Some(events.clone())).with_outliers(log.clone());
            let out = Engine::single_threaded().run(Box::new(collapser), &read(name)[..]).unwrap();
            events.finish().unwrap();
            assert_eq!(buf.text(), all_json, "{name}: the events log still has every span");
            let kept = log.take();
            assert_top_spans(&all, &out, n, Some(&kept));
            if n > all.len() {
                let total: u64 = all.iter().map(|s| s.duration_ns).sum();
                assert_eq!(out.stacks.total().whole(), total, "{name}: every span kept");
            }
        }
    }
}
