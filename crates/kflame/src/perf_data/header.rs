//! Bounds checks of a perf.data image before the container parser (`linux-perf-data`) sees
//! it. That parser takes the header's sizes, offsets and counts on trust: it divides by the
//! attribute size, reserves room for as many attributes and event ids as a count says, and
//! allocates feature sections and record bodies of the sizes written in the file. A
//! truncated or forged file would make it divide by zero or allocate hundreds of gigabytes,
//! so everything it trusts is checked here against the file's length first, and a file that
//! fails gets an error saying what is wrong instead.

use crate::collapse::is_perf_data;

const HEADER_LEN: usize = 104;

/// The smallest `perf_event_attr` (`PERF_ATTR_SIZE_VER0`): the parser reads this much of
/// every attribute, whatever size the file gives.
const ATTR_SIZE_VER0: u64 = 64;

/// Bit numbers of the feature sections that decide where the attributes are read from.
const EVENT_DESC: u32 = 12;
const SIMPLEPERF_META_INFO: u32 = 129;

/// `PERF_RECORD_AUXTRACE`: a record followed by as many bytes of trace data as it says.
const AUXTRACE: u32 = 71;

/// The fixed fields of the header, in the file's byte order.
struct Header<'a> {
    data: &'a [u8],
    big: bool,
    attr_size: u64,
    attrs: (u64, u64),
    records: (u64, u64),
    event_types: (u64, u64),
    features: [u64; 4],
}

