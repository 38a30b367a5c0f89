//! Parsing one call-trace line into a [`Frame`].
//!
//! Shapes accepted (leading whitespace and a `? ` unreliable marker aside):
//! - new x86/arm64/riscv: `func+0x12/0x34`, `func+0x12/0x34 [module]`
//! - old x86/arm64/riscv/mips: `[<ffffffff81234567>] func+0x12/0x34`, `[<...>] ? func+...`
//! - powerpc: `[c0000000fe8c3b50] [c0000000001f00e8] func+0x1c/0x30 (unreliable)`
//! - arm32: `[<c0100000>] (func) from [<c0100100>] (caller+0x10/0x20)`
//! - s390: `([<000000000012345a>] func+0x12/0x34)`
//! - symbolized (syzkaller): `func+0x12/0x34 kernel/smp.c:382`, `func kernel/smp.c:108 [inline]`
//! - unsymbolized: `0xffffffffc0123456`

use super::{Frame, Section};

/// Parses `text` (one line, prefixes already stripped) as a call-trace frame.
pub fn parse_frame(text: &[u8]) -> Option<Frame> {
    let raw = String::from_utf8_lossy(text.trim_ascii()).into_owned();
    let mut s = text.trim_ascii();
    let mut unreliable = false;
    if let Some(r) = s.strip_prefix(b"? ") {
        unreliable = true;
        s = r;
    }
    if let Some(inner) = s.strip_prefix(b"(").and_then(|r| r.strip_suffix(b")")) {
        s = inner; // s390 frames in parentheses
    }
    let (s, had_addr) = skip_addresses(s);
    if let Some(r) = s.strip_prefix(b"? ") {
        unreliable = true;
        return finish(parse_symbol(r, had_addr)?, unreliable, raw);
    }
    if let Some(f) = arm32(s).or_else(|| arm32_new(s)) {
        return finish(f, unreliable, raw);
    }
    let s = match s.strip_suffix(b" (unreliable)") {
        Some(r) => {
            unreliable = true;
            r
        }
        None => s,
    };
    finish(parse_symbol(s, had_addr)?, unreliable, raw)
}

fn finish(mut f: Frame, unreliable: bool, raw: String) -> Option<Frame> {
    f.unreliable = unreliable;
    f.raw = raw;
    f.section = Section::Task;
    Some(f)
}

/// Skips `[<hex>]` and `[hex]` address columns; says whether there were any.
fn skip_addresses(mut s: &[u8]) -> (&[u8], bool) {
    let mut any = false;
    loop {
        let Some(r) = s.strip_prefix(b"[") else { return (s, any) };
        let r = r.strip_prefix(b"<").unwrap_or(r);
        let n = r.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if n < 4 {
            return (s, any);
        }
        let r = &r[n..];
        let Some(r) = r.strip_prefix(b">]").or_else(|| r.strip_prefix(b"]")) else { return (s, any) };
        s = r.trim_ascii_start();
        any = true;
    }
}

/// `(func) from [<addr>] (caller)` or `(func+0x10/0x20) from ...` (arm32 unwinder).
fn arm32(s: &[u8]) -> Option<Frame> {
    let inner = s.strip_prefix(b"(")?;
    let close = memchr::memchr(b')', inner)?;
    if !inner[close + 1..].starts_with(b" from ") {
        return None;
    }
    let (function, offset) = split_offset(&inner[..close])?;
    Some(Frame { function, offset, ..Frame::default() })
}

/// The caller named after ` from ` on an arm32 frame line (`[<c0100000>] (foo) from
/// [<c0100100>] (bar+0x10/0x20)` or `foo from bar+0x10/0x20`): `bar`. The last line's
/// caller is printed nowhere else.
pub(crate) fn arm32_caller(line: &str) -> Option<Frame> {
    let (_, after) = line.rsplit_once(" from ")?;
    let (after, _) = skip_addresses(after.trim().as_bytes());
    let inner = after.strip_prefix(b"(").and_then(|a| a.strip_suffix(b")")).unwrap_or(after);
    let (function, offset) = split_offset(inner)?;
    Some(Frame { function, offset, raw: format!("from {}", text(inner)), ..Frame::default() })
}

/// `func from caller+0x10/0x20` (arm32 unwinder since 6.1): the frame is `func`.
fn arm32_new(s: &[u8]) -> Option<Frame> {
    let mut w = s.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let (func, from, caller) = (w.next()?, w.next()?, w.next()?);
    if from != b"from" || w.next().is_some_and(|m| !m.starts_with(b"[")) {
        return None;
    }
    split_offset(caller)?;
    let (function, offset) = split_offset(func)?;
    Some(Frame { function, offset, ..Frame::default() })
}

