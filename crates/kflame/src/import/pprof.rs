//! pprof `profile.proto` (google/pprof), gzipped (`.pb.gz`, what Go writes) or not.
//!
//! The sample type read is the one asked for by name ([`read_sample_type`], `kflame collapse
//! --sample-type`: its type, `alloc_space`, or type and unit, `alloc_space/bytes`), else the
//! profile's `default_sample_type`, else the last one (as `go tool pprof` chooses: `cpu` of a
//! Go CPU profile, `inuse_space` of a heap profile without a default). A name the profile
//! does not have is an error listing the ones it has.
//! Each sample's locations (leaf first) become frames root first, a location's inlined
//! lines caller first; a location without lines is named by its address. Units: `count` of
//! `samples` are samples, other counts events, `bytes` bytes, `nanoseconds` (and micro-,
//! milli- and seconds, converted) nanoseconds; a `kflame unit=... event=...` comment (what
//! [`crate::export::pprof`] writes) gives the exact unit and event back.
//!
//! Skipped and counted (with the sample's index): samples with a negative value (a
//! difference profile), a value count other than the sample types', an unknown location or
//! function id. Zero-valued samples are left out. A profile without samples, without sample
//! types, or not decodable is an error.

use std::collections::HashMap;
use std::io::Read;

use prost::Message;

use super::{Builder, ImportError, Imported, Limits, Part};
use crate::fold::{Meta, Unit, Weight};
use crate::proto::pprof as pb;

/// Confidence 0-100 that `head` (the start of a decompressed input, possibly cut anywhere)
/// is a pprof profile: every field up to the end of `head` is one a `Profile` has, with its
/// wire type (Go writes them out of number order), at least three of them, and one is a
/// `sample_type` holding a `ValueType`.
pub fn detect(head: &[u8]) -> u8 {
    let mut fields = Fields { buf: head };
    let mut n = 0;
    let mut sample_type = false;
    while let Some(f) = fields.next() {
        let Ok((number, wire, body)) = f else { return 0 };
        let ok = match number {
            1..=6 | 11 => wire == 2,
            7..=10 | 12 | 14 | 15 => wire == 0,
            13 => wire == 0 || wire == 2,
            _ => false,
        };
        if !ok {
            return 0;
        }
        sample_type |= number == 1 && value_type(body);
        n += 1;
    }
    if n >= 3 && sample_type { 90 } else { 0 }
}

/// True when `body` (possibly cut short) looks like a `ValueType`: varint fields 1 and 2.
fn value_type(body: &[u8]) -> bool {
    let mut f = Fields { buf: body };
    let mut any = false;
    while let Some(x) = f.next() {
        match x {
            Ok((1 | 2, 0, _)) => any = true,
            _ => return false,
        }
    }
    any
}

/// A field: its number, wire type and body.
pub(crate) type Field<'a> = (u64, u8, &'a [u8]);

/// The top-level fields of a protobuf message: (number, wire type, body); the last one may
/// be cut short (a head), which ends the walk without an error.
pub(crate) struct Fields<'a> {
    pub(crate) buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn next(&mut self) -> Option<Result<Field<'a>, ()>> {
        if self.buf.is_empty() {
            return None;
        }
        let Some((key, rest)) = varint(self.buf) else {
            self.buf = &[];
            return None;
        };
        let (number, wire) = (key >> 3, (key & 7) as u8);
        if number == 0 {
            return Some(Err(()));
        }
        let (body, rest) = match wire {
            0 => match varint(rest) {
                Some((_, r)) => (&rest[..rest.len() - r.len()], r),
                None => (rest, &[][..]),
            },
            1 => rest.split_at_checked(8).unwrap_or((rest, &[])),
            2 => match varint(rest) {
                Some((len, r)) => match usize::try_from(len).ok().and_then(|l| r.split_at_checked(l)) {
                    Some(x) => x,
                    None => (r, &[][..]),
                },
                None => (rest, &[][..]),
            },
            5 => rest.split_at_checked(4).unwrap_or((rest, &[])),
            _ => return Some(Err(())),
        };
        self.buf = rest;
        Some(Ok((number, wire, body)))
    }
}

