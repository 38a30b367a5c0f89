//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`, the
//! schema the `speedscope` npm package ships as `dist/release/file-format-schema.json`):
//! one `sampled` profile ([`write`]), or one per process ([`write_per_process`]: the first
//! frame of each stack, perf's comm or `comm-PID` with `kflame collapse --pid`, names the
//! profile and is left out of its samples), frames shared and deduplicated by name, one
//! sample per stack (summed stacks sorted, time-ordered stacks in order) weighted in the
//! profile's unit. Per-process files say so in their `exporter` (`kflame VERSION
//! per-process`), so that kflame reading one back puts each profile's name back as the root
//! frame even when there is only one process.
//!
//! Units: `bytes` for bytes, `nanoseconds` for nanoseconds and for the periods of
//! `cpu-clock`/`task-clock` (nanoseconds of CPU), `none` for sample counts and anything
//! else. Weights are JSON numbers (speedscope reads them as doubles: exact up to 2^53).

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;

use super::{ExportError, Profile};
use crate::fold::{Unit, Weight};

/// The `$schema` of every speedscope file.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// The end of the `exporter` of a file written by [`write_per_process`].
pub const PER_PROCESS: &str = " per-process";

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    exporter: String,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: u32,
    shared: Shared,
    profiles: Vec<Sampled<'a>>,
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
    name: std::borrow::Cow<'a, str>,
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
fn number(w: Weight) -> serde_json::Number {
    if w.is_integer() {
        let (whole, _) = w.to_parts();
        if let Ok(v) = u64::try_from(whole) {
            return serde_json::Number::from(v);
        }
    }
    serde_json::Number::from_f64(w.as_f64()).unwrap_or_else(|| serde_json::Number::from(0u32))
}

/// Writes `profile` as a speedscope file: one sampled profile.
pub fn write(profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    write_file(profile, false, out)
}

/// Writes `profile` as a speedscope file of one sampled profile per process: per distinct
/// first frame, in order of first appearance, named by it, its samples the rest of the stack
/// (empty for a stack of that frame alone).
pub fn write_per_process(profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    write_file(profile, true, out)
}

/// A profile being built: its name, samples, weights and total.
type Group<'a> = (std::borrow::Cow<'a, str>, Vec<Vec<u32>>, Vec<serde_json::Number>, Weight);

fn write_file(profile: &Profile<'_>, per_process: bool, out: &mut dyn Write) -> Result<(), ExportError> {
    let name = profile.name.unwrap_or("kflame");
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut frames = Vec::new();
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut group_of: HashMap<std::borrow::Cow<'_, str>, usize> = HashMap::new();
    if !per_process {
        let title = profile.meta.event.as_deref().unwrap_or(name);
        groups.push((title.into(), Vec::new(), Vec::new(), Weight::ZERO));
    }
    for (stack, weight) in profile.stacks.in_output_order() {
        let mut names = super::frames(stack);
        let g = if per_process {
            let process = names.next().unwrap_or_default();
            let next = groups.len();
            let g = *group_of.entry(process.clone()).or_insert(next);
            if g == next {
                groups.push((process, Vec::new(), Vec::new(), Weight::ZERO));
            }
            g
        } else {
            0
        };
        let mut sample = Vec::new();
        for name in names {
            let next = frames.len() as u32;
            let id = *index.entry(name.to_string()).or_insert_with(|| {
                frames.push(Frame { name: name.to_string() });
                next
            });
            sample.push(id);
        }
        let group = &mut groups[g];
        group.1.push(sample);
        group.2.push(number(weight));
        group.3 += weight;
    }
    if groups.is_empty() {
        // No stacks: one empty profile, as without per-process.
        groups.push((
            profile.meta.event.as_deref().unwrap_or(name).into(),
            Vec::new(),
            Vec::new(),
            Weight::ZERO,
        ));
    }
    let version = env!("CARGO_PKG_VERSION");
    let file = File {
        schema: SCHEMA,
        exporter: if per_process {
            format!("kflame {version}{PER_PROCESS}")
        } else {
            format!("kflame {version}")
        },
        name,
        active_profile_index: 0,
        shared: Shared { frames },
        profiles: groups
            .into_iter()
            .map(|(name, samples, weights, total)| Sampled {
                kind: "sampled",
                name,
                unit: unit(profile.meta),
                start_value: 0,
                end_value: number(total),
                samples,
                weights,
            })
            .collect(),
    };
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer(&mut w, &file).map_err(std::io::Error::from)?;
    w.write_all(b"\n")?;
    w.flush()?;
    Ok(())
}
