//! Fields of the programs' C structs, read from the bytes the maps hold (native endian, as
//! the kernel wrote them).

pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

pub(crate) fn i32_at(b: &[u8], at: usize) -> i32 {
    u32_at(b, at) as i32
}

/// A task name: the bytes before the first NUL.
pub(crate) fn comm(b: &[u8]) -> Vec<u8> {
    b.iter().copied().take_while(|&c| c != 0).collect()
}
