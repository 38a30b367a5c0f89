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
/// and line separators are written as `\u` escapes (the renderers' one JSON writer,
/// [`crate::render::json`]).
pub fn json_string(s: &str) -> String {
    crate::render::json::script_safe_str(s)
}

/// True for a name usable as an XML attribute name.
pub fn is_attr_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        && !s.to_ascii_lowercase().starts_with("on")
}

/// True for an attribute whose value is a URL a browser follows (`href`, `xlink:href`,
/// `src`...): its value must pass [`is_safe_url`].
pub fn is_url_attr(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let local = n.rsplit(':').next().unwrap_or(&n);
    matches!(local, "href" | "src" | "action" | "formaction" | "background" | "poster" | "data")
}

/// True for a link a viewer may follow without running anything: a relative URL, or
/// `http:`, `https:` or `mailto:`. Any other scheme (`javascript:`, `vbscript:`, `data:`,
/// `file:`...) is refused, however it is disguised: character references (`&#106;`,
/// `&#x3A;`, `&colon;`) are decoded, then whitespace and control characters (which browsers
/// strip or ignore inside a scheme) are removed and case is ignored before the scheme is read.
pub fn is_safe_url(url: &str) -> bool {
    let plain: String =
        decode_char_refs(url).chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    match url_scheme(&plain) {
        None => true,
        Some(scheme) => matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https" | "mailto"),
    }
}

/// The scheme of `url` (the text before its first `:`, when that comes before any `/`, `?`
/// or `#`), or None for a relative URL. Text before the colon that is not a valid scheme
/// still counts as one: such a link is refused rather than guessed at.
fn url_scheme(url: &str) -> Option<&str> {
    let colon = url.find(':')?;
    let first_delim = url.find(['/', '?', '#']).unwrap_or(url.len());
    (colon < first_delim).then(|| &url[..colon])
}

/// Decodes numeric character references and the named ones that can hide a scheme.
fn decode_char_refs(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        match char_ref(rest) {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character of a reference at the start of `s` (`&#106;`, `&#x6A`, `&colon;`) and its
/// length; the `;` is optional, as browsers allow.
fn char_ref(s: &str) -> Option<(char, usize)> {
    let body = s.strip_prefix('&')?;
    if let Some(num) = body.strip_prefix('#') {
        let (radix, digits) = match num.strip_prefix(['x', 'X']) {
            Some(hex) => (16, hex),
            None => (10, num),
        };
        let len = digits.chars().take_while(|c| c.is_digit(radix)).count();
        if len == 0 {
            return None;
        }
        let value = digits[..len]
            .chars()
            .try_fold(0u32, |v, c| v.checked_mul(radix)?.checked_add(c.to_digit(radix)?));
        let c = value.and_then(char::from_u32).unwrap_or('\u{FFFD}');
        let used = 1 + (num.len() - digits.len()) + 1 + len;
        let semi = usize::from(s[used..].starts_with(';'));
        return Some((c, used + semi));
    }
    const NAMED: [(&str, char); 6] =
        [("colon", ':'), ("Tab", '\t'), ("NewLine", '\n'), ("sol", '/'), ("quest", '?'), ("num", '#')];
    NAMED.iter().find_map(|&(name, c)| {
        let after = body.strip_prefix(name)?;
        Some((c, 1 + name.len() + usize::from(after.starts_with(';'))))
    })
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
