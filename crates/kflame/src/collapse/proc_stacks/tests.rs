//! Golden test on a real snapshot of this machine (`tests/data/proc-stacks/README.md`).

use super::*;
use crate::collapse::testkit::{data, folded, no_panic_on_mutations, run, run_with};
use crate::collapse::{Format, Order, detect as detect_format};

#[test]
fn snapshot_matches_the_capture_folded() {
    let out = run(Box::new(ProcStacks::new()), &data("proc-stacks/proc-stacks-snapshot.txt"));
    assert!(out.diag.is_empty(), "{:?}", out.diag);
    let reference = String::from_utf8(data("proc-stacks/proc-stacks-snapshot.folded")).unwrap();
    let mut want: Vec<String> = reference.lines().map(|l| format!("state:{l}")).collect();
    want.sort();
    let got = folded(&out);
    let got: Vec<&str> = got.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(got, want);
    assert_eq!(out.stacks.total().whole(), 92, "92 `==>` thread headers in the capture");
    assert!(got[0].starts_with("state:D;sh;entry_SYSCALL_64_after_hwframe"), "{}", got[0]);
}

#[test]
fn parallel_and_sequential_agree() {
    let input = data("proc-stacks/proc-stacks-snapshot.txt");
    let one = run(Box::new(ProcStacks::new()), &input);
    let many = run_with(Box::new(ProcStacks::new()), &input, 3, Order::Sorted);
    assert_eq!(folded(&one), folded(&many));
}

#[test]
fn pure_parsers() {
    let st =
        parse_status(b"Name:\tjbd2/loop0-8\nUmask:\t0022\nState:\tD (disk sleep)\nTgid:\t9651\nPid:\t9651\n");
    assert_eq!(st, Some(Status { name: b"jbd2/loop0-8".to_vec(), state: b'D', tgid: 9651, pid: 9651 }));
    assert_eq!(parse_status(b"garbage"), None);
    let frames = parse_proc_stack(b"[<0>] kjournald2+0x30c/0x340\n[<0>] kthread+0xf8/0x220\nbogus\n");
    assert_eq!(frames, vec![Ok(&b"kjournald2"[..]), Ok(&b"kthread"[..]), Err(3)]);
}

#[test]
fn detection() {
    assert_eq!(detect_format(&data("proc-stacks/proc-stacks-snapshot.txt")), Some(Format::ProcStacks));
    assert_eq!(detect(b"a;b 1\n"), 0);
}

#[test]
fn bad_input_is_counted() {
    let text = b"[<0>] early+0x1/0x2\n==> pid=1 tid=1 comm=a b state=S wchan=x\n[<0>] f+0x1/0x2\n\xff\xfe junk\n==> pid=2 oops\n[<0>] g+0x1/0x2\n";
    let out = run(Box::new(ProcStacks::new()), text);
    assert_eq!(out.diag.get(kinds::ORPHAN_FRAME).map(|e| (e.count, e.first_line)), Some((2, 1)));
    assert_eq!(out.diag.get(kinds::BAD_FRAME).map(|e| (e.count, e.first_line)), Some((1, 4)));
    assert_eq!(out.diag.get(kinds::BAD_HEADER).map(|e| e.first_line), Some(5));
    assert_eq!(folded(&out), "state:S;a b;f 1\n");
}

#[test]
fn mutations_never_panic() {
    let seed = data("proc-stacks/proc-stacks-snapshot.txt");
    no_panic_on_mutations(&seed[..4000], || Box::new(ProcStacks::new()));
}
