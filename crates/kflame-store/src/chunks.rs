//! Stacks and frame names, stored in chunks (schema 5): a row of `stack_chunks` or
//! `frame_chunks` holds the consecutive ids `[id, id + count)`, one slot each, compressed
//! together. A slot whose stack or frame was deleted is a tombstone, so that the ids of the
//! others never change.
//!
//! A chunk blob is one format byte ([`FORMAT`]) then a zstd frame (with its content size) of
//! `count` slots:
//!
//! - frames: `0` (deleted) or `len + 1` then the name's `len` bytes (any bytes but `;`);
//! - stacks: `0` (deleted); `1`, the number of frames `n`, then `n` frame ids; or `d + 1`
//!   (`d >= 1`), `p`, `n`, then `n` frame ids: the stack is the first `p` frames of the stack
//!   `d` slots before it in the chunk, followed by the `n` frames (each stack is coded
//!   against the earlier one sharing its longest prefix, found with a trie of the chunk).
//!
//! All numbers are LEB128 varints. The writer appends the ids a transaction makes to the
//! last chunk (rewritten, at a fast zstd level while it fills) until it holds
//! [`STACKS_PER_CHUNK`] or [`FRAMES_PER_CHUNK`] slots; a full chunk is compressed at level
//! 9 and only rewritten again when maintenance deletes some of its slots.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use rustc_hash::FxHashMap;

use crate::StoreError;
use crate::db::{corrupt, map_err};

/// The format byte of a chunk blob.
const FORMAT: u8 = 1;
/// Slots of a full stack chunk.
pub(crate) const STACKS_PER_CHUNK: usize = 4096;
/// Slots of a full frame chunk.
pub(crate) const FRAMES_PER_CHUNK: usize = 2048;
/// Most bytes a chunk decompresses to (writers start a new chunk well before).
const MAX_RAW_BYTES: u64 = 64 << 20;
/// Most frame ids the stacks of one chunk hold together (writers start a new chunk before).
const MAX_CHUNK_FRAMES: usize = 1 << 24;
/// Most name bytes of one frame chunk (writers start a new chunk before).
const MAX_CHUNK_NAME_BYTES: usize = 16 << 20;
/// Frame ids are below this (readers index arrays by frame id).
pub(crate) const MAX_FRAME_ID: u32 = 1 << 28;
/// zstd level of the last chunk while it fills (rewritten by every transaction that adds to it).
const LEVEL_OPEN: i32 = 3;
/// zstd level of a full chunk: level 19 saves another 10 % at 20 times the time (seconds
/// for a chunk of names in a debug build), which a writer between two buckets cannot spend.
const LEVEL_FULL: i32 = 9;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A reader over decompressed chunk bytes; every read checks the length.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, String> {
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(format!("ends inside a number at byte {}", self.pos));
            };
            self.pos += 1;
            if shift > 63 || (shift == 63 && b > 1) {
                return Err(format!("number too long at byte {}", self.pos - 1));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A count of items of at least one byte each: checked against the bytes left.
    fn count(&mut self, what: &str) -> Result<usize, String> {
        let at = self.pos;
        let n = self.varint()?;
        if n > self.left() as u64 {
            return Err(format!("{what} {n} at byte {at} exceeds the {} bytes left", self.left()));
        }
        Ok(n as usize)
    }

    fn bytes(&mut self, n: usize) -> Result<&[u8], String> {
        if n > self.left() {
            return Err(format!("{n} bytes wanted at byte {}, {} left", self.pos, self.left()));
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }
}

/// Decompresses a chunk blob (format byte, zstd frame with its size).
fn unpack<'a>(blob: &[u8], raw: &'a mut Vec<u8>) -> Result<Reader<'a>, String> {
    let Some((&format, body)) = blob.split_first() else {
        return Err("empty chunk".into());
    };
    if format != FORMAT {
        return Err(format!("unknown chunk format {format}"));
    }
    raw.clear();
    match zstd::zstd_safe::get_frame_content_size(body) {
        Ok(Some(n)) if n <= MAX_RAW_BYTES => {
            raw.reserve(n as usize);
            zstd::bulk::Decompressor::new()
                .and_then(|mut d| d.decompress_to_buffer(body, raw))
                .map_err(|e| format!("zstd: {e}"))?;
            if raw.len() as u64 != n {
                return Err(format!("{} bytes decompressed, the frame says {n}", raw.len()));
            }
        }
        Ok(Some(n)) => return Err(format!("{n} bytes to decompress exceed the limit")),
        _ => return Err("not a zstd frame with its size".into()),
    }
    Ok(Reader { buf: raw, pos: 0 })
}

