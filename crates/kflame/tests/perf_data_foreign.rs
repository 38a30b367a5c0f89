//! perf.data files recorded by others (other perf versions from 3.8 to 6.12, pipe mode,
//! Intel PT, fixed periods, old kernel maps, read values of event groups) read directly,
//! against `perf script | kflame collapse` on the text perf 6.1 printed for the same file
//! (committed next to each, see tests/data/perf-data/README.md). The files' kernels are not
//! this one and their binaries are absent, so the text was made with an empty `--symfs` and
//! `--kallsyms` and the reader runs with `Host::Isolated`: both sides name the same frames
//! `[unknown]`/`[dso]`. Kernel frames are compared as "a kernel frame" only: perf names a
//! user-mode address in kernel space `[unknown]` where the kernel map alone would say
//! `[kernel.kallsyms]`, which neither side can check without the recorded kernel.
//! Every file of the corpus these come from is compared (`every_corpus_file_agrees_with_
//! perf_script`), as `bench/perfdata-corpus.sh` compares them with the release CLI and
//! perf run on the spot. Each check prints its figures (total weights, overlap): `cargo
//! test --test perf_data_foreign -- --nocapture`.
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use kflame::collapse::perf::{PerfOptions, PerfScript};
use kflame::collapse::{Engine, Order, Output};
use kflame::perf_data::{Host, Options, collapse_bytes, collapse_file};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data")
}

fn options() -> Options {
    Options { annotate_kernel: true, host: Host::Isolated, ..Options::default() }
}

/// Folded stacks by text, kernel frames (`_[k]`) as one `[k]` per run of them.
fn folded(out: &Output) -> HashMap<String, u64> {
    let mut stacks = HashMap::new();
    for (stack, weight) in out.stacks.in_output_order() {
        let text = String::from_utf8_lossy(stack);
        let mut frames: Vec<&str> = Vec::new();
        for f in text.split(';') {
            let f = if f.ends_with("_[k]") { "[k]" } else { f };
            if f == "[k]" && frames.last() == Some(&"[k]") {
                continue;
            }
            frames.push(f);
        }
        *stacks.entry(frames.join(";")).or_insert(0) += weight.whole();
    }
    stacks
}

fn script_text(name: &str) -> Vec<u8> {
    let plain = data_dir().join(format!("{name}.script.txt"));
    if let Ok(text) = std::fs::read(&plain) {
        return text;
    }
    let gz = std::fs::read(data_dir().join(format!("{name}.script.txt.gz"))).expect("script text");
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut text).expect("gunzip");
    text
}

fn from_script(name: &str) -> Output {
    let opts = PerfOptions { annotate_kernel: true, ..PerfOptions::default() };
    Engine::single_threaded().run(Box::new(PerfScript::new(opts)), &script_text(name)[..]).expect("collapse")
}

fn from_data(name: &str, opts: &Options) -> Output {
    let plain = data_dir().join(format!("{name}.data"));
    if plain.exists() {
        return collapse_file(&plain, opts, Order::Sorted).unwrap_or_else(|e| panic!("{name}.data: {e}"));
    }
    // The larger copies are gzipped; read in memory, as the CLI reads stdin.
    let gz = std::fs::read(data_dir().join(format!("{name}.data.gz")))
        .unwrap_or_else(|e| panic!("{name}.data(.gz): {e}"));
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut bytes).expect("gunzip");
    collapse_bytes(&bytes, opts, Order::Sorted).unwrap_or_else(|e| panic!("{name}.data.gz: {e}"))
}

/// Total weights of both sides and the share of perf script's weight on stacks both name
/// identically.
struct Agreement {
    data: u64,
    script: u64,
    overlap: f64,
    /// The heaviest stacks only perf script's text has.
    only_script: Vec<(String, u64)>,
}

