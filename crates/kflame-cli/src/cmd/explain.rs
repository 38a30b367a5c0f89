//! The report analyzer (`kflame_analyze`) as `kflame serve` asks for it: a report's
//! signature, and its analysis as `kflame analyze --json` gives it (with the culprit's source
//! and fix candidates when the server was given a kernel tree and git history). The server
//! depends on no analyzer; this is where the two meet.

use kflame::fold::Unit;
use kflame::fold::tree::StackTree;
use kflame_analyze::FixSearch;
use kflame_analyze::fixes::GitFixes;
use kflame_analyze::reports::{explain_text_with, sign_text};
use kflame_analyze::source::{KernelSource, SourceLookup};
use kflame_serve::{Explain, Signed};
use serde_json::json;

/// Fix candidates listed for a report (as many as `kflame analyze` lists by default).
const FIX_LIMIT: usize = 10;

/// Explains stored reports with the analyzer, with a kernel tree and git history if given.
#[derive(Default)]
pub(crate) struct Analyzer {
    source: Option<KernelSource>,
    fixes: Option<GitFixes>,
}

impl Analyzer {
    pub(crate) fn new(source: Option<KernelSource>, fixes: Option<GitFixes>) -> Analyzer {
        Analyzer { source, fixes }
    }
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("kernel_src", &self.source.is_some())
            .field("kernel_git", &self.fixes.is_some())
            .finish()
    }
}

impl Explain for Analyzer {
    fn sign(&self, text: &str) -> Option<Signed> {
        sign_text(text).map(|(signature, kernel)| Signed { signature, kernel })
    }

    fn explain(&self, text: &str) -> Option<serde_json::Value> {
        let source = self.source.as_ref().map(|s| s as &dyn SourceLookup);
        let fixes = self.fixes.as_ref().map(|f| f as &dyn FixSearch);
        serde_json::to_value(explain_text_with(text, "history", source, fixes, FIX_LIMIT)?).ok()
    }

    fn compare(&self, tree: &StackTree, unit: &Unit, limit: usize) -> Option<serde_json::Value> {
        serde_json::to_value(kflame_analyze::profile::diff_tree(tree, unit, limit)).ok()
    }

    fn commits(
        &self,
        functions: &[&str],
        before: &str,
        after: &str,
        limit: usize,
    ) -> Option<Result<Vec<serde_json::Value>, String>> {
        let index = &self.fixes.as_ref()?.index;
        let tag = |release: &str| index.release_tag(release).map_err(|e| e.to_string());
        Some((|| {
            let (from, to) = (tag(before)?, tag(after)?);
            let each = index.touching_each(functions, &from, &to, limit).map_err(|e| e.to_string())?;
            Ok(each
                .into_iter()
                .map(|(hits, total)| {
                    let commits: Vec<serde_json::Value> = hits
                        .iter()
                        .map(|h| json!({ "id": h.id, "date": h.date, "subject": h.subject }))
                        .collect();
                    json!({ "from": from, "to": to, "total": total, "commits": commits })
                })
                .collect())
        })())
    }
}