impl<'a> Header<'a> {
    /// The header of a file `check` accepted.
    fn read(data: &'a [u8]) -> Header<'a> {
        let big = data.starts_with(b"2ELIFREP");
        let word = |o: usize| read_u64(data, o, big).unwrap_or(0);
        Header {
            data,
            big,
            attr_size: word(16),
            attrs: (word(24), word(32)),
            records: (word(40), word(48)),
            event_types: (word(56), word(64)),
            features: [word(72), word(80), word(88), word(96)],
        }
    }

    fn has(&self, bit: u32) -> bool {
        bit < 256 && self.features[bit as usize / 64] >> (bit % 64) & 1 == 1
    }

    fn feature_count(&self) -> u64 {
        self.features.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Where the (offset, size) entry of feature `bit` sits: the table follows the data
    /// section, one entry per feature present, in bit order.
    fn feature_entry(&self, bit: u32) -> Option<usize> {
        if !self.has(bit) {
            return None;
        }
        let before = (0..bit).filter(|&b| self.has(b)).count() as u64;
        let at = self.records.0.checked_add(self.records.1)?.checked_add(16 * before)?;
        usize::try_from(at).ok()
    }

    /// The bytes of feature `bit`, when present and inside the file.
    fn feature(&self, bit: u32) -> Option<&'a [u8]> {
        let at = self.feature_entry(bit)?;
        let (offset, size) = (self.u64_at(at)?, self.u64_at(at + 8)?);
        slice(self.data, offset, size)
    }

    fn u64_at(&self, at: usize) -> Option<u64> {
        read_u64(self.data, at, self.big)
    }
}

fn read_u64(data: &[u8], at: usize, big: bool) -> Option<u64> {
    let b: [u8; 8] = data.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(if big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
}

fn read_u32(data: &[u8], at: usize, big: bool) -> Option<u32> {
    let b: [u8; 4] = data.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
}

fn slice(data: &[u8], offset: u64, size: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    data.get(start..start.checked_add(usize::try_from(size).ok()?)?)
}

/// `PERF_FORMAT_LOST` (perf ≥ 6.0): each read value is followed by a count of lost samples.
/// The attribute parser drops this bit, so it is read from the raw attributes here.
const FORMAT_LOST: u64 = 1 << 4;
/// `PERF_RECORD_HEADER_ATTR`: an attribute and its ids, in a pipe-mode stream.
const HEADER_ATTR: u32 = 64;

/// For each recorded attribute, in file order, whether its read format has
/// `PERF_FORMAT_LOST` (from the attribute section, or the attribute records of a pipe-mode
/// stream). Empty when they cannot be read.
pub(crate) fn read_format_lost(data: &[u8]) -> Vec<bool> {
    let big = data.starts_with(b"2ELIFREP");
    let lost = |attr_at: usize| read_u64(data, attr_at + 32, big).is_some_and(|f| f & FORMAT_LOST != 0);
    if is_pipe(data) {
        let mut out = Vec::new();
        let mut at = PIPE_HEADER_LEN as usize;
        while let Some(kind) = read_u32(data, at, big) {
            let size = data.get(at + 6..at + 8).map_or(0, |b| {
                if big { u16::from_be_bytes([b[0], b[1]]) } else { u16::from_le_bytes([b[0], b[1]]) }
            });
            if size < 8 {
                break;
            }
            if kind == HEADER_ATTR {
                out.push(lost(at + 8));
            }
            at += usize::from(size);
        }
        return out;
    }
    let h = Header::read(data);
    let (offset, size) = h.attrs;
    if h.attr_size < ATTR_SIZE_VER0 {
        return Vec::new();
    }
    (0..size / h.attr_size).map(|i| usize::try_from(offset + i * h.attr_size).is_ok_and(lost)).collect()
}

/// Whether `data` is a pipe-mode file (`perf record -o -`): the magic, then a header size of
/// 16 with no sections; attributes and features follow as records.
pub(crate) fn is_pipe(data: &[u8]) -> bool {
    is_perf_data(data) && read_u64(data, 8, data.starts_with(b"2ELIFREP")) == Some(PIPE_HEADER_LEN)
}

/// The header of a pipe-mode file: magic and size.
const PIPE_HEADER_LEN: u64 = 16;

/// Checks that every section the header points to lies inside the file, and that the
/// feature sections, which the parser copies, hold no more bytes than the file.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
    if data.starts_with(b"PERFFILE") {
        return Err(
            "this is a version 1 perf.data (magic `PERFFILE`, written by the early perf of Linux 2.6.3x); \
                    only version 2 (`PERFILE2`) is read: a perf that reads it writes a version 2 copy with \
                    `perf inject -i FILE -o NEW`"
                .into(),
        );
    }
    if data.len() < 8 || !is_perf_data(data) {
        let got: String =
            data.iter().take(8).map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
        return Err(format!("expected the magic `PERFILE2` at the start, found `{got}`"));
    }
    if data.len() < HEADER_LEN {
        return Err(format!(
            "file is {} bytes, shorter than the {HEADER_LEN}-byte header (truncated?)",
            data.len()
        ));
    }
    let h = Header::read(data);
    let len = data.len() as u64;
    let header_size = h.u64_at(8).unwrap_or(0);
    if header_size == PIPE_HEADER_LEN {
        return Err("a pipe-mode header (perf record -o -) where a file header was expected".into());
    }
    if header_size < HEADER_LEN as u64 || header_size > len {
        return Err(format!("header size {header_size} is impossible for a {len}-byte file"));
    }
    for (name, (offset, size)) in
        [("attributes", h.attrs), ("data", h.records), ("event types", h.event_types)]
    {
        section(name, offset, size, len)?;
    }
    let feature_table = h.records.0.saturating_add(h.records.1);
    let features = h.feature_count();
    let table_end = feature_table.saturating_add(features * 16);
    if features > 0 && table_end > len {
        return Err(format!(
            "the feature table ends at byte {table_end}, past the end of the {len}-byte file (truncated?)"
        ));
    }
    let mut total: u64 = 0;
    for i in 0..features {
        let at = (feature_table + i * 16) as usize;
        let (offset, size) = (h.u64_at(at).unwrap_or(0), h.u64_at(at + 8).unwrap_or(0));
        section("feature", offset, size, len)?;
        total = total.saturating_add(size);
    }
    if total > len {
        return Err(format!(
            "the {features} feature sections claim {total} bytes together, more than the {len}-byte file holds"
        ));
    }
    Ok(())
}

fn section(name: &str, offset: u64, size: u64, len: u64) -> Result<(), String> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(format!(
            "the {name} section (offset {offset}, {size} bytes) goes past the end of the {len}-byte file (truncated?)"
        )),
    }
}

