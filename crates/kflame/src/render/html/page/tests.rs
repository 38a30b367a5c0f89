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
    for asset in ASSETS {
        assert!(!asset.text.to_ascii_lowercase().contains("</script"), "{}", asset.path);
        assert!(!asset.text.contains("<!--"), "{}", asset.path);
    }
    assert!(!STYLE.to_ascii_lowercase().contains("</style"));
    assert!(!bundle().to_ascii_lowercase().contains("</script"));
}

/// The offline page inlines the very modules a served page loads: only their `import` and
/// `export` lines differ, and only in the forms `inline_module` rewrites.
#[test]
fn modules_use_only_the_import_and_export_forms_the_page_inlines() {
    for asset in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
        let statements: Vec<&str> = asset
            .text
            .lines()
            .filter(|l| {
                l.starts_with("import") || l.starts_with("export") || l.trim_start().starts_with("export ")
            })
            .collect();
        for s in &statements {
            let ok =
                s.starts_with("export {") || s.starts_with("import ") && inline_import(&s[7..]).is_some();
            assert!(ok, "{}: `{s}` is a form the offline page cannot inline", asset.path);
        }
        let exports = statements.iter().filter(|s| s.starts_with("export")).count();
        assert!(exports <= 1, "{}: one export list, at the end", asset.path);
        if exports == 1 {
            let after = asset.text.rsplit_once("export {").map(|(_, t)| t).unwrap_or_default();
            let rest = after.split_once("};").map(|(_, t)| t).unwrap_or("?");
            assert!(rest.trim().is_empty(), "{}: code after the export list", asset.path);
        }
        // Imports name files that come earlier (dependency order, no cycles).
        let at = ASSETS.iter().position(|a| a.path == asset.path).unwrap();
        for s in statements.iter().filter(|s| s.starts_with("import")) {
            let file = s.rsplit_once("'./").unwrap().1.trim_end_matches("';");
            let dep = ASSETS.iter().position(|a| a.path == file);
            assert!(dep.is_some_and(|d| d < at), "{}: imports {file}, which is not before it", asset.path);
        }
    }
    let bundle = bundle();
    assert!(!bundle.lines().any(|l| l.starts_with("import ") || l.starts_with("export ")));
    for m in OFFLINE_MODULES {
        assert!(bundle.contains(&format!("const {} = (function () {{", module_var(m))), "{m}");
    }
    assert!(
        !bundle.contains("kflame_served") && !bundle.contains("fetch("),
        "the offline page fetches nothing"
    );
}

#[test]
fn inlining_rewrites_imports_and_the_export_list() {
    let src = "/* m */\nimport * as model from './model.js';\nimport { a, b as c } from './ui.js';\n\
               function f() {}\nexport {\n  f, CAT as KERNEL_CATEGORY,\n};\n";
    assert_eq!(
        inline_module("viewer.js", src),
        "const kflame_viewer = (function () {\n'use strict';\n/* m */\nconst model = kflame_model;\n\
         const { a, b: c } = kflame_ui;\nfunction f() {}\nreturn { f, KERNEL_CATEGORY: CAT };\n})();\n"
    );
}

#[test]
fn served_page_loads_the_modules_and_fetches_its_data() {
    let mut out = Vec::new();
    super::super::served_page(&mut out, HOSTILE, "data/cpu.json?a=1&b=\"2\"", "/assets/").unwrap();
    let html = String::from_utf8(out).unwrap();
    assert!(html.contains("<script type=\"module\" src=\"/assets/served.js\"></script>"));
    assert!(html.contains("<link rel=\"stylesheet\" href=\"/assets/viewer.css\">"));
    assert!(html.contains("data-src=\"data/cpu.json?a=1&amp;b=&quot;2&quot;\""));
    assert!(!html.contains("alert(1)</script>"));
    assert_eq!(html.matches("<script").count(), 1);
}

#[test]
fn encoded_data_is_what_the_page_embeds() {
    let mut counts = StackCounts::new();
    counts.add(b"main;a", Weight::from_u64(3));
    counts.add(b"main;b", Weight::parse(b"1.5").unwrap());
    let stacks = Stacks::Counts(counts);
    let meta = Meta::with_unit(Unit::Bytes);
    let profile = HtmlProfile::new(&stacks, &meta);
    let opts = HtmlOptions::default();
    let data = super::super::encode(&profile, &opts);
    let mut out = Vec::new();
    write_html(&mut out, &profile, &opts).unwrap();
    let html = String::from_utf8(out).unwrap();
    assert!(html.contains(&format!(
        "id=\"kflame-profile\">{}</script>",
        crate::render::json::to_script_safe_string(&data.profile)
    )));
    assert!(html.contains(&format!("id=\"kflame-nodes\">{}</script>", data.nodes)));
    let json: serde_json::Value = serde_json::from_str(&data.to_json()).unwrap();
    assert_eq!(json["profile"]["total"], "4.5");
    assert_eq!(json["profile"]["scale"], 1);
    assert_eq!(json["nodes"], data.nodes.as_str());
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
