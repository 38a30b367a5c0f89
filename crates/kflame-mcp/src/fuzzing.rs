//! Entry points of the MCP server's fuzz targets (`fuzz/fuzz_targets/<name>.rs` call them;
//! `tests/fuzz_replay.rs` replays them over `fuzz/corpus/<name>/` and
//! `fuzz/regressions/<name>/`): what a client (a model) sends: tool arguments, the paths
//! in them, and the lines of the stdio transport.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::paths::Roots;
use crate::tools;

/// A fuzz target: panics when a property does not hold.
pub type Target = fn(&[u8]);

/// Every target, by name.
pub const TARGETS: &[(&str, Target)] = &[("mcp_arguments", mcp_arguments)];

/// A tool call's `arguments` (JSON): read as the arguments of every tool (a value or an
/// error, never a panic), every string in it checked as a path under one allowed root
/// (this crate's directory): a path accepted is a regular file under the root, within the
/// size limit. Then the input as a line of the stdio transport: an answer it refuses is a
/// JSON-RPC error with an id that is null, a number or a string.
pub fn mcp_arguments(data: &[u8]) {
    if let Some(answer) = crate::stdio::judge(data) {
        let code = answer["error"]["code"].as_i64();
        assert!(matches!(code, Some(crate::stdio::PARSE_ERROR | crate::stdio::INVALID_REQUEST)), "{answer}");
        assert!(answer["id"].is_null() || answer["id"].is_number() || answer["id"].is_string(), "{answer}");
    }
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let v = || value.clone();
    let _ = serde_json::from_value::<tools::KernelLogArgs>(v());
    let _ = serde_json::from_value::<tools::CrashArgs>(v());
    let _ = serde_json::from_value::<tools::Range>(v());
    let _ = serde_json::from_value::<tools::ProfileArgs>(v());
    let _ = serde_json::from_value::<tools::ProfileSource>(v());
    let _ = serde_json::from_value::<tools::DiffArgs>(v());
    let _ = serde_json::from_value::<tools::SourceArgs>(v());
    let _ = serde_json::from_value::<tools::CallersArgs>(v());
    let _ = serde_json::from_value::<tools::FixArgs>(v());
    let _ = serde_json::from_value::<tools::ReportsArgs>(v());
    let _ = serde_json::from_value::<tools::HistoryArgs>(v());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(roots) = Roots::new(&[root.to_path_buf()], 1 << 20) else { return };
    let mut strings = Vec::new();
    collect(&value, &mut strings);
    for s in strings.into_iter().take(64) {
        // Relative ones are refused; try them under the root too.
        for p in [s.clone(), format!("{}/{s}", root.display())] {
            if let Ok(real) = roots.file(&p, "path") {
                let canon_root: PathBuf = roots.dirs()[0].clone();
                assert!(
                    real.starts_with(&canon_root),
                    "{p:?} resolved to {} outside the root",
                    real.display()
                );
                let meta = std::fs::metadata(&real).expect("an accepted path exists");
                assert!(meta.is_file() && meta.len() <= roots.max_bytes(), "{p:?}");
            }
        }
    }
}

fn collect(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect(x, out)),
        _ => {}
    }
}
