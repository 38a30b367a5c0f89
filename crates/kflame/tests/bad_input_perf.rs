//! Bad input for the perf collapser: binary garbage, truncation, invalid UTF-8, huge lines,
//! empty input, and a few thousand mutated fixtures. Each must give located diagnostics,
//! never a panic, and still collapse the valid samples.

mod common;

use common::mutate::Mutator;
use kflame::collapse::perf::{PerfOptions, PerfScript, kinds};
use kflame::collapse::{Engine, Order, Output, detect};

fn collapse(input: &[u8], threads: usize) -> Output {
    let engine = Engine { threads, order: Order::Sorted, block_size: 4096 };
    engine.run(Box::new(PerfScript::new(PerfOptions::default())), input).expect("in-memory input")
}

fn stacks(out: &Output) -> Vec<(Vec<u8>, u64)> {
    out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.whole())).collect()
}

const GOOD: &[u8] = b"dd 29776 666709.771979:   10101010 cpu-clock: \n\
\tffffffff8118f4a5 __fdget_pos ([kernel.kallsyms])\n\
\t          1e8e0 read (/lib/libc.so)\n\n";

#[test]
fn binary_garbage_is_reported_not_folded() {
    let mut m = Mutator::new(7);
    let garbage: Vec<u8> = (0..200_000).map(|_| m.next_u64() as u8).collect();
    assert_eq!(detect(&garbage), None);
    let mut input = garbage.clone();
    input.extend_from_slice(b"\n\n");
    input.extend_from_slice(GOOD);
    for threads in [1, 2] {
        let out = collapse(&input, threads);
        assert_eq!(stacks(&out), vec![(b"dd;read;__fdget_pos".to_vec(), 10101010)]);
        let e = out.diag.get(kinds::WEIRD_EVENT).expect("garbage reported");
        assert_eq!(e.first_line, 1);
        assert!(e.message.starts_with("a sample header"), "{}", e.message);
        assert!(out.diag.skipped() > 100);
    }
}

#[test]
fn truncated_file_keeps_every_whole_sample() {
    let full = common::read("perf/flamegraph/test/perf-vertx-stacks-01.txt");
    for cut in [full.len() / 3, full.len() / 2 + 17, full.len() - 5] {
        let truncated = &full[..cut];
        let whole = memchr::memmem::rfind(truncated, b"\n\n").map_or(0, |i| i + 2);
        let before = collapse(&truncated[..whole], 1);
        for threads in [1, 2] {
            let out = collapse(truncated, threads);
            let got: std::collections::HashMap<_, _> = stacks(&out).into_iter().collect();
            for (stack, w) in stacks(&before) {
                assert!(got.get(&stack).is_some_and(|&g| g >= w), "lost {}", String::from_utf8_lossy(&stack));
            }
            // The partial last sample adds at most one sample.
            assert!(out.stacks.total().whole() <= before.stacks.total().whole() + 1);
        }
    }
}

#[test]
fn invalid_utf8_in_comm_and_symbols_is_kept_as_bytes() {
    let mut input = b"bad\xff comm 42/43 [000] 1.000001: 1 cpu-clock: \n\t   ffff81 sym\xc3\xffbol ([kernel.kallsyms])\n\n"
        .to_vec();
    input.extend_from_slice(GOOD);
    for threads in [1, 2] {
        let out = collapse(&input, threads);
        let s = stacks(&out);
        assert_eq!(s.len(), 2);
        assert!(s.contains(&(b"bad\xff_comm;sym\xc3\xffbol".to_vec(), 1)), "{s:?}");
        assert!(out.diag.is_empty());
    }
}

#[test]
fn lines_over_one_megabyte() {
    let huge_symbol = vec![b's'; 1_500_000];
    let mut input = GOOD.to_vec();
    input.extend_from_slice(b"dd 29776 666709.9: 5 cpu-clock: \n\t   ffff81 ");
    input.extend_from_slice(&huge_symbol);
    input.extend_from_slice(b" ([kernel.kallsyms])\n\n");
    input.extend_from_slice(&vec![b'x'; 1_200_000]);
    input.extend_from_slice(b"\n\n");
    input.extend_from_slice(GOOD);
    for threads in [1, 2] {
        let out = collapse(&input, threads);
        assert_eq!(out.stacks.total().whole(), 2 * 10101010 + 5);
        let long: Vec<_> = stacks(&out).into_iter().filter(|(s, _)| s.len() > 1_000_000).collect();
        assert_eq!(long.len(), 1);
        let e = out.diag.get(kinds::WEIRD_EVENT).expect("the 1.2 MB garbage line");
        assert_eq!((e.count, e.first_line), (1, 8));
        assert!(e.message.len() < 200, "message is an excerpt");
    }
}

#[test]
fn empty_and_blank_inputs() {
    for input in [&b""[..], b"\n\n\n", b"# only a comment\n", b"\r\n\r\n"] {
        let out = collapse(input, 2);
        assert!(out.stacks.is_empty());
        assert!(out.diag.is_empty(), "{:?}", out.diag);
    }
}

/// Two thousand damaged variants of real fixtures: no panic, identical results on 1 and
/// 2 threads.
#[test]
fn mutated_fixtures_never_panic() {
    let fixtures = [
        common::read("perf/flamegraph/test/perf-java-stacks-01.txt"),
        common::read("perf/flamegraph/test/perf-cycles-instructions-01.txt"),
        common::read("perf/inferno/java-inline.txt"),
        common::read("perf/inferno/single-line-stacks.txt"),
        common::read("perf/captures/perf-kmalloc.script.txt"),
        common::read("perf/captures/perf-mm-page-alloc.script.txt"),
    ];
    let mut m = Mutator::new(0x5eed);
    for case in 0..2000 {
        let f = &fixtures[case % fixtures.len()];
        let start = m.below(f.len());
        let len = 1 + m.below(3000);
        let input = m.mutate(&f[start..(start + len).min(f.len())]);
        let one = collapse(&input, 1);
        let two = collapse(&input, 2);
        assert_eq!(stacks(&one), stacks(&two), "case {case}");
        assert_eq!(one.diag, two.diag, "case {case}");
    }
}
