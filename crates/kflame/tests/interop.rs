//! Interop formats (`kflame::export`, `kflame::import`) on real inputs: folded stacks of
//! every unit through pprof and speedscope and back, Go's own pprof profiles, detection that
//! claims no other format's input, and damaged files that give errors, never panics.

mod common;

use kflame::collapse::{Format, detect};
use kflame::diag::Diagnostics;
use kflame::export::{self, Profile};
use kflame::fold::read::read_folded;
use kflame::fold::{Meta, OrderedStacks, StackCounts, Stacks, Unit, Weight};
use kflame::import::{self, ImportError, Kind, Limits};

/// Real folded files of every unit kflame writes: perf periods without a header, samples,
/// bytes, nanoseconds (off-CPU, syscalls, function_graph), events.
const FOLDED: &[&str] = &[
    "perf/flamegraph/results-master/perf-cycles-instructions-01-collapsed-all.txt",
    "render/perf-sys-cpuclock.folded",
    "ftrace/expected/ftrace-dd-mixed.alloc.folded",
    "ftrace/expected/ftrace-dd-mixed.offcpu-comm.folded",
    "ftrace/expected/ftrace-raw_syscalls-write.syscalls.folded",
    "ftrace/expected/ftrace-dd-mixed.events.folded",
    "function-graph/raw-basic.total.folded",
    "bcc/offcputime-example-Kf.folded.expected",
];

fn folded(rel: &str, time_order: bool) -> (Stacks, Meta) {
    let mut stacks =
        if time_order { Stacks::Ordered(OrderedStacks::new()) } else { Stacks::Counts(StackCounts::new()) };
    let mut meta = Meta::default();
    let mut diag = Diagnostics::new();
    read_folded(&common::read(rel)[..], &mut meta, &mut diag, |l| stacks.add(l.stack, l.weight)).unwrap();
    assert!(diag.is_empty(), "{rel}: {diag:?}");
    assert!(!stacks.is_empty(), "{rel}");
    (stacks, meta)
}

fn lines(s: &Stacks) -> Vec<(Vec<u8>, Weight)> {
    s.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w)).collect()
}

fn write(format: export::Format, stacks: &Stacks, meta: &Meta) -> Vec<u8> {
    let mut out = Vec::new();
    export::write(format, &Profile { stacks, meta, name: Some("test") }, &mut out).unwrap();
    out
}

#[test]
fn pprof_round_trip_keeps_stacks_totals_and_units() {
    for rel in FOLDED {
        for time_order in [false, true] {
            let (stacks, meta) = folded(rel, time_order);
            let bytes = write(export::Format::Pprof, &stacks, &meta);
            assert!(bytes.starts_with(b"\x1f\x8b"), "{rel}: gzipped");
            let back = import::read(Kind::Pprof, &bytes, time_order, &Limits::default()).unwrap();
            assert_eq!(lines(&back.stacks), lines(&stacks), "{rel} (time order {time_order})");
            assert_eq!(back.stacks.total(), stacks.total(), "{rel}");
            assert_eq!(back.meta, meta, "{rel}: unit and event come back");
            assert!(back.diag.is_empty(), "{rel}: {:?}", back.diag);
        }
    }
}

#[test]
fn otlp_round_trip_keeps_stacks_totals_and_units() {
    for rel in FOLDED {
        for time_order in [false, true] {
            let (stacks, meta) = folded(rel, time_order);
            let bytes = write(export::Format::Otlp, &stacks, &meta);
            assert_eq!(detect(&bytes), Some(Format::Otlp), "{rel}");
            let back = import::read(Kind::Otlp, &bytes, time_order, &Limits::default()).unwrap();
            assert_eq!(lines(&back.stacks), lines(&stacks), "{rel} (time order {time_order})");
            assert_eq!(back.meta, meta, "{rel}: unit and event come back");
            assert!(back.diag.is_empty(), "{rel}: {:?}", back.diag);
        }
    }
    // Go's profiles, written as OTLP, are not taken for pprof, and pprof not for OTLP.
    let (stacks, meta) = folded("render/perf-sys-cpuclock.folded", false);
    let pprof = write(export::Format::Pprof, &stacks, &meta);
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&pprof[..]), &mut raw).unwrap();
    assert_eq!(detect(&raw), Some(Format::Pprof));
    let e = import::read(Kind::Otlp, b"\x0a\x05\x12\x03\x0a\x01", false, &Limits::default()).unwrap_err();
    assert!(matches!(e, ImportError::Protobuf { .. }), "{e}");
}

