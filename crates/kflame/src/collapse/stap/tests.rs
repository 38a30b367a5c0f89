//! Tests on FlameGraph's documented example and a hand-written fixture
//! (`tests/data/stap/README.md`).

use super::*;
use crate::collapse::testkit::{data, folded, no_panic_on_mutations, run, run_with};
use crate::collapse::{Format, Order, detect as detect_format};

#[test]
fn flamegraph_documented_example() {
    let out = run(Box::new(Stap::new()), &data("stap/flamegraph-example.txt"));
    assert!(out.diag.is_empty(), "{:?}", out.diag);
    assert_eq!(folded(&out), String::from_utf8(data("stap/flamegraph-example.expected")).unwrap());
}

#[test]
fn kernel_and_user_frames_addresses_and_repeats() {
    let input = data("stap/handwritten-profile.txt");
    let out = run(Box::new(Stap::new()), &input);
    assert!(out.diag.is_empty(), "{:?}", out.diag);
    let want = "cpu_idle;0xffffffff81a6f2c9;native_safe_halt 512\n\
                main;fill_buffer;asm_exc_page_fault;exc_page_fault;handle_mm_fault;__alloc_pages;\
                get_page_from_freelist;clear_page_erms 37\n\
                main;spin 12\n";
    assert_eq!(folded(&out), want);
    let many = run_with(Box::new(Stap::new()), &input, 2, Order::Sorted);
    assert_eq!(folded(&many), want);
}

#[test]
fn detection() {
    assert_eq!(detect_format(&data("stap/handwritten-profile.txt")), Some(Format::Stap));
    assert_eq!(detect_format(&data("stap/flamegraph-example.txt")), Some(Format::Stap));
    assert_eq!(detect(b"a;b 1\n"), 0);
    assert_eq!(detect(&data("bcc/profile-example-multiline.txt")), 0);
}

#[test]
fn bad_input_is_counted() {
    let text = b"\t3\n 0x1 : f+0x1/0x2 [k]\ngarbage \xff\n 0x2 : g+0x1/0x2 [k]\n\t5\n 0x3 : h+0x0/0x1 [k]\n";
    let out = run(Box::new(Stap::new()), text);
    assert_eq!(out.diag.get(kinds::EMPTY_STACK).map(|e| e.first_line), Some(1));
    assert_eq!(out.diag.get(kinds::BAD_LINE).map(|e| e.first_line), Some(3));
    assert_eq!(out.diag.get(kinds::NO_COUNT).map(|e| e.first_line), Some(6));
    assert_eq!(folded(&out), "[empty stack] 3\ng;f 5\n");
}

#[test]
fn mutations_never_panic() {
    no_panic_on_mutations(&data("stap/handwritten-profile.txt"), || Box::new(Stap::new()));
}

/// A line of digits too large for a count ends its record on one thread as where the input
/// is cut for several: the frames before it go with it (found by fuzzing).
#[test]
fn an_unreadable_count_ends_its_record() {
    let big = "9".repeat(70);
    let text = format!(" 0x1 : f+0x1/0x2 [k]\n\t{big}\n 0x2 : g+0x1/0x2 [k]\n\t5\n");
    let out = run(Box::new(Stap::new()), text.as_bytes());
    assert_eq!(folded(&out), "g 5\n");
    let e = out.diag.get(kinds::BAD_LINE).unwrap();
    assert_eq!(e.first_line, 2);
    assert!(e.message.contains("its stack of 1 frames left out"), "{}", e.message);
}
