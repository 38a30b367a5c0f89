//! Stack (frame) lines of `perf script`, and how one becomes one or more folded frames.
//!
//! ```text
//!     ffffffff8103ce3b native_safe_halt ([kernel.kallsyms])
//!     7f533952bc77 _dl_check_map_versions+0x597 (/usr/lib/ld-2.28.so)
//!     7f89cc45c5c3 Ljava/io/Writer;::flush->Ljava/io/Out;::write+0x4b (/tmp/perf-10487.map)
//!            27304 __libc_start_main_impl (inlined)
//!     ffffffff81636e0d __kmalloc_cache_node_noprof          (no dso column)
//! ```

use super::bytes::{self, all_hex, is_blank, trim, trim_start};
use super::tidy;

/// The parts of a stack line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StackLine<'a> {
    /// The instruction address as printed.
    pub(crate) pc: &'a [u8],
    /// Symbol as printed (offset included).
    pub(crate) func: &'a [u8],
    /// The dso between parentheses, if perf printed it.
    pub(crate) module: Option<&'a [u8]>,
}

/// Parses a stack line. Lines without a `(dso)` column are accepted only when `bare` is set
/// and the address is hexadecimal (perf indents real stack lines; the caller decides).
pub(crate) fn parse(line: &[u8], bare: bool) -> Option<StackLine<'_>> {
    parse_aligned(line).or_else(|| parse_general(line, bare))
}

fn parse_general(line: &[u8], bare: bool) -> Option<StackLine<'_>> {
    let t = trim_start(line);
    let pc_end = t.iter().position(|&b| is_blank(b))?;
    let pc = &t[..pc_end];
    let rest = trim(&t[pc_end..]);
    if let Some(sp) = memchr::memrchr(b' ', rest) {
        let m = &rest[sp + 1..];
        if m.len() >= 2 && m[0] == b'(' && m[m.len() - 1] == b')' {
            if !pc.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_') {
                return None;
            }
            let func = trim(&rest[..sp]);
            let func: &[u8] = if func.is_empty() { b" " } else { func };
            return Some(StackLine { pc, func, module: Some(&m[1..m.len() - 1]) });
        }
    } else if rest.len() >= 2 && rest[0] == b'(' && rest[rest.len() - 1] == b')' {
        // `addr  (dso)`: no symbol at all; the reference names such a frame " ".
        return Some(StackLine { pc, func: b" ", module: Some(&rest[1..rest.len() - 1]) });
    }
    if bare && !rest.is_empty() && all_hex(pc) {
        return Some(StackLine { pc, func: rest, module: None });
    }
    None
}

/// The hot path: perf's own layout `\t%16x symbol (dso)` (address right-aligned in 16
/// columns). Anything else goes through the general parser.
#[inline]
pub(crate) fn parse_aligned(line: &[u8]) -> Option<StackLine<'_>> {
    if line.len() < 21 || line[0] != b'\t' || line[17] != b' ' || is_blank(line[18]) || line[16] == b' ' {
        return None;
    }
    let field = &line[1..17];
    let pc_start = field.iter().position(|&b| b != b' ')?;
    let pc = &field[pc_start..];
    if !all_hex(pc) || line[line.len() - 1] != b')' {
        return None;
    }
    let rest = &line[18..];
    let sp = memchr::memrchr(b' ', rest)?;
    let m = &rest[sp + 1..];
    if m.len() < 2 || m[0] != b'(' || is_blank(rest[sp.checked_sub(1)?]) {
        return None;
    }
    Some(StackLine { pc, func: &rest[..sp], module: Some(&m[1..m.len() - 1]) })
}

/// How frames are named and annotated.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FrameStyle {
    /// `_[k]` after kernel frames.
    pub(crate) kernel: bool,
    /// `_[j]` after JIT frames.
    pub(crate) jit: bool,
    /// `[module <addr>]` instead of `[module]` for unknown symbols.
    pub(crate) addrs: bool,
    /// `_[i]` after DWARF `(inlined)` frames.
    pub(crate) inlined: bool,
}

