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
    let args =
        ["flamegraph", "--title", "<script>alert(3)</script>", "--fonttype", "x]]></style><script>alert(4)"];
    let out = kflame(&[&args[..], &[data("hostile.folded").as_str()]].concat(), b"");
    assert!(out.status.success());
    let svg = text(&out.stdout);
    assert_eq!(svg.matches("<script").count(), 1, "only kflame's own script element");
    assert_eq!(svg.matches("]]>").count(), 2, "only the ends of the style and script sections");
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
    for (flags, result) in [(vec![], "default"), (vec!["-s"], "strip_hex")] {
        let mut args = vec!["diff"];
        args.extend(flags);
        args.extend([before.as_str(), after.as_str()]);
        let out = kflame(&args, b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let expected = std::fs::read_to_string(data(&format!("diff/results/{result}.txt"))).expect("golden");
        assert_eq!(sorted_lines(&text(&out.stdout)), sorted_lines(&expected), "{result}");
    }
}

/// `stack before after` lines as (stack, before in 1e-9 units, after in 1e-9 units).
fn diff_columns(s: &str) -> Vec<(String, u128, u128)> {
    let nano = |w: &str| {
        let (int, frac) = w.split_once('.').unwrap_or((w, ""));
        let frac = format!("{frac:0<9}");
        int.parse::<u128>().expect("integer part") * 1_000_000_000 + frac.parse::<u128>().expect("fraction")
    };
    let mut v: Vec<_> = s
        .lines()
        .map(|l| {
            let mut f = l.rsplitn(3, ' ');
            let (a, b) = (f.next().expect("after"), f.next().expect("before"));
            (f.next().expect("stack").to_string(), nano(b), nano(a))
        })
        .collect();
    v.sort();
    v
}

