//! Off-wake flame graphs in the SVG: stacks in bcc offwaketime's layout (the blocked task's
//! stack root first, a `--` frame, then the waker's stack leaf first), real captures of
//! `kflame record --off-cpu --wakers` (`tests/data/render/README.md`). The SVG is parsed
//! back; expected weights are computed here from the folded text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use kflame::diag::Diagnostics;
use kflame::render::palette::PALETTE_NAMES;
use kflame::render::{MinWidth, Options, Palette, PaletteMap, Profile, write_svg};

const WORKLOAD: &str = "wakers-kfwork.folded";
const SYSTEM: &str = "wakers-system.folded";
const GREY: (u8, u8, u8) = (160, 160, 160);

fn text(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/render")).join(name);
    std::fs::read_to_string(path).expect("fixture")
}

fn render(name: &str, opts: &Options, map: Option<&mut PaletteMap>) -> String {
    let mut profile = Profile::new(false, false);
    let mut diag = Diagnostics::new();
    profile.read(text(name).as_bytes(), &mut diag).expect("readable");
    assert_eq!(diag.skipped(), 0, "{}", diag.report(name));
    profile.finish();
    let mut out = Vec::new();
    write_svg(&profile, opts, map, &mut out).expect("rendered");
    String::from_utf8(out).expect("UTF-8")
}

/// Every frame drawn, with its full path of names from the root (the root excluded).
#[derive(Debug)]
struct Drawn {
    path: Vec<String>,
    title: String,
    fill: (u8, u8, u8),
    w: u128,
}

impl Drawn {
    fn waker(&self) -> bool {
        self.path[..self.path.len() - 1].iter().any(|n| n == "--")
    }
}

fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=\"");
    let start = tag.find(&key).expect(name) + key.len();
    &tag[start..start + tag[start..].find('"').expect("quote")]
}

/// Weights are exact decimals; the fixtures' are whole nanoseconds.
fn whole(v: &str) -> u128 {
    v.parse().unwrap_or_else(|_| panic!("a whole weight, found {v}"))
}

fn frames(svg: &str, inverted: bool) -> Vec<Drawn> {
    // (title, fill, x, w, y)
    let mut raw = Vec::new();
    for group in svg.split("<g>").skip(1) {
        let (Some(t0), Some(t1), Some(r0)) =
            (group.find("<title>"), group.find("</title>"), group.find("<rect"))
        else {
            continue;
        };
        let rect = &group[r0..r0 + group[r0..].find("/>").expect("rect end")];
        let fill = attr(rect, "fill");
        let rgb: Vec<u8> = fill
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(',')
            .map(|c| c.parse().expect("rgb"))
            .collect();
        let title = group[t0 + 7..t1].replace("&apos;", "'").replace("&amp;", "&");
        let y: f64 = attr(rect, "y").parse().expect("y");
        raw.push((title, (rgb[0], rgb[1], rgb[2]), whole(attr(rect, "kf:x")), whole(attr(rect, "kf:w")), y));
    }
    let root_y = raw.iter().find(|f| f.0.starts_with("all (")).expect("root").4;
    let depth = |y: f64| ((if inverted { y - root_y } else { root_y - y }) / 16.0).round() as usize;
    let mut by_depth: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, f) in raw.iter().enumerate() {
        by_depth.entry(depth(f.4)).or_default().push(i);
    }
    let name = |title: &str| title[..title.rfind(" (").expect("weight")].to_string();
    let mut paths: Vec<Vec<String>> = vec![Vec::new(); raw.len()];
    let mut out = Vec::new();
    for (d, ids) in &by_depth {
        for &i in ids {
            let (title, fill, x, w, _) = &raw[i];
            if *d == 0 {
                continue;
            }
            let mut path = match by_depth.get(&(d - 1)) {
                Some(parents) if *d > 1 => {
                    let p = parents
                        .iter()
                        .find(|&&p| raw[p].2 <= *x && x + w <= raw[p].2 + raw[p].3)
                        .expect("parent");
                    paths[*p].clone()
                }
                _ => Vec::new(),
            };
            // The separator's title carries a note; its name is `--`.
            let n = name(title);
            path.push(if n.starts_with("-- (") { "--".to_string() } else { n });
            paths[i] = path.clone();
            out.push(Drawn { path, title: title.clone(), fill: *fill, w: *w });
        }
    }
    out
}

/// Stack prefix → weight, from the folded text.
fn prefixes(name: &str) -> BTreeMap<Vec<String>, u128> {
    let mut m = BTreeMap::new();
    for line in text(name).lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (stack, w) = line.rsplit_once(' ').expect("count");
        let frames: Vec<String> = stack.split(';').map(str::to_string).collect();
        for k in 1..=frames.len() {
            *m.entry(frames[..k].to_vec()).or_insert(0) += w.parse::<u128>().expect("whole");
        }
    }
    m
}

