//! OpenTelemetry profiles: an OTLP `ExportProfilesServiceRequest` of the development
//! profiles signal (what [`crate::export::otlp`] writes, and the body an OTLP/HTTP profiles
//! endpoint takes), protobuf, gzipped or not.
//!
//! Every profile of every resource and scope is read; with several, each gets a root frame
//! `profile N` (its resource's `service.name` is not looked at). Units as for pprof
//! ([`super::pprof`]), or exactly as written by kflame (its `kflame.unit` / `kflame.event`
//! profile attributes); all profiles must share one. A sample weighs the sum of its values
//! (one per observation), or, as the specification says for samples without values, one per
//! time stamp; values and time stamps of different counts are skipped and counted. In time
//! order (`collapse --time-order`), samples with time stamps give their observations in the
//! order of their times (a flame chart of when they happened), after the samples without
//! time stamps of the same profile (in file order); summed, the time stamps are not needed.
//! Stacks list their locations leaf first; a location's lines are innermost first. Samples
//! with a negative value or an index past a table are skipped and counted.

use std::collections::HashMap;

use prost::Message;

use super::{Builder, ImportError, Imported, Limits, Part};
use crate::fold::{Meta, Unit, Weight};
use crate::proto::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use crate::proto::opentelemetry::proto::common::v1::any_value;
use crate::proto::opentelemetry::proto::profiles::v1development::{Location, ProfilesDictionary};

/// Confidence 0-100 that `head` (decompressed, possibly cut anywhere) is an OTLP profiles
/// export request: its first field is `resource_profiles` (1) or `dictionary` (2) holding
/// only length-delimited fields, and every top-level field up to the end of `head` is one
/// of those two.
pub fn detect(head: &[u8]) -> u8 {
    let mut fields = super::pprof::Fields { buf: head };
    let mut n = 0;
    while let Some(f) = fields.next() {
        let Ok((number, wire, body)) = f else { return 0 };
        if !matches!(number, 1 | 2) || wire != 2 {
            return 0;
        }
        if n == 0 {
            let mut inner = super::pprof::Fields { buf: body };
            let max = if number == 1 { 3 } else { 7 };
            let mut any = false;
            while let Some(x) = inner.next() {
                match x {
                    Ok((k, 2, _)) if (1..=max).contains(&k) => any = true,
                    _ => return 0,
                }
            }
            if !any {
                return 0;
            }
        }
        n += 1;
    }
    if n >= 1 { 85 } else { 0 }
}

/// Reads an OTLP profiles export request (gzipped or not).
pub fn read(bytes: &[u8], time_order: bool, limits: &Limits) -> Result<Imported, ImportError> {
    let bytes = super::pprof::gunzip(bytes, limits.max_decompressed)?;
    let req = ExportProfilesServiceRequest::decode(&*bytes).map_err(|e| ImportError::Protobuf {
        what: "OTLP ExportProfilesServiceRequest",
        detail: e.to_string(),
    })?;
    let Some(d) = req.dictionary.as_ref() else {
        return Err(ImportError::Invalid("the request has no dictionary".into()));
    };
    let string = |i: i32| usize::try_from(i).ok().and_then(|i| d.string_table.get(i)).map(String::as_str);
    let profiles: Vec<_> =
        req.resource_profiles.iter().flat_map(|r| &r.scope_profiles).flat_map(|s| &s.profiles).collect();
    if profiles.iter().all(|p| p.samples.is_empty()) {
        return Err(ImportError::NoSamples);
    }
    let mut b = Builder::new(time_order, limits);
    let mut parts: HashMap<i32, Part<i32>> = HashMap::new();
    let mut meta: Option<Meta> = None;
    let several = profiles.len() > 1;
    let mut index = 0u64;
    for (pi, p) in profiles.iter().enumerate() {
        let label = format!("profile {}", pi + 1);
        // kflame's own attributes give the exact unit and event back.
        let attr = |key: &str| {
            p.attribute_indices.iter().find_map(|&i| {
                let a = d.attribute_table.get(usize::try_from(i).ok()?)?;
                if string(a.key_strindex)? != key {
                    return None;
                }
                match a.value.as_ref()?.value.as_ref()? {
                    any_value::Value::StringValue(s) => Some(s.clone()),
                    _ => None,
                }
            })
        };
        let (ty, unit) = p.sample_type.as_ref().map_or(("", ""), |t| {
            (string(t.type_strindex).unwrap_or(""), string(t.unit_strindex).unwrap_or(""))
        });
        let (m, scale) = match attr("kflame.unit") {
            Some(u) => (Meta { unit: Unit::from_name(&u), event: attr("kflame.event") }, 1),
            None => super::pprof::meta_of(ty, unit),
        };
        match &meta {
            None => meta = Some(m),
            Some(first) if first.unit != m.unit => {
                return Err(ImportError::Invalid(format!(
                    "profiles have different units ({} and {}); their weights cannot be added",
                    first.unit, m.unit
                )));
            }
            _ => {}
        }
        // Each stack of the dictionary is made once per profile (its root frame differs
        // between profiles), each location once: samples repeating them cost a lookup.
        let mut slots: HashMap<i32, Option<u32>> = HashMap::new();
        // In time order: (time, sample's index, slot, weight) of each timed observation,
        // added at the end.
        let mut timed: Vec<(u64, u64, u32, Weight)> = Vec::new();
        for s in &p.samples {
            index += 1;
            b.tick()?;
            let (n_values, n_times) = (s.values.len(), s.timestamps_unix_nano.len());
            if n_values > 0 && n_times > 0 && n_values != n_times {
                b.diag.skip("values and time stamps differ", index, || {
                    format!("as many values as time stamps, found {n_values} and {n_times}")
                });
                continue;
            }
            if let Some(&v) = s.values.iter().find(|&&v| v < 0) {
                b.diag.skip("negative value", index, || format!("a value of at least 0, found {v}"));
                continue;
            }
            let value = |i: usize| match s.values.get(i) {
                Some(&v) => Weight::from_u64(v as u64).saturating_mul(scale),
                None => Weight::ONE,
            };
            let weight =
                if n_values > 0 { (0..n_values).map(value).sum() } else { Weight::from_u64(n_times as u64) };
            if weight.is_zero() {
                continue;
            }
            let slot = match slots.get(&s.stack_index) {
                Some(&slot) => slot,
                None => {
                    match stack_slot(d, s.stack_index, several.then_some(label.as_str()), &mut parts, &mut b)?
                    {
                        Ok(slot) => {
                            slots.insert(s.stack_index, slot);
                            slot
                        }
                        Err((what, i)) => {
                            b.diag.skip("bad index", index, || {
                                format!("an index into the {what} table, found {i}")
                            });
                            continue;
                        }
                    }
                }
            };
            let Some(slot) = slot else {
                b.too_long(index);
                continue;
            };
            if time_order && n_times > 0 {
                timed.extend(
                    s.timestamps_unix_nano.iter().enumerate().map(|(i, &t)| (t, index, slot, value(i))),
                );
                continue;
            }
            b.add(slot, weight)?;
        }
        // Stable: observations at the same time keep their file order.
        timed.sort_by_key(|&(t, _, _, _)| t);
        for (_, _, slot, w) in timed {
            if !w.is_zero() {
                b.add(slot, w)?;
            }
        }
    }
    let (stacks, diag) = b.finish();
    Ok(Imported { stacks, meta: meta.unwrap_or_default(), diag })
}

