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

use prost::Message;

use super::{Builder, ImportError, Imported, Limits};
use crate::fold::{Meta, Unit, Weight};
use crate::proto::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use crate::proto::opentelemetry::proto::common::v1::any_value;

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
        let mut frames: Vec<std::borrow::Cow<'_, str>> = Vec::new();
        // In time order: (time, sample, weight) of each timed observation, added at the end.
        let mut timed: Vec<(u64, usize, Weight)> = Vec::new();
        let mut timed_stacks: Vec<(u64, Vec<std::borrow::Cow<'_, str>>)> = Vec::new();
        'samples: for s in &p.samples {
            index += 1;
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
            let bad = |what: &str, i: i32| format!("an index into the {what} table, found {i}");
            let Some(stack) = usize::try_from(s.stack_index).ok().and_then(|i| d.stack_table.get(i)) else {
                let i = s.stack_index;
                b.diag.skip("bad index", index, || bad("stack", i));
                continue;
            };
            frames.clear();
            if several {
                frames.push(label.as_str().into());
            }
            for &li in stack.location_indices.iter().rev() {
                let Some(loc) = usize::try_from(li).ok().and_then(|i| d.location_table.get(i)) else {
                    b.diag.skip("bad index", index, || bad("location", li));
                    continue 'samples;
                };
                for line in loc.lines.iter().rev() {
                    let f = usize::try_from(line.function_index).ok().and_then(|i| d.function_table.get(i));
                    let Some(name) = f.and_then(|f| string(f.name_strindex)) else {
                        let fi = line.function_index;
                        b.diag.skip("bad index", index, || bad("function or string", fi));
                        continue 'samples;
                    };
                    frames.push(name.into());
                }
                if loc.lines.is_empty() {
                    frames.push(format!("0x{:x}", loc.address).into());
                }
            }
            if time_order && n_times > 0 {
                let k = timed_stacks.len();
                timed_stacks.push((index, frames.clone()));
                timed.extend(s.timestamps_unix_nano.iter().enumerate().map(|(i, &t)| (t, k, value(i))));
                continue;
            }
            b.add(index, frames.iter().map(|f| &**f), weight)?;
        }
        // Stable: observations at the same time keep their file order.
        timed.sort_by_key(|&(t, _, _)| t);
        for (_, k, w) in timed {
            let (index, frames) = &timed_stacks[k];
            if !w.is_zero() {
                b.add(*index, frames.iter().map(|f| &**f), w)?;
            }
        }
    }
    Ok(Imported { stacks: b.stacks, meta: meta.unwrap_or_default(), diag: b.diag })
}
