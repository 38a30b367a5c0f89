//! Exact expected reports of real logs: kernelci boot logs with several reports, the real
//! hung task captured on this kind of machine (dmesg and raw /dev/kmsg), clean logs, and
//! reports of two tasks interleaved line by line (printk caller ids). The expectations
//! were written by reading each log.

#![allow(clippy::print_stdout)]

use kflame::collapse::kernel_log::{self, KernelLog, Options};
use kflame::collapse::{Engine, Format, detect};
use kflame::report::{Kind, Report, ReportExtractor, Section};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kernel-log");

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{DATA}/{rel}")).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn reports(rel: &str) -> Vec<Report> {
    ReportExtractor::extract_all(&read(rel))
}

fn kinds(r: &[Report]) -> Vec<Kind> {
    r.iter().map(Report::kind).collect()
}

#[test]
fn clean_logs_have_no_report() {
    for rel in [
        "captures/dmesg-full.txt",
        "kernelci/linux_boot/linux_boot_001.log",
        "kernelci/linux_boot/linux_boot_003.log",
        "kernelci/linux_boot/linux_boot_004.log",
        "kernelci/linux_boot/linux_boot_009.log",
        "kernelci/test_baseline/test_baseline_001.log",
        "kernelci/test_baseline/test_baseline_002.log",
        "kernelci/test_baseline/test_baseline_003.log",
    ] {
        let r = reports(rel);
        assert!(r.is_empty(), "{rel}: unexpected {:?}", r.iter().map(|r| &r.title).collect::<Vec<_>>());
    }
}

const HUNG_FRAMES: [&str; 11] = [
    "entry_SYSCALL_64_after_hwframe",
    "do_syscall_64",
    "__x64_sys_openat",
    "do_sys_openat2",
    "do_filp_open",
    "path_openat",
    "mnt_want_write",
    "__percpu_down_read",
    "percpu_rwsem_wait",
    "schedule",
    "__schedule",
];

#[test]
fn real_hung_task_in_dmesg_and_kmsg_formats() {
    for rel in ["captures/dmesg-hung-task-calltrace.txt", "captures/kmsg-raw-hung-task.txt"] {
        let r = reports(rel);
        assert_eq!(r.len(), 1, "{rel}");
        let r = &r[0];
        assert_eq!(r.kind(), Kind::HungTask);
        assert_eq!(r.title, "INFO: task hung in mnt_want_write");
        assert_eq!((r.comm.as_deref(), r.pid), (Some("sh"), Some(9657)));
        assert_eq!(r.kernel.as_deref(), Some("6.18.44-fc-v669"));
        assert_eq!(r.taint.as_deref(), Some(""));
        assert_eq!(r.line, 1);
        assert_eq!(r.time.as_deref(), Some("3626.182076"), "{rel}: same time in both formats");
        assert_eq!(r.function_names(false), HUNG_FRAMES);
        assert_eq!(r.frames.len(), 30, "{rel}: every frame, `?` ones included");
        assert_eq!(r.frames.iter().filter(|f| f.unreliable).count(), 19);
        assert!(r.frames.iter().all(|f| f.section == Section::Task));
        assert!(!r.truncated);
    }
}

#[test]
fn kernelci_vfs_panic_arm32_new_unwinder() {
    let r = reports("kernelci/linux_boot/linux_boot_002.log");
    assert_eq!(kinds(&r), [Kind::Panic; 3]);
    let p = &r[0];
    assert_eq!(p.title, "kernel panic: VFS: Unable to mount root fs");
    assert_eq!(p.kernel.as_deref(), Some("6.10.0-rc1-next-20240531"));
    assert_eq!((p.cpu, p.pid, p.comm.as_deref()), (Some(1), Some(1), Some("swapper/0")));
    assert_eq!(p.hardware.as_deref(), Some("BCM2835"));
    assert_eq!(
        p.function_names(false),
        [
            "ret_from_fork",
            "kernel_init",
            "prepare_namespace",
            "mount_root_generic",
            "panic",
            "dump_stack_lvl",
            "show_stack",
            "unwind_backtrace"
        ]
    );
}