fn pack(raw: &[u8], level: i32) -> Vec<u8> {
    let mut out = vec![FORMAT];
    // Compressing into a Vec cannot fail; were it to, the level-0 frame is as valid.
    let z = zstd::bulk::compress(raw, level).or_else(|_| zstd::bulk::compress(raw, 0)).unwrap_or_default();
    out.extend_from_slice(&z);
    out
}

/// The slots of one chunk, decoded (or being built): stacks or frame names.
pub(crate) trait Slots: Default {
    /// The table's name.
    const TABLE: &'static str;
    /// Slots of a full chunk.
    const PER_CHUNK: usize;
    /// A slot's content.
    type Item: ?Sized;
    /// Decodes a blob of `count` slots (replacing the content).
    fn decode(&mut self, blob: &[u8], count: usize) -> Result<(), String>;
    fn encode(&self, level: i32) -> Vec<u8>;
    fn push(&mut self, item: Option<&Self::Item>);
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> Option<&Self::Item>;
    /// Whether `item` still fits the chunk's limits.
    fn fits(&self, item: &Self::Item) -> bool;
}

/// Decoded stacks: their frame ids in one arena.
#[derive(Default)]
pub(crate) struct StackSlots {
    frames: Vec<u32>,
    spans: Vec<Option<(u32, u32)>>,
}

impl Slots for StackSlots {
    const TABLE: &'static str = "stack_chunks";
    const PER_CHUNK: usize = STACKS_PER_CHUNK;
    type Item = [u32];

    fn decode(&mut self, blob: &[u8], count: usize) -> Result<(), String> {
        self.frames.clear();
        self.spans.clear();
        let mut raw = Vec::new();
        let mut r = unpack(blob, &mut raw)?;
        for i in 0..count {
            let tag = r.varint()?;
            if tag == 0 {
                self.spans.push(None);
                continue;
            }
            let start = self.frames.len();
            if tag > 1 {
                let d = tag - 1;
                let at =
                    (i as u64).checked_sub(d).ok_or_else(|| format!("slot {i} refers {d} slots back"))?;
                let Some((rs, rl)) = self.spans[at as usize] else {
                    return Err(format!("slot {i} refers to the deleted slot {at}"));
                };
                let p = r.varint()?;
                if p > u64::from(rl) {
                    return Err(format!("slot {i} takes {p} frames of a stack of {rl}"));
                }
                if start + p as usize > MAX_CHUNK_FRAMES {
                    return Err(format!("more than {MAX_CHUNK_FRAMES} frames"));
                }
                self.frames.extend_from_within(rs as usize..rs as usize + p as usize);
            }
            let n = r.count("frame count")?;
            if self.frames.len() + n > MAX_CHUNK_FRAMES {
                return Err(format!("more than {MAX_CHUNK_FRAMES} frames"));
            }
            for _ in 0..n {
                let f = r.varint()?;
                if f >= u64::from(MAX_FRAME_ID) {
                    return Err(format!("slot {i}: frame id {f} out of range"));
                }
                self.frames.push(f as u32);
            }
            self.spans.push(Some((start as u32, (self.frames.len() - start) as u32)));
        }
        if r.left() != 0 {
            return Err(format!("{} bytes after the {count} stacks", r.left()));
        }
        Ok(())
    }

