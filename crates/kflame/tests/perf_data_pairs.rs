//! `--mode syscalls|offcpu|probes` on perf.data against the perf script text front end on
//! the `perf script --ns` text perf 6.1 printed for the same file (tests/data/perf-data,
//! `pairs-*`, see its README): the same folded stacks, root frames and nanosecond weights,
//! and the same `--events-json` lines.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kflame::collapse::events_json::EventLog;
use kflame::collapse::perf::pairs::{PairMode, PerfPairs, PerfPairsOptions};
use kflame::collapse::{Engine, Order, Output};
use kflame::fold::Unit;
use kflame::perf_data::{Host, Options, Pairing, collapse_file};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/perf-data")
}

const FIXTURES: &[(&str, PairMode)] = &[
    ("pairs-syscalls", PairMode::Syscalls),
    ("pairs-syscalls-x", PairMode::Syscalls),
    ("pairs-syscalls-nocc", PairMode::Syscalls),
    ("pairs-offcpu", PairMode::OffCpu),
    ("pairs-probes", PairMode::Probes),
];

type Folded = Vec<(String, String)>;

fn folded(out: &Output) -> Folded {
    out.stacks
        .in_output_order()
        .into_iter()
        .map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w.to_string()))
        .collect()
}

/// A writer whose bytes the test reads back.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Root-frame options of one comparison.
#[derive(Copy, Clone)]
struct Roots {
    comm: bool,
    pid: bool,
    cpu: bool,
}

fn from_data(name: &str, mode: PairMode, r: Roots, events: Option<EventLog>) -> Output {
    from_data_in(name, mode, r, events, Order::Sorted)
}

fn from_data_in(name: &str, mode: PairMode, r: Roots, events: Option<EventLog>, order: Order) -> Output {
    let opts = Options {
        kallsyms: Some(data_dir().join("kallsyms-pairs.txt")),
        symfs: Some(data_dir().join("symfs")),
        include_pid: r.pid,
        pairing: Some(Pairing { comm: r.comm, cpu: r.cpu, events, ..Pairing::new(mode) }),
        host: Host::Isolated,
        ..Options::default()
    };
    collapse_file(&data_dir().join(format!("{name}.data")), &opts, order)
        .unwrap_or_else(|e| panic!("{name}.data: {e}"))
}

fn from_script(name: &str, mode: PairMode, r: Roots, events: Option<EventLog>) -> Output {
    from_script_in(name, mode, r, events, Engine::single_threaded())
}

fn from_script_in(name: &str, mode: PairMode, r: Roots, events: Option<EventLog>, engine: Engine) -> Output {
    let text = std::fs::read(data_dir().join(format!("{name}.ns.script.txt"))).expect("script text");
    let opts = PerfPairsOptions { comm: r.comm, pid: r.pid, cpu: r.cpu, ..PerfPairsOptions::new(mode) };
    engine.run(Box::new(PerfPairs::new(opts, events)), &text[..]).expect("collapse")
}

fn assert_same(name: &str, data: &Output, script: &Output) {
    let (d, s) = (folded(data), folded(script));
    assert!(!s.is_empty(), "{name}: the script text gave no stacks");
    assert_eq!(data.meta.unit, Unit::Nanoseconds, "{name}");
    assert_eq!(data.meta, script.meta, "{name}");
    let missing: Vec<_> = s.iter().filter(|l| !d.contains(l)).take(5).collect();
    let extra: Vec<_> = d.iter().filter(|l| !s.contains(l)).take(5).collect();
    assert!(
        missing.is_empty() && extra.is_empty() && d.len() == s.len(),
        "{name}: perf.data and perf script differ\nonly in perf script: {missing:#?}\nonly in perf.data: {extra:#?}"
    );
}

#[test]
fn paired_durations_equal_the_script_text() {
    let plain = Roots { comm: false, pid: false, cpu: false };
    for &(name, mode) in FIXTURES {
        let data = from_data(name, mode, plain, None);
        assert_same(name, &data, &from_script(name, mode, plain, None));
    }
}

/// `--time-order`: intervals in the order they close, consecutive equal stacks merged.
#[test]
fn time_order_equals_the_script_text() {
    let plain = Roots { comm: false, pid: false, cpu: false };
    for &(name, mode) in FIXTURES {
        let data = from_data_in(name, mode, plain, None, Order::Time);
        let engine = Engine { order: Order::Time, ..Engine::single_threaded() };
        let script = from_script_in(name, mode, plain, None, engine);
        assert!(!folded(&script).is_empty(), "{name}");
        assert_eq!(folded(&data), folded(&script), "{name}");
    }
}