/// `func[+0x1/0x2][ [module]][ file.c:12][ [inline]]`.
fn parse_symbol(s: &[u8], had_addr: bool) -> Option<Frame> {
    let mut words = s.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let first = words.next()?;
    if first.starts_with(b"0x") && first.len() > 2 && first[2..].iter().all(u8::is_ascii_hexdigit) {
        return words.next().is_none().then(|| Frame { function: text(first), ..Frame::default() });
    }
    let (function, offset) = split_offset(first)?;
    let mut f = Frame { function, offset, ..Frame::default() };
    for w in words {
        if w == b"[inline]" {
            f.inline = true;
        } else if matches!(w, b"(C)" | b"(P)" | b"(L)" | b"(T)") {
            // arm64 6.13+: frame taken from the PC / LR / task state
        } else if let Some(m) = w.strip_prefix(b"[").and_then(|m| m.strip_suffix(b"]")) {
            f.module = Some(text(m));
        } else if is_source(w) && f.source.is_none() {
            f.source = Some(text(w));
        } else {
            return None;
        }
    }
    let vouched = f.offset.is_some() || f.source.is_some() || (had_addr && f.module.is_some());
    vouched.then_some(f)
}

/// `func+0x12/0x34` → (`func`, `0x12/0x34`); a bare valid symbol → (`func`, None).
fn split_offset(w: &[u8]) -> Option<(String, Option<String>)> {
    let (name, off) = match memchr::memchr(b'+', w) {
        Some(i) => (&w[..i], Some(&w[i + 1..])),
        None => (w, None),
    };
    if !is_symbol(name) {
        return None;
    }
    if let Some(o) = off {
        let ok = o.starts_with(b"0x") && o.iter().all(|b| b.is_ascii_hexdigit() || *b == b'x' || *b == b'/');
        if !ok {
            return None;
        }
    }
    Some((text(name), off.map(text)))
}

/// A C/Rust symbol as the kernel prints it (with `.cold`, `.isra.0`, `$` and such).
fn is_symbol(s: &[u8]) -> bool {
    !s.is_empty()
        && s.len() <= 512
        && (s[0].is_ascii_alphabetic() || s[0] == b'_' || s[0] == b'.')
        && s.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'))
}

/// `path/file.c:123` (optionally `:col`).
fn is_source(w: &[u8]) -> bool {
    let Some(colon) = memchr::memchr(b':', w) else { return false };
    let path = &w[..colon];
    let ext =
        path.ends_with(b".c") || path.ends_with(b".h") || path.ends_with(b".S") || path.ends_with(b".rs");
    ext && w[colon + 1..].first().is_some_and(u8::is_ascii_digit)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> Option<(String, Option<String>, Option<String>, bool)> {
        parse_frame(s.as_bytes()).map(|f| (f.function, f.offset, f.module, f.unreliable))
    }

    #[test]
    fn frame_styles() {
        let off = Some("0x12/0x34".to_string());
        assert_eq!(f(" foo+0x12/0x34"), Some(("foo".into(), off.clone(), None, false)));
        assert_eq!(f(" ? foo+0x12/0x34"), Some(("foo".into(), off.clone(), None, true)));
        assert_eq!(f(" foo+0x12/0x34 [ext4]"), Some(("foo".into(), off.clone(), Some("ext4".into()), false)));
        assert_eq!(f(" [<ffffffff81234567>] foo+0x12/0x34"), Some(("foo".into(), off.clone(), None, false)));
        assert_eq!(f(" [<ffffffff81234567>] ? foo+0x12/0x34"), Some(("foo".into(), off.clone(), None, true)));
        assert_eq!(
            f("[c0000000fe8c3b50] [c0000000001f00e8] foo+0x12/0x34 (unreliable)"),
            Some(("foo".into(), off.clone(), None, true))
        );
        assert_eq!(
            f("[<c0100000>] (foo) from [<c0100100>] (bar+0x10/0x20)"),
            Some(("foo".into(), None, None, false))
        );
        assert_eq!(
            f(" ([<000000000012345a>] foo+0x12/0x34)"),
            Some(("foo".into(), off.clone(), None, false))
        );
        assert_eq!(f(" foo.cold+0x12/0x34"), Some(("foo.cold".into(), off.clone(), None, false)));
        assert_eq!(f(" foo.isra.0+0x12/0x34"), Some(("foo.isra.0".into(), off.clone(), None, false)));
        assert_eq!(
            f(" show_stack from dump_stack_lvl+0x50/0x64"),
            Some(("show_stack".into(), None, None, false))
        );
        let c =
            arm32_caller("[<8195d3d8>] (dump_backtrace) from [<8195d4d4>] (show_stack+0x18/0x1c)").unwrap();
        assert_eq!((c.function.as_str(), c.offset.as_deref()), ("show_stack", Some("0x18/0x1c")));
        assert_eq!(
            arm32_caller("kernel_init from ret_from_fork+0x14/0x28").unwrap().function,
            "ret_from_fork"
        );
        assert_eq!(f(" show_stack+0x12/0x34 (C)"), Some(("show_stack".into(), off, None, false)));
        let inl = parse_frame(b" csd_lock_wait kernel/smp.c:108 [inline]").unwrap();
        assert!(inl.inline);
        assert_eq!(inl.source.as_deref(), Some("kernel/smp.c:108"));
        assert_eq!(f(" 0xffffffffc0123456").map(|x| x.0), Some("0xffffffffc0123456".into()));
    }

    #[test]
    fn non_frames() {
        for s in [
            "Modules linked in: ext4",
            "RSP: 0018:ffffc90004a27c00 EFLAGS: 00000293",
            "foo",
            "Code: 48 89",
            "task:sh state:D",
            "hello world+0x1/0x2",
            "",
            "? ",
        ] {
            assert_eq!(f(s), None, "{s}");
        }
    }
}
