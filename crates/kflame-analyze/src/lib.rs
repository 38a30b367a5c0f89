//! `kflame analyze`: kernel reports and profiles explained, deterministically and without a
//! language model.
//!
//! - Reports (kernel logs through [`kflame::report::reports`], crash `bt` output through
//!   [`kflame::collapse::crash::tasks`]) go into a [`ReportAnalyzer`], which groups them by
//!   signature (the title in syzkaller's form, `KIND in FUNCTION`) and gives each group an **Error** (kind, title,
//!   kernel, taint, task, the culprit frame with a confidence: [`culprit`]), a
//!   **Resolution** (the culprit's source from a kernel tree, [`source`], and candidate
//!   fixes through a [`FixSearch`] implementation, [`fixes`]) and a **Summary**.
//! - Profiles (folded stacks of any input) go through [`profile::analyze`]: hottest
//!   functions (self and total), hottest paths, the kernel's share, in the profile's unit.
//! - [`output`] renders an [`Analysis`] as text, Markdown or JSON.
//!
//! # JSON schema (`kflame analyze --json`), version 1
//!
//! ```text
//! {
//!   "schema": "kflame-analyze", "version": 1,
//!   "reports": N,                      // reports read
//!   "groups_total": N,                 // groups before --limit
//!   "groups": [ {                      // one object per report group, most frequent first
//!     "signature": "KASAN: use-after-free Read in foo_read", "count": 3,
//!     "first_seen": {"input", "line", "time"}, "last_seen": {...},
//!     "kernels": ["6.1.0"], "titles": ["KASAN: use-after-free Read in foo_read"],
//!     "error": {
//!       "kind", "title", "header", "kernel", "taint", "cpu", "pid", "comm",
//!       "culprit": {"function", "offset", "module", "confidence", "level", "origin",
//!                   "doubts": [..], "source"} | null,
//!       "blame": {"file", "function"} | null,   // the file whose maintainers to tell
//!       "callers": ["vfs_read+0xa0/0x2f0", ...], "trace": [raw frame lines],
//!       "trace_more": 0, "truncated": false },
//!     "resolution": {
//!       "source": {"function", "file", "start", "end", "kind", "text", "others",
//!                  "line": {"file", "line", "inlined", "address"} | null,
//!                  "callers": [{"function", "file", "line"}], "callers_total"} | null,
//!       "fixes": [{"id", "date", "subject", "score", "matched": [..], "fixes_trailer"}]
//!                | null,                // null: no search was run (see notes)
//!       "maintainers": [{"name", "status", "maintainers": [..], "reviewers": [..],
//!                        "lists": [..], "trees": [..], "matched"}],  // MAINTAINERS of
//!                                       // the tree (--kernel-src) for the blamed file
//!       "query": {"kind", "functions", "file", "words"},
//!       "notes": ["no kernel git history given (--kernel-git): fixes not searched"] },
//!     "summary": ["sentence", ...] } ],
//!   "profiles": [ { "input", "unit", "stacks",
//!     "total": {"weight", "display", "percent"}, "kernel": {...},
//!     "by_self": [{"function", "kernel", "self": {...}, "total": {...}}], "by_total": [...],
//!     "paths": [{"frames": [root first], "share": {...}}],
//!     "by_root": [{"frames": [root], "share": {...}}], "summary": [...] } ],
//!   "notes": [...]
//! }
//! ```
//!
//! Fields are only ever added within a version; a removal or a change of meaning bumps
//! [`SCHEMA_VERSION`].

pub mod blame;
pub mod culprit;
pub mod fixes;
pub mod fleet;
pub mod fuzzing;
pub mod maintainers;
pub mod output;
pub mod profile;
pub mod reports;
pub mod run;
pub mod source;

use serde::Serialize;

pub use culprit::{Culprit, culprit};
pub use fixes::{Fix, FixQuery, FixSearch, Resolution};
pub use profile::ProfileAnalysis;
pub use reports::{Group, ReportAnalyzer};

/// The `schema` field of the JSON output.
pub const SCHEMA: &str = "kflame-analyze";
/// The `version` field of the JSON output.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything one `kflame analyze` run found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Analysis {
    /// Reports read.
    pub reports: usize,
    /// Groups before the limit was applied.
    pub groups_total: usize,
    /// Report groups, most frequent first.
    pub groups: Vec<Group>,
    /// One analysis per profile input.
    pub profiles: Vec<ProfileAnalysis>,
    /// What was skipped or worth knowing (inputs without reports, lines skipped).
    pub notes: Vec<String>,
}
