//! The Resolution of a report group: the culprit's source and candidate fixes from the
//! kernel's git log. Fix search itself lives elsewhere (a search engine this crate does not
//! need): this module defines the query built from a group ([`FixQuery`]), what a search
//! returns ([`Fix`]) and the trait a searcher implements ([`FixSearch`]).

use serde::Serialize;

use crate::culprit::base_name;
use crate::source::SourceInfo;

/// What to search the git log for, built from one report group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FixQuery {
    /// The report kind (`kasan`, `warning`...).
    pub kind: String,
    /// The culprit function first, then up to four callers from the trace that are not
    /// reporting machinery (compiler suffixes removed, duplicates dropped).
    pub functions: Vec<String>,
    /// The culprit's source file, relative to the tree (`fs/ext4/inode.c`), when known.
    pub file: Option<String>,
    /// Words of the title that say what went wrong (`use-after-free`, `read`), without the
    /// function names and the sanitizer prefix.
    pub words: Vec<String>,
}

/// One candidate fix, as a fix searcher returns it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fix {
    /// The commit's full hash.
    pub id: String,
    /// Commit date, ISO 8601.
    pub date: String,
    /// The subject line.
    pub subject: String,
    /// The search engine's score (higher is better; only comparable within one query).
    pub score: f64,
    /// Why it matched: functions, files and words of the query found in the commit.
    pub matched: Vec<String>,
    /// The commit carries a `Fixes:` trailer.
    pub fixes_trailer: bool,
}

/// A fix searcher over a kernel git history (`kflame analyze --kernel-git DIR`).
pub trait FixSearch {
    /// At most `limit` commits for `q`, best first.
    fn search(&self, q: &FixQuery, limit: usize) -> Result<Vec<Fix>, String>;
}

/// The Resolution section of a group.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Resolution {
    /// The culprit's definition in the kernel tree (`--kernel-src`), when looked up.
    pub source: Option<SourceInfo>,
    /// Candidate fixes, best first; `None` when no search was run (see `notes`).
    pub fixes: Option<Vec<Fix>>,
    /// The query a fix search uses (or would use) for this group.
    pub query: FixQuery,
    /// The sections of the tree's `MAINTAINERS` covering the blamed file, most specific
    /// first (empty when no tree was given, or no file is blamed).
    pub maintainers: Vec<crate::maintainers::Section>,
    /// Plain sentences on what was and was not looked at (no `--kernel-src`, no
    /// `--kernel-git`, function not found...).
    pub notes: Vec<String>,
}

/// Title words that name no problem: prefixes, glue and report boilerplate.
const STOP_WORDS: &[&str] = &[
    "in",
    "at",
    "of",
    "the",
    "a",
    "an",
    "to",
    "for",
    "on",
    "bug",
    "info",
    "kernel",
    "warning",
    "kasan",
    "kmsan",
    "kcsan",
    "kfence",
    "ubsan",
    "task",
    "corrupted",
    "is",
    "was",
    "with",
    "from",
    "by",
    "and",
    "or",
];

impl FixQuery {
    /// The query of a report titled `title` of kind `kind` whose culprit is `culprit` and
    /// whose trace, root last, holds `callers` (the frames printed after the culprit, in
    /// order), with `file` the culprit's source file if known.
    pub fn new<'a>(
        kind: &str,
        title: &str,
        culprit: Option<&'a str>,
        callers: impl IntoIterator<Item = &'a str>,
        file: Option<String>,
    ) -> FixQuery {
        let mut functions: Vec<String> = Vec::new();
        for f in culprit.into_iter().chain(callers) {
            let b = base_name(f).to_string();
            if b.is_empty() || functions.contains(&b) {
                continue;
            }
            functions.push(b);
            if functions.len() == 5 {
                break;
            }
        }
        let mut words: Vec<String> = Vec::new();
        let text = title.rsplit_once(" in ").map_or(title, |(w, _)| w);
        for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
            let w = w.trim_matches('-').to_ascii_lowercase();
            if w.len() < 3 || STOP_WORDS.contains(&w.as_str()) || words.contains(&w) {
                continue;
            }
            if w.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            words.push(w);
        }
        FixQuery { kind: kind.to_string(), functions, file, words }
    }
}

/// A kernel history's fix index (`kflame-fixes`) as the analyzer's fix searcher: what
/// `kflame analyze --kernel-git` and the MCP tools search with.
pub struct GitFixes {
    /// The index.
    pub index: kflame_fixes::Index,
    /// Default `--after`.
    pub after: Option<String>,
}

impl FixSearch for GitFixes {
    fn search(&self, q: &FixQuery, limit: usize) -> Result<Vec<Fix>, String> {
        let query = kflame_fixes::Query {
            functions: q.functions.clone(),
            files: q.file.iter().cloned().collect(),
            words: q.words.clone(),
            after: self.after.clone(),
            limit,
        };
        let hits = self.index.search(&query).map_err(|e| e.to_string())?;
        Ok(hits
            .into_iter()
            .map(|h| Fix {
                id: h.id,
                date: h.date,
                subject: h.subject,
                score: f64::from(h.score),
                matched: h.matched,
                fixes_trailer: h.fixes_trailer,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_from_a_kasan_title() {
        let q = FixQuery::new(
            "kasan",
            "KASAN: use-after-free Read in foo_read",
            Some("foo_read.isra.0"),
            ["vfs_read", "foo_read", "ksys_read", "a", "b", "c"],
            Some("fs/foo.c".into()),
        );
        assert_eq!(q.functions, ["foo_read", "vfs_read", "ksys_read", "a", "b"]);
        assert_eq!(q.words, ["use-after-free", "read"]);
        assert_eq!(q.file.as_deref(), Some("fs/foo.c"));
    }
}