#[test]
fn kernelci_warnings_and_page_faults_after_resets() {
    let r = reports("kernelci/linux_boot/linux_boot_005.log");
    use Kind::*;
    assert_eq!(kinds(&r), [Warning, PageFault, Panic, Warning, PageFault, Panic, Warning]);
    let w = &r[0];
    assert_eq!(w.title, "WARNING in apply_returns");
    assert_eq!((w.cpu, w.pid, w.comm.as_deref()), (Some(0), Some(0), Some("swapper/0")));
    assert_eq!(w.rip.as_deref(), Some("apply_returns"));
    assert_eq!(
        w.function_names(false),
        [
            "secondary_startup_64_no_verify",
            "start_kernel",
            "arch_cpu_finalize_init",
            "alternative_instructions",
            "apply_returns"
        ]
    );
    // The fault is in lib/vsprintf.c's string helpers (skipped as syzkaller skips them): the
    // title names their caller, which passed the bad pointer.
    assert_eq!(r[1].title, "BUG: unable to handle kernel paging request in __devm_ioremap_resource");
    assert_eq!((r[1].pid, r[1].comm.as_deref()), (Some(185), Some("udevd")));
    assert_eq!(r[2].title, "kernel panic: Fatal exception");
}

#[test]
fn kernelci_ubsan_with_cold_frames() {
    let r = reports("kernelci/linux_boot/linux_boot_006.log");
    assert_eq!(r.len(), 1);
    let u = &r[0];
    assert_eq!(u.kind(), Kind::Ubsan);
    assert_eq!(u.title, "UBSAN: shift-out-of-bounds in __roundup_pow_of_two");
    assert_eq!(u.kernel.as_deref(), Some("6.1.102"));
    let leaf: Vec<&str> =
        u.frames.iter().filter(|f| !f.unreliable).take(6).map(|f| f.function.as_str()).collect();
    assert_eq!(
        leaf,
        [
            "dump_stack_lvl",
            "dump_stack",
            "ubsan_epilogue",
            "__ubsan_handle_shift_out_of_bounds.cold",
            "__roundup_pow_of_two",
            "amdgpu_vm_adjust_size.cold"
        ]
    );
    assert!(u.frames[0].unreliable && u.frames[0].function == "show_stack");
}

#[test]
fn kernelci_many_kinds_in_one_boot() {
    let r = reports("kernelci/linux_boot/linux_boot_007.log");
    use Kind::*;
    let once = [Ubsan, Lockdep, PageFault, AtomicSleep, Bug];
    assert_eq!(kinds(&r), [once, once].concat());
    let titles: Vec<&str> = r[..5].iter().map(|r| r.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "UBSAN: shift-out-of-bounds in __roundup_pow_of_two",
            // Wait-queue wakeups are skipped as syzkaller skips them: the caller woke a
            // wait queue of a bad object.
            "INFO: trying to register non-static key in amdgpu_debugfs_wait_dump",
            "BUG: unable to handle kernel NULL pointer dereference in amdgpu_debugfs_wait_dump",
            "BUG: sleeping function called from invalid context in exit_signals",
            "BUG: workqueue lockup",
        ]
    );
    assert!(r[9].truncated, "the log ends inside the last workqueue lockup report");
}

#[test]
fn kernelci_arm64_panic_with_pc_markers() {
    let r = reports("kernelci/linux_boot/linux_boot_008.log");
    assert_eq!(kinds(&r), [Kind::Panic; 2]);
    let p = &r[0];
    assert_eq!(p.title, "kernel panic: Attempted to kill init!");
    assert_eq!((p.cpu, p.pid, p.comm.as_deref()), (Some(7), Some(1), Some("init")));
    assert_eq!(p.hardware.as_deref(), Some("Google Steelix board (DT)"));
    assert_eq!(
        p.function_names(false),
        [
            "el0t_64_sync",
            "el0t_64_sync_handler",
            "el0_svc",
            "do_el0_svc",
            "el0_svc_common.constprop.0",
            "invoke_syscall",
            "__arm64_sys_exit",
            "do_exit",
            "panic",
            "dump_stack",
            "dump_stack_lvl",
            "show_stack"
        ]
    );
}

