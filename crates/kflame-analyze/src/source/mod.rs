//! Kernel source lookup: a function name → its definition (file, line range, text), the
//! callers of a function, and `func+0x1a/0x80` → source line through a `vmlinux` with
//! DWARF. The tree is indexed once ([`SourceIndex`], on disk) and updated incrementally.

mod index;
mod scan;
mod vmlinux;

use std::fs;

use serde::Serialize;

pub use index::{IndexStatus, SourceError, SourceIndex, check_tree};
pub use scan::{Def, DefKind, scan};
pub use vmlinux::{SourceLine, Vmlinux};

use crate::culprit::{Culprit, base_name};
use crate::maintainers::Maintainers;

/// Longest definition text kept (lines); longer ones are cut with a note.
pub const MAX_TEXT_LINES: usize = 400;

/// One definition of a name in the tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Definition {
    /// The name looked up.
    pub name: String,
    /// Path relative to the tree's root.
    pub file: String,
    /// First line (1-based).
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// `function`, `static`, `inline`, `syscall`, `macro_defined` or `define`.
    pub kind: &'static str,
}

/// A caller of a function: the definition whose body calls it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// The calling function (its first name).
    pub function: String,
    /// Its file, relative to the root.
    pub file: String,
    /// First line of the caller's definition.
    pub line: u32,
}

/// What the Resolution says about a culprit's source.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceInfo {
    /// The function looked up (compiler suffixes removed).
    pub function: String,
    /// The chosen definition's file, relative to the tree.
    pub file: String,
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
    /// Definition kind (see [`Definition::kind`]).
    pub kind: &'static str,
    /// The definition's text (at most [`MAX_TEXT_LINES`] lines).
    pub text: String,
    /// Other definitions of the same name (static functions of other files), `file:line`.
    pub others: Vec<String>,
    /// The culprit's exact line from `vmlinux`'s DWARF (`--vmlinux`), if resolved.
    pub line: Option<SourceLine>,
    /// Up to 10 callers in the tree.
    pub callers: Vec<Caller>,
    /// How many definitions call it in all.
    pub callers_total: usize,
}

/// What the report analysis asks of a kernel tree.
pub trait SourceLookup {
    /// The source of `culprit`, `Ok(None)` when the tree does not define it.
    fn describe(&self, culprit: &Culprit) -> Result<Option<SourceInfo>, String>;

    /// The tree's `MAINTAINERS` file, parsed; `None` when the tree has none.
    fn maintainers(&self) -> Option<Maintainers> {
        None
    }
}

/// A kernel tree's index, and optionally the matching `vmlinux`.
pub struct KernelSource {
    /// The index.
    pub index: SourceIndex,
    /// The kernel image with DWARF, for exact lines.
    pub vmlinux: Option<Vmlinux>,
}

impl KernelSource {
    /// Definitions of `name` (compiler suffixes such as `.isra.0` removed), real
    /// definitions before `#define`s, in path order.
    pub fn definitions(&self, name: &str) -> Vec<Definition> {
        let name = base_name(name);
        let mut v: Vec<Definition> = self
            .index
            .defs(name)
            .into_iter()
            .map(|(f, d)| Definition {
                name: name.to_string(),
                file: f.path.clone(),
                start: d.start,
                end: d.end,
                kind: d.kind.name(),
            })
            .collect();
        v.sort_by_key(|d| (d.kind == DefKind::Define.name(), d.file.ends_with(".h")));
        v
    }

    /// The text of lines `start..=end` of `file` (relative to the root).
    pub fn text(&self, file: &str, start: u32, end: u32) -> Result<String, SourceError> {
        let path = self.index.root().join(file);
        let bytes = fs::read(&path).map_err(|e| SourceError::Io(path, e))?;
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> =
            text.lines().skip(start.saturating_sub(1) as usize).take((end - start + 1) as usize).collect();
        let mut out: String = lines.iter().take(MAX_TEXT_LINES).map(|l| format!("{l}\n")).collect();
        if lines.len() > MAX_TEXT_LINES {
            out.push_str(&format!("... ({} more lines)\n", lines.len() - MAX_TEXT_LINES));
        }
        Ok(out)
    }