/// Appends the folded frame(s) of `sl` to `out` (several, `;`-joined, for Java's
/// `a->b->c` inline chains, callees marked `_[i]`). Returns false when the line names no
/// frame (a process name in parentheses), in which case `out` is unchanged.
///
/// Unlike the reference, C++ `(anonymous namespace)::f` frames are kept: the reference's
/// "process name" rule drops them, and with them whole samples.
pub(crate) fn render(sl: &StackLine<'_>, style: FrameStyle, java: bool, out: &mut Vec<u8>) -> bool {
    if sl.func == b"[unknown]" {
        push_part(sl, sl.func, style, java, false, out);
        return true;
    }
    if let Some(func) = plain_symbol(sl.func) {
        let start = out.len();
        out.extend_from_slice(func);
        finish_part(sl, style, java, false, start, out);
        return true;
    }
    let func = tidy::strip_offset(sl.func);
    if func.first() == Some(&b'(') && !func.starts_with(b"(anonymous namespace)") {
        return false;
    }
    let fixed = tidy::fix_rust_symbol(func);
    let mut rest: &[u8] = &fixed;
    let mut index = 0;
    loop {
        let (part, next) = match tidy::find_arrow(rest) {
            Some(i) => (&rest[..i], Some(&rest[i + 2..])),
            None => (rest, None),
        };
        if index > 0 {
            out.push(b';');
        }
        push_part(sl, part, style, java, index > 0, out);
        match next {
            Some(n) => rest = n,
            None => return true,
        }
        index += 1;
    }
}

/// The hot path: a symbol that needs no rule but offset stripping (no `(`, `;`, `->`,
/// `[unknown]` or Rust hash), without its offset; `None` when the full rules must run.
#[inline]
fn plain_symbol(func: &[u8]) -> Option<&[u8]> {
    let mut plus = usize::MAX;
    for (i, &b) in func.iter().enumerate() {
        match b {
            b'+' => plus = i,
            b'(' | b';' | b'>' | b'[' | b'$' => return None,
            _ => {}
        }
    }
    let func = if plus == usize::MAX {
        func
    } else if func[plus + 1..].starts_with(b"0x") && bytes::all_hex(&func[plus + 3..]) {
        &func[..plus]
    } else {
        return None;
    };
    let hash = func.len() >= 17 && func[func.len() - 17] == b'h' && bytes::all_hex(&func[func.len() - 16..]);
    (!hash).then_some(func)
}

fn push_part(
    sl: &StackLine<'_>,
    part: &[u8],
    style: FrameStyle,
    java: bool,
    inlined: bool,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    push_name(sl, part, style.addrs, out);
    if memchr::memchr3(b';', b'(', b')', &out[start..]).is_some() {
        tidy::tidy_generic(out, start);
    }
    finish_part(sl, style, java, inlined, start, out);
}

/// Java tidying and the `_[i]`/`_[k]`/`_[j]` annotation of the part written from `start`.
#[inline]
fn finish_part(
    sl: &StackLine<'_>,
    style: FrameStyle,
    java: bool,
    inlined: bool,
    start: usize,
    out: &mut Vec<u8>,
) {
    if java {
        tidy::tidy_java(out, start);
    }
    let module = sl.module.unwrap_or(b"[unknown]");
    if inlined || (style.inlined && module == b"inlined") {
        out.extend_from_slice(b"_[i]");
    } else if style.kernel && tidy::is_kernel(module) {
        out.extend_from_slice(b"_[k]");
    } else if style.jit && tidy::is_jit(module) {
        out.extend_from_slice(b"_[j]");
    }
}