    fn encode(&self, level: i32) -> Vec<u8> {
        let mut raw = Vec::with_capacity(self.frames.len() + 4 * self.spans.len());
        // (node, frame) → (child node, the last slot through it); the root is node 0.
        let mut trie: FxHashMap<(u32, u32), (u32, u32)> = FxHashMap::default();
        for i in 0..self.spans.len() {
            let Some(s) = self.get(i) else {
                raw.push(0);
                continue;
            };
            let (mut node, mut depth, mut base) = (0u32, 0usize, None);
            for &f in s {
                let Some(&(child, last)) = trie.get(&(node, f)) else { break };
                node = child;
                depth += 1;
                base = Some(last);
            }
            match base {
                Some(b) => {
                    put_varint(&mut raw, (i as u64 - u64::from(b)) + 1);
                    put_varint(&mut raw, depth as u64);
                }
                None => raw.push(1),
            }
            put_varint(&mut raw, (s.len() - depth) as u64);
            for &f in &s[depth..] {
                put_varint(&mut raw, u64::from(f));
            }
            let mut node = 0u32;
            for &f in s {
                let fresh = trie.len() as u32 + 1;
                let e = trie.entry((node, f)).or_insert((fresh, 0));
                e.1 = i as u32;
                node = e.0;
            }
        }
        pack(&raw, level)
    }

    fn push(&mut self, item: Option<&[u32]>) {
        self.spans.push(item.map(|s| {
            let start = self.frames.len() as u32;
            self.frames.extend_from_slice(s);
            (start, s.len() as u32)
        }));
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn get(&self, i: usize) -> Option<&[u32]> {
        let (s, l) = self.spans.get(i).copied().flatten()?;
        Some(&self.frames[s as usize..s as usize + l as usize])
    }

    fn fits(&self, item: &[u32]) -> bool {
        self.frames.len() + item.len() <= MAX_CHUNK_FRAMES
    }
}

impl StackSlots {
    /// The stacks (slots not deleted) of a blob of `count` slots, without decoding them.
    pub(crate) fn count_live(blob: &[u8], count: usize) -> Result<usize, String> {
        let mut raw = Vec::new();
        let mut r = unpack(blob, &mut raw)?;
        let mut live = 0;
        for _ in 0..count {
            let tag = r.varint()?;
            if tag == 0 {
                continue;
            }
            live += 1;
            if tag > 1 {
                r.varint()?;
            }
            for _ in 0..r.count("frame count")? {
                r.varint()?;
            }
        }
        if r.left() != 0 {
            return Err(format!("{} bytes after the {count} stacks", r.left()));
        }
        Ok(live)
    }
}

/// Decoded frame names in one arena.
#[derive(Default)]
pub(crate) struct NameSlots {
    bytes: Vec<u8>,
    spans: Vec<Option<(u32, u32)>>,
}

impl Slots for NameSlots {
    const TABLE: &'static str = "frame_chunks";
    const PER_CHUNK: usize = FRAMES_PER_CHUNK;
    type Item = [u8];

    fn decode(&mut self, blob: &[u8], count: usize) -> Result<(), String> {
        self.bytes.clear();
        self.spans.clear();
        let mut raw = Vec::new();
        let mut r = unpack(blob, &mut raw)?;
        for _ in 0..count {
            let n = r.varint()?;
            if n == 0 {
                self.spans.push(None);
                continue;
            }
            let len = usize::try_from(n - 1).unwrap_or(usize::MAX);
            let name = r.bytes(len)?;
            self.spans.push(Some((self.bytes.len() as u32, len as u32)));
            self.bytes.extend_from_slice(name);
        }
        if r.left() != 0 {
            return Err(format!("{} bytes after the {count} frames", r.left()));
        }
        Ok(())
    }