/// Checks the event attributes as the parser will read them (after [`check`]): from the
/// EVENT_DESC feature section when there is one, else from the old event types section, the
/// simpleperf attribute section, or the attribute section. Every count must fit in the bytes
/// that hold it, and the attribute size must be one the parser can step by.
pub(crate) fn check_attributes(data: &[u8]) -> Result<(), String> {
    let h = Header::read(data);
    if h.has(EVENT_DESC) {
        let section = h.feature(EVENT_DESC).ok_or("the event description section lies outside the file")?;
        return event_desc(section, h.big);
    }
    let len = data.len() as u64;
    let attr_size = h.attr_size;
    if h.event_types.1 != 0 {
        // Entries of an attribute and the (offset, size) of its event ids.
        need_attr_size(attr_size)?;
        let entry = attr_size
            .checked_add(16)
            .ok_or_else(|| format!("the header gives attributes of {attr_size} bytes, an impossible size"))?;
        return id_sections(&h, "event types", h.event_types, entry, attr_size, len);
    }
    if h.has(SIMPLEPERF_META_INFO) {
        // Entries of attr_size bytes whose last 16 give the (offset, size) of the event ids.
        need_attr_size(attr_size.saturating_sub(16))?;
        return id_sections(&h, "attributes", h.attrs, attr_size, attr_size - 16, len);
    }
    need_attr_size(attr_size)
}

/// An attribute size the parser can step by: at least one `perf_event_attr` (a size of 0
/// would make it divide by zero, a small one reserve room for more attributes than the file
/// holds).
fn need_attr_size(size: u64) -> Result<(), String> {
    if size < ATTR_SIZE_VER0 {
        return Err(format!(
            "the header gives attributes of {size} bytes, less than the {ATTR_SIZE_VER0} of the smallest \
             perf_event_attr"
        ));
    }
    Ok(())
}

/// Checks the event-id sections of old (event types) or simpleperf attribute entries: each
/// entry of `entry` bytes holds at `ids_at` the (offset, size) of its list of u64 ids.
fn id_sections(
    h: &Header<'_>,
    name: &str,
    at: (u64, u64),
    entry: u64,
    ids_at: u64,
    len: u64,
) -> Result<(), String> {
    let (offset, size) = at;
    for i in 0..size / entry {
        let pos = offset + i * entry + ids_at;
        let word = |o: u64| usize::try_from(pos + o).ok().and_then(|p| h.u64_at(p)).unwrap_or(u64::MAX);
        let (ids_offset, ids_size) = (word(0), word(8));
        if ids_offset.checked_add(ids_size).is_none_or(|end| end > len) {
            return Err(format!(
                "the event ids of attribute {i} in the {name} section (offset {ids_offset}, {ids_size} bytes) \
                 go past the end of the {len}-byte file"
            ));
        }
    }
    Ok(())
}

