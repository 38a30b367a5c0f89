//! `kflame flamegraph --format speedscope|pprof|chrome-trace` and `kflame collapse` of pprof
//! and speedscope files, as a user runs them; and Go's own `go tool pprof` reading what
//! kflame writes (the tests named `needs_go_*`: they are skipped with a message when `go` is
//! missing, and fail then when `KFLAME_REQUIRE_GO` is set, as `scripts/test` does after
//! installing Debian's golang-go).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data");

/// Real folded files of several units (see `crates/kflame/tests/interop.rs`).
const FOLDED: &[&str] = &[
    "render/perf-sys-cpuclock.folded",
    "ftrace/expected/ftrace-dd-mixed.alloc.folded",
    "ftrace/expected/ftrace-dd-mixed.offcpu-comm.folded",
    "ftrace/expected/ftrace-dd-mixed.events.folded",
    "function-graph/raw-basic.total.folded",
];

fn kflame(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kflame runs");
    child.stdin.take().expect("stdin").write_all(stdin).expect("stdin written");
    child.wait_with_output().expect("kflame finishes")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let out = kflame(args, b"");
    assert!(out.status.success(), "kflame {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn data(rel: &str) -> String {
    format!("{DATA}/{rel}")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-interop-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Folded text without its `#` header lines.
fn stacks_only(folded: &[u8]) -> String {
    String::from_utf8_lossy(folded).lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_output_name_chooses_the_format() {
    let input = data("render/perf-sys-cpuclock.folded");
    for (name, check) in [
        (
            "a.speedscope.json",
            (|b: &[u8]| b.starts_with(b"{\"$schema\":\"https://www.speedscope.app/")) as fn(&[u8]) -> bool,
        ),
        ("A.PB.GZ", |b: &[u8]| b.starts_with(b"\x1f\x8b")),
        ("a.pprof", |b: &[u8]| b.starts_with(b"\x1f\x8b")),
        ("a.trace.json", |b: &[u8]| b.starts_with(b"{\"traceEvents\":[")),
        ("a.svg", |b: &[u8]| b.starts_with(b"<?xml")),
    ] {
        let out = scratch(name);
        ok(&["flamegraph", &input, "-o", s(&out)]);
        assert!(check(&std::fs::read(&out).unwrap()), "{name}");
    }
    // --format wins over the name, and writes to stdout without -o.
    assert!(ok(&["flamegraph", "--format", "pprof", &input]).starts_with(b"\x1f\x8b"));
    assert!(ok(&["flamegraph", "--format", "chrome-trace", &input]).starts_with(b"{\"traceEvents\""));
}

#[test]
fn collapse_reads_back_what_flamegraph_wrote() {
    for rel in FOLDED {
        let input = data(rel);
        let expected = ok(&["collapse", &input]);
        for ext in [".pb.gz", ".otlp.pb", ".speedscope.json"] {
            let file = scratch(&format!("{}{ext}", rel.replace('/', "_")));
            ok(&["flamegraph", &input, "-o", s(&file)]);
            let back = ok(&["collapse", s(&file)]);
            if ext != ".speedscope.json" {
                assert_eq!(
                    String::from_utf8_lossy(&back),
                    String::from_utf8_lossy(&expected),
                    "{rel} via {ext}"
                );
            } else {
                assert_eq!(stacks_only(&back), stacks_only(&expected), "{rel} via {ext}");
            }
        }
    }
    // Time order survives too.
    let input = data("function-graph/raw-basic.total.folded");
    let expected = ok(&["collapse", "--time-order", &input]);
    let file = scratch("ordered.pb.gz");
    ok(&["flamegraph", "--flamechart", &input, "-o", s(&file)]);
    assert_eq!(ok(&["collapse", "--time-order", s(&file)]), expected);
}

#[test]
fn speedscope_per_process_reads_back_the_same_stacks() {
    let input = data("render/perf-sys-cpuclock.folded");
    let file = scratch("per-process.speedscope.json");
    ok(&["flamegraph", "--per-process", &input, "-o", s(&file)]);
    let json = std::fs::read_to_string(&file).unwrap();
    assert!(json.contains("\"name\":\"bash\"") && json.contains("per-process"), "{json:.300}");
    assert_eq!(stacks_only(&ok(&["collapse", s(&file)])), stacks_only(&ok(&["collapse", &input])));
    // Only speedscope has profiles to split.
    for other in [&["-o", "x.svg"][..], &["--format", "pprof"]] {
        let out = kflame(&[&["flamegraph", "--per-process", &input][..], other].concat(), b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("--per-process") && err.contains("speedscope"),
            "{err}"
        );
    }
}

#[test]
fn collapse_writes_other_formats_by_name_keeping_perf_sample_times() {
    let input = data("perf/captures/perf-sys-cpuclock.script.txt");
    let ordered = ok(&["collapse", "--time-order", &input]);
    let summed = ok(&["collapse", &input]);
    let file = scratch("perf-times.otlp.pb");
    ok(&["collapse", "--time-order", &input, "-o", s(&file)]);
    // The time stamps put the stacks back in the order they happened; summed, the same totals.
    assert_eq!(
        String::from_utf8_lossy(&ok(&["collapse", "--time-order", s(&file)])),
        String::from_utf8_lossy(&ordered)
    );
    assert_eq!(String::from_utf8_lossy(&ok(&["collapse", s(&file)])), String::from_utf8_lossy(&summed));
    // Any format the name asks for, as flamegraph -o.
    let pprof = scratch("perf-times.pb.gz");
    ok(&["collapse", &input, "-o", s(&pprof)]);
    assert_eq!(String::from_utf8_lossy(&ok(&["collapse", s(&pprof)])), String::from_utf8_lossy(&summed));
    // What the format cannot hold is refused naming the input and the output.
    let frac = scratch("fraction.folded");
    std::fs::write(&frac, "a;b 1.5\na 2\n").unwrap();
    let out = kflame(&["collapse", s(&frac), "-o", s(&pprof)], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("fraction.folded") && err.contains("perf-times.pb.gz"),
        "{err}"
    );
    assert!(err.contains("integers"), "{err}");
}

#[test]
fn damaged_inputs_fail_naming_the_file() {
    let gz = std::fs::read(data("pprof/go-cpu.pb.gz")).unwrap();
    let cut = scratch("cut.pb.gz");
    std::fs::write(&cut, &gz[..gz.len() / 2]).unwrap();
    let out = kflame(&["collapse", s(&cut)], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cut.pb.gz") && err.contains("gzip"), "{err}");
    assert!(out.stdout.is_empty());

    let good = ok(&["flamegraph", &data("render/perf-sys-cpuclock.folded"), "--format", "speedscope"]);
    let other =
        String::from_utf8_lossy(&good).replace("file-format-schema.json", "file-format-schema-v9.json");
    let file = scratch("v9.speedscope.json");
    std::fs::write(&file, other).unwrap();
    let out = kflame(&["collapse", s(&file)], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("v9.speedscope.json") && err.contains("schema-v9.json"), "{err}");

    // An empty profile: written with a warning, refused when read.
    let empty = scratch("empty.pb.gz");
    let out = kflame(&["flamegraph", "--format", "pprof", "-o", s(&empty)], b"");
    assert!(out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no samples"));
    let out = kflame(&["collapse", s(&empty)], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("empty.pb.gz") && err.contains("no samples"), "{err}");
}

#[test]
fn what_cannot_be_written_is_refused() {
    let diff = kflame(&["flamegraph", "--format", "pprof"], b"a;b 1 2\n");
    let err = String::from_utf8_lossy(&diff.stderr);
    assert!(!diff.status.success() && err.contains("differential input"), "{err}");
    let frac = kflame(&["flamegraph", "--format", "pprof"], b"a;b 1.5\n");
    let err = String::from_utf8_lossy(&frac.stderr);
    assert!(!frac.status.success() && err.contains("weighs 1.5"), "{err}");
    // speedscope takes fractions.
    let out = kflame(&["flamegraph", "--format", "speedscope"], b"a;b 1.5\n");
    assert!(out.status.success());
    // Options that only shape kflame's own graphs are named as ignored.
    let out = kflame(&["flamegraph", "--format", "speedscope", "--title", "x", "--width", "800"], b"a;b 1\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("--width --title") && err.contains("ignored"), "{err}");
}

/// `go`, or `None` after saying why the test is skipped (a failure with `KFLAME_REQUIRE_GO`).
fn go() -> Option<&'static str> {
    if Command::new("go").arg("version").output().is_ok_and(|o| o.status.success()) {
        return Some("go");
    }
    assert!(
        std::env::var_os("KFLAME_REQUIRE_GO").is_none(),
        "KFLAME_REQUIRE_GO is set but `go` does not run"
    );
    #[allow(clippy::print_stderr)] // a skipped test says so
    {
        eprintln!("skipped: `go` not found (Debian: apt-get install golang-go)");
    }
    None
}

/// What `go tool pprof` makes of `file`: each stack (root first, `;`-joined) with its summed
/// value, from `-raw` (full function names: `-traces` shortens C++ and Rust names), and the
/// totals of `-top` and of `-traces`, in `unit` (`-unit`, none for counts), of the sample
/// type `sample` (`-sample_index`; none: pprof's default).
fn go_pprof(
    go: &str,
    file: &Path,
    unit: Option<&str>,
    sample: Option<&str>,
) -> (BTreeMap<String, u128>, u128, u128) {
    let run = |what: &str| {
        let mut c = Command::new(go);
        c.args(["tool", "pprof", what]);
        if let Some(u) = unit {
            c.arg(format!("-unit={u}"));
        }
        if let Some(t) = sample {
            c.arg(format!("-sample_index={t}"));
        }
        let out = c.arg(file).output().expect("go tool pprof runs");
        assert!(out.status.success(), "go tool pprof {what}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let number = |v: &str| -> u128 {
        let digits = v.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic());
        digits.parse().unwrap_or_else(|_| panic!("a value in {unit:?}: {v:?}"))
    };
    // -raw: "Samples:", a header of sample types (the default marked `[dflt]`), lines
    // `v1 v2 ...: loc loc ...` (leaf first) and label lines, then "Locations" with lines
    // `id: 0xADDR M=n NAME FILE:LINE s=N[(SYSTEM NAME)]` and inlined lines under them.
    let raw = run("-raw");
    let mut lines = raw.lines().skip_while(|l| *l != "Samples:").skip(1);
    let header: Vec<&str> = lines.next().expect("sample types").split_whitespace().collect();
    let index = match sample {
        Some(t) => header.iter().position(|h| h.split('/').next() == Some(t)).expect("the sample type"),
        None => header.iter().position(|t| t.ends_with("[dflt]")).unwrap_or(header.len() - 1),
    };
    let mut samples = Vec::new();
    let mut locations: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut last = 0;
    let mut in_locations = false;
    for line in lines {
        if line.starts_with("Locations") {
            in_locations = true;
            continue;
        }
        if line.starts_with("Mappings") {
            break;
        }
        let Some((head, rest)) = line.split_once(':') else { continue };
        if !in_locations {
            if rest.trim_start().starts_with('[') {
                continue; // a label line
            }
            let values: Vec<&str> = head.split_whitespace().collect();
            let locs: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap()).collect();
            samples.push((number(values[index]), locs));
            continue;
        }
        let (name_part, id) = match head.trim().parse::<u64>() {
            Ok(id) => {
                last = id;
                // `0xADDR M=n NAME...`
                let mut it = rest.trim_start().splitn(3, ' ');
                (it.nth(2).unwrap_or(""), id)
            }
            Err(_) => (line.trim_start(), last), // an inlined line
        };
        let (left, sys) = name_part.rsplit_once(" s=").expect("s=");
        let name = match sys.find('(') {
            Some(i) => sys[i + 1..sys.len() - 1].to_string(),
            None => left.rsplit_once(' ').map_or(left, |(n, _)| n).to_string(),
        };
        locations.entry(id).or_default().push(name);
    }
    let mut stacks = BTreeMap::new();
    for (v, locs) in samples {
        if v == 0 {
            continue;
        }
        let mut frames = Vec::new();
        for id in locs.iter().rev() {
            // Lines of a location are listed innermost first.
            frames.extend(locations[id].iter().rev().cloned());
        }
        *stacks.entry(frames.join(";")).or_insert(0) += v;
    }
    let top = run("-top");
    let total_line = top.lines().find(|l| l.starts_with("Showing nodes accounting for")).expect("-top total");
    let top_total = number(total_line.rsplit(" of ").next().unwrap().trim_end_matches(" total"));
    // -traces: `-----------+---` between samples, each starting with `%10s   leaf`.
    let traces_total = run("-traces")
        .lines()
        .filter(|l| l.len() > 13 && l.as_bytes()[10..13] == *b"   " && !l[..10].trim().is_empty())
        .map(|l| number(&l[..10]))
        .sum();
    (stacks, top_total, traces_total)
}

/// Folded text summed per stack (header lines skipped).
fn summed(folded: &[u8]) -> BTreeMap<String, u128> {
    let mut m = BTreeMap::new();
    for l in String::from_utf8_lossy(folded).lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (stack, v) = l.rsplit_once(' ').unwrap();
        *m.entry(stack.to_string()).or_insert(0) += v.parse::<u128>().unwrap();
    }
    m
}

#[test]
fn needs_go_pprof_reads_the_same_stacks_and_totals() {
    let Some(go) = go() else { return };
    for rel in FOLDED {
        let input = data(rel);
        let folded = ok(&["collapse", &input]);
        let unit = match String::from_utf8_lossy(&folded).lines().next() {
            Some("# unit=bytes") => Some("B"),
            Some("# unit=ns") => Some("ns"),
            _ => None,
        };
        let file = scratch(&format!("go-{}.pb.gz", rel.replace('/', "_")));
        ok(&["flamegraph", &input, "-o", s(&file)]);
        let (stacks, top, traces) = go_pprof(go, &file, unit, None);
        let expected = summed(&folded);
        let total = expected.values().sum::<u128>();
        assert_eq!((top, traces), (total, total), "{rel}: -top and -traces totals");
        assert_same(&stacks, &expected, rel);
    }
}

#[test]
fn needs_go_collapse_of_go_profiles_agrees_with_go_tool_pprof() {
    let Some(go) = go() else { return };
    for (rel, unit) in [("pprof/go-cpu.pb.gz", "ns"), ("pprof/go-heap.pb.gz", "B")] {
        let file = PathBuf::from(data(rel));
        let (stacks, top, traces) = go_pprof(go, &file, Some(unit), None);
        let ours = summed(&ok(&["collapse", &data(rel)]));
        let total = ours.values().sum::<u128>();
        assert_eq!((top, traces), (total, total), "{rel}: -top and -traces totals");
        assert_same(&ours, &stacks, rel);
    }
}

#[test]
fn needs_go_each_sample_type_of_a_heap_profile_agrees_with_go_tool_pprof() {
    let Some(go) = go() else { return };
    let file = PathBuf::from(data("pprof/go-heap.pb.gz"));
    for (sample, unit) in [
        ("alloc_objects", None),
        ("alloc_space", Some("B")),
        ("inuse_objects", None),
        ("inuse_space", Some("B")),
    ] {
        let (stacks, top, traces) = go_pprof(go, &file, unit, Some(sample));
        let folded = ok(&["collapse", "--sample-type", sample, s(&file)]);
        let event = format!("# event={sample}");
        assert!(String::from_utf8_lossy(&folded).lines().any(|l| l == event), "{sample}");
        let ours = summed(&folded);
        let total = ours.values().sum::<u128>();
        assert_eq!((top, traces), (total, total), "{sample}: -top and -traces totals");
        assert_same(&ours, &stacks, sample);
        // By type/unit too.
        let u = if unit.is_some() { "bytes" } else { "count" };
        assert_eq!(summed(&ok(&["collapse", "--sample-type", &format!("{sample}/{u}"), s(&file)])), ours);
    }
}

#[test]
fn a_sample_type_is_chosen_by_name_or_refused_with_the_choices() {
    let heap = data("pprof/go-heap.pb.gz");
    // The default is the profile's default sample type (alloc_space), as go tool pprof.
    let default = ok(&["collapse", &heap]);
    assert_eq!(default, ok(&["collapse", "--sample-type", "alloc_space", &heap]));
    assert_ne!(summed(&default), summed(&ok(&["collapse", "--sample-type", "inuse_space", &heap])));
    let out = kflame(&["collapse", "--sample-type", "inuse", &heap], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    for want in [
        "go-heap.pb.gz",
        "`inuse`",
        "alloc_objects/count, alloc_space/bytes, inuse_objects/count, inuse_space/bytes",
        "default: alloc_space",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    // Only pprof input takes it.
    let out = kflame(&["collapse", "--sample-type", "cpu", &data("render/perf-sys-cpuclock.folded")], b"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--sample-type") && err.contains("pprof"), "{err}");
}

/// The two maps are equal; else the entries that differ.
fn assert_same(a: &BTreeMap<String, u128>, b: &BTreeMap<String, u128>, what: &str) {
    let only = |x: &BTreeMap<String, u128>, y: &BTreeMap<String, u128>| {
        x.iter()
            .filter(|(k, v)| y.get(*k) != Some(v))
            .map(|(k, v)| format!("{k} {v}"))
            .take(5)
            .collect::<Vec<_>>()
    };
    assert!(a == b, "{what}: go tool pprof and kflame differ:\n{:#?}\nvs\n{:#?}", only(a, b), only(b, a));
}

/// A message of protobuf text format (`protoc --decode` output): fields in order, each a
/// scalar (strings unescaped) or a message.
#[derive(Debug)]
enum Text {
    Scalar(String),
    Message(Vec<(String, Text)>),
}

impl Text {
    fn all<'a>(&'a self, name: &str) -> Vec<&'a Text> {
        match self {
            Text::Message(f) => f.iter().filter(|(k, _)| k == name).map(|(_, v)| v).collect(),
            Text::Scalar(_) => Vec::new(),
        }
    }
    fn one(&self, name: &str) -> &Text {
        self.all(name).into_iter().next().unwrap_or_else(|| panic!("no {name}"))
    }
    /// A number field, 0 when absent (proto3 leaves zero values out).
    fn num(&self, name: &str) -> i64 {
        match self.all(name).first() {
            Some(Text::Scalar(s)) => s.parse().unwrap(),
            _ => 0,
        }
    }
    fn string(&self) -> &str {
        match self {
            Text::Scalar(s) => s,
            Text::Message(_) => panic!("a scalar expected"),
        }
    }
}

/// Parses `protoc --decode` output.
fn parse_text(s: &str) -> Text {
    fn unquote(v: &str) -> String {
        let b = v.trim().trim_matches('"').as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 1 < b.len() {
                let c = b[i + 1];
                if c.is_ascii_digit() {
                    let end =
                        (i + 1..(i + 4).min(b.len())).take_while(|&j| b[j].is_ascii_digit()).last().unwrap()
                            + 1;
                    out.push(u8::from_str_radix(std::str::from_utf8(&b[i + 1..end]).unwrap(), 8).unwrap());
                    i = end;
                    continue;
                }
                out.push(match c {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    other => other,
                });
                i += 2;
                continue;
            }
            out.push(b[i]);
            i += 1;
        }
        String::from_utf8(out).unwrap()
    }
    let mut stack: Vec<(String, Vec<(String, Text)>)> = vec![(String::new(), Vec::new())];
    for line in s.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(name) = line.strip_suffix(" {") {
            stack.push((name.to_string(), Vec::new()));
        } else if line == "}" {
            let (name, fields) = stack.pop().unwrap();
            stack.last_mut().unwrap().1.push((name, Text::Message(fields)));
        } else {
            let (k, v) = line.split_once(": ").unwrap();
            stack.last_mut().unwrap().1.push((k.to_string(), Text::Scalar(unquote(v))));
        }
    }
    Text::Message(stack.pop().unwrap().1)
}

