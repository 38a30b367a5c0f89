//! One commit as `git log -p` prints it: message, touched files, and the functions its diff
//! names (in hunk headers, in function definitions shown as context, and called or defined
//! on its changed lines).

use crate::trailer::{FixesTrailer, parse_fixes};

/// What the index keeps of one commit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Commit {
    /// Full hash.
    pub(crate) id: String,
    /// Full hashes of its parents.
    pub(crate) parents: Vec<String>,
    /// Author date, ISO 8601 (`2023-11-08T11:23:34-08:00`).
    pub(crate) date: String,
    pub(crate) subject: String,
    /// The message after the subject line.
    pub(crate) body: String,
    pub(crate) fixes: Vec<FixesTrailer>,
    /// Paths touched (new name of a rename, and the old one).
    pub(crate) files: Vec<String>,
    /// Functions named by hunk headers (`@@ -1,3 +1,4 @@ int f(...)`) and by function
    /// definitions among the hunks' context lines; one entry per hunk or line that names one.
    pub(crate) hunk_fns: Vec<String>,
    /// Identifiers followed by `(` on `+`/`-` lines: the functions (and function-like macros)
    /// the change calls or defines; one entry per occurrence.
    pub(crate) line_fns: Vec<String>,
}

/// The separator that starts each commit in the `git log` stream (see [`crate::git`]).
pub(crate) const RECORD_START: u8 = 0x1e;

/// Parses one record of `git log --format=%x1e%H %P%n%aI%n%B%x1d -p` (the text after the
/// `0x1e`; the parents may be absent). `None` when the record does not start with a commit
/// hash.
pub(crate) fn parse_record(rec: &str) -> Option<Commit> {
    let (header, diff) = match rec.split_once('\u{1d}') {
        Some((h, d)) => (h, d),
        None => (rec, ""),
    };
    let mut lines = header.splitn(3, '\n');
    let mut ids = lines.next()?.split_ascii_whitespace();
    let id = ids.next()?;
    let hash = |h: &str| h.len() >= 40 && h.bytes().all(|b| b.is_ascii_hexdigit());
    if !hash(id) {
        return None;
    }
    let parents: Vec<String> = ids.filter(|p| hash(p)).map(str::to_ascii_lowercase).collect();
    let date = lines.next().unwrap_or("").trim().to_string();
    let message = lines.next().unwrap_or("");
    let (subject, body) = match message.split_once('\n') {
        Some((s, b)) => (s.trim().to_string(), b.trim().to_string()),
        None => (message.trim().to_string(), String::new()),
    };
    let mut c = Commit {
        id: id.to_ascii_lowercase(),
        parents,
        date,
        fixes: parse_fixes(message),
        subject,
        body,
        ..Commit::default()
    };
    scan_diff(diff, &mut c);
    Some(c)
}

fn scan_diff(diff: &str, c: &mut Commit) {
    let mut in_hunk = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            in_hunk = false;
            // `a/path b/path`; paths with spaces are rare in a kernel tree, and git quotes
            // unusual ones: the `+++`/`---` lines below give the exact names.
            let _ = rest;
            continue;
        }
        if !in_hunk {
            if let Some(p) = line.strip_prefix("+++ ").or_else(|| line.strip_prefix("--- ")) {
                push_path(&mut c.files, p);
            } else if let Some(p) = line
                .strip_prefix("rename from ")
                .or_else(|| line.strip_prefix("rename to "))
                .or_else(|| line.strip_prefix("copy from "))
                .or_else(|| line.strip_prefix("copy to "))
            {
                push_unique(&mut c.files, unquote(p));
            }
        }
        if let Some(rest) = line.strip_prefix("@@") {
            in_hunk = true;
            // `@@ -a,b +c,d @@ context`: the function git found above the hunk.
            if let Some(end) = rest.find("@@")
                && let Some(f) = defined_function(&rest[end + 2..])
            {
                c.hunk_fns.push(f.to_string());
            }
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.as_bytes().first() {
            Some(b'+') | Some(b'-') => {
                let text = &line[1..];
                if let Some(f) = definition_line(text) {
                    c.hunk_fns.push(f.to_string());
                }
                called_functions(text, &mut c.line_fns);
            }
            Some(b' ') => {
                if let Some(f) = definition_line(&line[1..]) {
                    c.hunk_fns.push(f.to_string());
                }
            }
            _ => {}
        }
    }
}

fn push_path(files: &mut Vec<String>, p: &str) {
    let p = unquote(p.trim_end());
    if p == "/dev/null" {
        return;
    }
    let p = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")).unwrap_or(p);
    push_unique(files, p);
}

