//! The kernel's `MAINTAINERS` file: who to tell about a report blamed on a source file.
//!
//! Read as the file's own preamble documents it: a section is a title line followed by
//! `X:<tab>value` lines; `F:` file patterns (a trailing `/` takes everything below the
//! directory, `*` and `?` do not cross a `/`), `X:` exclusions with the same rules, tested
//! first, `N:` regular expressions matched anywhere in the path; `M:` maintainers, `R:`
//! reviewers, `L:` mailing lists, `S:` status, `T:` tree. `K:` (content keywords) is not
//! used: only the path is known.

use regex::Regex;
use serde::Serialize;

/// One section of `MAINTAINERS` that covers a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Section {
    /// The section's title (`EXT4 FILE SYSTEM`).
    pub name: String,
    /// `S:` (`Maintained`, `Supported`, `Orphan`...).
    pub status: Option<String>,
    /// `M:` lines.
    pub maintainers: Vec<String>,
    /// `R:` lines.
    pub reviewers: Vec<String>,
    /// `L:` lines.
    pub lists: Vec<String>,
    /// `T:` lines (`git git://...`).
    pub trees: Vec<String>,
    /// The pattern that matched the file (`F:` or `N:` value).
    pub matched: String,
}

/// A parsed `MAINTAINERS` file.
#[derive(Debug, Default)]
pub struct Maintainers {
    sections: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    section: Section,
    files: Vec<String>,
    excludes: Vec<String>,
    names: Vec<(String, Regex)>,
}

impl Maintainers {
    /// Parses the text of a `MAINTAINERS` file; patterns that are not valid are left out.
    pub fn parse(text: &str) -> Maintainers {
        let mut sections = Vec::new();
        let mut current: Option<Entry> = None;
        let close = |e: Option<Entry>, out: &mut Vec<Entry>| {
            if let Some(e) = e.filter(|e| !e.files.is_empty() || !e.names.is_empty()) {
                out.push(e);
            }
        };
        for line in text.lines() {
            let field = line.as_bytes().get(1) == Some(&b':')
                && line.as_bytes()[0].is_ascii_uppercase()
                && (line.len() == 2 || line[2..].starts_with([' ', '\t']));
            if field {
                let Some(e) = current.as_mut() else { continue };
                let value = line[2..].trim().to_string();
                match &line[..1] {
                    "M" => e.section.maintainers.push(value),
                    "R" => e.section.reviewers.push(value),
                    "L" => e.section.lists.push(value),
                    "S" => e.section.status = Some(value),
                    "T" => e.section.trees.push(value),
                    "F" if !value.is_empty() => e.files.push(value),
                    "X" if !value.is_empty() => e.excludes.push(value),
                    "N" if !value.is_empty() => {
                        // Extended syntax, as get_maintainer.pl matches them (`m/$regex/x`).
                        if let Ok(re) = Regex::new(&format!("(?x){value}")) {
                            e.names.push((value, re));
                        }
                    }
                    _ => {}
                }
            } else if line.trim().is_empty() {
                close(current.take(), &mut sections);
            } else if !line.starts_with([' ', '\t']) {
                close(current.take(), &mut sections);
                current = Some(Entry {
                    section: Section {
                        name: line.trim().to_string(),
                        status: None,
                        maintainers: Vec::new(),
                        reviewers: Vec::new(),
                        lists: Vec::new(),
                        trees: Vec::new(),
                        matched: String::new(),
                    },
                    files: Vec::new(),
                    excludes: Vec::new(),
                    names: Vec::new(),
                });
            }
        }
        close(current, &mut sections);
        Maintainers { sections }
    }