fn all_drawn() -> Options {
    Options { min_width: MinWidth::Pixels(0.0), ..Options::default() }
}

fn is_aqua((r, g, b): (u8, u8, u8)) -> bool {
    (50..=110).contains(&r) && (165..=220).contains(&g) && (165..=220).contains(&b)
}

fn is_hot((r, _, b): (u8, u8, u8)) -> bool {
    r >= 205 && b <= 55
}

#[test]
fn separator_is_grey_and_the_wakers_stack_aqua() {
    for fixture in [WORKLOAD, SYSTEM] {
        let expected = prefixes(fixture);
        let drawn = frames(&render(fixture, &all_drawn(), None), false);
        let (mut separators, mut wakers) = (0, 0);
        for f in &drawn {
            assert_eq!(Some(&f.w), expected.get(&f.path), "{fixture}: weight of {:?}", f.path);
            if f.path.last().is_some_and(|n| n == "--") {
                separators += 1;
                assert_eq!(f.fill, GREY, "{fixture}: {}", f.title);
                assert!(
                    f.title.starts_with("-- (waker's stack above, blocked stack below) ("),
                    "{fixture}: {}",
                    f.title
                );
            } else if f.waker() {
                wakers += 1;
                assert!(is_aqua(f.fill), "{fixture}: waker frame {} is {:?}", f.title, f.fill);
            } else {
                assert!(is_hot(f.fill), "{fixture}: blocked frame {} is {:?}", f.title, f.fill);
            }
        }
        let want: BTreeSet<_> = expected.keys().filter(|p| p.last().is_some_and(|n| n == "--")).collect();
        assert_eq!(separators, want.len(), "{fixture}: one separator per blocked stack");
        assert!(wakers > 0, "{fixture}");
    }
}

#[test]
fn waker_frames_keep_their_names() {
    let expected = prefixes(WORKLOAD);
    let drawn = frames(&render(WORKLOAD, &all_drawn(), None), false);
    // kf_pipe_writer both blocks (its naps) and wakes (the reader blocked in the pipe).
    let writer: Vec<_> =
        drawn.iter().filter(|f| f.path.last().is_some_and(|n| n == "kf_pipe_writer")).collect();
    assert!(writer.iter().any(|f| f.waker()) && writer.iter().any(|f| !f.waker()));
    for f in writer {
        assert!(f.title.starts_with("kf_pipe_writer ("), "{}", f.title);
        assert_eq!(Some(&f.w), expected.get(&f.path));
    }
}

#[test]
fn icicle_separator_says_the_waker_is_below() {
    let opts = Options { inverted: true, ..all_drawn() };
    let drawn = frames(&render(WORKLOAD, &opts, None), true);
    let sep: Vec<_> = drawn.iter().filter(|f| f.path.last().is_some_and(|n| n == "--")).collect();
    assert!(!sep.is_empty());
    for f in sep {
        assert!(f.title.starts_with("-- (waker's stack below, blocked stack above) ("), "{}", f.title);
    }
}

#[test]
fn every_palette_draws_the_wakers_apart() {
    for name in PALETTE_NAMES {
        let palette = Palette::from_name(name).expect("palette");
        let opts = Options { palette, ..all_drawn() };
        let drawn = frames(&render(WORKLOAD, &opts, None), false);
        let mut waker = BTreeSet::new();
        let mut blocked = BTreeSet::new();
        for f in drawn.iter().filter(|f| f.path.last().is_some_and(|n| n != "--")) {
            if f.waker() { &mut waker } else { &mut blocked }.insert(f.fill);
        }
        for f in drawn.iter().filter(|f| f.path.last().is_some_and(|n| n == "--")) {
            assert_eq!(f.fill, GREY, "{name}");
        }
        // flamegraph.pl's wakeup palette draws every frame as a waker's (aqua).
        if palette != Palette::Wakeup {
            assert!(
                waker.is_disjoint(&blocked),
                "{name}: {:?}",
                waker.intersection(&blocked).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn consistent_palette_keeps_a_wakers_colour_apart() {
    let mut map = PaletteMap::default();
    render(WORKLOAD, &all_drawn(), Some(&mut map));
    let text = map.to_text();
    let colour = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}->")))
            .unwrap_or_else(|| panic!("{key} in {text}"))
    };
    assert_ne!(colour("kf_pipe_writer"), colour("kf_pipe_writer_[w]"));
    assert_eq!(colour("--"), "rgb(160,160,160)");
    // Read back, the map gives the same drawing.
    let mut diag = Diagnostics::new();
    let mut again = PaletteMap::parse(&text, &mut diag);
    let a = render(WORKLOAD, &all_drawn(), Some(&mut again));
    let mut once_more = PaletteMap::parse(&text, &mut diag);
    assert_eq!(a, render(WORKLOAD, &all_drawn(), Some(&mut once_more)));
    assert_eq!(again.to_text(), text);
}
