//! Golden tests on hand-written and CDDL fixtures (`tests/data/function-graph/README.md`);
//! every expected weight was computed by hand from the durations in the fixture.

use super::*;
use crate::collapse::testkit::{data, folded, no_panic_on_mutations, run, run_with};
use crate::collapse::{Format, Order, detect as detect_format};
use std::sync::{Arc, Mutex};

fn fg(opts: Options) -> Box<dyn Collapse> {
    Box::new(FunctionGraph::new(opts))
}

fn golden(input: &str, expected: &str, opts: Options) -> Output {
    let out = run(fg(opts), &data(&format!("function-graph/{input}")));
    let want = String::from_utf8(data(&format!("function-graph/{expected}"))).unwrap();
    assert_eq!(folded(&out), want, "{input} vs {expected}");
    out
}

#[test]
fn raw_self_time() {
    let out = golden("raw-basic.txt", "raw-basic.self.folded", Options::default());
    assert_eq!(out.diag.skipped(), 0, "{:?}", out.diag);
    assert_eq!(out.diag.get(kinds::PLACEHOLDER).map(|e| e.count), Some(3));
    // Self times of each top-level call add up to its duration: 150 + 30 + 1500 us.
    assert_eq!(out.stacks.total().whole(), 150_000 + 30_000 + 1_500_000);
}

#[test]
fn raw_total_time() {
    golden(
        "raw-basic.txt",
        "raw-basic.total.folded",
        Options { latency: Latency::Total, ..Options::default() },
    );
}

#[test]
fn abstime_proc_columns_track_tasks_across_cpus() {
    let opts = Options { pid: true, cpu: true, ..Options::default() };
    let out = golden("raw-abstime-proc.txt", "raw-abstime-proc.pid-cpu.folded", opts);
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn events_json_one_line_per_top_level_call() {
    let sink = Shared::default();
    let c = FunctionGraph::new(Options::default()).with_events(EventLog::new(sink.clone()));
    run(Box::new(c), &data("function-graph/raw-abstime-proc.txt"));
    let got = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    let want = String::from_utf8(data("function-graph/raw-abstime-proc.events.json")).unwrap();
    assert_eq!(got, want);
}

#[test]
fn trace_cmd_report_fragment_from_flamegraph_pr325() {
    let out = golden(
        "trace-cmd-report-funcgraph-example.txt",
        "trace-cmd-report-funcgraph-example.self.folded",
        Options::default(),
    );
    assert_eq!(out.stacks.total().whole(), 1789 + 1540 + 576 + 174);
}

#[test]
fn trace_cmd_report_with_flags_and_other_events() {
    let out = golden("trace-cmd-report-irq.txt", "trace-cmd-report-irq.self.folded", Options::default());
    assert_eq!(out.diag.get(kinds::OTHER_EVENT).map(|e| e.count), Some(1));
    assert_eq!(out.diag.skipped(), 0);
}

#[test]
fn trace_cut_inside_calls_keeps_completed_children() {
    let out = golden(
        "trace-cmd-report-function_graph-do_linkat.txt",
        "trace-cmd-report-function_graph-do_linkat.self.folded",
        Options::default(),
    );
    assert_eq!(out.diag.get(kinds::OPEN_AT_END).map(|e| e.count), Some(3));
}

#[test]
fn top_n_groups_the_slowest_calls() {
    let out = run(fg(Options { top: Some(2), ..Options::default() }), &data("function-graph/raw-basic.txt"));
    let text = folded(&out);
    let roots: std::collections::BTreeSet<&str> =
        text.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split(';').next()).collect();
    let want: std::collections::BTreeSet<&str> =
        ["[#1 1.500ms line 28]", "[#2 150.000us line 5]"].into_iter().collect();
    assert_eq!(roots, want, "{text}");
    assert!(text.contains("[#1 1.500ms line 28];do_sys_open;getname 5000\n"), "{text}");
    assert!(!text.contains("vfs_read"), "the third slowest call is left out: {text}");
    assert_eq!(out.stacks.total().whole(), 1_500_000 + 150_000);
}

#[test]
fn top_n_labels_carry_start_time() {
    let out = run(
        fg(Options { top: Some(10), ..Options::default() }),
        &data("function-graph/raw-abstime-proc.txt"),
    );
    let text = folded(&out);
    assert!(text.contains("[#01 52.000us @512.100000];sys_sendto;tcp_sendmsg;schedule 40000\n"), "{text}");
    assert!(text.contains("[#02 750ns @512.100003];queue_work 750\n"), "{text}");
}

