//! Frame-name rules of `stackcollapse-perf.pl` (as pinned by inferno): offsets, argument
//! lists, Java signatures, Rust legacy mangling left by perf, and module annotations.

use std::borrow::Cow;

use super::bytes::{all_hex, rfind};

/// Drops a `+0x1f` symbol offset (Linux 4.8+ prints them by default).
pub(crate) fn strip_offset(func: &[u8]) -> &[u8] {
    let mut end = func.len();
    while let Some(i) = memchr::memrchr(b'+', &func[..end]) {
        if func[i + 1..].starts_with(b"0x") {
            return if all_hex(&func[i + 3..]) { &func[..i] } else { func };
        }
        end = i;
    }
    func
}

/// Position of the first `->` (Java inline chains of perf-map-agent).
pub(crate) fn find_arrow(s: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'>', &s[from..]) {
        let at = from + i;
        if at > 0 && s[at - 1] == b'-' {
            return Some(at - 1);
        }
        from = at + 1;
    }
    None
}

/// Rewrites `;` to `:` and removes the argument list of `func` (in place, from `start`):
/// everything from the first top-level `(`, except Go method receivers (`pkg.(*T).M`) and
/// C++ `(anonymous namespace)`; parentheses inside `<>`, `{}` or `[]` are kept.
pub(crate) fn tidy_generic(buf: &mut Vec<u8>, start: usize) {
    let mut depth: i32 = 0;
    let mut after_dot = usize::MAX;
    let mut cut = buf.len();
    for idx in start..buf.len() {
        match buf[idx] {
            b';' => buf[idx] = b':',
            b'<' | b'{' | b'[' => depth += 1,
            b'>' | b'}' | b']' | b')' => depth -= 1,
            b'(' => {
                if depth == 0 && after_dot != idx && !buf[idx..].starts_with(b"(anonymous namespace)") {
                    cut = idx;
                    break;
                }
                depth += 1;
            }
            b'.' => after_dot = idx + 1,
            _ => {}
        }
    }
    buf.truncate(cut);
}

/// `Lorg/mozilla/Foo;.call` → `org/mozilla/Foo:.call` (the `;` is handled by
/// [`tidy_generic`]): drops the JVM type prefix `L` of names with a package path.
pub(crate) fn tidy_java(buf: &mut Vec<u8>, start: usize) {
    if buf.get(start) == Some(&b'L') && memchr::memchr(b'/', &buf[start..]).is_some() {
        buf.remove(start);
    }
}

/// Kernel code: `[kernel.kallsyms]`, `[nf_conntrack]`, `*.ko`, `vmlinux[-version]`.
pub(crate) fn is_kernel(module: &[u8]) -> bool {
    (module.first() == Some(&b'[') || module.ends_with(b".ko") || is_vmlinux(module))
        && module != b"[unknown]"
}

fn is_vmlinux(module: &[u8]) -> bool {
    match rfind(module, b"vmlinux") {
        Some(i) => module[i..].iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_')),
        None => false,
    }
}

/// JIT code: perf map files (`/tmp/perf-PID.map`) and jitdump objects (`jitted-PID-N.so`).
pub(crate) fn is_jit(module: &[u8]) -> bool {
    (module.starts_with(b"/tmp/perf-") && module.ends_with(b".map"))
        || (module.ends_with(b".so") && memchr::memmem::find(module, b"/jitted-").is_some())
}

const RUST_HASH_LEN: usize = 17;

/// Finishes legacy Rust demangling that perf left half done:
/// `_$LT$Vec$LT$T$GT$$GT$::push::h0123456789abcdef` → `<Vec<T>>::push`. Anything that does
/// not end in a Rust hash, or holds an unknown escape, is returned unchanged.
pub(crate) fn fix_rust_symbol(sym: &[u8]) -> Cow<'_, [u8]> {
    if sym.len() < RUST_HASH_LEN {
        return Cow::Borrowed(sym);
    }
    let hash = &sym[sym.len() - RUST_HASH_LEN..];
    if hash[0] != b'h' || !all_hex(&hash[1..]) {
        return Cow::Borrowed(sym);
    }
    let mut rest = &sym[..sym.len() - RUST_HASH_LEN];
    rest = rest.strip_suffix(b"::").unwrap_or(rest);
    if rest.starts_with(b"_$") {
        rest = &rest[1..];
    }
    match demangle_legacy(rest) {
        Some(v) => Cow::Owned(v),
        None => Cow::Borrowed(sym),
    }
}