#[test]
fn speedscope_per_process_has_one_profile_per_first_frame_and_reads_back_the_same() {
    for rel in FOLDED {
        for time_order in [false, true] {
            let (stacks, meta) = folded(rel, time_order);
            let mut bytes = Vec::new();
            let profile = Profile { stacks: &stacks, meta: &meta, name: Some("test") };
            export::speedscope::write_per_process(&profile, &mut bytes).unwrap();
            let file: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let profiles = file["profiles"].as_array().unwrap();
            // One profile per distinct first frame, named by it, weighing what it weighs.
            let mut processes: Vec<(Vec<u8>, Weight)> = Vec::new();
            for (stack, w) in stacks.in_output_order() {
                let first = stack.split(|&b| b == b';').next().unwrap().to_vec();
                match processes.iter_mut().find(|(p, _)| *p == first) {
                    Some((_, t)) => *t += w,
                    None => processes.push((first, w)),
                }
            }
            assert_eq!(profiles.len(), processes.len(), "{rel}");
            for (p, (name, total)) in profiles.iter().zip(&processes) {
                assert_eq!(p["name"].as_str().unwrap().as_bytes(), &name[..], "{rel}");
                assert_eq!(p["endValue"].to_string(), total.to_string(), "{rel}");
            }
            // Read back, each profile's name is the root frame again: the same stacks,
            // grouped by process (in time order, the order within each process is kept).
            let back = import::read(Kind::Speedscope, &bytes, time_order, &Limits::default()).unwrap();
            assert_eq!(back.stacks.total(), stacks.total(), "{rel}");
            let mut want = lines(&stacks);
            if time_order {
                let first = |s: &[u8]| s.split(|&b| b == b';').next().unwrap().to_vec();
                want.sort_by_key(|(s, _)| processes.iter().position(|(p, _)| *p == first(s)).unwrap());
                // Runs of one process that were apart in time may now touch.
                let mut merged = OrderedStacks::new();
                for (s, w) in &want {
                    merged.push(s, *w);
                }
                want = lines(&Stacks::Ordered(merged));
            }
            assert_eq!(lines(&back.stacks), want, "{rel} (time order {time_order})");
        }
    }
    // One process alone still comes back under its own name.
    let mut one = StackCounts::new();
    one.add(b"dd;write;vfs_write", Weight::from_u64(3));
    one.add(b"dd", Weight::from_u64(1));
    let (stacks, meta) = (Stacks::Counts(one), Meta::default());
    let mut bytes = Vec::new();
    export::speedscope::write_per_process(&Profile { stacks: &stacks, meta: &meta, name: None }, &mut bytes)
        .unwrap();
    let back = import::read(Kind::Speedscope, &bytes, false, &Limits::default()).unwrap();
    assert_eq!(lines(&back.stacks), lines(&stacks));
}

#[test]
fn speedscope_round_trip_keeps_stacks_totals_and_units() {
    for rel in FOLDED {
        for time_order in [false, true] {
            let (stacks, meta) = folded(rel, time_order);
            let bytes = write(export::Format::Speedscope, &stacks, &meta);
            assert_eq!(detect(&bytes), Some(Format::Speedscope), "{rel}");
            let back = import::read(Kind::Speedscope, &bytes, time_order, &Limits::default()).unwrap();
            assert_eq!(lines(&back.stacks), lines(&stacks), "{rel} (time order {time_order})");
            assert_eq!(back.stacks.total(), stacks.total(), "{rel}");
            // speedscope has units for bytes and time only; counts come back without one.
            let unit = match (&meta.unit, export::speedscope::unit(&meta)) {
                (Unit::Bytes | Unit::Nanoseconds, _) => meta.unit.clone(),
                (_, "nanoseconds") => Unit::Nanoseconds,
                _ => Unit::Unspecified,
            };
            assert_eq!(back.meta.unit, unit, "{rel}");
        }
    }
}