    /// Number of sections with file patterns.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// True when no section has a file pattern (not a `MAINTAINERS` file).
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The sections covering `file` (a path from the tree's root), the most specific
    /// first: the deepest matching `F:` pattern, an exact file before a directory; the
    /// catch-all sections (`F: *`) last.
    pub fn for_file(&self, file: &str) -> Vec<Section> {
        let mut found: Vec<(usize, usize, Section)> = Vec::new();
        for (i, e) in self.sections.iter().enumerate() {
            if e.excludes.iter().any(|x| file_matches(x, file)) {
                continue;
            }
            let by_file = e
                .files
                .iter()
                .filter(|p| file_matches(p, file))
                .map(|p| (specificity(p), p))
                .max_by_key(|(s, _)| *s);
            let by_name = e.names.iter().find(|(_, re)| re.is_match(file)).map(|(p, _)| (1, p));
            if let Some((score, pattern)) = by_file.or(by_name) {
                let mut s = e.section.clone();
                s.matched = pattern.clone();
                found.push((score, i, s));
            }
        }
        found.sort_by_key(|(score, i, _)| (std::cmp::Reverse(*score), *i));
        found.into_iter().map(|(_, _, s)| s).collect()
    }
}

/// How specific an `F:` pattern is: its depth in directories, more for a file than for a
/// directory; little for a pattern that starts with a wildcard (`*/net/*`), nothing for
/// wildcards only (`*`, `*/`).
fn specificity(p: &str) -> usize {
    let literal = p.trim_matches(|c| c == '*' || c == '/' || c == '?');
    if literal.is_empty() {
        return 0;
    }
    if p.starts_with(['*', '?']) {
        return 1;
    }
    2 * p.trim_end_matches('/').matches('/').count() + 2 + usize::from(!p.ends_with('/') && !p.contains('*'))
}

/// Whether `file` matches an `F:`/`X:` pattern: a trailing `/` takes everything in and below
/// the directory; otherwise the pattern names a file (or, without wildcards, also a
/// directory given without its slash); `*` and `?` match within one path component.
fn file_matches(pattern: &str, file: &str) -> bool {
    let dir = pattern.ends_with('/');
    let pattern = pattern.trim_end_matches('/');
    let (np, nf) = (pattern.split('/').count(), file.split('/').count());
    // In and below a directory; one file for a wildcard pattern; either for a plain one.
    let depth_ok = if dir {
        nf > np
    } else if pattern.contains(['*', '?']) {
        nf == np
    } else {
        nf >= np
    };
    depth_ok && pattern.split('/').zip(file.split('/')).all(|(p, f)| glob(p.as_bytes(), f.as_bytes()))
}

/// `*` and `?` glob within one component.
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
List of maintainers
===================

Descriptions of section entries and preferred order
\tM: *Mail* patches to: FullName <address@domain>

3C59X NETWORK DRIVER
M:\tA Person <a@example.org>
L:\tnetdev@vger.kernel.org
S:\tOdd Fixes
F:\tdrivers/net/ethernet/3com/3c59x.c

NETWORKING DRIVERS
M:\tB Person <b@example.org>
L:\tnetdev@vger.kernel.org
S:\tMaintained
T:\tgit git://git.kernel.org/pub/scm/linux/kernel/git/netdev/net.git
F:\tdrivers/net/
X:\tdrivers/net/wireless/

WIRELESS DRIVERS
L:\tlinux-wireless@vger.kernel.org
S:\tOrphan
F:\tdrivers/net/wireless/*

TRACING
N:\ttrace

THE REST
M:\tLinus Torvalds <torvalds@linux-foundation.org>
L:\tlinux-kernel@vger.kernel.org
F:\t*
F:\t*/
";

    fn names(m: &Maintainers, f: &str) -> Vec<String> {
        m.for_file(f).into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn sections_by_pattern_most_specific_first() {
        let m = Maintainers::parse(TEXT);
        assert_eq!(m.len(), 5);
        assert_eq!(
            names(&m, "drivers/net/ethernet/3com/3c59x.c"),
            ["3C59X NETWORK DRIVER", "NETWORKING DRIVERS", "THE REST"]
        );
        // Excluded from networking drivers; `*` does not cross a directory.
        assert_eq!(names(&m, "drivers/net/wireless/foo.c"), ["WIRELESS DRIVERS", "THE REST"]);
        assert_eq!(names(&m, "drivers/net/wireless/x/foo.c"), ["THE REST"]);
        assert_eq!(names(&m, "kernel/trace/ring_buffer.c"), ["TRACING", "THE REST"]);
        let s = &m.for_file("drivers/net/dummy.c")[0];
        assert_eq!(
            (s.status.as_deref(), s.lists.as_slice()),
            (Some("Maintained"), &["netdev@vger.kernel.org".to_string()][..])
        );
        assert_eq!(s.matched, "drivers/net/");
        assert!(Maintainers::parse("no sections here\n").is_empty());
        assert!(file_matches("fs/ext?/", "fs/ext4/inode.c") && !file_matches("fs/ext?/", "fs/ext44/x.c"));
        assert!(file_matches("*/net/*", "drivers/net/x.c") && !file_matches("*/net/*", "drivers/net/y/x.c"));
        assert!(file_matches("include/linux/skbuff.h", "include/linux/skbuff.h"));
        assert!(
            file_matches("drivers/net", "drivers/net/x.c")
                && !file_matches("drivers/net", "drivers/network.c")
        );
        assert!(specificity("*/net/*") < specificity("drivers/net/"));
    }
}
