//! The off-CPU handler on constructed record sequences, laid out as the kernel writes them
//! into per-CPU ring buffers and put in time order the way a session does.

use super::*;
use crate::record::TaskStates;
use crate::record::order::Reorder;
use crate::record::parse::tests::{sample_bytes, switch_bytes};
use crate::record::parse::{self, Switch};
use crate::record::stacks::{Event, Naming};
use crate::record::sym::Symbolizer;
use crate::record::tracefs::parse_format;

/// The layout of `sched:sched_switch` on the 6.18 kernel of this project's test machines
/// (`/sys/kernel/tracing/events/sched/sched_switch/format`, the fields this handler reads).
const SCHED_SWITCH_FORMAT: &str = "name: sched_switch\nID: 372\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n";

const KALLSYMS: &str = "ffff0100 T schedule\nffff0200 T do_nanosleep\nffff0300 T pipe_read\n";
const NANOSLEEP: u64 = 0xffff_0210;
const PIPE_READ: u64 = 0xffff_0310;
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const NAP: &str = "kfwork;do_nanosleep;schedule";
const PIPE: &str = "kfwork;pipe_read;schedule";

const S: i64 = 0x1;
const D: i64 = 0x2;
const MS: u64 = 1_000_000;
/// A time stamp well after boot, as CLOCK_MONOTONIC gives them.
const T0: u64 = 9_516_000_000_000;

/// The `sched_switch` sample taken as task `tid` (process 4000) leaves `cpu` in `state`, in
/// `schedule` called from `caller`.
fn switch_sample(time: u64, cpu: u32, tid: u32, state: i64, caller: u64) -> Sample {
    let mut raw = vec![0u8; 64];
    raw[0..2].copy_from_slice(&372u16.to_le_bytes());
    raw[24..28].copy_from_slice(&tid.to_le_bytes());
    raw[32..40].copy_from_slice(&state.to_le_bytes());
    Sample {
        time,
        pid: 4000,
        tid,
        cpu,
        period: 1,
        chain: vec![CONTEXT_KERNEL, 0xffff_0110, caller],
        raw,
        cgroup: None,
        user: None,
    }
}

/// The switch record of task `tid` (process 4000) leaving (`out`) or entering `cpu`.
fn switch(time: u64, cpu: u32, tid: u32, out: bool) -> Switch {
    Switch { time, pid: 4000, tid, cpu, out, preempt: false, other_pid: 0, other_tid: 0 }
}

/// The handler with the task bookkeeping and collector a session gives it.
struct Run {
    tasks: Tasks,
    out: Collector,
    h: OffCpu,
}

impl Run {
    /// Every sleeping block counted (the kernel threads of the tests are none: nothing is
    /// looked up in this machine's /proc).
    fn new() -> Run {
        Run::with(OffCpuOptions { idle_kthreads: true, ..OffCpuOptions::default() })
    }

    fn with(opts: OffCpuOptions) -> Run {
        let tp = parse_format(SCHED_SWITCH, SCHED_SWITCH_FORMAT).expect("format");
        let mut tasks = Tasks::new(None);
        for tid in [100, 200, 300] {
            tasks.apply(&Record::Comm { time: 0, pid: 4000, tid, comm: b"kfwork".to_vec(), exec: false });
        }
        let h = OffCpu::new(tp.field("prev_state").expect("prev_state"), opts);
        Run { tasks, out: Collector::new(Naming::default(), true, true), h }
    }

    /// Hands `records` to the handler as the recording loop does.
    fn feed(&mut self, records: Vec<Record>) {
        for r in records {
            match &r {
                Record::Sample(s) => self.h.sample(s, &mut self.tasks, &mut self.out),
                other => {
                    self.tasks.apply(other);
                    self.h.side_band(other, &mut self.out);
                }
            }
        }
    }

