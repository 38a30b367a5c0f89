//! pprof's `profile.proto` (google/pprof, vendored in `crates/kflame/proto/pprof/`),
//! gzipped as `go tool pprof`, Pyroscope and Parca read it.
//!
//! One sample type ([`super::sample_type`]: `samples/count`, `cpu/nanoseconds`,
//! `alloc_space/bytes`, `off_cpu/nanoseconds`, ...), one sample per stack (summed stacks,
//! or runs of a time-ordered profile), one function per distinct frame name and one
//! location per function (folded stacks carry no addresses), all names in the one string
//! table. The unit and event are also kept in a comment, `kflame unit=... event=...`,
//! which the reader uses to give folded stacks back their exact header. Values are
//! `int64`: a weight with a fraction or above `i64::MAX` is an error, never rounded.

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use super::{ExportError, Profile};
use crate::proto::pprof as pb;

/// The comment that carries kflame's unit and event (`kflame unit=ns event=...`).
pub const COMMENT_PREFIX: &str = "kflame ";

/// The strings of a profile, each once; index 0 is the empty string.
#[derive(Default)]
pub(crate) struct Strings {
    index: HashMap<String, i64>,
    pub(crate) table: Vec<String>,
}

impl Strings {
    pub(crate) fn new() -> Strings {
        let mut s = Strings::default();
        s.id("");
        s
    }

    pub(crate) fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.index.insert(s.to_string(), i);
        self.table.push(s.to_string());
        i
    }
}

/// The profile as a `perftools.profiles.Profile` message.
pub fn profile(profile: &Profile<'_>) -> Result<pb::Profile, ExportError> {
    let mut strings = Strings::new();
    let (t, u) = super::sample_type(profile.meta);
    let sample_type = vec![pb::ValueType { r#type: strings.id(&t), unit: strings.id(&u) }];
    let mut functions: HashMap<String, u64> = HashMap::new();
    let mut function = Vec::new();
    let mut location = Vec::new();
    let mut sample = Vec::new();
    for (stack, weight) in profile.stacks.in_output_order() {
        let value = super::integer("pprof", stack, weight)?;
        let mut ids: Vec<u64> = Vec::new();
        for name in super::frames(stack) {
            let next = function.len() as u64 + 1;
            let id = *functions.entry(name.to_string()).or_insert_with(|| {
                let n = strings.id(&name);
                function.push(pb::Function { id: next, name: n, system_name: n, ..Default::default() });
                location.push(pb::Location {
                    id: next,
                    line: vec![pb::Line { function_id: next, ..Default::default() }],
                    ..Default::default()
                });
                next
            });
            ids.push(id);
        }
        ids.reverse(); // pprof lists the leaf first
        sample.push(pb::Sample { location_id: ids, value: vec![value], ..Default::default() });
    }
    // `unit=` alone: no header (FlameGraph's counts), which reads back as such.
    let unit =
        if profile.meta.unit == crate::fold::Unit::Unspecified { "" } else { profile.meta.unit.name() };
    let mut comment = format!("{COMMENT_PREFIX}unit={unit}");
    if let Some(e) = &profile.meta.event {
        comment.push_str(&format!(" event={}", e.replace('\n', " ")));
    }
    let comment = vec![strings.id(&comment)];
    Ok(pb::Profile {
        sample_type,
        sample,
        location,
        function,
        comment,
        string_table: strings.table,
        ..Default::default()
    })
}

/// Writes `profile` as a gzipped pprof profile.
pub fn write(profile: &Profile<'_>, out: &mut dyn Write) -> Result<(), ExportError> {
    let bytes = self::profile(profile)?.encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?.flush()?;
    Ok(())
}
