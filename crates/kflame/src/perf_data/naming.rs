//! Frame names exactly as `stackcollapse-perf.pl` derives them from a `perf script` frame
//! line `PC SYMBOL+0xOFF (DSO)`.
//!
//! The reader does not print text, but it builds the same `SYMBOL+0xOFF (DSO)` string perf
//! would print and applies the same rules to it, including their quirks, so that reading a
//! perf.data file and collapsing its `perf script` output give the same frames:
//! the DSO is the last ` (…)` group without spaces; `+0x…` offsets are dropped; frames
//! starting with `(` are skipped; `a->b` inline chains become `a;b_[i]`; `[unknown]` becomes
//! `[dso-basename]` (or `[unknown]`); `;` becomes `:`, anything from the first `(` (other
//! than `(anonymous namespace)`) is cut unless the name looks like a Go method, quotes are
//! removed; `_[k]` / `_[j]` annotations on request.

/// Which optional rules apply.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NameRules {
    /// Append `_[k]` to kernel frames.
    pub(crate) annotate_kernel: bool,
    /// Append `_[j]` to JIT frames (`/tmp/perf-PID.map`).
    pub(crate) annotate_jit: bool,
    /// Write unknown frames as `[dso <pc>]`.
    pub(crate) include_addrs: bool,
    /// Show DWARF inline frames of unwound user frames (perf's default; `--no-inline`).
    pub(crate) inline: bool,
    /// Append `_[i]` to inline frames.
    pub(crate) mark_inlined: bool,
}

/// Appends the folded frame(s) for one perf frame to `out` (several joined by `;` for an
/// inline chain; nothing for a skipped frame). `text` is `SYMBOL+0xOFF (DSO)` or
/// `[unknown] (DSO)`; `pc` is the printed address; `java` is true when the process is `java`.
pub(crate) fn fold_frame(out: &mut Vec<u8>, text: &str, pc: u64, java: bool, rules: NameRules) {
    let Some((rawfunc, module)) = split_module(text) else {
        return;
    };
    let rawfunc = strip_offset(rawfunc);
    if rawfunc.starts_with('(') {
        return;
    }
    let mut first = true;
    for part in split_inline(rawfunc) {
        let mut func = unknown_to_module(part, module, pc, rules.include_addrs);
        func = tidy_generic(&func);
        if java
            && func.contains('/')
            && let Some(rest) = func.strip_prefix('L')
        {
            func = rest.to_string();
        }
        if !first {
            if !func.contains("_[i]") {
                func.push_str("_[i]");
            }
        } else if rules.annotate_kernel && is_kernel_module(module) {
            func.push_str("_[k]");
        } else if rules.annotate_jit && is_jit_map(module) {
            func.push_str("_[j]");
        }
        if !first {
            out.push(b';');
        }
        out.extend_from_slice(func.as_bytes());
        first = false;
    }
}

/// Perl's `(.+) \((\S*)\)` on the text after the address: the longest prefix followed by
/// ` (` and a space-free run that contains a `)`; the module is that run up to its last `)`.
fn split_module(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut p = bytes.len();
    while let Some(i) = text[..p].rfind(" (") {
        p = i;
        if i == 0 {
            break;
        }
        let run_start = i + 2;
        let run_end = bytes[run_start..]
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .map_or(bytes.len(), |n| run_start + n);
        if let Some(close) = text[run_start..run_end].rfind(')') {
            return Some((&text[..i], &text[run_start..run_start + close]));
        }
    }
    None
}

/// Drops a trailing `+0x[0-9a-f]+`.
fn strip_offset(func: &str) -> &str {
    if let Some(i) = func.rfind("+0x") {
        let hex = &func[i + 3..];
        if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return &func[..i];
        }
    }
    func
}

/// Perl's `split /->/`: trailing empty fields are dropped.
fn split_inline(func: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = func.split("->").collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

fn unknown_to_module(func: &str, module: &str, pc: u64, addrs: bool) -> String {
    if func != "[unknown]" {
        return func.to_string();
    }
    let name = if module != "[unknown]" { module.rsplit('/').next().unwrap_or(module) } else { "unknown" };
    if addrs { format!("[{name} <{pc:x}>]") } else { format!("[{name}]") }
}

fn tidy_generic(func: &str) -> String {
    let mut f = func.replace(';', ":");
    if !looks_like_go_method(&f)
        && let Some(cut) = first_noise_paren(&f)
    {
        f.truncate(cut);
    }
    f.retain(|c| c != '"' && c != '\'');
    f
}

/// `m/\.\(.*\)\./`: a `.(` followed later by `).`.
fn looks_like_go_method(f: &str) -> bool {
    f.find(".(").is_some_and(|i| f[i + 2..].contains(")."))
}

/// The first `(` not starting `(anonymous namespace)`.
fn first_noise_paren(f: &str) -> Option<usize> {
    f.match_indices('(').map(|(i, _)| i).find(|&i| !f[i..].starts_with("(anonymous namespace)"))
}

fn is_kernel_module(module: &str) -> bool {
    (module.starts_with('[') || module.ends_with("vmlinux")) && !module.contains("unknown")
}

/// `m:/tmp/perf-\d+\.map:`
fn is_jit_map(module: &str) -> bool {
    module.match_indices("/tmp/perf-").any(|(i, _)| {
        let rest = &module[i + 10..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(".map")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(text: &str, rules: NameRules) -> String {
        let mut v = Vec::new();
        fold_frame(&mut v, text, 0x1234, false, rules);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn stackcollapse_rules() {
        let d = NameRules::default();
        assert_eq!(fold("do_syscall_64+0x71 ([kernel.kallsyms])", d), "do_syscall_64");
        assert_eq!(fold("[unknown] (/usr/lib/libc.so.6)", d), "[libc.so.6]");
        assert_eq!(fold("[unknown] ([unknown])", d), "[unknown]");
        assert_eq!(fold("[unknown] ([vdso])", d), "[[vdso]]");
        assert_eq!(fold("llvm::Foo<int>::bar(int) const+0x10 (/x/libLLVM.so)", d), "llvm::Foo<int>::bar");
        assert_eq!(fold("(anonymous namespace)::X::f+0x0 (/x/libLLVM.so)", d), "");
        assert_eq!(fold("a::(anonymous namespace)::f(int)+0x0 (/x/l.so)", d), "a::(anonymous namespace)::f");
        assert_eq!(fold("net/http.(*Client).Do+0x5 (/bin/go)", d), "net/http.(*Client).Do");
        assert_eq!(fold("[unknown] (/memfd:sealed-9 (deleted))", d), "[unknown] ");
        assert_eq!(fold("a;b\"c'+0x1 (/bin/x)", d), "a:bc");
        assert_eq!(fold("f->g+0x1 (/bin/x)", d), "f;g_[i]");
        assert_eq!(fold("Foo::operator->+0x1 (/bin/x)", d), "Foo::operator");
        let k = NameRules {
            annotate_kernel: true,
            annotate_jit: true,
            include_addrs: true,
            ..NameRules::default()
        };
        assert_eq!(fold("schedule+0x1 ([kernel.kallsyms])", k), "schedule_[k]");
        assert_eq!(fold("[unknown] ([kernel.kallsyms])", k), "[[kernel.kallsyms] <1234>]_[k]");
        assert_eq!(fold("[unknown] (/tmp/perf-42.map)", k), "[perf-42.map <1234>]_[j]");
        assert_eq!(fold("[unknown] ([unknown])", k), "[unknown <1234>]");
    }
}
