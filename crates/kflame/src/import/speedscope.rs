//! speedscope's JSON file format (`$schema`
//! `https://www.speedscope.app/file-format-schema.json`): `sampled` profiles (stacks of
//! frame indices with weights) and `evented` ones (frames opened and closed at values: each
//! stack weighs the span it was on top).
//!
//! Units: `none` is sample counts without a declared unit (as folded files without a header), `bytes` bytes, `nanoseconds` nanoseconds, `microseconds`,
//! `milliseconds` and `seconds` are converted to nanoseconds. Every profile of a file must
//! have the same unit. One profile gives its stacks as they are; several get their
//! profile's name as a root frame, so that threads or processes stay apart, and so do the
//! profiles of a file kflame wrote one per process (its `exporter` ends in
//! [`PER_PROCESS`]) even when there is one: what was the first frame of each stack is again.
//!
//! Errors: another `$schema`, JSON that is not this structure, a frame index past the
//! shared frames, a negative or non-finite weight, unbalanced events, no samples at all.

use std::collections::HashMap;

use serde::Deserialize;

use super::{Builder, ImportError, Imported, Limits, weight_of_f64};
use crate::export::speedscope::{PER_PROCESS, SCHEMA};
use crate::fold::{Meta, Unit, Weight};

/// Confidence 0-100 that `head` (the start of an input) is a speedscope file: JSON naming
/// speedscope's schema in its first 4 KiB.
pub fn detect(head: &[u8]) -> u8 {
    let start = head.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(head.len());
    if head.get(start) != Some(&b'{') {
        return 0;
    }
    let window = &head[start..head.len().min(start + 4096)];
    let has = |needle: &[u8]| window.windows(needle.len()).any(|w| w == needle);
    if has(b"\"$schema\"") && has(b"speedscope") { 100 } else { 0 }
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "$schema")]
    schema: String,
    #[serde(default)]
    exporter: Option<String>,
    shared: Shared,
    profiles: Vec<Profile>,
}

#[derive(Deserialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Deserialize)]
struct Frame {
    name: String,
}

/// Both profile types in one structure (what `type` says decides which fields are used),
/// so that serde does not buffer the profile to find its tag.
#[derive(Deserialize)]
struct Profile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    unit: String,
    #[serde(default)]
    samples: Option<Vec<Vec<u64>>>,
    #[serde(default)]
    weights: Option<Vec<f64>>,
    #[serde(default)]
    events: Option<Vec<Event>>,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    frame: u64,
    at: f64,
}

/// kflame's unit for a speedscope unit, and the factor to it.
fn unit(u: &str) -> Result<(Unit, f64), ImportError> {
    Ok(match u {
        "none" => (Unit::Unspecified, 1.0),
        "bytes" => (Unit::Bytes, 1.0),
        "nanoseconds" => (Unit::Nanoseconds, 1.0),
        "microseconds" => (Unit::Nanoseconds, 1e3),
        "milliseconds" => (Unit::Nanoseconds, 1e6),
        "seconds" => (Unit::Nanoseconds, 1e9),
        other => return Err(ImportError::Invalid(format!("unknown speedscope unit {other:?}"))),
    })
}