fn agreement(data: &Output, script: &Output) -> Agreement {
    let (d, s) = (folded(data), folded(script));
    let (td, ts): (u64, u64) = (d.values().sum(), s.values().sum());
    let both: u64 = s.iter().map(|(k, w)| (*w).min(d.get(k).copied().unwrap_or(0))).sum();
    let overlap = both as f64 / ts.max(1) as f64;
    let mut only: Vec<(String, u64)> = s.into_iter().filter(|(k, _)| !d.contains_key(k)).collect();
    only.sort_by_key(|(_, w)| std::cmp::Reverse(*w));
    only.truncate(5);
    Agreement { data: td, script: ts, overlap, only_script: only }
}

/// Same total weight, and at least 99% of it on stacks both name identically.
fn assert_agree(name: &str, data: &Output, script: &Output) {
    let a = agreement(data, script);
    println!("{name}: total weight {} (perf script {}), overlap {:.4}", a.data, a.script, a.overlap);
    assert!(a.script > 0, "{name}: the script text gave no stacks");
    assert_eq!(a.data, a.script, "{name}: total weight differs from perf script's");
    assert!(a.overlap >= 0.99, "{name}: overlap {:.4}; only in perf script: {:#?}", a.overlap, a.only_script);
}

fn check(name: &str) -> Output {
    let data = from_data(name, &options());
    assert_agree(name, &data, &from_script(name));
    data
}

/// Samples without a call chain fold to `comm;symbol` or `comm;[dso]` of their sampled
/// address, as perf script prints it on the sample's line (perf 4.14, branch stacks).
#[test]
fn samples_without_call_chain_keep_their_address() {
    let data = check("quipper/branch-4.14");
    let stacks = folded(&data);
    assert!(stacks.contains_key("echo;[ld-2.23.so]"), "{stacks:#?}");
    assert!(stacks.contains_key("echo;[k]"), "{stacks:#?}");
}

/// Pipe mode (`perf record -o -`): attributes and features come as records (perf 6.8 and
/// 6.12, whose event names come from the EVENT_DESC feature record), from a file or, as
/// the CLI reads stdin, from memory.
#[test]
fn pipe_mode_from_a_file_and_from_memory() {
    for name in ["quipper/piped.header_features_aligned-6.12", "quipper/piped.header_feautres_group_desc-6.8"]
    {
        let data = check(name);
        let bytes = std::fs::read(data_dir().join(format!("{name}.data"))).unwrap();
        let mem = collapse_bytes(&bytes, &options(), Order::Sorted).unwrap();
        assert_eq!(folded(&mem), folded(&data), "{name}");
    }
    let data = from_data("quipper/piped.header_feautres_group_desc-6.8", &options());
    assert_eq!(data.meta.event.as_deref(), Some("cycles:u"));
}

/// Intel PT: the AUXTRACE records' trace data follows them and is stepped over (not
/// decoded, as `perf script --no-itrace`); the cycles samples after it are all read. Its
/// `-c N` events record no period: every sample weighs N.
#[test]
fn auxtrace_data_is_skipped_and_fixed_periods_weigh() {
    let data = check("quipper/intel_pt-4.14");
    assert_eq!(data.diag.skipped(), 0);
    let notes = data.diag.report("intel_pt").to_string();
    assert!(notes.contains("AUX trace data"), "{notes}");
    assert_eq!(data.meta.unit, kflame::fold::Unit::Period);
    let counts = from_data("quipper/intel_pt-4.14", &Options { counts: true, ..options() });
    let (w, n): (u64, u64) = (folded(&data).values().sum(), folded(&counts).values().sum());
    assert!(w > n * 1000, "weighted {w} vs {n} samples: fixed periods were not applied");
}

/// perf 3.8 recorded the kernel map starting far below the kernel: user-mode addresses
/// outside any user mapping (garbage frame pointers) are `[unknown]`, not kernel frames.
#[test]
fn old_kernel_maps_do_not_claim_user_addresses() {
    let data = check("quipper/callgraph-3.8");
    let stacks = folded(&data);
    let unknown_under_kernel = stacks.keys().filter(|k| k.starts_with("chrome;[k];[chrome]")).count();
    assert_eq!(unknown_under_kernel, 0, "{stacks:#?}");
}