/// Walks the EVENT_DESC section as the parser reads it: a count and an attribute size, then
/// per event the attribute, a count of ids, a sized name and the ids. Every count must fit in
/// the bytes left, since the parser reserves room for it before reading.
pub(crate) fn event_desc(section: &[u8], big: bool) -> Result<(), String> {
    let len = section.len() as u64;
    let (Some(nr), Some(attr_size)) = (read_u32(section, 0, big), read_u32(section, 4, big)) else {
        return Err(format!("the event description section is {len} bytes, too short for its counts"));
    };
    let attr_size = u64::from(attr_size);
    if nr > 0 && attr_size < ATTR_SIZE_VER0 {
        return Err(format!(
            "the event description gives attributes of {attr_size} bytes, less than the {ATTR_SIZE_VER0} \
             of the smallest perf_event_attr"
        ));
    }
    // Each event takes at least its attribute, its id count and its name's length.
    let least = u64::from(nr).saturating_mul(attr_size + 8);
    if least > len - 8 {
        return Err(format!(
            "the event description claims {nr} events of at least {} bytes each, more than its {len} bytes hold",
            attr_size + 8
        ));
    }
    let mut at: u64 = 8;
    for i in 0..nr {
        at += attr_size;
        let word = |o: u64| usize::try_from(o).ok().and_then(|o| read_u32(section, o, big)).map(u64::from);
        let (Some(ids), Some(name_len)) = (word(at), word(at + 4)) else {
            return Err(format!("the event description ends inside event {i} (truncated?)"));
        };
        at += 8;
        if name_len > len - at.min(len) {
            return Err(format!(
                "event {i} of the event description has a name of {name_len} bytes, more than the {} bytes left",
                len - at.min(len)
            ));
        }
        at += name_len;
        if ids * 8 > len - at.min(len) {
            return Err(format!(
                "event {i} of the event description claims {ids} ids, more than the {} bytes left hold",
                len - at.min(len)
            ));
        }
        at += ids * 8;
    }
    Ok(())
}

/// In a big-endian file (read through the parser's record iterator, not in place), the first
/// AUXTRACE record whose trace data would reach past the data section: the parser allocates
/// that size before reading. Returns a copy whose record claims only the bytes that are left,
/// so reading ends there, with the record's offset in the data section and the size it
/// claimed.
pub(crate) fn cap_auxtrace(data: &[u8]) -> Option<(Vec<u8>, u64, u64)> {
    let h = Header::read(data);
    if !h.big {
        return None;
    }
    let (offset, size) = h.records;
    let records = slice(data, offset, size)?;
    let mut at = 0usize;
    while at + 8 <= records.len() {
        let kind = read_u32(records, at, true)?;
        let rec_size = usize::from(u16::from_be_bytes([records[at + 6], records[at + 7]]));
        if rec_size < 8 {
            return None; // the parser stops here with an error
        }
        let end = at.checked_add(rec_size)?;
        if kind == AUXTRACE && rec_size >= 16 {
            let claimed = read_u64(records, at + 8, true)?;
            let left = records.len().saturating_sub(end) as u64;
            if claimed > left {
                let mut fixed = data.to_vec();
                let field = usize::try_from(offset).ok()? + at + 8;
                fixed[field..field + 8].copy_from_slice(&left.to_be_bytes());
                return Some((fixed, at as u64, claimed));
            }
            at = end + claimed as usize;
        } else {
            at = end;
        }
    }
    None
}

/// A copy of `data` whose EVENT_DESC table entry points at the section when the recorded
/// offset is a few bytes off (files whose strings were edited after recording, e.g. paths
/// rewritten in the command line, shift the sections after it). `None` when the section is
/// fine, absent, or not found nearby. Returns the shift found.
pub(crate) fn repair_event_desc(data: &[u8]) -> Option<(Vec<u8>, i64)> {
    check(data).ok()?;
    if data.starts_with(b"2ELIFREP") {
        return None;
    }
    let h = Header::read(data);
    let entry = h.feature_entry(EVENT_DESC)?;
    let (offset, size) = (i64::try_from(h.u64_at(entry)?).ok()?, usize::try_from(h.u64_at(entry + 8)?).ok()?);
    if event_desc_parses(data, offset as usize, size) {
        return None;
    }
    let shift = (-8i64..=8).filter(|&s| s != 0).find(|&s| {
        usize::try_from(offset + s).is_ok_and(|o| o + size <= data.len() && event_desc_parses(data, o, size))
    })?;
    let mut fixed = data.to_vec();
    fixed[entry..entry + 8].copy_from_slice(&((offset + shift) as u64).to_le_bytes());
    Some((fixed, shift))
}

