//! Live tests of `kflame record`: they run the built binary as root against this kernel.
//! Each test prints why it is skipped when the machine cannot run it (not root, no
//! perf_event_open, no C compiler), and otherwise asserts on what was really recorded.

#![allow(clippy::print_stderr)]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn cpu_profile_of_a_command_is_dominated_by_its_deep_call_chain() {
    let Some(env) = Env::get("cpu profile") else { return };
    let out = env.record(&["-F", "499", "--", env.workload_str(), "cpu", "1.5"], "cpu.folded");
    let stacks = folded(&out);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let chain = "main;kf_deep_1;kf_deep_2;kf_deep_3;kf_deep_4;kf_deep_5;kf_deep_6";
    let in_chain: u64 = stacks.iter().filter(|s| s.0.contains(chain)).map(|s| s.1).sum();
    assert!(total >= 20, "too few samples: {total}\n{out}");
    assert!(in_chain * 10 >= total * 9, "deep chain has {in_chain} of {total} samples:\n{out}");
    assert!(stacks.iter().all(|s| s.0.starts_with("kfwork;")), "only the command is recorded:\n{out}");
    // The unit is said even for sample counts (flamegraph.pl skips the lines).
    assert!(out.starts_with("# unit=samples\n# event=cpu-clock\nkfwork;"), "{out}");
}

#[test]
fn cpu_profile_by_pid_with_pid_in_root_frame() {
    let Some(env) = Env::get("cpu profile by pid") else { return };
    let mut child = Command::new(&env.workload).args(["cpu", "60"]).spawn().expect("start workload");
    let pid = child.id().to_string();
    let out = env.record(&["-F", "199", "-d", "1", "-p", &pid, "--include-pid"], "pid.folded");
    let _ = child.kill();
    let _ = child.wait();
    let stacks = folded(&out);
    let root = format!("kfwork-{pid};");
    assert!(!stacks.is_empty(), "no samples for pid {pid}");
    assert!(stacks.iter().all(|s| s.0.starts_with(&root)), "other processes recorded:\n{out}");
    assert!(stacks.iter().any(|s| s.0.ends_with(";kf_deep_6")), "{out}");
}

