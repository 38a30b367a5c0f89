//! Golden tests on bcc's own example outputs (Apache-2.0) and on captures of this machine
//! (`tests/data/bcc/README.md`).

use super::*;
use crate::collapse::testkit::{
    data, folded, golden_file, no_panic_on_mutations, run, run_with, sum_bcc_counts,
};
use crate::collapse::{Format, Order, detect as detect_format};

fn bcc(unit: Unit) -> Box<dyn Collapse> {
    Box::new(Bcc::new(Options { unit, pid: false }))
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l == line)
}

fn check(file: &str, unit: Unit, scale: u64) -> String {
    let input = data(&format!("bcc/{file}"));
    let out = run(bcc(unit), &input);
    assert_eq!(out.diag.skipped(), 0, "{file}: {:?}", out.diag);
    assert_eq!(out.stacks.total().whole(), sum_bcc_counts(&input) * scale, "{file}");
    let text = folded(&out);
    let many = run_with(bcc(unit), &input, 3, Order::Sorted);
    assert_eq!(folded(&many), text, "{file}: 1 vs 3 threads");
    golden_file(&format!("bcc/{file}.expected"), &text);
    text
}

#[test]
fn profile_multiline() {
    let text = check("profile-example-multiline.txt", Unit::Auto, 1);
    assert!(has_line(&text, "func_ab;[unknown];__libc_start_main;main;func_a 5"), "{text}");
    assert!(has_line(
        &text,
        "cp;[unknown];page_fault;do_page_fault;__do_page_fault;handle_mm_fault;filemap_map_pages 1"
    ));
}

#[test]
fn profile_with_kernel_user_delimiter() {
    let text = check("profile-example-delimited.txt", Unit::Auto, 1);
    assert!(has_line(&text, "dd;__write;-;entry_SYSCALL_64_fastpath;sys_write;__vfs_write 1"), "{text}");
}

#[test]
fn offcputime_microseconds_become_nanoseconds() {
    let text = check("offcputime-example-K.txt", Unit::Auto, 1000);
    assert!(text.starts_with("# unit=ns\n"), "{text}");
    let first = "chmod;page_fault;do_page_fault;__do_page_fault;handle_mm_fault;__do_fault;filemap_fault;\
                 __lock_page_or_retry;wait_on_page_bit_killable;__wait_on_bit;bit_wait_io;io_schedule_timeout;\
                 schedule_timeout;schedule 13000\n";
    assert!(text.contains(first), "{text}");
}

#[test]
fn offcputime_folded_needs_the_unit_given() {
    let text = check("offcputime-example-Kf.folded", Unit::Micros, 1000);
    assert!(
        text.contains("\nbash;entry_SYSCALL_64_fastpath;sys_wait4;do_wait;schedule 699320000\n"),
        "{text}"
    );
}

#[test]
fn stackcount_per_process_with_delimiter() {
    let text = check("stackcount-example-P-d.txt", Unit::Auto, 1);
    assert!(text.starts_with("# unit=events\n"), "{text}");
    let want = "\njbd2/xvda1-8;-;ret_from_fork;kthread;kjournald2;jbd2_journal_commit_transaction;\
                journal_submit_commit_record;submit_bh;submit_bio 1\n";
    assert!(text.contains(want), "{text}");
}

#[test]
fn offwaketime_target_and_waker_stacks() {
    let text = check("offwaketime-example.txt", Unit::Auto, 1000);
    assert!(text.starts_with("# unit=ns\n"), "{text}");
    let first = "cksum;link_path_walk;walk_component;__lookup_hash;lookup_real;ext4_lookup;ext4_iget_normal;\
                 ext4_iget;__ext4_get_inode_loc;submit_bh;submit_bh_wbc;submit_bio;generic_make_request;\
                 blk_sq_make_request;blk_mq_map_request;__blk_mq_alloc_request;blk_mq_get_tag;bt_get;\
                 __sched_text_start;schedule_timeout;schedule;-;autoremove_wake_function;__wake_up_common;\
                 __wake_up;bt_clear_tag;blk_mq_put_tag;__blk_mq_free_request;blk_mq_free_request;\
                 blk_mq_end_request;__blk_mq_complete_request;blk_mq_complete_request;swapper/0 56529000";
    assert!(has_line(&text, first), "{text}");
}

