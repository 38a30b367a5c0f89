//! perf.data read directly against the project's own `perf script` collapser on the text
//! perf 6.1 printed for the same file (committed next to each fixture, see
//! tests/data/perf-data/README.md): `kflame collapse perf.data` must equal
//! `perf script | kflame collapse`, frame for frame and weight for weight, with the same
//! options. (tests/perf_data.rs checks the same files against an independent parser.)

use std::path::{Path, PathBuf};

use kflame::collapse::perf::{PerfOptions, PerfScript, PerfWeight};
use kflame::collapse::{Engine, Order};
use kflame::fold::Unit;
use kflame::perf_data::{Host, Options, collapse_file};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data")
}

/// Fixtures recorded on the boot whose kallsyms is `kallsyms-4a5a9b0a.txt`.
const FIXTURES: &[&str] = &["perf-burn-fp-fp", "perf-burn-nofp-fp", "perf-kmalloc"];

type Folded = Vec<(String, String)>;

fn folded(stacks: &kflame::fold::Stacks) -> Folded {
    stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.to_string()))
        .collect()
}

fn from_data(name: &str, opts: &Options) -> Folded {
    let out = collapse_file(&data_dir().join(format!("{name}.data")), opts, Order::Sorted)
        .unwrap_or_else(|e| panic!("{name}.data: {e}"));
    folded(&out.stacks)
}

fn from_script(name: &str, opts: PerfOptions) -> Folded {
    let text = std::fs::read(data_dir().join(format!("{name}.script.txt"))).expect("script text");
    let out = Engine::single_threaded().run(Box::new(PerfScript::new(opts)), &text[..]).expect("collapse");
    folded(&out.stacks)
}

fn assert_same(name: &str, data: &Folded, script: &Folded) {
    assert!(!script.is_empty(), "{name}: the script text gave no stacks");
    let missing: Vec<_> = script.iter().filter(|l| !data.contains(l)).take(5).collect();
    let extra: Vec<_> = data.iter().filter(|l| !script.contains(l)).take(5).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{name}: perf.data and perf script differ\nonly in perf script: {missing:#?}\nonly in perf.data: {extra:#?}"
    );
}

fn data_options() -> Options {
    Options {
        kallsyms: Some(data_dir().join("kallsyms-4a5a9b0a.txt")),
        symfs: Some(data_dir().join("symfs")),
        host: Host::Isolated,
        ..Options::default()
    }
}

#[test]
fn sample_counts() {
    for name in FIXTURES {
        let script = from_script(name, PerfOptions { weight: PerfWeight::Samples, ..PerfOptions::default() });
        let data = from_data(name, &Options { counts: true, ..data_options() });
        assert_same(name, &data, &script);
    }
}

/// (Process-name options are left out: perf script's default fields print the thread id
/// only, so the text cannot know the PID that perf.data records.)
#[test]
fn annotations() {
    for name in FIXTURES {
        let script = from_script(
            name,
            PerfOptions {
                annotate_kernel: true,
                annotate_jit: true,
                include_addrs: true,
                weight: PerfWeight::Samples,
                ..PerfOptions::default()
            },
        );
        let opts = Options {
            annotate_kernel: true,
            annotate_jit: true,
            include_addrs: true,
            counts: true,
            ..data_options()
        };
        assert_same(name, &from_data(name, &opts), &script);
    }
}

#[test]
fn cpu_clock_periods() {
    for name in ["perf-burn-fp-fp", "perf-burn-nofp-fp"] {
        let script = from_script(name, PerfOptions::default());
        assert_same(name, &from_data(name, &data_options()), &script);
    }
}

/// kmem allocation tracepoints weigh allocated bytes by default: the perf.data reader takes
/// `bytes_alloc` from each sample's raw payload, at the offset given by the format text in
/// the file's tracing-data section; the text collapser reads `bytes_alloc=` from the line.
#[test]
fn kmem_bytes_by_default() {
    let name = "perf-kmalloc";
    let text = std::fs::read(data_dir().join(format!("{name}.script.txt"))).expect("script text");
    let script = Engine::single_threaded()
        .run(Box::new(PerfScript::new(PerfOptions::default())), &text[..])
        .expect("collapse");
    let data = collapse_file(&data_dir().join(format!("{name}.data")), &data_options(), Order::Sorted)
        .unwrap_or_else(|e| panic!("{name}.data: {e}"));
    assert_eq!(script.meta.unit, Unit::Bytes);
    assert_eq!(data.meta.unit, Unit::Bytes);
    assert_same(name, &folded(&data.stacks), &folded(&script.stacks));
    let counts = from_data(name, &Options { counts: true, ..data_options() });
    assert_ne!(counts, folded(&data.stacks), "bytes and sample counts should differ on kmalloc samples");
}

fn local_options() -> Options {
    Options { kallsyms: Some(data_dir().join("kallsyms-local.txt")), ..data_options() }
}

