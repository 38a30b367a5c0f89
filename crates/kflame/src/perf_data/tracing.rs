//! The tracing-data feature section (`HEADER_TRACING_DATA`) of a perf.data file: perf copies
//! the tracefs `format` text of every recorded tracepoint there, which gives the field
//! offsets of each sample's raw payload (`PERF_SAMPLE_RAW`). Layout (as perf's
//! `tracing_data_get` writes it): magic `\x17\x08\x44tracing`, version string, endian byte,
//! long size, page size; `header_page` and `header_event` blocks; ftrace formats; then per
//! system its name, a count and the sized format texts of its events.

use std::collections::HashMap;

use crate::tracefmt::{self, Field, Format};

/// Formats of the recorded tracepoints by tracepoint id. `None` when the section is not in
/// a layout this reader knows (or is big-endian, which `Field::read` does not decode).
pub(crate) fn formats(section: &[u8]) -> Option<HashMap<u64, Format>> {
    let mut c = Cursor { data: section, at: 0 };
    if c.take(10)? != b"\x17\x08\x44tracing" {
        return None;
    }
    c.cstr()?; // version
    let big_endian = c.take(1)?[0] != 0;
    if big_endian {
        return None;
    }
    c.take(1)?; // long size
    c.take(4)?; // page size
    for block in [&b"header_page"[..], b"header_event"] {
        if c.cstr()? != block {
            return None;
        }
        let size = c.u64()?;
        c.take(usize::try_from(size).ok()?)?;
    }
    for _ in 0..c.u32()? {
        c.sized()?; // ftrace formats
    }
    let mut out = HashMap::new();
    for _ in 0..c.u32()? {
        c.cstr()?; // system name; the format text names the event
        for _ in 0..c.u32()? {
            let format = tracefmt::parse(&String::from_utf8_lossy(c.sized()?));
            if let Some(Ok(id)) = format.id {
                out.insert(id, format);
            }
        }
    }
    Some(out)
}

/// Where the allocated size sits in an allocation tracepoint's payload.
#[derive(Clone, Debug)]
pub(crate) enum AllocSize {
    /// `bytes_alloc` (kmalloc, kmem_cache_alloc).
    Bytes(Field),
    /// `order` (mm_page_alloc): `PAGE_SIZE << order` bytes.
    Order(Field),
}

impl AllocSize {
    /// The size field of a format, preferring `bytes_alloc` as the text collapser does.
    pub(crate) fn of(format: &Format) -> Option<AllocSize> {
        if let Some(f) = format.fields.get("bytes_alloc") {
            return Some(AllocSize::Bytes(f.clone()));
        }
        format.fields.get("order").map(|f| AllocSize::Order(f.clone()))
    }

    /// Bytes allocated by one sample, or what was wrong with the payload.
    pub(crate) fn bytes(&self, raw: &[u8]) -> Result<u64, String> {
        let (field, name) = match self {
            AllocSize::Bytes(f) => (f, "bytes_alloc"),
            AllocSize::Order(f) => (f, "order"),
        };
        let v = field.read(raw).ok_or_else(|| {
            format!(
                "a raw payload holding `{name}` at offset {} size {}, found {} bytes",
                field.offset,
                field.size,
                raw.len()
            )
        })?;
        match self {
            AllocSize::Bytes(_) => u64::try_from(v).map_err(|_| format!("a bytes_alloc >= 0, found {v}")),
            AllocSize::Order(_) => match u32::try_from(v) {
                Ok(order) if order < 48 => Ok(crate::collapse::perf::PAGE_SIZE << order),
                _ => Err(format!("a page order 0-47, found {v}")),
            },
        }
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn cstr(&mut self) -> Option<&'a [u8]> {
        let len = self.data.get(self.at..)?.iter().position(|&b| b == 0)?;
        let s = self.take(len)?;
        self.at += 1;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn sized(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(formats: &[&str]) -> Vec<u8> {
        let mut s = b"\x17\x08\x44tracing0.6\0\0\x08".to_vec();
        s.extend_from_slice(&4096u32.to_le_bytes());
        for (name, body) in [("header_page", &b"hp"[..]), ("header_event", b"he")] {
            s.extend_from_slice(name.as_bytes());
            s.push(0);
            s.extend_from_slice(&(body.len() as u64).to_le_bytes());
            s.extend_from_slice(body);
        }
        s.extend_from_slice(&0u32.to_le_bytes());
        s.extend_from_slice(&1u32.to_le_bytes());
        s.extend_from_slice(b"kmem\0");
        s.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for f in formats {
            s.extend_from_slice(&(f.len() as u64).to_le_bytes());
            s.extend_from_slice(f.as_bytes());
        }
        s
    }

    const KMALLOC: &str = "name: kmalloc\nID: 512\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n";
    const PAGE_ALLOC: &str = "name: mm_page_alloc\nID: 513\nformat:\n\
\tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n";

    #[test]
    fn reads_formats_and_sizes() {
        let f = formats(&section(&[KMALLOC, PAGE_ALLOC])).unwrap();
        assert_eq!(f[&512].name.as_deref(), Some("kmalloc"));
        let mut raw = vec![0u8; 40];
        raw[32..40].copy_from_slice(&96u64.to_le_bytes());
        raw[16..20].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(AllocSize::of(&f[&512]).unwrap().bytes(&raw), Ok(96));
        assert_eq!(AllocSize::of(&f[&513]).unwrap().bytes(&raw), Ok(16384));
        assert!(AllocSize::of(&f[&512]).unwrap().bytes(&raw[..30]).is_err());
    }

    #[test]
    fn truncated_or_foreign_sections_give_none() {
        let s = section(&[KMALLOC]);
        assert!(formats(&s[..s.len() - 5]).is_none());
        assert!(formats(b"not tracing data").is_none());
    }
}
