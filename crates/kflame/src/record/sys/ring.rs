//! The mmap'ed ring buffer of a perf event (`struct perf_event_mmap_page` + data pages).
//!
//! The kernel writes records and then publishes `data_head`; we read `data_head` with
//! acquire ordering, copy the bytes between our tail and the head (unwrapping the circular
//! buffer), then publish the new `data_tail` with release ordering so the kernel may reuse the
//! space. Records are always complete below `data_head`.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// Offsets of `data_head` and `data_tail` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// One mapped ring buffer: a metadata page followed by `2^n` data pages.
pub(crate) struct Ring {
    base: *mut u8,
    map_len: usize,
    page: usize,
    data_len: usize,
}

impl Ring {
    /// Maps the ring buffer of `fd` with `data_pages` (a power of two) data pages.
    pub(crate) fn map(fd: &OwnedFd, data_pages: usize) -> io::Result<Ring> {
        let page = super::page_size();
        let data_len = data_pages * page;
        let map_len = data_len + page;
        // SAFETY: a fresh shared mapping of a perf event fd; the kernel validates the size.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring { base: base.cast(), map_len, page, data_len })
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: offset 1024 is inside the first (metadata) page, 8-byte aligned, and the
        // kernel only ever writes it as a whole u64.
        unsafe { AtomicU64::from_ptr(self.base.add(DATA_HEAD).cast()) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: as for `head`, offset 1032 of the metadata page; only we write it.
        unsafe { AtomicU64::from_ptr(self.base.add(DATA_TAIL).cast()) }
    }

    /// Appends every byte written since the last call to `out` (whole records, in order) and
    /// releases the space to the kernel. Returns the number of bytes copied.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<u8>) -> usize {
        let head = self.head().load(Ordering::Acquire);
        let tail = self.tail().load(Ordering::Relaxed);
        let avail = head.wrapping_sub(tail) as usize;
        if avail == 0 {
            return 0;
        }
        let avail = avail.min(self.data_len);
        let start = (tail as usize) % self.data_len;
        let first = avail.min(self.data_len - start);
        // SAFETY: the data area starts one page after `base` and is `data_len` long;
        // `start + first <= data_len` and `avail - first < data_len`, so both slices are in
        // bounds; the kernel does not write between tail and head until we advance the tail.
        unsafe {
            let data = self.base.add(self.page);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(data, avail - first));
        }
        self.tail().store(tail.wrapping_add(avail as u64), Ordering::Release);
        avail
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` come from the successful mmap in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}