/// `-p TID` records the whole process of the thread, as `perf record -p TID` does (perf 6.1
/// reads `/proc/TID/task`: every thread of the process); `-t TID` records that thread alone,
/// as `perf record -t TID`.
#[test]
fn pid_of_a_thread_records_its_process_and_tid_records_the_thread_alone() {
    let Some(env) = Env::get("-p TID / -t TID") else { return };
    let mut child = Command::new(&env.workload)
        .args(["threads", "120"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("workload");
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("the second thread's tid");
    let (pid, tid) = (child.id().to_string(), line.trim().to_string());
    assert_ne!(pid, tid);
    let by_pid = Command::new(env.kflame)
        .args(["record", "-F", "499", "-d", "1", "--include-tid", "-p", &tid])
        .output()
        .expect("run kflame");
    let by_tid = env.record(&["-F", "499", "-d", "1", "--include-tid", "-t", &tid], "tid.folded");
    let _ = child.kill();
    let _ = child.wait();
    let err = String::from_utf8_lossy(&by_pid.stderr);
    assert!(by_pid.status.success(), "{err}");
    assert!(err.contains(&format!("{tid} is a thread of process {pid}")), "{err}");
    let text = String::from_utf8_lossy(&by_pid.stdout);
    let stacks = folded(&text);
    let (main, thread) = (format!("kfwork-{pid}/{pid};"), format!("kfwork-{pid}/{tid};"));
    assert!(stacks.iter().all(|s| s.0.starts_with(&main) || s.0.starts_with(&thread)), "{text}");
    assert!(stacks.iter().any(|s| s.0.starts_with(&main) && s.0.ends_with(";kf_deep_6")), "{text}");
    assert!(stacks.iter().any(|s| s.0.starts_with(&thread) && s.0.contains(";kf_thread_spin")), "{text}");
    let stacks = folded(&by_tid);
    assert!(!stacks.is_empty(), "nothing recorded for -t {tid}");
    assert!(stacks.iter().all(|s| s.0.starts_with(&thread)), "other threads recorded with -t:\n{by_tid}");
    assert!(stacks.iter().any(|s| s.0.contains(";kf_thread_spin")), "{by_tid}");
}

#[test]
fn kernel_only_and_user_only_keep_their_half() {
    let Some(env) = Env::get("kernel/user only") else { return };
    let kernel =
        env.record(&["-F", "499", "--kernel-only", "--", env.workload_str(), "write", "400000"], "k.folded");
    let user = env.record(&["-F", "499", "--user-only", "--", env.workload_str(), "cpu", "1"], "u.folded");
    let k = folded(&kernel);
    assert!(!k.is_empty(), "no kernel samples");
    assert!(k.iter().all(|s| !s.0.contains("kf_")), "user frames in --kernel-only:\n{kernel}");
    assert!(k.iter().any(|s| s.0.contains("entry_SYSCALL_64")), "{kernel}");
    let u = folded(&user);
    assert!(!u.is_empty(), "no user samples");
    assert!(u.iter().all(|s| !s.0.contains("entry_SYSCALL_64") && !s.0.contains("asm_sysvec")), "{user}");
    assert!(u.iter().any(|s| s.0.ends_with("kf_deep_6")), "{user}");
}

/// A program built without frame pointers: its callers are found by DWARF unwinding (the
/// default for CPU samples) through its own and the C library's tables, and lost by the
/// frame-pointer walk; a copy too small for the stack ends it with a marker, said in a note.
#[test]
fn user_stacks_without_frame_pointers() {
    let Some(env) = Env::get("user stacks without frame pointers") else { return };
    let nofp = env.nofp();
    let share = |text: &str| {
        let stacks = folded(text);
        let hot: Vec<&(String, u64)> = stacks.iter().filter(|s| s.0.ends_with(";kfbar_inner")).collect();
        let total: u64 = hot.iter().map(|s| s.1).sum();
        let full: u64 =
            hot.iter().filter(|s| s.0.ends_with(";main;kfbar_outer;kfbar_inner")).map(|s| s.1).sum();
        (full, total)
    };
    let (dwarf, stderr) = env.record_with_stderr(&["-F", "499", "--", &nofp, "2"], "dwarf.folded");
    let (full, total) = share(&dwarf);
    assert!(total >= 100 && full * 10 >= total * 9, "{full} of {total} with the whole chain:\n{dwarf}");
    // Through the C library's tables to the program's entry point.
    assert!(
        dwarf.contains("nofp;_start;") && dwarf.contains("__libc_start_call_main;main;kfbar_outer"),
        "{dwarf}"
    );
    assert!(stderr.contains("unwound from 8192-byte stack copies"), "{stderr}");
    let (fp, _) = env.record_with_stderr(&["-F", "499", "--call-graph", "fp", "--", &nofp, "1"], "fp.folded");
    let (full, total) = share(&fp);
    assert!(total >= 50 && full * 10 < total, "frame pointers found {full} of {total} whole chains:\n{fp}");
    let args = ["-F", "499", "--call-graph", "dwarf,16", "--", &nofp, "1"];
    let (short, stderr) = env.record_with_stderr(&args, "short.folded");
    let ended: u64 =
        folded(&short).iter().filter(|s| s.0.starts_with("nofp;[stack copy ended];")).map(|s| s.1).sum();
    let total: u64 = folded(&short).iter().map(|s| s.1).sum();
    assert!(ended * 10 >= total * 9, "{ended} of {total} end at the copy:\n{short}");
    assert!(
        stderr.contains("deeper than the stack copy") && stderr.contains("--call-graph dwarf,SIZE"),
        "{stderr}"
    );
}

/// JIT code (V8's, in anonymous memory, named in `/tmp/perf-PID.map`) under DWARF unwinding:
/// walked by its frame pointers, named from the perf map, with the interpreter's C++ frames
/// (found through their unwind tables) below it. Skipped without node.
#[test]
fn jit_frames_are_named_from_the_perf_map() {
    let Some(env) = Env::get("jit frames") else { return };
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipping jit frames: no node");
        return;
    }
    let js = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/perf-data/jit.js");
    let (out, _) =
        env.record_with_stderr(&["-F", "499", "--", "node", "--perf-basic-prof", js, "30000"], "jit.folded");
    let stacks = folded(&out);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let js: u64 = stacks
        .iter()
        .filter(|s| {
            s.0.contains(";JS:") && s.0.contains(";Builtins_JSEntry;") && s.0.contains(";node::Start;")
        })
        .map(|s| s.1)
        .sum();
    assert!(
        total >= 100 && js * 2 >= total,
        "{js} of {total} samples in named JIT code under node::Start:\n{out}"
    );
}

/// perf's `--call-graph` words; anything else is refused before recording.
#[test]
fn call_graph_values_are_checked() {
    for (arg, says) in [
        ("dwarf,abc", "not a number of bytes"),
        ("dwarf,70000", "8 to 65528 bytes"),
        ("lbr", "expected fp, dwarf or dwarf,SIZE"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
            .args(["record", "--call-graph", arg, "-d", "1"])
            .output()
            .expect("kflame");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{arg}: {stderr}");
    }
}

#[test]
fn json_events_have_one_line_per_sample() {
    let Some(env) = Env::get("json events") else { return };
    let out = env.record(&["-F", "299", "--", env.workload_str(), "cpu", "1"], "cpu.json");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() >= 10, "{out}");
    for l in &lines {
        // The schema of every kflame event stream: ts, cpu, pid, comm, duration_ns, stack, event,
        // weight (one sample each here).
        assert!(l.starts_with("{\"ts\":") && l.ends_with(",\"weight\":1}"), "{l}");
        assert!(l.contains(",\"stack\":[\"kfwork\","), "{l}");
        assert!(l.contains("\"comm\":\"kfwork\"") && l.contains("\"event\":\"cpu-clock\""), "{l}");
        assert!(l.contains("\"duration_ns\":") && !l.contains("\"duration_ns\":null"), "{l}");
    }
    assert!(lines.iter().any(|l| l.contains("\"kf_deep_5\",\"kf_deep_6\"")), "{out}");
}

#[test]
fn mem_counts_at_least_the_pages_the_workload_touches() {
    let Some(env) = Env::get("--mem") else { return };
    let pages: u64 = 4096; // 16 MiB
    let out = env.record(&["--mem", "--", env.workload_str(), "mem", &pages.to_string()], "mem.folded");
    assert!(out.starts_with("# unit=bytes\n# event=kmem:mm_page_alloc\n"), "{out}");
    let touched: u64 = folded(&out).iter().filter(|s| s.0.contains("kf_touch_pages")).map(|s| s.1).sum();
    assert!(
        touched >= pages * 4096,
        "kf_touch_pages allocated {touched} bytes, expected >= {}",
        pages * 4096
    );
    assert!(touched <= pages * 4096 * 2, "kf_touch_pages allocated {touched} bytes, far more than touched");
}

/// 50 naps of 20 ms, each followed by 5 ms on the CPU, timed by the workload itself with
/// CLOCK_MONOTONIC (the clock of the recording's time stamps), with the kernel's own
/// accounting of each: the ns it was neither running nor runnable, its voluntary switches.
///
/// Each nap that blocked must give exactly one blocked interval, inside the nap: nothing is
/// over-counted (an interval closed at the task's next switch-out instead of its switch-in
/// would run 5 ms past its nap). Together they must cover at least 98% of the time the kernel
/// says the naps were blocked: the bracket's time on the CPU and on a run queue is not blocked
/// time, so a preempted nap lowers both sides alike.
#[test]
fn off_cpu_blocked_time_is_the_time_each_nap_slept() {
    let Some(env) = Env::get("--off-cpu") else { return };
    let (json, naps) = record_naps(&env, 50, "off.json");
    assert_eq!(naps.len(), 50);
    let mut blocked: Vec<(u64, u64)> = json
        .lines()
        .filter(|l| l.contains("\"kf_nap_timed\""))
        .map(|l| (json_ts(l).expect("ts"), json_u64(l, "duration_ns").expect("duration_ns")))
        .collect();
    blocked.sort_unstable();
    each_interval_inside_a_nap(&naps, &blocked, &json);
    let (slept, waited) = nap_totals(&naps);
    let counted: u64 = blocked.iter().map(|b| b.1).sum();
    assert!(
        counted <= slept && counted * 100 >= waited * 98,
        "blocked {counted} ns of the {waited} ns the naps were blocked ({slept} ns of naps)"
    );
    // The stack where it blocked: the workload's function, the system call, the scheduler.
    let line = json.lines().find(|l| l.contains("\"kf_nap_timed\"")).unwrap_or_default();
    let call =
        ["main", "kf_nap_timed", "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_nanosleep"];
    let call = call.map(|f| format!("\"{f}\"")).join(",");
    assert!(line.contains(&call) && line.contains("\"do_nanosleep\",\"schedule\""), "{line}");

    // The folded output: nanoseconds, the same bounds in total.
    let (folded_out, naps) = record_naps(&env, 10, "off.folded");
    assert!(folded_out.starts_with("# unit=ns\n# event=sched:sched_switch\n"), "{folded_out}");
    let (slept, waited) = nap_totals(&naps);
    let napped: u64 = folded(&folded_out).iter().filter(|s| is_nap(&s.0)).map(|s| s.1).sum();
    assert!(
        napped <= slept && napped * 100 >= waited * 98,
        "kf_nap_timed blocked {napped} ns of {waited} ns ({slept} ns of naps)"
    );
}

/// The two off-CPU paths, BPF (summed in the kernel) and perf events (paired here), give the
/// same stacks and the same totals for the same naps: each at least 98% of the time the kernel
/// says the naps were blocked, and their shares of the time the naps that blocked were off the
/// CPU (blocked, then runnable until they ran: what an off-CPU profile counts, whatever the
/// machine's load) within 3% of each other.
#[test]
fn off_cpu_paths_give_the_same_totals() {
    let Some(env) = Env::get("--off-cpu --via") else { return };
    let mut totals = Vec::new();
    let mut stacks = Vec::new();
    for via in ["bpf", "perf"] {
        let args = ["--off-cpu", "--via", via, "--", env.workload_str(), "naptimed", "25", "20", "2"];
        let (out, stdout) = env.record_with_stdout(&args, &format!("paths-{via}.folded"));
        let naps = nap_brackets(&stdout);
        assert_eq!(naps.len(), 25);
        let (slept, waited) = nap_totals(&naps);
        let mine: Vec<(String, u64)> = folded(&out).into_iter().filter(|s| is_nap(&s.0)).collect();
        let napped: u64 = mine.iter().map(|s| s.1).sum();
        assert!(
            napped <= slept && napped * 100 >= waited * 98,
            "{via}: kf_nap_timed blocked {napped} ns of {waited} ns ({slept} ns of naps)"
        );
        let off: u64 = naps.iter().filter(|n| n.blocks > 0).map(|n| n.off).sum();
        totals.push(napped as f64 / off as f64);
        let mut lines: Vec<String> = mine.into_iter().map(|s| s.0).collect();
        lines.sort();
        stacks.push(lines);
    }
    assert_eq!(stacks[0], stacks[1], "the same stacks on both paths");
    let (a, b) = (totals[0], totals[1]);
    assert!(
        (a - b).abs() <= 0.03 * a.max(b),
        "shares {a} (bpf) and {b} (perf) of the naps' time off the CPU differ by more than 3%"
    );
}

/// `--wakers`: a thread blocked on a pipe that another writes every 10 ms has at least 80% of
/// its blocked time under that writer's function, folded as bcc's offwaketime folds it (the
/// reader's stack root first, `--`, the writer's stack leaf first, the writer's name).
#[test]
fn wakers_put_a_pipe_readers_wait_under_its_writer() {
    let Some(env) = Env::get("--off-cpu --wakers") else { return };
    let out = env
        .record(&["--off-cpu", "--wakers", "--", env.workload_str(), "wakers", "100", "10"], "wakers.folded");
    assert!(out.starts_with("# unit=ns\n# event=sched:sched_switch+sched:sched_waking\n"), "{out}");
    let reader: Vec<(String, u64)> =
        folded(&out).into_iter().filter(|s| s.0.contains(";kf_pipe_reader;")).collect();
    let total: u64 = reader.iter().map(|s| s.1).sum();
    let woken: u64 = reader
        .iter()
        .filter(|s| s.0.split_once(";--;").is_some_and(|(_, waker)| waker.contains(";kf_pipe_writer;")))
        .map(|s| s.1)
        .sum();
    assert!(total >= 900_000_000, "100 waits of 10 ms: {total} ns\n{out}");
    assert!(woken * 10 >= total * 8, "{woken} of {total} ns under the writer\n{out}");
    let line = &reader.iter().max_by_key(|s| s.1).expect("the reader's waits").0;
    let (blocked, waker) = line.split_once(";--;").expect("a separator");
    assert!(
        blocked.starts_with("kfwork;") && blocked.ends_with(";anon_pipe_read;schedule;__schedule"),
        "{line}"
    );
    assert!(waker.starts_with("try_to_wake_up;") && waker.contains(";anon_pipe_write;"), "{line}");
    assert!(waker.ends_with(";kf_pipe_writer;main;__libc_start_call_main;kfwork"), "{line}");
}

/// `--state D` keeps uninterruptible waits only: naps (S) are left out; `--min-block` leaves
/// out blocks shorter than it.
#[test]
fn off_cpu_state_and_length_filters() {
    let Some(env) = Env::get("--off-cpu --state") else { return };
    for via in ["bpf", "perf"] {
        // The naps' blocked time (in nanosleep, state S) with `filter`, and the naps.
        let naps = |filter: &[&str], name: &str| -> (u64, Vec<Nap>) {
            let mut args = vec!["--off-cpu", "--via", via];
            args.extend_from_slice(filter);
            args.extend_from_slice(&["--", env.workload_str(), "naptimed", "5", "20", "1"]);
            let (out, stdout) = env.record_with_stdout(&args, &format!("{name}-{via}.folded"));
            (folded(&out).iter().filter(|s| is_nap(&s.0)).map(|s| s.1).sum(), nap_brackets(&stdout))
        };
        assert_eq!(naps(&["--state", "D"], "state-d").0, 0, "{via}: a sleep (S) counted as D");
        // A block runs from the switch out to the switch in, the wait for a CPU after the
        // wakeup included: on a loaded machine a 20 ms nap now and then leaves the CPU for
        // 50 ms or more. Only such naps (their brackets that long) may be kept.
        let (kept, all) = naps(&["--min-block", "50ms"], "min-block");
        let long: u64 = all.iter().map(|n| n.end - n.start).filter(|&d| d >= 50_000_000).sum();
        assert!(kept <= long, "{via}: {kept} ns of 20 ms naps kept with --min-block 50ms: {all:?}");
        // Every nap the kernel saw blocked in one piece for 10 ms or more is kept.
        let (kept, all) = naps(&["--min-block", "10ms"], "min-block-kept");
        let long: u64 =
            all.iter().filter(|n| n.blocks == 1 && n.waited >= 10_000_000).map(|n| n.waited).sum();
        assert!(
            long >= 10_000_000 && kept * 100 >= long * 98,
            "{via}: {kept} ns kept of 20 ms naps blocked {long} ns for 10 ms or more: {all:?}"
        );
    }
}

/// `--locks`: eight threads mapping and unmapping memory wait on their address space's lock
/// (mmap_lock, an rwsem) under their own function, the lock's kind as the leaf frame.
#[test]
fn locks_show_mmap_lock_waits_under_the_mappers_function() {
    let Some(env) = Env::get("--locks") else { return };
    let out = env.record(&["--locks", "--", env.workload_str(), "mappers", "8", "1"], "locks.folded");
    assert!(out.starts_with("# unit=ns\n# event=lock:contention_begin+lock:contention_end\n"), "{out}");
    let stacks = folded(&out);
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let mine: u64 = stacks
        .iter()
        .filter(|s| {
            s.0.contains(";kf_map_unmap;") && (s.0.ends_with(";[rwsem:W]") || s.0.ends_with(";[rwsem:R]"))
        })
        .map(|s| s.1)
        .sum();
    assert!(
        total > 0 && mine * 10 >= total * 8,
        "{mine} of {total} ns under kf_map_unmap with an rwsem frame\n{out}"
    );
    assert!(
        stacks
            .iter()
            .any(|s| s.0.contains(";kf_map_unmap;") && s.0.contains("munmap") && s.0.ends_with(";[rwsem:W]")),
        "munmap's write-lock waits\n{out}"
    );
}

/// `--runq`: three threads spinning on CPU 0 wait on its run queue (each runs a third of
/// the time at best), under the function they spin in; the JSON events end with CPU 0's
/// latency histogram, whose sum is the time waited there.
#[test]
fn runq_shows_a_crowded_cpu() {
    let Some(env) = Env::get("--runq") else { return };
    let json = env.record(&["--runq", "--", env.workload_str(), "crowd", "3", "0.6"], "runq.json");
    let waited: u64 = json
        .lines()
        .filter(|l| l.contains("\"kf_crowd_spin\"") && l.contains("\"cpu\":0,"))
        .filter_map(|l| json_u64(l, "weight"))
        .sum();
    // 3 threads for 0.6 s on one CPU: about 1.2 s runnable and not running between them.
    assert!(waited >= 600_000_000, "{waited} ns waited on CPU 0's run queue\n{json}");
    let hist = json
        .lines()
        .find(|l| l.starts_with("{\"histogram\":\"runq\",\"label\":\"cpu0\","))
        .expect("CPU 0's histogram");
    let sum = json_u64(hist, "sum_ns").expect("sum_ns");
    assert!(sum >= 600_000_000, "{hist}");
    assert!(json_u64(hist, "count").is_some_and(|n| n > 0), "{hist}");
}

/// `--bio`: direct writes of dd wait on the disk of their file, under dd's write path, the
/// disk as the root frame.
#[test]
fn bio_shows_direct_writes_under_their_submitter() {
    let Some(env) = Env::get("--bio") else { return };
    // On a disk (the temporary directory may be a tmpfs elsewhere).
    let file = std::path::PathBuf::from(format!("/var/tmp/kflame-bio-test-{}", std::process::id()));
    let of = format!("of={}", file.display());
    let args =
        ["--bio", "--", "dd", "if=/dev/zero", &of, "bs=4k", "count=500", "oflag=direct", "status=none"];
    let out = env.record(&args, "bio.folded");
    let _ = std::fs::remove_file(&file);
    let dd: Vec<(String, u64)> =
        folded(&out).into_iter().filter(|s| s.0.contains(";dd;") && s.0.contains("write")).collect();
    assert!(!dd.is_empty(), "{out}");
    let disk = dd[0].0.split(';').next().unwrap_or_default().to_string();
    assert!(
        std::path::Path::new(&format!("/sys/block/{disk}")).exists(),
        "root frame {disk} is a disk\n{out}"
    );
    assert!(dd.iter().any(|s| s.0.contains("submit_bio")), "{out}");
}

/// Where BPF is refused (here: an unprivileged user), `--off-cpu` says so and why and falls
/// back to perf events (refused too, for system-wide events: exit 1 with perf's reason);
/// `--locks`, which has no other path, says so and exits 1; `--via bpf` does not fall back.
#[test]
fn without_bpf_each_mode_says_which_path_and_why() {
    let Some(env) = Env::get("BPF refused") else { return };
    // The binary where that user can reach it (the checkout may be in a private directory).
    let dir = std::env::temp_dir().join(format!("kflame-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the binary");
    let exe = dir.join("kflame");
    if std::fs::hard_link(env.kflame, &exe).is_err() {
        std::fs::copy(env.kflame, &exe).expect("a copy of the binary");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let exe = exe.to_str().expect("utf-8 path");
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", exe, "record", "-d", "1", "-o", "-"];
    let run = |mode: &[&str]| {
        let o = Command::new("setpriv").args(nobody).args(mode).output().expect("setpriv");
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (code, err) = run(&["--off-cpu"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("offcpu: BPF is not available (") && err.contains("CAP_BPF"), "{err}");
    assert!(err.contains("recording through perf events"), "{err}");
    let (code, err) = run(&["--locks"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("locks: BPF is not available here") && err.contains("this recording needs it"),
        "{err}"
    );
    let (code, err) = run(&["--off-cpu", "--via", "bpf"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("recording through perf events"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A nap's block: in nanosleep, called from kf_nap_timed (which also prints, and may block
/// there on a loaded machine: a page fault, a full pipe).
fn is_nap(stack: &str) -> bool {
    stack.contains(";kf_nap_timed;") && stack.contains(";do_nanosleep;")
}

/// `kflame record --off-cpu` of `count` timed naps of 20 ms with 5 ms on the CPU after each:
/// the output and each nap's (start, end) as the workload timed it.
fn record_naps(env: &Env, count: u32, name: &str) -> (String, Vec<Nap>) {
    let count = count.to_string();
    let args = ["--off-cpu", "--", env.workload_str(), "naptimed", &count, "20", "5"];
    let (out, stdout) = env.record_with_stdout(&args, name);
    (out, nap_brackets(&stdout))
}

/// One nap as the workload timed it and as the kernel accounted for it.
#[derive(Clone, Copy, Debug)]
struct Nap {
    /// CLOCK_MONOTONIC ns before and after the `nanosleep`.
    start: u64,
    end: u64,
    /// ns of the bracket the thread was neither on the CPU nor runnable: its blocked time.
    waited: u64,
    /// Voluntary context switches in the bracket: 1 for a nap that blocked; 0 when the thread
    /// was preempted as it went to sleep and stayed runnable until its timer fired (a loaded
    /// machine does that now and then), so that the nap never blocked.
    blocks: u64,
    /// ns of the bracket the thread was not on the CPU: blocked, or runnable (after its timer
    /// fired, until it ran again, which is part of what off-CPU profiles count).
    off: u64,
}

/// The `START END WAITED BLOCKS OFF` lines the workload prints for its naps.
fn nap_brackets(stdout: &str) -> Vec<Nap> {
    stdout
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ').map(|x| x.parse::<u64>().ok());
            let nap = Nap {
                start: f.next()??,
                end: f.next()??,
                waited: f.next()??,
                blocks: f.next()??,
                off: f.next()??,
            };
            f.next().is_none().then_some(nap)
        })
        .collect()
}

/// Each blocked interval `(ts, ns)` lies inside a nap that blocked, and the naps that blocked
/// have as many intervals as voluntary switches.
fn each_interval_inside_a_nap(naps: &[Nap], blocked: &[(u64, u64)], all: &str) {
    let want: u64 = naps.iter().map(|n| n.blocks).sum();
    assert_eq!(
        blocked.len() as u64,
        want,
        "one blocked interval per voluntary switch of the naps {naps:?}:\n{all}"
    );
    for &(ts, ns) in blocked {
        let nap = naps.iter().find(|n| n.start <= ts && ts + ns <= n.end);
        assert!(
            nap.is_some_and(|n| n.blocks > 0),
            "blocked {ts}+{ns} ns outside the naps that blocked {naps:?}"
        );
    }
}

/// The naps' wall time and the kernel's blocked time of them.
fn nap_totals(naps: &[Nap]) -> (u64, u64) {
    (naps.iter().map(|n| n.end - n.start).sum(), naps.iter().map(|n| n.waited).sum())
}

/// An unsigned integer field of a JSON event line.
fn json_u64(line: &str, key: &str) -> Option<u64> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let digits: String = line[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn syscalls_pairs_every_write_of_the_workload() {
    let Some(env) = Env::get("--syscalls") else { return };
    let out = env.record(&["--syscalls", "--", env.workload_str(), "write", "2000"], "sys.json");
    let writes = out
        .lines()
        .filter(|l| l.contains("\"stack\":[\"write\",\"kfwork\"") && l.contains("\"kf_writer\""))
        .count();
    assert_eq!(writes, 2000, "paired write calls from kf_writer");
    let folded_out = env.record(&["--syscalls", "--", env.workload_str(), "write", "100"], "sys.folded");
    assert!(folded_out.starts_with("# unit=ns\n"), "{folded_out}");
    assert!(
        folded(&folded_out).iter().any(|s| s.0.starts_with("write;kfwork;") && s.0.contains("kf_writer"))
    );
}

#[test]
fn blocked_shows_a_task_sleeping_on_a_pipe() {
    let Some(env) = Env::get("--blocked") else { return };
    let mut child = Command::new(&env.workload).arg("pipe").stdin(Stdio::piped()).spawn().expect("workload");
    assert!(wait_reading(child.id()), "the workload blocks reading its input");
    let out = env.record(&["--blocked", "--include-pid"], "blocked.folded");
    drop(child.stdin.take());
    let _ = child.wait();
    let root = format!("state:S;kfwork-{};", child.id());
    let mine: Vec<_> = folded(&out).into_iter().filter(|s| s.0.starts_with(&root)).collect();
    assert_eq!(mine.len(), 1, "{out}");
    assert!(mine[0].0.contains("pipe_read") && mine[0].0.contains("ksys_read"), "{}", mine[0].0);
}

#[test]
fn blocked_lists_a_writer_stuck_on_a_frozen_filesystem_in_d_state_first() {
    let Some(env) = Env::get("--blocked D state") else { return };
    let Some(fs) = FrozenFs::new(&env) else { return };
    let mut writer = Command::new("sh")
        .args(["-c", &format!("echo data > {}/file", fs.mnt.display())])
        .spawn()
        .expect("writer");
    let deadline = Instant::now() + Duration::from_secs(5);
    while task_state(writer.id()) != Some('D') && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = env.record(&["--blocked", "--include-pid"], "d.folded");
    fs.thaw();
    let _ = writer.wait();
    let root = format!("state:D;sh-{};", writer.id());
    let first = out.lines().find(|l| !l.starts_with('#')).unwrap_or_default();
    assert!(first.starts_with("state:D;"), "D-state tasks come first:\n{out}");
    let line = out.lines().find(|l| l.starts_with(&root)).unwrap_or_else(|| panic!("no {root} in\n{out}"));
    assert!(line.contains("percpu_rwsem_wait") || line.contains("sb_start_write"), "{line}");
}

#[test]
fn sigint_mid_recording_leaves_tracing_state_untouched() {
    let Some(env) = Env::get("teardown on SIGINT") else { return };
    let w = env.workload_str();
    // System-wide tracepoint sessions, commands still running when the signal comes, and
    // every mode at once (one file each).
    let every_mode = ["cpu", "mem", "offcpu", "syscalls", "blocked"];
    let bpf_modes = ["offcpu", "locks", "runq", "bio"];
    let runs: [(&[&str], &str, &[&str]); 6] = [
        // Every BPF program at once: none left loaded after the signal.
        (
            &["--off-cpu", "--wakers", "--locks", "--runq", "--bio", "-a", "--", w, "mappers", "4", "30"],
            "INT",
            &bpf_modes,
        ),
        (&["--syscalls"], "INT", &[""]),
        (&["--off-cpu", "-a"], "TERM", &[""]),
        (&["--mem", "--", w, "churn", "30"], "INT", &[""]),
        (&["-F", "997", "--", w, "cpu", "30"], "TERM", &[""]),
        (
            &["--cpu", "--mem", "--off-cpu", "--syscalls", "--blocked", "-a", "--", w, "churn", "31"],
            "INT",
            &every_mode,
        ),
    ];
    // Naps and their system calls all along: the system-wide runs have these to record on a
    // machine that is otherwise quiet (churn, the every-mode run's command, never blocks).
    let _napper = Reaped(Command::new(&env.workload).args(["nap", "1000000", "10"]).spawn().expect("napper"));
    for (args, signal, outputs) in runs {
        let before = TracingState::read();
        let mounts_before = tracefs_mounts();
        let path = env.dir.join(format!("teardown-{}.folded", args[0].trim_start_matches('-')));
        let mut rec = Command::new(env.kflame)
            .args(["record", "-o"])
            .arg(&path)
            .args(args)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kflame");
        // Its handlers are installed once its BPF programs are loaded (a signal before that
        // ends it as without a handler, with nothing set up yet); then it records a while.
        let ready = wait_until(Duration::from_secs(60), || handles_int_and_term(rec.id()));
        assert!(ready, "{args:?}: no SIGINT and SIGTERM handlers within 60 s");
        std::thread::sleep(Duration::from_millis(1500));
        let programs = bpf_programs_of(rec.id());
        let killed = Command::new("kill").args([&format!("-{signal}"), &rec.id().to_string()]).status();
        assert!(killed.is_ok_and(|s| s.success()));
        let status = wait_timeout(&mut rec, Duration::from_secs(60)).expect("kflame stops after a signal");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut rec.stderr.take().expect("stderr"), &mut err).ok();
        assert!(status.success(), "{args:?} SIG{signal}: {status:?}\n{err}");
        assert!(err.contains("recorded "), "{err}");
        for mode in outputs {
            let path = match *mode {
                "" => path.clone(),
                m => path.with_extension(format!("{m}.folded")),
            };
            let text = std::fs::read_to_string(&path).expect("output written after the signal");
            // Block IO may be quiet for 1.5 s; every other mode has something.
            assert!(
                *mode == "bio" || text.lines().filter(|l| !l.starts_with('#')).count() > 0,
                "{args:?} {mode}: empty output"
            );
        }
        if args.contains(&"--bio") {
            assert!(programs.len() >= 10, "{args:?}: the BPF programs it held: {programs:?}");
        }
        let gone = wait_until(Duration::from_secs(10), || programs.iter().all(|id| !bpf_program_exists(*id)));
        assert!(gone, "{args:?}: BPF programs left loaded after the signal: {programs:?}");
        assert_eq!(TracingState::read(), before, "{args:?}: tracefs state changed");
        assert_eq!(tracefs_mounts(), mounts_before, "{args:?}: a tracefs mount was left behind");
        let own = format!("kflame-tracefs-{} ", rec.id());
        let left: Vec<String> = private_tracefs_mounts().into_iter().filter(|m| m.contains(&own)).collect();
        assert!(left.is_empty(), "{args:?}: its private tracefs mount was left behind: {left:?}");
        if let Some(at) = args.iter().position(|a| *a == "--") {
            let command_line = args[at + 1..].join(" ");
            let children = Command::new("pgrep").args(["-f", &command_line]).output().expect("pgrep");
            assert!(children.stdout.is_empty(), "{args:?}: the recorded command was left running");
        }
    }
}

/// The ids of the BPF programs process `pid` holds (its descriptors' `prog_id`).
fn bpf_programs_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return Vec::new() };
    let mut ids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|info| info.lines().find_map(|l| l.strip_prefix("prog_id:")?.trim().parse().ok()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// True while the kernel has a BPF program of this id (`bpftool prog show id N`).
fn bpf_program_exists(id: u32) -> bool {
    Command::new("bpftool")
        .args(["prog", "show", "id", &id.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Polls `done` every 50 ms until it holds or `limit` passed; whether it held.
fn wait_until(limit: Duration, done: impl Fn() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// True when process `pid` catches SIGINT and SIGTERM (`SigCgt` of its status).
fn handles_int_and_term(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let caught = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let bit = |sig: i32| 1u64 << (sig - 1);
    caught & bit(2) != 0 && caught & bit(15) != 0 // SIGINT, SIGTERM
}

/// The tracefs mounts, but for the private ones of other tests' recorders running meanwhile
/// (`kflame-tracefs-PID`, mounted when the system's is not).
fn tracefs_mounts() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter(|l| {
            l.contains("tracefs") && !l.contains("kflame-test-tracefs") && !l.contains("kflame-tracefs-")
        })
        .map(str::to_string)
        .collect()
}

/// The private tracefs mounts of recorders (`kflame-tracefs-PID`).
fn private_tracefs_mounts() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().filter(|l| l.contains("kflame-tracefs-")).map(str::to_string).collect()
}

#[test]
fn duty_cycle_records_only_inside_its_windows() {
    let Some(env) = Env::get("--mem duty cycle") else { return };
    let args = ["--mem", "--every", "1", "--for", "0.25", "--", env.workload_str(), "churn", "3.3"];
    let out = env.record(&args, "duty.json");
    let mut ts: Vec<u64> = out.lines().filter(|l| l.contains("\"kf_churn\"")).filter_map(json_ts).collect();
    ts.sort_unstable();
    // Split the allocation events into bursts separated by more than 0.4 s of silence.
    let mut bursts: Vec<(u64, u64)> = Vec::new();
    for t in ts {
        match bursts.last_mut() {
            Some(b) if t - b.1 < 400_000_000 => b.1 = t,
            _ => bursts.push((t, t)),
        }
    }
    assert!(bursts.len() >= 3, "expected one burst per period, got {bursts:?}");
    for b in &bursts {
        assert!(b.1 - b.0 <= 350_000_000, "a burst lasted {} ns, the window is 0.25 s", b.1 - b.0);
    }
    // Bursts start one period apart (or several, if a loaded machine kept the workload off
    // the CPU for a whole window).
    for w in bursts.windows(2) {
        let apart = w[1].0 - w[0].0;
        let periods = (apart + 500_000_000) / 1_000_000_000;
        let off = apart.abs_diff(periods * 1_000_000_000);
        assert!(periods >= 1 && off <= 300_000_000, "bursts {apart} ns apart, the period is 1 s");
    }
}

/// CPU samples, page allocations, off-CPU time and system calls of one command, recorded in
/// one run into one file per mode, each as right as when recorded alone: the deep call chain
/// on the CPU, at least the bytes the workload touched, one blocked interval inside each nap,
/// every write paired.
#[test]
fn cpu_mem_off_cpu_and_syscalls_in_one_run_one_file_each() {
    let Some(env) = Env::get("several modes at once") else { return };
    let pages: u64 = 2048;
    let w = env.workload_str();
    let script = format!("{w} cpu 0.5 && {w} mem {pages} && {w} naptimed 10 20 5 && {w} write 500");
    let base = env.dir.join("all.json");
    let out = Command::new(env.kflame)
        .args(["record", "--cpu", "--mem", "--off-cpu", "--syscalls", "-F", "499", "-o"])
        .arg(&base)
        .args(["--", "sh", "-c", &script])
        .output()
        .expect("run kflame");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let read = |mode: &str| {
        let path = env.dir.join(format!("all.{mode}.json"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}\n{err}", path.display()))
    };
    for mode in ["cpu", "mem", "offcpu", "syscalls"] {
        assert!(err.contains(&format!("{mode}: recorded ")), "{err}");
    }

    let cpu = read("cpu");
    assert!(cpu.lines().all(|l| l.contains("\"event\":\"cpu-clock\"")), "{cpu}");
    assert!(cpu.lines().filter(|l| l.contains("\"kf_deep_5\",\"kf_deep_6\"")).count() >= 20, "{cpu}");

    let mem = read("mem");
    let touched: u64 =
        mem.lines().filter(|l| l.contains("\"kf_touch_pages\"")).filter_map(|l| json_u64(l, "weight")).sum();
    // Every touched page was allocated once, unless the kernel dropped records on a loaded
    // machine, which the recorder must then have said.
    let dropped = err.contains("the kernel dropped");
    assert!(
        (touched >= pages * 4096 || dropped) && touched <= pages * 4096 * 2,
        "kf_touch_pages allocated {touched} bytes for {pages} pages touched\n{err}"
    );
    assert!(mem.lines().all(|l| l.contains("\"event\":\"kmem:mm_page_alloc\"")));

    let naps = nap_brackets(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(naps.len(), 10);
    let off = read("offcpu");
    let mut blocked: Vec<(u64, u64)> = off
        .lines()
        .filter(|l| l.contains("\"kf_nap_timed\""))
        .map(|l| (json_ts(l).expect("ts"), json_u64(l, "duration_ns").expect("duration_ns")))
        .collect();
    blocked.sort_unstable();
    each_interval_inside_a_nap(&naps, &blocked, &off);

    let sys = read("syscalls");
    let writes = sys
        .lines()
        .filter(|l| l.contains("\"stack\":[\"write\",\"kfwork\"") && l.contains("\"kf_writer\""))
        .count();
    assert_eq!(writes, 500, "paired write calls from kf_writer");
}

/// `--blocked --every`: a snapshot every 0.2 s for a second, aggregated. A task asleep on a
/// pipe the whole time is in every snapshot, so its stack weighs the number of snapshots.
#[test]
fn blocked_every_aggregates_repeated_snapshots() {
    let Some(env) = Env::get("--blocked --every") else { return };
    let mut child = Command::new(&env.workload).arg("pipe").stdin(Stdio::piped()).spawn().expect("workload");
    assert!(wait_reading(child.id()), "the workload blocks reading its input");
    let out =
        env.record(&["--blocked", "--every", "0.2", "-d", "1", "--include-pid"], "blocked-every.folded");
    let json =
        env.record(&["--blocked", "--every", "0.2", "-d", "0.5", "--include-pid"], "blocked-every.json");
    drop(child.stdin.take());
    let _ = child.wait();
    assert!(out.starts_with("# unit=task-snapshots\n"), "{out}");
    let root = format!("state:S;kfwork-{};", child.id());
    let mine: Vec<_> = folded(&out).into_iter().filter(|s| s.0.starts_with(&root)).collect();
    assert_eq!(mine.len(), 1, "{out}");
    assert!(mine[0].0.contains("pipe_read"), "{}", mine[0].0);
    // Snapshots at 0, 0.2, ... 0.8 s, maybe one at 1.0 s before the loop sees the end; one
    // fewer if a loaded machine delayed one past the next (missed periods are skipped).
    assert!((4..=6).contains(&mine[0].1), "in {} snapshots", mine[0].1);
    let pid = format!("\"pid\":{},", child.id());
    let mut times: Vec<u64> = json.lines().filter(|l| l.contains(&pid)).filter_map(json_ts).collect();
    times.dedup();
    assert!((2..=4).contains(&times.len()), "snapshot times {times:?}");
    // One period apart (or several, if one was skipped).
    for w in times.windows(2) {
        let apart = w[1] - w[0];
        let periods = (apart + 100_000_000) / 200_000_000;
        let off = apart.abs_diff(periods * 200_000_000);
        assert!(periods >= 1 && off <= 100_000_000, "snapshots {apart} ns apart, every 0.2 s asked");
    }
}

/// `--blocked` with another mode: one snapshot of every task when recording stops, next to
/// the other mode's output.
#[test]
fn blocked_with_another_mode_takes_its_snapshot_at_the_end() {
    let Some(env) = Env::get("--blocked with --off-cpu") else { return };
    let mut child = Command::new(&env.workload).arg("pipe").stdin(Stdio::piped()).spawn().expect("workload");
    assert!(wait_reading(child.id()), "the workload blocks reading its input");
    let base = env.dir.join("combined.folded");
    let started = Instant::now();
    let out = Command::new(env.kflame)
        .args(["record", "--off-cpu", "--blocked", "-d", "1", "--include-pid", "-o"])
        .arg(&base)
        .output()
        .expect("run kflame");
    let err = String::from_utf8_lossy(&out.stderr);
    drop(child.stdin.take());
    let _ = child.wait();
    assert!(out.status.success(), "{err}");
    assert!(started.elapsed() >= Duration::from_secs(1));
    let blocked = std::fs::read_to_string(env.dir.join("combined.blocked.folded")).expect("blocked output");
    let off = std::fs::read_to_string(env.dir.join("combined.offcpu.folded")).expect("off-CPU output");
    assert!(blocked.starts_with("# unit=tasks\n"), "{blocked}");
    assert!(off.starts_with("# unit=ns\n"), "{off}");
    let root = format!("state:S;kfwork-{};", child.id());
    let mine: Vec<_> = folded(&blocked).into_iter().filter(|s| s.0.starts_with(&root)).collect();
    assert_eq!(mine.len(), 1, "{blocked}");
    assert_eq!(mine[0].1, 1, "one snapshot");
}

#[test]
fn check_reports_what_this_kernel_allows() {
    let Some(env) = Env::get("--check") else { return };
    let out = Command::new(env.kflame).args(["record", "--check"]).output().expect("run kflame");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.lines().any(|l| l.starts_with("yes") && l.contains("cpu-clock")), "{text}");
    assert!(text.lines().any(|l| l.contains("sched:sched_switch")), "{text}");
    // This kind of machine loads the BPF programs (raw tracepoints, BTF).
    assert!(text.lines().any(|l| l.starts_with("yes") && l.contains("BPF off-CPU")), "{text}");
    // Every unavailable line says what to do instead or why.
    assert!(text.lines().filter(|l| l.starts_with("no")).all(|l| l.split_whitespace().count() > 4), "{text}");
}

/// The `ts` of a JSON event line (`SECONDS.NANOSECONDS`, 9 digits), in ns.
fn json_ts(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("{\"ts\":")?;
    let (secs, nanos) = rest[..rest.find(',')?].split_once('.')?;
    if nanos.len() != 9 {
        return None;
    }
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + nanos.parse::<u64>().ok()?)
}

/// The same workload recorded by `perf record -g` and named by `perf script`: the user
/// frames of its hottest stack, from `main` to the leaf, must be the ones kflame finds, in
/// the same order (frames above `main` live in libc, named only where its debug file is
/// installed, which is the same for both tools).
#[test]
fn user_frames_are_named_like_perf_script_names_them() {
    let Some(env) = Env::get("comparison with perf") else { return };
    let data = env.dir.join("cmp.perf.data");
    let recorded = Command::new("perf")
        .args(["record", "-q", "-F", "499", "-g", "-o"])
        .arg(&data)
        .args(["--", env.workload_str(), "cpu", "1"])
        .output();
    let Ok(recorded) = recorded.map(|o| o.status.success()) else {
        eprintln!("skipping the comparison with perf: perf is not installed");
        return;
    };
    assert!(recorded, "perf record failed");
    let script =
        Command::new("perf").args(["script", "-F", "ip,sym", "-i"]).arg(&data).output().expect("perf script");
    let script = String::from_utf8_lossy(&script.stdout);
    // The first sample whose chain reaches main: its frames from main's caller to the leaf.
    let perf_chain: Vec<&str> = script
        .split("\n\n")
        .map(|s| s.lines().filter_map(|l| l.split_whitespace().nth(1)).collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"kf_deep_6") && f.contains(&"main"))
        .map(|f| f.into_iter().rev().skip_while(|f| *f != "main").collect())
        .expect("perf saw the deep chain");
    let ours = env.record(&["-F", "499", "--", env.workload_str(), "cpu", "1"], "cmp.folded");
    let (hottest, _) = folded(&ours).into_iter().max_by_key(|s| s.1).expect("samples");
    let our_chain: Vec<&str> = hottest.split(';').skip_while(|f| *f != "main").collect();
    assert!(our_chain.len() >= 7, "{hottest}");
    assert_eq!(our_chain, perf_chain, "kflame: {hottest}\nperf: {perf_chain:?}");
}

#[test]
fn all_cpus_with_a_command_records_every_task_until_the_command_exits() {
    let Some(env) = Env::get("-a -- COMMAND") else { return };
    // A spinner that outlives the command by far: the recording ends with the command.
    let mut spinner = Command::new(&env.workload).args(["cpu", "120"]).spawn().expect("spinner");
    let started = Instant::now();
    let out = env.record(&["-a", "-F", "499", "--", "sleep", "0.7"], "all-while.json");
    let took = started.elapsed();
    let _ = spinner.kill();
    let _ = spinner.wait();
    assert!(took < Duration::from_secs(60), "recorded for {took:?}: past the command's end");
    let pid = format!("\"pid\":{},", spinner.id());
    assert!(out.lines().any(|l| l.contains(&pid) && l.contains("\"kf_deep_6\"")), "other tasks recorded");
    let ts: Vec<u64> = out.lines().filter_map(json_ts).collect();
    let span = ts.iter().max().unwrap_or(&0) - ts.iter().min().unwrap_or(&0);
    assert!(
        span >= 500_000_000 && Duration::from_nanos(span) <= took,
        "recorded for {span} ns while `sleep 0.7` ran, in a run of {took:?}"
    );
}

/// A recording longer than a window (10 s) names its stacks window by window and joins them:
/// a process that ran and exited in the first window keeps its named stacks beside one of the
/// last window, the events stay in time order, and no sample is lost or counted twice.
#[test]
fn a_recording_longer_than_a_window_joins_its_windows() {
    let Some(env) = Env::get("windows") else { return };
    let w = env.workload_str();
    let path = env.dir.join(format!("{}-windows.json", std::process::id()));
    let out = Command::new(env.kflame)
        .args(["record", "-F", "199", "-o"])
        .arg(&path)
        .args(["--", "sh", "-c", &format!("{w} cpu 1; sleep 10.5; {w} cpu 1")])
        .output()
        .expect("run kflame");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&path).expect("output file");
    let _ = std::fs::remove_file(&path);
    let recorded: u64 = stderr
        .split("recorded ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in: {stderr}"));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len() as u64, recorded, "one event per sample counted\n{stderr}");
    let ts: Vec<u64> = lines.iter().filter_map(|l| json_ts(l)).collect();
    assert!(ts.windows(2).all(|p| p[0] <= p[1]), "events out of time order across windows");
    let mut pids: Vec<u64> =
        lines.iter().filter(|l| l.contains("\"kf_deep_6\"")).filter_map(|l| json_u64(l, "pid")).collect();
    pids.dedup();
    assert_eq!(pids.len(), 2, "both workloads, the first long exited, named with their stacks: {pids:?}");
    let first = lines.iter().find(|l| l.contains("\"kf_deep_6\"")).and_then(|l| json_ts(l)).unwrap_or(0);
    let last = lines.iter().rev().find(|l| l.contains("\"kf_deep_6\"")).and_then(|l| json_ts(l)).unwrap_or(0);
    assert!(last - first >= 10_000_000_000, "the two workloads are {} ns apart", last - first);
}

/// Mistakes are refused before anything is recorded, with a message saying what is wrong.
#[test]
fn bad_requests_fail_early_with_a_clear_message() {
    let kflame = env!("CARGO_BIN_EXE_kflame");
    let cases: [(&[&str], i32, &str); 21] = [
        (&["record", "--locks", "--via", "perf"], 1, "--locks is summed in the kernel by BPF"),
        (&["record", "--off-cpu", "--wakers", "--via", "perf"], 1, "--wakers needs BPF"),
        (&["record", "--wakers"], 2, "--off-cpu"),
        (&["record", "--off-cpu", "--state", "Q"], 2, "unknown task state `Q`"),
        (&["record", "-p", "4000000000"], 1, "no process with pid 4000000000"),
        (&["record", "-t", "4000000000"], 1, "no thread with tid 4000000000"),
        (
            &["record", "--off-cpu", "--every", "2", "--for", "1"],
            1,
            "--off-cpu cannot record with a duty cycle",
        ),
        (
            &["record", "--syscalls", "--every", "2", "--for", "1"],
            1,
            "--syscalls cannot record with a duty cycle",
        ),
        (&["record", "-o", "x.png"], 1, "unknown output extension `.png`"),
        (&["record", "-o", "x.txt"], 1, "unknown output extension `.txt`: use one of .folded, .json"),
        // The output is created before recording: a bad path fails at once, not in 10 minutes.
        (&["record", "-d", "600", "-o", "/nonexistent/x.svg"], 1, "cannot write /nonexistent/x.svg"),
        (&["record", "--format", "svg", "-d", "600", "-o", "/nonexistent/x.txt"], 1, "cannot write"),
        (&["record", "-p", "1", "--", "true"], 1, "either -p PID or a command"),
        (&["record", "--mem", "-F", "99"], 2, "cannot be used with"),
        (&["record", "--every", "5", "--for", "10"], 1, "--for must not be longer than --every"),
        (&["record", "--every", "5"], 2, "--every needs --for"),
        (
            &["record", "--mem", "--off-cpu", "-d", "600"],
            2,
            "several modes (mem, offcpu) write one file each",
        ),
        (
            &["record", "--mem", "--off-cpu", "--every", "2", "--for", "1", "-o", "x.folded"],
            1,
            "--off-cpu cannot record with a duty cycle",
        ),
        // -d or --for with --blocked alone would be ignored: refused with what to do instead.
        (&["record", "--blocked", "-d", "600"], 1, "add --every SECONDS"),
        (&["record", "--blocked", "--every", "2", "--for", "1"], 1, "--for has no meaning"),
        (&["record", "--blocked", "-p", "1"], 1, "cannot be limited to -p or -t"),
    ];
    for (args, code, message) in cases {
        let started = Instant::now();
        let out = Command::new(kflame).args(args).output().expect("run kflame");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?} recorded before failing");
    }
}

/// The output is opened before recording; when recording then fails, a file created for it
/// is removed again and an existing file keeps its content (no root needed: the pid does
/// not exist).
#[test]
fn a_failed_recording_leaves_no_empty_file_and_keeps_an_existing_one() {
    let kflame = env!("CARGO_BIN_EXE_kflame");
    let dir = std::env::temp_dir().join(format!("kflame-record-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let new = dir.join("new.svg");
    let old = dir.join("old.folded");
    std::fs::write(&old, "a;b 1\n").expect("write");
    for path in [&new, &old] {
        let out = Command::new(kflame)
            .args(["record", "-p", "4000000000", "-o"])
            .arg(path)
            .output()
            .expect("run kflame");
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!new.exists(), "an empty output was left behind");
    assert_eq!(std::fs::read_to_string(&old).expect("kept"), "a;b 1\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// As `perf record -- false; echo $?` prints 1: the recording is written, the failure said,
/// and the command's status returned (128 + the signal when one killed it). A command still
/// running when `-d` ends is stopped by the recorder: that is no failure.
#[test]
fn a_failed_command_fails_the_recording_with_its_status() {
    let Some(env) = Env::get("command exit status") else { return };
    let cases: [(&[&str], i32, &str); 4] = [
        (&["--", "false"], 1, "the recorded command failed: exit status 1"),
        (&["--", "sh", "-c", "exit 3"], 3, "exit status 3"),
        (&["--", "sh", "-c", "kill -SEGV $$"], 139, "killed by signal 11 (SIGSEGV)"),
        (&["-d", "0.3", "--", "sleep", "5"], 0, "still running when recording stopped"),
    ];
    for (args, code, message) in cases {
        let path = env.dir.join("status.folded");
        let _ = std::fs::remove_file(&path);
        let out = Command::new(env.kflame)
            .args(["record", "-o"])
            .arg(&path)
            .args(args)
            .output()
            .expect("run kflame");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        let text = std::fs::read_to_string(&path).expect("the recording is written all the same");
        assert!(text.starts_with("# unit=samples\n"), "{args:?}: {text}");
    }
}
