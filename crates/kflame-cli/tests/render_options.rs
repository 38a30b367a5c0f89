//! `kflame flamegraph` option values: nonsense is a usage error (exit 2) that names the option,
//! and `--nameattr` links that would run code are left out.

use std::process::{Command, Output, Stdio};

const FOLDED: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../kflame/tests/data/render/perf-sys-cpuclock.folded");

fn kflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).stdin(Stdio::null()).output().expect("kflame runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kflame-render-options-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn nonsense_values_are_usage_errors_naming_the_option() {
    for (args, option) in [
        (&["--width", "0"][..], "--width"),
        (&["--width", "99"], "--width"),
        (&["--width", "wide"], "--width"),
        (&["--height", "0"], "--height"),
        (&["--fontsize", "0"], "--fontsize"),
        (&["--fontsize=-3"], "--fontsize"),
        (&["--fontsize", "inf"], "--fontsize"),
        (&["--fontwidth", "0"], "--fontwidth"),
        (&["--fontwidth", "NaN"], "--fontwidth"),
        (&["--factor", "0"], "--factor"),
        (&["--minwidth", "150%"], "--minwidth"),
        (&["--minwidth=-1"], "--minwidth"),
        (&["--minwidth", "5000"], "--minwidth"),
        (&["--width", "200", "--minwidth", "181"], "--minwidth"),
        (&["--encoding", "junk\"?><x"], "--encoding"),
        (&["--encoding", "utf 8"], "--encoding"),
        (&["--encoding", ""], "--encoding"),
        (&["--fonttype", ""], "--fonttype"),
        (&["--fonttype", "Verdana\n"], "--fonttype"),
        (&["--fonttype", "a,,b"], "--fonttype"),
    ] {
        for format in ["svg", "html"] {
            let mut all = vec!["flamegraph", "--format", format];
            all.extend_from_slice(args);
            all.push(FOLDED);
            let out = kflame(&all);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
            assert!(err.contains(option), "{all:?}: {err}");
            assert!(out.stdout.is_empty(), "{all:?} wrote output");
        }
    }
}

#[test]
fn sensible_values_are_taken() {
    for args in [
        &["--width", "100", "--height", "1"][..],
        &["--width", "200", "--minwidth", "180"],
        &["--minwidth", "100%"],
        &["--minwidth", "0"],
        &["--fontsize", "0.5", "--fontwidth", "2", "--factor", "0.001"],
        &["--encoding", "UTF-8"],
        &["--encoding", "utf8"],
        &["--fonttype", "\"DejaVu Sans\", monospace"],
    ] {
        let mut all = vec!["flamegraph"];
        all.extend_from_slice(args);
        all.push(FOLDED);
        let out = kflame(&all);
        assert!(out.status.success(), "{all:?}: {}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{all:?}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("</svg>"));
    }
    let out = kflame(&["flamegraph", "--encoding", "UTF-8", "--width", "321", FOLDED]);
    let svg = text(&out.stdout);
    assert!(svg.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>"), "{svg:.80}");
    assert!(svg.contains("<svg version=\"1.1\" width=\"321\""), "{svg:.400}");
}

#[test]
fn an_encoding_the_svg_is_not_written_in_is_a_warning() {
    let out = kflame(&["flamegraph", "--encoding", "ISO-8859-1", FOLDED]);
    assert!(out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("warning") && err.contains("ISO-8859-1") && err.contains("UTF-8"), "{err}");
    assert!(text(&out.stdout).starts_with("<?xml version=\"1.0\" encoding=\"ISO-8859-1\""));
}

#[test]
fn nameattr_links_that_would_run_code_are_left_out_and_reported() {
    let dir = scratch("nameattr");
    let attrs = dir.join("attrs.tsv");
    // Frame names of perf-sys-cpuclock.folded, each given a link.
    let lines = [
        "do_syscall_64\thref=https://elixir.bootlin.com/linux/latest/A/ident/do_syscall_64\ttarget=_blank",
        "entry_SYSCALL_64_after_hwframe\thref=../docs/entry.html#syscall",
        "bash\thref=mailto:linux-mm@kvack.org",
        "rustc\thref=javascript:alert(1)\tclass=kept",
        "git\thref= JaVaScRiPt:alert(2)",
        "python3\txlink:href=java&#9;script:alert(3)",
        "dd\thref=&#x6A;avascript&colon;alert(4)",
        "exc_page_fault\thref=vbscript:msgbox(5)",
        "handle_mm_fault\thref=data:text/html;base64,PHNjcmlwdD5hbGVydCg2KTwvc2NyaXB0Pg==",
    ];
    std::fs::write(&attrs, lines.join("\n") + "\n").expect("attrs");
    let out = kflame(&["flamegraph", "--nameattr", attrs.to_str().expect("utf-8 path"), FOLDED]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let svg = text(&out.stdout);
    let lower = svg.to_ascii_lowercase();
    for bad in ["javascript", "vbscript", "data:text", "&amp;#x6a;", "alert("] {
        assert!(!lower.contains(bad), "{bad} reached the SVG");
    }
    for good in [
        "xlink:href=\"https://elixir.bootlin.com/linux/latest/A/ident/do_syscall_64\" target=\"_blank\"",
        "xlink:href=\"../docs/entry.html#syscall\"",
        "xlink:href=\"mailto:linux-mm@kvack.org\"",
        "<g class=\"kept\">",
    ] {
        assert!(svg.contains(good), "{good} missing");
    }
    let err = text(&out.stderr);
    assert!(err.contains("attrs.tsv:4: skipped 6 lines (unsafe link)"), "{err}");
    assert!(err.contains("`href` must be an http(s), mailto or relative URL"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