/// `-n` differs from inferno's (and difffolded.pl's) on purpose: they round every scaled
/// weight down to a whole number, kflame keeps 9 decimals and the exact total. Everything
/// else matches inferno's result: the stacks, the AFTER column, and the whole part of BEFORE.
#[test]
fn diff_normalize_is_exact_where_inferno_rounds_down() {
    let (before, after) = (data("diff/before.txt"), data("diff/after.txt"));
    let out = kflame(&["diff", "-n", &before, &after], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = diff_columns(&text(&out.stdout));
    let inferno = diff_columns(&std::fs::read_to_string(data("diff/results/normalize.txt")).expect("golden"));
    let plain = diff_columns(&text(&kflame(&["diff", &before, &after], b"").stdout));
    assert_eq!(ours.len(), inferno.len());
    let (t1, t2): (u128, u128) = (plain.iter().map(|l| l.1).sum(), plain.iter().map(|l| l.2).sum());
    assert_ne!(t1, t2, "the fixture needs scaling");
    for ((o, i), p) in ours.iter().zip(&inferno).zip(&plain) {
        assert_eq!((&o.0, o.2), (&i.0, i.2), "same stack and AFTER as inferno");
        assert_eq!(o.1 / 1_000_000_000 * 1_000_000_000, i.1, "whole part of BEFORE as inferno: {}", o.0);
        // The exact quotient, to the last of 9 decimals: rounded down or up.
        let exact_floor = p.1 * t2 / t1;
        assert!(o.1 == exact_floor || o.1 == exact_floor + 1, "{}: {} vs {exact_floor}", o.0, o.1);
    }
    assert_eq!(ours.iter().map(|l| l.1).sum::<u128>(), t2, "BEFORE now adds up to AFTER's total");
    assert!(inferno.iter().map(|l| l.1).sum::<u128>() < t2, "inferno's rounding loses weight");
}

#[test]
fn diff_output_renders_as_differential_graph() {
    let out = kflame(&["diff", &data("diff/before.txt"), &data("diff/after.txt")], b"");
    let svg = text(&kflame(&["flamegraph"], &out.stdout).stdout);
    assert!(svg.contains("\"differential\": true"));
    assert!(svg.contains("<title>__fget_light (12 samples, 15.00%; +15.00%)</title>"), "{svg}");
    assert!(svg.contains("fill=\"rgb(255,0,0)\""), "the largest growth is pure red");
}

#[test]
fn appearance_options_take_effect() {
    let input = data("hostile.folded");
    let out = kflame(
        &[
            "flamegraph",
            "--subtitle",
            "sub <1>",
            "--notes",
            "n & m",
            "--encoding",
            "iso-8859-1",
            "--width",
            "600",
            "--height",
            "20",
            "--fonttype",
            "monospace",
            "--fontsize",
            "10",
            "--bgcolors",
            "#102030",
            "--countname",
            "pages",
            "--nametype",
            "Sym:",
            "--total",
            "90",
            "--minwidth",
            "5%",
            &input,
        ],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = text(&out.stdout);
    assert!(svg.starts_with("<?xml version=\"1.0\" encoding=\"iso-8859-1\" standalone=\"no\"?>"));
    assert!(svg.contains(">sub &lt;1&gt;</text>") && svg.contains("<desc id=\"notes\">n &amp; m</desc>"));
    assert!(svg.contains("width=\"600\"") && svg.contains("height=\"19\""));
    assert!(
        svg.contains("font-family:monospace; font-size:10px") && svg.contains("stop-color=\"rgb(16,32,48)\"")
    );
    assert!(
        svg.contains("\"nametype\": \"Sym:\"") && svg.contains("(30 pages, 33.33%)"),
        "--total 90 halves"
    );
    // 5% of 580 px is 29 px = 4.5 pages of 90: the 5-page frames stay, nothing narrower.
    assert!(svg.contains("<title>all (45 pages, 50.00%)</title>"));
}

#[test]
fn nameattr_sets_title_link_and_class_but_no_handlers() {
    let dir = std::env::temp_dir().join(format!("kflame-nameattr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let attrs = dir.join("attrs.txt");
    std::fs::write(
        &attrs,
        "main\ttitle=the <main>\thref=https://x.invalid/?a=1&b=2\tclass=hot\nswapper\tonclick=alert(1)\n",
    )
    .expect("attrs");
    let out =
        kflame(&["flamegraph", "--nameattr", attrs.to_str().expect("path"), &data("hostile.folded")], b"");
    assert!(out.status.success());
    let svg = text(&out.stdout);
    assert!(svg.contains("<g class=\"hot\"><title>the &lt;main&gt;</title><a xlink:href=\"https://x.invalid/?a=1&amp;b=2\" target=\"_top\">"));
    assert!(!svg.contains("onclick"));
    assert!(
        text(&out.stderr).contains("attrs.txt:2: skipped 1 line (bad nameattr line)"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn consistent_palette_is_reused_and_extended() {
    let dir = std::env::temp_dir().join(format!("kflame-cp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("palette.map"), "main->rgb(1,2,3)\n").expect("palette");
    let out = Command::new(env!("CARGO_BIN_EXE_kflame"))
        .args(["flamegraph", "--cp", &data("hostile.folded")])
        .current_dir(&dir)
        .output()
        .expect("kflame runs");
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("fill=\"rgb(1,2,3)\""));
    let map = std::fs::read_to_string(dir.join("palette.map")).expect("written back");
    assert!(map.contains("main->rgb(1,2,3)\n") && map.contains("swapper->rgb("), "{map}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn flame_chart_and_reverse_change_the_layout() {
    let input = b"a;b 1\nc 1\na;b 1\n";
    let chart = text(&kflame(&["flamegraph", "--flamechart"], input).stdout);
    assert!(chart.contains(">Flame Chart</text>"));
    assert_eq!(chart.matches("<title>a (1 samples").count(), 2, "non-consecutive stacks stay apart");
    let graph = text(&kflame(&["flamegraph"], input).stdout);
    assert_eq!(graph.matches("<title>a (2 samples").count(), 1);
    let reversed = text(&kflame(&["flamegraph", "--reverse"], input).stdout);
    assert!(reversed.contains("<title>b (2 samples") && reversed.contains("kf:x=\"0\" kf:w=\"2\""));
}

#[test]
fn huge_counts_and_several_inputs() {
    let out = kflame(&["flamegraph"], b"swapper/0;start_kernel;do_idle 239807672958951499\n");
    assert!(text(&out.stdout).contains("<title>all (239,807,672,958,951,499 samples, 100%)</title>"));
    let one = data("perf-sys-cpuclock.folded");
    let single = text(&kflame(&["flamegraph", &one], b"").stdout);
    let double = text(&kflame(&["flamegraph", &one, &one], b"").stdout);
    let total = |svg: &str| {
        let t = svg.find("<title>all (").expect("root") + "<title>all (".len();
        svg[t..t + svg[t..].find(' ').expect("count end")].replace(',', "").parse::<u64>().expect("count")
    };
    assert_eq!(total(&double), 2 * total(&single));
}

/// The fill of the first frame whose title starts with `name (`.
fn fill_of(svg: &str, name: &str) -> (u8, u8, u8) {
    let t = svg.find(&format!("<title>{name} (")).unwrap_or_else(|| panic!("{name} drawn"));
    let f = t + svg[t..].find("fill=\"rgb(").expect("fill") + "fill=\"rgb(".len();
    let v: Vec<u8> =
        svg[f..f + svg[f..].find(')').expect("end")].split(',').map(|c| c.parse().expect("u8")).collect();
    (v[0], v[1], v[2])
}

#[test]
fn kernel_palette_tells_code_kinds_apart() {
    let cpu =
        text(&kflame(&["flamegraph", "--colors", "kernel", &data("perf-sys-cpuclock.folded")], b"").stdout);
    let (r, _, b) = fill_of(&cpu, "entry_SYSCALL_64_after_hwframe");
    assert!(r >= 190 && b == 0, "kernel frames are orange: {r},{b}");
    let (r, g, b) = fill_of(&cpu, "bash");
    assert!(b >= 205 && r < 150 && g < 150, "user frames are blue");
    let (r, g, b) = fill_of(&cpu, "[unknown]");
    assert!(r == g && g == b, "unreliable frames are grey");
    let input = b"[hung_task];kind:hung;task;? __schedule;schedule 1\nswapper;asm_sysvec_apic_timer_interrupt;hrtimer_interrupt 1\n";
    let svg = text(&kflame(&["flamegraph", "--colors", "kernel"], input).stdout);
    let (r, g, b) = fill_of(&svg, "[hung_task]");
    assert!(g >= 200 && r < 120 && b < 120, "category frames are green");
    let (r, g, b) = fill_of(&svg, "hrtimer_interrupt");
    assert!(r >= 190 && b >= 190 && g < 150, "interrupt context is purple");
    let (r, g, b) = fill_of(&svg, "? __schedule");
    assert!(r == g && g == b, "`?` frames are grey");
}