/// `protoc`, or `None` after saying why the test is skipped (a failure with
/// `KFLAME_REQUIRE_PROTOC`).
fn protoc() -> Option<&'static str> {
    if Command::new("protoc").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some("protoc");
    }
    assert!(
        std::env::var_os("KFLAME_REQUIRE_PROTOC").is_none(),
        "KFLAME_REQUIRE_PROTOC is set but no protoc"
    );
    #[allow(clippy::print_stderr)] // a skipped test says so
    {
        eprintln!("skipped: `protoc` not found (Debian: apt-get install protobuf-compiler)");
    }
    None
}

#[test]
fn needs_protoc_otlp_decodes_with_the_official_proto_to_the_folded_input() {
    let Some(protoc) = protoc() else { return };
    let proto_root = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/proto/opentelemetry");
    for rel in FOLDED {
        let input = data(rel);
        let folded = ok(&["collapse", &input]);
        let file = scratch(&format!("{}.otlp.pb", rel.replace('/', "_")));
        ok(&["flamegraph", &input, "-o", s(&file)]);
        let out = Command::new(protoc)
            .args([
                "--decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest",
                "-I",
                proto_root,
                "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
            ])
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .expect("protoc runs");
        assert!(out.status.success(), "{rel}: protoc: {}", String::from_utf8_lossy(&out.stderr));
        let req = parse_text(&String::from_utf8(out.stdout).unwrap());
        let d = req.one("dictionary");
        let strings: Vec<&str> = d.all("string_table").iter().map(|s| s.string()).collect();
        let str_at = |i: i64| strings[usize::try_from(i).unwrap()];
        let functions = d.all("function_table");
        let locations = d.all("location_table");
        let stacks = d.all("stack_table");
        // Entry 0 of every table is the zero value.
        assert_eq!(strings[0], "", "{rel}");
        let profile = req.one("resource_profiles").one("scope_profiles").one("profiles");
        let st = profile.one("sample_type");
        let (ty, unit) = (str_at(st.num("type_strindex")), str_at(st.num("unit_strindex")));
        let header = String::from_utf8_lossy(&folded).lines().next().unwrap_or("").to_string();
        let expected_unit = match header.as_str() {
            "# unit=bytes" => "bytes",
            "# unit=ns" => "nanoseconds",
            _ => "count",
        };
        assert_eq!(unit, expected_unit, "{rel}: sample type {ty}/{unit}");
        let mut got = BTreeMap::new();
        for sample in profile.all("samples") {
            let stack = stacks[usize::try_from(sample.num("stack_index")).unwrap()];
            let mut frames: Vec<&str> = stack
                .all("location_indices")
                .iter()
                .map(|i| {
                    let loc = locations[i.string().parse::<usize>().unwrap()];
                    let f = functions[usize::try_from(loc.one("lines").num("function_index")).unwrap()];
                    str_at(f.num("name_strindex"))
                })
                .collect();
            frames.reverse(); // leaf first in OTLP
            *got.entry(frames.join(";")).or_insert(0u128) += u128::try_from(sample.num("values")).unwrap();
        }
        assert_same(&got, &summed(&folded), rel);
    }
}
