//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`, the
//! schema the `speedscope` npm package ships as `dist/release/file-format-schema.json`):
//! one `sampled` profile, frames shared and deduplicated by name, one sample per stack
//! (summed stacks sorted, time-ordered stacks in order) weighted in the profile's unit.
//!
//! Units: `bytes` for bytes, `nanoseconds` for nanoseconds and for the periods of
//! `cpu-clock`/`task-clock` (nanoseconds of CPU), `none` for sample counts and anything
//! else. Weights are JSON numbers (speedscope reads them as doubles: exact up to 2^53).

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;

use super::{ExportError, Profile};
use crate::fold::Unit;

/// The `$schema` of every speedscope file.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    exporter: String,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: u32,
    shared: Shared,
    profiles: [Sampled<'a>; 1],
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
}

#[derive(Serialize)]
struct Sampled<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u32,
    #[serde(rename = "endValue")]
    end_value: serde_json::Number,
    samples: Vec<Vec<u32>>,
    weights: Vec<serde_json::Number>,
}

/// The speedscope unit of kflame's unit and event.
pub fn unit(meta: &crate::fold::Meta) -> &'static str {
    match &meta.unit {
        Unit::Bytes => "bytes",
        Unit::Nanoseconds => "nanoseconds",
        Unit::Period if super::sample_type(meta).1 == "nanoseconds" => "nanoseconds",
        _ => "none",
    }
}

/// A weight as a JSON number: an integer when whole (exact in the file), else a decimal.
fn number(w: crate::fold::Weight) -> serde_json::Number {
    if w.is_integer() {
        let (whole, _) = w.to_parts();
        if let Ok(v) = u64::try_from(whole) {
            return serde_json::Number::from(v);
        }
    }
    serde_json::Number::from_f64(w.as_f64()).unwrap_or_else(|| serde_json::Number::from(0u32))
}

/// Writes `profile` as a speedscope file.
pub fn write(profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut frames = Vec::new();
    let mut samples = Vec::new();
    let mut weights = Vec::new();
    for (stack, weight) in profile.stacks.in_output_order() {
        let mut sample = Vec::new();
        for name in super::frames(stack) {
            let next = frames.len() as u32;
            let id = *index.entry(name.to_string()).or_insert_with(|| {
                frames.push(Frame { name: name.to_string() });
                next
            });
            sample.push(id);
        }
        samples.push(sample);
        weights.push(number(weight));
    }
    let name = profile.name.unwrap_or("kflame");
    let file = File {
        schema: SCHEMA,
        exporter: format!("kflame {}", env!("CARGO_PKG_VERSION")),
        name,
        active_profile_index: 0,
        shared: Shared { frames },
        profiles: [Sampled {
            kind: "sampled",
            name: profile.meta.event.as_deref().unwrap_or(name),
            unit: unit(profile.meta),
            start_value: 0,
            end_value: number(profile.stacks.total()),
            samples,
            weights,
        }],
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, &file).map_err(std::io::Error::from)?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}
