//! The data section read in place: records sliced straight out of the mapped file (no
//! copy) and delivered in time order, round by round, as perf orders them: at each
//! FINISHED_ROUND, the buffered records up to the newest timestamp of the round before are
//! sorted and delivered.

use linux_perf_data::AttributeDescription;
use linux_perf_data::linux_perf_event_reader::{
    AttrFlags, Endianness, RawData, RawEventRecord, RecordIdParseInfo, RecordParseInfo, RecordType,
    SampleFormat, get_record_id, get_record_identifier, get_record_timestamp,
};
use rustc_hash::FxHashMap;

type LE = byteorder::LittleEndian;

const FINISHED_ROUND: u32 = 68;
/// `PERF_RECORD_AUXTRACE`: followed by as many bytes of trace data (Intel PT, CoreSight...)
/// as its first field says, outside the record's own size.
const AUXTRACE: u32 = 71;
/// `PERF_RECORD_COMPRESSED` and `COMPRESSED2`: zstd frames of records.
const COMPRESSED: u32 = 81;
const COMPRESSED2: u32 = 83;
const USER_TYPE_START: u32 = 64;

/// How a record's event (attribute index) is found.
enum Ids {
    One,
    Same(RecordIdParseInfo),
    Identifier(bool),
}

/// Reads the records of a little-endian data section in time order.
pub(crate) struct Records<'a> {
    data: &'a [u8],
    infos: Vec<RecordParseInfo>,
    ids: Ids,
    attr_of_id: FxHashMap<u64, usize>,
    /// Bytes of AUX trace data stepped over (not decoded).
    aux_bytes: std::sync::atomic::AtomicU64,
}

/// What the walk hands over: a record (its byte range and event), or the mark that the
/// bytes before an offset will not be read again.
enum Delivery {
    Record { at: usize, end: usize, attr: usize },
    Consumed(usize),
}

/// Records per batch handed from the walking thread, and batches it may run ahead.
const BATCH: usize = 4096;
const BATCHES_AHEAD: usize = 8;

/// Why the data section could not be read to its end.
pub(crate) struct Damaged {
    pub(crate) offset: usize,
    pub(crate) what: String,
}

impl<'a> Records<'a> {
    /// `data` is the data section; `attrs` the file's event attributes (non-empty).
    pub(crate) fn new(data: &'a [u8], attrs: &[AttributeDescription]) -> Records<'a> {
        let infos: Vec<_> =
            attrs.iter().map(|a| RecordParseInfo::new(&a.attr, Endianness::LittleEndian)).collect();
        let ids = if infos.len() <= 1 {
            Ids::One
        } else if infos.iter().all(|i| i.id_parse_info == infos[0].id_parse_info) {
            Ids::Same(infos[0].id_parse_info)
        } else if attrs.iter().all(|a| a.attr.sample_format.contains(SampleFormat::IDENTIFIER)) {
            Ids::Identifier(attrs[0].attr.flags.contains(AttrFlags::SAMPLE_ID_ALL))
        } else {
            Ids::One
        };
        let mut attr_of_id = FxHashMap::default();
        for (i, a) in attrs.iter().enumerate() {
            for &id in &a.event_ids {
                attr_of_id.insert(id, i);
            }
        }
        Records { data, infos, ids, attr_of_id, aux_bytes: Default::default() }
    }

    /// Calls `f(attr_index, offset, record)` for every kernel record in time order (`offset`:
    /// where the record starts in the data section), and
    /// `consumed(n)` after each round once the first `n` bytes will not be read again.
    /// Stops at the first damaged record header and says where.
    ///
    /// The walk (record boundaries, events, timestamps, the ordering of rounds) runs on a
    /// helper thread that hands positions over in batches, so that on two cores it overlaps
    /// with `f`; it runs on the caller's thread when no thread can be started.
    pub(crate) fn for_each(
        &self,
        mut consumed: impl FnMut(usize),
        mut f: impl FnMut(usize, usize, &RawEventRecord<'a>),
    ) -> Result<(), Damaged> {
        let mut deliver = |d: Delivery| match d {
            Delivery::Record { at, end, attr } => f(attr, at, &self.record(at, end, attr)),
            Delivery::Consumed(n) => consumed(n),
        };
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Delivery>>(BATCHES_AHEAD);
            let (back, spare) = std::sync::mpsc::channel::<Vec<Delivery>>();
            let walker =
                std::thread::Builder::new().name("kflame-records".into()).spawn_scoped(scope, move || {
                    let mut batch = Vec::with_capacity(BATCH);
                    let result = self.walk(|d| {
                        batch.push(d);
                        if batch.len() == BATCH {
                            let next = spare.try_recv().unwrap_or_else(|_| Vec::with_capacity(BATCH));
                            // The receiver is gone only if the caller panicked: stop quietly.
                            let _ = tx.send(std::mem::replace(&mut batch, next));
                        }
                    });
                    let _ = tx.send(batch);
                    result
                });
            let Ok(walker) = walker else { return self.walk(&mut deliver) };
            for mut batch in rx {
                batch.drain(..).for_each(&mut deliver);
                let _ = back.send(batch);
            }
            walker.join().unwrap_or_else(|_| Err(self.damaged(0, "the record reader failed")))
        })
    }

