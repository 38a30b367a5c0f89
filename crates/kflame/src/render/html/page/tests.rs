//! Escaping and determinism of the page.

use super::super::{HtmlOptions, HtmlProfile, Palette, write_html};
use super::*;
use crate::fold::{OrderedStacks, StackCounts, Stacks, Unit};

const HOSTILE: &str = "</text><script>alert(1)</script>";

fn page(lines: &[(&str, u64)], meta: &Meta, opts: &HtmlOptions) -> String {
    let mut counts = StackCounts::new();
    for (s, w) in lines {
        counts.add(s.as_bytes(), Weight::from_u64(*w));
    }
    let stacks = Stacks::Counts(counts);
    let mut out = Vec::new();
    write_html(&mut out, &HtmlProfile::new(&stacks, meta), opts).expect("writing to a Vec");
    String::from_utf8(out).expect("the page is UTF-8")
}

#[test]
fn hostile_symbol_cannot_close_the_data_block() {
    let stack = format!("main;{HOSTILE};leaf");
    let opts = HtmlOptions { title: Some(HOSTILE.into()), notes: Some(HOSTILE.into()), ..Default::default() };
    let html = page(&[(&stack, 5)], &Meta::default(), &opts);
    // Exactly the page's own three script elements open and close.
    assert_eq!(html.matches("<script").count(), 3);
    assert_eq!(html.matches("</script>").count(), 3);
    assert!(!html.contains("alert(1)</script>"));
    assert!(html.contains("\\u003c/text\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"));
    assert!(html.contains("<title>&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>"));
}

#[test]
fn assets_never_contain_markup_terminators() {
    for script in SCRIPTS {
        assert!(!script.to_ascii_lowercase().contains("</script"));
        assert!(!script.contains("<!--"));
    }
    assert!(!STYLE.to_ascii_lowercase().contains("</style"));
}

#[test]
fn json_strings_escape_controls_and_separators() {
    assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
    assert_eq!(json_str("x\u{2028}&>"), "\"x\\u2028\\u0026\\u003e\"");
    assert_eq!(escape_html("<a href='x'>&\""), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
}

#[test]
fn same_input_same_page_whatever_the_insertion_order() {
    let meta = Meta::with_unit(Unit::Bytes);
    let opts = HtmlOptions { palette: Palette::Kernel, ..Default::default() };
    let a = page(&[("a;b", 1), ("a;c", 2), ("d", 3)], &meta, &opts);
    let b = page(&[("d", 3), ("a;c", 2), ("a;b", 1)], &meta, &opts);
    assert_eq!(a, b);
    assert!(a.contains("\"unit\":\"bytes\",\"countname\":\"bytes\""));
    assert!(a.contains("\"palette\":\"kernel\""));
    assert!(a.contains("\"total\":\"6\""));
}

#[test]
fn empty_profile_is_a_valid_page() {
    let html = page(&[], &Meta::default(), &HtmlOptions::default());
    assert!(html.contains("\"count\":0"));
    assert!(html.contains("id=\"kflame-nodes\"></script>"));
    assert!(html.trim_end().ends_with("</html>"));
}

#[test]
fn flame_chart_options_reach_the_page() {
    let mut o = OrderedStacks::new();
    o.push(b"a;b", Weight::ONE);
    o.push(b"a;c", Weight::ONE);
    o.push(b"a;b", Weight::ONE);
    let stacks = Stacks::Ordered(o);
    let opts = HtmlOptions { flamechart: true, inverted: true, ..Default::default() };
    let mut out = Vec::new();
    write_html(&mut out, &HtmlProfile::new(&stacks, &Meta::default()), &opts).expect("writing to a Vec");
    let html = String::from_utf8_lossy(&out);
    assert!(html.contains("<title>Flame Chart</title>"));
    assert!(html.contains("\"inverted\":true,\"flamechart\":true"));
    // a, b, c, b: the two b runs are not consecutive and stay apart.
    assert!(html.contains("\"count\":4"));
}

#[test]
fn invalid_utf8_names_are_shown_lossily() {
    let mut counts = StackCounts::new();
    counts.add(b"main;caf\xe9;\xff\xfe", Weight::from_u64(2));
    let stacks = Stacks::Counts(counts);
    let mut out = Vec::new();
    write_html(&mut out, &HtmlProfile::new(&stacks, &Meta::default()), &HtmlOptions::default())
        .expect("writing to a Vec");
    let html = String::from_utf8(out).expect("the page is UTF-8 even when symbols are not");
    assert!(html.contains("\"caf\u{fffd}\""));
    assert!(html.contains("\"\u{fffd}\u{fffd}\""));
}
