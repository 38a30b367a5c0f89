//! crash `bt` output to folded stacks: exact expected output for each fixture (see
//! `tests/data/crash/README.md`), written by reading the fixtures.

use kflame::collapse::crash::{Crash, CrashKey, CrashParser, parse_crash_keys};
use kflame::collapse::{Engine, Format, Output, detect};
use kflame::report::Section;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/crash");

fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DATA}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn run(name: &str, keys: Vec<CrashKey>) -> Output {
    Engine::single_threaded().run(Box::new(Crash::new(keys)), &read(name)[..]).unwrap()
}

fn folded(out: &Output) -> Vec<String> {
    out.stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| format!("{} {}", String::from_utf8_lossy(s), w.whole()))
        .collect()
}

fn state_and_comm() -> Vec<CrashKey> {
    vec![CrashKey::State, CrashKey::Comm]
}

/// 21 `foreach UN bt` tasks of 13 commands blocked in two waits: by default they condense
/// into those two stacks under their state; split by command on request.
#[test]
fn default_groups_tasks_by_stack_and_comm_splits_on_request() {
    let input = read("foreach-UN-bt-many-comms.txt");
    let out = Engine::single_threaded().run(Box::new(Crash::default()), &input[..]).unwrap();
    let journal = "UN;entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;vfs_write;ext4_buffered_write_iter;\
                   file_update_time;__mark_inode_dirty;ext4_dirty_inode;__ext4_journal_start_sb;jbd2__journal_start;\
                   start_this_handle;add_transaction_credits;wait_transaction_locked;schedule;__schedule";
    let writeback = "UN;ret_from_fork;kthread;worker_thread;process_one_work;wb_workfn;__writeback_single_inode;\
                     do_writepages;write_cache_pages;folio_wait_bit_common;io_schedule;schedule;__schedule";
    assert_eq!(folded(&out), [format!("{journal} 17"), format!("{writeback} 4")]);
    assert!(out.diag.is_empty(), "{:?}", out.diag);

    let by_comm = run("foreach-UN-bt-many-comms.txt", state_and_comm());
    let stacks = folded(&by_comm);
    assert_eq!(stacks.len(), 13, "{stacks:#?}");
    assert!(stacks.contains(&"UN;postgres;entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;vfs_write;\
         ext4_buffered_write_iter;file_update_time;__mark_inode_dirty;ext4_dirty_inode;__ext4_journal_start_sb;\
         jbd2__journal_start;start_this_handle;add_transaction_credits;wait_transaction_locked;schedule;__schedule 5"
        .to_string()));
    assert_eq!(stacks.iter().filter(|s| s.starts_with("UN;kworker/u8:")).count(), 4);
    assert_eq!(by_comm.stacks.total(), out.stacks.total());
}