/// A user-mode sample at a kernel-space address (perf 4.4): `[unknown]`, as perf names it.
/// Its two LOST_SAMPLES records (one sample each; `perf report`: "Total Lost Samples: 2")
/// are said in the notes.
#[test]
fn lost_samples_file() {
    let data = check("quipper/lost_samples-4.4");
    let lost = data.diag.get("lost samples").expect("a lost samples note");
    assert_eq!(lost.count, 2);
    assert!(lost.message.contains("LOST_SAMPLES"), "{}", lost.message);
}

/// A record whose size field is damaged, 70% into callgraph-3.8's records: reading stops
/// there, the stacks before it are kept, and one line says how much was lost (bytes of the
/// data section) and how many samples were read.
#[test]
fn a_damaged_record_says_what_was_lost() {
    let mut bytes = std::fs::read(data_dir().join("quipper/callgraph-3.8.data")).unwrap();
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (start, size) = (word(&bytes, 40) as usize, word(&bytes, 48) as usize);
    // Walk the records: { u32 type, u16 misc, u16 size }.
    let mut heads = Vec::new();
    let mut at = start;
    while at < start + size {
        heads.push((at, u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())));
        at += u16::from_le_bytes(bytes[at + 6..at + 8].try_into().unwrap()) as usize;
    }
    let (damaged, _) = heads[heads.len() * 7 / 10];
    let samples_before = heads.iter().filter(|(at, t)| *at < damaged && *t == 9).count();
    bytes[damaged + 6..damaged + 8].copy_from_slice(&3u16.to_le_bytes());
    let out = collapse_bytes(&bytes, &options(), Order::Sorted).expect("read up to the damage");
    assert!(!out.stacks.is_empty());
    assert_eq!(out.diag.skipped(), 1);
    let report = out.diag.report("callgraph-3.8").to_string();
    let line = report.lines().find(|l| l.contains("damaged record")).expect("a damaged record line");
    let lost = start + size - damaged;
    for want in [
        format!("byte {} of the data section", damaged - start),
        format!("its last {lost} bytes"),
        format!("the {samples_before} samples read before it are kept"),
    ] {
        assert!(line.contains(&want), "{want:?} not in {line}");
    }
}

/// `-e '{cpu-clock,task-clock}:S'` with perf 6.1 on Linux 6.18: read values with
/// GROUP | ID | LOST. Each sample is delivered once per group member, weighing what its
/// counter advanced, as perf does.
#[test]
fn group_read_values_with_lost_counts() {
    let data = check("group-read-lost");
    assert_eq!(data.diag.skipped(), 0);
}

/// A hybrid CPU's `cpu_core/cycles:ppp/` and `cpu_atom/cycles:ppp/` are one `cycles`
/// event: `--event-filter cycles` selects them (it selected nothing before), as the default
/// (the first sample's event and its siblings) does. Here only the core PMU sampled.
#[test]
fn hybrid_pmus_are_one_event() {
    let data = check("quipper/hybrid_topology");
    for filter in ["cycles", "cycles:ppp", "cpu_core/cycles:ppp/"] {
        let opts = Options { event_filter: Some(filter.into()), ..options() };
        let filtered = from_data("quipper/hybrid_topology", &opts);
        assert_eq!(folded(&filtered), folded(&data), "--event-filter {filter}");
    }
    let none = from_data(
        "quipper/hybrid_topology",
        &Options { event_filter: Some("instructions".into()), ..options() },
    );
    assert!(none.stacks.is_empty());
    let notes = none.diag.report("hybrid").to_string();
    assert!(
        notes.contains("no event of the file is named `instructions`")
            && notes.contains("cpu_atom/cycles:ppp/"),
        "{notes}"
    );
}