fn push_unique(files: &mut Vec<String>, p: &str) {
    if !p.is_empty() && !files.iter().any(|f| f == p) {
        files.push(p.to_string());
    }
}

/// Git quotes paths with unusual characters (`"a/t\303\251st"`); the index keeps them as
/// written, without the quotes.
fn unquote(p: &str) -> &str {
    p.strip_prefix('"').and_then(|p| p.strip_suffix('"')).unwrap_or(p)
}

/// The function a hunk header's context names: the identifier right before its first `(`
/// (`static int bpf_object__load(struct bpf_object *obj)` → `bpf_object__load`).
pub fn defined_function(header: &str) -> Option<&str> {
    let open = header.find('(')?;
    let before = header[..open].trim_end();
    let start = before
        .char_indices()
        .rev()
        .take_while(|&(_, ch)| ch.is_ascii_alphanumeric() || ch == '_')
        .last()
        .map(|(i, _)| i)?;
    let name = &before[start..];
    (is_identifier(name) && !is_keyword(name)).then_some(name)
}

/// A line that starts a function definition at column 0 (`int f(void)`,
/// `static void *g(int x)`, `SEC("x") int h(...)` is left out): its name.
fn definition_line(text: &str) -> Option<&str> {
    let first = text.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    // A statement or declaration ending the line (`int x = f(a);`) is not a definition.
    let t = text.trim_end();
    if t.ends_with(';') || t.contains('=') || t.starts_with("return") {
        return None;
    }
    defined_function(text)
}

/// Identifiers followed by `(` on a changed line, outside string literals and comments.
fn called_functions(text: &str, out: &mut Vec<String>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let ch = b[i];
        if ch == b'"' || ch == b'\'' {
            // Skip the literal.
            i += 1;
            while i < b.len() && b[i] != ch {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if ch == b'/' && b.get(i + 1) == Some(&b'/') {
            return;
        }
        if ch.is_ascii_alphabetic() || ch == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let name = &text[start..i];
            let mut j = i;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if b.get(j) == Some(&b'(') && name.len() > 1 && !is_keyword(name) {
                out.push(name.to_string());
            }
            continue;
        }
        if ch.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "if" | "for"
            | "while"
            | "switch"
            | "return"
            | "sizeof"
            | "typeof"
            | "__typeof__"
            | "alignof"
            | "_Alignof"
            | "defined"
            | "case"
            | "do"
            | "else"
            | "goto"
            | "asm"
            | "__asm__"
            | "__attribute__"
            | "offsetof"
            | "void"
            | "int"
            | "char"
            | "long"
            | "unsigned"
            | "signed"
            | "short"
            | "const"
            | "static"
            | "struct"
            | "union"
            | "enum"
            | "inline"
            | "volatile"
    )
}

/// Lower-case word tokens of free text: identifiers stay whole (`bpf_object__load`),
/// everything else that is not a letter, digit or `_` separates.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && w.len() < 80)
        .map(str::to_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &str = "0123456789abcdef0123456789abcdef01234567\n2023-11-08T11:23:34-08:00\n\
libbpf: Fix leak in bpf_object__load\n\nThe body.\n\nFixes: abcdef012345 (\"libbpf: Add x\")\n\u{1d}\n\n\
diff --git a/src/libbpf.c b/src/libbpf.c\nindex 1..2 100644\n--- a/src/libbpf.c\n+++ b/src/libbpf.c\n\
@@ -10,7 +10,8 @@ static int bpf_object__load(struct bpf_object *obj)\n \tint err;\n-\terr = load(obj, \"x(\");\n\
+\terr = bpf_object__load_progs(obj); // call(\n+\tif (err)\n \n int bpf_other(void)\n {\n";

    #[test]
    fn parses_a_record() {
        let c = parse_record(REC).unwrap();
        assert_eq!(c.subject, "libbpf: Fix leak in bpf_object__load");
        assert_eq!(c.date, "2023-11-08T11:23:34-08:00");
        assert_eq!(c.fixes.len(), 1);
        assert_eq!(c.files, vec!["src/libbpf.c"]);
        assert_eq!(c.hunk_fns, vec!["bpf_object__load", "bpf_other"]);
        assert_eq!(c.line_fns, vec!["load", "bpf_object__load_progs"]);
    }

    #[test]
    fn hunk_header_names() {
        assert_eq!(defined_function(" int f(void)"), Some("f"));
        assert_eq!(defined_function(" LIBBPF_API int bpf_x__y (int a)"), Some("bpf_x__y"));
        assert_eq!(defined_function(" struct bpf_object {"), None);
        assert_eq!(defined_function(" if (x)"), None);
        assert_eq!(defined_function("("), None);
        assert!(parse_record("not a hash\n").is_none());
    }
}
