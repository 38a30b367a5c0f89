//! Deterministic mutation test of the ftrace collapser: truncations, byte flips, dropped and
//! duplicated lines of real fixtures must never panic, and every skipped line is counted.

use std::path::Path;

use kflame::collapse::Engine;
use kflame::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};

/// A small fixed-seed generator (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ftrace").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn collapse_all_modes(input: &[u8]) {
    let engine = Engine { threads: 1, block_size: 4096, ..Engine::default() };
    for mode in [
        None,
        Some(Mode::Alloc),
        Some(Mode::Syscalls),
        Some(Mode::OffCpu),
        Some(Mode::Probes),
        Some(Mode::Events),
    ] {
        let opts = FtraceOptions {
            mode,
            weight: if mode == Some(Mode::Events) { Some(WeightBy::Bytes) } else { None },
            pid: true,
            cpu: true,
            order: true,
            page_type: true,
            ..FtraceOptions::default()
        };
        let out = engine.run(Box::new(Ftrace::new(opts, None)), input).expect("in-memory input");
        for (kind, e) in out.diag.iter() {
            assert!(e.count > 0 && !e.message.is_empty(), "{kind}");
        }
    }
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
    let mut rng = Rng(0x6b66_6c61_6d65);
    let specials = b" -[]():.=>\n\t0123456789<>#\xff\x00;";
    for base in &seeds {
        for _ in 0..150 {
            let mut m = base.clone();
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(m.len());
                match rng.below(4) {
                    0 => m[i] = specials[rng.below(specials.len())],
                    1 => m[i] = rng.next() as u8,
                    2 => {
                        m.remove(i);
                    }
                    _ => m.insert(i, specials[rng.below(specials.len())]),
                }
            }
            collapse_all_modes(&m);
            let mut lines: Vec<&[u8]> = m.split(|b| *b == b'\n').collect();
            let j = rng.below(lines.len());
            let dup = lines[rng.below(lines.len())];
            lines.insert(j, dup);
            lines.remove(rng.below(lines.len()));
            collapse_all_modes(&lines.join(&b'\n'));
        }
    }
}
