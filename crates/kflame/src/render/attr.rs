//! Which user-given attributes (`--nameattr`) may reach a page: attribute names that are
//! not event handlers, and links a viewer may follow without running anything. A leaf: the
//! options parser and the SVG writer both use it.

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
