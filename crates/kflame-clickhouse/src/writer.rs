//! The writing side: [`Writer`] implements `kflame_store_api::Store` on ClickHouse.
//!
//! Rows are buffered by column, one set of columns per table, and sent in batches as `Native`
//! blocks: when the buffers hold `batch_bytes`, when the oldest row is `batch_interval` old,
//! on `flush` and on drop. The sums of the batch's samples per 10-minute slot go with it
//! (`samples_10m`, `host_stacks_1h`: see [`crate::rollup`]).
//! A batch ClickHouse does not take (unreachable, or an error) goes to the [`Spool`] in
//! order, and the spool is sent first when ClickHouse answers again (retries back off from
//! 1 s to 30 s). When the spool is full the call that does not fit is refused with
//! `StoreError::DiskFull` and nothing of it is kept: the caller holds or drops it, counted.
//!
//! Stack texts are sent once per host and day (`stacks`, keyed by the xxh3-64 of the text);
//! trigger and capture ids are random 63-bit numbers, unique across a fleet in practice.

use std::path::Path;
use std::time::{Duration, Instant};

use kflame::events::EventRecord;
use kflame::fold::Weight;
use kflame_store_api::{
    Bucket, CaptureId, CaptureStart, LatencyKind, LatencyRow, Maintenance, Metric, Policy, Store, StoreError,
    StoredReport, TriggerFired, TriggerId, stored_metric_value, stored_unit_name,
};
use rustc_hash::{FxHashMap, FxHashSet};
use xxhash_rust::xxh3::xxh3_64;

use crate::http::{Client, HttpError};
use crate::location::Location;
use crate::native::{Columns, ColumnsMark};
use crate::rollup::Rollup;
use crate::rowbinary::Put;
use crate::schema::{self, TABLES, day_of};
use crate::spool::Spool;

/// A bucket lasts at most this long (as in the embedded store).
const MAX_BUCKET_NS: i64 = 3_600_000_000_000;

/// The id of a stack text, the same on every host.
pub fn stack_id(text: &[u8]) -> u64 {
    xxh3_64(text)
}

/// How a [`Writer`] batches and spools.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// Send when the buffers hold this many bytes.
    pub batch_bytes: usize,
    /// Send when the oldest buffered row is this old.
    pub batch_interval: Duration,
    /// The spool's bound.
    pub spool_max_bytes: u64,
    /// `key=value` labels of the host, written to `hosts` (`role=db,rack=r12`).
    pub labels: String,
}

impl Default for WriterOptions {
    fn default() -> WriterOptions {
        WriterOptions {
            batch_bytes: 16 << 20,
            batch_interval: Duration::from_secs(1),
            spool_max_bytes: 1 << 30,
            labels: String::new(),
        }
    }
}

/// What a writer has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Rows ClickHouse took.
    pub rows_sent: u64,
    /// Inserts ClickHouse took.
    pub batches_sent: u64,
    /// Batches that went to the spool.
    pub batches_spooled: u64,
    /// Spooled batches sent later.
    pub batches_resent: u64,
    /// Inserts sent whole that got no answer, spooled and sent again: each may be stored
    /// twice (said in a note).
    pub batches_unanswered: u64,
}

/// Where the buffers were before a call: what undoing it truncates to.
struct Mark {
    lens: Vec<ColumnsMark>,
    stacks: usize,
    /// `Writer::samples_left` then.
    samples_left: u64,
}

/// A ClickHouse store being written.
pub struct Writer {
    loc: Location,
    client: Client,
    settings: Vec<(&'static str, &'static str)>,
    opts: WriterOptions,
    bufs: Vec<Columns>,
    rollup: Rollup,
    /// How many times buffered samples left (sent or spooled).
    samples_left: u64,
    oldest: Option<Instant>,
    /// (day, host hash, stack id) already sent, of today and yesterday.
    sent_stacks: FxHashSet<(u16, u64, u64)>,
    new_stacks: Vec<(u16, u64, u64)>,
    newest_day: u16,
    sent_hosts: FxHashSet<(u16, String)>,
    captures: FxHashMap<i64, String>,
    spool: Spool,
    retry_at: Option<Instant>,
    backoff: Duration,
    down: Option<String>,
    notes: Vec<String>,
    rng: u64,
    stats: WriterStats,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Writer({}, {:?})", self.loc, self.spool)
    }
}

