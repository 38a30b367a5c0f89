//! Memory stays bounded by the line cap and the distinct stacks, never by the input size:
//! endless input without newlines (as from `/dev/zero`) through the collapse engine with
//! several formats and through the folded readers of the renderers, and a large folded input
//! of few distinct stacks through the renderer's profile; and other tools' profiles built to
//! amplify (one long location or frame shared by many stacks, deep nesting, one huge stack
//! repeated by every sample), which the import readers must build once or refuse at their
//! limit. Peak heap use is measured by a counting allocator (this test binary's own), one
//! case at a time.

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

    hostile_imports();
}

/// Protobuf encoding, as little as the hostile profiles below need.
mod pb {
    pub(crate) fn varint(mut n: u64, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push(n as u8 | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    /// A varint field.
    pub(crate) fn int(field: u64, n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3, &mut out);
        varint(n, &mut out);
        out
    }
    /// A length-delimited field.
    pub(crate) fn bytes(field: u64, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3 | 2, &mut out);
        varint(body.len() as u64, &mut out);
        out.extend_from_slice(body);
        out
    }
    /// A packed repeated varint field.
    pub(crate) fn packed(field: u64, ns: impl IntoIterator<Item = u64>) -> Vec<u8> {
        let mut body = Vec::new();
        for n in ns {
            varint(n, &mut body);
        }
        bytes(field, &body)
    }
}

/// A pprof profile: location 1 has `lines` lines of function 1, named `name`; sample `i`
/// lists location 1 `refs[i]` times, with the value 1.
fn pprof_shared_location(lines: usize, name: &str, refs: &[usize]) -> Vec<u8> {
    let mut p = pb::bytes(1, &[pb::int(1, 1), pb::int(2, 2)].concat());
    for &r in refs {
        p.extend(pb::bytes(2, &[pb::packed(1, std::iter::repeat_n(1, r)), pb::packed(2, [1])].concat()));
    }
    let line = pb::bytes(4, &[pb::int(1, 1), pb::int(2, 7)].concat());
    p.extend(pb::bytes(4, &[pb::int(1, 1), line.repeat(lines)].concat()));
    p.extend(pb::bytes(5, &[pb::int(1, 1), pb::int(2, 3)].concat()));
    for s in ["", "samples", "count", name] {
        p.extend(pb::bytes(6, s.as_bytes()));
    }
    p
}

/// An OTLP profiles request: location 0 has `lines` lines of function 1, named `name`;
/// stack `i + 1` lists location 0 `refs[i]` times; sample `j` is of stack `samples[j]`.
fn otlp_shared_location(lines: usize, name: &str, refs: &[usize], samples: &[u64]) -> Vec<u8> {
    let mut d = pb::bytes(2, &pb::bytes(3, &pb::int(1, 1)).repeat(lines));
    d.extend(pb::bytes(3, b""));
    d.extend(pb::bytes(3, &pb::int(1, 3)));
    for s in ["", "samples", "count", name] {
        d.extend(pb::bytes(5, s.as_bytes()));
    }
    d.extend(pb::bytes(7, b""));
    for &r in refs {
        d.extend(pb::bytes(7, &pb::packed(1, std::iter::repeat_n(0, r))));
    }
    let mut profile = pb::bytes(1, &[pb::int(1, 1), pb::int(2, 2)].concat());
    for &s in samples {
        profile.extend(pb::bytes(2, &[pb::int(1, s), pb::packed(4, [1])].concat()));
    }
    [pb::bytes(1, &pb::bytes(2, &pb::bytes(2, &profile))), pb::bytes(2, &d)].concat()
}

const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// A speedscope file of one profile.
fn speedscope(frames: &[&str], profile: serde_json::Value) -> Vec<u8> {
    let frames: Vec<_> = frames.iter().map(|n| serde_json::json!({ "name": n })).collect();
    serde_json::to_vec(&serde_json::json!({
        "$schema": SCHEMA, "shared": { "frames": frames }, "profiles": [profile]
    }))
    .expect("JSON of values")
}

/// `n` frames opened one inside the other, one time unit apart, then closed.
fn speedscope_nested(n: usize) -> Vec<u8> {
    let open = (0..n).map(|i| serde_json::json!({"type": "O", "frame": 0, "at": i}));
    let close = (0..n).map(|_| serde_json::json!({"type": "C", "frame": 0, "at": n}));
    let events: Vec<_> = open.chain(close).collect();
    speedscope(
        &["f"],
        serde_json::json!({"type": "evented", "name": "p", "unit": "none", "startValue": 0,
                           "endValue": n, "events": events}),
    )
}