#[test]
fn time_order_follows_completion() {
    let out = run_with(fg(Options::default()), &data("function-graph/raw-basic.txt"), 2, Order::Time);
    let order: Vec<String> =
        out.stacks.in_output_order().iter().map(|(s, _)| String::from_utf8_lossy(s).into_owned()).collect();
    let first_vfs = order.iter().position(|s| s.starts_with("vfs_read")).unwrap();
    let first_unknown = order.iter().position(|s| s.starts_with("[unknown]")).unwrap();
    let first_open = order.iter().position(|s| s.starts_with("do_sys_open")).unwrap();
    assert!(first_vfs < first_unknown && first_unknown < first_open, "{order:?}");
}

#[test]
fn detection_claims_function_graph_only() {
    for f in [
        "raw-basic.txt",
        "raw-abstime-proc.txt",
        "trace-cmd-report-irq.txt",
        "trace-cmd-report-funcgraph-example.txt",
    ] {
        assert_eq!(detect_format(&data(&format!("function-graph/{f}"))), Some(Format::FunctionGraph), "{f}");
    }
    assert_eq!(detect(b"a;b 1\nc;d 2\n"), 0);
    let trace_cmd_kmem = b"  bash-1234  [001]  100.000001: mm_page_alloc: page=0x1 pfn=1 order=0\n";
    assert_eq!(detect(trace_cmd_kmem), 0);
}

#[test]
fn bad_input_is_counted_not_fatal() {
    let text = b" 0)               |  f() {\nnot a trace line\n 0)   1.x us  |    g();\n\xff\xfe)\n 0)   2.000 us    |  }\n";
    let out = run(fg(Options::default()), text);
    let e = out.diag.get(kinds::BAD_LINE).unwrap();
    assert_eq!((e.count, e.first_line), (3, 2));
    assert_eq!(folded(&out), "# unit=ns\n# event=function_graph\nf 2000\n");
}

#[test]
fn truncated_trace_does_not_lose_completed_calls() {
    let all = data("function-graph/raw-basic.txt");
    for cut in [0, 10, all.len() / 3, all.len() / 2, all.len() - 5] {
        let out = run(fg(Options::default()), &all[..cut]);
        assert!(out.stacks.total().whole() <= 1_680_000);
    }
}

#[test]
fn mutations_never_panic() {
    for f in ["raw-basic.txt", "raw-abstime-proc.txt", "trace-cmd-report-irq.txt"] {
        no_panic_on_mutations(&data(&format!("function-graph/{f}")), || fg(Options::default()));
        no_panic_on_mutations(&data(&format!("function-graph/{f}")), || {
            fg(Options { top: Some(3), latency: Latency::Total, comm: true, cpu: true, pid: false })
        });
    }
}

#[test]
fn very_long_top_level_call_is_emitted_in_parts_with_the_same_result() {
    let mut text = b" 0)               |  outer() {\n".to_vec();
    for _ in 0..70_000 {
        text.extend_from_slice(b" 0)   0.001 us    |    f();\n");
    }
    text.extend_from_slice(b" 0) ! 100.000 us  |  }\n");
    let out = run(fg(Options::default()), &text);
    assert_eq!(folded(&out), "# unit=ns\n# event=function_graph\nouter 30000\nouter;f 70000\n");
    assert_eq!(out.diag.get(kinds::LONG_CALL).map(|e| e.count), Some(1));
}

#[test]
fn retval_and_args_forms_of_newer_kernels() {
    let text = b" 1)               |  do_sys_openat2(dfd=-100, filename=0x7f) {\n\
                 1)   0.250 us    |    getname(); /* = 0xffff888 */\n\
                 1)   1.000 us    |  } /* do_sys_openat2 = 0x3 */\n";
    let out = run(fg(Options::default()), text);
    assert!(out.diag.is_empty(), "{:?}", out.diag);
    assert_eq!(
        folded(&out),
        "# unit=ns\n# event=function_graph\ndo_sys_openat2 750\ndo_sys_openat2;getname 250\n"
    );
}

#[test]
fn events_json_weight_follows_latency_mode_and_unknowns_are_null() {
    let sink = Shared::default();
    let opts = Options { latency: Latency::Total, ..Options::default() };
    let c = FunctionGraph::new(opts).with_events(EventLog::new(sink.clone()));
    run(Box::new(c), &data("function-graph/raw-basic.txt"));
    let got = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    // vfs_read: 30000 + 25125 + 20000 + 3000 + 1500 + 900 + 250 (every call's total time).
    let vfs = "{\"ts\":null,\"cpu\":0,\"pid\":null,\"comm\":null,\"duration_ns\":30000,\
               \"stack\":[\"vfs_read\"],\"event\":\"function_graph\",\"weight\":80775}";
    assert!(got.lines().any(|l| l == vfs), "{got}");
    let open = "{\"ts\":null,\"cpu\":0,\"pid\":1001,\"comm\":\"bash\",\"duration_ns\":1500000,\
                \"stack\":[\"do_sys_open\"],\"event\":\"function_graph\",\"weight\":1505000}";
    assert!(got.lines().any(|l| l == open), "{got}");
    assert_eq!(got.lines().count(), 3);
}
