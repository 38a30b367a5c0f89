//! The entry points of the fuzz targets, one function per parser taking arbitrary bytes.
//!
//! Each `fuzz/fuzz_targets/<name>.rs` is a one-line call to the function of [`TARGETS`] with
//! its name, and the workspace test `tests/fuzz_replay.rs` replays the seeds of
//! `fuzz/corpus/<name>/` and every crash ever found (`fuzz/regressions/<name>/`) through the
//! same function, so that a regression fails `cargo test` and not only a fuzzing session.
//!
//! The functions panic only on a bug: a panic inside kflame, or a broken property that must
//! hold for every input (1 and 2 threads, or other block sizes, give the same result; every
//! kernel report or crash task counts once). Not a stable API.

use std::io::{self, BufReader};
use std::path::PathBuf;

use crate::collapse::{Collapse, Engine, Order, Output};
use crate::diag::Diagnostics;
use crate::fold::{Meta, OrderedStacks, StackCounts, Stacks};

/// A target's entry point: arbitrary bytes in, a panic only on a bug.
pub type Target = fn(&[u8]);

/// Every target: its name (the fuzz target's and its corpus folder's) and entry point.
pub const TARGETS: &[(&str, Target)] = &[
    ("collapse_perf", collapse_perf),
    ("collapse_perf_pairs", collapse_perf_pairs),
    ("collapse_ftrace", collapse_ftrace),
    ("collapse_function_graph", collapse_function_graph),
    ("collapse_bcc", collapse_bcc),
    ("collapse_bpftrace", collapse_bpftrace),
    ("collapse_stap", collapse_stap),
    ("collapse_proc_stacks", collapse_proc_stacks),
    ("collapse_kernel_log", collapse_kernel_log),
    ("collapse_crash", collapse_crash),
    ("collapse_folded", collapse_folded),
    ("render", render),
    ("perf_data", perf_data),
    ("kmsg", kmsg),
    ("scatter_events", scatter_events),
    ("import_pprof", import_pprof),
    ("import_speedscope", import_speedscope),
    ("import_otlp", import_otlp),
    ("detect", detect),
    ("decompress", decompress),
    ("symbols_elf", symbols_elf),
    ("symbols_dwarf", symbols_dwarf),
    ("kallsyms", kallsyms),
    ("perf_map", perf_map),
    ("record_unwind", record_unwind),
];

/// Stacks (in output order) and diagnostics of a run, for comparing runs.
type Result = (Vec<(Vec<u8>, String)>, Diagnostics);

fn run(engine: &Engine, collapser: Box<dyn Collapse>, input: &[u8]) -> Result {
    // Reading a slice cannot fail: an error here is a bug.
    let out = engine.run(collapser, input).expect("collapsing in-memory input");
    summary(out)
}

fn summary(out: Output) -> Result {
    let stacks = out.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w.to_string())).collect();
    (stacks, out.diag)
}

fn engine(threads: usize, block_size: usize) -> Engine {
    Engine { threads, order: Order::Sorted, block_size }
}

/// Runs `make()` on 1 thread and on 2 threads in 4 KiB blocks: both must agree.
fn same_on_two_threads(input: &[u8], make: impl Fn() -> Box<dyn Collapse>) {
    let one = run(&engine(1, 4096), make(), input);
    let two = run(&engine(2, 4096), make(), input);
    assert_eq!(one, two, "1 and 2 threads disagree");
}

/// `perf script` text; the first byte chooses the options.
pub fn collapse_perf(data: &[u8]) {
    use crate::collapse::perf::{PerfOptions, PerfScript, PerfWeight};
    let Some((&flags, input)) = data.split_first() else { return };
    let opts = PerfOptions {
        include_pid: flags & 1 != 0,
        include_tid: flags & 2 != 0,
        annotate_kernel: flags & 4 != 0,
        annotate_jit: flags & 8 != 0,
        include_addrs: flags & 16 != 0,
        mark_inlined: flags & 32 != 0,
        event_filter: None,
        weight: match flags >> 6 {
            1 => PerfWeight::Samples,
            2 => PerfWeight::Bytes,
            _ => PerfWeight::Auto,
        },
    };
    same_on_two_threads(input, || Box::new(PerfScript::new(opts.clone())));
}

