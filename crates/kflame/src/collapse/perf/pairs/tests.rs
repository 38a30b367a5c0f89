use super::*;
use crate::collapse::Order;

fn run(mode: PairMode, text: &str) -> Output {
    let mut c = PerfPairs::new(PerfPairsOptions::new(mode), None);
    let mut out = Output::new(Order::Sorted);
    c.collapse(text.as_bytes(), 1, &mut out);
    c.finish(&mut out);
    out
}

fn folded(out: &Output) -> Vec<(String, u64)> {
    let v = out.stacks.in_output_order();
    v.into_iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole())).collect()
}

#[test]
fn header_gives_cpu_and_time_even_for_threads_perf_lost() {
    let line = b":-1  2284/-1    [001]  2001.191281:          1 sched:sched_switch: prev_comm=x prev_pid=1";
    let ev = header(line).expect("a header");
    assert_eq!((ev.comm, ev.pid, ev.tid), (&b":-1"[..], Some(&b"2284"[..]), &b"-1"[..]));
    assert_eq!((ev.cpu, ev.time), (Some(&b"001"[..]), Some(&b"2001.191281"[..])));
    assert_eq!(ev.event, Some(&b"sched:sched_switch"[..]));
}

#[test]
fn unindented_frames_and_records_without_blank_lines() {
    // perf 3.x: frames at column 0 and no blank line between records.
    let text = "bash 100 [000] 1.000001: raw_syscalls:sys_enter: NR 0 (0, 1)\n\
                ffffffff81000001 syscall_trace_enter ([kernel.kallsyms])\n\
                7f0000000001 __read+0x10 (/usr/lib/libc.so.6)\n\
                bash 100 [000] 1.000005: raw_syscalls:sys_exit: NR 0 = 1\n";
    let out = run(PairMode::Syscalls, text);
    assert_eq!(folded(&out), vec![("syscall:read;__read;syscall_trace_enter".to_string(), 4000)]);
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

/// perf pads the comm of records without stacks on the left; `dd` would also read as a
/// frame at hex address `dd`.
#[test]
fn padded_headers_of_records_without_stacks() {
    let text = "              dd 23154 [000] 21279.070546675: raw_syscalls:sys_enter: NR 12 (0, 7fffb9cda7ac, 0, 37f, 0, 0)\n\
                \x20             dd 23154 [000] 21279.070548191:  raw_syscalls:sys_exit: NR 12 = 93868705304576\n";
    let out = run(PairMode::Syscalls, text);
    assert_eq!(folded(&out), vec![("syscall:brk;[no stack]".to_string(), 1516)]);
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

#[test]
fn indented_header_after_an_unused_record() {
    let text = "perf 5 [000] 1.0: cycles: \n\
                \tffffffff81000001 native_safe_halt ([kernel.kallsyms])\n\
                \x20         bash 100 [000] 1.000001: raw_syscalls:sys_enter: NR 1 (0, 1)\n\
                \x20         bash 100 [000] 1.000031: raw_syscalls:sys_exit: NR 1 = 1\n";
    let out = run(PairMode::Syscalls, text);
    assert_eq!(folded(&out), vec![("syscall:write;[no stack]".to_string(), 30_000)]);
    assert_eq!(out.diag.get(kinds::OTHER_EVENTS).map(|e| e.count), Some(1));
}

#[test]
fn per_syscall_tracepoints_pair_too() {
    let text = "dd 7/7 [001] 10.000000100: syscalls:sys_enter_write: fd: 0x00000001, buf: 0x1, count: 0x10\n\
                \tffffffff81000001 syscall_trace_enter ([kernel.kallsyms])\n\
                \n\
                dd 7/7 [001] 10.000000900: syscalls:sys_exit_write: 0x10\n\
                \tffffffff81000002 syscall_exit_work ([kernel.kallsyms])\n\
                \n";
    let out = run(PairMode::Syscalls, text);
    assert_eq!(folded(&out), vec![("syscall:write;syscall_trace_enter".to_string(), 800)]);
}

#[test]
fn hint_names_the_mode_for_pairable_events_only() {
    assert!(pairing_hint(b"raw_syscalls:sys_enter").is_some_and(|h| h.contains("--mode syscalls")));
    assert!(pairing_hint(b"syscalls:sys_exit_read").is_some_and(|h| h.contains("--mode syscalls")));
    assert!(pairing_hint(b"sched:sched_switch").is_some_and(|h| h.contains("--mode offcpu")));
    assert_eq!(pairing_hint(b"cpu-clock"), None);
    assert_eq!(pairing_hint(b"kmem:kmalloc"), None);
    assert_eq!(pairing_hint(b"sched:sched_wakeup"), None);
}

#[test]
fn inline_groups_keep_their_order_root_first() {
    // Stack lines leaf first; a Java `a->b` line renders as one `a;b` group (caller first).
    let frames = b"leafcaller;inlined".to_vec();
    let s = root_first(&frames, &[0, 4]);
    assert_eq!(s, ["caller", "inlined", "leaf"]);
}

#[test]
fn return_probes_are_read_in_ftrace_order() {
    let swap = |p: &str| ftrace_return_order(Cow::Borrowed(p)).into_owned();
    assert_eq!(swap("(7f7f0c598c50 <- 5644b65102ea)"), "(5644b65102ea <- 7f7f0c598c50)");
    assert_eq!(swap("(7f7f0c598c50 <- 5644b65102ea) arg1=0x1"), "(5644b65102ea <- 7f7f0c598c50) arg1=0x1");
    assert_eq!(swap("(7f7f0c598c50)"), "(7f7f0c598c50)");
    assert_eq!(swap("NR 1 (0, 1)"), "NR 1 (0, 1)");
}