    /// The blocked intervals as (tid, since, ns, folded stack), in time order. The sample
    /// records kept beside the events say the same, one for one.
    fn finish(self) -> (Vec<(u32, u64, u64, String)>, OffCpu) {
        let mut sym = Symbolizer::with_kallsyms(KALLSYMS.into());
        let d = self.out.finish(&self.tasks, &mut sym);
        let mut events = d.events;
        let from_samples: Vec<_> = d
            .samples
            .iter()
            .map(|s| {
                let line = String::from_utf8_lossy(&d.sample_stacks[s.stack as usize]).into_owned();
                (s.ts, s.tid, s.cpu, s.weight, line)
            })
            .collect();
        let from_events: Vec<_> =
            events.iter().map(|e| (e.ts, e.tid, e.cpu, e.weight, e.stack.join(";"))).collect();
        assert_eq!(from_samples, from_events);
        events.sort_by_key(|e| (e.ts, e.tid));
        let stack = |e: &Event| e.stack.join(";");
        let iv = events.iter().map(|e| (e.tid, e.ts, e.duration_ns.unwrap_or(0), stack(e))).collect();
        (iv, self.h)
    }
}

fn recs(samples: Vec<Sample>, switches: Vec<Switch>) -> Vec<Record> {
    let mut v: Vec<Record> = samples.into_iter().map(Record::Sample).collect();
    v.extend(switches.into_iter().map(Record::Switch));
    v.sort_by_key(Record::time);
    v
}

/// Two CPUs' buffers, read one after the other as a session reads them: CPU 0's buffer holds
/// the switch-in that ends a block which began in CPU 1's buffer. Decoded and merged, the
/// samples and switch records come out in time order and pair exactly.
#[test]
fn records_of_two_cpus_are_merged_in_time_order_and_paired() {
    let mut cpu0 = Vec::new();
    cpu0.extend(switch_bytes(&switch(T0 + 20 * MS, 0, 100, false)));
    cpu0.extend(sample_bytes(&switch_sample(T0 + 20 * MS + 9_000, 0, 100, S, NANOSLEEP), true));
    cpu0.extend(switch_bytes(&switch(T0 + 20 * MS + 10_000, 0, 100, true)));
    let mut cpu1 = Vec::new();
    cpu1.extend(sample_bytes(&switch_sample(T0, 1, 100, S, NANOSLEEP), true));
    cpu1.extend(switch_bytes(&switch(T0 + 2_000, 1, 100, true)));
    // A preempted task (R+): not blocked, and its switch-in ends nothing.
    cpu1.extend(sample_bytes(&switch_sample(T0 + 5 * MS, 1, 200, 0x100, NANOSLEEP), true));
    cpu1.extend(switch_bytes(&Switch { preempt: true, ..switch(T0 + 5 * MS + 1_000, 1, 200, true) }));
    cpu1.extend(switch_bytes(&switch(T0 + 6 * MS, 1, 200, false)));
    cpu1.extend(switch_bytes(&switch(T0 + 41 * MS, 1, 100, false)));
    let mut reorder = Reorder::default();
    let mut read = Vec::new();
    for buf in [&cpu0, &cpu1] {
        let (mut recs, mut bad) = (Vec::new(), 0);
        parse::records(
            buf,
            parse::Layout { raw: true, cgroup: false, ..parse::Layout::default() },
            &mut recs,
            &mut bad,
        );
        assert_eq!(bad, 0);
        read.extend(recs.iter().cloned());
        reorder.push(&mut recs);
    }
    let merged = reorder.release(T0 + 100 * MS);
    assert_eq!(merged.len(), 9);
    assert!(merged.windows(2).all(|w| w[0].time() <= w[1].time()));
    let mut run = Run::new();
    run.feed(merged);
    let (intervals, h) = run.finish();
    assert_eq!(
        intervals,
        [(100, T0, 20 * MS, NAP.to_string()), (100, T0 + 20 * MS + 9_000, 21 * MS - 9_000, NAP.to_string())]
    );
    assert_eq!((h.intervals.exact, h.intervals.bounded, h.unpaired()), (2, 0, 0));
    // In buffer order instead, the switch-in at 20 ms would precede the block it ends.
    let mut unordered = Run::new();
    unordered.feed(read);
    assert_ne!(unordered.finish().0, intervals);
}