fn t(name: &str) -> usize {
    TABLES.iter().position(|t| t.name == name).expect("a table of the schema")
}

impl Writer {
    /// A writer to `loc`, spooling in the file `spool` (see [`crate::spool`]; a SQLite spool of
    /// an earlier version found there is moved aside, said in a note). The tables must exist
    /// (`kflame store init`); when ClickHouse cannot be reached now, the writer starts all
    /// the same and spools.
    pub fn open(loc: &Location, spool: &Path, opts: WriterOptions) -> Result<Writer, StoreError> {
        let client = Client::new(loc);
        let mut spool = Spool::open(spool, opts.spool_max_bytes)?;
        let mut notes = spool.notes();
        let mut down = None;
        match schema::check(&client, loc) {
            Ok(()) => {}
            Err(schema::SchemaError::Http(e)) if e.is_unreachable() => {
                notes.push(format!("{loc} is {e}; spooling in {} until it answers", spool.path().display()));
                down = Some(e.to_string());
            }
            Err(e) => return Err(StoreError::Other { store: loc.to_string(), detail: e.to_string() }),
        }
        if !spool.is_empty() {
            notes.push(format!(
                "{} batches ({} bytes) of an earlier run wait in {}: sending them first",
                spool.len(),
                spool.bytes(),
                spool.path().display()
            ));
        }
        let mut settings = vec![("max_query_size", "16777216")];
        if loc.cluster.is_some() && !loc.insert_local {
            // The insert returns once every shard has its rows: a batch taken is a batch
            // stored, and may leave the spool.
            settings.push(("insert_distributed_sync", "1"));
        }
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ (u64::from(std::process::id()) << 32)
            ^ xxh3_64(loc.to_string().as_bytes());
        Ok(Writer {
            loc: loc.clone(),
            client,
            settings,
            opts,
            bufs: TABLES.iter().map(|t| Columns::new(t.columns.len())).collect(),
            rollup: Rollup::default(),
            samples_left: 0,
            oldest: None,
            sent_stacks: FxHashSet::default(),
            new_stacks: Vec::new(),
            newest_day: 0,
            sent_hosts: FxHashSet::default(),
            captures: FxHashMap::default(),
            spool,
            retry_at: down.as_ref().map(|_| Instant::now()),
            backoff: Duration::from_secs(1),
            down,
            notes,
            rng: seed,
            stats: WriterStats::default(),
        })
    }

    /// What was sent and spooled.
    pub fn stats(&self) -> WriterStats {
        self.stats
    }

    /// Batches and bytes waiting in the spool.
    pub fn spooled(&self) -> (u64, u64) {
        (self.spool.len(), self.spool.bytes())
    }

    fn invalid(&self, detail: String) -> StoreError {
        StoreError::Invalid { store: self.loc.to_string(), detail }
    }

    fn new_id(&mut self) -> i64 {
        // splitmix64: ids differ between hosts and runs by the seed.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 1).max(1) as i64
    }

    /// Where the buffers are as a call begins.
    fn mark(&mut self) -> Mark {
        self.rollup.begin_call();
        Mark {
            lens: self.bufs.iter().map(Columns::mark).collect(),
            stacks: self.new_stacks.len(),
            samples_left: self.samples_left,
        }
    }

    fn rollback(&mut self, m: &Mark) {
        // The call's samples are taken back unless they left already (then they are stored
        // or spooled, and so are, or will be, their sums: sums leave after their samples).
        if self.samples_left == m.samples_left {
            self.rollup.undo_call();
        }
        for (b, l) in self.bufs.iter_mut().zip(&m.lens) {
            b.truncate(l);
        }
        for k in self.new_stacks.drain(m.stacks..) {
            self.sent_stacks.remove(&k);
        }
    }

