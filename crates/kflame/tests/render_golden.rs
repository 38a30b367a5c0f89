//! Geometry golden tests against inferno's expected SVGs (CDDL test data, see
//! `tests/data/render/inferno/README.md`). The SVGs are not compared byte for byte (the
//! scripts and styles differ): both are parsed, and the set of frames must agree in title
//! text, start, width (in weight units) and depth.

use std::path::PathBuf;

use kflame::diag::Diagnostics;
use kflame::render::{Options, Profile, write_svg};

fn data(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/render/inferno")).join(name)
}

/// One drawn frame: title, x, width, depth.
#[derive(Debug, Clone, PartialEq)]
struct Drawn {
    title: String,
    x: f64,
    w: f64,
    depth: i64,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Frames of an SVG written by inferno (`fg:` attributes) or kflame (`kf:`).
fn frames(svg: &str, prefix: &str, inverted: bool) -> Vec<Drawn> {
    let mut raw = Vec::new();
    for group in svg.split("<g").skip(1) {
        let (Some(t0), Some(t1), Some(r0)) =
            (group.find("<title>"), group.find("</title>"), group.find("<rect"))
        else {
            continue;
        };
        let rect = &group[r0..r0 + group[r0..].find("/>").expect("rect end")];
        let num = |n: &str| attr(rect, &format!("{prefix}:{n}")).and_then(|v| v.parse::<f64>().ok());
        let (Some(x), Some(w)) = (num("x"), num("w")) else { continue };
        let y: f64 = attr(rect, "y").expect("y").parse().expect("numeric y");
        raw.push((unescape(&group[t0 + 7..t1]), x, w, y));
    }
    let root_y = raw.iter().find(|f| f.0.starts_with("all (")).expect("an all frame").3;
    let mut out: Vec<Drawn> = raw
        .into_iter()
        .map(|(title, x, w, y)| {
            let off = if inverted { y - root_y } else { root_y - y };
            Drawn { title, x, w, depth: (off / 16.0).round() as i64 }
        })
        .collect();
    out.sort_by(|a, b| (a.depth, a.x.to_bits(), &a.title).cmp(&(b.depth, b.x.to_bits(), &b.title)));
    out
}

fn render(inputs: &[&str], opts: &Options, time_order: bool, reverse: bool) -> String {
    let mut profile = Profile::new(time_order, reverse);
    for input in inputs {
        let text = std::fs::read(data(input)).expect("fixture");
        let mut diag = Diagnostics::new();
        profile.read(&text[..], &mut diag).expect("readable");
        assert_eq!(diag.skipped(), 0, "{input}: {}", diag.report(input));
    }
    profile.finish();
    let mut out = Vec::new();
    write_svg(&profile, opts, None, &mut out).expect("rendered");
    String::from_utf8(out).expect("UTF-8 SVG")
}

fn check(inputs: &[&str], expected: &str, opts: Options, time_order: bool, reverse: bool) {
    let ours = render(inputs, &opts, time_order, reverse);
    let theirs = std::fs::read_to_string(data(expected)).expect("expected SVG");
    let (a, mut b) = (frames(&ours, "kf", opts.inverted), frames(&theirs, "fg", opts.inverted));
    if time_order {
        // FlameGraph and inferno draw flame charts with the *last* input line on the left;
        // kflame draws input (time) order left to right. Mirror theirs to compare.
        let total = b.iter().find(|f| f.depth == 0).map_or(0.0, |f| f.w);
        b.iter_mut().for_each(|f| f.x = total - f.x - f.w);
    }
    assert!(!b.is_empty(), "{expected} has frames");
    let missing: Vec<_> = b.iter().filter(|f| !a.contains(f)).take(5).collect();
    let extra: Vec<_> = a.iter().filter(|f| !b.contains(f)).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "{expected}: missing {missing:#?}\nextra {extra:#?}");
    assert_eq!(a.len(), b.len(), "{expected}: frame count");
}

const VERTX: &str = "perf-vertx-stacks-01-collapsed-all.txt";

#[test]
fn narrow_blocks_are_pruned_like_inferno() {
    check(&["narrow-blocks.txt"], "narrow-blocks.svg", Options::default(), false, false);
}

#[test]
fn vertx_sorted_and_unsorted_inputs() {
    check(&[VERTX], "perf-vertx-stacks-01-collapsed-all.svg", Options::default(), false, false);
    let unsorted = "perf-vertx-stacks-01-collapsed-all-unsorted.txt";
    check(&[unsorted], "perf-vertx-stacks-01-collapsed-all.svg", Options::default(), false, false);
}

#[test]
fn reversed_stacks() {
    let unsorted = "perf-vertx-stacks-01-collapsed-all-unsorted.txt";
    check(
        &[unsorted],
        "perf-vertx-stacks-01-collapsed-all-reversed-stacks.svg",
        Options::default(),
        false,
        true,
    );
}

#[test]
fn icicle_graph() {
    let opts = Options { inverted: true, ..Options::default() };
    check(&[VERTX], "inverted.svg", opts, false, false);
}

#[test]
fn flame_chart_keeps_time_order() {
    let opts = Options { flame_chart: true, title: Some("CHART_TITLE".into()), ..Options::default() };
    check(&["flamechart-flames.txt"], "flamechart-flame.svg", opts, true, false);
}

#[test]
fn differential_titles_and_geometry() {
    let input = "perf-cycles-instructions-01-collapsed-all-diff.txt";
    check(&[input], "diff.svg", Options::default(), false, false);
    check(&[input], "diff-negated.svg", Options { negate: true, ..Options::default() }, false, false);
}

#[test]
fn factor_scales_displayed_counts() {
    check(&[VERTX], "factor-2.5.svg", Options { factor: 2.5, ..Options::default() }, false, false);
}

#[test]
fn austin_frames_with_angle_brackets() {
    check(&["austin-flames.txt"], "austin-flame.svg", Options::default(), false, false);
}

#[test]
fn title_with_symbols_is_escaped() {
    let title = "Test <& ' \"";
    let opts = Options { title: Some(title.into()), ..Options::default() };
    let input = "perf-cycles-instructions-01-collapsed-all-diff.txt";
    check(&[input], "title_with_symbols.svg", opts.clone(), false, false);
    let ours = render(&[input], &opts, false, false);
    let t = ours.find("id=\"title\"").expect("title element");
    let text = &ours[t..t + ours[t..].find("</text>").expect("end")];
    assert!(text.ends_with(">Test &lt;&amp; &#39; &quot;"), "{text}");
}
