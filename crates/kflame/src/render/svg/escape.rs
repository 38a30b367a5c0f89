//! Escaping untrusted text (symbols, comms, titles, notes, attribute values) for XML and for
//! JSON embedded in a script.

/// Escapes text for XML element content and attribute values. Characters XML 1.0 does not
/// allow at all (most C0 controls) become U+FFFD.
pub fn xml(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// [`xml`] into a new string.
pub fn xml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    xml(s, &mut out);
    out
}

/// A JSON string literal that is also safe inside `<script>`, CDATA and HTML: `<`, `>`, `&`
/// and line separators are written as `\u` escapes.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// True for a name usable as an XML attribute name.
pub fn is_attr_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        && !s.to_ascii_lowercase().starts_with("on")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_symbol_is_text() {
        let s = xml_string("</text><script>alert(1)</script>&\"'\u{1}");
        assert_eq!(s, "&lt;/text&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&#39;\u{FFFD}");
        assert_eq!(json_string("a\"</script>]]>\n"), "\"a\\\"\\u003c/script\\u003e]]\\u003e\\u000a\"");
    }

    #[test]
    fn attribute_names() {
        assert!(is_attr_name("class") && is_attr_name("data-x") && is_attr_name("xlink:href"));
        assert!(!is_attr_name("onclick") && !is_attr_name("a b") && !is_attr_name("1x") && !is_attr_name(""));
    }
}
