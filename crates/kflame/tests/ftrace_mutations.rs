//! Deterministic mutation test of the ftrace collapser: truncations, byte flips, dropped and
//! duplicated lines of real fixtures must never panic, and every skipped line is counted.

mod common;

use common::mutate::Mutator;

fn fixture(name: &str) -> Vec<u8> {
    common::read(&format!("ftrace/{name}"))
}

/// Characters the ftrace line grammar splits on.
const SPECIALS: &[&[u8]] = &[
    b" ", b"-", b"[", b"]", b"(", b")", b":", b".", b"=>", b"\t", b"<", b">", b"#", b"\xff", b"\0", b";",
    b"0", b"9",
];

fn collapse_all_modes(input: &[u8]) {
    common::ftrace::collapse_every_mode(input, |out| {
        for (kind, e) in out.expect("in-memory input").diag.iter() {
            assert!(e.count > 0 && !e.message.is_empty(), "{kind}");
        }
    });
}

/// The first `max` bytes of a fixture: mutations of a small prefix cover every line shape.
fn seed(name: &str, max: usize) -> Vec<u8> {
    let mut v = fixture(name);
    v.truncate(max);
    v
}

#[test]
fn truncated_at_every_offset() {
    let input = seed("handwritten-old-kernel-mm_page_alloc.txt", 4000);
    for cut in 0..input.len() {
        collapse_all_modes(&input[..cut]);
    }
}

#[test]
fn byte_flips_and_line_edits() {
    let seeds = [
        seed("ftrace-dd-mixed-stacktrace.txt", 6000),
        seed("trace-cmd-report-mm_page_alloc.txt", 3000),
        fixture("handwritten-trace-cmd-sched_switch.txt"),
        seed("ftrace-raw_syscalls-write-enter-exit-stacktrace.txt", 3000),
        seed("ftrace-uprobe-doio-entry-ret.txt", 3000),
    ];
    let mut m = Mutator::new(0x6b66_6c61_6d65).with_tokens(SPECIALS);
    for base in &seeds {
        // 300 variants per seed: as many collapses as the former 150 rounds of two.
        for _ in 0..300 {
            collapse_all_modes(&m.mutate(base));
        }
    }
}
