//! Escaping untrusted text (symbols, comms, titles, notes, attribute values) for XML and for
//! JSON embedded in a script.

pub use crate::render::attr::{is_attr_name, is_safe_url, is_url_attr};

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
/// and line separators are written as `\u` escapes (the renderers' one JSON writer,
/// [`crate::render::json`]).
pub fn json_string(s: &str) -> String {
    crate::render::json::script_safe_str(s)
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

    #[test]
    fn only_harmless_links_pass() {
        for ok in [
            "https://example.com/a?b#c",
            "http://example.com",
            "HTTPS://example.com",
            "mailto:kernel@example.com",
            "relative/page.html",
            "../src/mm/page_alloc.c#L42",
            "/abs/path:with-colon",
            "?q=a:b",
            "#frag:x",
            "",
        ] {
            assert!(is_safe_url(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "  javascript:alert(1)",
            "java\tscript:alert(1)",
            "java\nscript:alert(1)",
            "java\u{0}script:alert(1)",
            "\u{1}javascript:alert(1)",
            "jav&#x61;script:alert(1)",
            "&#106;avascript:alert(1)",
            "&#0000106avascript:alert(1)",
            "&#x0000000006A;avascript:alert(1)",
            "javascript&colon;alert(1)",
            "javascript&#58;alert(1)",
            "java&Tab;script:alert(1)",
            "vbscript:msgbox(1)",
            "VBScript:msgbox(1)",
            "data:text/html,<script>alert(1)</script>",
            "DATA:image/svg+xml;base64,PHN2Zz4=",
            "file:///etc/passwd",
            "x-unknown:thing",
        ] {
            assert!(!is_safe_url(bad), "{bad:?}");
        }
    }

    #[test]
    fn url_attributes() {
        for a in ["href", "xlink:href", "HREF", "src", "action"] {
            assert!(is_url_attr(a), "{a}");
        }
        assert!(!is_url_attr("class") && !is_url_attr("title") && !is_url_attr("target"));
    }
}
