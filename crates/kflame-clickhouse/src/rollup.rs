//! The sums a writer sends with its samples: per (kind, unit, 10-minute slot, stack) for the
//! whole fleet (`samples_10m`, host `*`) and per (kind, unit, hour, host, stack)
//! (`host_stacks_1h`). They
//! are summed over a whole batch before it leaves, so a batch of a million samples is sent
//! with a few hundred thousand sums, already in the tables' order; the server adds up rows of
//! one key again as it merges parts (SummingMergeTree). Doing this on the writer instead of in
//! a materialized view took the view's grouping off the servers, which was most of their work
//! per inserted row.
//!
//! The sums of the call being written are kept apart until the call is queued, so that a
//! call refused as a whole (a full spool) takes its sums back out.

use kflame::fold::Weight;
use rustc_hash::FxHashMap;

use crate::native::Columns;
use crate::rowbinary::Put;
use crate::schema::{HOST_STACKS_1H, HOUR_NS, SAMPLES_10M, SLOT_NS, Table, day_of};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sums {
    whole: u64,
    nano: u64,
    samples: u64,
}

impl Sums {
    fn add(&mut self, o: Sums) {
        // ClickHouse's sum(UInt64) wraps; so do these, identically.
        self.whole = self.whole.wrapping_add(o.whole);
        self.nano = self.nano.wrapping_add(o.nano);
        self.samples += o.samples;
    }
    fn sub(&mut self, o: Sums) {
        self.whole = self.whole.wrapping_sub(o.whole);
        self.nano = self.nano.wrapping_sub(o.nano);
        self.samples -= o.samples;
    }
}

/// (kind, unit, slot, stack id).
type StackKey = (u8, u32, i64, u64);
/// (kind, unit, hour, host, stack id).
type HostKey = (u8, u32, i64, u32, u64);

/// The sums of a writer's unsent samples.
#[derive(Debug, Default)]
pub struct Rollup {
    units: Vec<String>,
    hosts: Vec<String>,
    stacks: FxHashMap<StackKey, Sums>,
    totals: FxHashMap<HostKey, Sums>,
    /// The call's sums (one bucket: one host, `call_host`).
    call: FxHashMap<StackKey, Sums>,
    call_host: u32,
}

fn intern(v: &mut Vec<String>, s: &str) -> u32 {
    match v.iter().position(|x| x == s) {
        Some(i) => i as u32,
        None => {
            v.push(s.to_string());
            (v.len() - 1) as u32
        }
    }
}

/// Each name's place in the names sorted (rows are sent in the table's order, where the
/// names sort as strings).
fn ranks(names: &[String]) -> Vec<u32> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let mut rank = vec![0u32; names.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r as u32;
    }
    rank
}

/// The start of the 10-minute slot of a time.
pub fn slot_of(time_ns: i64) -> i64 {
    time_ns.div_euclid(SLOT_NS) * SLOT_NS
}

/// The start of the hour of a time (or of a slot: slots nest in hours).
pub fn hour_of(time_ns: i64) -> i64 {
    time_ns.div_euclid(HOUR_NS) * HOUR_NS
}

/// The bucket a call sums the samples of: see [`Rollup::bucket`].
#[derive(Clone, Copy, Debug)]
pub struct BucketKey {
    kind: u8,
    unit: u32,
}

impl Rollup {
    /// A new call starts: what the last one added can no longer be taken back.
    pub fn begin_call(&mut self) {
        self.call.clear();
    }

    /// The call writes a bucket of `host` (a call writes one bucket): the key its samples
    /// are summed under with [`Rollup::add`].
    pub fn bucket(&mut self, host: &str, kind: u8, unit: &str) -> BucketKey {
        self.call_host = intern(&mut self.hosts, host);
        BucketKey { kind, unit: intern(&mut self.units, unit) }
    }

    /// One sample of the call's bucket (or one aggregated stack of it, counted as one row).
    pub fn add(&mut self, b: BucketKey, time_ns: i64, stack_id: u64, w: Weight) {
        let (whole, nanos) = w.to_parts();
        let s = Sums { whole: u64::try_from(whole).unwrap_or(u64::MAX), nano: u64::from(nanos), samples: 1 };
        self.call.entry((b.kind, b.unit, slot_of(time_ns), stack_id)).or_default().add(s);
    }

    /// Adds the call's sums to the batch's.
    pub fn end_call(&mut self) {
        let h = self.call_host;
        for (&(kind, unit, slot, stack), s) in &self.call {
            self.stacks.entry((kind, unit, slot, stack)).or_default().add(*s);
            self.totals.entry((kind, unit, hour_of(slot), h, stack)).or_default().add(*s);
        }
    }

    /// Takes the last call's sums back out (it was refused as a whole).
    pub fn undo_call(&mut self) {
        let h = self.call_host;
        for ((kind, unit, slot, stack), s) in self.call.drain() {
            if let Some(e) = self.stacks.get_mut(&(kind, unit, slot, stack)) {
                e.sub(s);
                if e.samples == 0 {
                    self.stacks.remove(&(kind, unit, slot, stack));
                }
            }
            let k = (kind, unit, hour_of(slot), h, stack);
            if let Some(e) = self.totals.get_mut(&k) {
                e.sub(s);
                if e.samples == 0 {
                    self.totals.remove(&k);
                }
            }
        }
    }

    /// Roughly the bytes the sums will take as rows.
    pub fn bytes(&self) -> usize {
        (self.stacks.len() + self.totals.len()) * 60
    }

