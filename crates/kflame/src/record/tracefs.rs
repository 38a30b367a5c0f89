//! Reading tracepoint ids and record layouts from tracefs. Nothing is ever written there:
//! events are enabled through `perf_event_open`, so the tracing state is left untouched.
//!
//! When tracefs is not mounted, a private mount is made in a fresh temporary directory and
//! removed again before recording starts (the kernel shares one tracefs between all mounts,
//! so this changes nothing for other users).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::RecordError;
use super::sys;
pub(crate) use crate::tracefmt::Field;

/// Where tracefs usually lives.
const KNOWN_MOUNTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// A tracepoint: its perf id and field layout.
#[derive(Clone, Debug)]
pub(crate) struct Tracepoint {
    pub(crate) name: String,
    pub(crate) id: u64,
    fields: HashMap<String, Field>,
}

impl Tracepoint {
    /// The layout of `field`, or an error naming what the kernel's format lacks.
    pub(crate) fn field(&self, field: &str) -> Result<Field, RecordError> {
        self.fields.get(field).cloned().ok_or_else(|| RecordError::Tracepoint {
            name: self.name.clone(),
            message: format!("its format has no field `{field}`"),
        })
    }
}

/// Parses a tracepoint `format` file.
pub(crate) fn parse_format(name: &str, text: &str) -> Result<Tracepoint, RecordError> {
    let bad = |message: String| RecordError::Tracepoint { name: name.to_string(), message };
    let format = crate::tracefmt::parse(text);
    let id = match format.id {
        Some(Ok(id)) => id,
        Some(Err(line)) => return Err(bad(format!("bad ID line `{line}`"))),
        None => return Err(bad("its format file has no `ID:` line".into())),
    };
    Ok(Tracepoint { name: name.to_string(), id, fields: format.fields })
}

/// Access to tracefs for the duration of setup: a known mount or a private one.
pub(crate) struct Tracefs {
    root: PathBuf,
    private: Option<PathBuf>,
}

impl Tracefs {
    /// Finds a mounted tracefs, or mounts a private one.
    pub(crate) fn open() -> Result<Tracefs, RecordError> {
        use super::features::{Feature, masked, masked_error};
        if masked(Feature::Tracefs) {
            let path = PathBuf::from(KNOWN_MOUNTS[0]);
            return Err(RecordError::Tracefs { path, source: masked_error(Feature::Tracefs) });
        }
        for m in KNOWN_MOUNTS {
            if Path::new(m).join("events").is_dir() {
                return Ok(Tracefs { root: m.into(), private: None });
            }
        }
        let dir = std::env::temp_dir().join(format!("kflame-tracefs-{}", std::process::id()));
        let fail = |source| RecordError::Tracefs { path: dir.clone(), source };
        std::fs::create_dir(&dir).map_err(fail)?;
        if let Err(e) = sys::mount_tracefs(&dir) {
            let _ = std::fs::remove_dir(&dir);
            return Err(fail(e));
        }
        Ok(Tracefs { root: dir.clone(), private: Some(dir) })
    }

    /// Reads the id and layout of `group:name`.
    pub(crate) fn tracepoint(&self, full: &str) -> Result<Tracepoint, RecordError> {
        let (group, name) = full.split_once(':').unwrap_or(("", full));
        let path = self.root.join("events").join(group).join(name).join("format");
        let masked = super::features::tracepoint_feature(full).filter(|&f| super::features::masked(f));
        let read = match masked {
            Some(f) => Err(super::features::masked_error(f)),
            None => std::fs::read_to_string(&path),
        };
        let text = read.map_err(|source| RecordError::Tracepoint {
            name: full.to_string(),
            message: format!("cannot read its format in tracefs ({source}); this kernel may not have it"),
        })?;
        parse_format(full, &text)
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if let Some(dir) = &self.private {
            let _ = sys::unmount(dir);
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MM_PAGE_ALLOC: &str = "name: mm_page_alloc\nID: 653\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n\
\tfield:char prev_comm[16];\toffset:24;\tsize:16;\tsigned:0;\n\
\tfield:const void * ptr;\toffset:40;\tsize:8;\tsigned:0;\n\
\tfield:long prev_state;\toffset:48;\tsize:8;\tsigned:1;\n";

    #[test]
    fn parses_ids_and_fields() {
        let tp = parse_format("kmem:mm_page_alloc", MM_PAGE_ALLOC).unwrap();
        assert_eq!(tp.id, 653);
        assert_eq!(tp.field("order").unwrap(), Field { offset: 16, size: 4, signed: false });
        assert_eq!(tp.field("prev_comm").unwrap().size, 16);
        assert_eq!(tp.field("ptr").unwrap().offset, 40);
        assert!(tp.field("nope").is_err());
        let mut raw = vec![0u8; 56];
        raw[16..20].copy_from_slice(&3u32.to_le_bytes());
        raw[48..56].copy_from_slice(&(-1i64).to_le_bytes());
        assert_eq!(tp.field("order").unwrap().read(&raw), Some(3));
        assert_eq!(tp.field("prev_state").unwrap().read(&raw), Some(-1));
        assert_eq!(tp.field("order").unwrap().read(&raw[..10]), None);
    }

    #[test]
    fn format_without_id_is_an_error() {
        assert!(parse_format("x:y", "format:\n").is_err());
    }
}