#[test]
fn foreach_un_bt_groups_blocked_tasks_by_wait() {
    let out = run("foreach-UN-bt.txt", state_and_comm());
    assert_eq!(
        folded(&out),
        [
            "UN;jbd2/vda1-8;ret_from_fork;kthread;kjournald2;jbd2_journal_commit_transaction;out_of_line_wait_on_bit;\
             __wait_on_bit;bit_wait_io;io_schedule;schedule;__schedule 1",
            "UN;kworker/u8:2;ret_from_fork;kthread;wb_workfn;__writeback_single_inode;do_writepages;write_cache_pages;\
             folio_wait_bit_common;io_schedule;schedule;__schedule 1",
            "UN;postgres;entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;vfs_write;ext4_buffered_write_iter;\
             file_update_time;__mark_inode_dirty;ext4_dirty_inode;__ext4_journal_start_sb;jbd2__journal_start;\
             start_this_handle;add_transaction_credits;wait_transaction_locked;schedule;__schedule 2",
        ]
    );
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

#[test]
fn bt_a_with_nmi_and_irq_stacks_and_exception_rip() {
    let out = run("bt-a-irq-nmi.txt", state_and_comm());
    assert_eq!(
        folded(&out),
        [
            "RU;bash;entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;vfs_write;proc_reg_write;write_sysrq_trigger;\
             __handle_sysrq.cold;sysrq_handle_crash;panic;__crash_kexec;machine_kexec 1",
            "RU;ksoftirqd/2;ret_from_fork;kthread;smpboot_thread_fn;run_ksoftirqd;_raw_spin_unlock_irqrestore;\
             asm_sysvec_call_function_single;sysvec_call_function_single;__sysvec_call_function_single;crash_nmi_callback 1",
            "RU;swapper/0;secondary_startup_64_no_verify;start_kernel;arch_call_rest_init;rest_init;cpu_startup_entry;\
             do_idle;default_idle_call;default_idle;native_safe_halt;end_repeat_nmi;exc_nmi;default_do_nmi;nmi_handle;\
             crash_nmi_callback 1",
        ]
    );
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

#[test]
fn sections_and_exception_frames_in_the_task_model() {
    let mut p = CrashParser::new();
    for (n, line) in read("bt-a-irq-nmi.txt").split(|&b| b == b'\n').enumerate() {
        p.push_line(n as u64 + 1, line);
    }
    p.finish();
    let tasks = p.take();
    assert_eq!(tasks.len(), 3);
    let swapper = &tasks[0];
    assert_eq!((swapper.pid, swapper.cpu, swapper.comm.as_str()), (0, Some(0), "swapper/0"));
    assert_eq!(swapper.line, 2);
    let nmi: Vec<_> =
        swapper.frames.iter().filter(|f| f.section == Section::Nmi).map(|f| &f.function).collect();
    assert_eq!(nmi, ["crash_nmi_callback", "nmi_handle", "default_do_nmi", "exc_nmi", "end_repeat_nmi"]);
    assert!(swapper.frames[5].exception && swapper.frames[5].function == "native_safe_halt");
    let ksoft = &tasks[2];
    assert_eq!(ksoft.frames.iter().filter(|f| f.section == Section::Irq).count(), 3);
    assert_eq!(ksoft.state.as_deref(), Some("RU"));
    let json = ksoft.to_json();
    assert!(json.starts_with("{\"pid\":27,"), "{json}");
    assert!(json.contains("\"frames\":[{\"function\":\"ret_from_fork\""), "root first: {json}");
}

#[test]
fn states_from_ps_output_and_group_keys() {
    let out = run("ps-then-foreach-bt.txt", parse_crash_keys("state,comm,cpu").unwrap());
    assert_eq!(
        folded(&out),
        [
            "IN;systemd;cpu-1;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_epoll_wait;do_epoll_wait;\
             schedule_hrtimeout_range_clock;schedule;__schedule 1",
            "UN;jbd2/vda1-8;cpu-2;ret_from_fork;kthread;kjournald2;jbd2_journal_commit_transaction;io_schedule;schedule;\
             __schedule 1",
            "UN;postgres;cpu-0;vfs_write;wait_transaction_locked;schedule;__schedule 1",
            "unknown-state;sshd;cpu-3;schedule;__schedule 1",
        ]
    );
    assert!(parse_crash_keys("state,bogus").is_err());
}

#[test]
fn bt_t_module_placeholders_stack_data_and_a_foreign_line() {
    let out = run("bt-t-and-args.txt", state_and_comm());
    assert_eq!(
        folded(&out),
        [
            "unknown-state;lockd;kthread;lockd;svc_recv;schedule_timeout;schedule;__schedule 1",
            "unknown-state;xterm;do_syscall_64;do_select;(xterm module);schedule;__schedule 1",
        ]
    );
    let e = out.diag.get("unrecognized crash line").expect("the foreign line is reported");
    assert_eq!((e.count, e.first_line), (1, 18));
    assert!(e.message.contains("this line is not crash output"), "{}", e.message);
}

#[test]
fn gavin_guo_bt_a_sample() {
    let out = run("gavinguo-crash-bt-a.txt", state_and_comm());
    let stacks = folded(&out);
    assert_eq!(stacks.len(), 2);
    assert_eq!(
        stacks[1],
        "unknown-state;swapper/1;secondary_startup_64;start_secondary;cpu_startup_entry;do_idle;default_idle_call;\
         arch_cpu_idle;mwait_idle;end_repeat_nmi;do_nmi;default_do_nmi;nmi_handle;crash_nmi_callback 1"
    );
    assert!(stacks[0].starts_with("unknown-state;jujud;page_fault;do_page_fault;"), "{}", stacks[0]);
    assert!(stacks[0].contains(";xfs_reclaim_inode;xfs_bwrite;xfs_buf_submit_wait;wait_for_completion;"));
    assert!(out.diag.is_empty(), "{:?}", out.diag);
}

#[test]
fn detection() {
    for name in ["foreach-UN-bt.txt", "bt-a-irq-nmi.txt", "gavinguo-crash-bt-a.txt", "bt-t-and-args.txt"] {
        assert_eq!(detect(&read(name)), Some(Format::Crash), "{name}");
    }
}