#[test]
fn go_profiles_are_detected_and_read() {
    for (rel, unit, event) in [
        ("pprof/go-cpu.pb.gz", Unit::Nanoseconds, "cpu"),
        ("pprof/go-heap.pb.gz", Unit::Bytes, "alloc_space"),
    ] {
        let gz = common::read(rel);
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
        assert_eq!(detect(&raw), Some(Format::Pprof), "{rel}");
        // A head cut anywhere is still recognised (the CLI detects on the first 64 KiB).
        for cut in [64, 200, raw.len() / 2] {
            assert_eq!(detect(&raw[..cut]), Some(Format::Pprof), "{rel} cut at {cut}");
        }
        let got = import::read(Kind::Pprof, &gz, false, &Limits::default()).unwrap();
        let same = import::read(Kind::Pprof, &raw, false, &Limits::default()).unwrap();
        assert_eq!(lines(&got.stacks), lines(&same.stacks), "{rel}: gzipped or not");
        assert_eq!((got.meta.unit.clone(), got.meta.event.as_deref()), (unit, Some(event)), "{rel}");
        assert!(got.diag.is_empty(), "{rel}: {:?}", got.diag);
        // Go's stacks start at a goroutine's entry function and name Go functions.
        assert!(
            lines(&got.stacks).iter().any(|(s, _)| s.windows(14).any(|w| w == b"burn.TestBurn;")),
            "{rel}"
        );
    }
}

#[test]
fn no_other_input_is_taken_for_pprof_or_speedscope() {
    let mut seen = 0;
    let root = common::data("");
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let name = p.to_string_lossy().to_string();
            if name.contains("/pprof/") || name.ends_with(".gz") {
                continue;
            }
            let bytes = std::fs::read(&p).unwrap();
            let head = &bytes[..bytes.len().min(64 * 1024)];
            let f = detect(head);
            assert!(
                !matches!(f, Some(Format::Pprof | Format::Speedscope | Format::Otlp)),
                "{name} detected as {f:?}"
            );
            seen += 1;
        }
    }
    assert!(seen > 100, "{seen} fixtures looked at");
}

fn pprof_of(rel: &str) -> Vec<u8> {
    let (stacks, meta) = folded(rel, false);
    write(export::Format::Pprof, &stacks, &meta)
}

#[test]
fn damaged_pprof_is_an_error() {
    let gz = common::read("pprof/go-cpu.pb.gz");
    let read = |b: &[u8]| import::read(Kind::Pprof, b, false, &Limits::default());
    // Truncated gzip: the decompressor says so.
    let e = read(&gz[..gz.len() / 2]).unwrap_err();
    assert!(matches!(e, ImportError::Gzip(_)), "{e}");
    // Truncated protobuf.
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
    let e = read(&raw[..raw.len() - 7]).unwrap_err();
    assert!(matches!(e, ImportError::Protobuf { .. }), "{e}");
    assert!(e.to_string().contains("truncated or corrupt"), "{e}");
    // Corrupt bytes in the middle.
    let mut bad = raw.clone();
    for b in &mut bad[100..140] {
        *b = 0xff;
    }
    assert!(read(&bad).is_err());
    // No samples.
    let empty = write(export::Format::Pprof, &Stacks::Counts(StackCounts::new()), &Meta::default());
    assert_eq!(read(&empty).unwrap_err(), ImportError::NoSamples);
    // Values near i64::MAX sum without overflow (weights are u128).
    let mut big = StackCounts::new();
    big.add(b"a;b", Weight::from_u64(i64::MAX as u64));
    big.add(b"a;c", Weight::from_u64(i64::MAX as u64));
    let bytes = write(export::Format::Pprof, &Stacks::Counts(big.clone()), &Meta::default());
    let back = read(&bytes).unwrap();
    assert_eq!(back.stacks.total(), big.total());
    assert_eq!(back.stacks.total().to_string(), (2 * (i64::MAX as u128)).to_string());
    // A real file still reads after all that.
    assert!(read(&pprof_of("render/perf-sys-cpuclock.folded")).is_ok());
}