fn varint(buf: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, &buf[i + 1..]));
        }
    }
    None
}

/// `bytes` decompressed when they are gzip, at most `limit` bytes.
pub(crate) fn gunzip(bytes: &[u8], limit: usize) -> Result<std::borrow::Cow<'_, [u8]>, ImportError> {
    if !bytes.starts_with(b"\x1f\x8b") {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ImportError::Gzip(e.to_string()))?;
    if out.len() > limit {
        return Err(ImportError::TooLargeDecompressed(limit));
    }
    Ok(std::borrow::Cow::Owned(out))
}

/// Reads a pprof profile (gzipped or not), its default sample type.
pub fn read(bytes: &[u8], time_order: bool, limits: &Limits) -> Result<Imported, ImportError> {
    read_sample_type(bytes, time_order, None, limits)
}

/// Reads a pprof profile (gzipped or not), the sample type named `sample_type` (`type` or
/// `type/unit`) when given, else the default one.
pub fn read_sample_type(
    bytes: &[u8],
    time_order: bool,
    sample_type: Option<&str>,
    limits: &Limits,
) -> Result<Imported, ImportError> {
    let bytes = gunzip(bytes, limits.max_decompressed)?;
    let p = pb::Profile::decode(&*bytes)
        .map_err(|e| ImportError::Protobuf { what: "pprof Profile", detail: e.to_string() })?;
    let strings = &p.string_table;
    let string = |i: i64| usize::try_from(i).ok().and_then(|i| strings.get(i)).map(String::as_str);
    if p.sample_type.is_empty() {
        return Err(ImportError::Invalid("the profile declares no sample type".into()));
    }
    if p.sample.is_empty() {
        return Err(ImportError::NoSamples);
    }
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (string(t.r#type).unwrap_or(""), string(t.unit).unwrap_or("")))
        .collect();
    let default = string(p.default_sample_type)
        .filter(|d| !d.is_empty())
        .and_then(|d| types.iter().position(|(t, _)| t == &d))
        .unwrap_or(types.len() - 1);
    let chosen = match sample_type {
        None => default,
        Some(asked) => types
            .iter()
            .position(|&(t, u)| t == asked || format!("{t}/{u}") == asked)
            .ok_or_else(|| ImportError::SampleType {
                asked: asked.to_string(),
                available: types.iter().map(|(t, u)| format!("{t}/{u}")).collect::<Vec<_>>().join(", "),
                default: types[default].0.to_string(),
            })?,
    };
    let (ty, unit) = types[chosen];
    let (meta, scale) = match p.comment.iter().filter_map(|&c| string(c)).find_map(kflame_meta) {
        Some(meta) => (meta, 1),
        None => meta_of(ty, unit),
    };

    let functions: HashMap<u64, &str> =
        p.function.iter().map(|f| (f.id, string(f.name).unwrap_or(""))).collect();
    let locations: HashMap<u64, &pb::Location> = p.location.iter().map(|l| (l.id, l)).collect();
    let mut b = Builder::new(time_order, limits);
    // Each location's frames are made once, each distinct list of locations into a stack
    // once: samples repeating them cost a lookup.
    let mut parts: HashMap<u64, Part<u64>> = HashMap::new();
    let mut stacks: HashMap<&[u64], Option<u32>> = HashMap::new();
    let mut buf = Vec::new();
    'samples: for (i, s) in p.sample.iter().enumerate() {
        let index = i as u64 + 1;
        b.tick()?;
        if s.value.len() != types.len() {
            let n = types.len();
            b.diag.skip("wrong value count", index, || format!("{n} values, one per sample type"));
            continue;
        }
        let v = s.value[chosen];
        if v < 0 {
            b.diag.skip("negative value", index, || {
                format!("a value of at least 0, found {v} (a difference profile? read each side instead)")
            });
            continue;
        }
        if v == 0 {
            continue;
        }
        let weight = Weight::from_u64(v as u64).saturating_mul(scale);
        let slot = match stacks.get(&s.location_id[..]) {
            Some(&slot) => slot,
            None => {
                let mut len = 0usize;
                for id in s.location_id.iter().rev() {
                    let part = match parts.get(id) {
                        Some(part) => part,
                        None => {
                            let Some(loc) = locations.get(id) else {
                                b.diag.skip("unknown location", index, || {
                                    format!("a location id of the profile, found {id}")
                                });
                                continue 'samples;
                            };
                            let part = location_part(loc, &functions, &mut b)?;
                            parts.entry(*id).or_insert(part)
                        }
                    };
                    match part {
                        Part::Bad(f) => {
                            let f = *f;
                            b.diag.skip("unknown function", index, || {
                                format!("a function id of the profile, found {f}")
                            });
                            continue 'samples;
                        }
                        Part::Long(n) => len = len.saturating_add(n + 1),
                        Part::Text(t) => len = len.saturating_add(t.len() + 1),
                    }
                }
                let slot = if len.saturating_sub(1) > b.max_stack() {
                    None
                } else {
                    buf.clear();
                    for id in s.location_id.iter().rev() {
                        if let Some(Part::Text(t)) = parts.get(id) {
                            if !buf.is_empty() {
                                buf.push(super::SEP);
                            }
                            buf.extend_from_slice(t);
                        }
                    }
                    Some(b.intern(&buf)?)
                };
                stacks.insert(&s.location_id, slot);
                slot
            }
        };
        match slot {
            Some(slot) => b.add(slot, weight)?,
            None => b.too_long(index),
        }
    }
    let (stacks, diag) = b.finish();
    Ok(Imported { stacks, meta, diag })
}

/// The frames of `loc`: its lines caller first, or its address when it has none; its length
/// is known before it is built, so that a location longer than a stack costs no text.
fn location_part(
    loc: &pb::Location,
    functions: &HashMap<u64, &str>,
    b: &mut Builder,
) -> Result<Part<u64>, ImportError> {
    super::location_part(b, &loc.line, loc.address, |line| {
        functions.get(&line.function_id).copied().ok_or(line.function_id)
    })
}

/// The unit and event of a `kflame unit=U event=E` comment.
fn kflame_meta(comment: &str) -> Option<Meta> {
    let rest = comment.strip_prefix(crate::export::pprof::COMMENT_PREFIX)?;
    let rest = rest.strip_prefix("unit=")?;
    let (unit, event) = match rest.split_once(" event=") {
        Some((u, e)) => (u, Some(e.to_string())),
        None => (rest, None),
    };
    Some(Meta { unit: Unit::from_name(unit), event })
}

/// kflame's unit and event for a pprof sample type, and the factor that turns its values
/// into that unit.
pub(crate) fn meta_of(ty: &str, unit: &str) -> (Meta, u64) {
    let event = if ty.is_empty() { None } else { Some(ty.to_string()) };
    let (unit, scale) = match unit {
        "count" | "" if ty == "samples" || ty.is_empty() => return (Meta::with_unit(Unit::Samples), 1),
        "count" => (Unit::Events, 1),
        "bytes" => (Unit::Bytes, 1),
        "nanoseconds" => (Unit::Nanoseconds, 1),
        "microseconds" => (Unit::Nanoseconds, 1_000),
        "milliseconds" => (Unit::Nanoseconds, 1_000_000),
        "seconds" => (Unit::Nanoseconds, 1_000_000_000),
        other => (Unit::Other(other.to_string()), 1),
    };
    (Meta { unit, event }, scale)
}
