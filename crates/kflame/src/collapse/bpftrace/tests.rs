//! Golden tests on real captures of this machine and on inferno PR #55 data
//! (`tests/data/bpftrace/README.md`).

use super::*;
use crate::collapse::testkit::{data, folded, golden_file, no_panic_on_mutations, run, sum_bpftrace_values};
use crate::collapse::{Format, detect as detect_format};

fn bt(map: Option<&str>) -> Box<dyn Collapse> {
    Box::new(Bpftrace::new(map))
}

#[test]
fn profile_kstack_capture_keeps_user_mode_samples() {
    let input = data("bpftrace/bpftrace-profile-kstack.txt");
    let out = run(bt(None), &input);
    assert_eq!(out.diag.skipped(), 0, "{:?}", out.diag);
    assert_eq!(out.stacks.total().whole(), sum_bpftrace_values(&input, "@["));
    let text = folded(&out);
    assert!(text.lines().any(|l| l == "[empty stack] 791"), "{text}");
    golden_file("bpftrace/bpftrace-profile-kstack.folded", &text);
}

#[test]
fn bytes_map_total_is_the_sum_of_its_values() {
    let input = data("bpftrace/bpftrace-mm_page_alloc-bytes-by-kstack.txt");
    let out = run(bt(None), &input);
    assert_eq!(out.stacks.total().whole(), sum_bpftrace_values(&input, "@bytes["));
    assert_eq!(out.meta.event.as_deref(), Some("bpftrace @bytes"));
    golden_file("bpftrace/bpftrace-mm_page_alloc-bytes-by-kstack.folded", &folded(&out));
}

#[test]
fn mixed_maps_pick_one_and_join_two_stacks() {
    let input = data("bpftrace/bpftrace-uprobe-and-syscall-latency.txt");
    let out = run(bt(None), &input);
    assert_eq!(folded(&out), "__libc_start_call_main;main 1425\n");
    assert!(out.diag.get(kinds::OTHER_MAP).is_some());
    let out = run(bt(Some("wk")), &input);
    let want = "__libc_start_call_main;__GI___write;-;\
                entry_SYSCALL_64_after_hwframe;do_syscall_64;syscall_exit_work 1302\n";
    assert_eq!(folded(&out), want);
}

/// inferno PR #55's expected output was made by the Perl stackcollapse-bpftrace.pl, which
/// kept the indentation and offsets in frame names (normalized here) and mishandled the
/// empty-key `@[]: N` entries: it dropped them, and glued a bogus `@[` leaf frame onto the
/// stack just before (removed here). Those entries are compared separately: kflame keeps
/// their weight under `[empty stack]`, equal to the sum of the `@[]: N` values.
#[test]
fn inferno_pr55_traces_agree_with_the_perl_collapser() {
    for i in 1..=3 {
        let input = data(&format!("bpftrace/inferno-pr55-{i}.trace"));
        let out = run(bt(None), &input);
        assert_eq!(out.diag.skipped(), 0, "{i}: {:?}", out.diag);
        let reference = String::from_utf8(data(&format!("bpftrace/inferno-pr55-{i}.orig.folded"))).unwrap();
        let mut want = crate::fold::StackCounts::new();
        for line in reference.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let stack = stack.strip_suffix(";@[").unwrap_or(stack);
            let frames: Vec<&str> =
                stack.split(';').map(|f| f.trim().rsplit_once('+').map_or(f.trim(), |p| p.0)).collect();
            want.add(frames.join(";").as_bytes(), Weight::parse(n.as_bytes()).unwrap());
        }
        let mut got = crate::fold::StackCounts::new();
        let mut empty = 0;
        for (s, w) in out.stacks.in_output_order() {
            if s == EMPTY_STACK.as_bytes() {
                empty += w.whole();
            } else {
                got.add(s, w);
            }
        }
        let show = |c: &crate::fold::StackCounts| -> Vec<String> {
            c.sorted().iter().map(|(s, w)| format!("{} {}", String::from_utf8_lossy(s), w.whole())).collect()
        };
        assert_eq!(show(&got), show(&want), "trace {i}");
        let empty_values: u64 = String::from_utf8_lossy(&input)
            .lines()
            .filter_map(|l| l.strip_prefix("@[]: "))
            .map(|v| v.trim().parse::<u64>().unwrap())
            .sum();
        assert_eq!(empty, empty_values, "trace {i}");
    }
}

#[test]
fn perf_mode_scalar_keys_and_old_layout() {
    let text = b"Attaching 1 probe...\n@[\n ffffffffb4019501 do_mmap+1\n ffffffffb401700a sys_mmap_pgoff+266\n]: 1708\n\
@[sshd, \n    __write+16\n    main+3 (/usr/sbin/sshd)\n]: 7\n@[\nfilemap_map_pages+181\n__handle_mm_fault+2905\n]: 12\n\
@[\n    f+1\n, bash]: 3\n@[]: 5\n";
    let out = run(bt(None), text);
    let want = "[empty stack] 5\n__handle_mm_fault;filemap_map_pages 12\nbash;f 3\n\
                sshd;main;__write 7\nsys_mmap_pgoff;do_mmap 1708\n";
    assert_eq!(folded(&out), want.to_string());
}

#[test]
fn detection() {
    for f in
        ["bpftrace-profile-kstack.txt", "bpftrace-mm_page_alloc-bytes-by-kstack.txt", "inferno-pr55-2.trace"]
    {
        assert_eq!(detect_format(&data(&format!("bpftrace/{f}"))), Some(Format::Bpftrace), "{f}");
    }
    assert_eq!(detect(b"a;b 1\n"), 0);
}

#[test]
fn bad_input_is_counted() {
    let text = b"@[\n    a+1\n]: -3\n@[\n    b+1\n@[\n    c+1\n]: x\xff\n@[\n    d+2\n]: 4\nprintf output\n@[\n    e\n";
    let out = run(bt(None), text);
    assert_eq!(out.diag.get(kinds::BAD_VALUE).map(|e| (e.count, e.first_line)), Some((2, 3)));
    assert_eq!(out.diag.get(kinds::TRUNCATED).map(|e| (e.count, e.first_line)), Some((2, 4)));
    assert_eq!(out.diag.get(kinds::OTHER_OUTPUT).map(|e| e.first_line), Some(12));
    assert_eq!(folded(&out), "d 4\n");
}

#[test]
fn mutations_never_panic() {
    no_panic_on_mutations(&data("bpftrace/bpftrace-uprobe-and-syscall-latency.txt"), || bt(None));
    no_panic_on_mutations(&data("bpftrace/inferno-pr55-1.trace"), || bt(Some("@")));
}
