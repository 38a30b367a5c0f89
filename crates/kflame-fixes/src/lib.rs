//! Fix search over a kernel git history.
//!
//! [`Index::open_or_build`] indexes every commit reachable from `HEAD` of a repository (read
//! through the `git` binary): its subject and body, its `Fixes:` trailers, the files it
//! touches, and the functions its diff names: in hunk headers (`@@ ... @@ int f(...)`), in
//! function definitions among the hunks' lines, and every identifier followed by `(` on its
//! `+`/`-` lines (the functions it calls or defines). The index is a tantivy (BM25) index on
//! disk; opening it again indexes only the commits added since, and an index that cannot be
//! read or does not match its repository is rebuilt, never trusted.
//!
//! [`Index::search`] ranks commits for a [`Query`] of functions, files and words: BM25 over
//! those fields (a function named in a hunk header weighs more than one merely called), then
//! a commit carrying a `Fixes:` trailer counts more. With [`Query::after`], the commits after
//! that revision come first, and among them the ones whose `Fixes:` trailer names it. Each
//! [`Hit`] says what matched.
//!
//! The crate has no async runtime and never prints; errors name the directory or revision
//! at fault.

use std::path::PathBuf;

mod commit;
#[doc(hidden)]
pub mod fuzzing;
mod git;
mod index;
mod trailer;

pub use commit::defined_function;
pub use index::{BuildStats, Hit, Index, Query};
pub use trailer::{FixesTrailer, parse_fixes};

/// What can go wrong opening, building or searching an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The repository path is not a directory.
    #[error("{}: no such directory", path.display())]
    NoDirectory {
        /// As given.
        path: PathBuf,
    },
    /// The directory is not a git repository (its work tree or git directory).
    #[error("{} is not a git repository (git: {git_said})", path.display())]
    NotARepository {
        /// As given.
        path: PathBuf,
        /// What git said.
        git_said: String,
    },
    /// The repository has no commit yet.
    #[error("{}: the repository has no commits (HEAD names no commit)", path.display())]
    EmptyRepository {
        /// As given.
        path: PathBuf,
    },
    /// A revision that names no commit.
    #[error("revision `{rev}` does not name a commit in {}", repo.display())]
    UnknownRevision {
        /// As given.
        rev: String,
        /// The repository, as given.
        repo: PathBuf,
    },
    /// A kernel release none of whose tags ([`release_tags`]) names a commit here.
    #[error("no tag of {} for kernel {release} (tried {})", repo.display(), tried.join(", "))]
    NoReleaseTag {
        /// The release, as labelled (`6.1.0-13-amd64`).
        release: String,
        /// The tags tried, most precise first.
        tried: Vec<String>,
        /// The repository, as given.
        repo: PathBuf,
    },
    /// A query with nothing to search for.
    #[error("empty query: give at least one function, file or word")]
    EmptyQuery,
    /// `git` could not be run.
    #[error("cannot run git (is it installed?)")]
    GitMissing {
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A git command failed.
    #[error("git {what} failed: {said}")]
    Git {
        /// The subcommand.
        what: String,
        /// git's message.
        said: String,
    },
    /// The index directory holds files that are not an index of ours: never deleted.
    #[error("{} is not empty and holds no kflame fix index: refusing to overwrite it", dir.display())]
    ForeignDirectory {
        /// The index directory.
        dir: PathBuf,
    },
    /// Reading or writing a file.
    #[error("{}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The search engine failed on the index directory.
    #[error("fix index {}", dir.display())]
    Index {
        /// The index directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: tantivy::TantivyError,
    },
}

/// The tags a kernel release may come from, most precise first: `6.1.0-13-amd64` → v6.1
/// (a `.0` is the release itself), `6.8.12-arch1` → v6.8.12, v6.8; `5.10.219-rc1` →
/// v5.10.219-rc1, v5.10.219, v5.10.
pub fn release_tags(release: &str) -> Vec<String> {
    let numbers: Vec<&str> = release
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .next()
        .unwrap_or("")
        .split('.')
        .filter(|n| !n.is_empty())
        .collect();
    let mut tags = Vec::new();
    if numbers.len() < 2 {
        return tags;
    }
    let (major, minor) = (numbers[0], numbers[1]);
    let patch = numbers.get(2).filter(|p| **p != "0");
    if let Some(p) = patch {
        let base = format!("v{major}.{minor}.{p}");
        if let Some(rc) = release.split('-').nth(1).filter(|s| s.starts_with("rc")) {
            tags.push(format!("{base}-{rc}"));
        }
        tags.push(base);
    } else if let Some(rc) = release.split('-').nth(1).filter(|s| s.starts_with("rc")) {
        tags.push(format!("v{major}.{minor}-{rc}"));
    }
    tags.push(format!("v{major}.{minor}"));
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distribution releases map to the upstream tags they come from, most precise first
    /// (Debian's `6.1.0-13-amd64` is 6.1; a stable `6.8.12` is v6.8.12 else v6.8).
    #[test]
    fn kernel_releases_name_their_tags() {
        assert_eq!(release_tags("6.1.0-13-amd64"), ["v6.1"]);
        assert_eq!(release_tags("6.8.12-arch1-1"), ["v6.8.12", "v6.8"]);
        assert_eq!(release_tags("5.10.219-rc1"), ["v5.10.219-rc1", "v5.10.219", "v5.10"]);
        assert_eq!(release_tags("6.13-rc3"), ["v6.13-rc3", "v6.13"]);
        assert_eq!(release_tags("4.19"), ["v4.19"]);
        assert!(release_tags("unknown").is_empty());
    }
}
