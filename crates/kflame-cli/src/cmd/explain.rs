//! The report analyzer (`kflame_analyze`) as `kflame serve` asks for it: a report's
//! signature, and its analysis as `kflame analyze --json` gives it. The server depends on no
//! analyzer; this is where the two meet.

use kflame_analyze::reports::{explain_text, sign_text};
use kflame_serve::{Explain, Signed};

/// Explains stored reports with the analyzer, without a kernel tree or git history.
#[derive(Debug, Default)]
pub(crate) struct Analyzer;

impl Explain for Analyzer {
    fn sign(&self, text: &str) -> Option<Signed> {
        sign_text(text).map(|(signature, kernel)| Signed { signature, kernel })
    }

    fn explain(&self, text: &str) -> Option<serde_json::Value> {
        serde_json::to_value(explain_text(text, "history")?).ok()
    }
}