#[test]
fn kernelci_dmesg_x_levels() {
    let r = reports("kernelci/test_baseline/test_baseline_004.log");
    assert_eq!(kinds(&r), [Kind::PageFault; 2]);
    assert_eq!(r[0].title, "BUG: unable to handle kernel NULL pointer dereference in cros_ec_check_features");
    assert_eq!((r[0].cpu, r[0].pid, r[0].comm.as_deref()), (Some(1), Some(154), Some("udevd")));
    assert_eq!(r[0].kernel.as_deref(), Some("5.15.161"));
    // The test's `dmesg -x` re-prints the first lines of the report at the end of the log.
    assert!(r[1].frames.is_empty() && r[1].truncated);
}

#[test]
fn interleaved_tasks_are_separated_by_caller_id() {
    let r = reports("syzkaller/report/392");
    let gpf = r.iter().find(|r| r.caller.as_deref() == Some("T1560")).expect("T1560 report");
    let kasan = r.iter().find(|r| r.caller.as_deref() == Some("T1533")).expect("T1533 report");
    assert_eq!(gpf.kind(), Kind::GeneralProtectionFault);
    assert_eq!(gpf.title, "general protection fault in x25_connect");
    assert_eq!(gpf.frames.first().map(|f| f.function.as_str()), Some("refcount_sub_and_test_checked"));
    assert_eq!(kasan.kind(), Kind::Kasan);
    assert_eq!(kasan.title, "KASAN: null-ptr-deref Read in x25_connect");
    assert_eq!((gpf.pid, kasan.pid), (Some(1560), Some(1533)));
}

#[test]
fn detection_claims_logs_with_reports_among_boot_lines() {
    // The real hung task inserted after 300 lines of the same machine's boot log.
    let full = read("captures/dmesg-full.txt");
    let cut = full.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(299).map_or(0, |(i, _)| i + 1);
    let mut log = full[..cut].to_vec();
    log.extend_from_slice(&read("captures/dmesg-hung-task-calltrace.txt"));
    log.extend_from_slice(&full[cut..]);
    assert_eq!(kernel_log::detect(&log), 85);
    for rel in ["kernelci/linux_boot/linux_boot_002.log", "captures/kmsg-raw-hung-task.txt"] {
        let data = read(rel);
        let head = &data[..data.len().min(64 * 1024)];
        assert_eq!(detect(head), Some(Format::KernelLog), "{rel}");
    }
    // Clean logs: still kernel logs (a boot banner among timestamped lines).
    assert_eq!(detect(&full), Some(Format::KernelLog));
    let data = read("kernelci/linux_boot/linux_boot_004.log");
    assert_eq!(detect(&data[..data.len().min(64 * 1024)]), Some(Format::KernelLog));
}

#[test]
fn collapse_is_independent_of_block_size() {
    let data = read("kernelci/linux_boot/linux_boot_007.log");
    let run = |block_size| {
        let e = Engine { block_size, ..Engine::single_threaded() };
        let out = e.run(Box::new(KernelLog::new(Options::default())), &data[..]).unwrap();
        out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.whole())).collect::<Vec<_>>()
    };
    let reference = run(1 << 20);
    assert_eq!(reference.iter().map(|(_, w)| w).sum::<u64>(), 10, "one count per report");
    assert_eq!(run(4096), reference);
}

#[test]
fn other_formats_are_not_claimed() {
    // The shared captures of perf script, ftrace, trace-cmd, bcc and folded output, found
    // relative to the workspace; skipped with a note when absent.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/captures/text");
    let Ok(entries) = std::fs::read_dir(dir) else {
        println!("note: {dir} not found, skipping");
        return;
    };
    let mut checked = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("dmesg") || name.starts_with("kmsg") {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        let head = &data[..data.len().min(64 * 1024)];
        let f = detect(head);
        assert!(!matches!(f, Some(Format::KernelLog | Format::Crash)), "{name} detected as {f:?}");
        checked += 1;
    }
    assert!(checked > 20, "only {checked} captures checked");
}

