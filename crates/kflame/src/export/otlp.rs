//! OpenTelemetry profiles: an `ExportProfilesServiceRequest` of the development profiles
//! signal (opentelemetry-proto v1.11.0-16-gac2c4b5, commit ac2c4b5d,
//! `collector/profiles/v1development`, vendored in `crates/kflame/proto/opentelemetry/`),
//! protobuf, not compressed: what an OTLP/HTTP profiles endpoint takes as its body.
//!
//! One resource, one scope (`kflame` and its version), one profile whose sample type is
//! [`super::sample_type`] (`samples/count`, `cpu/nanoseconds`, `alloc_space/bytes`, ...);
//! the dictionary holds every string, function, location and stack once (entry 0 of each
//! table is the zero value, as the specification asks). One location per distinct frame
//! name; a stack lists its locations leaf first. Frames kflame marks as kernel (`_[k]`,
//! `collapse --kernel`) carry the attribute `profile.frame.type` = `kernel`. The unit and
//! event are kept in the profile's attribute `kflame.unit` / `kflame.event`.
//!
//! Samples: one per distinct stack with its summed value; in time order, one per run of
//! identical stacks. Where every sample kept its time
//! ([`crate::fold::OrderedStacks::sample_times`]: `kflame collapse --time-order` of
//! `perf script` output with time stamps or of perf.data, written straight to OTLP), one
//! sample per distinct stack carries every observation, a value and its time stamp in
//! `timestamps_unix_nano` each, in time order, and the profile's `time_unix_nano` and
//! `duration_nano` span them. The times are perf's: Unix time when recorded with
//! `perf record -k CLOCK_REALTIME`, else perf's default clock (time since boot). Folded text
//! keeps no time stamps, so `kflame flamegraph --format otlp` of a folded file writes none.

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use super::{ExportError, Profile};
use crate::fold::Stacks;
use crate::proto::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
use crate::proto::opentelemetry::proto::common::v1::{AnyValue, InstrumentationScope, any_value};
use crate::proto::opentelemetry::proto::profiles::v1development as pb;

/// Index of `s` in the string table, adding it once.
fn string(index: &mut HashMap<String, i32>, table: &mut Vec<String>, s: &str) -> i32 {
    if let Some(&i) = index.get(s) {
        return i;
    }
    let i = table.len() as i32;
    index.insert(s.to_string(), i);
    table.push(s.to_string());
    i
}

/// The profile as an OTLP export request.
pub fn request(profile: &Profile<'_>) -> Result<ExportProfilesServiceRequest, ExportError> {
    let mut strings: HashMap<String, i32> = HashMap::new();
    let mut d = pb::ProfilesDictionary {
        mapping_table: vec![pb::Mapping::default()],
        location_table: vec![pb::Location::default()],
        function_table: vec![pb::Function::default()],
        link_table: vec![pb::Link::default()],
        string_table: Vec::new(),
        attribute_table: vec![pb::KeyValueAndUnit::default()],
        stack_table: vec![pb::Stack::default()],
    };
    string(&mut strings, &mut d.string_table, "");
    let attr =
        |d: &mut pb::ProfilesDictionary, strings: &mut HashMap<String, i32>, key: &str, value: &str| {
            let key_strindex = string(strings, &mut d.string_table, key);
            d.attribute_table.push(pb::KeyValueAndUnit {
                key_strindex,
                value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_string())) }),
                unit_strindex: 0,
            });
            d.attribute_table.len() as i32 - 1
        };
    let kernel = attr(&mut d, &mut strings, "profile.frame.type", "kernel");
    // `kflame.unit` empty: no unit header (FlameGraph's counts), which reads back as such.
    let unit =
        if profile.meta.unit == crate::fold::Unit::Unspecified { "" } else { profile.meta.unit.name() };
    let mut profile_attrs = vec![attr(&mut d, &mut strings, "kflame.unit", unit)];
    if let Some(e) = &profile.meta.event {
        profile_attrs.push(attr(&mut d, &mut strings, "kflame.event", e));
    }
    let (t, u) = super::sample_type(profile.meta);
    let sample_type = pb::ValueType {
        type_strindex: string(&mut strings, &mut d.string_table, &t),
        unit_strindex: string(&mut strings, &mut d.string_table, &u),
    };
    let mut locations: HashMap<String, i32> = HashMap::new();
    let mut stacks: HashMap<Vec<i32>, i32> = HashMap::new();
    let mut samples = Vec::new();
    let times = match profile.stacks {
        Stacks::Ordered(o) => o.sample_times(),
        Stacks::Counts(_) => None,
    };
    // With times: the sample of each stack index.
    let mut sample_of: HashMap<i32, usize> = HashMap::new();
    for (run, (stack, weight)) in profile.stacks.in_output_order().into_iter().enumerate() {
        let value = super::integer("OTLP", stack, weight)?;
        let mut ids = Vec::new();
        for name in super::frames(stack) {
            let id = match locations.get(&*name) {
                Some(&id) => id,
                None => {
                    let name_strindex = string(&mut strings, &mut d.string_table, &name);
                    d.function_table.push(pb::Function {
                        name_strindex,
                        system_name_strindex: name_strindex,
                        ..Default::default()
                    });
                    let function_index = d.function_table.len() as i32 - 1;
                    d.location_table.push(pb::Location {
                        lines: vec![pb::Line { function_index, ..Default::default() }],
                        attribute_indices: if name.ends_with("_[k]") { vec![kernel] } else { Vec::new() },
                        ..Default::default()
                    });
                    let id = d.location_table.len() as i32 - 1;
                    locations.insert(name.to_string(), id);
                    id
                }
            };
            ids.push(id);
        }
        ids.reverse(); // leaf first
        let next = d.stack_table.len() as i32;
        let stack_index = *stacks.entry(ids.clone()).or_insert_with(|| {
            d.stack_table.push(pb::Stack { location_indices: ids });
            next
        });
        match &times {
            Some(times) => {
                let next = samples.len();
                let i = *sample_of.entry(stack_index).or_insert(next);
                if i == next {
                    samples.push(pb::Sample { stack_index, ..Default::default() });
                }
                for &(t, w) in times[run] {
                    samples[i].values.push(super::integer("OTLP", stack, w)?);
                    samples[i].timestamps_unix_nano.push(t);
                }
            }
            None => samples.push(pb::Sample { stack_index, values: vec![value], ..Default::default() }),
        }
    }
    let span = times.as_ref().and_then(|t| {
        let all = || t.iter().flat_map(|run| run.iter().map(|&(t, _)| t));
        Some((all().min()?, all().max()?))
    });
    let profile = pb::Profile {
        sample_type: Some(sample_type),
        samples,
        attribute_indices: profile_attrs,
        // The time stamps fall within [time_unix_nano, time_unix_nano + duration_nano).
        time_unix_nano: span.map_or(0, |(first, _)| first),
        duration_nano: span.map_or(0, |(first, last)| last - first + 1),
        ..Default::default()
    };
    Ok(ExportProfilesServiceRequest {
        resource_profiles: vec![pb::ResourceProfiles {
            resource: None,
            scope_profiles: vec![pb::ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: "kflame".to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..Default::default()
                }),
                profiles: vec![profile],
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
        dictionary: Some(d),
    })
}

/// Writes `profile` as an OTLP `ExportProfilesServiceRequest`.
pub fn write(profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    out.write_all(&request(profile)?.encode_to_vec())?;
    out.flush()?;
    Ok(())
}