#[test]
fn weights_pprof_cannot_hold_are_refused() {
    let mut c = StackCounts::new();
    c.add(b"a;b", Weight::parse(b"1.5").unwrap());
    let mut out = Vec::new();
    let stacks = Stacks::Counts(c);
    let e = export::write(
        export::Format::Pprof,
        &Profile { stacks: &stacks, meta: &Meta::default(), name: None },
        &mut out,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`a;b` weighs 1.5"), "{e}");
    let mut c = StackCounts::new();
    c.add(b"big", Weight::from_u64(u64::MAX));
    let stacks = Stacks::Counts(c);
    let e = export::write(
        export::Format::Pprof,
        &Profile { stacks: &stacks, meta: &Meta::default(), name: None },
        &mut out,
    )
    .unwrap_err();
    assert!(matches!(e, export::ExportError::Overflow { .. }), "{e}");
}

#[test]
fn damaged_speedscope_is_an_error() {
    let (stacks, meta) = folded("ftrace/expected/ftrace-dd-mixed.alloc.folded", false);
    let good = String::from_utf8(write(export::Format::Speedscope, &stacks, &meta)).unwrap();
    let read = |s: &str| import::read(Kind::Speedscope, s.as_bytes(), false, &Limits::default());
    assert!(read(&good).is_ok());
    let e = read(&good[..good.len() / 2]).unwrap_err();
    assert!(matches!(e, ImportError::Json(_)), "{e}");
    let other = good.replace("file-format-schema.json", "file-format-schema-v2.json");
    match read(&other).unwrap_err() {
        ImportError::Schema { found, .. } => assert!(found.ends_with("schema-v2.json")),
        e => panic!("{e}"),
    }
    let e = read(&good.replace("\"samples\":[[0,", "\"samples\":[[99999,")).unwrap_err();
    assert!(e.to_string().contains("frame index 99999"), "{e}");
    let e = read(&good.replacen("\"weights\":[", "\"weights\":[-4,", 1)).unwrap_err();
    assert!(e.to_string().contains("samples but"), "{e}");
    let e = read(&good.replacen("\"weights\":[", "\"weights\":[1e999,", 1)).unwrap_err();
    assert!(matches!(e, ImportError::Json(_)), "{e}");
    // A weight too large for a weight is said as it was written, not as 309 digits.
    let (w, rest) = good.split_at(good.find("\"weights\":[").unwrap() + "\"weights\":[".len());
    let first = &rest[..rest.find([',', ']']).unwrap()];
    let huge = format!("{w}1e308{}", &rest[first.len()..]);
    let e = read(&huge).unwrap_err().to_string();
    assert!(e.contains("weight 1e308 ") && e.len() < 200, "{e}");
    let e = read(&good.replace("\"unit\":\"bytes\"", "\"unit\":\"furlongs\"")).unwrap_err();
    assert!(e.to_string().contains("furlongs"), "{e}");
    let none = good.replace("\"type\":\"sampled\"", "\"type\":\"sampled\",\"x\":0").replacen(
        &good[good.find("\"samples\":").unwrap()..good.find("]]").unwrap() + 2],
        "\"samples\":[]",
        1,
    );
    let none = none.replacen(&none[none.find("\"weights\":").unwrap()..], "\"weights\":[]}]}", 1);
    assert_eq!(read(&none).unwrap_err(), ImportError::NoSamples);
}

#[test]
fn evented_speedscope_profiles_weigh_spans() {
    // An evented profile as speedscope's own exporter writes them (its schema's shape):
    // a opens at 0, b at 2, b closes at 5, a at 9.
    let file = r#"{"$schema":"https://www.speedscope.app/file-format-schema.json",
        "shared":{"frames":[{"name":"a"},{"name":"b"}]},
        "profiles":[{"type":"evented","name":"t","unit":"microseconds","startValue":0,"endValue":9,
          "events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":2},
                    {"type":"C","frame":1,"at":5},{"type":"C","frame":0,"at":9}]}]}"#;
    let got = import::read(Kind::Speedscope, file.as_bytes(), false, &Limits::default()).unwrap();
    let text: Vec<String> =
        lines(&got.stacks).iter().map(|(s, w)| format!("{} {w}", String::from_utf8_lossy(s))).collect();
    assert_eq!(text, ["a 6000", "a;b 3000"]);
    assert_eq!(got.meta.unit, Unit::Nanoseconds);
    let unbalanced = file.replace(r#"{"type":"C","frame":1,"at":5},"#, r#"{"type":"C","frame":0,"at":5},"#);
    let e = import::read(Kind::Speedscope, unbalanced.as_bytes(), false, &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("not the innermost open frame"), "{e}");
}