/// A file of syzkaller's corpus (`report/`, `guilty/`) without its header (up to the first
/// empty line).
fn corpus_log(dir: &str, name: &str) -> Vec<u8> {
    let data = read(&format!("syzkaller/{dir}/{name}"));
    let start = data.windows(2).position(|w| w == b"\n\n").map_or(0, |i| i + 2);
    data[start..].to_vec()
}

fn syzkaller_log(name: &str) -> Vec<u8> {
    corpus_log("report", name)
}

#[test]
fn kasan_allocated_and_freed_stacks() {
    let r = ReportExtractor::extract_all(&syzkaller_log("149"));
    let k = &r[0];
    assert_eq!(k.kind(), Kind::Kasan);
    // The title syzkaller's authors wrote for this log (its `TITLE:`): the work was queued
    // on a freed object by strp_check_rcv; __queue_work only touched it.
    assert_eq!(k.title, "KASAN: use-after-free Read in strp_check_rcv");
    assert_eq!((k.cpu, k.pid, k.comm.as_deref()), (Some(0), Some(12922), Some("syz-executor2")));
    assert_eq!(k.kernel.as_deref(), Some("4.15.0-rc5+"));
    let labels: Vec<&str> = k.extra_stacks.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["Allocated by task 12922:", "Freed by task 12929:"]);
    let alloc: Vec<&str> = k.extra_stacks[0].frames.iter().map(|f| f.function.as_str()).collect();
    assert_eq!(
        alloc,
        [
            "save_stack",
            "kasan_kmalloc",
            "kasan_slab_alloc",
            "kmem_cache_alloc",
            "kcm_ioctl",
            "sock_do_ioctl",
            "sock_ioctl",
            "do_vfs_ioctl",
            "SyS_ioctl",
            "entry_SYSCALL_64_fastpath"
        ]
    );
    assert_eq!(k.extra_stacks[1].frames[3].function, "kcm_unattach");
    assert_eq!(k.frames[0].function, "dump_stack");
}

#[test]
fn rcu_stall_takes_the_stalled_cpus_nmi_backtrace() {
    // The stall is detected on CPU 1 (caller C1), the stalled CPU 0 answers the NMI with its
    // own caller id (C0): its backtrace is the report's main trace, NMI frames marked.
    let r = ReportExtractor::extract_all(&syzkaller_log("718"));
    let s = &r[0];
    assert_eq!(s.kind(), Kind::RcuStall);
    assert_eq!(s.caller.as_deref(), Some("C1"));
    assert_eq!((s.cpu, s.pid, s.comm.as_deref()), (Some(0), Some(5599), Some("syz.0.104")));
    assert_eq!(s.rip.as_deref(), Some("rb_insert_color"));
    assert_eq!(s.frames[0].function, "rb_insert_color");
    let nmi = s.frames.iter().filter(|f| f.section == Section::Nmi).count();
    assert_eq!(nmi, 13, "the ? frames between <NMI> and </NMI>");
    assert!(s.frames.iter().all(|f| f.section != Section::Nmi || f.unreliable));
    let task: Vec<&str> = s
        .frames
        .iter()
        .filter(|f| f.section == Section::Task && !f.unreliable)
        .map(|f| f.function.as_str())
        .skip(1)
        .take(3)
        .collect();
    assert_eq!(task, ["timerqueue_add", "enqueue_hrtimer", "hrtimer_start_range_ns"]);
    assert_eq!(s.extra_stacks[0].label, "RCU grace-period kthread stack dump:");
    assert_eq!(s.extra_stacks[0].frames[0].function, "__schedule");
}

