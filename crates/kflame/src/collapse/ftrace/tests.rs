//! Unit tests of the ftrace collapser on small inline traces.

use super::*;
use crate::collapse::Engine;

fn collapse(input: &str, opts: FtraceOptions) -> Output {
    let engine = Engine { block_size: 4096, ..Engine::single_threaded() };
    engine.run(Box::new(Ftrace::new(opts, None)), input.as_bytes()).unwrap()
}

fn stacks(out: &Output) -> Vec<(String, u64)> {
    let v = out.stacks.in_output_order();
    v.into_iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.whole())).collect()
}

fn owned(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    v.iter().map(|(s, w)| (s.to_string(), *w)).collect()
}

/// CPU 1's event comes between CPU 0's event and its stack; each stack still finds its own.
const INTERLEAVED: &str = "\
   a-1 [000] ..... 1.000000: mm_page_alloc: order=0 migratetype=1 gfp_flags=GFP_USER
   b-2 [001] ..... 1.000001: mm_page_alloc: order=2 migratetype=0 gfp_flags=GFP_KERNEL
   a-1 [000] ..... 1.000002: <stack trace>
 => trace_event_raw_event_mm_page_alloc
 => fa
   b-2 [001] ..... 1.000003: <stack trace>
 => fb
   b-2 [001] ..... 1.000004: <user stack trace>
 =>  <00007f0000000001>
";

#[test]
fn interleaved_cpus_pair_by_cpu_and_task() {
    let out = collapse(INTERLEAVED, FtraceOptions { cpu: true, ..FtraceOptions::default() });
    assert_eq!(stacks(&out), owned(&[("cpu-0;fa", 4096), ("cpu-1;0x7f0000000001;fb", 16384)]));
    assert_eq!(out.meta, Meta { unit: Unit::Bytes, event: Some("mm_page_alloc".into()) });
}

#[test]
fn stream_cut_anywhere_keeps_whole_events() {
    for cut in 0..INTERLEAVED.len() {
        let out = collapse(&INTERLEAVED[..cut], mode(Mode::Alloc));
        let total = out.stacks.total().whole();
        assert!([0, 4096, 4096 + 16384].contains(&total), "cut {cut}: {total}");
    }
}

fn mode(m: Mode) -> FtraceOptions {
    FtraceOptions { mode: Some(m), ..FtraceOptions::default() }
}

#[test]
fn weight_override_and_events_mode() {
    let out = collapse(INTERLEAVED, FtraceOptions { weight: Some(WeightBy::Count), ..mode(Mode::Alloc) });
    assert_eq!(out.stacks.total().whole(), 2);
    assert_eq!(out.meta.unit, Unit::Events);
    let out = collapse(INTERLEAVED, mode(Mode::Events));
    assert_eq!(stacks(&out), owned(&[("mm_page_alloc;0x7f0000000001;fb", 1), ("mm_page_alloc;fa", 1)]));
}

#[test]
fn a_quiet_cpu_does_not_hold_back_the_others() {
    let mut s = String::from("   q-9 [001] ..... 1.000000: ev: x=1\n");
    for i in 0..100u64 {
        s.push_str(&format!("   a-1 [000] ..... {}.000000: ev: x=1\n", 2 + i));
    }
    let mut f = Ftrace::new(mode(Mode::Events), None);
    let mut out = Output::new(crate::collapse::Order::Sorted);
    f.collapse(s.as_bytes(), 1, &mut out);
    assert_eq!(out.stacks.total().whole(), 100, "all but the last event released before the end");
    f.finish(&mut out);
    assert_eq!(out.stacks.total().whole(), 101);
}

#[test]
fn chooses_the_mode_from_the_events() {
    let sys = "  a-1 [000] ..... 1.0: sys_enter: NR 0 (1)\n  a-1 [000] ..... 1.5: sys_exit: NR 0 = 1\n";
    assert_eq!(detect::guess_mode(sys.as_bytes()).0, Mode::Syscalls);
    let sw = "  a-1 [000] d..2. 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=1 prev_state=S ==> next_comm=b next_pid=2 next_prio=1\n";
    assert_eq!(detect::guess_mode(sw.as_bytes()).0, Mode::OffCpu);
    assert_eq!(detect::guess_mode(INTERLEAVED.as_bytes()).0, Mode::Alloc);
    assert_eq!(detect::guess_mode(b"  a-1 [000] ..... 1.0: doio_entry: (0x1)\n").0, Mode::Events);
    let out = collapse(sys, FtraceOptions::default());
    assert_eq!(stacks(&out), owned(&[("syscall:read;[no stack]", 500_000_000)]));
    assert!(out.diag.get(kinds::MODE).unwrap().message.contains("syscalls mode"));
    assert!(out.diag.get(kinds::UNUSED_OPTION).is_none());
    let with_order = collapse(sys, FtraceOptions { order: true, ..FtraceOptions::default() });
    assert_eq!(stacks(&with_order), stacks(&out), "--order adds nothing to a syscall span");
    assert!(with_order.diag.get(kinds::UNUSED_OPTION).unwrap().message.contains("syscalls mode"));
}

#[test]
fn preamble_and_lost_lines() {
    assert!(is_trace_cmd_preamble(b"cpus=4"));
    assert!(is_trace_cmd_preamble(b"CPU 3 is empty"));
    assert_eq!(lost_events(b"CPU:1 [LOST 123 EVENTS]"), Some(123));
    assert_eq!(lost_events(b"bash-1 [000] 1.0: ev: x"), None);
}

#[test]
fn concatenated_traces_with_clock_going_back() {
    let once = collapse(INTERLEAVED, mode(Mode::Alloc));
    let later_first = INTERLEAVED.replace("1.00000", "9.00000") + INTERLEAVED;
    let twice = collapse(&later_first, mode(Mode::Alloc));
    assert_eq!(twice.stacks.total().whole(), 2 * once.stacks.total().whole());
    assert_eq!(stacks(&twice).len(), stacks(&once).len(), "same stacks, each twice as heavy");
}

#[test]
fn function_tracer_with_func_stack_trace() {
    let t = "\
# tracer: function
            bash-1977  [000] .... 17284.993652: sys_close <-system_call_fastpath
            bash-1977  [000] .... 17284.993653: <stack trace>
 => sys_close
 => system_call_fastpath
            bash-1977  [000] .... 17284.993660: sys_close <-system_call_fastpath
";
    let out = collapse(t, FtraceOptions::default());
    assert_eq!(out.meta.unit, Unit::Events);
    let want = [("sys_close;[no stack]", 1), ("sys_close;system_call_fastpath;sys_close", 1)];
    assert_eq!(stacks(&out), owned(&want));
}

#[test]
fn unknown_comms_are_named_from_other_lines() {
    let t = "\
   <...>-7 [000] ..... 1.000: ev: x=1
   <...>-8 [000] ..... 1.001: ev: x=1
   dd-7 [001] ..... 1.002: ev: x=1
";
    let out = collapse(t, FtraceOptions { pid: true, ..mode(Mode::Events) });
    let want = [("ev;<...>-8;[no stack]", 1), ("ev;dd-7;[no stack]", 2)];
    assert_eq!(stacks(&out), owned(&want));
}