/// `perf script` text paired into syscall, off-CPU or probe durations; the first byte
/// chooses the mode and options. Other block boundaries must not change the result.
pub fn collapse_perf_pairs(data: &[u8]) {
    use crate::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions};
    let Some((&flags, input)) = data.split_first() else { return };
    let mode = match flags % 3 {
        0 => PairMode::Syscalls,
        1 => PairMode::OffCpu,
        _ => PairMode::Probes,
    };
    let opts = PerfPairsOptions { pid: flags & 4 != 0, cpu: flags & 8 != 0, ..PerfPairsOptions::new(mode) };
    let small = run(&engine(1, 4096), Box::new(PerfPairs::new(opts.clone(), None)), input);
    let large = run(&engine(1, 1 << 20), Box::new(PerfPairs::new(opts, None)), input);
    assert_eq!(small, large, "other block boundaries changed the result");
}

/// Every mode of the ftrace collapser (`None`: detected from the events).
pub const FTRACE_MODES: [Option<crate::collapse::ftrace::Mode>; 6] = {
    use crate::collapse::ftrace::Mode;
    [
        None,
        Some(Mode::Alloc),
        Some(Mode::Syscalls),
        Some(Mode::OffCpu),
        Some(Mode::Probes),
        Some(Mode::Events),
    ]
};

/// Collapses ftrace or trace-cmd text once per mode of [`FTRACE_MODES`], with every option
/// that adds root frames, single-threaded in 4 KiB blocks (records straddle block
/// boundaries), and hands each result to `check`.
pub fn ftrace_every_mode(input: &[u8], mut check: impl FnMut(io::Result<Output>)) {
    use crate::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};
    let engine = engine(1, 4096);
    for mode in FTRACE_MODES {
        let opts = FtraceOptions {
            mode,
            weight: if mode == Some(Mode::Events) { Some(WeightBy::Bytes) } else { None },
            pid: true,
            cpu: true,
            order: true,
            page_type: true,
            ..FtraceOptions::default()
        };
        check(engine.run(Box::new(Ftrace::new(opts, None)), input));
    }
}

/// ftrace `trace`/`trace_pipe` and `trace-cmd report` text, in every mode.
pub fn collapse_ftrace(data: &[u8]) {
    ftrace_every_mode(data, |out| {
        out.expect("collapsing in-memory input");
    });
}

/// function_graph tracer output: self time, and total time of the 3 slowest calls with every
/// root frame and the `--events-json` log.
pub fn collapse_function_graph(data: &[u8]) {
    use crate::collapse::events_json::EventLog;
    use crate::collapse::fgraph::{FunctionGraph, Latency, Options};
    let plain = Options::default();
    let top = Options { latency: Latency::Total, top: Some(3), comm: true, pid: true, cpu: true };
    for opts in [plain, top] {
        let log = EventLog::new(io::sink());
        let c = FunctionGraph::new(opts).with_events(log.clone());
        run(&engine(1, 4096), Box::new(c), data);
        log.finish().expect("writing events to a sink");
    }
}

/// bcc tool output, multi-line or folded.
pub fn collapse_bcc(data: &[u8]) {
    use crate::collapse::bcc::{Bcc, Options, Unit};
    same_on_two_threads(data, || Box::new(Bcc::new(Options { unit: Unit::Auto, pid: true })));
}

/// bpftrace maps: every map, then the map named `@` only.
pub fn collapse_bpftrace(data: &[u8]) {
    use crate::collapse::bpftrace::Bpftrace;
    run(&engine(1, 4096), Box::new(Bpftrace::new(None)), data);
    run(&engine(1, 4096), Box::new(Bpftrace::new(Some("@"))), data);
}

/// SystemTap backtraces with counts.
pub fn collapse_stap(data: &[u8]) {
    use crate::collapse::stap::Stap;
    same_on_two_threads(data, || Box::new(Stap::new()));
}

/// `/proc/*/task/*/stack` snapshots, and the parsers of single `status` and `stack` files.
pub fn collapse_proc_stacks(data: &[u8]) {
    use crate::collapse::proc_stacks::{ProcStacks, parse_proc_stack, parse_status};
    let _ = parse_status(data);
    let _ = parse_proc_stack(data);
    same_on_two_threads(data, || Box::new(ProcStacks::new()));
}