/// Reads a speedscope file.
pub fn read(bytes: &[u8], time_order: bool, limits: &Limits) -> Result<Imported, ImportError> {
    // The schema first, so that a file of another version says so rather than failing on a
    // field it lacks.
    #[derive(Deserialize)]
    struct Head {
        #[serde(rename = "$schema")]
        schema: Option<String>,
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|e| ImportError::Json(e.to_string()))?;
    match head.schema {
        Some(s) if s == SCHEMA => {}
        Some(found) => return Err(ImportError::Schema { found, expected: SCHEMA }),
        None => return Err(ImportError::Json("no `$schema` (speedscope files name theirs)".into())),
    }
    let file: File = serde_json::from_slice(bytes).map_err(|e| ImportError::Json(e.to_string()))?;
    debug_assert_eq!(file.schema, SCHEMA);
    let names: Vec<&str> = file.shared.frames.iter().map(|f| f.name.as_str()).collect();
    let mut b = Builder::new(time_order, limits);
    let mut meta: Option<(Unit, String)> = None;
    let several = file.profiles.len() > 1
        || file.exporter.as_deref().is_some_and(|e| e.starts_with("kflame ") && e.ends_with(PER_PROCESS));
    let mut index = 0u64;
    for (pi, p) in file.profiles.iter().enumerate() {
        let label = if p.name.is_empty() { format!("profile {}", pi + 1) } else { p.name.clone() };
        let (u, scale) = unit(&p.unit)?;
        match &meta {
            None => meta = Some((u.clone(), label.clone())),
            Some((first, from)) if *first != u => {
                return Err(ImportError::Invalid(format!(
                    "profiles {from:?} and {label:?} have different units ({first} and {u}); their \
                     weights cannot be added"
                )));
            }
            _ => {}
        }
        let frame = |i: u64| {
            usize::try_from(i).ok().and_then(|i| names.get(i).copied()).ok_or_else(|| {
                ImportError::Invalid(format!(
                    "profile {label:?}: frame index {i}, but the file has {} shared frames",
                    names.len()
                ))
            })
        };
        let weigh = |v: f64| {
            weight_of_f64(v * scale).ok_or_else(|| {
                ImportError::Invalid(format!(
                    "profile {label:?}: weight {v:?} is not a finite non-negative number of at most {:e}",
                    u128::MAX as f64 / 1e9 / scale
                ))
            })
        };
        let root = if several { super::frame_len(&label) } else { 0 };
        // The text of the stack of frames `f` (root first), or `None` when longer than a
        // stack may be: the length is known before the text is built.
        let build =
            |b: &mut Builder, frames: &mut dyn Iterator<Item = &str>| -> Result<Option<u32>, ImportError> {
                let names: Vec<&str> = frames.collect();
                let len = names.iter().fold(root, |n, f| n.saturating_add(super::frame_len(f) + 1));
                if len.saturating_sub(1) > b.max_stack() {
                    return Ok(None);
                }
                let mut buf = Vec::with_capacity(len);
                if several {
                    super::push_next(&mut buf, &label);
                }
                for f in names {
                    super::push_next(&mut buf, f);
                }
                b.intern(&buf).map(Some)
            };
        match p.kind.as_str() {
            "sampled" => {
                let samples = p.samples.as_deref().unwrap_or(&[]);
                let weights = p.weights.as_deref();
                if let Some(w) = weights
                    && w.len() != samples.len()
                {
                    return Err(ImportError::Invalid(format!(
                        "profile {label:?}: {} samples but {} weights",
                        samples.len(),
                        w.len()
                    )));
                }
                // Each distinct stack is made once: samples repeating it cost a lookup.
                let mut slots: HashMap<&[u64], Option<u32>> = HashMap::new();
                for (si, s) in samples.iter().enumerate() {
                    index += 1;
                    b.tick()?;
                    let w = match weights {
                        Some(w) => weigh(w[si])?,
                        None => Weight::ONE,
                    };
                    if w.is_zero() {
                        continue;
                    }
                    let slot = match slots.get(&s[..]) {
                        Some(&slot) => slot,
                        None => {
                            let names = s.iter().map(|&f| frame(f)).collect::<Result<Vec<_>, _>>()?;
                            let slot = build(&mut b, &mut names.into_iter())?;
                            slots.insert(s, slot);
                            slot
                        }
                    };
                    match slot {
                        Some(slot) => b.add(slot, w)?,
                        None => b.too_long(index),
                    }
                }
            }
            "evented" => {
                // The open frames as nodes of a tree: (parent, frame) → node, each node made
                // once and its stack built once, whatever the depth and the repeats.
                struct Node {
                    parent: usize,
                    frame: u64,
                    len: usize,
                    slot: Option<Option<u32>>,
                }
                let mut nodes = vec![Node { parent: 0, frame: 0, len: root, slot: None }];
                let mut children: HashMap<(usize, u64), usize> = HashMap::new();
                let mut open: Vec<(u64, usize)> = Vec::new();
                let mut last: Option<f64> = None;
                for e in p.events.as_deref().unwrap_or(&[]) {
                    index += 1;
                    b.tick()?;
                    if let Some(t) = last
                        && let Some(&(_, top)) = open.last()
                        && e.at > t
                    {
                        let slot = match nodes[top].slot {
                            Some(slot) => slot,
                            None => {
                                let mut ids = Vec::new();
                                let mut n = top;
                                while n != 0 {
                                    ids.push(nodes[n].frame);
                                    n = nodes[n].parent;
                                }
                                let slot = if nodes[top].len > b.max_stack() {
                                    None
                                } else {
                                    let names =
                                        ids.iter().rev().map(|&f| frame(f)).collect::<Result<Vec<_>, _>>()?;
                                    build(&mut b, &mut names.into_iter())?
                                };
                                nodes[top].slot = Some(slot);
                                slot
                            }
                        };
                        let w = weigh(e.at - t)?;
                        match slot {
                            Some(slot) => b.add(slot, w)?,
                            None => b.too_long(index),
                        }
                    }
                    if last.is_some_and(|t| e.at < t) {
                        return Err(ImportError::Invalid(format!(
                            "profile {label:?}: event {index} at {:?} goes back in time",
                            e.at
                        )));
                    }
                    last = Some(e.at);
                    match e.kind.as_str() {
                        "O" => {
                            let name = frame(e.frame)?;
                            let parent = open.last().map_or(0, |&(_, n)| n);
                            let next = nodes.len();
                            let node = *children.entry((parent, e.frame)).or_insert(next);
                            if node == next {
                                let sep = usize::from(nodes[parent].len > 0);
                                let len = nodes[parent].len.saturating_add(sep + super::frame_len(name));
                                nodes.push(Node { parent, frame: e.frame, len, slot: None });
                            }
                            open.push((e.frame, node));
                        }
                        "C" => {
                            if open.pop().map(|(f, _)| f) != Some(e.frame) {
                                return Err(ImportError::Invalid(format!(
                                    "profile {label:?}: event {index} closes frame {} which is not the \
                                     innermost open frame",
                                    e.frame
                                )));
                            }
                        }
                        other => {
                            return Err(ImportError::Invalid(format!(
                                "profile {label:?}: event type {other:?}, expected \"O\" or \"C\""
                            )));
                        }
                    }
                }
            }
            other => {
                return Err(ImportError::Invalid(format!(
                    "profile {label:?}: type {other:?}, expected \"sampled\" or \"evented\""
                )));
            }
        }
    }
    let (stacks, diag) = b.finish();
    if stacks.is_empty() && diag.skipped() == 0 {
        return Err(ImportError::NoSamples);
    }
    let unit = meta.map(|(u, _)| u).unwrap_or_default();
    Ok(Imported { stacks, meta: Meta::with_unit(unit), diag })
}
