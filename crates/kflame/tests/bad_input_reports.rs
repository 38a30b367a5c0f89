//! Bad input for the kernel-log and crash parsers: truncated reports, garbage between
//! frames, binary junk, task names with invalid UTF-8, and a deterministic mutation test
//! over real fixtures (no panic, invariants hold).

use kflame::collapse::crash::Crash;
use kflame::collapse::kernel_log::{KernelLog, Options};
use kflame::collapse::{Collapse, Engine};
use kflame::report::{Kind, MAX_FRAMES, MAX_OPEN, ReportExtractor};

mod common;

use common::mutate::Mutator;
use common::read;

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == b'\n').collect()
}

/// Keywords of kernel reports and crash output, inserted among the mutations.
const TOKENS: &[&[u8]] = &[
    b"Call Trace:",
    b"<IRQ>",
    b"</TASK>",
    b"? ",
    b"+0x",
    b"RIP: 0010:",
    b"---[ end trace",
    b"PID: 1 TASK: ",
];

const HUNG: &str = "kernel-log/captures/dmesg-hung-task-calltrace.txt";

#[test]
fn truncated_report_keeps_what_was_printed() {
    let data = read(HUNG);
    let l = lines(&data);
    let cut = l[..12].join(&b'\n'); // up to `mnt_want_write+0x96/0xc0`
    let r = ReportExtractor::extract_all(&cut);
    assert_eq!(r.len(), 1);
    assert!(r[0].truncated);
    assert_eq!(
        r[0].function_names(false),
        ["mnt_want_write", "__percpu_down_read", "percpu_rwsem_wait", "schedule", "__schedule"]
    );
    let out = Engine::single_threaded().run(Box::new(KernelLog::new(Options::default())), &cut[..]).unwrap();
    assert_eq!(out.diag.get("truncated report").map(|e| (e.count, e.first_line)), Some((1, 1)));
    assert_eq!(out.stacks.total().whole(), 1);
}

#[test]
fn garbage_between_frames_is_skipped() {
    let data = read(HUNG);
    let mut noisy = Vec::new();
    for (i, line) in lines(&data).iter().enumerate() {
        noisy.extend_from_slice(line);
        noisy.push(b'\n');
        if (8..20).contains(&i) {
            noisy.extend_from_slice(b"[ 3626.185900] usb 1-1: new high-speed USB device number 3\n");
            noisy.extend_from_slice(b"random console output from a shell\n");
            noisy.extend_from_slice(b"\x00\xff\xfe garbage \x1b[31m\n");
        }
    }
    let clean = ReportExtractor::extract_all(&data);
    let r = ReportExtractor::extract_all(&noisy);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].function_names(true), clean[0].function_names(true));
    assert_eq!(r[0].title, clean[0].title);
}

#[test]
fn binary_junk_finds_nothing_and_does_not_stop_a_later_report() {
    let mut rng = Mutator::new(0x1234_5678_9abc_def1);
    let junk: Vec<u8> = (0..200_000).map(|_| rng.next_u64() as u8).collect();
    assert!(ReportExtractor::extract_all(&junk).is_empty());
    let mut mixed = junk.clone();
    mixed.push(b'\n');
    mixed.extend_from_slice(&read(HUNG));
    let r = ReportExtractor::extract_all(&mixed);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].title, "INFO: task hung in mnt_want_write");
}

#[test]
fn task_names_with_invalid_utf8_and_newlines() {
    // syzkaller's corpus: a hung task whose name holds bytes that are not UTF-8 and a newline.
    let r = ReportExtractor::extract_all(&read("kernel-log/syzkaller/report/1001"));
    let hung = r.iter().find(|r| r.kind() == Kind::HungTask).expect("hung task");
    assert_eq!(hung.pid, Some(18088));
    let comm = hung.comm.as_deref().unwrap();
    assert!(comm.contains('\u{fffd}') && comm.contains('\n'), "{comm:?}");
    let out = Engine::single_threaded()
        .run(
            Box::new(KernelLog::new(Options {
                group_by: vec![kflame::collapse::kernel_log::GroupKey::Comm],
                ..Options::default()
            })),
            &read("kernel-log/syzkaller/report/1001")[..],
        )
        .unwrap();
    for (stack, _) in out.stacks.in_output_order() {
        assert!(!stack.contains(&b'\n'), "folded stacks stay one line");
    }
}

