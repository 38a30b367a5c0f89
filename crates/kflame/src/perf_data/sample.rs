//! The head of a sample record read straight from its bytes: for events whose samples
//! end with the call chain (`-g` samples of cpu-clock and most others: no read values,
//! raw payload, registers or stack), what counting a sample needs (pid, tid, period, call
//! chain) is read with a few loads, and the chain is walked as a plain slice instead of
//! through the general parser's per-word reads. Everything else goes through the general
//! parser.

use linux_perf_data::linux_perf_event_reader::SampleFormat;

/// The fields of a sample the counting path uses.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head<'a> {
    pub(crate) ip: Option<u64>,
    pub(crate) pid: Option<i32>,
    pub(crate) tid: Option<i32>,
    /// The sample's time (perf's clock, ns).
    pub(crate) time: Option<u64>,
    pub(crate) period: Option<u64>,
    /// The call chain: little-endian addresses and context markers, leaf first.
    pub(crate) chain: Option<&'a [u8]>,
}

/// The fields [`head`] reads: those before the call chain but read values, and the chain.
const HEAD_FIELDS: SampleFormat = BEFORE_READ.union(SampleFormat::CALLCHAIN);

/// Whether [`head`] reads samples of `format` (of a little-endian file) entirely: it has
/// no field but [`HEAD_FIELDS`], so `head` checks the same lengths the general parser does.
pub(crate) fn reads(format: SampleFormat) -> bool {
    HEAD_FIELDS.contains(format)
}

/// The head of a little-endian sample body of `format` (for which [`reads`] holds);
/// `None` when the body is too short for its format.
pub(crate) fn head(body: &[u8], format: SampleFormat) -> Option<Head<'_>> {
    let mut w = Words { body, at: 0 };
    w.skip_if(format, SampleFormat::IDENTIFIER)?;
    let ip = w.take_if(format, SampleFormat::IP)?;
    let (pid, tid) = match w.take_if(format, SampleFormat::TID)? {
        Some(v) => (Some(v as u32 as i32), Some((v >> 32) as u32 as i32)),
        None => (None, None),
    };
    let time = w.take_if(format, SampleFormat::TIME)?;
    for flag in [SampleFormat::ADDR, SampleFormat::ID, SampleFormat::STREAM_ID, SampleFormat::CPU] {
        w.skip_if(format, flag)?;
    }
    let period = w.take_if(format, SampleFormat::PERIOD)?;
    let chain = match w.take_if(format, SampleFormat::CALLCHAIN)? {
        Some(n) => {
            let len = usize::try_from(n).ok()?.checked_mul(8)?;
            Some(body.get(w.at..w.at.checked_add(len)?)?)
        }
        None => None,
    };
    Some(Head { ip, pid, tid, time, period, chain })
}

/// Whether the call chain of a sample body of `format` (read values already cut out: see
/// `strip_read`) lies within the body. linux-perf-event-reader 0.10 multiplies the chain's
/// length by 8 unchecked (a panic with overflow checks, a wrong cut without): a sample whose
/// length word is beyond its record is damaged and never handed to it. True when `format`
/// has no call chain, or fields this check does not walk (the parser then checks).
pub(crate) fn chain_fits(body: &[u8], format: SampleFormat, big_endian: bool) -> bool {
    if !format.contains(SampleFormat::CALLCHAIN) || format.contains(SampleFormat::READ) {
        return true;
    }
    let at = format.intersection(BEFORE_READ).bits().count_ones() as usize * 8;
    let Some(Ok(word)) = body.get(at..at + 8).map(<[u8; 8]>::try_from) else {
        // Too short for its length word: the parser says so.
        return true;
    };
    let n = if big_endian { u64::from_be_bytes(word) } else { u64::from_le_bytes(word) };
    let room = (body.len() - at - 8) / 8;
    usize::try_from(n).is_ok_and(|n| n <= room)
}

/// The fields a sample has before its read values (and so before its call chain).
const BEFORE_READ: SampleFormat = SampleFormat::IDENTIFIER
    .union(SampleFormat::IP)
    .union(SampleFormat::TID)
    .union(SampleFormat::TIME)
    .union(SampleFormat::ADDR)
    .union(SampleFormat::ID)
    .union(SampleFormat::STREAM_ID)
    .union(SampleFormat::CPU)
    .union(SampleFormat::PERIOD);

/// 64-bit words read one after the other.
struct Words<'a> {
    body: &'a [u8],
    at: usize,
}

impl Words<'_> {
    /// The word of `flag` if `format` has it (`Some(None)` if not; `None`: cut short).
    fn take_if(&mut self, format: SampleFormat, flag: SampleFormat) -> Option<Option<u64>> {
        if !format.contains(flag) {
            return Some(None);
        }
        let v = u64::from_le_bytes(self.body.get(self.at..self.at + 8)?.try_into().ok()?);
        self.at += 8;
        Some(Some(v))
    }

    fn skip_if(&mut self, format: SampleFormat, flag: SampleFormat) -> Option<()> {
        self.take_if(format, flag).map(|_| ())
    }
}

