//! No two modules import each other, directly or in a circle.
//!
//! Every `.rs` file of each crate's `src` (every crate of the workspace) is one node; a path
//! that starts with `crate::`, `super::` or `self::` (in a `use` or inline) is an edge from
//! the file it is written in to the file of the longest module prefix it names. `mod x;`
//! declarations are not edges (a parent declares its children), but a parent re-exporting
//! or using a child is. The check reads the source text only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A token of the little Rust subset the scanner needs.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Open,
    Close,
    Other(char),
}

/// Tokens of `src` without comments, string/char literals and attributes' contents mattering.
fn tokens(src: &str) -> Vec<Tok> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) && {
            // raw string r"..." or r#"..."#
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            b.get(j) == Some(&b'"')
        } {
            let mut j = i + 1;
            let mut hashes = 0;
            while b[j] == b'#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && b[j + 1..].iter().take(hashes).filter(|&&h| h == b'#').count() == hashes {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == b'\'' {
            // a char literal ('x', '\n', '\u{..}') or a lifetime ('a)
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c == b'b' && b.get(i + 1) == Some(&b'\'') {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(src[s..i].to_string()));
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push(Tok::Path);
            i += 2;
        } else if c == b'{' {
            out.push(Tok::Open);
            i += 1;
        } else if c == b'}' {
            out.push(Tok::Close);
            i += 1;
        } else if c.is_ascii_whitespace() || c.is_ascii_digit() {
            i += 1;
        } else {
            out.push(Tok::Other(c as char));
            i += 1;
        }
    }
    out
}

/// The module path of each source file of one crate, e.g. `["perf_data", "reader"]`.
fn module_files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(src).unwrap();
                let mut segs: Vec<String> =
                    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                let last = segs.pop().unwrap();
                let stem = last.trim_end_matches(".rs");
                if !(stem == "mod" || ((stem == "lib" || stem == "main") && segs.is_empty())) {
                    segs.push(stem.to_string());
                }
                files.insert(segs, p);
            }
        }
    }
    files
}

