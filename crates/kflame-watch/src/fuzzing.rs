//! Entry points of the watcher's fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): the trigger rules and the TOML configuration, both typed
//! by people and reloaded on SIGHUP while the watcher runs.

use std::path::Path;

use crate::config::{self, File};
use crate::rules::Rule;

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[("watch_rules", watch_rules), ("watch_config", watch_config)];

/// Trigger rules, one a line: an error or a rule, never a panic; a rule printed and parsed
/// again is the same rule.
pub fn watch_rules(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines().take(256) {
        if let Ok(rule) = Rule::parse(line) {
            let shown = rule.to_string();
            let again = Rule::parse(&shown).unwrap_or_else(|e| panic!("{line:?} printed as {shown:?}: {e}"));
            assert_eq!(again.to_string(), shown, "{line:?}");
        }
    }
}

/// The watcher's TOML configuration: parsed, then resolved as at start (every value
/// checked); errors name the file, never a panic.
pub fn watch_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let path = Path::new("watch.toml");
    match File::parse(&text, path) {
        Ok(file) => {
            if let Err(e) = config::resolve(Some((path, file)), &File::default(), "host") {
                let msg = e.to_string();
                assert!(msg.contains("watch.toml") || msg.contains("command line"), "{msg}");
            }
        }
        Err(e) => assert!(e.to_string().contains("watch.toml"), "{e}"),
    }
}