    /// Walks the records, handing them (and the consumed marks) to `emit` in delivery order.
    fn walk(&self, mut emit: impl FnMut(Delivery)) -> Result<(), Damaged> {
        let mut pending: Vec<(u64, usize, usize, usize)> = Vec::new(); // (time, offset, end, attr)
        let (mut prev_round_max, mut max_seen) = (0u64, 0u64);
        let mut pos = 0;
        let result = loop {
            let Some(header) = self.data.get(pos..pos + 8) else {
                break if pos == self.data.len() {
                    Ok(())
                } else {
                    Err(self.damaged(pos, "a record header is cut short"))
                };
            };
            let ty = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
            let size = usize::from(u16::from_le_bytes([header[6], header[7]]));
            if size < 8 || pos + size > self.data.len() {
                break Err(self.damaged(pos, &format!("record size {size} is impossible here")));
            }
            if ty == AUXTRACE {
                // The trace data follows the record: step over it (perf script --no-itrace).
                let aux = self
                    .data
                    .get(pos + 8..pos + 16)
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
                let end = aux.and_then(|a| usize::try_from(a).ok()).and_then(|a| (pos + size).checked_add(a));
                match end {
                    Some(end) if end <= self.data.len() => {
                        self.aux_bytes
                            .fetch_add((end - pos - size) as u64, std::sync::atomic::Ordering::Relaxed);
                        pos = end;
                        continue;
                    }
                    _ => {
                        break Err(self.damaged(
                            pos,
                            &format!(
                                "an AUXTRACE record claims {} bytes of trace data, more than the section holds",
                                aux.unwrap_or(0)
                            ),
                        ));
                    }
                }
            }
            if ty == COMPRESSED || ty == COMPRESSED2 {
                break Err(self.damaged(
                    pos,
                    "a compressed record in a file whose header does not say it holds compressed records",
                ));
            }
            if ty == FINISHED_ROUND {
                // A round is one run of records per CPU buffer, each already in time order:
                // the stable sort merges those runs in about linear time. Keys are unique
                // (offsets differ), so the order is the same as a full sort.
                pending.sort_by_key(|p| (p.0, p.1));
                let n = pending.partition_point(|p| p.0 <= prev_round_max);
                for &(_, at, end, attr) in &pending[..n] {
                    emit(Delivery::Record { at, end, attr });
                }
                pending.drain(..n);
                prev_round_max = max_seen;
                emit(Delivery::Consumed(pending.iter().map(|p| p.1).min().unwrap_or(pos)));
            } else if ty < USER_TYPE_START {
                let (attr, time) = self.locate(ty, &self.data[pos + 8..pos + size]);
                max_seen = max_seen.max(time);
                pending.push((time, pos, pos + size, attr));
            }
            pos += size;
        };
        pending.sort_by_key(|p| (p.0, p.1));
        for &(_, at, end, attr) in &pending {
            emit(Delivery::Record { at, end, attr });
        }
        result
    }

    /// Bytes of AUX trace data (Intel PT...) stepped over so far.
    pub(crate) fn aux_bytes(&self) -> u64 {
        self.aux_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn damaged(&self, offset: usize, what: &str) -> Damaged {
        Damaged { offset, what: what.to_string() }
    }

    fn record(&self, at: usize, end: usize, attr: usize) -> RawEventRecord<'a> {
        let d = self.data;
        let ty = u32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
        let misc = u16::from_le_bytes([d[at + 4], d[at + 5]]);
        RawEventRecord::new(RecordType(ty), misc, RawData::from(&d[at + 8..end]), self.infos[attr])
    }

    /// The attribute index and timestamp of a record body.
    fn locate(&self, ty: u32, body: &[u8]) -> (usize, u64) {
        let rt = RecordType(ty);
        let raw = RawData::from(body);
        let attr = match &self.ids {
            Ids::One => Some(0),
            Ids::Same(info) => {
                get_record_id::<LE>(rt, raw, info).and_then(|id| self.attr_of_id.get(&id).copied())
            }
            Ids::Identifier(all) => {
                get_record_identifier::<LE>(rt, raw, *all).and_then(|id| self.attr_of_id.get(&id).copied())
            }
        };
        let attr = attr.filter(|&a| a < self.infos.len()).unwrap_or(0);
        (attr, get_record_timestamp::<LE>(rt, raw, &self.infos[attr]).unwrap_or(0))
    }
}
