//! A bounds check of the perf.data header before the container parser allocates anything,
//! so that a truncated or forged file gives an error instead of a huge allocation.

/// True when `head` starts with a perf.data magic (`PERFILE2`, either byte order).
pub fn is_perf_data(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP")
}

const HEADER_LEN: usize = 104;

/// Checks that every section the header points to lies inside the file.
pub(crate) fn check(data: &[u8]) -> Result<(), String> {
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
    let big = data.starts_with(b"2ELIFREP");
    let u64_at = |o: usize| {
        let b: [u8; 8] = data[o..o + 8].try_into().unwrap_or([0; 8]);
        if big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) }
    };
    let len = data.len() as u64;
    let header_size = u64_at(8);
    if header_size < HEADER_LEN as u64 || header_size > len {
        return Err(format!("header size {header_size} is impossible for a {len}-byte file"));
    }
    for (name, at) in [("attributes", 24), ("data", 40), ("event types", 56)] {
        section(name, u64_at(at), u64_at(at + 8), len)?;
    }
    let feature_table = u64_at(40).saturating_add(u64_at(48));
    let features = (0..4).map(|i| u64_at(72 + 8 * i).count_ones() as u64).sum::<u64>();
    let table_end = feature_table.saturating_add(features * 16);
    if features > 0 && table_end > len {
        return Err(format!(
            "the feature table ends at byte {table_end}, past the end of the {len}-byte file (truncated?)"
        ));
    }
    for i in 0..features {
        let at = (feature_table + i * 16) as usize;
        section("feature", u64_at(at), u64_at(at + 8), len)?;
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

/// Bit number of the EVENT_DESC feature (event attributes with their names).
const EVENT_DESC: u32 = 12;

/// A copy of `data` whose EVENT_DESC table entry points at the section when the recorded
/// offset is a few bytes off (files whose strings were edited after recording, e.g. paths
/// rewritten in the command line, shift the sections after it). `None` when the section is
/// fine, absent, or not found nearby. Returns the shift found.
pub(crate) fn repair_event_desc(data: &[u8]) -> Option<(Vec<u8>, i64)> {
    check(data).ok()?;
    if data.starts_with(b"2ELIFREP") {
        return None;
    }
    let u64_at = |o: usize| -> Option<u64> { Some(u64::from_le_bytes(data.get(o..o + 8)?.try_into().ok()?)) };
    let flags = |i: u32| u64_at(72 + 8 * (i as usize / 64)).map(|w: u64| w >> (i % 64) & 1 == 1);
    if !flags(EVENT_DESC)? {
        return None;
    }
    let index = (0..EVENT_DESC).filter(|&i| flags(i).unwrap_or(false)).count();
    let entry = (u64_at(40)? + u64_at(48)?) as usize + 16 * index;
    let (offset, size) = (u64_at(entry)? as i64, u64_at(entry + 8)? as usize);
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
    let word = |o: usize| section.get(o..o + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let (Some(nr), Some(attr_size)) = (word(0), word(4)) else { return false };
    if nr == 0 || nr > 4096 || !(64..=1024).contains(&attr_size) || word(12) != Some(attr_size) {
        return false;
    }
    linux_perf_data::AttributeDescription::parse_event_desc_section::<_, byteorder::LittleEndian>(
        std::io::Cursor::new(section),
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
