//! Byte-slice helpers for the perf parser (no allocation, no UTF-8 assumption).

/// Space or tab.
#[inline]
pub(crate) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Without leading spaces and tabs.
#[inline]
pub(crate) fn trim_start(s: &[u8]) -> &[u8] {
    let i = s.iter().position(|&b| !is_blank(b)).unwrap_or(s.len());
    &s[i..]
}

/// Without trailing spaces, tabs and CR.
#[inline]
pub(crate) fn trim_end(s: &[u8]) -> &[u8] {
    let i = s.iter().rposition(|&b| !is_blank(b) && b != b'\r').map_or(0, |i| i + 1);
    &s[..i]
}

/// Without leading and trailing blanks.
#[inline]
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    trim_start(trim_end(s))
}

/// True for `0-9a-fA-F`.
#[inline]
pub(crate) fn all_hex(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_hexdigit)
}

/// Position of the last occurrence of `needle` in `hay`.
#[inline]
pub(crate) fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::rfind(hay, needle)
}
