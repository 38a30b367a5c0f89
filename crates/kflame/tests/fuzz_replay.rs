//! Replays every fuzz target (`kflame::fuzzing`, the code each `fuzz/fuzz_targets/<name>.rs`
//! calls) over its seeds, `fuzz/corpus/<name>/`, and over every input a fuzzer ever crashed
//! on, `fuzz/regressions/<name>/`, so that `cargo test` catches a regression without a
//! fuzzing session (and without a nightly toolchain).
//!
//! Memory is checked too: while an input is replayed, neither a single allocation nor the
//! memory in use may exceed [`budget`] of its length (a fixed allowance for buffers plus a
//! multiple of the input), so a count or size read from the input and trusted (a 300 GB
//! `Vec::with_capacity`) fails here on every machine, whatever its memory and overcommit
//! policy.

// The tracking allocator below is the only unsafe code: it forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use kflame::fuzzing::TARGETS;

/// The largest single allocation requested since the last reset.
static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated and not yet freed, and their highest value since the last reset.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Requests above this are refused (the test process then aborts, after saying which input
/// asked for it), so that no machine tries to satisfy them.
const REFUSE_ABOVE: usize = 1 << 30;
/// The input being replayed, for the message of a refused allocation (a fixed buffer: the
/// allocator must not allocate).
static CURRENT: Mutex<([u8; 512], usize)> = Mutex::new(([0; 512], 0));

struct Tracking;

impl Tracking {
    fn note(size: usize) -> bool {
        LARGEST.fetch_max(size, Ordering::Relaxed);
        if size <= REFUSE_ABOVE {
            let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
            PEAK.fetch_max(live, Ordering::Relaxed);
            return true;
        }
        let mut err = std::io::stderr();
        let _ = write!(err, "\nfuzz_replay: refusing an allocation of {size} bytes while replaying ");
        if let Ok(cur) = CURRENT.try_lock() {
            let _ = err.write_all(&cur.0[..cur.1]);
        }
        let _ = writeln!(err);
        false
    }
}

// SAFETY: every call is forwarded unchanged to `System`, or refused with a null pointer,
// which the `GlobalAlloc` contract allows.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if Self::note(layout.size()) { unsafe { System.alloc(layout) } } else { std::ptr::null_mut() }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if Self::note(layout.size()) { unsafe { System.alloc_zeroed(layout) } } else { std::ptr::null_mut() }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if Self::note(new_size) {
            unsafe { System.realloc(ptr, layout, new_size) }
        } else {
            std::ptr::null_mut()
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// The most an input of `len` bytes may allocate, at once and in all: a fixed allowance for
/// the readers' buffers and tables (the seeds need at most 1 MiB at once and 3.1 MiB in
/// all), plus 32 bytes per input byte (tables that grow with what is read).
fn budget(len: usize) -> usize {
    (16 << 20) + 32 * len
}

/// The tests share the allocation counter: one replays at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted (none when the folder does not exist).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("listing a fuzz input folder").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

/// Replays `target` over its seeds and regressions; every failure (panic or oversized
/// allocation) is collected with its file, then reported together.
fn replay(target: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = TARGETS.iter().find(|(name, _)| *name == target).expect("a target of kflame::fuzzing").1;
    let seeds = inputs("corpus", target);
    assert!(!seeds.is_empty(), "fuzz/corpus/{target}/ holds no seed");
    let mut failures = Vec::new();
    for path in seeds.iter().chain(&inputs("regressions", target)) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let shown = format!("{target}/{}", path.file_name().unwrap_or_default().to_string_lossy());
        {
            let mut cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
            let n = shown.len().min(cur.0.len());
            cur.0[..n].copy_from_slice(&shown.as_bytes()[..n]);
            cur.1 = n;
        }
        LARGEST.store(0, Ordering::Relaxed);
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
            let msg = e
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| e.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            failures.push(format!("{shown}: panicked: {msg}"));
        }
        let largest = LARGEST.load(Ordering::Relaxed);
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        let allowed = budget(data.len());
        if largest > allowed || peak > allowed {
            failures.push(format!(
                "{shown}: allocated {largest} bytes at once and {peak} in all, more than the {allowed} \
                 allowed for {} input bytes",
                data.len()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} inputs failed:\n{}",
        failures.len(),
        seeds.len(),
        failures.join("\n")
    );
}

/// Every target of `kflame::fuzzing` is a fuzz target of `fuzz/Cargo.toml` with seeds, and
/// every fuzz target calls its function there.
#[test]
fn every_target_is_built_seeded_and_replayed() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in TARGETS {
        let source = fuzz_dir().join(format!("fuzz_targets/{name}.rs"));
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            text.contains(&format!("kflame::fuzzing::{name}(")),
            "{} does not call kflame::fuzzing::{name}",
            source.display()
        );
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no [[bin]] {name}");
        assert!(!inputs("corpus", name).is_empty(), "fuzz/corpus/{name}/ holds no seed");
    }
    // The targets of the other crates (the analyzer's: a kernel tree's files; the store's,
    // the server's, the watcher's...) are replayed by each crate's own
    // tests/fuzz_replay.rs, which checks them the same way.
    let mut analyzer = Vec::new();
    let sources = std::fs::read_dir(fuzz_dir().join("fuzz_targets")).expect("fuzz/fuzz_targets");
    for entry in sources {
        let path = entry.expect("listing fuzz/fuzz_targets").path();
        let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let other_crate = ["analyze", "store", "serve", "mcp", "watch", "clickhouse", "fixes"]
            .iter()
            .any(|c| text.contains(&format!("kflame_{c}::fuzzing::{stem}(")));
        if other_crate {
            analyzer.push(stem);
            continue;
        }
        assert!(
            TARGETS.iter().any(|(n, _)| *n == stem),
            "{} has no entry in kflame::fuzzing::TARGETS",
            path.display()
        );
    }
    for kind in ["corpus", "regressions"] {
        let Ok(dirs) = std::fs::read_dir(fuzz_dir().join(kind)) else { continue };
        for entry in dirs {
            let path = entry.expect("listing fuzz inputs").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            assert!(
                !path.is_dir() || TARGETS.iter().any(|(n, _)| *n == name) || analyzer.contains(&name),
                "fuzz/{kind}/{name}/ belongs to no target: its inputs would never be replayed"
            );
        }
    }
}

macro_rules! replay_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*
        /// The targets replayed by the tests above.
        const LISTED: &[&str] = &[$(stringify!($name)),*];
    };
}

replay_tests!(
    collapse_perf,
    collapse_perf_pairs,
    collapse_ftrace,
    collapse_function_graph,
    collapse_bcc,
    collapse_bpftrace,
    collapse_stap,
    collapse_proc_stacks,
    collapse_kernel_log,
    collapse_crash,
    collapse_folded,
    render,
    perf_data,
    kmsg,
    scatter_events,
    import_pprof,
    import_speedscope,
    import_otlp,
    detect,
    decompress,
    symbols_elf,
    symbols_dwarf,
    kallsyms,
    perf_map,
    record_unwind,
);

/// The list above names every target of `kflame::fuzzing`.
#[test]
fn every_target_has_a_replay_test() {
    let targets: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(targets, LISTED);
}