/// The addresses of a call chain from [`Head::chain`].
pub(crate) fn chain_words(chain: &[u8]) -> impl Iterator<Item = u64> + '_ {
    chain.chunks_exact(8).map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
}

#[cfg(test)]
mod tests {
    use linux_perf_data::linux_perf_event_reader::{
        Endianness, PerfEventAttr, RawData, RecordParseInfo, SampleRecord,
    };

    use super::*;

    /// A body with the fields of `format`.
    fn body(format: SampleFormat) -> Vec<u8> {
        let mut b = Vec::new();
        let mut put = |flag: SampleFormat, v: u64| {
            if format.contains(flag) {
                b.extend_from_slice(&v.to_le_bytes());
            }
        };
        put(SampleFormat::IDENTIFIER, 77);
        put(SampleFormat::IP, 0xffff_ffff_8100_1234);
        put(SampleFormat::TID, (4321u64 << 32) | 1234);
        put(SampleFormat::TIME, 999_000);
        put(SampleFormat::ADDR, 0xdead);
        put(SampleFormat::ID, 77);
        put(SampleFormat::STREAM_ID, 78);
        put(SampleFormat::CPU, 1);
        put(SampleFormat::PERIOD, 1_000_000);
        if format.contains(SampleFormat::CALLCHAIN) {
            let chain = [-128i64 as u64, 0xffff_ffff_8100_1234, -512i64 as u64, 0x5555_1000];
            b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
            for w in chain {
                b.extend_from_slice(&w.to_le_bytes());
            }
        }
        b
    }

    /// A version-0 `perf_event_attr` (64 bytes) of a software event with `format`.
    fn attr(format: SampleFormat) -> PerfEventAttr {
        let mut bytes = [0u8; 64];
        bytes[0..4].copy_from_slice(&1u32.to_le_bytes()); // PERF_TYPE_SOFTWARE
        bytes[4..8].copy_from_slice(&64u32.to_le_bytes());
        bytes[24..32].copy_from_slice(&format.bits().to_le_bytes());
        PerfEventAttr::parse::<_, byteorder::LittleEndian>(&bytes[..]).unwrap().0
    }

    /// A chain whose length word reaches past the record does not fit, whatever the word
    /// (2^61 would wrap to 0 bytes when multiplied by 8); one within it does.
    #[test]
    fn a_chain_longer_than_its_record_does_not_fit() {
        let format = SampleFormat::IP | SampleFormat::TID | SampleFormat::CALLCHAIN;
        let good = body(format);
        assert!(chain_fits(&good, format, false));
        for n in [5u64, 1 << 61, u64::MAX] {
            let mut b = good.clone();
            b[16..24].copy_from_slice(&n.to_le_bytes());
            assert!(!chain_fits(&b, format, false), "{n}");
            let mut be = b.clone();
            be[16..24].copy_from_slice(&n.to_be_bytes());
            assert!(!chain_fits(&be, format, true), "{n} big-endian");
        }
        // Without a chain, or too short for its length word: not this check's to refuse.
        assert!(chain_fits(&good[..20], format, false));
        assert!(chain_fits(&good, SampleFormat::IP | SampleFormat::TID, false));
    }

    /// `head` reads what the general parser reads, for formats with and without each field.
    #[test]
    fn head_agrees_with_the_general_parser() {
        let all = [
            SampleFormat::IDENTIFIER,
            SampleFormat::IP,
            SampleFormat::TID,
            SampleFormat::TIME,
            SampleFormat::ADDR,
            SampleFormat::ID,
            SampleFormat::STREAM_ID,
            SampleFormat::CPU,
            SampleFormat::PERIOD,
            SampleFormat::CALLCHAIN,
        ];
        for mask in 0u32..(1 << all.len()) {
            let format = all
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .fold(SampleFormat::empty(), |f, (_, &flag)| f | flag);
            let b = body(format);
            let info = RecordParseInfo::new(&attr(format), Endianness::LittleEndian);
            let general =
                SampleRecord::parse::<byteorder::LittleEndian>(RawData::Single(&b), 0, &info).unwrap();
            assert!(reads(format));
            let h = head(&b, format).unwrap();
            assert_eq!(
                (h.ip, h.pid, h.tid, h.period),
                (general.ip, general.pid, general.tid, general.period),
                "{format:?}"
            );
            let ours: Option<Vec<u64>> = h.chain.map(|c| chain_words(c).collect());
            let theirs: Option<Vec<u64>> =
                general.callchain.map(|c| (0..c.len()).map_while(|i| c.get(i)).collect());
            assert_eq!(ours, theirs, "{format:?}");
            if !b.is_empty() {
                assert_eq!(head(&b[..b.len() - 1], format), None, "cut short: {format:?}");
            }
        }
        for other in [SampleFormat::READ, SampleFormat::RAW, SampleFormat::REGS_USER, SampleFormat::WEIGHT] {
            assert!(!reads(SampleFormat::TID | SampleFormat::CALLCHAIN | other));
        }
    }
}
