//! The replay of a crate's fuzz targets, shared by the `tests/fuzz_replay.rs` of the crates
//! other than the core one (store, serve, MCP, watch, ClickHouse, fixes), which include this
//! file with `#[path]`: each target's seeds, `fuzz/corpus/<name>/`, and every input a fuzzer
//! ever crashed on, `fuzz/regressions/<name>/`, go through the code the fuzz target calls,
//! so that `cargo test` catches a regression without a fuzzing session.
//!
//! Memory is checked as `crates/kflame/tests/fuzz_replay.rs` does: while an input is
//! replayed, neither one allocation nor the memory in use may exceed [`budget`] of its
//! length, so that a count read from the input and trusted fails here on every machine.
//! Including this file installs the tracking allocator in the test binary.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A target: its name and the entry point it calls (the crates' `fuzzing::TARGETS`).
type Target = (&'static str, fn(&[u8]));

static LARGEST: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Requests above this are refused (a null pointer: the process aborts), so that no
/// machine tries to satisfy them.
const REFUSE_ABOVE: usize = 1 << 30;

struct Tracking;

impl Tracking {
    fn note(size: usize) -> bool {
        LARGEST.fetch_max(size, Ordering::Relaxed);
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        size <= REFUSE_ABOVE
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
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            p
        } else {
            std::ptr::null_mut()
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// The most an input of `len` bytes may allocate, at once and in all: a fixed allowance
/// for zstd's contexts and the decoders' buffers, plus 64 bytes per input byte (a sample
/// decoded from a byte or two of a blob).
fn budget(len: usize) -> usize {
    (32 << 20) + 64 * len
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("listing a fuzz input folder").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    files
}

/// Replays every seed and past crash of `targets`, each within its memory. One call per
/// test binary: the allocation counters are shared by the whole process.
pub(crate) fn every_seed_and_past_crash_passes_within_its_memory(targets: &[Target]) {
    let mut failures = Vec::new();
    for (name, run) in targets {
        let seeds = inputs("corpus", name);
        assert!(!seeds.is_empty(), "fuzz/corpus/{name}/ holds no seed");
        for path in seeds.iter().chain(&inputs("regressions", name)) {
            let data = std::fs::read(path).unwrap();
            let shown = format!("{name}/{}", path.file_name().unwrap_or_default().to_string_lossy());
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
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every target of the fuzz crate that calls `{module}::` (e.g. `kflame_store::fuzzing`) is
/// in `targets` and built; every listed one has its target.
pub(crate) fn every_target_is_built_and_listed(targets: &[Target], module: &str) {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for (name, _) in targets {
        let text = std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{name}.rs"))).unwrap();
        assert!(text.contains(&format!("{module}::{name}(")), "{name}.rs");
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no [[bin]] {name}");
    }
    for e in std::fs::read_dir(fuzz_dir().join("fuzz_targets")).unwrap().flatten() {
        let stem = e.path().file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path()).unwrap();
        if text.contains(&format!("{module}::")) {
            assert!(targets.iter().any(|(n, _)| *n == stem), "{stem} is not in {module}::TARGETS");
        }
    }
}