    /// The functions whose bodies call `name`, in path order.
    pub fn callers(&self, name: &str) -> Vec<Caller> {
        let name = base_name(name);
        self.index
            .callers(name)
            .into_iter()
            .map(|(f, d)| Caller {
                function: d
                    .names
                    .first()
                    .map(|&n| self.index.strings[n as usize].clone())
                    .unwrap_or_default(),
                file: f.path.clone(),
                line: d.start,
            })
            .collect()
    }
}

/// The definition to show among several: the one in the file the frame printed, then one
/// under the culprit's module directory, then the first real definition.
fn choose<'a>(defs: &'a [Definition], c: &Culprit, line: Option<&SourceLine>) -> Option<&'a Definition> {
    let printed = c.source.as_deref().map(|s| s.split(':').next().unwrap_or(s));
    let dwarf = line.map(|l| l.file.as_str());
    for want in [dwarf, printed].into_iter().flatten() {
        if let Some(d) = defs.iter().find(|d| want.ends_with(&d.file) || d.file.ends_with(want)) {
            return Some(d);
        }
    }
    if let Some(m) = &c.module {
        let m = m.replace('_', "-");
        let m2 = m.replace('-', "_");
        if let Some(d) = defs.iter().find(|d| {
            d.file
                .split('/')
                .any(|p| p == m || p == m2 || p.strip_suffix(".c").is_some_and(|s| s == m || s == m2))
        }) {
            return Some(d);
        }
    }
    defs.first()
}

impl SourceLookup for KernelSource {
    fn maintainers(&self) -> Option<Maintainers> {
        let text = fs::read(self.index.root().join("MAINTAINERS")).ok()?;
        Some(Maintainers::parse(&String::from_utf8_lossy(&text))).filter(|m| !m.is_empty())
    }

    fn describe(&self, c: &Culprit) -> Result<Option<SourceInfo>, String> {
        let line = match (&self.vmlinux, &c.offset) {
            (Some(v), Some(off)) if c.module.is_none() => {
                v.locate(&c.function, off).map_err(|e| e.to_string())?
            }
            _ => None,
        };
        let defs = self.definitions(&c.function);
        let Some(d) = choose(&defs, c, line.as_ref()) else { return Ok(None) };
        let text = self.text(&d.file, d.start, d.end).map_err(|e| e.to_string())?;
        let others = defs.iter().filter(|o| *o != d).map(|o| format!("{}:{}", o.file, o.start)).collect();
        let callers = self.callers(&c.function);
        let line = line.map(|mut l| {
            // DWARF paths are the build's; name the file in the tree when it is there.
            if let Some(rel) = relative_in_tree(&l.file, &defs, self.index.root()) {
                l.file = rel;
            }
            l
        });
        Ok(Some(SourceInfo {
            function: base_name(&c.function).to_string(),
            file: d.file.clone(),
            start: d.start,
            end: d.end,
            kind: d.kind,
            text,
            others,
            line,
            callers_total: callers.len(),
            callers: callers.into_iter().take(10).collect(),
        }))
    }
}

/// A DWARF file path as a path of the tree: the longest suffix of it that exists there.
fn relative_in_tree(path: &str, defs: &[Definition], root: &std::path::Path) -> Option<String> {
    if let Some(d) = defs.iter().find(|d| path.ends_with(&d.file)) {
        return Some(d.file.clone());
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    (0..parts.len()).map(|i| parts[i..].join("/")).find(|rel| root.join(rel).is_file())
}

/// kflame's cache directory: `$XDG_CACHE_HOME/kflame`, else `$HOME/.cache/kflame`; `None`
/// when neither is set.
pub fn cache_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("kflame"))
}

/// A name for the index of `path` (a tree or a repository) in a cache directory: 64-bit
/// FNV-1a of its canonical path, in hex.
pub fn path_key(path: &std::path::Path) -> String {
    let canon = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canon.to_string_lossy().bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The source index file of `tree` in the cache directory `cache`.
pub fn index_file(cache: &std::path::Path, tree: &std::path::Path) -> std::path::PathBuf {
    cache.join(format!("source-{}.idx", path_key(tree)))
}
