//! Entry points of the fix search's fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): what `git log -p` prints of a history, which holds what
//! anyone committed.

use crate::commit::{self, RECORD_START};
use crate::trailer;

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[("fixes_git_log", fixes_git_log)];

/// A `git log` stream cut into records as the indexer cuts it: each record parsed (a commit
/// or `None`), its `Fixes:` trailers and the function a hunk header names; never a panic,
/// every trailer's hash made of hex digits, every function name a substring of its line.
pub fn fixes_git_log(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for rec in text.split(char::from(RECORD_START)) {
        if let Some(c) = commit::parse_record(rec) {
            assert!(!c.id.is_empty(), "a commit without a hash");
            for f in trailer::parse_fixes(&c.body) {
                assert!(f.hash.bytes().all(|b| b.is_ascii_hexdigit()), "Fixes: {:?}", f.hash);
            }
        }
        for line in rec.lines().filter(|l| l.starts_with("@@")).take(1000) {
            if let Some(name) = commit::defined_function(line) {
                assert!(line.contains(name), "{name:?} is not in {line:?}");
            }
        }
    }
}