/// The ring buffer overflowed at 20 ms, losing the switch-in that ended the first block: the
/// next switch out ends it, and it is counted as a bound. The second block, begun after the
/// loss, ends exactly.
#[test]
fn a_lost_switch_in_ends_at_the_next_switch_out_and_is_counted() {
    let mut records = recs(
        vec![switch_sample(T0, 0, 100, S, NANOSLEEP), switch_sample(T0 + 30 * MS, 1, 100, S, PIPE_READ)],
        vec![
            switch(T0 + 1_000, 0, 100, true),
            switch(T0 + 30 * MS + 1_000, 1, 100, true),
            switch(T0 + 50 * MS, 0, 100, false),
        ],
    );
    records.push(Record::Lost { time: T0 + 20 * MS, count: 12 });
    records.sort_by_key(Record::time);
    let mut run = Run::new();
    run.feed(records);
    let (intervals, h) = run.finish();
    assert_eq!(
        intervals,
        [(100, T0, 30 * MS, NAP.to_string()), (100, T0 + 30 * MS, 20 * MS, PIPE.to_string())]
    );
    assert_eq!((h.intervals.exact, h.intervals.bounded), (1, 1));
    let note = h.notes().join("\n");
    assert!(
        note.contains("1 blocked intervals ended at the task's switch-in, 1 only at a later sign"),
        "{note}"
    );
}

/// Records lost while a task sleeps: the switch-in seen next may not be its own (it may have
/// run and slept again in the gap), so the interval is counted as a bound, not as exact.
#[test]
fn a_switch_in_after_lost_records_is_counted_as_a_bound() {
    let mut records = recs(
        vec![switch_sample(T0, 0, 100, S, NANOSLEEP)],
        vec![switch(T0 + 1_000, 0, 100, true), switch(T0 + 40 * MS, 1, 100, false)],
    );
    records.push(Record::Lost { time: T0 + 20 * MS, count: 3 });
    records.sort_by_key(Record::time);
    let mut run = Run::new();
    run.feed(records);
    let (intervals, h) = run.finish();
    assert_eq!(intervals, [(100, T0, 40 * MS, NAP.to_string())]);
    assert_eq!((h.intervals.exact, h.intervals.bounded), (0, 1));
}

/// Without the sample of the next switch out, its switch record shows that the task ran.
#[test]
fn a_lost_switch_in_ends_at_the_next_switch_out_record() {
    let mut run = Run::new();
    run.feed(recs(
        vec![switch_sample(T0, 0, 100, D, NANOSLEEP)],
        vec![switch(T0 + 1_000, 0, 100, true), switch(T0 + 8 * MS, 0, 100, true)],
    ));
    let (intervals, h) = run.finish();
    assert_eq!(intervals, [(100, T0, 8 * MS, NAP.to_string())]);
    assert_eq!((h.intervals.exact, h.intervals.bounded), (0, 1));
}

#[test]
fn tasks_that_exit_leave_nothing_open() {
    let mut run = Run::new();
    run.feed(recs(
        vec![switch_sample(T0, 0, 100, S, PIPE_READ), switch_sample(T0, 1, 300, D, NANOSLEEP)],
        vec![
            switch(T0 + 1_000, 0, 100, true),
            switch(T0 + 1_000, 1, 300, true),
            switch(T0 + 10 * MS, 1, 300, false),
        ],
    ));
    // 100 was woken (killed) but its switch-in was lost: its exit ends the interval.
    run.feed(vec![Record::Exit { time: T0 + 5 * MS, pid: 4000, tid: 100 }]);
    // 300 exits after its switch-in; its last switch out (state Z) is not a block.
    run.feed(vec![Record::Exit { time: T0 + 11 * MS, pid: 4000, tid: 300 }]);
    run.feed(recs(vec![switch_sample(T0 + 11 * MS + 100, 1, 300, 0x20, NANOSLEEP)], vec![]));
    // A new task that reuses tid 100: its switch-in ends nothing of the old one.
    run.feed(recs(vec![], vec![switch(T0 + 20 * MS, 0, 100, false)]));
    let (intervals, h) = run.finish();
    assert_eq!(intervals, [(100, T0, 5 * MS, PIPE.to_string()), (300, T0, 10 * MS, NAP.to_string())]);
    assert_eq!((h.intervals.exact, h.intervals.bounded, h.unpaired()), (1, 1, 0));
}

