//! The kernel report extractor against syzkaller's corpus of real kernel reports
//! (`tests/data/kernel-log/syzkaller/report/`, Apache-2.0): detection, kind and the function
//! named by the expected title, for every file. The function check looks at every stack the
//! extractor kept for the report (the main call trace and the extra stacks: KASAN's
//! allocated/freed-by, lockdep's chains, other CPUs), leaf to root.
//!
//! Every miss must be listed with its reason in
//! `tests/data/kernel-log/syzkaller-accepted-misses.txt`, and every listed miss must still
//! be a miss (so the list shrinks as the extractor improves).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use kflame::report::{Report, ReportExtractor};

mod common;
use common::syzkaller::{Expected, expected_kind, split, title_functions};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kernel-log/syzkaller/report");
const ACCEPTED: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kernel-log/syzkaller-accepted-misses.txt");

fn base(f: &str) -> &str {
    f.split('.').next().unwrap_or(f)
}

struct Outcome {
    /// Our title equals syzkaller's TITLE or one of its ALTs (informative, not asserted).
    title_same: bool,
    detected_ok: bool,
    kind_ok: Option<bool>,
    frame_ok: Option<bool>,
    detail: String,
}

fn check(exp: &Expected, reports: &[Report]) -> Outcome {
    let first = reports.first();
    let want = !exp.title.is_empty();
    let detected_ok = want == first.is_some();
    let mut o =
        Outcome { title_same: false, detected_ok, kind_ok: None, frame_ok: None, detail: String::new() };
    let Some(r) = first.filter(|_| want) else {
        o.detail = format!("expected {:?}, got {:?}", exp.title, first.map(|r| &r.title));
        return o;
    };
    o.title_same = r.title == exp.title || exp.alts.contains(&r.title);
    let k = expected_kind(&exp.title);
    o.kind_ok = Some(r.kind() == k);
    let funcs: Vec<String> =
        std::iter::once(&exp.title).chain(&exp.alts).flat_map(|t| title_functions(t)).collect();
    if !funcs.is_empty() {
        let extra = r.extra_stacks.iter().flat_map(|e| &e.frames);
        let have: Vec<&str> = r.frames.iter().chain(extra).map(|f| base(&f.function)).collect();
        o.frame_ok = Some(funcs.iter().any(|f| have.contains(&base(f))));
    }
    o.detail = format!(
        "expected {:?} ({k}), got {:?} ({}) with {} frames",
        exp.title,
        r.title,
        r.kind(),
        r.frames.len()
    );
    o
}

fn accepted() -> BTreeMap<(String, String), String> {
    let text = fs::read_to_string(ACCEPTED).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut p = l.splitn(3, ' ');
            Some(((p.next()?.to_string(), p.next()?.to_string()), p.next().unwrap_or("").to_string()))
        })
        .collect()
}

#[test]
fn syzkaller_corpus() {
    let mut names: Vec<_> =
        fs::read_dir(DIR).expect("corpus folder").map(|e| e.unwrap().file_name()).collect();
    names.sort();
    let mut misses: BTreeMap<(String, String), String> = BTreeMap::new();
    let (mut det, mut kinds, mut kind_n, mut frames, mut frame_n) = (0, 0, 0, 0, 0);
    let (mut titles, mut title_n) = (0, 0);
    for name in &names {
        let name = name.to_string_lossy().into_owned();
        let data = fs::read(Path::new(DIR).join(&name)).unwrap();
        let (exp, log) = split(&data);
        let o = check(&exp, &ReportExtractor::extract_all(log));
        det += o.detected_ok as u32;
        if !exp.title.is_empty() {
            title_n += 1;
            titles += o.title_same as u32;
        }
        if !o.detected_ok {
            misses.insert((name.clone(), "detection".into()), o.detail.clone());
        }
        if let Some(ok) = o.kind_ok {
            kind_n += 1;
            kinds += ok as u32;
            if !ok {
                misses.insert((name.clone(), "kind".into()), o.detail.clone());
            }
        }
        if let Some(ok) = o.frame_ok {
            frame_n += 1;
            frames += ok as u32;
            if !ok {
                misses.insert((name.clone(), "frame".into()), o.detail.clone());
            }
        }
    }
    let pct = |a: u32, b: u32| 100.0 * a as f64 / b.max(1) as f64;
    println!("syzkaller corpus: {} files", names.len());
    println!("detection: {det}/{} = {:.1}%", names.len(), pct(det, names.len() as u32));
    println!("kind:      {kinds}/{kind_n} = {:.1}%", pct(kinds, kind_n));
    println!("frame:     {frames}/{frame_n} = {:.1}%", pct(frames, frame_n));
    println!("same title as syzkaller (informative): {titles}/{title_n} = {:.1}%", pct(titles, title_n));
    let accepted = accepted();
    let mut unexplained = Vec::new();
    for (key, detail) in &misses {
        match accepted.get(key) {
            Some(reason) => println!("accepted miss {} {}: {detail} -- {reason}", key.0, key.1),
            None => unexplained.push(format!("{} {}: {detail}", key.0, key.1)),
        }
    }
    let stale: Vec<_> = accepted.keys().filter(|k| !misses.contains_key(*k)).collect();
    for u in &unexplained {
        println!("UNEXPLAINED MISS {u}");
    }
    assert!(unexplained.is_empty(), "{} misses not in the accepted list (see output)", unexplained.len());
    assert!(stale.is_empty(), "accepted misses that now pass (remove them): {stale:?}");
}
