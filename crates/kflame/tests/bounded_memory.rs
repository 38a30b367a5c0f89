//! Memory stays bounded by the line cap and the distinct stacks, never by the input size:
//! endless input without newlines (as from `/dev/zero`) through the collapse engine with
//! several formats and through the folded readers of the renderers, and a large folded input
//! of few distinct stacks through the renderer's profile. Peak heap use is measured by a
//! counting allocator (this test binary's own), one case at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, BufReader, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use kflame::collapse::{Collapse, Engine, Order, folded::Folded, kernel_log, perf};
use kflame::diag::Diagnostics;
use kflame::fold::Meta;
use kflame::fold::read::read_folded;
use kflame::render::Profile;
use kflame::text::{LINE_TOO_LONG, MAX_LINE};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap growth while `f` runs.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// Eight caps' worth of NUL bytes and no newline: `/dev/zero`, cut.
fn zeros() -> impl Read + Send {
    io::repeat(0).take(8 * MAX_LINE as u64)
}

/// A real folded profile repeated `times` times, streamed (never held whole).
fn repeated_profile(times: usize) -> impl Read + Send {
    let text: &'static [u8] = include_bytes!("data/render/perf-sys-cpuclock.folded");
    Repeat { text, times, pos: 0 }
}

struct Repeat {
    text: &'static [u8],
    times: usize,
    pos: usize,
}

impl Read for Repeat {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.times == 0 {
            return Ok(0);
        }
        let n = buf.len().min(self.text.len() - self.pos);
        buf[..n].copy_from_slice(&self.text[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.text.len() {
            self.pos = 0;
            self.times -= 1;
        }
        Ok(n)
    }
}

type MakeCollapser = fn() -> Box<dyn Collapse>;

// One test, so that the cases do not run at the same time and mix their allocations.
#[test]
fn memory_is_bounded_by_the_cap_and_the_distinct_stacks() {
    let bound = 4 * MAX_LINE;
    let collapsers: [(&str, MakeCollapser); 3] = [
        ("folded", || Box::new(Folded::new())),
        ("perf-script", || Box::new(perf::PerfScript::new(perf::PerfOptions::default()))),
        ("kernel-log", || Box::new(kernel_log::KernelLog::new(kernel_log::Options::default()))),
    ];
    for (name, make) in collapsers {
        for threads in [1, 2] {
            let engine = Engine { threads, order: Order::Sorted, block_size: 1 << 20 };
            let (out, peak) = peak_during(|| engine.run(make(), zeros()).expect("in-memory input"));
            assert!(peak < bound, "{name}, {threads} threads: {peak} bytes at the peak for 128 MiB of zeros");
            assert!(out.stacks.is_empty(), "{name}");
            let long = out.diag.get(LINE_TOO_LONG).expect("the endless line is reported");
            assert_eq!((long.count, long.first_line), (1, 1), "{name}");
        }
    }

    let (diag, peak) = peak_during(|| {
        let mut p = Profile::new(false, false);
        let mut diag = Diagnostics::new();
        p.read(BufReader::new(zeros()), &mut diag).expect("in-memory input");
        diag
    });
    assert!(peak < bound, "profile: {peak} bytes at the peak");
    assert_eq!(diag.get(LINE_TOO_LONG).map(|e| e.count), Some(1));

    let (diag, peak) = peak_during(|| {
        let (mut meta, mut diag) = (Meta::default(), Diagnostics::new());
        read_folded(BufReader::new(zeros()), &mut meta, &mut diag, |_| {}).expect("in-memory input");
        diag
    });
    assert!(peak < bound, "folded reader: {peak} bytes at the peak");
    assert_eq!(diag.get(LINE_TOO_LONG).map(|e| e.count), Some(1));

    // The renderer's profile aggregates while reading: 4 times the input, the same memory.
    let profile_peak = |times| {
        peak_during(|| {
            let mut p = Profile::new(false, false);
            let mut diag = Diagnostics::new();
            p.read(BufReader::new(repeated_profile(times)), &mut diag).expect("in-memory input");
            p.finish();
            assert!(diag.is_empty(), "{diag:?}");
            p.len()
        })
    };
    let ((stacks, small), (stacks4, large)) = (profile_peak(50), profile_peak(200));
    assert_eq!(stacks, stacks4);
    assert!(large < small + small / 4, "50 copies: {small} bytes, 200 copies: {large} bytes");
}