fn event_desc_parses(data: &[u8], offset: usize, size: usize) -> bool {
    let Some(section) = data.get(offset..offset.saturating_add(size)) else { return false };
    let word = |o: usize| read_u32(section, o, false);
    let (Some(nr), Some(attr_size)) = (word(0), word(4)) else { return false };
    if nr == 0 || nr > 4096 || !(64..=1024).contains(&attr_size) || word(12) != Some(attr_size) {
        return false;
    }
    event_desc(section, false).is_ok()
        && linux_perf_data::AttributeDescription::parse_event_desc_section::<_, byteorder::LittleEndian>(
            std::io::Cursor::new(section),
        )
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_version_1_files() {
        let mut h = vec![0u8; 104];
        h[..8].copy_from_slice(b"PERFFILE");
        assert!(crate::collapse::is_perf_data(&h));
        assert!(check(&h).unwrap_err().contains("version 1 perf.data"));
    }

    #[test]
    fn rejects_wrong_magic_and_truncation() {
        assert!(check(b"hello world").unwrap_err().contains("magic"));
        assert!(check(b"PERFILE2\x68\0\0\0").unwrap_err().contains("shorter"));
        let mut h = vec![0u8; 104];
        h[..8].copy_from_slice(b"PERFILE2");
        h[8] = 104;
        h[40] = 200; // data section offset past the end
        assert!(check(&h).unwrap_err().contains("data section"));
    }

    /// A header with `features` feature sections, each the whole file.
    fn overlapping_features(features: usize) -> Vec<u8> {
        let mut h = vec![0u8; 104 + 16 * features];
        h[..8].copy_from_slice(b"PERFILE2");
        h[8] = 104;
        h[40] = 104; // empty data section, the feature table right after it
        for i in 0..features {
            h[72 + i / 8] |= 1 << (i % 8);
        }
        let len = h.len() as u64;
        for i in 0..features {
            h[104 + 16 * i + 8..104 + 16 * i + 16].copy_from_slice(&len.to_le_bytes());
        }
        h
    }

    #[test]
    fn feature_sections_hold_no_more_than_the_file() {
        // The parser copies each feature section: 256 of them, each the whole file, would be
        // 256 times the file in memory.
        assert!(check(&overlapping_features(1)).is_ok());
        let err = check(&overlapping_features(256)).unwrap_err();
        assert!(err.contains("256 feature sections claim"), "{err}");
    }

    fn desc(nr: u32, attr_size: u32, events: &[(u32, u32, usize)]) -> Vec<u8> {
        let mut s = [nr.to_le_bytes(), attr_size.to_le_bytes()].concat();
        for &(ids, name_len, body) in events {
            s.extend(std::iter::repeat_n(0, attr_size as usize));
            s.extend(ids.to_le_bytes());
            s.extend(name_len.to_le_bytes());
            s.extend(std::iter::repeat_n(0, body));
        }
        s
    }

    #[test]
    fn event_description_counts_must_fit() {
        // Two events with names and ids, exactly filling the section.
        assert_eq!(event_desc(&desc(2, 136, &[(1, 8, 16), (2, 0, 16)]), false), Ok(()));
        let err = |s: Vec<u8>| event_desc(&s, false).unwrap_err();
        assert!(err(desc(u32::MAX, 136, &[])).contains("claims 4294967295 events"));
        assert!(err(desc(1, 0, &[(0, 0, 0)])).contains("attributes of 0 bytes"));
        assert!(err(desc(1, 136, &[(u32::MAX, 0, 0)])).contains("claims 4294967295 ids"));
        assert!(err(desc(1, 136, &[(0, u32::MAX, 0)])).contains("name of 4294967295 bytes"));
        assert!(err(desc(2, 136, &[(0, 8, 8), (0, 0, 0)])[..300].to_vec()).contains("ends inside event 1"));
        assert!(err(vec![1, 0, 0]).contains("too short"));
    }
}