#[test]
fn root_frames_equal_the_script_text() {
    for &(name, mode) in FIXTURES {
        for r in [Roots { comm: true, pid: false, cpu: true }, Roots { comm: false, pid: true, cpu: false }] {
            let data = from_data(name, mode, r, None);
            assert_same(name, &data, &from_script(name, mode, r, None));
        }
    }
}

#[test]
fn events_json_equals_the_script_text() {
    let plain = Roots { comm: false, pid: false, cpu: false };
    for &(name, mode) in FIXTURES {
        let (dbuf, sbuf) = (Buf::default(), Buf::default());
        let (dlog, slog) = (EventLog::new(dbuf.clone()), EventLog::new(sbuf.clone()));
        from_data(name, mode, plain, Some(dlog.clone()));
        from_script(name, mode, plain, Some(slog.clone()));
        let written = dlog.finish().expect("events");
        slog.finish().expect("events");
        assert!(written > 0, "{name}: no paired events");
        let d = dbuf.0.lock().expect("buffer").clone();
        let s = sbuf.0.lock().expect("buffer").clone();
        assert_eq!(String::from_utf8_lossy(&d), String::from_utf8_lossy(&s), "{name}");
    }
}

/// Every `sched_switch` state the off-CPU capture holds is read from the raw `prev_state`
/// bits: the labels are those of the text.
/// A recording without `-g`: every interval sits under a `[no stack]` frame (as the script
/// text front end writes it), and the note says so.
#[test]
fn intervals_without_call_chains_keep_a_placeholder_frame() {
    let plain = Roots { comm: false, pid: false, cpu: false };
    let out = from_data("pairs-syscalls-nocc", PairMode::Syscalls, plain, None);
    let stacks = folded(&out);
    assert!(stacks.len() > 5, "{stacks:?}");
    assert!(
        stacks.iter().all(|(s, _)| s.starts_with("syscall:") && s.ends_with(";[no stack]")),
        "{stacks:?}"
    );
    let note = out.diag.get("no call chain").expect("a note for the samples without call chains");
    assert!(note.message.contains("kept under a `[no stack]` frame"), "{}", note.message);
}

#[test]
fn offcpu_states_come_from_the_raw_bits() {
    let plain = Roots { comm: false, pid: false, cpu: false };
    let data = folded(&from_data("pairs-offcpu", PairMode::OffCpu, plain, None));
    let mut states: Vec<&str> = data.iter().filter_map(|(s, _)| s.split(';').next()).collect();
    states.dedup();
    assert!(states.len() >= 3, "expected several off-CPU states, found {states:?}");
}

/// `--top N`: the same N longest intervals, under the same rank frames and handed to the
/// outlier log alike, from perf.data as from its script text.
#[test]
fn top_intervals_equal_the_script_text() {
    use kflame::collapse::outliers::OutlierLog;
    for &(name, mode) in FIXTURES {
        for n in [1, 4] {
            let (dlog, slog) = (OutlierLog::new(), OutlierLog::new());
            let opts = Options {
                kallsyms: Some(data_dir().join("kallsyms-pairs.txt")),
                symfs: Some(data_dir().join("symfs")),
                pairing: Some(Pairing { top: Some(n), outliers: Some(dlog.clone()), ..Pairing::new(mode) }),
                host: Host::Isolated,
                ..Options::default()
            };
            let data = collapse_file(&data_dir().join(format!("{name}.data")), &opts, Order::Sorted)
                .unwrap_or_else(|e| panic!("{name}.data: {e}"));
            let text = std::fs::read(data_dir().join(format!("{name}.ns.script.txt"))).expect("script text");
            let sopts = PerfPairsOptions { top: Some(n), ..PerfPairsOptions::new(mode) };
            let collapser = PerfPairs::new(sopts, None).with_outliers(slog.clone());
            let script = Engine::single_threaded().run(Box::new(collapser), &text[..]).expect("collapse");
            let towers = folded(&script);
            assert_eq!(folded(&data), towers, "{name} --top {n}");
            assert!(!towers.is_empty() && towers.len() <= n, "{name}: {towers:?}");
            assert!(towers.iter().all(|(s, _)| s.starts_with("[#")), "{name}: {towers:?}");
            let (d, mut s) = (dlog.take(), slog.take());
            // perf.data has no input lines (0); the text's are where each interval began.
            assert!(d.iter().all(|o| o.line == 0) && s.iter().all(|o| o.line > 0), "{name}");
            s.iter_mut().for_each(|o| o.line = 0);
            assert_eq!(d, s, "{name}");
            assert_eq!(d.len(), towers.len(), "{name}");
        }
    }
}