    /// The rows of `table` (`samples_10m` or `host_stacks_1h`) as a `Native` block, in the table's
    /// order, and their count; `None` when there are none.
    pub fn encode(&self, table: &str) -> Option<(u64, Vec<u8>)> {
        let unit = ranks(&self.units);
        if table == SAMPLES_10M.name && !self.stacks.is_empty() {
            let mut rows: Vec<(&StackKey, &Sums)> = self.stacks.iter().collect();
            rows.sort_unstable_by_key(|(k, _)| (k.0, unit[k.1 as usize], k.2, k.3));
            return Some(
                self.block(&SAMPLES_10M, rows.into_iter().map(|(k, s)| (None, k.0, k.1, k.2, k.3, s))),
            );
        }
        if table == HOST_STACKS_1H.name && !self.totals.is_empty() {
            let host = ranks(&self.hosts);
            let mut rows: Vec<(&HostKey, &Sums)> = self.totals.iter().collect();
            rows.sort_unstable_by_key(|(k, _)| (k.0, unit[k.1 as usize], k.2, host[k.3 as usize], k.4));
            return Some(
                self.block(
                    &HOST_STACKS_1H,
                    rows.into_iter().map(|(k, s)| (Some(k.3), k.0, k.1, k.2, k.4, s)),
                ),
            );
        }
        None
    }

    /// Rows (host, kind, unit, slot, stack, sums) of a table of sums (host `None`: `*`, every
    /// host) as a `Native` block, and their count.
    fn block<'a>(
        &self,
        table: &Table,
        rows: impl Iterator<Item = (Option<u32>, u8, u32, i64, u64, &'a Sums)>,
    ) -> (u64, Vec<u8>) {
        let mut c = Columns::new(table.columns.len());
        for (host, kind, unit, slot, stack, s) in rows {
            c.u16(day_of(slot));
            c.str(host.map_or("*", |h| &self.hosts[h as usize]));
            c.u8(kind);
            c.i64(slot);
            c.str(&self.units[unit as usize]);
            c.u64(stack);
            c.u64(s.whole);
            c.u64(s.nano);
            c.u64(s.samples);
        }
        (c.rows(), c.encode(table))
    }

    /// Forgets the rows of `table`: they were sent or spooled.
    pub fn clear(&mut self, table: &str) {
        if table == SAMPLES_10M.name {
            self.stacks.clear();
        } else if table == HOST_STACKS_1H.name {
            self.totals.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: u64) -> Weight {
        Weight::from_u64(n)
    }

    #[test]
    fn a_refused_call_takes_its_sums_back_and_an_earlier_call_keeps_its_own() {
        let mut r = Rollup::default();
        r.begin_call();
        let b = r.bucket("h1", 1, "samples");
        r.add(b, 5, 7, w(2));
        r.add(b, SLOT_NS + 1, 7, w(3));
        r.add(b, 6, 8, Weight::parse(b"0.5").unwrap());
        r.end_call();
        r.begin_call();
        let b = r.bucket("h1", 1, "samples");
        r.add(b, 9, 7, w(10));
        r.add(b, SLOT_NS * 2, 9, w(1));
        r.end_call();
        assert_eq!(r.stacks.len(), 4);
        r.undo_call();
        assert_eq!(r.stacks.len(), 3);
        assert_eq!(r.stacks[&(1, 0, 0, 7)], Sums { whole: 2, nano: 0, samples: 1 });
        assert_eq!(r.stacks[&(1, 0, 0, 8)], Sums { whole: 0, nano: 500_000_000, samples: 1 });
        // Per host by hour: the first two slots are one hour.
        assert_eq!(r.totals[&(1, 0, 0, 0, 7)], Sums { whole: 5, nano: 0, samples: 2 });
        assert_eq!(r.totals[&(1, 0, 0, 0, 8)], Sums { whole: 0, nano: 500_000_000, samples: 1 });
        assert!(!r.totals.contains_key(&(1, 0, 0, 0, 9)));
        let (rows, _) = r.encode("samples_10m").unwrap();
        assert_eq!(rows, 3);
        let (rows, _) = r.encode("host_stacks_1h").unwrap();
        assert_eq!(rows, 2);
        r.clear("samples_10m");
        r.clear("host_stacks_1h");
        assert!(r.encode("samples_10m").is_none() && r.encode("host_stacks_1h").is_none());
    }

    #[test]
    fn rows_go_out_in_the_order_of_the_names() {
        let names = ["web".to_string(), "db".to_string(), "app".to_string()];
        assert_eq!(ranks(&names), [2, 1, 0]);
        let mut r = Rollup::default();
        r.begin_call();
        let b = r.bucket("web", 0, "samples");
        r.add(b, 0, 5, w(1));
        r.end_call();
        r.begin_call();
        let b = r.bucket("db", 0, "samples");
        r.add(b, 0, 9, w(1));
        r.end_call();
        let (_, block) = r.encode("host_stacks_1h").unwrap();
        let text = String::from_utf8_lossy(&block);
        assert!(text.find("db").unwrap() < text.find("web").unwrap(), "{text:?}");
    }

    #[test]
    fn slots_are_aligned_on_the_epoch() {
        assert_eq!(slot_of(0), 0);
        assert_eq!(slot_of(SLOT_NS - 1), 0);
        assert_eq!(slot_of(SLOT_NS), SLOT_NS);
        assert_eq!(slot_of(-1), -SLOT_NS);
        assert_eq!(hour_of(SLOT_NS * 5), 0);
        assert_eq!(hour_of(SLOT_NS * 6), HOUR_NS);
    }
}