/// The streaming iterator yields what the whole-log extractor does, for every log of the
/// fixture folder and small and large read buffers (lines spanning buffer fills).
#[test]
fn streamed_reports_equal_extract_all() {
    let mut dirs = vec![std::path::PathBuf::from(DATA)];
    let mut logs = 0;
    let mut total = 0;
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let log = std::fs::read(&p).unwrap();
            let want: Vec<String> = ReportExtractor::extract_all(&log).iter().map(Report::to_json).collect();
            for cap in [509, 1 << 16] {
                let mut it = kflame::report::reports(std::io::BufReader::with_capacity(cap, &log[..]));
                let mut got: Vec<Report> = it.by_ref().collect::<Result<_, _>>().unwrap();
                got.sort_by_key(|r| r.line);
                let got: Vec<String> = got.iter().map(Report::to_json).collect();
                assert_eq!(got, want, "{} read {cap} bytes at a time", p.display());
                assert_eq!(it.diagnostics().skipped(), 0);
            }
            logs += 1;
            total += want.len();
        }
    }
    assert!(logs > 50 && total > 50, "{logs} logs, {total} reports");
}

fn guilty_log(name: &str) -> Vec<u8> {
    corpus_log("guilty", name)
}

#[test]
fn a_header_symbolized_once_per_inlining_level_is_one_report() {
    // syzkaller's symbolizer prints a first line whose function was inlined once per level
    // (`BUG: KASAN: use-after-free in atomic_read ... [inline]`, then the next function out,
    // the real one last): 4, 2 and 2 such lines here. Each log holds one report.
    for (name, lines) in [("10", 4), ("13", 2), ("14", 4), ("28", 2), ("52", 2), ("53", 2)] {
        let log = guilty_log(name);
        let text = String::from_utf8_lossy(&log);
        let header = text.lines().find(|l| l.starts_with("BUG: ") || l.starts_with("WARNING: ")).unwrap();
        let stem = &header[..header.find(" in ").or_else(|| header.find(" at ")).unwrap()];
        assert_eq!(text.lines().filter(|l| l.starts_with(stem)).count(), lines, "guilty/{name}");
        let r = ReportExtractor::extract_all(&log);
        let titles: Vec<&str> = r.iter().map(|r| r.title.as_str()).collect();
        assert_eq!(r.len(), 1, "guilty/{name}: {titles:?}");
        // Named by a function of its trace, not the checker's.
        let f = r[0].title.rsplit_once(" in ").map(|(_, f)| f).unwrap_or_else(|| panic!("{titles:?}"));
        assert!(r[0].frames.iter().any(|fr| fr.function == f), "{f}");
        assert!(!f.contains("kasan") && !f.contains("ref_tracker") && !f.contains("spin"), "{f}");
    }
}

#[test]
fn another_tasks_frames_before_the_dump_are_not_the_trace() {
    // Between the KASAN header and its dump (`CPU: 0 PID: 10914 ...`, `Call Trace:`), the
    // console printed the end of another task's trace (`entry_SYSCALL_64_after_hwframe`, a
    // user-mode `RIP: 0033:` and its registers).
    let r = ReportExtractor::extract_all(&guilty_log("39"));
    assert_eq!(r.len(), 1);
    let k = &r[0];
    assert_eq!(k.pid, Some(10914));
    assert_eq!(k.frames[0].function, "__dump_stack");
    let stray: Vec<&str> = k
        .extra_stacks
        .iter()
        .filter(|e| e.label.starts_with("printed before"))
        .flat_map(|e| e.frames.iter().map(|f| f.function.as_str()))
        .collect();
    assert_eq!(stray, ["entry_SYSCALL_64_after_hwframe"]);
    // memcmp and strnstr are library helpers: the caller that compared is named.
    assert_eq!(k.title, "KASAN: global-out-of-bounds Read in __aa_lookupn_ns");
}

#[test]
fn lockdep_sites_printed_per_inlining_level_name_the_real_frame() {
    // `is trying to lock: ... at: spin_lock ... [inline]`, `... at: inode_sb_list_del ...
    // [inline]`, `... at: evict+0x90/0x334`: one site, printed three times. The report is
    // cut by a fault in lockdep's own printing.
    let r = ReportExtractor::extract_all(&guilty_log("55"));
    assert_eq!(r[0].kind(), Kind::Lockdep);
    assert_eq!(r[0].title, "WARNING: nested lock was not taken in evict");
    assert_eq!(r[1].kind(), Kind::PageFault);
}