#[test]
fn chrome_trace_nests_complete_events_in_time_order() {
    let (stacks, meta) = folded("function-graph/raw-basic.total.folded", true);
    let bytes = write(export::Format::ChromeTrace, &stacks, &meta);
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let x: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    // Each stack's leaf lasts its weight (ns → µs); the roots together last the total.
    let roots: f64 = x
        .iter()
        .filter(|e| {
            let (ts, end) =
                (e["ts"].as_f64().unwrap(), e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap());
            !x.iter().any(|p| {
                !std::ptr::eq(*p, **e)
                    && p["ts"].as_f64().unwrap() <= ts
                    && p["ts"].as_f64().unwrap() + p["dur"].as_f64().unwrap() >= end
                    && p["dur"].as_f64().unwrap() > e["dur"].as_f64().unwrap()
            })
        })
        .map(|e| e["dur"].as_f64().unwrap())
        .sum();
    let total_us = stacks.total().as_f64() / 1000.0;
    assert!((roots - total_us).abs() < 1e-6 * total_us.max(1.0), "{roots} vs {total_us}");
    for e in &x {
        assert_eq!((e["pid"].as_u64(), e["tid"].as_u64()), (Some(1), Some(1)));
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(v["otherData"]["unit"], "ns");
}

/// Every cut and many single-byte changes of real files go through the fuzz targets' checks
/// (no panic; summed and time order agree; what is read writes and reads back the same).
#[test]
fn every_cut_and_byte_change_is_an_error_or_stacks() {
    let gz = common::read("pprof/go-cpu.pb.gz");
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
    let ss = write(
        export::Format::Speedscope,
        &folded("ftrace/expected/ftrace-dd-mixed.alloc.folded", false).0,
        &{ Meta::with_unit(Unit::Bytes) },
    );
    let (stacks, meta) = folded("ftrace/expected/ftrace-dd-mixed.offcpu-comm.folded", false);
    let otlp = write(export::Format::Otlp, &stacks, &meta);
    for (data, target) in [
        (&raw, kflame::fuzzing::import_pprof as fn(&[u8])),
        (&gz, kflame::fuzzing::import_pprof),
        (&ss, kflame::fuzzing::import_speedscope),
        (&otlp, kflame::fuzzing::import_otlp),
    ] {
        for cut in (0..data.len()).step_by(29) {
            target(&data[..cut]);
        }
        let mut bytes = data.clone();
        for i in (0..bytes.len()).step_by(53) {
            for v in [0x00, 0xff, 0x7f, b'"', b'9'] {
                let old = bytes[i];
                bytes[i] = v;
                target(&bytes);
                bytes[i] = old;
            }
        }
    }
}

/// (time in ns, period) of every sample header of `perf script` text (`comm pid [cpu]
/// SECS.FRAC: PERIOD event:`), read here on its own, apart from the collapser.
fn perf_sample_times(text: &str) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace)) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(i) = words.iter().position(|w| {
            w.ends_with(':')
                && w[..w.len() - 1].split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        }) else {
            continue;
        };
        let (secs, frac) = words[i].trim_end_matches(':').split_once('.').unwrap();
        let ns = secs.parse::<u64>().unwrap() * 1_000_000_000 + format!("{frac:0<9}").parse::<u64>().unwrap();
        got.push((ns, words[i + 1].parse::<u64>().unwrap()));
    }
    got
}