/// A `gcc -O2 -g` binary unwound from `--call-graph dwarf` samples: perf asks the DWARF
/// for the inline chain of every unwound frame and prints `mix (inlined)`,
/// `churn (inlined)`, `hot_path (DSO)`, and the clone `scaled.constprop.0` under its DWARF
/// name `scaled`. The reader finds the same frames in-process; `--inline` marks them `_[i]`
/// on both sides, and `--no-inline` matches `perf script --no-inline`.
#[test]
fn dwarf_inline_frames() {
    let name = "inline-dwarf";
    let script = from_script(name, PerfOptions::default());
    let data = from_data(name, &local_options());
    assert_same(name, &data, &script);
    assert!(data.iter().any(|(s, _)| s.contains(";driver;hot_path;churn;mix")), "{data:#?}");
    assert!(data.iter().any(|(s, _)| s.contains(";driver;scaled;churn")), "{data:#?}");

    let marked = PerfOptions { mark_inlined: true, ..PerfOptions::default() };
    let data = from_data(name, &Options { mark_inlined: true, ..local_options() });
    assert_same(name, &data, &from_script(name, marked));
    assert!(data.iter().any(|(s, _)| s.contains(";driver;hot_path;churn_[i];mix_[i]")), "{data:#?}");

    let plain = from_data(name, &Options { no_inline: true, ..local_options() });
    assert_same(name, &plain, &from_script("inline-dwarf.noinline", PerfOptions::default()));
    assert!(plain.iter().all(|(s, _)| !s.contains("churn")), "{plain:#?}");
}

/// C++ built by gcc: the function in an anonymous namespace has no linkage name in DWARF.
/// addr2line names it after the symbol table the first time it is the innermost function
/// (so perf shows the symbol, not an inline frame), and keeps that name afterwards, also
/// as the caller of inlined code; before that first time it is the plain `work (inlined)`.
#[test]
fn cxx_functions_without_linkage_names() {
    let name = "inline-cxx";
    let data = from_data(name, &local_options());
    assert_same(name, &data, &from_script(name, PerfOptions::default()));
    let has = |tail: &str| data.iter().any(|(s, _)| s.ends_with(tail));
    assert!(has(";app::Runner::run;work;app::Acc<unsigned int>::add"), "{data:#?}");
    assert!(has(";app::Runner::run;app::(anonymous namespace)::work"), "{data:#?}");
    assert!(
        has(";app::Runner::run;app::(anonymous namespace)::work;app::Acc<unsigned int>::add"),
        "{data:#?}"
    );
}

/// Frame-pointer call chains of the same binary get no inline frames from perf 6.1.
#[test]
fn frame_pointer_chains_have_no_inline_frames() {
    let name = "inline-fp";
    let data = from_data(name, &local_options());
    assert_same(name, &data, &from_script(name, PerfOptions::default()));
    assert!(data.iter().all(|(s, _)| !s.contains("churn")), "{data:#?}");
}

/// `node --perf-basic-prof` wrote `/tmp/perf-PID.map` while recording (a copy is in
/// `perf-maps/`): its JIT frames are named from it, `_[j]` with `--jit`.
#[test]
fn jit_frames_from_the_perf_map() {
    let name = "jit-node";
    let opts = Options { perf_map_dir: Some(data_dir().join("perf-maps")), ..local_options() };
    let data = from_data(name, &opts);
    assert_same(name, &data, &from_script(name, PerfOptions::default()));
    assert!(data.iter().any(|(s, _)| s.ends_with(";JS:*leaf /opt/kflame-demo/jit.js:3:14")), "{data:#?}");
    let jit = PerfOptions { annotate_jit: true, ..PerfOptions::default() };
    let marked = from_data(name, &Options { annotate_jit: true, ..opts });
    assert_same(name, &marked, &from_script(name, jit));
    assert!(marked.iter().any(|(s, _)| s.contains("JS:*leaf /opt/kflame-demo/jit.js:3:14_[j]")));

    // Without the map file the frames keep the map's name, and the reader says why.
    let opts = Options { perf_map_dir: Some(data_dir().join("symfs")), ..local_options() };
    let out = collapse_file(&data_dir().join("jit-node.data"), &opts, Order::Sorted).unwrap();
    let bare = folded(&out.stacks);
    assert!(bare.iter().all(|(s, _)| !s.contains("JS:")));
    assert!(bare.iter().any(|(s, _)| s.contains("[perf-")), "{bare:#?}");
    let note = out.diag.get("unreadable binary").expect("a note names the missing map");
    assert!(note.message.contains("perf-") && note.message.contains(".map"), "{}", note.message);
}

/// The build-id of the `[vdso]` recorded in vdso-fp.data and vdso-dwarf.data
/// (`perf buildid-list`).
const RECORDED_VDSO: &str = "a599807156a2a62fe956a82e388aeeabc874119c";