    fn buf(&mut self, table: usize) -> &mut Columns {
        if self.oldest.is_none() {
            self.oldest = Some(Instant::now());
        }
        &mut self.bufs[table]
    }

    /// Buffers `events` of `host` under `capture` (their times checked) and commits.
    fn write_events(
        &mut self,
        host: &str,
        capture: CaptureId,
        events: &[EventRecord<'_>],
    ) -> Result<(), StoreError> {
        let mark = self.mark();
        if let Some(ev) = events.first() {
            let t = ev.ts_ns.unwrap_or(0) as i64;
            self.host_row(host, day_of(t), t);
        }
        let host_hash = xxh3_64(host.as_bytes());
        let mut text = Vec::new();
        for ev in events {
            let time_ns = ev.ts_ns.unwrap_or(0) as i64;
            let day = day_of(time_ns);
            text.clear();
            for (i, f) in ev.stack.iter().enumerate() {
                if i > 0 {
                    text.push(b';');
                }
                text.extend_from_slice(f);
            }
            let id = self.stack(host, host_hash, day, &text);
            let b = self.buf(t("events"));
            b.u16(day);
            b.str(host);
            b.i64(capture.0);
            b.i64(time_ns);
            b.i64(ev.duration_ns.map_or(-1, |d| d.min(i64::MAX as u64) as i64));
            b.u32(ev.pid.unwrap_or(0));
            b.u32(ev.tid.unwrap_or(0));
            b.str(ev.comm.unwrap_or(""));
            b.u32(ev.cpu);
            b.str(ev.kind.name());
            b.str(ev.event);
            b.u64(id);
            b.u64(ev.weight);
        }
        self.commit(mark, false)
    }

    fn host_row(&mut self, host: &str, day: u16, time_ns: i64) {
        if self.sent_hosts.contains(&(day, host.to_string())) {
            return;
        }
        self.sent_hosts.retain(|(d, _)| *d + 1 >= day);
        self.sent_hosts.insert((day, host.to_string()));
        let labels = self.opts.labels.clone();
        let b = self.buf(t("hosts"));
        b.u16(day);
        b.str(host);
        b.i64(time_ns);
        b.str(&labels);
    }

    /// Queues the text of a stack unless this host sent it today; returns its id.
    fn stack(&mut self, host: &str, host_hash: u64, day: u16, text: &[u8]) -> u64 {
        let id = stack_id(text);
        let key = (day, host_hash, id);
        if day > self.newest_day {
            self.newest_day = day;
            self.sent_stacks.retain(|k| k.0 + 1 >= day);
        }
        if self.sent_stacks.insert(key) {
            self.new_stacks.push(key);
            let b = self.buf(t("stacks"));
            b.u16(day);
            b.str(host);
            b.u64(id);
            b.bytes(text);
        }
        id
    }

    fn pending_bytes(&self) -> u64 {
        self.bufs.iter().map(|b| b.bytes() as u64).sum::<u64>() + self.rollup.bytes() as u64
    }

    /// The buffers hold a batch: enough bytes, or rows old enough.
    fn batch_full(&self) -> bool {
        self.pending_bytes() >= self.opts.batch_bytes as u64
            || self.oldest.is_some_and(|o| o.elapsed() >= self.opts.batch_interval)
    }

    fn due(&self) -> bool {
        let retry_due = self.retry_at.is_none_or(|t| Instant::now() >= t);
        retry_due && (self.batch_full() || (!self.spool.is_empty() && self.down.is_some()))
    }

    /// An insert of `rows` into `table` failed: it is sent again after a back-off. One sent
    /// whole that got no answer may have been stored: that is counted and said.
    fn failed(&mut self, e: HttpError, table: &str, rows: u64) {
        if e.is_unanswered() {
            self.stats.batches_unanswered += 1;
            self.notes.push(format!(
                "ClickHouse at {} gave no answer to an insert of {rows} rows into {table} sent whole: it \
                 is sent again, and if the server had stored it, it is stored twice",
                self.loc
            ));
        }
        let first = self.down.is_none();
        let text = e.to_string();
        if first || self.down.as_deref() != Some(text.as_str()) {
            self.notes.push(format!(
                "ClickHouse at {}: {text}; batches go to the spool {} (retrying)",
                self.loc,
                self.spool.path().display()
            ));
        }
        self.down = Some(text);
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(Duration::from_secs(30));
    }

    /// Inserts `body` into `table`; a `spooled` batch (perhaps by an earlier version, whose
    /// tables lacked columns added since) names the columns its `Native` body has.
    fn insert(
        &mut self,
        table: &str,
        rows: u64,
        format: &str,
        body: &[u8],
        spooled: bool,
    ) -> Result<(), HttpError> {
        let own = (spooled && format == "Native")
            .then(|| crate::native::column_names(body))
            .flatten()
            .map(|names| names.join(", "));
        let tb = own.unwrap_or_else(|| {
            TABLES.iter().find(|t| t.name == table).map_or(String::new(), |t| t.column_list())
        });
        let target = if self.loc.insert_local { self.loc.local_table(table) } else { self.loc.table(table) };
        self.client.insert(&target, &tb, format, body, &self.settings)?;
        self.stats.rows_sent += rows;
        self.stats.batches_sent += 1;
        Ok(())
    }

    /// Sends the spool, then the buffers. `Err` leaves what was not sent where it was.
    fn send(&mut self) -> Result<(), StoreError> {
        if self.retry_at.is_some_and(|t| Instant::now() < t) {
            return Err(self.unsent());
        }
        let resent = self.spool.len();
        while let Some(b) = self.spool.front()? {
            if let Err(e) = self.insert(&b.table, b.rows, &b.format, &b.body, true) {
                self.failed(e, &b.table, b.rows);
                return Err(self.unsent());
            }
            self.spool.remove(&b)?;
            self.stats.batches_resent += 1;
        }
        // In the order of TABLES: stacks before the samples naming them, samples before their
        // sums.
        for (i, table) in TABLES.iter().enumerate() {
            let Some((rows, body)) = self.encode(i) else { continue };
            if let Err(e) = self.insert(table.name, rows, "Native", &body, false) {
                self.failed(e, table.name, rows);
                return Err(self.unsent());
            }
            if self.bufs[i].rows() > 0 && table.name == schema::SAMPLES.name {
                self.samples_left += 1;
            }
            self.bufs[i].clear();
            self.rollup.clear(table.name);
        }
        self.oldest = None;
        self.new_stacks.clear();
        if let Some(was) = self.down.take() {
            self.notes.push(format!(
                "ClickHouse at {} answers again (it was {was}): {resent} spooled batches sent",
                self.loc
            ));
        }
        self.retry_at = None;
        self.backoff = Duration::from_secs(1);
        Ok(())
    }

    /// Table `i`'s buffered rows as a `Native` block, and their count.
    fn encode(&self, i: usize) -> Option<(u64, Vec<u8>)> {
        let table = TABLES[i];
        if self.bufs[i].rows() > 0 {
            // Stack texts in the order of their sort key, the id.
            let key = (table.name == schema::STACKS.name)
                .then(|| table.columns.iter().position(|c| c.0 == "stack_id"))
                .flatten();
            let body = match key {
                Some(k) => self.bufs[i].encode_sorted_by(table, k),
                None => self.bufs[i].encode(table),
            };
            return Some((self.bufs[i].rows(), body));
        }
        self.rollup.encode(table.name)
    }

    fn unsent(&self) -> StoreError {
        StoreError::Other {
            store: self.loc.to_string(),
            detail: self.down.clone().unwrap_or_else(|| "waiting to retry".into()),
        }
    }

    /// Moves the buffers to the spool; `false` when they do not fit.
    fn spool_buffers(&mut self) -> Result<bool, StoreError> {
        let bodies: Vec<(&str, u64, Vec<u8>)> = TABLES
            .iter()
            .enumerate()
            .filter_map(|(i, t)| self.encode(i).map(|(rows, body)| (t.name, rows, body)))
            .collect();
        let need: u64 = bodies.iter().map(|b| b.2.len() as u64).sum();
        if need == 0 {
            return Ok(true);
        }
        if !self.spool.fits(need) {
            return Ok(false);
        }
        let batches: Vec<(&str, u64, &[u8])> =
            bodies.iter().map(|(t, r, b)| (*t, *r, b.as_slice())).collect();
        let n = batches.len() as u64;
        self.spool.push(&batches)?;
        self.stats.batches_spooled += n;
        self.samples_left += 1;
        for b in &mut self.bufs {
            b.clear();
        }
        for t in TABLES {
            self.rollup.clear(t.name);
        }
        self.oldest = None;
        self.new_stacks.clear();
        Ok(true)
    }

    /// After a call queued its rows: sends when due; what cannot be sent is spooled; a call
    /// that does not fit in the spool is undone and refused.
    fn commit(&mut self, mark: Mark, force: bool) -> Result<(), StoreError> {
        if !force && !self.due() {
            // Down and not yet time to retry: a batch that would have been sent goes to the
            // spool, whole. Memory holds no more than when ClickHouse answers, and the spool
            // drains in batch-sized inserts, not one small insert (and part) per call.
            if self.down.is_some() && self.batch_full() {
                return self.spool_or_refuse(mark);
            }
            return Ok(());
        }
        match self.send() {
            Ok(()) => Ok(()),
            Err(StoreError::Other { .. }) => self.spool_or_refuse(mark),
            Err(e) => Err(e),
        }
    }

    fn spool_or_refuse(&mut self, mark: Mark) -> Result<(), StoreError> {
        if self.spool_buffers()? {
            return Ok(());
        }
        self.rollback(&mark);
        let _ = self.spool_buffers();
        Err(StoreError::DiskFull {
            store: self.spool.path().display().to_string(),
            detail: format!(
                "ClickHouse at {} is {} and the spool holds {} of its {} bytes; nothing of this write was stored",
                self.loc,
                self.down.as_deref().unwrap_or("not answering"),
                self.spool.bytes(),
                self.spool.max_bytes
            ),
        })
    }
}

impl Store for Writer {
    fn append_metrics(&mut self, host: &str, time_ns: i64, metrics: &[Metric<'_>]) -> Result<(), StoreError> {
        let mark = self.mark();
        let day = day_of(time_ns);
        self.host_row(host, day, time_ns);
        // Latency percentiles, maxima and rates are read from the histograms.
        for m in metrics.iter().filter(|m| kflame_store_api::derived::derived(m.name).is_none()) {
            let b = self.buf(t("metrics"));
            b.u16(day);
            b.str(host);
            b.str(m.name);
            b.str(m.label);
            b.i64(time_ns);
            b.f64(stored_metric_value(m.value));
        }
        self.commit(mark, false)
    }

    fn append_bucket(&mut self, b: &Bucket<'_>) -> Result<(), StoreError> {
        if b.end_ns <= b.start_ns || b.end_ns - b.start_ns > MAX_BUCKET_NS {
            return Err(self.invalid(format!(
                "a {} bucket of {} must end after it starts and last at most 1 h (start {}, end {})",
                b.kind, b.host, b.start_ns, b.end_ns
            )));
        }
        if let Some(s) = b.samples.iter().find(|s| s.time_ns < b.start_ns || s.time_ns >= b.end_ns) {
            return Err(self.invalid(format!(
                "a {} bucket of {} [{}, {}) holds a sample at {} outside it",
                b.kind, b.host, b.start_ns, b.end_ns, s.time_ns
            )));
        }
        let too_big = |w: &Weight| w.to_parts().0 > u128::from(u64::MAX);
        if b.samples.iter().any(|s| too_big(&s.weight)) || b.aggregated.iter().any(|(_, w)| too_big(w)) {
            return Err(self.invalid(format!(
                "a {} bucket of {} holds a weight of 2^64 or more, more than the store's UInt64 holds",
                b.kind, b.host
            )));
        }
        let mark = self.mark();
        let host_hash = xxh3_64(b.host.as_bytes());
        let unit = stored_unit_name(&b.meta.unit).to_string();
        let kind = b.kind.code() as u8;
        let capture = b.capture.map_or(0, |c| c.0);
        // The fleet's sums hold what a range's profile reads without a capture: for a kind
        // with an always-on profile, that one alone (its captures are kept apart).
        let summed = capture == 0 || !b.kind.has_always_on();
        self.host_row(b.host, day_of(b.start_ns), b.start_ns);
        let sums = self.rollup.bucket(b.host, kind, &unit);
        let mut last: Option<(&[u8], u16, u64)> = None;
        for s in b.samples {
            let day = day_of(s.time_ns);
            let id = match last {
                Some((text, d, id)) if d == day && text == s.stack => id,
                _ => self.stack(b.host, host_hash, day, s.stack),
            };
            last = Some((s.stack, day, id));
            if summed {
                self.rollup.add(sums, s.time_ns, id, s.weight);
            }
            let r = self.buf(t("samples"));
            r.u16(day);
            r.str(b.host);
            r.u8(kind);
            r.i64(s.time_ns);
            r.u8(1);
            r.u32(s.cpu);
            r.str(s.cgroup.unwrap_or(""));
            r.i64(capture);
            r.str(&unit);
            r.u64(id);
            r.weight(s.weight);
        }
        let day = day_of(b.start_ns);
        for (text, w) in b.aggregated {
            let id = self.stack(b.host, host_hash, day, text);
            if summed {
                self.rollup.add(sums, b.start_ns, id, *w);
            }
            let r = self.buf(t("samples"));
            r.u16(day);
            r.str(b.host);
            r.u8(kind);
            r.i64(b.start_ns);
            r.u8(0);
            r.u32(0);
            r.str("");
            r.i64(capture);
            r.str(&unit);
            r.u64(id);
            r.weight(*w);
        }
        let r = self.buf(t("buckets"));
        r.u16(day);
        r.str(b.host);
        r.u8(kind);
        r.i64(b.start_ns);
        r.i64(b.end_ns);
        r.i64(capture);
        r.str(&unit);
        r.str(b.meta.event.as_deref().unwrap_or(""));
        r.u64((b.samples.len() + b.aggregated.len()) as u64);
        self.rollup.end_call();
        self.commit(mark, false)
    }

    fn append_trigger(&mut self, tr: &TriggerFired<'_>) -> Result<TriggerId, StoreError> {
        let mark = self.mark();
        let id = self.new_id();
        let day = day_of(tr.time_ns);
        self.host_row(tr.host, day, tr.time_ns);
        let b = self.buf(t("triggers"));
        b.u16(day);
        b.str(tr.host);
        b.i64(id);
        b.i64(tr.time_ns);
        b.str(tr.rule);
        b.str(tr.metric);
        b.f64(tr.value);
        b.f64(tr.threshold);
        self.commit(mark, false).map(|()| TriggerId(id))
    }

    fn begin_capture(&mut self, c: &CaptureStart<'_>) -> Result<CaptureId, StoreError> {
        let mark = self.mark();
        let id = self.new_id();
        let day = day_of(c.start_ns);
        self.host_row(c.host, day, c.start_ns);
        let b = self.buf(t("captures"));
        b.u16(day);
        b.str(c.host);
        b.i64(id);
        b.u8(c.kind.code() as u8);
        b.i64(c.start_ns);
        b.i64(c.trigger.map_or(0, |t| t.0));
        b.str(stored_unit_name(&c.meta.unit));
        b.str(c.meta.event.as_deref().unwrap_or(""));
        self.commit(mark, false)?;
        self.captures.insert(id, c.host.to_string());
        Ok(CaptureId(id))
    }

    fn end_capture(&mut self, id: CaptureId, end_ns: i64, note: &str) -> Result<(), StoreError> {
        let Some(host) = self.captures.get(&id.0).cloned() else {
            return Err(self.invalid(format!("no capture {} was begun by this writer", id.0)));
        };
        let mark = self.mark();
        let b = self.buf(t("capture_ends"));
        b.u16(day_of(end_ns));
        b.str(&host);
        b.i64(id.0);
        b.i64(end_ns);
        b.str(note);
        self.commit(mark, false)
    }

    fn append_events(&mut self, capture: CaptureId, events: &[EventRecord<'_>]) -> Result<(), StoreError> {
        if let Some(detail) = kflame_store_api::unstorable_events(events, "event") {
            return Err(self.invalid(detail));
        }
        let Some(host) = self.captures.get(&capture.0).cloned() else {
            return Err(self.invalid(format!("no capture {} was begun by this writer", capture.0)));
        };
        self.write_events(&host, capture, events)
    }

    fn append_outliers(
        &mut self,
        host: &str,
        kind: LatencyKind,
        events: &[EventRecord<'_>],
    ) -> Result<(), StoreError> {
        if let Some(detail) = kflame_store_api::unstorable_events(events, "outlier") {
            return Err(self.invalid(detail));
        }
        if events.is_empty() {
            return Ok(());
        }
        self.write_events(host, kflame_store_api::outlier_capture(kind), events)
    }

    fn append_report(&mut self, r: &StoredReport<'_>) -> Result<(), StoreError> {
        let mark = self.mark();
        let day = day_of(r.time_ns);
        self.host_row(r.host, day, r.time_ns);
        let b = self.buf(t("reports"));
        b.u16(day);
        b.str(r.host);
        b.i64(r.time_ns);
        b.str(r.kind);
        b.str(r.title);
        b.str(r.stack);
        b.str(r.text);
        self.commit(mark, false)
    }

    fn append_latency(
        &mut self,
        host: &str,
        time_ns: i64,
        rows: &[LatencyRow<'_>],
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mark = self.mark();
        let day = day_of(time_ns);
        self.host_row(host, day, time_ns);
        let b = self.buf(t("latency"));
        for r in rows {
            b.u16(day);
            b.str(host);
            b.i64(time_ns);
            b.u8(r.kind.code());
            b.str(r.label);
            b.u64(r.slow);
            b.u64(r.histogram.max_ns);
            b.u64(r.histogram.sum_ns);
            b.bytes(&schema::encode_buckets(&r.histogram.counts));
            b.u32(r.span_ms);
        }
        self.commit(mark, false)
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        let mark = self.mark();
        // A retry not yet due waits no longer: the caller asks for everything now.
        self.retry_at = None;
        self.commit(mark, true)
    }

    fn maintain(&mut self, _policy: &Policy) -> Result<Maintenance, StoreError> {
        // Retention is the database's (TTL, or `kflame store prune`); the writer's part is
        // to empty its spool when ClickHouse is back.
        let before = self.spool.bytes();
        if self.down.is_some() && self.retry_at.is_none_or(|t| Instant::now() >= t) {
            let mark = self.mark();
            let _ = self.commit(mark, true);
        }
        Ok(Maintenance { bytes_before: before, bytes_after: self.spool.bytes(), ..Maintenance::default() })
    }

    fn notes(&mut self) -> Vec<String> {
        let mut notes = std::mem::take(&mut self.notes);
        notes.extend(self.spool.notes());
        notes
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.pending_bytes() > 0 {
            let _ = self.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_days_since_the_epoch() {
        assert_eq!(day_of(0), 0);
        assert_eq!(day_of(schema::NS_PER_DAY - 1), 0);
        assert_eq!(day_of(schema::NS_PER_DAY), 1);
        assert_eq!(day_of(-5), 0);
        // 2026-11-27 is day 20_784.
        assert_eq!(day_of(1_795_737_600 * 1_000_000_000), 20_784);
    }
}