/// The symbol, or for `[unknown]` the module's file name in brackets (with the address
/// under `--addrs`).
fn push_name(sl: &StackLine<'_>, part: &[u8], addrs: bool, out: &mut Vec<u8>) {
    if part != b"[unknown]" {
        out.extend_from_slice(part);
        return;
    }
    let module = sl.module.unwrap_or(b"[unknown]");
    let name: &[u8] = match (module, addrs) {
        (b"[unknown]", false) => {
            out.extend_from_slice(part);
            return;
        }
        (b"[unknown]", true) => b"unknown",
        (m, _) => &m[memchr::memrchr(b'/', m).map_or(0, |i| i + 1)..],
    };
    out.push(b'[');
    out.extend_from_slice(name);
    if addrs {
        out.extend_from_slice(b" <");
        out.extend_from_slice(sl.pc);
        out.extend_from_slice(b">]");
    } else {
        out.push(b']');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str, style: FrameStyle, java: bool) -> String {
        let sl = parse(line.as_bytes(), true).unwrap();
        let mut out = Vec::new();
        assert!(render(&sl, style, java, &mut out));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn aligned_and_general_parsers_agree() {
        assert!(parse_aligned(b"\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])").is_some());
        assert!(parse_aligned(b"\t            136c leaf_b (/opt/kflame-demo/bin/burn-fp)").is_some());
        for line in [
            &b"\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])"[..],
            b"\t            136c leaf_b (/opt/kflame-demo/bin/burn-fp)",
            b"\t            136c a b  (/x)",
            b"\t            136c (/x)",
            b"\t            136c  (/x)",
            b"\t            13zc f (/x)",
            b"\t            136c f (x",
            b"\t    ffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])",
        ] {
            let fast = parse_aligned(line);
            let general = parse_general(line, true).map(|s| (s.pc.to_vec(), s.func.to_vec(), s.module));
            if let Some(f) = fast {
                assert_eq!(
                    Some((f.pc.to_vec(), f.func.to_vec(), f.module)),
                    general,
                    "{}",
                    String::from_utf8_lossy(line)
                );
            }
        }
    }

    #[test]
    fn parses_variants() {
        let s = parse(b"\tffffffff8103ce3b native_safe_halt ([kernel.kallsyms])", false).unwrap();
        assert_eq!((s.func, s.module), (&b"native_safe_halt"[..], Some(&b"[kernel.kallsyms]"[..])));
        let s = parse(b"\t    7f1e2215d058  (/lib/libc-2.15.so)", false).unwrap();
        assert_eq!(s.func, b" ");
        assert!(parse(b"\tffffffff81636e0d __kmalloc_cache_node_noprof", false).is_none());
        let s = parse(b"\tffffffff81636e0d __kmalloc_cache_node_noprof", true).unwrap();
        assert_eq!((s.func, s.module), (&b"__kmalloc_cache_node_noprof"[..], None));
        assert!(parse(b"\t   THIS_IS_A_WEIRD_LINE", true).is_none());
    }

    #[test]
    fn names_and_annotations() {
        let all = FrameStyle { kernel: true, jit: true, addrs: false, inlined: false };
        assert_eq!(
            one("\tffff81 native_safe_halt+0x1 ([kernel.kallsyms])", all, false),
            "native_safe_halt_[k]"
        );
        assert_eq!(one("\t7f7 [unknown] (/usr/lib/libc.so)", all, false), "[libc.so]");
        let addrs = FrameStyle { addrs: true, ..Default::default() };
        assert_eq!(one("\t7f7 [unknown] ([unknown])", addrs, false), "[unknown <7f7>]");
        assert_eq!(
            one("\t7f LCounter;::a->Ljava/X;::b+0x4b (/tmp/perf-1.map)", all, true),
            "LCounter:::a_[j];java/X:::b_[i]"
        );
        let inl = FrameStyle { inlined: true, ..Default::default() };
        assert_eq!(one("\t27304 __libc_start_main_impl (inlined)", inl, false), "__libc_start_main_impl_[i]");
    }
}
