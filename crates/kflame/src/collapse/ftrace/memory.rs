//! Memory weighting of allocation events:
//!
//! - `mm_page_alloc` weighs `4096 << order` bytes;
//! - `kmalloc*` / `kmem_cache_alloc*` weigh `bytes_alloc`;
//! - probe events (kprobe or uprobe entries, payload `(SYMBOL+0x0/0x2f0) arg=value ...`)
//!   weigh by the arguments they fetched: `order=` gives `4096 << order` bytes, otherwise
//!   `bytes=`, `size=` or `request=` (the first present, in that order) gives that many bytes.
//!   A probe without any of these is not an allocation. So
//!   `p:kmem/alloc_pages __alloc_pages order=%si request=%di` weighs by its order (`%di` is
//!   the GFP mask there) and `p:kmalloc_size __kmalloc size=%di:u64` by its size.
//!   Values with `0x` are hexadecimal (the kernel prints arguments without a type that way
//!   since Linux 4.9), others decimal (`:u32`, `:u64`).
//!
//! Tracepoint fields are read by key, which covers the old (`pfn=1704824`, decimal) and new
//! (`pfn=0x24d5d4`) `mm_page_alloc` formats alike: both print `order=` and
//! `migratetype=` and `gfp_flags=`.

use crate::collapse::pairing::{ProbeEdge, field, parse_probe_edge};

/// Page size of the weights (x86_64).
pub(crate) const PAGE_SIZE: u64 = 4096;

/// The fetched arguments of a probe event that give its size, in order of preference
/// (`order` first: a page allocation probe may fetch other numbers too).
const PROBE_SIZE_FIELDS: [&str; 4] = ["order", "bytes", "size", "request"];

/// The kinds of allocation events.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// `mm_page_alloc`: `order=`.
    Pages,
    /// `kmalloc*`, `kmem_cache_alloc*`: `bytes_alloc=`.
    Slab,
    /// A kprobe/uprobe entry with one of [`PROBE_SIZE_FIELDS`].
    Probe,
}

fn kind(name: &str, payload: &str) -> Option<Kind> {
    if let Some(edge) = parse_probe_edge(payload) {
        let sized = PROBE_SIZE_FIELDS.iter().any(|k| field(payload, k).is_some());
        return (matches!(edge, ProbeEdge::Entry(_)) && sized).then_some(Kind::Probe);
    }
    if name == "mm_page_alloc" {
        Some(Kind::Pages)
    } else if name.starts_with("kmalloc") || name.starts_with("kmem_cache_alloc") {
        Some(Kind::Slab)
    } else {
        None
    }
}

/// True for the events that carry an allocation size (see the module documentation).
pub(crate) fn is_alloc_event(name: &str, payload: &str) -> bool {
    kind(name, payload).is_some()
}

/// The page allocation order of an `mm_page_alloc` event or a probe that fetched `order=`.
pub(crate) fn order(name: &str, payload: &str) -> Option<u32> {
    let value = match kind(name, payload)? {
        Kind::Pages => field(payload, "order")?.parse().ok()?,
        Kind::Probe => number(field(payload, "order")?)?,
        Kind::Slab => return None,
    };
    u32::try_from(value).ok().filter(|o| *o < 32)
}

/// `0x1f` (hexadecimal) or `31` (decimal).
fn number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Bytes allocated by the event, `Err` with what is missing for an allocation event
/// without a readable size, `Ok(None)` for other events.
pub(crate) fn alloc_bytes(name: &str, payload: &str) -> Result<Option<u64>, String> {
    match kind(name, payload) {
        None => Ok(None),
        Some(Kind::Pages) => match order(name, payload) {
            Some(o) => Ok(Some(PAGE_SIZE << o)),
            None => Err(format!("`order=N` (0-31) in mm_page_alloc, found `{payload}`")),
        },
        Some(Kind::Slab) => match field(payload, "bytes_alloc").and_then(|v| v.parse().ok()) {
            Some(b) => Ok(Some(b)),
            None => Err(format!("`bytes_alloc=N` in {name}, found `{payload}`")),
        },
        Some(Kind::Probe) => probe_bytes(payload)
            .map(Some)
            .ok_or_else(|| format!("a page order 0-31 in `order=`, or a number in `bytes=`, `size=` or `request=` of probe {name}, found `{payload}`")),
    }
}

/// The size a probe's fetched arguments give (module documentation).
fn probe_bytes(payload: &str) -> Option<u64> {
    let (key, value) = PROBE_SIZE_FIELDS.iter().find_map(|k| Some((*k, field(payload, k)?)))?;
    let n = number(value)?;
    if key == "order" {
        return u32::try_from(n).ok().filter(|o| *o < 32).map(|o| PAGE_SIZE << o);
    }
    Some(n)
}

/// Synthetic frames for `--page-type`: the migrate type (page allocations) and the GFP flags.
pub(crate) fn page_type_frames(name: &str, payload: &str) -> Vec<String> {
    let mut v = Vec::new();
    if name == "mm_page_alloc"
        && let Some(m) = field(payload, "migratetype")
    {
        v.push(migratetype_name(m));
    }
    if matches!(kind(name, payload), Some(Kind::Pages | Kind::Slab))
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

    #[test]
    fn probe_weights() {
        let pages = "(__alloc_pages+0x0/0x2f0) order=0xa request=0x40dc0";
        assert_eq!(alloc_bytes("alloc_pages", pages), Ok(Some(4096 << 10)), "order first, in hex");
        assert_eq!(order("alloc_pages", pages), Some(10));
        assert_eq!(alloc_bytes("kmalloc_size", "(__kmalloc+0x0/0x1b0) size=2048"), Ok(Some(2048)));
        assert_eq!(
            alloc_bytes("k", "(f+0x0/0x10) request=0x10 bytes=12"),
            Ok(Some(12)),
            "bytes before request"
        );
        assert_eq!(alloc_bytes("m", "(0x7f3b2d6e1a37) size=0x20"), Ok(Some(32)), "uprobe entry");
        assert_eq!(alloc_bytes("kmalloc", "(__kmalloc+0x0/0x1b0) flags=0xcc0"), Ok(None), "no size fetched");
        let ret = "(alloc_fdtable+0x84/0x140 <- __kmalloc) size=0x800";
        assert_eq!(alloc_bytes("kmalloc_ret", ret), Ok(None), "a return is not an allocation");
        assert!(alloc_bytes("p", "(f+0x0/0x10) order=0x40").is_err());
        assert!(alloc_bytes("p", "(f+0x0/0x10) size=big").is_err());
        assert!(!is_alloc_event("myopen", "(do_sys_openat2+0x0/0xf0) dfd=0xffffff9c"));
        assert!(page_type_frames("alloc_pages", pages).is_empty());
    }
}
