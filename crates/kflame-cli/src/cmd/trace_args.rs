//! The collapser of the trace-event formats (`ftrace`, `trace-cmd`) configured from their
//! options (in `collapse_args.rs`), and the `--events-json` log they share.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use kflame::collapse::Collapse;
use kflame::collapse::events_json::EventLog;
use kflame::collapse::ftrace::{Ftrace, FtraceOptions, Mode, WeightBy};

use kflame::collapse::options::Target;

use super::collapse_args::{LatencyArgs, SharedArgs, TraceArgs, WeightArg};

/// Builds the ftrace / trace-cmd collapser of `target` (its mode given or guessed, its
/// options checked) from the command line.
pub(crate) fn build_ftrace(
    target: &Target,
    shared: &SharedArgs,
    trace: &TraceArgs,
    lat: &LatencyArgs,
) -> Result<Box<dyn Collapse>> {
    let mode = target.mode.map(Mode::from);
    let weight = shared.weight.map(|w| match w {
        WeightArg::Count => WeightBy::Count,
        WeightArg::Bytes => WeightBy::Bytes,
    });
    let opts = FtraceOptions {
        mode,
        mode_reason: target.guessed.clone(),
        weight,
        comm: shared.comm,
        pid: shared.pid || shared.tid,
        cpu: shared.cpu,
        order: trace.order,
        page_type: trace.page_type,
        top: lat.top()?,
    };
    let mut c = Ftrace::new(opts, events_log(shared.events_json.as_deref())?);
    if let Some(log) = super::outliers::log(lat) {
        c = c.with_outliers(log);
    }
    Ok(Box::new(c))
}

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