/// Profiles built to amplify: a few KB whose stacks would take GB as folded text, or GB of
/// work, if each sample were expanded on its own. Each must be refused at the limit of the
/// folded text built, or read with each distinct stack built once.
fn hostile_imports() {
    use kflame::import::{ImportError, Kind, Limits, read};
    // Smaller than the defaults, so that the case is quick in a debug build; the work and
    // the memory scale with them.
    let limits = Limits { max_stack_bytes: 4 << 20, max_total_bytes: 8 << 20, ..Limits::default() };
    let bound = 4 * limits.max_total_bytes + (4 << 20);
    let refs: Vec<usize> = (0..64).map(|i| 60 + i).collect();
    // 64 stacks each repeating one 1,000-line location 60 to 123 times: about 1 MB each.
    let cases: [(&str, Kind, Vec<u8>); 4] = [
        ("pprof", Kind::Pprof, pprof_shared_location(1000, "function_name_x", &refs)),
        (
            "otlp",
            Kind::Otlp,
            otlp_shared_location(1000, "function_name_x", &refs, &(1..=64).collect::<Vec<_>>()),
        ),
        (
            "speedscope sampled",
            Kind::Speedscope,
            speedscope(
                &[&"x".repeat(16_000)],
                serde_json::json!({"type": "sampled", "name": "p", "unit": "none", "startValue": 0,
                    "endValue": 64, "samples": refs.iter().map(|&r| vec![0; r]).collect::<Vec<_>>(),
                    "weights": vec![1; 64]}),
            ),
        ),
        ("speedscope nested", Kind::Speedscope, speedscope_nested(20_000)),
    ];
    for (name, kind, bytes) in &cases {
        for time_order in [false, true] {
            let (got, peak) = peak_during(|| read(*kind, bytes, time_order, &limits));
            assert!(peak < bound, "{name}: {peak} bytes at the peak for {} input bytes", bytes.len());
            assert_eq!(got.err(), Some(ImportError::TooLarge(limits.max_total_bytes)), "{name}");
        }
    }

    // One stack of 10^6 frames (one 10,000-line location listed 100 times), repeated by
    // 2,000 samples, and the same through OTLP (one 1,000-line location listed 1,000 times,
    // 5,000 samples): each built once, whatever the number of samples.
    let limits = Limits { max_stack_bytes: 4 << 20, ..Limits::default() };
    let cases = [
        ("pprof", Kind::Pprof, pprof_shared_location(10_000, "f", &[100; 2_000])),
        ("otlp", Kind::Otlp, otlp_shared_location(1_000, "f", &[1_000], &[1; 5_000])),
    ];
    for (name, kind, bytes) in &cases {
        for time_order in [false, true] {
            let (got, peak) = peak_during(|| read(*kind, bytes, time_order, &limits));
            let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
            let stacks = got.stacks.in_output_order();
            let samples = if *kind == Kind::Pprof { 2_000 } else { 5_000 };
            assert_eq!(stacks.len(), 1, "{name}");
            assert_eq!(stacks[0].0.len(), 2 * 1_000_000 - 1, "{name}: f;f;...;f");
            assert_eq!(stacks[0].1, kflame::fold::Weight::from_u64(samples), "{name}");
            assert!(peak < 8 * 2_000_000 + 2 * bytes.len() * 8, "{name}: {peak} bytes at the peak");
        }
    }
    // Longer than a stack may be: skipped and counted per sample, without being built.
    let small = Limits { max_stack_bytes: 1 << 10, ..limits };
    let (got, peak) = peak_during(|| read(Kind::Pprof, &cases[0].2, false, &small));
    let got = got.expect("samples skipped, not an error");
    assert!(got.stacks.is_empty());
    assert_eq!(got.diag.get("stack too long").map(|e| (e.count, e.first_line)), Some((2_000, 1)));
    assert!(peak < 4 << 20, "{peak} bytes at the peak for stacks too long");

    // A decompression bomb read whole as a profile: refused at the cap, having kept no more
    // than it: 32 MiB of zeros (32 KiB of gzip) against a cap of 4 MiB.
    let bomb = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..32 {
            e.write_all(&zeros).expect("writing to memory");
        }
        e.finish().expect("writing to memory")
    };
    let cap = Limits { max_decompressed: 4 << 20, ..limits };
    for kind in [Kind::Pprof, Kind::Otlp, Kind::Speedscope] {
        let (got, peak) = peak_during(|| {
            let input = kflame::open::Input::from_reader(
                "bomb.gz".into(),
                None,
                Box::new(io::Cursor::new(bomb.clone())),
            )
            .expect("a gzip header")
            .with_limits(cap);
            input.collapse(&Engine::default(), kflame::input::Collapser::Import(kind, None))
        });
        let Err(err) = got else { panic!("{kind:?}: a bomb read") };
        let err = err.0;
        assert!(
            err.contains("bomb.gz") && err.contains("more than 4194304 bytes once decompressed"),
            "{err}"
        );
        assert!(
            peak < 3 * cap.max_decompressed + bomb.len() + (1 << 20),
            "{kind:?}: {peak} bytes at the peak"
        );
    }

    // A deadline that has passed stops the reading.
    let past = Limits { deadline: Some(std::time::Instant::now()), ..limits };
    let got = read(Kind::Otlp, &cases[1].2, false, &past);
    assert_eq!(got.err(), Some(ImportError::TimedOut));
}