/// Live (reads this machine): a file recorded on another machine's kernel is not
/// symbolized with this machine's /proc/kallsyms even when host lookups are allowed; the
/// notes say that kernel names need --kallsyms.
#[test]
fn live_foreign_kernel_is_not_symbolized_with_this_hosts_kallsyms() {
    let opts = Options { host: Host::Running, ..options() };
    let data = from_data("quipper/lost_samples-4.4", &opts);
    for (stack, _) in data.stacks.in_output_order() {
        let stack = String::from_utf8_lossy(stack);
        for frame in stack.split(';').filter(|f| f.ends_with("_[k]")) {
            assert!(frame == "[[kernel.kallsyms]]_[k]" || frame.starts_with("[unknown"), "{stack}");
        }
    }
    let notes = data.diag.report("lost_samples").to_string();
    assert!(notes.contains("--kallsyms"), "{notes}");
}

/// `perf record -z` (perf 6.1, zstd level 1): PERF_RECORD_COMPRESSED records, written to a
/// file and in pipe mode (read from memory, as the CLI reads stdin).
#[test]
fn compressed_records_file_and_pipe() {
    let data = check("compressed");
    assert_eq!(data.diag.skipped(), 0);
    let bytes = std::fs::read(data_dir().join("compressed-pipe.data")).unwrap();
    let piped = collapse_bytes(&bytes, &options(), Order::Sorted).unwrap();
    assert_agree("compressed-pipe", &piped, &from_script("compressed-pipe"));
}

/// The layout of perf 6.16 (COMPRESSED2 records, 136-byte attributes), made from
/// compressed-pipe.data by `make-newer-perf.py` (perf 6.1 cannot read it): the same stacks
/// as the file it was made from, and as perf 6.1's text of that file.
#[test]
fn compressed2_and_larger_attributes_of_newer_perf() {
    let read = |name: &str| {
        let bytes = std::fs::read(data_dir().join(name)).unwrap();
        collapse_bytes(&bytes, &options(), Order::Sorted).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let newer = read("compressed2-attr136-pipe.data");
    assert_eq!(newer.diag.skipped(), 0);
    assert_eq!(folded(&newer), folded(&read("compressed-pipe.data")));
    assert_agree("compressed2-attr136-pipe", &newer, &from_script("compressed-pipe"));
}

/// The target: every file of the quipper corpus (all 18 are copied under
/// `quipper/`, the larger ones gzipped) read directly gives the same total weight as perf
/// 6.1's `perf script` text of it collapsed, and at least 99% of that weight on identical
/// stacks. Prints one line per file; fails after all files were compared.
#[test]
fn every_corpus_file_agrees_with_perf_script() {
    let dir = data_dir().join("quipper");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("quipper fixtures")
        .filter_map(|e| {
            let file = e.ok()?.file_name().into_string().ok()?;
            let stem = file.strip_suffix(".data.gz").or_else(|| file.strip_suffix(".data"))?;
            Some(format!("quipper/{stem}"))
        })
        .collect();
    names.sort();
    assert_eq!(names.len(), 18, "the corpus has 18 files: {names:#?}");
    let mut missed = Vec::new();
    println!("{:<48} {:>12} {:>12} {:>8}", "file", "kflame", "perf script", "overlap");
    for name in &names {
        let data = from_data(name, &options());
        let a = agreement(&data, &from_script(name));
        let ok = a.script > 0 && a.data == a.script && a.overlap >= 0.99;
        println!(
            "{:<48} {:>12} {:>12} {:>8.4}{}",
            name.trim_start_matches("quipper/"),
            a.data,
            a.script,
            a.overlap,
            if ok { "" } else { "  MISSED" }
        );
        if !ok {
            missed.push(format!("{name}: only in perf script: {:#?}", a.only_script));
        }
    }
    assert!(missed.is_empty(), "targets missed:\n{}", missed.join("\n"));
}
