//! The `--events-json` log that the trace formats (ftrace, trace-cmd, function_graph, perf
//! with --mode) share across the inputs of a run.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use kflame::collapse::events_json::EventLog;

static EVENTS: OnceLock<EventLog> = OnceLock::new();

/// The `--events-json` writer, created on first use and shared by all inputs (and formats)
/// of the run.
pub(crate) fn events_log(path: Option<&Path>) -> Result<Option<EventLog>> {
    let Some(path) = path else { return Ok(None) };
    if let Some(log) = EVENTS.get() {
        return Ok(Some(log.clone()));
    }
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(Some(EVENTS.get_or_init(|| EventLog::new(BufWriter::with_capacity(1 << 16, file))).clone()))
}

/// Flushes the `--events-json` file, if one was written.
pub(crate) fn finish_events(path: Option<&Path>) -> Result<()> {
    if let (Some(log), Some(path)) = (EVENTS.get(), path) {
        log.finish().with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
