//! Test helpers shared by the collapsers of kernel tracing tools: run a collapser on bytes,
//! read fixtures, and a deterministic mutation check that a parser never panics.

use super::{Collapse, Engine, Order, Output};
use crate::fold::write::write_folded;

/// Collapses `input` sequentially and returns the output.
pub(crate) fn run(c: Box<dyn Collapse>, input: &[u8]) -> Output {
    Engine { threads: 1, order: Order::Sorted, block_size: 4096 }.run(c, input).expect("in-memory input")
}

/// Collapses `input` in the given order on `threads` threads, with small blocks.
pub(crate) fn run_with(c: Box<dyn Collapse>, input: &[u8], threads: usize, order: Order) -> Output {
    Engine { threads, order, block_size: 4096 }.run(c, input).expect("in-memory input")
}

/// The folded text (with metadata header) of an output.
pub(crate) fn folded(out: &Output) -> String {
    let mut v = Vec::new();
    write_folded(&mut v, &out.stacks, &out.meta).expect("write to memory");
    String::from_utf8(v).expect("fixtures are UTF-8")
}

/// A fixture under `tests/data/`.
pub(crate) fn data(rel: &str) -> Vec<u8> {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/").to_string() + rel;
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading fixture {p}: {e}"))
}

/// The project's one input mutator (shared with the integration tests).
#[path = "../../tests/common/mutate.rs"]
mod mutate;

/// Bytes that mean something to one of the trace formats, inserted among the mutations.
const JUNK: &[&[u8]] =
    &[b"\xff\xfe", b"\n", b" ", b"|", b"}", b"{", b"(", b")", b";", b"]: ", b"-", b"\0", b"@["];

/// Feeds 400 deterministic mutations of `seed` (truncations, byte flips, deleted and
/// doubled ranges, non-UTF-8 bytes, format tokens) to fresh collapsers from `make`; panics
/// propagate.
pub(crate) fn no_panic_on_mutations(seed: &[u8], make: impl Fn() -> Box<dyn Collapse>) {
    let mut m = mutate::Mutator::new(0x9e37_79b9_7f4a_7c15).with_tokens(JUNK);
    for round in 0..400 {
        let out = run(make(), &m.mutate(seed));
        let mut text = Vec::new();
        write_folded(&mut text, &out.stacks, &out.meta).expect("write to memory");
        assert!(out.diag.iter().all(|(_, e)| !e.message.is_empty()), "round {round}");
    }
}

/// Compares `got` with the golden file `tests/data/<rel>`; with `KFLAME_BLESS=1` in the
/// environment, (re)writes the golden file instead (review the diff before committing).
pub(crate) fn golden_file(rel: &str, got: &str) {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/").to_string() + rel;
    if std::env::var_os("KFLAME_BLESS").is_some() {
        std::fs::write(&p, got).unwrap_or_else(|e| panic!("writing {p}: {e}"));
        return;
    }
    let want = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading golden {p}: {e}"));
    assert_eq!(got, want, "output differs from {rel} (KFLAME_BLESS=1 rewrites it)");
}

/// Sum of the `N` in lines ending with `]: N` (bpftrace map values), computed without the
/// parser under test.
pub(crate) fn sum_bpftrace_values(text: &[u8], map_prefix: &str) -> u64 {
    let text = String::from_utf8_lossy(text);
    let mut sum = 0;
    let mut in_map = false;
    for l in text.lines() {
        if l.starts_with('@') {
            in_map = l.starts_with(map_prefix);
        }
        if let Some(i) = l.rfind("]: ")
            && in_map
        {
            sum += l[i + 3..].trim().parse::<u64>().unwrap_or(0);
        }
    }
    sum
}

/// Sum of the indented, digits-only lines (bcc multi-line counts) and of the last field of
/// unindented lines ending in a number (folded lines), computed without the parser under test.
pub(crate) fn sum_bcc_counts(text: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(text);
    let mut sum = 0;
    for l in text.lines() {
        let t = l.trim();
        if l.starts_with(' ') && !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            sum += t.parse::<u64>().unwrap_or(0);
        } else if !l.starts_with(' ') && !l.starts_with('#') {
            sum += l.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    sum
}

#[cfg(test)]
mod detection {
    use crate::collapse::Format;

    const MINE: &[Format] =
        &[Format::FunctionGraph, Format::ProcStacks, Format::Bpftrace, Format::Bcc, Format::Stap];

    /// Which of these formats a capture file belongs to, by its name.
    fn owner(name: &str) -> Option<Format> {
        match name {
            n if n.starts_with("bpftrace-") && n != "bpftrace-info.txt" => Some(Format::Bpftrace),
            n if n.starts_with("bcc-") && n.ends_with(".folded") => Some(Format::Bcc),
            "bcc-profile-folded.txt" => Some(Format::Bcc),
            "proc-stacks-snapshot.txt" => Some(Format::ProcStacks),
            _ => None,
        }
    }

    /// The detectors of these formats must not claim the other captures of this machine
    /// (perf script, ftrace and trace-cmd events, kernel logs), which other collapsers own.
    #[test]
    #[allow(clippy::print_stderr)]
    fn detectors_claim_only_their_own_captures() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/captures/text");
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("note: {dir} absent; detection test on shared captures skipped");
            return;
        };
        let mut checked = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(head) = std::fs::read(e.path()) else { continue };
            let head = &head[..head.len().min(64 * 1024)];
            for &f in MINE {
                let score = f.detect(head);
                let own = owner(&name) == Some(f);
                if !own {
                    assert!(score < 30, "{f} claims {name} with score {score}");
                }
            }
            checked += 1;
        }
        assert!(checked > 20, "only {checked} captures found");
    }
}