#[test]
fn captured_profile_sums_repeated_stacks_and_keeps_missed_markers() {
    let text = check("bcc-profile-folded.txt", Unit::Auto, 1);
    let input = String::from_utf8(data("bcc/bcc-profile-folded.txt")).unwrap();
    let missed: Vec<u64> = input
        .lines()
        .filter_map(|l| l.strip_prefix("inferno-collaps;[Missed User Stack] "))
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(missed.len() > 1, "the capture repeats this stack on several lines");
    let want = format!("inferno-collaps;[Missed User Stack] {}", missed.iter().sum::<u64>());
    assert!(has_line(&text, &want), "{want}: {text}");
    check("bcc-offcpu-sched_switch-tp.folded", Unit::Auto, 1);
    check("bcc-syscall-write-latency.folded", Unit::Auto, 1);
}

#[test]
fn pid_option_keeps_the_pid() {
    let out = run(
        Box::new(Bcc::new(Options { unit: Unit::Auto, pid: true })),
        &data("bcc/profile-example-multiline.txt"),
    );
    assert!(folded(&out).contains("\ndd-25036;read;entry_SYSCALL_64_fastpath;sys_read;"));
}

#[test]
fn detection() {
    for f in [
        "profile-example-multiline.txt",
        "offcputime-example-K.txt",
        "stackcount-example-P-d.txt",
        "bcc-profile-folded.txt",
    ] {
        assert_eq!(detect_format(&data(&format!("bcc/{f}"))), Some(Format::Bcc), "{f}");
    }
    assert_eq!(detect(b"a;b 1\nc;d 2\n"), 0);
    assert_eq!(detect(&data("bpftrace/bpftrace-profile-kstack.txt")), 0);
    assert_eq!(detect(&data("proc-stacks/proc-stacks-snapshot.txt")), 0);
}

#[test]
fn bad_input_is_counted() {
    let text =
        b"    f\n    g\n\nprose without count\n    h\n    - x (1)\n        2\n\xff\xfe\n    dangling\n";
    let out = run(bcc(Unit::Auto), text);
    assert_eq!(out.diag.get(kinds::NO_COUNT).map(|e| (e.count, e.first_line)), Some((2, 1)));
    assert_eq!(out.diag.get(kinds::BAD_LINE).map(|e| (e.count, e.first_line)), Some((2, 4)));
    assert_eq!(folded(&out), "x;h 2\n");
}

#[test]
fn mutations_never_panic() {
    no_panic_on_mutations(&data("bcc/profile-example-delimited.txt"), || bcc(Unit::Auto));
    no_panic_on_mutations(&data("bcc/bcc-profile-folded.txt")[..5000], || bcc(Unit::Micros));
}

/// Found by the fuzz target: a header line far down used to switch the unit in the middle
/// of a sequential run only, so 1 and 2 threads disagreed. The unit comes from the top.
#[test]
fn unit_comes_from_the_head_only() {
    let mut text = b"    f\n        1\n".repeat(3000);
    text.extend_from_slice(
        b"Tracing off-CPU time (us) of all threads by kernel stack...\n    g\n        2\n",
    );
    let one = run(bcc(Unit::Auto), &text);
    let two = run_with(bcc(Unit::Auto), &text, 2, Order::Sorted);
    assert_eq!(folded(&one), folded(&two));
    assert_eq!(one.stacks.total().whole(), 3002);
}

/// A count line always ends a record, even without frames (then kept under
/// `[empty stack]`), so that any split of the input gives the same stacks.
#[test]
fn count_without_frames_is_kept_and_splits_agree() {
    let mut text = Vec::new();
    for i in 0..2000 {
        text.extend_from_slice(format!("\n        {}\n    f{}\n        1\n", i % 7, i % 5).as_bytes());
    }
    let one = run(bcc(Unit::Auto), &text);
    let two = run_with(bcc(Unit::Auto), &text, 2, Order::Sorted);
    assert_eq!(folded(&one), folded(&two));
    assert_eq!(one.stacks.total().whole(), 2000 + (0..2000u64).map(|i| i % 7).sum::<u64>());
    assert!(folded(&one).starts_with("[empty stack] "));
}
