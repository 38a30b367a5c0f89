//! Memory weighting of allocation events: `mm_page_alloc` weighs `4096 << order` bytes,
//! `kmalloc*` / `kmem_cache_alloc*` weigh `bytes_alloc`.
//!
//! Fields are read by key, which covers the old (`pfn=1704824`, decimal) and new
//! (`pfn=0x24d5d4`) `mm_page_alloc` formats alike: both print `order=` and
//! `migratetype=` and `gfp_flags=`.

use crate::collapse::pairing::field;

/// Page size of the weights (x86_64).
pub(crate) const PAGE_SIZE: u64 = 4096;

/// True for the events that carry an allocation size.
pub(crate) fn is_alloc_event(name: &str) -> bool {
    name == "mm_page_alloc" || name.starts_with("kmalloc") || name.starts_with("kmem_cache_alloc")
}

/// The allocation order of an `mm_page_alloc` payload.
pub(crate) fn order(name: &str, payload: &str) -> Option<u32> {
    if name != "mm_page_alloc" {
        return None;
    }
    field(payload, "order")?.parse().ok().filter(|o| *o < 32)
}

/// Bytes allocated by the event, `Err` with what is missing for an allocation event
/// without a readable size, `Ok(None)` for other events.
pub(crate) fn alloc_bytes(name: &str, payload: &str) -> Result<Option<u64>, String> {
    if name == "mm_page_alloc" {
        return match order(name, payload) {
            Some(o) => Ok(Some(PAGE_SIZE << o)),
            None => Err(format!("`order=N` (0-31) in mm_page_alloc, found `{payload}`")),
        };
    }
    if !is_alloc_event(name) {
        return Ok(None);
    }
    match field(payload, "bytes_alloc").and_then(|v| v.parse().ok()) {
        Some(b) => Ok(Some(b)),
        None => Err(format!("`bytes_alloc=N` in {name}, found `{payload}`")),
    }
}

/// Synthetic frames for `--page-type`: the migrate type (page allocations) and the GFP flags.
pub(crate) fn page_type_frames(name: &str, payload: &str) -> Vec<String> {
    let mut v = Vec::new();
    if name == "mm_page_alloc"
        && let Some(m) = field(payload, "migratetype")
    {
        v.push(migratetype_name(m));
    }
    if is_alloc_event(name)
        && let Some(g) = field(payload, "gfp_flags")
    {
        v.push(g.replace(';', ":"));
    }
    v
}

/// The migrate types whose numbers are the same in every kernel configuration.
fn migratetype_name(m: &str) -> String {
    match m {
        "0" => "MIGRATE_UNMOVABLE".into(),
        "1" => "MIGRATE_MOVABLE".into(),
        "2" => "MIGRATE_RECLAIMABLE".into(),
        other => format!("migratetype-{}", other.replace(';', ":")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights() {
        let new = "page=00000000d6ea8a12 pfn=0x24d5d4 order=2 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO";
        let old = "page=0000000082b1fe73 pfn=1704824 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO";
        assert_eq!(alloc_bytes("mm_page_alloc", new), Ok(Some(16384)));
        assert_eq!(alloc_bytes("mm_page_alloc", old), Ok(Some(4096)));
        assert!(alloc_bytes("mm_page_alloc", "page=0 order=x").is_err());
        let k = "call_site=a+0x1/0x2 ptr=0 bytes_req=408 bytes_alloc=512 gfp_flags=GFP_KERNEL node=-1";
        assert_eq!(alloc_bytes("kmalloc", k), Ok(Some(512)));
        assert_eq!(alloc_bytes("kmem_cache_alloc", k), Ok(Some(512)));
        assert_eq!(alloc_bytes("sched_switch", k), Ok(None));
        assert_eq!(
            page_type_frames("mm_page_alloc", new),
            ["MIGRATE_MOVABLE", "GFP_HIGHUSER_MOVABLE|__GFP_ZERO"]
        );
        assert_eq!(page_type_frames("kmalloc", k), ["GFP_KERNEL"]);
    }
}
