//! Function definitions and calls of one C source file, found by a light scanner (no
//! preprocessor, no parser): comments and literals are blanked, braces counted, and a `{`
//! at file level closes a header that names a function when it ends with a parameter list.
//!
//! Recognized: plain, `static`, `inline` and attribute-laden definitions (kernel style or
//! not), `SYSCALL_DEFINEn(name, ...)` and `COMPAT_SYSCALL_DEFINEn` (indexed under every
//! symbol they expand to: `__x64_sys_name`, `__se_sys_name`, `__do_sys_name`...), other
//! definer macros followed by a body (`BPF_CALL_2(bpf_map_lookup_elem, ...)`,
//! `DEFINE_IDTENTRY(exc_int3)`: indexed under their first argument), and function-like
//! `#define`s. Inside each body, identifiers followed by `(` are its calls.

/// What defined a name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DefKind {
    /// An ordinary function definition.
    Function,
    /// A `static` function.
    Static,
    /// A `static inline` (or `inline`) function.
    Inline,
    /// `SYSCALL_DEFINEn` / `COMPAT_SYSCALL_DEFINEn`.
    Syscall,
    /// A body defined through another macro (`BPF_CALL_n`, `DEFINE_IDTENTRY`...).
    Macro,
    /// A function-like `#define`.
    Define,
}

impl DefKind {
    /// The stable name used in JSON (`static_inline` is `inline`).
    pub fn name(self) -> &'static str {
        match self {
            DefKind::Function => "function",
            DefKind::Static => "static",
            DefKind::Inline => "inline",
            DefKind::Syscall => "syscall",
            DefKind::Macro => "macro_defined",
            DefKind::Define => "define",
        }
    }

    pub(crate) fn from_u8(v: u8) -> Option<DefKind> {
        Some(match v {
            0 => DefKind::Function,
            1 => DefKind::Static,
            2 => DefKind::Inline,
            3 => DefKind::Syscall,
            4 => DefKind::Macro,
            5 => DefKind::Define,
            _ => return None,
        })
    }

    pub(crate) fn as_u8(self) -> u8 {
        self as u8
    }
}

/// One definition found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Def {
    /// The names it defines (several for `SYSCALL_DEFINEn`).
    pub names: Vec<String>,
    /// 1-based first line (where its header starts).
    pub start: u32,
    /// 1-based last line (its closing brace, or the last line of a `#define`).
    pub end: u32,
    /// How it is defined.
    pub kind: DefKind,
    /// Functions called in its body, each once, in order of first call.
    pub calls: Vec<String>,
}

const NOT_CALLS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "typeof",
    "__typeof__",
    "alignof",
    "_Alignof",
    "__alignof__",
    "defined",
    "do",
    "case",
    "else",
    "goto",
    "__attribute__",
    "asm",
    "__asm__",
    "volatile",
    "__volatile__",
    "offsetof",
    "__builtin_expect",
    "likely",
    "unlikely",
    "_Static_assert",
    "static_assert",
    "__must_check",
    "__section",
];