fn demangle_legacy(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(rest.len());
    while let Some(&b) = rest.first() {
        if rest.starts_with(b"..") {
            out.extend_from_slice(b"::");
            rest = &rest[2..];
        } else if b == b'$' {
            let end = memchr::memchr(b'$', &rest[1..])? + 1;
            out.extend_from_slice(escape(&rest[1..end])?);
            rest = &rest[end + 1..];
        } else {
            out.push(b);
            rest = &rest[1..];
        }
    }
    Some(out)
}

fn escape(code: &[u8]) -> Option<&'static [u8]> {
    Some(match code {
        b"SP" => b"@",
        b"BP" => b"*",
        b"RF" => b"&",
        b"LT" => b"<",
        b"GT" => b">",
        b"LP" => b"(",
        b"RP" => b")",
        b"C" => b",",
        b"u7e" => b"~",
        b"u20" => b" ",
        b"u27" => b"'",
        b"u5b" => b"[",
        b"u5d" => b"]",
        b"u7b" => b"{",
        b"u7d" => b"}",
        b"u3b" => b";",
        b"u2b" => b"+",
        b"u22" => b"\"",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tidy(s: &str) -> String {
        let mut v = s.as_bytes().to_vec();
        tidy_generic(&mut v, 0);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn generic_rules() {
        assert_eq!(tidy("go/build.(*importReader).readByte"), "go/build.(*importReader).readByte");
        assert_eq!(tidy("foo<Vec::<usize>>(Vec<usize>)"), "foo<Vec::<usize>>");
        assert_eq!(tidy(".run()V"), ".run");
        assert_eq!(tidy("base(BasicType) const"), "base");
        assert_eq!(
            tidy("std::function<void (int, int)>::operator(int, int)"),
            "std::function<void (int, int)>::operator"
        );
        assert_eq!(tidy("{lambda(int, int)#2}::operator()"), "{lambda(int, int)#2}::operator");
        assert_eq!(tidy("(anonymous namespace)::myBar()"), "(anonymous namespace)::myBar");
        assert_eq!(tidy("a;b"), "a:b");
    }

    #[test]
    fn offsets_and_modules() {
        assert_eq!(strip_offset(b"main+0x1f"), b"main");
        assert_eq!(strip_offset(b"x+0xzz"), b"x+0xzz");
        assert!(is_kernel(b"[kernel.kallsyms]"));
        assert!(is_kernel(b"/lib/modules/4.3.0/build/vmlinux"));
        assert!(is_kernel(b"/usr/lib/debug/boot/vmlinux-5.4.14-cloudflare-2020.1.11"));
        assert!(!is_kernel(b"[unknown]"));
        assert!(!is_kernel(b"vmlinux-5.4.14)"));
        assert!(is_jit(b"/tmp/perf-123.map"));
        assert!(is_jit(b"/home/u/.debug/jit/jitted-1-2.so"));
    }

    #[test]
    fn rust_legacy() {
        let s = b"_$LT$collections..vec..Vec$LT$T$GT$$GT$::extend_desugared::h5bbb8e6b5a245d7f";
        assert_eq!(&*fix_rust_symbol(s), b"<collections::vec::Vec<T>>::extend_desugared");
        assert_eq!(&*fix_rust_symbol(b"main"), b"main");
        assert_eq!(&*fix_rust_symbol(b"a$ZZ$b::h5bbb8e6b5a245d7f"), b"a$ZZ$b::h5bbb8e6b5a245d7f");
    }
}
