//! The tracefs `format` text of a tracepoint (`name:`, `ID:` and `field:` lines): where each
//! field sits in the record's raw payload. Shared by recording (read from tracefs) and the
//! perf.data reader (read from the file's tracing-data section).

use std::collections::HashMap;

/// One field of a tracepoint record (`field:TYPE NAME; offset:N; size:N; signed:N;`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) signed: bool,
}

/// A parsed `format` text.
#[derive(Clone, Debug, Default)]
pub(crate) struct Format {
    /// The `name:` line (the event name without its system).
    pub(crate) name: Option<String>,
    /// The `ID:` line; `Err` holds a line that did not parse.
    pub(crate) id: Option<Result<u64, String>>,
    /// Fields by name.
    pub(crate) fields: HashMap<String, Field>,
    /// The `print fmt:` line (after the colon): how the kernel prints the event.
    pub(crate) print_fmt: Option<String>,
}

impl Field {
    /// Reads the field from little-endian raw record data as an integer (sign-extended when
    /// signed).
    pub(crate) fn read(&self, raw: &[u8]) -> Option<i64> {
        let b = raw.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match (self.size, self.signed) {
            (1, s) => {
                if s {
                    b[0] as i8 as i64
                } else {
                    b[0] as i64
                }
            }
            (2, s) => {
                let v = u16::from_le_bytes([b[0], b[1]]);
                if s { v as i16 as i64 } else { v as i64 }
            }
            (4, s) => {
                let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                if s { v as i32 as i64 } else { v as i64 }
            }
            (8, _) => i64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
}

/// Parses a tracepoint `format` text; lines that are not understood are left out.
pub(crate) fn parse(text: &str) -> Format {
    let mut f = Format::default();
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("name:") {
            f.name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            f.id = Some(v.trim().parse::<u64>().map_err(|_| line.to_string()));
        } else if let Some(v) = line.strip_prefix("print fmt:") {
            f.print_fmt = Some(v.trim().to_string());
        } else if line.starts_with("field:")
            && let Some((fname, field)) = parse_field(line)
        {
            f.fields.insert(fname, field);
        }
    }
    f
}

/// `field:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;`
fn parse_field(line: &str) -> Option<(String, Field)> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts.next()?.strip_prefix("field:")?;
    let name = decl.rsplit(|c: char| c.is_whitespace() || c == '*').next()?;
    let name = name.split('[').next()?.to_string();
    let mut get = |key: &str| -> Option<usize> { parts.next()?.strip_prefix(key)?.parse().ok() };
    let offset = get("offset:")?;
    let size = get("size:")?;
    let signed = get("signed:")? != 0;
    Some((name, Field { offset, size, signed }))
}