#[test]
fn otlp_of_time_ordered_perf_samples_carries_each_sample_time() {
    use kflame::collapse::perf::{PerfOptions, PerfScript};
    use kflame::collapse::{Engine, Order};
    let rel = "perf/captures/perf-sys-cpuclock.script.txt";
    let text = common::read(rel);
    let expected = perf_sample_times(&String::from_utf8_lossy(&text));
    assert!(expected.len() > 100, "{rel}: {} samples", expected.len());
    for threads in [1, 2] {
        let engine = Engine { threads, order: Order::Time, block_size: 4096 };
        let out = engine.run(Box::new(PerfScript::new(PerfOptions::default())), &text[..]).unwrap();
        assert!(out.diag.get("other events").is_none(), "{rel}: one event only");
        let Stacks::Ordered(ordered) = &out.stacks else { panic!("time order") };
        assert!(ordered.sample_times().is_some(), "{rel}: every sample has its time");
        let profile = Profile { stacks: &out.stacks, meta: &out.meta, name: None };
        let req = export::otlp::request(&profile).unwrap();
        let p = &req.resource_profiles[0].scope_profiles[0].profiles[0];
        // Every sample's (time, period), exactly those of the input.
        let mut got: Vec<(u64, u64)> = Vec::new();
        let mut stacks_seen = std::collections::HashSet::new();
        for s in &p.samples {
            assert_eq!(s.values.len(), s.timestamps_unix_nano.len(), "one value per time stamp");
            assert!(s.timestamps_unix_nano.is_sorted(), "a stack's observations in time order");
            assert!(stacks_seen.insert(s.stack_index), "one sample per stack");
            got.extend(s.timestamps_unix_nano.iter().zip(&s.values).map(|(&t, &v)| (t, v as u64)));
        }
        let mut want = expected.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "{rel} ({threads} threads)");
        let (first, last) = (want[0].0, want[want.len() - 1].0);
        assert_eq!((p.time_unix_nano, p.duration_nano), (first, last - first + 1));
        // Totals still match the folded stacks, and reading back in time order gives the
        // time-ordered stacks again; summed, the summed ones.
        let total: u64 = want.iter().map(|&(_, v)| v).sum();
        assert_eq!(out.stacks.total(), Weight::from_u64(total));
        let bytes = write(export::Format::Otlp, &out.stacks, &out.meta);
        let back = import::read(Kind::Otlp, &bytes, true, &Limits::default()).unwrap();
        assert_eq!(lines(&back.stacks), lines(&out.stacks), "{rel}: time order back");
        let summed = import::read(Kind::Otlp, &bytes, false, &Limits::default()).unwrap();
        let mut sum = Stacks::Counts(StackCounts::new());
        sum.append(out.stacks.clone());
        assert_eq!(lines(&summed.stacks), lines(&sum), "{rel}: summed back");
    }
    // Summed stacks, or folded text read back (which keeps no times), carry none.
    let engine = Engine { threads: 1, order: Order::Sorted, block_size: 4096 };
    let out = engine.run(Box::new(PerfScript::new(PerfOptions::default())), &text[..]).unwrap();
    let req = export::otlp::request(&Profile { stacks: &out.stacks, meta: &out.meta, name: None }).unwrap();
    let p = &req.resource_profiles[0].scope_profiles[0].profiles[0];
    assert!(p.samples.iter().all(|s| s.timestamps_unix_nano.is_empty() && s.values.len() == 1));
    assert_eq!(p.time_unix_nano, 0);
}

#[test]
fn otlp_read_in_time_order_follows_the_time_stamps() {
    let (stacks, meta) = folded("render/perf-sys-cpuclock.folded", true);
    let mut ordered = OrderedStacks::new();
    for (i, (s, w)) in stacks.in_output_order().into_iter().enumerate() {
        // Out of order in time: the reader puts them back in order.
        ordered.push_at(s, w, 1_000 - i as u64);
    }
    let timed = Stacks::Ordered(ordered);
    let bytes = write(export::Format::Otlp, &timed, &meta);
    let back = import::read(Kind::Otlp, &bytes, true, &Limits::default()).unwrap();
    let mut reversed = OrderedStacks::new();
    for (s, w) in stacks.in_output_order().into_iter().rev() {
        reversed.push(s, w);
    }
    assert_eq!(lines(&back.stacks), lines(&Stacks::Ordered(reversed)));
    assert_eq!(back.stacks.total(), stacks.total());
}

#[test]
fn otlp_of_time_ordered_perf_data_carries_the_times_perf_script_prints() {
    use kflame::collapse::Order;
    use kflame::perf_data::{Host, Options, collapse_file};
    // The same recording as perf.data and as `perf script` text (which prints µs).
    let name = "perf-data/compressed";
    let opts = Options { host: Host::Isolated, ..Options::default() };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.data"));
    let out = collapse_file(&path, &opts, Order::Time).unwrap();
    let req = export::otlp::request(&Profile { stacks: &out.stacks, meta: &out.meta, name: None }).unwrap();
    let p = &req.resource_profiles[0].scope_profiles[0].profiles[0];
    let mut got: Vec<(u64, u64)> = p
        .samples
        .iter()
        .flat_map(|s| s.timestamps_unix_nano.iter().zip(&s.values).map(|(&t, &v)| (t / 1000, v as u64)))
        .collect();
    let mut want: Vec<(u64, u64)> =
        perf_sample_times(&String::from_utf8_lossy(&common::read(&format!("{name}.script.txt"))))
            .into_iter()
            .map(|(t, v)| (t / 1000, v))
            .collect();
    assert!(want.len() > 10, "{name}: {} samples", want.len());
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "{name}: (µs, period) of every sample");
}