/// Annotations written between a parameter list and the body, or before the name, that
/// take arguments and must not be taken for the function (`__acquires(x)`).
const ANNOTATIONS: &[&str] = &[
    "__attribute__",
    "__acquires",
    "__releases",
    "__must_hold",
    "__printf",
    "__scanf",
    "__section",
    "__aligned",
    "__alloc_size",
    "__malloc",
    "__diagnose_as",
    "__no_sanitize_or_inline",
    "__counted_by",
    "__cond_acquires",
    "__cond_releases",
    "__releases_shared",
    "__acquires_shared",
    "__nocfi",
    "__weak",
    "__visible",
    "__init",
    "__exit",
    "__ref",
    "__cold",
    "__always_inline",
    "noinline",
    "__noinline",
    "asmlinkage",
    "ASM_FUNC",
    "EXPORT_SYMBOL",
    "__SYSCALL_DEFINEx",
];

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The text with comments, string and character literals replaced by spaces (newlines
/// kept, so that offsets and line numbers are unchanged), and preprocessor lines marked.
fn blank(src: &[u8]) -> Vec<u8> {
    let mut out = src.to_vec();
    let mut i = 0;
    let n = src.len();
    while i < n {
        match src[i] {
            b'/' if i + 1 < n && src[i + 1] == b'*' => {
                let start = i;
                i += 2;
                while i + 1 < n && !(src[i] == b'*' && src[i + 1] == b'/') {
                    i += 1;
                }
                i = (i + 2).min(n);
                for b in &mut out[start..i] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
            }
            b'/' if i + 1 < n && src[i + 1] == b'/' => {
                while i < n && src[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < n && src[i] != q && src[i] != b'\n' {
                    if src[i] == b'\\' && i + 1 < n {
                        out[i] = b' ';
                        i += 1;
                    }
                    out[i] = b' ';
                    i += 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// The definitions of the C source `src`.
pub fn scan(src: &[u8]) -> Vec<Def> {
    let text = blank(src);
    let n = text.len();
    let mut defs: Vec<Def> = Vec::new();
    let mut line: u32 = 1;
    let mut depth: u32 = 0;
    let mut paren: u32 = 0;
    // Start of the current file-level header (after the last `;`, `}` or directive).
    let mut header_start = 0usize;
    let mut header_line = 1u32;
    let mut header_seen_text = false;
    // The definition whose body is open, and where its calls go.
    let mut open: Option<Def> = None;
    let mut at_line_start = true;
    let mut i = 0;
    while i < n {
        let b = text[i];
        if b == b'\n' {
            line += 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        if at_line_start && b == b'#' {
            // A directive, continued over `\` newlines.
            let start = i;
            let start_line = line;
            while i < n {
                if text[i] == b'\n' {
                    if i > 0 && text[i - 1] == b'\\' {
                        line += 1;
                        i += 1;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            if depth == 0 {
                if let Some(d) = define(&text[start..i], start_line, line) {
                    defs.push(d);
                }
                header_start = i;
                header_seen_text = false;
            }
            continue;
        }
        if !b.is_ascii_whitespace() {
            at_line_start = false;
            if depth == 0 && !header_seen_text {
                header_seen_text = true;
                header_start = i;
                header_line = line;
            }
        }
        match b {
            b'{' => {
                if depth == 0 && paren == 0 {
                    open = header(&text[header_start..i], header_line);
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some(mut d) = open.take() {
                        d.end = line;
                        defs.push(d);
                    }
                    header_seen_text = false;
                    header_start = i + 1;
                }
            }
            b'(' => paren += 1,
            b')' => paren = paren.saturating_sub(1),
            b';' if depth == 0 => {
                header_seen_text = false;
                header_start = i + 1;
                paren = 0;
            }
            _ if is_ident_start(b) && (i == 0 || !is_ident(text[i - 1])) => {
                let s = i;
                while i < n && is_ident(text[i]) {
                    i += 1;
                }
                if let Some(d) = open.as_mut().filter(|_| depth > 0) {
                    let mut j = i;
                    while j < n && (text[j] == b' ' || text[j] == b'\t') {
                        j += 1;
                    }
                    if j < n && text[j] == b'(' {
                        let name = &text[s..i];
                        if let Ok(name) = std::str::from_utf8(name)
                            && !NOT_CALLS.contains(&name)
                            && !d.calls.iter().any(|c| c == name)
                        {
                            d.calls.push(name.to_string());
                        }
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // A body never closed (a cut file): what was read of it still counts.
    if let Some(mut d) = open.take() {
        d.end = line;
        defs.push(d);
    }
    defs
}

/// Identifiers and top-level parenthesized groups of a header.
#[derive(Debug)]
enum Tok<'a> {
    Ident(&'a str),
    Group(&'a [u8]),
    Other(u8),
}

fn tokens(h: &[u8]) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < h.len() {
        let b = h[i];
        if b.is_ascii_whitespace() {
            i += 1;
        } else if is_ident_start(b) {
            let s = i;
            while i < h.len() && is_ident(h[i]) {
                i += 1;
            }
            out.push(Tok::Ident(std::str::from_utf8(&h[s..i]).unwrap_or("")));
        } else if b == b'(' {
            let s = i;
            let mut d = 0;
            while i < h.len() {
                match h[i] {
                    b'(' => d += 1,
                    b')' => {
                        d -= 1;
                        if d == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            out.push(Tok::Group(&h[s + 1..i.min(h.len())]));
            i += 1;
        } else {
            out.push(Tok::Other(b));
            i += 1;
        }
    }
    out
}

/// The definition a file-level header before `{` opens, if it is a function's.
fn header(h: &[u8], line: u32) -> Option<Def> {
    let toks = tokens(h);
    if toks.iter().any(|t| matches!(t, Tok::Other(b'=' | b'[' | b']' | b'"' | b'}'))) {
        return None;
    }
    if toks.is_empty() {
        return None;
    }
    // `NAME(args)` alone: a definer macro (`SYSCALL_DEFINE3(read, ...)`, `BPF_CALL_2(f, ...)`)
    // or an old-style/unannotated function.
    let idents: Vec<(usize, &str)> = toks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| if let Tok::Ident(s) = t { Some((i, *s)) } else { None })
        .collect();
    // The function: the last identifier directly followed by a group, not an annotation,
    // preceded by a type (or a definer macro).
    let mut name_at = None;
    for (i, t) in toks.iter().enumerate() {
        if let (Tok::Ident(s), Some(Tok::Group(_))) = (t, toks.get(i + 1))
            && !ANNOTATIONS.contains(s)
            && !s.starts_with("__attribute")
        {
            name_at = Some(i);
            break;
        }
    }
    let at = name_at?;
    let Tok::Ident(name) = toks[at] else { return None };
    let Tok::Group(args) = toks[at + 1] else { return None };
    // After the parameter list: only annotations (with their groups) or nothing.
    let mut k = at + 2;
    while k < toks.len() {
        match &toks[k] {
            Tok::Ident(s) if ANNOTATIONS.contains(s) || s.starts_with("__") || is_upper(s) => k += 1,
            Tok::Group(_) => k += 1,
            _ => return None,
        }
    }
    if matches!(name, "struct" | "union" | "enum" | "if" | "while" | "for" | "switch") {
        return None;
    }
    let before: Vec<&str> = idents.iter().filter(|(i, _)| *i < at).map(|(_, s)| *s).collect();
    let first_arg = || {
        let a = std::str::from_utf8(args).ok()?;
        let f = a.split(',').next()?.trim();
        (!f.is_empty() && f.bytes().all(is_ident) && f.bytes().next().is_some_and(is_ident_start))
            .then(|| f.to_string())
    };
    if let Some(n) = name.strip_prefix("SYSCALL_DEFINE").filter(|n| n.bytes().all(|b| b.is_ascii_digit())) {
        let _ = n;
        let f = first_arg()?;
        return Some(syscall(&f, false, line));
    }
    if let Some(n) =
        name.strip_prefix("COMPAT_SYSCALL_DEFINE").filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
    {
        let _ = n;
        let f = first_arg()?;
        return Some(syscall(&f, true, line));
    }
    if before.is_empty() {
        if is_upper(name) {
            // A definer macro: `BPF_CALL_2(bpf_map_lookup_elem, ...)`.
            let f = first_arg()?;
            return Some(Def {
                names: vec![f],
                start: line,
                end: line,
                kind: DefKind::Macro,
                calls: Vec::new(),
            });
        }
        // No return type: not C we can read as a function (a macro's body, K&R).
        return None;
    }
    if before.iter().any(|s| matches!(*s, "struct" | "union" | "enum"))
        && before.len() == 2
        && before[0] != "static"
    {
        // `struct foo bar(...)` is a function; `struct foo {` never reaches here (no group).
    }
    let kind = if before.iter().any(|s| s.contains("inline")) {
        DefKind::Inline
    } else if before.contains(&"static") {
        DefKind::Static
    } else {
        DefKind::Function
    };
    Some(Def { names: vec![name.to_string()], start: line, end: line, kind, calls: Vec::new() })
}

fn is_upper(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_uppercase())
        && s.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The symbols `SYSCALL_DEFINEn(name, ...)` expands to on the architectures kflame reads.
fn syscall(name: &str, compat: bool, line: u32) -> Def {
    let sys = if compat { format!("compat_sys_{name}") } else { format!("sys_{name}") };
    let names = vec![
        format!("__x64_{sys}"),
        format!("__ia32_{sys}"),
        format!("__arm64_{sys}"),
        format!("__riscv_{sys}"),
        format!("__s390x_{sys}"),
        format!("__se_{sys}"),
        format!("__do_{sys}"),
        sys,
    ];
    Def { names, start: line, end: line, kind: DefKind::Syscall, calls: Vec::new() }
}

/// A function-like `#define NAME(` directive.
fn define(d: &[u8], start: u32, end: u32) -> Option<Def> {
    let rest = d.strip_prefix(b"#")?;
    let rest = trim_start(rest);
    let rest = rest.strip_prefix(b"define")?;
    if rest.first().is_some_and(|b| !b.is_ascii_whitespace()) {
        return None;
    }
    let rest = trim_start(rest);
    let len = rest.iter().take_while(|b| is_ident(**b)).count();
    if len == 0 || rest.get(len) != Some(&b'(') {
        return None;
    }
    let name = std::str::from_utf8(&rest[..len]).ok()?;
    Some(Def { names: vec![name.to_string()], start, end, kind: DefKind::Define, calls: Vec::new() })
}

fn trim_start(s: &[u8]) -> &[u8] {
    let k = s.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &s[k..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<(Vec<String>, u32, u32, DefKind)> {
        scan(src.as_bytes()).into_iter().map(|d| (d.names, d.start, d.end, d.kind)).collect()
    }

    #[test]
    fn kernel_style_definitions() {
        let src = "\
/* a comment { with braces } */
static inline int foo(struct x *a)
{
\treturn bar(a) + baz (1);
}

int __init qux(void) __acquires(lock)
{
\tif (x) { y(); }
\treturn 0;
}
static struct ops o = {
\t.f = foo,
};
#define MAX(a, b) ((a) > (b) ? \\
\t(a) : (b))
SYSCALL_DEFINE3(read, unsigned int, fd, char __user *, buf, size_t, count)
{
\treturn ksys_read(fd, buf, count);
}
BPF_CALL_2(bpf_map_lookup_elem, struct bpf_map *, map, void *, key)
{
\treturn 0;
}
";
        let d = names(src);
        assert_eq!(d[0], (vec!["foo".to_string()], 2, 5, DefKind::Inline));
        assert_eq!(d[1], (vec!["qux".to_string()], 7, 11, DefKind::Function));
        assert_eq!(d[2], (vec!["MAX".to_string()], 15, 16, DefKind::Define));
        assert_eq!(d[3].3, DefKind::Syscall);
        assert!(d[3].0.contains(&"__x64_sys_read".to_string()));
        assert_eq!((d[3].1, d[3].2), (17, 20));
        assert_eq!(d[4], (vec!["bpf_map_lookup_elem".to_string()], 21, 24, DefKind::Macro));
        assert_eq!(d.len(), 5);
        let calls = &scan(src.as_bytes())[0].calls;
        assert_eq!(calls, &["bar", "baz"]);
    }
}