    fn encode(&self, level: i32) -> Vec<u8> {
        let mut raw = Vec::with_capacity(self.bytes.len() + 2 * self.spans.len());
        for i in 0..self.spans.len() {
            match self.get(i) {
                None => raw.push(0),
                Some(n) => {
                    put_varint(&mut raw, n.len() as u64 + 1);
                    raw.extend_from_slice(n);
                }
            }
        }
        pack(&raw, level)
    }

    fn push(&mut self, item: Option<&[u8]>) {
        self.spans.push(item.map(|n| {
            let start = self.bytes.len() as u32;
            self.bytes.extend_from_slice(n);
            (start, n.len() as u32)
        }));
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn get(&self, i: usize) -> Option<&[u8]> {
        let (s, l) = self.spans.get(i).copied().flatten()?;
        Some(&self.bytes[s as usize..s as usize + l as usize])
    }

    fn fits(&self, item: &[u8]) -> bool {
        self.bytes.len() + item.len() <= MAX_CHUNK_NAME_BYTES
    }
}

/// The zstd level of a chunk of `slots` slots.
fn level_of<S: Slots>(slots: &S) -> i32 {
    if slots.len() >= S::PER_CHUNK { LEVEL_FULL } else { LEVEL_OPEN }
}

/// Writes the items with ids `first..` (new, consecutive, after every stored id): into the
/// last chunk while it has room, then into new chunks.
pub(crate) fn append<S: Slots, T: AsRef<S::Item>>(
    conn: &Connection,
    first: i64,
    items: &[T],
) -> rusqlite::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let table = S::TABLE;
    let last: Option<(i64, i64, Vec<u8>)> = conn
        .prepare_cached(&format!("SELECT id, count, data FROM {table} ORDER BY id DESC LIMIT 1"))?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?;
    let mut slots = S::default();
    let mut start = first;
    if let Some((id, count, data)) = last
        && id.checked_add(count) == Some(first)
        && (count as usize) < S::PER_CHUNK
    {
        slots.decode(&data, count as usize).map_err(|d| corrupt(format!("{table} {id}: {d}")))?;
        start = id;
    }
    let put = |start: i64, slots: &S| -> rusqlite::Result<()> {
        conn.prepare_cached(&format!("INSERT OR REPLACE INTO {table}(id, count, data) VALUES (?1, ?2, ?3)"))?
            .execute(params![start, slots.len() as i64, slots.encode(level_of(slots))])?;
        Ok(())
    };
    for item in items {
        let item = item.as_ref();
        if slots.len() >= S::PER_CHUNK || (slots.len() > 0 && !slots.fits(item)) {
            put(start, &slots)?;
            start += slots.len() as i64;
            slots = S::default();
        }
        slots.push(Some(item));
    }
    put(start, &slots)
}

/// Calls `f` with the first id, slot count and blob of every chunk of `S` overlapping the
/// ascending `ids` (every chunk when `ids` is `None`), in id order.
pub(crate) fn each_chunk<S: Slots>(
    conn: &Connection,
    path: &Path,
    ids: Option<&[i64]>,
    mut f: impl FnMut(i64, usize, &[u8]) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let err = |e| map_err(path, e);
    // The chunks' ranges first (a few rows), then the blobs of the chunks wanted.
    let ranges: Vec<(i64, i64)> = conn
        .prepare_cached(&format!("SELECT id, count FROM {} ORDER BY id", S::TABLE))
        .map_err(err)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(err)?
        .collect::<Result<_, _>>()
        .map_err(err)?;
    let mut blob =
        conn.prepare_cached(&format!("SELECT data FROM {} WHERE id = ?1", S::TABLE)).map_err(err)?;
    for (id, count) in ranges {
        if let Some(ids) = ids {
            let k = ids.partition_point(|&x| x < id);
            if ids.get(k).is_none_or(|&x| x >= id.saturating_add(count)) {
                continue;
            }
        }
        let count = usize::try_from(count).ok().filter(|&c| c <= S::PER_CHUNK).ok_or_else(|| {
            StoreError::Corrupt {
                store: path.display().to_string(),
                detail: format!("{} {id}: {count} slots", S::TABLE),
            }
        })?;
        let mut rows = blob.query([id]).map_err(err)?;
        if let Some(r) = rows.next().map_err(err)? {
            let data = r.get_ref(0).map_err(err)?.as_blob().map_err(|_| StoreError::Corrupt {
                store: path.display().to_string(),
                detail: format!("{} {id}: not a blob", S::TABLE),
            })?;
            f(id, count, data)?;
        }
    }
    Ok(())
}

/// Writes items of ascending ids (the rows of an older schema) as chunks: consecutive ids
/// share a chunk, a short gap becomes tombstones, a long one starts a new chunk.
pub(crate) fn write_all<S: Slots, T: AsRef<S::Item>>(
    conn: &Connection,
    items: &[(i64, T)],
) -> rusqlite::Result<()> {
    /// The longest run of missing ids kept as tombstones.
    const GAP: i64 = 64;
    let put = |start: i64, slots: &S| -> rusqlite::Result<()> {
        conn.prepare_cached(&format!("INSERT INTO {}(id, count, data) VALUES (?1, ?2, ?3)", S::TABLE))?
            .execute(params![start, slots.len() as i64, slots.encode(LEVEL_FULL)])?;
        Ok(())
    };
    let mut slots = S::default();
    let mut start = 0i64;
    for (id, item) in items {
        let (id, item) = (*id, item.as_ref());
        let end = start + slots.len() as i64;
        if id < end {
            return Err(corrupt(format!("{}: id {id} out of order", S::TABLE)));
        }
        let gap = id - end;
        if slots.len() > 0 && (gap > GAP || slots.len() + gap as usize >= S::PER_CHUNK || !slots.fits(item)) {
            put(start, &slots)?;
            slots = S::default();
        }
        if slots.len() == 0 {
            start = id;
        } else {
            for _ in 0..gap {
                slots.push(None);
            }
        }
        slots.push(Some(item));
    }
    if slots.len() > 0 {
        put(start, &slots)?;
    }
    Ok(())
}

/// Replaces the chunk at `id` by `slots` (some deleted), or deletes it when every slot is
/// deleted and it is not the last chunk (whose end is the next id).
pub(crate) fn rewrite<S: Slots>(conn: &Connection, id: i64, slots: &S, last: bool) -> rusqlite::Result<()> {
    let table = S::TABLE;
    if !last && (0..slots.len()).all(|i| slots.get(i).is_none()) {
        conn.prepare_cached(&format!("DELETE FROM {table} WHERE id = ?1"))?.execute([id])?;
    } else {
        conn.prepare_cached(&format!("UPDATE {table} SET count = ?2, data = ?3 WHERE id = ?1"))?
            .execute(params![id, slots.len() as i64, slots.encode(level_of(slots))])?;
    }
    Ok(())
}

/// A digest of a frame name, combined by [`stack_key`] into a stack's: a stack found by its
/// text and one loaded from its frame ids get the same key.
pub(crate) type FrameDigest = (u64, u64);

const K0: u64 = 0x9e37_79b9_7f4a_7c15;
const K1: u64 = 0xa076_1d64_78bd_642f;
const K2: u64 = 0xe703_7ed1_a0b4_28db;
const K3: u64 = 0x8ebc_6af0_9c88_c6e3;

#[inline]
fn mum(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// Two independent 64-bit hashes of a frame name (multiply-fold over 8-byte words).
pub(crate) fn frame_digest(name: &[u8]) -> FrameDigest {
    let len = name.len() as u64;
    let (mut a, mut b) = (K0 ^ len, K1 ^ len.rotate_left(32));
    let mut words = name.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        a = mum(a ^ w, K2);
        b = mum(b ^ w.rotate_left(31), K3);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut buf = [0u8; 8];
        buf[..rest.len()].copy_from_slice(rest);
        let w = u64::from_le_bytes(buf);
        a = mum(a ^ w, K2);
        b = mum(b ^ w.rotate_left(31), K3);
    }
    (mum(a, K1 ^ len), mum(b, K0 ^ len))
}

/// The writer's key of a stack (96 bits of a digest of its frames, in order).
pub(crate) type StackKey = [u32; 3];

pub(crate) fn stack_key(frames: impl Iterator<Item = FrameDigest>) -> StackKey {
    let (mut a, mut b) = (K2, K3);
    let mut n = 0u64;
    for (fa, fb) in frames {
        a = mum(a ^ fa, K0);
        b = mum(b ^ fb, K1);
        n += 1;
    }
    let (a, b) = (mum(a ^ n, K3), mum(b ^ n, K2));
    [a as u32, (a >> 32) as u32, (b ^ (b >> 32)) as u32]
}

/// The key of a stack's text (its frames are the text split at `;`).
pub(crate) fn text_key(text: &[u8]) -> StackKey {
    stack_key(text.split(|&b| b == b';').map(frame_digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_slots_round_trip_with_shared_prefixes_and_tombstones() {
        let stacks: Vec<Option<Vec<u32>>> = vec![
            Some(vec![1, 2, 3]),
            Some(vec![1, 2, 4, 5]),
            None,
            Some(vec![1, 2]),
            Some(vec![]),
            Some(vec![9, 300_000, 1]),
            Some(vec![1, 2, 4, 5, 6]),
            Some(vec![1, 2, 3]),
        ];
        let mut s = StackSlots::default();
        for x in &stacks {
            s.push(x.as_deref());
        }
        for level in [LEVEL_OPEN, LEVEL_FULL] {
            let blob = s.encode(level);
            let mut d = StackSlots::default();
            d.decode(&blob, stacks.len()).unwrap();
            for (i, x) in stacks.iter().enumerate() {
                assert_eq!(d.get(i), x.as_deref(), "slot {i}");
            }
            assert!(d.decode(&blob, stacks.len() + 1).is_err());
            assert!(d.decode(&blob, stacks.len() - 1).is_err());
        }
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let mut s = StackSlots::default();
        s.push(Some(&[1, 2, 3]));
        s.push(Some(&[1, 2, 4]));
        let blob = s.encode(3);
        let mut d = StackSlots::default();
        for cut in 0..blob.len() {
            assert!(d.decode(&blob[..cut], 2).is_err());
        }
        // A reference to a slot before the first, a prefix longer than the stack.
        // A reference before the first slot, a prefix longer than the stack referred to, a
        // reference to a deleted slot, bytes left over.
        let bad: [(&[u8], usize); 4] = [
            (&[2, 0, 0], 1),
            (&[1, 1, 7, 2, 5, 0], 2),
            (&[1, 1, 7, 0, 2, 1, 0], 3),
            (&[1, 1, 7, 0, 3, 1, 0], 2),
        ];
        for (raw, count) in bad {
            assert!(d.decode(&pack(raw, 3), count).is_err(), "{raw:?}");
        }
        d.decode(&pack(&[1, 1, 7, 0, 3, 1, 0], 3), 3).unwrap();
        assert_eq!(d.get(2), Some(&[7u32][..]));
        let mut n = NameSlots::default();
        assert!(n.decode(&pack(&[5, b'a'], 3), 1).is_err());
        assert!(n.decode(&[2, 0, 0], 1).is_err());
    }

    #[test]
    fn keys_of_texts_and_of_frames_agree() {
        let text = b"comm;entry_SYSCALL_64;do_syscall_64;\xff\x00odd;";
        let frames: Vec<&[u8]> = text.split(|&b| b == b';').collect();
        assert_eq!(text_key(text), stack_key(frames.iter().map(|f| frame_digest(f))));
        assert_ne!(text_key(b"a;b"), text_key(b"ab"));
        assert_ne!(text_key(b"a;b"), text_key(b"b;a"));
        assert_ne!(text_key(b""), text_key(b";"));
    }
}