/// Paths (absolute module segments) that `file_mod`'s source names.
fn referenced_paths(file_mod: &[String], src: &str) -> Vec<Vec<String>> {
    let toks = tokens(src);
    let mut out = Vec::new();
    // Inline modules (`mod tests {`) change what `super` and `self` mean.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Open => {
                depth += 1;
                if let Some(m) = pending_mod.take() {
                    inline.push((m, depth));
                }
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Other(';') => pending_mod = None,
            Tok::Ident(k) if k == "mod" => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1) {
                    if toks.get(i + 2) == Some(&Tok::Open) {
                        pending_mod = Some(name.clone());
                    }
                    i += 1;
                }
            }
            Tok::Ident(k) if k == "use" => {
                let here: Vec<String> =
                    file_mod.iter().cloned().chain(inline.iter().map(|(m, _)| m.clone())).collect();
                i = use_tree(&toks, i + 1, &here, &[], &mut out);
                continue;
            }
            Tok::Ident(k) if (k == "crate" || k == "super" || k == "self") => {
                // An inline path; skip ones preceded by `::` (part of a longer path) and
                // `pub(crate)`/`pub(super)` visibilities.
                let prev_is_path = i > 0 && toks[i - 1] == Tok::Path;
                let is_vis = i > 0 && toks[i - 1] == Tok::Other('(');
                if !prev_is_path && !is_vis && toks.get(i + 1) == Some(&Tok::Path) {
                    let here: Vec<String> =
                        file_mod.iter().cloned().chain(inline.iter().map(|(m, _)| m.clone())).collect();
                    let mut segs = vec![k.clone()];
                    let mut j = i + 1;
                    while toks.get(j) == Some(&Tok::Path) {
                        if let Some(Tok::Ident(s)) = toks.get(j + 1) {
                            segs.push(s.clone());
                            j += 2;
                        } else {
                            break;
                        }
                    }
                    if let Some(abs) = absolute(&here, &segs) {
                        out.push(abs);
                    }
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Parses one use tree from `toks[i]`, with `prefix` already read; returns the index after it.
fn use_tree(
    toks: &[Tok],
    mut i: usize,
    here: &[String],
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        match toks.get(i) {
            Some(Tok::Path) => i += 1,
            Some(Tok::Ident(s)) if s == "as" => {
                i += 2;
            }
            Some(Tok::Ident(s)) => {
                segs.push(s.clone());
                i += 1;
            }
            Some(Tok::Other('*')) => i += 1,
            Some(Tok::Open) => {
                i += 1;
                loop {
                    match toks.get(i) {
                        Some(Tok::Close) => {
                            i += 1;
                            break;
                        }
                        Some(Tok::Other(',')) => i += 1,
                        None => return i,
                        _ => i = use_tree(toks, i, here, &segs, out),
                    }
                }
                return i;
            }
            _ => {
                // `,`, `}`, `;` end this tree.
                if let Some(abs) = absolute(here, &segs) {
                    out.push(abs);
                }
                if toks.get(i) == Some(&Tok::Other(';')) {
                    i += 1;
                }
                return i;
            }
        }
    }
}

/// `segs` made absolute from module `here`, or None for paths into other crates.
fn absolute(here: &[String], segs: &[String]) -> Option<Vec<String>> {
    let first = segs.first()?;
    let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &segs[1..]),
        "self" => (here.to_vec(), &segs[1..]),
        "super" => {
            let mut b = here.to_vec();
            let mut k = 0;
            while segs.get(k).is_some_and(|s| s == "super") {
                b.pop();
                k += 1;
            }
            (b, &segs[k..])
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The import graph of one crate, file to file.
fn graph(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = module_files(src);
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let set = edges.entry(m.clone()).or_default();
        for p in referenced_paths(m, &text) {
            // The file of the longest prefix that is a module file.
            let target = (0..=p.len()).rev().map(|n| p[..n].to_vec()).find(|pre| files.contains_key(pre));
            // A parent using its own children is how it is built (it declares them), not
            // an import: only the other direction counts.
            if let Some(t) = target
                && !t.starts_with(m)
            {
                set.insert(t);
            }
        }
    }
    edges
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct St<'a> {
        g: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        on: BTreeSet<&'a Vec<String>>,
        stack: Vec<&'a Vec<String>>,
        next: usize,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(st: &mut St<'a>, v: &'a Vec<String>) {
        st.index.insert(v, st.next);
        st.low.insert(v, st.next);
        st.next += 1;
        st.stack.push(v);
        st.on.insert(v);
        let g = st.g;
        for w in g.get(v).into_iter().flatten() {
            let Some((w, _)) = g.get_key_value(w) else {
                continue;
            };
            if !st.index.contains_key(w) {
                visit(st, w);
                let lw = st.low[w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if st.on.contains(w) {
                let iw = st.index[w];
                let lv = st.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if st.low[v] == st.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = st.stack.pop().unwrap();
                st.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                st.out.push(comp);
            }
        }
    }
    let mut st = St {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !st.index.contains_key(v) {
            visit(&mut st, v);
        }
    }
    st.out
}

fn name(m: &[String]) -> String {
    if m.is_empty() { "crate".to_string() } else { m.join("::") }
}

fn check(krate: &str) {
    let p = problems(krate);
    assert!(p.is_empty(), "{}", p.join("\n"));
}

/// What is wrong with `krate`'s imports: new circles, and circles of `KNOWN` that are gone.
fn problems(krate: &str) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(krate).join("src");
    let g = graph(&src);
    assert!(g.len() > 2, "{}: read too few modules", src.display()); // the smallest crate has 3
    let mut found = cycles(&g);
    // The same between sibling modules, each with its whole subtree: `report` using
    // `collapse` while `collapse::kernel_log` uses `report` is a circle of `collapse` and
    // `report` even though no single file pair closes it.
    let mut siblings: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, targets) in &g {
        for b in targets {
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common < a.len() && common < b.len() {
                siblings.entry(a[..=common].to_vec()).or_default().insert(b[..=common].to_vec());
                siblings.entry(b[..=common].to_vec()).or_default();
            }
        }
    }
    for c in cycles(&siblings) {
        if !found.contains(&c) {
            found.push(c);
        }
    }
    let g = {
        let mut all = g.clone();
        for (k, v) in siblings {
            all.entry(k).or_default().extend(v);
        }
        all
    };
    let known: BTreeSet<BTreeSet<String>> = KNOWN
        .iter()
        .filter(|(k, _)| *k == krate)
        .map(|(_, c)| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let mut new = Vec::new();
    let mut seen = BTreeSet::new();
    for c in &found {
        let members: BTreeSet<String> = c.iter().map(|m| name(m)).collect();
        if known.contains(&members) {
            seen.insert(members);
            continue;
        }
        let set: BTreeSet<&Vec<String>> = c.iter().collect();
        let edges: Vec<String> = c
            .iter()
            .flat_map(|m| {
                g[m].iter().filter(|t| set.contains(t)).map(move |t| format!("{} -> {}", name(m), name(t)))
            })
            .collect();
        new.push(format!("  circle of {}:\n    {}", c.len(), edges.join("\n    ")));
    }
    let mut out = Vec::new();
    if !new.is_empty() {
        out.push(format!("{krate}: modules that import each other:\n{}", new.join("\n")));
    }
    let gone: Vec<&BTreeSet<String>> = known.difference(&seen).collect();
    if !gone.is_empty() {
        out.push(format!("{krate}: these circles are gone, take them off KNOWN: {gone:?}"));
    }
    out
}

/// Circles that are still to be untangled (crate, members). The list only shrinks: a new
/// circle fails the test, and so does an entry here that no longer is one.
const KNOWN: &[(&str, &[&str])] = &[];

#[test]
fn no_import_cycles_in_the_library() {
    check("kflame");
}

#[test]
fn no_import_cycles_in_the_cli() {
    check("kflame-cli");
}

#[test]
fn no_import_cycles_in_the_other_crates() {
    let p: Vec<String> =
        CRATES.iter().filter(|k| !["kflame", "kflame-cli"].contains(k)).flat_map(|k| problems(k)).collect();
    assert!(p.is_empty(), "{}", p.join("\n"));
}

/// Every crate of the workspace is checked by one of the tests above.
#[test]
fn every_crate_is_checked() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: Vec<String> = std::fs::read_dir(&crates)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, CRATES, "a crate without an import-cycle check");
}

/// The crates of the workspace, sorted: each is checked by one of the tests above.
const CRATES: [&str; 11] = [
    "kflame",
    "kflame-analyze",
    "kflame-bpf",
    "kflame-cli",
    "kflame-clickhouse",
    "kflame-fixes",
    "kflame-mcp",
    "kflame-serve",
    "kflame-store",
    "kflame-store-api",
    "kflame-watch",
];

#[test]
fn the_scanner_sees_use_trees_inline_paths_and_test_modules() {
    let here = vec!["a".to_string(), "b".to_string()];
    let src = r#"
        use crate::x::{y::Z, w};
        use super::c as d;
        // use crate::commented::Out;
        fn f() { let s = "crate::in_string::X"; crate::inline::g(); }
        pub(crate) fn h() {}
        #[cfg(test)]
        mod tests { use super::*; use super::super::e; }
    "#;
    let got: BTreeSet<String> = referenced_paths(&here, src).iter().map(|p| p.join("::")).collect();
    let want: BTreeSet<String> =
        ["x::y::Z", "x::w", "a::c", "inline::g", "a::b", "a::e"].iter().map(|s| s.to_string()).collect();
    assert_eq!(got, want);
}
