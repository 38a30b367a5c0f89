//! Splitting a stack into interned frame ids, fast for sorted input.
//!
//! Consecutive stacks share long prefixes (always, in sorted folded files). The frames a
//! stack shares with the previous one are found from the common byte prefix, without
//! splitting, validating or hashing them again; only the rest is.

use std::str::Utf8Error;

use super::Profile;
use crate::fold::common_prefix;

/// The previous stack's text and frame ids.
#[derive(Debug, Default)]
pub(super) struct PrevStack {
    text: Vec<u8>,
    /// End of each frame in `text`.
    ends: Vec<usize>,
    /// Id of each frame, root first.
    ids: Vec<u32>,
}

impl PrevStack {
    /// How many leading frames `stack` shares with this one, and where the first unshared
    /// frame starts.
    fn shared_frames(&self, stack: &[u8]) -> (usize, usize) {
        let a = &self.text[..];
        let common = common_prefix(a, stack);
        let k = if common == a.len() && common == stack.len() {
            // Identical: all but the last frame, which is re-read (cheap, keeps one path).
            self.ends.len().saturating_sub(1)
        } else {
            // Frame j is shared when the `;` ending it lies inside the common prefix.
            self.ends.partition_point(|&e| e < common && e < a.len())
        };
        (k, if k == 0 { 0 } else { self.ends[k - 1] + 1 })
    }
}

impl Profile {
    /// The ids of the frames of `stack`, root first. Fails on a frame that is not UTF-8.
    pub(super) fn frame_ids(&mut self, stack: &[u8], ids: &mut Vec<u32>) -> Result<(), Utf8Error> {
        let mut prev = std::mem::take(&mut self.prev);
        let (shared, start) = prev.shared_frames(stack);
        ids.clear();
        ids.extend_from_slice(&prev.ids[..shared]);
        prev.ends.truncate(shared);
        // The unshared frames are validated as UTF-8 in one go (`;` is ASCII, so every
        // frame boundary is a character boundary).
        let result = std::str::from_utf8(&stack[start..]).map(|rest| {
            let mut from = 0;
            let ends = memchr::memchr_iter(b';', rest.as_bytes()).chain(std::iter::once(rest.len()));
            for end in ends {
                // `;` is ASCII: `from` and `end` are character boundaries.
                ids.push(self.intern(rest.get(from..end).unwrap_or_default()));
                prev.ends.push(start + end);
                from = end + 1;
            }
        });
        if result.is_err() {
            prev = PrevStack::default();
        } else {
            prev.text.clear();
            prev.text.extend_from_slice(stack);
            prev.ids.clear();
            prev.ids.extend_from_slice(ids);
        }
        self.prev = prev;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_in_a_new_frame_fails_and_resets() {
        let mut p = Profile::new(false, false);
        let mut ids = Vec::new();
        assert!(p.frame_ids(b"a;b", &mut ids).is_ok());
        assert!(p.frame_ids(b"a;\xff", &mut ids).is_err());
        assert!(p.frame_ids(b"a;b;c", &mut ids).is_ok());
        assert_eq!(ids.len(), 3);
    }
}
