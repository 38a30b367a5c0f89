//! Chrome's Trace Event Format (the JSON object form, as Perfetto's and `chrome://tracing`'s
//! JSON importers read it): a flame chart of the stacks in output order, each frame a
//! complete event (`"ph": "X"`) with `ts` and `dur` in microseconds, on one process and
//! thread (`pid` 1, `tid` 1, named by `M` metadata events).
//!
//! The time axis: weights in nanoseconds (latency, off-CPU time, `cpu-clock`/`task-clock`
//! periods) are placed at their real length, one after the other; any other unit has no
//! time, and each unit of weight (one sample, one byte) takes one microsecond: `otherData`
//! says which. Folded stacks keep no time stamps, and sample times the stacks may carry
//! (`collapse --time-order -o`) are not used here, so the gaps between samples are not
//! there; time-ordered stacks (`kflame collapse --time-order`) give a flame chart in the
//! order they happened, summed stacks one sorted by name.

use std::io::Write;

use serde::Serialize;

use super::{ExportError, Profile};

#[derive(Serialize)]
struct Trace<'a> {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Event<'a>>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
    #[serde(rename = "otherData")]
    other_data: OtherData,
}

#[derive(Serialize)]
struct OtherData {
    exporter: String,
    unit: String,
    event: Option<String>,
    time_axis: &'static str,
}

#[derive(Serialize)]
struct Event<'a> {
    name: std::borrow::Cow<'a, str>,
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args>,
}

#[derive(Serialize)]
struct Args {
    name: String,
}

/// Writes `profile` as a Chrome trace.
pub fn write(profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    let timed = super::speedscope::unit(profile.meta) == "nanoseconds";
    // Microseconds per unit of weight.
    let scale = if timed { 0.001 } else { 1.0 };
    let name = profile.name.unwrap_or("kflame");
    let mut events: Vec<(usize, Event<'_>)> = Vec::new();
    let meta = |what: &'static str, value: &str| Event {
        name: what.into(),
        ph: "M",
        cat: None,
        ts: 0.0,
        dur: None,
        pid: 1,
        tid: 1,
        args: Some(Args { name: value.to_string() }),
    };
    events.push((0, meta("process_name", name)));
    events.push((0, meta("thread_name", profile.meta.event.as_deref().unwrap_or("stacks"))));
    let mut open: Open<'_> = Vec::new();
    let mut now = crate::fold::Weight::ZERO;
    let stacks = profile.stacks.in_output_order();
    for (stack, weight) in stacks {
        let frames: Vec<_> = super::frames(stack).collect();
        let common = open.iter().zip(&frames).take_while(|((a, _), b)| a == *b).count();
        close(&mut open, common, now, scale, &mut events);
        for f in frames.into_iter().skip(common) {
            open.push((f, now));
        }
        now += weight;
    }
    close(&mut open, 0, now, scale, &mut events);
    // Parents before their children, in time order.
    events.sort_by(|a, b| a.1.ts.total_cmp(&b.1.ts).then(a.0.cmp(&b.0)));
    let trace = Trace {
        trace_events: events.into_iter().map(|(_, e)| e).collect(),
        display_time_unit: if timed { "ns" } else { "ms" },
        other_data: OtherData {
            exporter: format!("kflame {}", env!("CARGO_PKG_VERSION")),
            unit: profile.meta.unit.to_string(),
            event: profile.meta.event.clone(),
            time_axis: if timed {
                "the weights' nanoseconds, stacks placed one after the other (gaps are not kept)"
            } else {
                "no time: one microsecond per unit of weight, stacks placed one after the other"
            },
        },
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, &trace).map_err(std::io::Error::from)?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}

type Open<'a> = Vec<(std::borrow::Cow<'a, str>, crate::fold::Weight)>;

/// Closes the open frames above the first `keep` at `now`, each a complete event.
fn close<'a>(
    open: &mut Open<'a>,
    keep: usize,
    now: crate::fold::Weight,
    scale: f64,
    events: &mut Vec<(usize, Event<'a>)>,
) {
    while open.len() > keep {
        let depth = open.len();
        let Some((name, start)) = open.pop() else { break };
        events.push((
            depth,
            Event {
                name,
                ph: "X",
                cat: Some("stack"),
                ts: start.as_f64() * scale,
                dur: Some(now.saturating_sub(start).as_f64() * scale),
                pid: 1,
                tid: 1,
                args: None,
            },
        ));
    }
}
