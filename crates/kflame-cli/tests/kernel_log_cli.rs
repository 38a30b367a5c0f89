//! `kflame collapse` on kernel logs and crash output, as a user runs it.

use std::process::{Command, Output};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data");

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn hung_task_detected_and_folded() {
    let f = format!("{DATA}/kernel-log/captures/kmsg-raw-hung-task.txt");
    let out = kflame(&["collapse", &f]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "6.18.44-fc-v669;hung_task;INFO: task hung in mnt_want_write;entry_SYSCALL_64_after_hwframe;do_syscall_64;"
        ),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with(";percpu_rwsem_wait;schedule;__schedule 1"), "{stdout}");
}

#[test]
fn options_group_by_offsets_unreliable() {
    let f = format!("{DATA}/kernel-log/captures/dmesg-hung-task-calltrace.txt");
    let out = kflame(&["collapse", "--group-by", "comm,taint", "--offsets", "--unreliable", &f]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "\nsh;not-tainted;entry_SYSCALL_64_after_hwframe+0x76/0x7e;? exc_page_fault+0x176/0x770;"
        ),
        "{stdout}"
    );
    let bad = kflame(&["collapse", "--format", "kernel-log", "--group-by", "kind,colour", &f]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("unknown group key `colour`"), "{}", text(&bad.stderr));
}

#[test]
fn clean_log_says_so_and_succeeds() {
    let f = format!("{DATA}/kernel-log/captures/dmesg-full.txt");
    let out = kflame(&["collapse", &f]);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("no kernel report found in this kernel-log input"),
        "{}",
        text(&out.stderr)
    );
    assert!(!text(&out.stdout).lines().any(|l| !l.starts_with('#')), "no stacks: {}", text(&out.stdout));
}

#[test]
fn json_reports_and_tasks() {
    let f = format!("{DATA}/kernel-log/captures/dmesg-hung-task-calltrace.txt");
    let out = kflame(&["collapse", "--json", &f]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1);
    for field in [
        "\"kind\":\"hung_task\"",
        "\"title\":\"INFO: task hung in mnt_want_write\"",
        "\"kernel\":\"6.18.44-fc-v669\"",
        "\"pid\":9657",
        "\"comm\":\"sh\"",
        "\"frames\":[\"entry_SYSCALL_64_after_hwframe\",",
        "\"raw_frames\":[\"entry_SYSCALL_64_after_hwframe+0x76/0x7e\",\"? exc_page_fault+0x176/0x770\"",
        "\"line\":1",
    ] {
        assert!(stdout.contains(field), "{field} in {stdout}");
    }
    let c = format!("{DATA}/crash/foreach-UN-bt.txt");
    let out = kflame(&["collapse", "--json", &c]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 4);
    assert!(stdout.lines().all(|l| l.contains("\"state\":\"UN\"")), "{stdout}");
}

#[test]
fn crash_default_groups_by_stack_and_comm_on_request() {
    let c = format!("{DATA}/crash/foreach-UN-bt-many-comms.txt");
    let towers = |args: &[&str]| {
        let out = kflame(&[&["collapse"], args, &[c.as_str()]].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let folded = text(&out.stdout);
        folded.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect::<Vec<_>>()
    };
    // 21 tasks of 13 commands in two waits: two towers under their state.
    let by_stack = towers(&[]);
    assert_eq!(by_stack.len(), 2, "{by_stack:#?}");
    assert!(by_stack[0].starts_with("UN;entry_SYSCALL_64_after_hwframe;") && by_stack[0].ends_with(" 17"));
    assert!(by_stack[1].starts_with("UN;ret_from_fork;") && by_stack[1].ends_with(" 4"));
    // The command on request, by --group-by or --comm.
    let by_comm = towers(&["--group-by", "state,comm"]);
    assert_eq!(by_comm.len(), 13, "{by_comm:#?}");
    assert!(
        by_comm
            .iter()
            .any(|l| l.starts_with("UN;postgres;entry_SYSCALL_64_after_hwframe;") && l.ends_with(" 5"))
    );
    assert_eq!(towers(&["--comm"]), by_comm);
}