/// Kernel logs: the report extractor (every report counts once in the collapsed output) and
/// the JSON of each report.
pub fn collapse_kernel_log(data: &[u8]) {
    use crate::collapse::kernel_log::{KernelLog, Options};
    use crate::report::ReportExtractor;
    let reports = ReportExtractor::extract_all(data);
    for r in &reports {
        let _ = r.to_json();
    }
    let opts = Options { offsets: true, unreliable: true, ..Options::default() };
    let out = engine(1, 4096).run(Box::new(KernelLog::new(opts)), data).expect("collapsing in-memory input");
    assert_eq!(out.stacks.total().whole(), reports.len() as u64, "a report did not count once");
}

/// `/dev/kmsg` records (as `cat /dev/kmsg` prints them): each parses or is refused with a
/// message, never a panic; the parsed ones fed to the report follower end as reports (each
/// with its JSON) once the stream ends, and a quiet period ends what is open the same way.
pub fn kmsg(data: &[u8]) {
    use crate::report::kmsg::{KmsgReports, parse_record, records};
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let (mut all, mut idle) = (KmsgReports::new(Duration::from_secs(5)), KmsgReports::new(Duration::ZERO));
    for rec in records(data) {
        match parse_record(rec) {
            Ok(r) => {
                all.push(&r, t0);
                idle.push(&r, t0);
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    all.finish();
    idle.idle(t0);
    let count = |x: &mut KmsgReports| {
        let mut n = 0;
        while let Some(r) = x.pop() {
            let _ = r.to_json();
            n += 1;
        }
        n
    };
    assert_eq!(count(&mut all), count(&mut idle), "a quiet period ends reports as the end of input does");
}

/// crash `bt` output: the parser (every task counts once in the collapsed output) and the
/// JSON of each task.
pub fn collapse_crash(data: &[u8]) {
    use crate::collapse::crash::{Crash, CrashParser};
    let mut p = CrashParser::new();
    for (n, line) in crate::collapse::lines(data, 1) {
        p.push_line(n, line);
    }
    p.finish();
    let tasks = p.take();
    for t in &tasks {
        let _ = t.to_json();
    }
    let out = engine(1, 4096).run(Box::new(Crash::default()), data).expect("collapsing in-memory input");
    assert_eq!(out.stacks.total().whole(), tasks.len() as u64, "a task did not count once");
}

/// Folded stacks as collapse input (re-aggregated).
pub fn collapse_folded(data: &[u8]) {
    use crate::collapse::folded::Folded;
    same_on_two_threads(data, || Box::new(Folded::new()));
}

/// Folded stacks rendered: the SVG (flame graph and flame chart), the HTML page, and the
/// differential of the input against itself with addresses stripped (`kflame diff`).
pub fn render(data: &[u8]) {
    use crate::fold::diff::{DiffOptions, diff, read_profile, write_diff};
    use crate::fold::read::read_folded;
    use crate::render::html::{HtmlOptions, HtmlProfile, write_html};
    use crate::render::{Options, Profile, write_svg};

    for flame_chart in [false, true] {
        let mut profile = Profile::new(flame_chart, false);
        let mut diag = Diagnostics::new();
        if profile.read(BufReader::with_capacity(4096, data), &mut diag).is_err() {
            continue; // units that conflict: an error the CLI reports
        }
        profile.finish();
        let opts = Options { flame_chart, ..Options::default() };
        write_svg(&profile, &opts, None, &mut io::sink()).expect("writing an SVG to a sink");

        let mut stacks = if flame_chart {
            Stacks::Ordered(OrderedStacks::new())
        } else {
            Stacks::Counts(StackCounts::new())
        };
        let mut meta = Meta::default();
        read_folded(BufReader::with_capacity(4096, data), &mut meta, &mut diag, |l| {
            stacks.add(l.stack, l.weight)
        })
        .expect("reading in-memory input");
        let html = HtmlOptions { flamechart: flame_chart, ..HtmlOptions::default() };
        write_html(&mut io::sink(), &HtmlProfile::new(&stacks, &meta), &html)
            .expect("writing HTML to a sink");
    }

    let read = |opts| {
        let (mut meta, mut diag) = (Meta::default(), Diagnostics::new());
        read_profile(BufReader::with_capacity(4096, data), opts, &mut meta, &mut diag)
            .expect("reading in-memory input")
    };
    let opts = DiffOptions { normalize: true, strip_hex: true };
    let lines = diff(&read(DiffOptions::default()), &read(opts), opts);
    write_diff(&mut io::sink(), &lines).expect("writing to a sink");
}

/// perf.data images: sorted stacks, and time-ordered off-CPU pairing. Nothing of the host is
/// read for symbols (`Host::Isolated`, no kallsyms, an empty symbol root), so only the
/// container and the records are exercised, the same way on every machine.
pub fn perf_data(data: &[u8]) {
    use crate::collapse::perf::pairs::PairMode;
    use crate::perf_data::{Host, Options, Pairing, collapse_bytes};
    let opts = Options {
        kallsyms: Some(PathBuf::from("/dev/null")),
        symfs: Some(PathBuf::from("/nonexistent")),
        perf_map_dir: Some(PathBuf::from("/nonexistent")),
        host: Host::Isolated,
        ..Options::default()
    };
    let _ = collapse_bytes(data, &opts, Order::Sorted);
    let pairing = Pairing { comm: true, cpu: true, ..Pairing::new(PairMode::OffCpu) };
    let opts = Options { pairing: Some(pairing), ..opts };
    let _ = collapse_bytes(data, &opts, Order::Time);
}

/// JSON event lines into the scatter page: every non-blank line is an event or a skipped
/// line (never both, never neither), and the page of what was taken is written.
pub fn scatter_events(data: &[u8]) {
    use crate::render::html::scatter::{ScatterBuilder, ScatterOptions, write_scatter_page};
    let mut b = ScatterBuilder::new();
    let mut diag = Diagnostics::new();
    let taken = b.read_json_lines(data, &mut diag).expect("reading memory");
    let lines = crate::collapse::lines(data, 1)
        .filter(|(_, l)| !l.strip_suffix(b"\r").unwrap_or(l).iter().all(u8::is_ascii_whitespace))
        .count() as u64;
    assert_eq!(taken + diag.skipped(), lines, "a line was neither an event nor skipped");
    assert_eq!(taken as usize, b.len());
    let opts = ScatterOptions::default();
    let page = b.encode(&opts);
    let mut out = Vec::new();
    write_scatter_page(&mut out, &page, &opts).expect("writing to memory");
}

/// Reads `data` with an import reader summed and in time order (the same total, the same
/// error), with the limits the command line and the MCP server read with (a hostile file
/// must end in bounded time and memory there, so it must here), and writes what it read
/// back out through `export` and reads it again: the same stacks (unless the writer refuses
/// the weights, which it may). A profile with no stack writes as an empty profile, which
/// reads back as [`crate::import::ImportError::NoSamples`], as any empty profile does.
fn import(kind: crate::import::Kind, export: crate::export::Format, data: &[u8]) {
    use crate::import::{ImportError, Limits, read};
    let limits = Limits::default();
    let sorted = read(kind, data, false, &limits);
    let timed = read(kind, data, true, &limits);
    match (&sorted, &timed) {
        (Ok(a), Ok(b)) => assert_eq!(a.stacks.total(), b.stacks.total(), "summed and time order"),
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("summed and time-ordered reads disagree"),
    }
    let Ok(got) = sorted else { return };
    let mut out = Vec::new();
    let profile = crate::export::Profile { stacks: &got.stacks, meta: &got.meta, name: None };
    if crate::export::write(export, &profile, &mut out).is_err() {
        return;
    }
    let again = read(kind, &out, false, &limits);
    if got.stacks.is_empty() {
        assert_eq!(again.err(), Some(ImportError::NoSamples), "an empty profile read back");
        return;
    }
    let again = again.expect("reading what was written");
    let lines =
        |s: &Stacks| s.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w)).collect::<Vec<_>>();
    assert_eq!(lines(&again.stacks), lines(&got.stacks), "written and read back");
}

/// pprof profiles, gzipped or not: an error or stacks, never a panic or an unbounded
/// allocation; both orders agree; what is read writes and reads back the same.
pub fn import_pprof(data: &[u8]) {
    import(crate::import::Kind::Pprof, crate::export::Format::Pprof, data);
}

/// OTLP profiles requests: as [`import_pprof`], written back as OTLP.
pub fn import_otlp(data: &[u8]) {
    import(crate::import::Kind::Otlp, crate::export::Format::Otlp, data);
}

/// speedscope files: as [`import_pprof`].
pub fn import_speedscope(data: &[u8]) {
    import(crate::import::Kind::Speedscope, crate::export::Format::Speedscope, data);
}

/// Format detection on an arbitrary head: every format's score is at most 100, the format
/// detected is one scoring above 0, and what an input is (`content`, for the command line's
/// hints) is answered, never a panic.
pub fn detect(data: &[u8]) {
    use crate::collapse::{Format, content, detect};
    let _ = content(data);
    let _ = crate::collapse::looks_binary(data);
    let scores: Vec<(Format, u8)> = Format::ALL.iter().map(|&f| (f, f.detect(data))).collect();
    for (f, score) in &scores {
        assert!(*score <= 100, "{f} scored {score}");
    }
    if let Some(f) = detect(data) {
        assert!(scores.iter().any(|&(g, s)| g == f && s > 0), "{f} detected with a score of 0");
    }
}

/// The decompression layer of [`crate::open`] (gzip, zstd, xz by magic number, or the bytes
/// as they are): the head and up to 64 MiB of the rest read through, streamed (never held);
/// an error says which decompression failed.
pub fn decompress(data: &[u8]) {
    use std::io::Read;
    let check = |e: io::Error| {
        let msg = e.to_string();
        assert!(msg.contains("decompression failed"), "an error not naming its decoder: {msg}");
    };
    let input = match crate::open::Input::from_reader(
        "fuzz".into(),
        None,
        Box::new(io::Cursor::new(data.to_vec())),
    ) {
        Ok(input) => input,
        Err(e) => return check(e),
    };
    let _ = input.detect();
    let head = input.head.len() as u64;
    let (mut reader, mut buf, mut total) = (input.reader(), vec![0u8; 64 << 10], 0u64);
    while total < 64 << 20 {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return check(e),
        }
    }
    assert!(total >= head, "the head is read again");
}