#[test]
fn one_huge_line_and_many_concurrent_callers() {
    let mut huge = b"[ 1.0] WARNING: CPU: 0 PID: 1 at x.c:1 f+0x1/0x2 ".to_vec();
    huge.extend(std::iter::repeat_n(b'A', 3 << 20));
    huge.push(b'\n');
    assert_eq!(ReportExtractor::extract_all(&huge).len(), 1);
    let mut huge_bug = b"[ 1.0] BUG: ".to_vec();
    huge_bug.extend(std::iter::repeat_n(b'x', 3 << 20));
    let r = ReportExtractor::extract_all(&huge_bug);
    assert!(r[0].title.len() < 200 && r[0].header.len() <= 512, "titles and headers stay short");
    // 1000 reports open at once on distinct printk callers: all come out, the oldest closed
    // early (bounded memory).
    let mut log = Vec::new();
    for i in 0..1000 {
        log.extend_from_slice(
            format!("[ 1.0][ T{i}] WARNING: CPU: 0 PID: {i} at x.c:1 f{i}+0x1/0x2\n").as_bytes(),
        );
    }
    for i in 0..1000 {
        log.extend_from_slice(format!("[ 1.1][ T{i}] Call Trace:\n[ 1.1][ T{i}]  g{i}+0x1/0x2\n").as_bytes());
    }
    let r = ReportExtractor::extract_all(&log);
    assert_eq!(r.len(), 1000);
    let with_frames = r.iter().filter(|r| !r.frames.is_empty()).count();
    assert_eq!(with_frames, MAX_OPEN, "only the reports still open get their late frames");
}

fn check_invariants(data: &[u8]) {
    let reports = ReportExtractor::extract_all(data);
    for r in &reports {
        assert!(r.line >= 1);
        assert!(r.frames.len() <= MAX_FRAMES);
        assert!(!r.title.is_empty());
        let _ = r.to_json();
    }
    let e = Engine { block_size: 16 << 10, ..Engine::single_threaded() };
    let out = e
        .run(
            Box::new(KernelLog::new(Options { unreliable: true, offsets: true, ..Options::default() })),
            data,
        )
        .unwrap();
    assert_eq!(out.stacks.total().whole(), reports.len() as u64, "one count per report");
    let crash: Box<dyn Collapse> = Box::new(Crash::default());
    e.run(crash, data).unwrap();
}

#[test]
fn deterministic_mutations_never_panic() {
    let fixtures = [
        HUNG,
        "kernel-log/captures/kmsg-raw-hung-task.txt",
        "kernel-log/syzkaller/report/503",
        "kernel-log/syzkaller/report/718",
        "kernel-log/syzkaller/report/338",
        "kernel-log/syzkaller/report/548",
        "crash/bt-a-irq-nmi.txt",
        "crash/foreach-UN-bt.txt",
    ];
    let mut m = Mutator::new(42).with_tokens(TOKENS);
    for rel in fixtures {
        let data = read(rel);
        for _ in 0..40 {
            check_invariants(&m.mutate(&data));
        }
    }
}

/// printk's `** N printk messages dropped **` (kernel/printk/printk.c) inside a trace: the
/// report keeps the frames printed around the hole and says it is incomplete.
#[test]
fn dropped_printk_messages_mark_the_trace_incomplete() {
    let data = read(HUNG);
    let mut holed = Vec::new();
    for (i, line) in lines(&data).iter().enumerate() {
        if i == 14 {
            holed.extend_from_slice(b"[ 3626.185901] ** 12 printk messages dropped **\n");
            continue; // the frame printk dropped
        }
        holed.extend_from_slice(line);
        holed.push(b'\n');
    }
    let clean = ReportExtractor::extract_all(&data);
    let r = ReportExtractor::extract_all(&holed);
    assert_eq!(r.len(), 1);
    assert!(!clean[0].truncated);
    assert!(r[0].truncated);
    assert_eq!(r[0].frames.len(), clean[0].frames.len() - 1);
    assert_eq!(r[0].title, clean[0].title);
}

/// A report cut before its trace by the next report of the same task is still reported,
/// marked incomplete; the next one is whole.
#[test]
fn report_cut_before_its_trace_is_kept_and_marked() {
    let data = read(HUNG);
    let l = lines(&data);
    let mut cut = l[..3].join(&b'\n'); // the header lines, no frame yet
    cut.push(b'\n');
    cut.extend_from_slice(&data);
    let r = ReportExtractor::extract_all(&cut);
    assert_eq!(r.len(), 2);
    assert!(r[0].truncated && r[0].frames.is_empty());
    assert_eq!(r[0].kind(), Kind::HungTask);
    assert!(!r[1].truncated && !r[1].frames.is_empty());
}