/// Only sleeping tasks count (`S`, `D`, `I`); runnable, stopped, parked and dying ones do not.
/// A task still asleep when recording stops is counted as unpaired.
#[test]
fn only_sleeping_states_are_blocked_time() {
    let states: [(i64, bool); 10] = [
        (0x1, true),
        (0x2, true),
        (0x80, true),
        (0x0, false),
        (0x100, false),
        (0x4, false),
        (0x8, false),
        (0x10, false),
        (0x20, false),
        (0x40, false),
    ];
    let mut run = Run::new();
    for (i, (state, _)) in states.iter().enumerate() {
        let (tid, t) = (1000 + i as u32, T0 + i as u64 * MS);
        run.feed(recs(
            vec![switch_sample(t, 0, tid, *state, NANOSLEEP)],
            vec![switch(t + 1_000, 0, tid, true), switch(t + 3 * MS, 1, tid, false)],
        ));
    }
    run.feed(recs(vec![switch_sample(T0 + 50 * MS, 0, 200, S, NANOSLEEP)], vec![]));
    let (intervals, h) = run.finish();
    let counted: Vec<u32> = intervals.iter().map(|iv| iv.0).collect();
    let want: Vec<u32> = (0..states.len()).filter(|&i| states[i].1).map(|i| 1000 + i as u32).collect();
    assert_eq!(counted, want);
    assert!(intervals.iter().all(|iv| iv.2 == 3 * MS));
    assert_eq!(h.unpaired(), 1);
}

/// The filters a user of bcc's offcputime expects: `--state D` keeps uninterruptible waits
/// only, `--min-block` drops short blocks (counted in a note), and kernel threads asleep in
/// `S` or `I` (waiting for work) are left out unless asked for, while their `D` waits stay.
#[test]
fn state_length_and_idle_kernel_thread_filters() {
    use std::time::Duration;
    let blocks = |run: &mut Run| {
        // tid 100 sleeps (S) 3 ms, tid 200 waits (D) 3 ms then (D) 0.5 ms, tid 300 idles (I) 3 ms.
        for (tid, state, t, len) in [
            (100, S, T0, 3 * MS),
            (200, D, T0, 3 * MS),
            (200, D, T0 + 10 * MS, MS / 2),
            (300, 0x80, T0, 3 * MS),
        ] {
            run.feed(recs(
                vec![switch_sample(t, 0, tid, state, NANOSLEEP)],
                vec![switch(t + 1_000, 0, tid, true), switch(t + len, 1, tid, false)],
            ));
        }
    };
    let only_d = TaskStates::parse("D").expect("D");
    let mut run =
        Run::with(OffCpuOptions { states: only_d, idle_kthreads: true, ..OffCpuOptions::default() });
    blocks(&mut run);
    let tids: Vec<u32> = run.finish().0.iter().map(|iv| iv.0).collect();
    assert_eq!(tids, [200, 200]);

    let min = Duration::from_millis(1);
    let mut run =
        Run::with(OffCpuOptions { min_block: min, idle_kthreads: true, ..OffCpuOptions::default() });
    blocks(&mut run);
    let (intervals, h) = run.finish();
    assert_eq!(
        intervals.iter().map(|iv| (iv.0, iv.2)).collect::<Vec<_>>(),
        [(100, 3 * MS), (200, 3 * MS), (300, 3 * MS)]
    );
    assert_eq!(h.added(), 3);
    assert!(
        h.notes().join("\n").contains("1 blocks shorter than --min-block 1ms left out"),
        "{:?}",
        h.notes()
    );

    // Process 4000 taken for a kernel thread (known, so /proc is not read).
    let mut run = Run::with(OffCpuOptions::default());
    run.h.kthreads.insert(4000, true);
    blocks(&mut run);
    let tids: Vec<u32> = run.finish().0.iter().map(|iv| iv.0).collect();
    assert_eq!(tids, [200, 200], "its S and I waits left out, its D waits kept");
}

/// `/proc/PID/stat` of a kernel thread and of a user process (the name may hold `) `).
#[test]
fn kernel_threads_by_their_stat_flags() {
    let kworker = "29 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 4 0 0 20 0 1 0 21 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
    let user = "812 (a) b) S 1 812 812 0 -1 4194560 167 0 0 0 0 0 0 0 20 0 1 0 120 5468160 256 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
    assert_eq!(stat_flags(kworker), Some(69238880));
    assert!(stat_flags(kworker).is_some_and(|f| f & PF_KTHREAD != 0));
    assert_eq!(stat_flags(user), Some(4194560));
    assert!(stat_flags(user).is_some_and(|f| f & PF_KTHREAD == 0));
    assert_eq!(stat_flags("12 (x"), None);
}