/// Addresses to look up in a symbol table read from `data`: both ends, and a few taken from
/// the input itself.
fn addresses(data: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let taken = data.chunks_exact(8).take(16).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
    [0, 1, 0x1000, u64::MAX].into_iter().chain(taken)
}

/// An ELF file's symbol tables (`.symtab`, `.dynsym`) and build id, read from memory: an
/// error or a table, never a panic; every symbol found covers the address looked up.
pub fn symbols_elf(data: &[u8]) {
    use crate::symbols::ElfSymbols;
    let _ = crate::symbols::read_build_id(data);
    let Ok(table) = ElfSymbols::parse(data) else { return };
    let _ = table.build_id();
    for a in addresses(data) {
        if let Some(s) = table.lookup(a) {
            assert!(s.start <= a, "a symbol starting after the address looked up");
        }
    }
}

/// DWARF function names and inline chains (the `addr2line` path), read from an ELF image in
/// memory: an error, nothing, or names, never a panic.
pub fn symbols_dwarf(data: &[u8]) {
    use crate::symbols::DwarfNames;
    let Ok(Some(names)) = DwarfNames::parse(data) else { return };
    for a in addresses(data) {
        let _ = names.functions(a);
        let _ = names.frames(a);
    }
}

/// `/proc/kallsyms` text: parsed (malformed lines counted), looked up, never a panic; every
/// symbol found covers the address looked up.
pub fn kallsyms(data: &[u8]) {
    use crate::symbols::Kallsyms;
    let k = Kallsyms::parse(data);
    let _ = (k.len(), k.skipped());
    let _ = (k.end(), k.text_address());
    for a in addresses(data) {
        if let Some(s) = k.lookup(a) {
            assert!(s.start <= a, "a symbol starting after the address looked up");
        }
        let _ = k.lookup_module(a);
    }
}

/// Ring buffer records as `kflame record` reads them (a flags byte, an ELF image's length
/// and bytes, then records): decoded, and the user stacks of samples with stack copies
/// unwound with the image's tables; never a panic, and every frame after the first is a
/// marker or inside the image's mapping.
pub fn record_unwind(data: &[u8]) {
    crate::record::fuzz_ring(data)
}

/// JIT perf maps (`/tmp/perf-PID.map`): parsed, looked up and turned into a symbol table,
/// never a panic.
pub fn perf_map(data: &[u8]) {
    use crate::symbols::PerfMap;
    let map = PerfMap::parse(&String::from_utf8_lossy(data));
    for a in addresses(data) {
        let _ = map.lookup(a);
    }
    let table = map.to_symbols();
    for a in addresses(data) {
        let _ = table.lookup(a);
    }
}
