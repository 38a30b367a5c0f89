//! `kflame flamegraph` and `kflame diff` as a user runs them.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/render");

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

fn data(name: &str) -> String {
    format!("{DATA}/{name}")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_lists_every_flamegraph_pl_option() {
    let out = kflame(&["flamegraph", "--help"], b"");
    let help = text(&out.stdout);
    for opt in [
        "--title",
        "--subtitle",
        "--width",
        "--height",
        "--minwidth",
        "--fonttype",
        "--fontsize",
        "--fontwidth",
        "--countname",
        "--nametype",
        "--colors",
        "--bgcolors",
        "--hash",
        "--random",
        "--cp",
        "--reverse",
        "--inverted",
        "--flamechart",
        "--negate",
        "--notes",
        "--factor",
        "--total",
        "--encoding",
        "--nameattr",
    ] {
        assert!(
            help.contains(&format!("{opt} ")) || help.contains(&format!("{opt}\n")),
            "{opt} missing:\n{help}"
        );
    }
    for palette in kflame::render::palette::PALETTE_NAMES {
        assert!(help.contains(palette), "palette {palette} not in help");
    }
}

#[test]
fn hostile_symbols_render_as_text() {
    let out = kflame(&["flamegraph", "--title", "<script>alert(3)</script>", &data("hostile.folded")], b"");
    assert!(out.status.success());
    let svg = text(&out.stdout);
    assert_eq!(svg.matches("<script").count(), 1, "only kflame's own script element");
    assert!(!svg.contains("<img"));
    assert!(svg.contains("&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt; (10 samples, 22.22%)"), "{svg}");
    assert!(svg.contains("AT&amp;T &quot;quoted&quot; &#39;x&#39; ]]&gt; (5 samples"));
    assert!(svg.contains(">&lt;script&gt;alert(3)&lt;/script&gt;</text>"));
}

#[test]
fn bad_lines_are_skipped_counted_and_the_rest_drawn() {
    let out = kflame(&["flamegraph", &data("bad-lines.folded")], b"");
    assert!(out.status.success());
    let err = text(&out.stderr);
    for (line, kind) in [(4, "no count"), (5, "bad count"), (7, "NUL byte"), (8, "invalid UTF-8")] {
        assert!(
            err.contains(&format!("bad-lines.folded:{line}: skipped")) && err.contains(kind),
            "{kind}: {err}"
        );
    }
    assert!(err.contains("skipped 2 lines (no count)"), "{err}");
    let svg = text(&out.stdout);
    assert!(svg.contains("<title>all (4.00 KiB, 100%)</title>"), "bytes unit honoured");
    assert!(svg.contains("<title>a (5 B, 0.12%)</title>"));
}

#[test]
fn empty_input_gives_a_valid_svg_saying_no_samples() {
    let out = kflame(&["flamegraph"], b"");
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("warning: no samples"));
    let svg = text(&out.stdout);
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(">no samples</text>"));
}

#[test]
fn same_input_same_svg_and_options_change_it() {
    let input = data("perf-sys-cpuclock.folded");
    let a = kflame(&["flamegraph", &input], b"").stdout;
    let b = kflame(&["flamegraph", &input], b"").stdout;
    assert_eq!(a, b);
    let k = text(&kflame(&["flamegraph", "--colors", "kernel", "--inverted", &input], b"").stdout);
    assert!(k.contains("Icicle Graph") && k.contains("\"inverted\": true"));
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn diff_matches_inferno_diff_folded() {
    let (before, after) = (data("diff/before.txt"), data("diff/after.txt"));
    for (flags, result) in [(vec![], "default"), (vec!["-n"], "normalize"), (vec!["-s"], "strip_hex")] {
        let mut args = vec!["diff"];
        args.extend(flags);
        args.extend([before.as_str(), after.as_str()]);
        let out = kflame(&args, b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let expected = std::fs::read_to_string(data(&format!("diff/results/{result}.txt"))).expect("golden");
        assert_eq!(sorted_lines(&text(&out.stdout)), sorted_lines(&expected), "{result}");
    }
}

#[test]
fn diff_output_renders_as_differential_graph() {
    let out = kflame(&["diff", &data("diff/before.txt"), &data("diff/after.txt")], b"");
    let svg = text(&kflame(&["flamegraph"], &out.stdout).stdout);
    assert!(svg.contains("\"differential\": true"));
    assert!(svg.contains("<title>__fget_light (12 samples, 15.00%; +15.00%)</title>"), "{svg}");
    assert!(svg.contains("fill=\"rgb(255,0,0)\""), "the largest growth is pure red");
}
