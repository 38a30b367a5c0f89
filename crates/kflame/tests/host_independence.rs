//! The suite must pass on any machine of its kind, whatever kernel it runs: a fixture test
//! that reads the running system (its kallsyms, its vDSO, `~/.debug`, `/proc/*/maps`, the
//! kernel version) passes or fails by the machine it happens to run on. This test reads the
//! workspace's test code and fails on every place that reaches for host state outside a
//! live test, and on every perf.data fixture read that leaves the reader's host lookups on.
//!
//! Live tests say so: the test function (or the helper only live tests call) is named
//! `live_*`, or the whole file opens with `//! Live tests`, or the line carries a
//! `// live:` comment saying why it may.

use std::path::{Path, PathBuf};

/// Paths of the running machine's state...
const HOST_PATHS: &[&str] = &["\"/proc", "\"/sys/", "\"/tmp/perf-", "\"/lib/modules", "\"/boot", "/.debug"];
/// ...when the same line reads or probes them (a path that is only data, such as a DSO
/// name given to a parser, is fine).
const ACCESS: &[&str] = &[
    "read",
    "open(",
    "Path::new(",
    "PathBuf::from(",
    "format!(",
    "is_dir(",
    "is_file(",
    "exists(",
    "metadata(",
];
/// Reaching for host state whatever the line does.
const ALWAYS: &[&str] = &["\"HOME\"", "uname", "own_vdso(", "Host::Running"];

/// The pattern by which `code` reads the running machine, if it does.
fn host_access(code: &str) -> Option<&'static str> {
    if let Some(p) = ALWAYS.iter().find(|p| code.contains(*p)) {
        return Some(p);
    }
    let p = HOST_PATHS.iter().find(|p| code.contains(*p))?;
    ACCESS.iter().any(|a| code.contains(a)).then_some(p)
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "data" && n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Test code of the workspace: integration tests whole, and library sources from their
/// `#[cfg(test)]` line on (or whole, for `tests.rs` modules).
fn test_sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(workspace().join("crates")).unwrap().flatten() {
        rust_files(&krate.path().join("tests"), &mut files);
        rust_files(&krate.path().join("src"), &mut files);
    }
    assert!(files.len() > 50, "the workspace's sources were not found: {files:?}");
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let in_src = path.components().any(|c| c.as_os_str() == "src");
        let test_part = if !in_src || path.file_name().is_some_and(|n| n == "tests.rs") {
            text
        } else if let Some(at) = text.find("#[cfg(test)]") {
            // Keep line numbers: blank out what comes before the test module.
            let skipped = text[..at].lines().count();
            "\n".repeat(skipped.saturating_sub(1)) + &text[at..]
        } else {
            continue;
        };
        out.push((path, test_part));
    }
    out
}

/// The innermost `fn` each line belongs to (by indentation: good enough for rustfmt'd code).
fn enclosing_fns(text: &str) -> Vec<String> {
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        if !t.is_empty() && !t.starts_with("//") && !t.starts_with('}') && !t.starts_with(')') {
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
        }
        let decl = t.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
        if let Some(rest) = decl.strip_prefix("fn ") {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            stack.push((indent, name));
        }
        out.push(stack.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join("::"));
    }
    out
}

fn is_live(path: &Path, text: &str, fn_path: &str, line: &str) -> bool {
    text.starts_with("//! Live tests")
        || fn_path.split("::").any(|f| f.starts_with("live_"))
        || line.contains("// live:")
        || path.ends_with("tests/host_independence.rs")
}

#[test]
fn fixture_tests_read_no_host_state() {
    let mut bad = Vec::new();
    for (path, text) in test_sources() {
        let fns = enclosing_fns(&text);
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if let Some(p) = host_access(code)
                && !is_live(&path, &text, &fns[i], line)
            {
                bad.push(format!("{}:{}: `{p}` outside a live test: {}", path.display(), i + 1, code));
            }
        }
    }
    assert!(bad.is_empty(), "tests that read the running machine without saying so:\n{}", bad.join("\n"));
}

/// Every perf.data reader options literal in the tests turns host lookups off (or builds on
/// a helper that does), and every CLI run on a `.data` fixture passes `--no-host-lookups`
/// (or says with a `// host-free:` comment why the file is not read as perf.data).
#[test]
fn perf_data_fixtures_are_read_with_host_lookups_off() {
    let mut bad = Vec::new();
    let mut literals = 0;
    for (path, text) in test_sources() {
        if text.contains("perf_data::") && !path.ends_with("tests/host_independence.rs") {
            for (at, _) in text.match_indices("..Options::default()") {
                let start = text[..at].rfind("Options {").unwrap_or(0);
                literals += 1;
                if !text[start..at].contains("host:") {
                    let line = text[..at].lines().count();
                    bad.push(format!("{}:{line}: perf_data::Options without `host:`", path.display()));
                }
            }
        }
        if path.components().any(|c| c.as_os_str() == "kflame-cli") && !text.starts_with("//! Live tests") {
            let fns = enclosing_fns(&text);
            let mut by_fn: std::collections::BTreeMap<&str, (usize, String)> = Default::default();
            for (i, line) in text.lines().enumerate() {
                let e = by_fn.entry(fns[i].as_str()).or_insert((i + 1, String::new()));
                e.1.push_str(line);
                e.1.push('\n');
            }
            for (f, (line, body)) in by_fn {
                let reads_data = body.contains(".data\"") || body.contains(".data\")");
                if !f.is_empty()
                    && reads_data
                    && body.contains("\"collapse\"")
                    && !body.contains("--no-host-lookups")
                    && !body.contains("// host-free:")
                {
                    bad.push(format!(
                        "{}:{line}: `{f}` collapses a .data fixture with host lookups on",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(literals >= 3, "no perf_data::Options literal found: the check is looking in the wrong place");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
