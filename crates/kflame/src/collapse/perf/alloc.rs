//! Allocation sizes from kmem tracepoint payloads, for memory flame graphs:
//!
//! - `kmem:mm_page_alloc: page=0x16fe6d pfn=0x16fe6d order=2 ...` → `4096 << order` bytes
//!   (the page size of x86-64 and most arm64 kernels);
//! - `kmem:kmalloc: call_site=... bytes_req=32 bytes_alloc=32 ...` (also `kmalloc_node`,
//!   `kmem_cache_alloc`, `kmem_cache_alloc_node`) → `bytes_alloc`.

use super::event::parse_u64;

/// Page size assumed for `order=` allocations.
pub const PAGE_SIZE: u64 = 4096;

/// Events whose samples are weighted by allocated bytes unless told otherwise.
pub fn is_alloc_event(key: &[u8]) -> bool {
    matches!(
        key,
        b"kmem:mm_page_alloc"
            | b"kmem:kmalloc"
            | b"kmem:kmalloc_node"
            | b"kmem:kmem_cache_alloc"
            | b"kmem:kmem_cache_alloc_node"
    )
}

/// Bytes allocated by one sample, from `bytes_alloc=` or else `order=`; an error text when
/// the payload has neither (or a bad value).
pub(crate) fn bytes(payload: &[u8]) -> Result<u64, String> {
    if let Some(v) = field(payload, b"bytes_alloc=") {
        return parse_u64(v).ok_or_else(|| format!("a decimal bytes_alloc=, found `{}`", show(v)));
    }
    if let Some(v) = field(payload, b"order=") {
        return match parse_u64(v) {
            Some(order) if order < 48 => Ok(PAGE_SIZE << order),
            _ => Err(format!("a page order 0-47 in order=, found `{}`", show(v))),
        };
    }
    Err(format!("a bytes_alloc= or order= field in the payload, found `{}`", show(payload)))
}

/// The value of `key` (which ends in `=`) when it starts a space-separated field.
fn field<'a>(payload: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut from = 0;
    while let Some(i) = memchr::memmem::find(&payload[from..], key) {
        let at = from + i;
        if at == 0 || payload[at - 1] == b' ' {
            let v = &payload[at + key.len()..];
            return Some(&v[..v.iter().position(|&b| b == b' ').unwrap_or(v.len())]);
        }
        from = at + key.len();
    }
    None
}

fn show(s: &[u8]) -> String {
    crate::fold::read::show(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(bytes(b"page=0x1 pfn=0x1 order=0 migratetype=0"), Ok(4096));
        assert_eq!(bytes(b"page=0x1 pfn=0x1 order=3 migratetype=0"), Ok(32768));
        assert_eq!(
            bytes(b"call_site=x+0x1 ptr=0x2 bytes_req=24 bytes_alloc=32 gfp_flags=GFP_KERNEL"),
            Ok(32)
        );
        assert!(bytes(b"prev_comm=a prev_pid=1").is_err());
        assert!(bytes(b"order=x").is_err());
        assert!(bytes(b"xorder=1").is_err());
    }
}
