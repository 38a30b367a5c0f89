//! The one JSON writer of rendered pages: `serde_json` with a formatter whose output is safe
//! inside `<script>`, CDATA and HTML.
//!
//! Besides what JSON requires (quotes, backslashes, control characters as `\u00XX`), `<`,
//! `>`, `&`, DEL and the line separators U+2028/U+2029 are written as `\u` escapes, so that a
//! symbol such as `</script>` cannot end the element that carries the data, and old
//! JavaScript parsers do not end a line inside a string. The result is still plain JSON:
//! `JSON.parse` reads back exactly the strings written.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter, Serializer};
use serde_json::value::RawValue;

/// `value` as compact JSON safe inside a `<script>` element.
pub fn to_script_safe_string<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(128);
    let mut ser = Serializer::with_formatter(&mut out, ScriptSafe);
    // Serializing the page's own data types into memory cannot fail: no map has non-string
    // keys and a Vec does not fail to grow. Should it ever, the value is written as `null`
    // rather than the page being left half-written.
    if value.serialize(&mut ser).is_err() {
        return "null".to_string();
    }
    // The serializer writes only UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `value` as compact JSON safe inside a `<script>` element, kept as JSON text to be written
/// verbatim inside another value (or a page).
pub fn to_script_safe_raw<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    // The text is JSON (`null` if serializing failed): it is always valid.
    RawValue::from_string(to_script_safe_string(value)).unwrap_or_default()
}

/// A JSON string literal safe inside a `<script>` element.
pub fn script_safe_str(s: &str) -> String {
    to_script_safe_string(s)
}

/// Compact JSON, escaping what could end or open markup.
struct ScriptSafe;

impl Formatter for ScriptSafe {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if matches!(c, '<' | '>' | '&' | '\u{7f}' | '\u{2028}' | '\u{2029}') {
                w.write_all(&fragment.as_bytes()[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        let byte = match escape {
            CharEscape::Quote => return w.write_all(b"\\\""),
            CharEscape::ReverseSolidus => return w.write_all(b"\\\\"),
            CharEscape::Solidus => return w.write_all(b"/"),
            CharEscape::Backspace => 0x08,
            CharEscape::FormFeed => 0x0c,
            CharEscape::LineFeed => b'\n',
            CharEscape::CarriageReturn => b'\r',
            CharEscape::Tab => b'\t',
            CharEscape::AsciiControl(b) => b,
        };
        write!(w, "\\u{byte:04x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_controls_and_separators() {
        assert_eq!(script_safe_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
        assert_eq!(script_safe_str("x\u{2028}&>\u{7f}/é"), "\"x\\u2028\\u0026\\u003e\\u007f/é\"");
        assert_eq!(script_safe_str("</script>"), "\"\\u003c/script\\u003e\"");
    }

    #[test]
    fn reads_back_as_the_same_value() {
        let names: Vec<String> =
            (0u32..0x300).filter_map(char::from_u32).map(|c| format!("{c}<{c}>&\u{2029}")).collect();
        let json = to_script_safe_string(&names);
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'));
        let back: Vec<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, names);
    }
}