/// The slot of stack `stack_index` of the dictionary under the root frame `label`, or
/// `None` when it is longer than a stack may be; `Err((table, index))` for an index past a
/// table. Locations are made once, into `parts`.
#[allow(clippy::type_complexity)]
fn stack_slot(
    d: &ProfilesDictionary,
    stack_index: i32,
    label: Option<&str>,
    parts: &mut HashMap<i32, Part<i32>>,
    b: &mut Builder,
) -> Result<Result<Option<u32>, (&'static str, i32)>, ImportError> {
    let Some(stack) = usize::try_from(stack_index).ok().and_then(|i| d.stack_table.get(i)) else {
        return Ok(Err(("stack", stack_index)));
    };
    let mut len = label.map_or(0, |l| super::frame_len(l) + 1);
    for &li in stack.location_indices.iter().rev() {
        let part = match parts.entry(li) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let Some(loc) = usize::try_from(li).ok().and_then(|i| d.location_table.get(i)) else {
                    return Ok(Err(("location", li)));
                };
                e.insert(location_part(d, loc, b)?)
            }
        };
        match part {
            Part::Bad(fi) => return Ok(Err(("function or string", *fi))),
            Part::Long(n) => len = len.saturating_add(*n + 1),
            Part::Text(t) => len = len.saturating_add(t.len() + 1),
        }
    }
    if len.saturating_sub(1) > b.max_stack() {
        return Ok(Ok(None));
    }
    let mut buf = Vec::with_capacity(len);
    if let Some(l) = label {
        super::push_next(&mut buf, l);
    }
    for li in stack.location_indices.iter().rev() {
        if let Some(Part::Text(t)) = parts.get(li) {
            if !buf.is_empty() {
                buf.push(super::SEP);
            }
            buf.extend_from_slice(t);
        }
    }
    Ok(Ok(Some(b.intern(&buf)?)))
}

/// The frames of `loc`: its lines caller first, or its address when it has none; its length
/// is known before it is built, so that a location longer than a stack costs no text.
fn location_part(d: &ProfilesDictionary, loc: &Location, b: &mut Builder) -> Result<Part<i32>, ImportError> {
    super::location_part(b, &loc.lines, loc.address, |line| {
        let f = usize::try_from(line.function_index).ok().and_then(|i| d.function_table.get(i));
        let name = f.and_then(|f| usize::try_from(f.name_strindex).ok().and_then(|i| d.string_table.get(i)));
        name.map(String::as_str).ok_or(line.function_index)
    })
}