/// vDSO frames (`clock_gettime` in a loop) are named from perf's build-id cache, which
/// is `SYMFS/.debug` under `--symfs`. The kernel's vDSO is kernel code and not committed; a
/// stand-in built by `make-vdso-standin.sh` is: the recorded build-id and the vDSO's exported
/// functions at their offsets in the image, without code. Frame-pointer chains need nothing
/// more, so the output equals perf script's, which read the real image.
#[test]
fn vdso_frames_from_a_stored_image() {
    let symfs =
        symfs_with_cached_vdso("standin", &std::fs::read(data_dir().join("vdso-standin.so")).unwrap());
    let opts = Options { symfs: Some(symfs), ..local_options() };
    let name = "vdso-fp";
    let out = collapse_file(&data_dir().join(format!("{name}.data")), &opts, Order::Sorted).unwrap();
    let data = folded(&out.stacks);
    assert_same(name, &data, &from_script(name, PerfOptions::default()));
    // The GLOBAL `__vdso_` name is chosen over its WEAK alias at the same address.
    assert!(data.iter().any(|(s, _)| s.ends_with(";main;__vdso_clock_gettime")), "{data:#?}");
    assert!(!data.iter().any(|(s, _)| s.contains(";clock_gettime")), "{data:#?}");
    assert!(out.diag.get("unreadable binary").is_none(), "{:?}", out.diag);
}

/// Without a copy of the recorded vDSO, and with host lookups off, its frames stay
/// `[[vdso]]` whatever kernel runs the test, and a note names the missing build-id.
#[test]
fn vdso_frames_without_an_image_are_named_after_the_mapping() {
    for name in ["vdso-fp", "vdso-dwarf"] {
        let out =
            collapse_file(&data_dir().join(format!("{name}.data")), &local_options(), Order::Sorted).unwrap();
        let stacks = folded(&out.stacks);
        assert!(stacks.iter().any(|(s, _)| s.ends_with(";[[vdso]]")), "{name}: {stacks:#?}");
        assert!(!stacks.iter().any(|(s, _)| s.contains("__vdso_")), "{name}: {stacks:#?}");
        let note = out.diag.get("unreadable binary").expect("a note says the vDSO is missing");
        assert!(note.message.contains(RECORDED_VDSO), "{}", note.message);
    }
}

/// Live test (reads this process's own vDSO through /proc/self): when the running kernel
/// is the recording one, its vDSO names the frames as perf's cached copy did, also when
/// unwinding `--call-graph dwarf` through the vDSO's own unwind tables into libc, both from
/// a build-id cache and from the running image itself. On any other kernel it checks that
/// the running vDSO is not taken for the recorded one.
#[test]
#[allow(clippy::print_stderr)]
fn live_vdso_frames_from_the_running_kernel() {
    let running = Options { host: Host::Running, ..local_options() };
    let out = collapse_file(&data_dir().join("vdso-fp.data"), &running, Order::Sorted).unwrap();
    let stacks = folded(&out.stacks);
    let Some((image, _)) = live_own_vdso().filter(|(_, id)| id == RECORDED_VDSO) else {
        eprintln!("this kernel's vDSO is not the recorded one: checking the fallback only");
        assert!(stacks.iter().any(|(s, _)| s.ends_with(";[[vdso]]")), "{stacks:#?}");
        assert!(out.diag.get("unreadable binary").is_some_and(|n| n.message.contains(RECORDED_VDSO)));
        return;
    };
    assert_same("vdso-fp", &stacks, &from_script("vdso-fp", PerfOptions::default()));
    let opts = Options { symfs: Some(symfs_with_cached_vdso("live", &image)), ..local_options() };
    for name in ["vdso-fp", "vdso-dwarf"] {
        assert_same(name, &from_data(name, &opts), &from_script(name, PerfOptions::default()));
    }
    let data = from_data("vdso-dwarf", &opts);
    assert!(data.iter().any(|(s, _)| s.ends_with(";[libc.so.6];__vdso_clock_gettime")), "{data:#?}");
}

/// A symfs of the fixture binaries plus perf's build-id cache holding `image` as the
/// recorded vDSO.
fn symfs_with_cached_vdso(tag: &str, image: &[u8]) -> PathBuf {
    let id = RECORDED_VDSO;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("vdso-symfs-{tag}"));
    let cache = dir.join(".debug/.build-id").join(&id[..2]).join(&id[2..]);
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("vdso"), image).unwrap();
    let opt = dir.join("opt");
    if !opt.exists() {
        std::os::unix::fs::symlink(data_dir().join("symfs/opt"), opt).unwrap();
    }
    dir
}

/// This process's `[vdso]` image and its build-id, read independently of the reader (live
/// tests only).
fn live_own_vdso() -> Option<(Vec<u8>, String)> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
    let (start, end) = (u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(end, 16).ok()?);
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(start)).ok()?;
    let mut image = vec![0; (end - start) as usize];
    mem.read_exact(&mut image).ok()?;
    let id = kflame::symbols::read_build_id(&image)?;
    Some((image, id.iter().map(|b| format!("{b:02x}")).collect()))
}
