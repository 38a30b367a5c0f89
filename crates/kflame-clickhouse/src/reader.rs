//! The reading side: [`Reader`] implements `kflame_store_api::Query` on ClickHouse with one SQL
//! statement per question, aggregated by the server (every shard in parallel on a cluster),
//! answered in `RowBinary`.

use kflame::fold::{Meta, StackCounts, Stacks, Unit, Weight};
use kflame_store_api::{
    CaptureId, Event, HostShare, Kind, LatencyKind, LatencyPoint, LatencyQuery, LatencySeries, Point,
    Profile, ProfileQuery, Query, SamplePoint, Series, SeriesQuery, StackId, StoreError, StoredEvent,
    TriggerId, labels::LabelSpan, stored_unit_name,
};
use rustc_hash::FxHashMap;

use crate::http::{Client, HttpError};
use crate::location::Location;
use crate::rowbinary::{ReadError, Reader as Rows};
use crate::schema::{self, HOUR_NS, SLOT_NS, day_of};

/// The units of a range's buckets: the first bucket's (a profile's), how many buckets have
/// it and how many another, and the `unit` term a query of the samples then needs.
struct Units {
    meta: Meta,
    buckets: u64,
    mixed: u64,
    filter: String,
}

/// A ClickHouse store being read.
#[derive(Debug, Clone)]
pub struct Reader {
    loc: Location,
    client: Client,
}

/// A SQL string literal.
pub fn lit(s: &str) -> String {
    lit_bytes(s.as_bytes())
}

/// A SQL string literal of any bytes.
pub fn lit_bytes(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for &b in s {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02X}")),
        }
    }
    out.push('\'');
    out
}

/// The `WHERE` terms of rows of `[from_ns, to_ns)`: their time, and their day (the partition
/// key: the server reads only the days of the range).
fn time_filter(from_ns: i64, to_ns: i64) -> String {
    format!(
        "time_ns >= {from_ns} AND time_ns < {to_ns} AND day >= toDate({}) AND day <= toDate({})",
        day_of(from_ns),
        day_of(to_ns.saturating_sub(1)),
    )
}

/// The `WHERE` terms of a profile query, after `kind`.
fn profile_filter(q: &ProfileQuery<'_>) -> String {
    let mut w = format!("kind = {} AND {}", q.kind.code(), time_filter(q.from_ns, q.to_ns));
    w.push_str(&host_filter(q.host, q.hosts));
    match q.capture {
        Some(c) => w.push_str(&format!(" AND capture = {}", c.0)),
        // The always-on profile (capture 0): captures are kept apart (Kind::has_always_on).
        None if q.kind.has_always_on() => w.push_str(" AND capture = 0"),
        None => {}
    }
    if let Some(cg) = q.cgroup {
        let cg = cg.trim_end_matches('/');
        if !cg.is_empty() {
            w.push_str(&format!(
                " AND (cgroup = {} OR startsWith(cgroup, {}))",
                lit(cg),
                lit(&format!("{cg}/"))
            ));
        }
    }
    w
}

/// The whole slots of `len` ns (10 minutes, an hour) of a query's range, `[a, b)` (`a >= b`:
/// none).
fn whole_slots(q: &ProfileQuery<'_>, len: i64) -> (i64, i64) {
    (
        q.from_ns.div_euclid(len).saturating_add(i64::from(q.from_ns.rem_euclid(len) != 0)) * len,
        q.to_ns.div_euclid(len) * len,
    )
}

/// A range read in two parts: its whole slots `[a, b)` by `slots` (a query of a table of
/// sums) and the rest by `edges(term)` (a query of the samples, `term` keeping only the
/// edges), their rows summed again by `outer` grouped by `key`. A range of whole slots has
/// no edges to read.
fn slots_and_edges(
    q: &ProfileQuery<'_>,
    (a, b): (i64, i64),
    slots: String,
    edges: impl FnOnce(&str) -> String,
    outer: &str,
    key: &str,
) -> String {
    if (a, b) == (q.from_ns, q.to_ns) {
        return slots;
    }
    let edges = edges(&format!(" AND (time_ns < {a} OR time_ns >= {b})"));
    format!("SELECT {key}, {outer} FROM ({edges} UNION ALL {slots}) GROUP BY {key}")
}

fn host_filter(host: Option<&str>, hosts: Option<&[String]>) -> String {
    let mut w = String::new();
    if let Some(h) = host {
        w.push_str(&format!(" AND host = {}", lit(h)));
    }
    if let Some(list) = hosts {
        if list.is_empty() {
            w.push_str(" AND 0");
        } else {
            let l: Vec<String> = list.iter().map(|h| lit(h)).collect();
            w.push_str(&format!(" AND host IN ({})", l.join(", ")));
        }
    }
    w
}

impl Reader {
    /// The stored metrics' series of `names` (not the ones derived from histograms).
    fn stored_series(&self, names: &[&str], q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = names.iter().map(|n| lit(n)).collect();
        let mut w = format!("name IN ({}) AND {}", list.join(", "), time_filter(q.from_ns, q.to_ns));
        if let Some(l) = q.label {
            w.push_str(&format!(" AND label = {}", lit(l)));
        }
        w.push_str(&host_filter(q.host, None));
        // Resampled on the server when asked for: cells of equal width from the range's
        // start (as the embedded store does), each with min, max, mean and count.
        let width = q
            .points
            .filter(|&n| n > 0)
            .map(|n| (((q.to_ns - q.from_ns) as i128 + n as i128 - 1) / n as i128).max(1) as i64);
        let sql = match width {
            Some(width) => format!(
                "SELECT name, host, label, {from} + intDiv(time_ns - {from}, {width}) * {width} AS cell, \
                 min(value), max(value), avg(value), count(), any(time_ns) FROM {} WHERE {w} \
                 GROUP BY name, host, label, cell ORDER BY name, host, label, cell",
                self.t("metrics"),
                from = q.from_ns,
            ),
            None => format!(
                "SELECT name, host, label, time_ns, value, value, value, toUInt64(1), time_ns FROM {} WHERE {w} \
                 ORDER BY name, host, label, time_ns",
                self.t("metrics")
            ),
        };
        let data = self.select(&sql)?;
        let mut r = Rows::new(&data);
        let mut found: Vec<(String, Series)> = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            let name = r.string().map_err(m)?;
            let host = r.string().map_err(m)?;
            let label = r.string().map_err(m)?;
            let cell = r.i64().map_err(m)?;
            let (min, max, avg) = (r.f64().map_err(m)?, r.f64().map_err(m)?, r.f64().map_err(m)?);
            let count = r.u64().map_err(m)?;
            let one_time = r.i64().map_err(m)?;
            let point = Point {
                // A cell of one value is that value at its own time.
                time_ns: if count == 1 { one_time } else { cell },
                min,
                max,
                avg,
                count: u32::try_from(count).unwrap_or(u32::MAX),
            };
            match found.last_mut() {
                Some((n, s)) if *n == name && s.host == host && s.label == label => s.points.push(point),
                _ => found.push((name.clone(), Series { host, name, label, points: vec![point] })),
            }
        }
        // A series of at most `points` values keeps every value, as in the embedded store.
        if let (Some(n), Some(_)) = (q.points, width) {
            for (_, s) in &mut found {
                let values: u64 = s.points.iter().map(|p| u64::from(p.count)).sum();
                if values as usize <= n && s.points.iter().any(|p| p.count > 1) {
                    let raw = self.stored_series(
                        &[s.name.as_str()],
                        &SeriesQuery { label: Some(&s.label), host: Some(&s.host), points: None, ..*q },
                    )?;
                    if let Some(one) = raw.into_iter().next() {
                        s.points = one.points;
                    }
                }
            }
        }
        // In the order of `names`, then host and label.
        let mut out = Vec::with_capacity(found.len());
        for name in names {
            out.extend(found.iter().filter(|(n, _)| n == name).map(|(_, s)| s.clone()));
        }
        Ok(out)
    }

    /// A reader of `loc`; fails when the server does not answer or lacks kflame's tables.
    pub fn open(loc: &Location) -> Result<Reader, StoreError> {
        let client = Client::new(loc);
        schema::check(&client, loc)
            .map_err(|e| StoreError::Other { store: loc.to_string(), detail: e.to_string() })?;
        Ok(Reader { loc: loc.clone(), client })
    }

    /// The location read.
    pub fn location(&self) -> &Location {
        &self.loc
    }

    fn http(&self, e: HttpError) -> StoreError {
        StoreError::Other { store: self.loc.to_string(), detail: e.to_string() }
    }

    /// The stored events of `capture` in `[from_ns, to_ns)` (and `cond`, SQL starting with
    /// ` AND`), in time order: a capture's, or the outliers of a family.
    fn events_where(
        &self,
        capture: CaptureId,
        from_ns: i64,
        to_ns: i64,
        cond: &str,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let data = self.select(&format!(
            "SELECT time_ns, duration_ns, pid, tid, comm, cpu, kind, event, stack_id, weight FROM {} \
             WHERE capture = {} AND time_ns >= {from_ns} AND time_ns < {to_ns}{cond} ORDER BY time_ns",
            self.t("events"),
            capture.0
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            let time_ns = r.i64().map_err(m)?;
            let d = r.i64().map_err(m)?;
            out.push(StoredEvent {
                capture,
                time_ns,
                duration_ns: (d >= 0).then_some(d as u64),
                pid: r.u32().map_err(m)?,
                tid: r.u32().map_err(m)?,
                comm: r.string().map_err(m)?,
                cpu: r.u32().map_err(m)?,
                kind: r.string().map_err(m)?,
                event: r.string().map_err(m)?,
                stack: StackId(r.u64().map_err(m)? as i64),
                weight: r.u64().map_err(m)?,
            });
        }
        Ok(out)
    }

    fn malformed(&self, e: ReadError) -> StoreError {
        StoreError::Corrupt { store: self.loc.to_string(), detail: e.to_string() }
    }

    /// The captures whose row meets `cond` (SQL on `captures`), with their end (a row of
    /// its own in `capture_ends`, when there is one; `ends` restricts the ends read).
    fn captures_where(&self, cond: &str, ends: &str) -> Result<Vec<Event>, StoreError> {
        let data = self.select(&format!(
            "SELECT c.id, c.host, c.kind, c.start_ns, e.n, e.end_ns, e.note, c.trigger FROM \
             (SELECT id, host, kind, start_ns, trigger FROM {} WHERE {cond}) AS c \
             ANY LEFT JOIN (SELECT id, count() AS n, any(end_ns) AS end_ns, any(note) AS note FROM {}{ends} GROUP BY id) AS e \
             USING id",
            self.t("captures"),
            self.t("capture_ends")
        ))?;
        let mut out = Vec::new();
        let mut r = Rows::new(&data);
        while !r.done() {
            let m = |e| self.malformed(e);
            let id = r.i64().map_err(m)?;
            let host = r.string().map_err(m)?;
            let code = r.u8().map_err(m)?;
            let start_ns = r.i64().map_err(m)?;
            let ended = r.u64().map_err(m)? > 0;
            let end_ns = r.i64().map_err(m)?;
            let note = r.string().map_err(m)?;
            let trigger = r.i64().map_err(m)?;
            let kind = Kind::from_code(i64::from(code)).ok_or_else(|| StoreError::Corrupt {
                store: self.loc.to_string(),
                detail: format!("capture {id} has unknown kind {code}"),
            })?;
            out.push(Event::Capture {
                id: CaptureId(id),
                host,
                kind,
                start_ns,
                end_ns: ended.then_some(end_ns),
                trigger: (trigger != 0).then_some(TriggerId(trigger)),
                note: ended.then_some(note),
            });
        }
        Ok(out)
    }

    /// Runs a `SELECT` and returns its rows in `RowBinary`.
    pub fn select(&self, sql: &str) -> Result<Vec<u8>, StoreError> {
        self.select_with(sql, &[])
    }

    fn select_with(&self, sql: &str, more: &[(&str, &str)]) -> Result<Vec<u8>, StoreError> {
        let mut settings = vec![
            ("max_query_size", "67108864"),
            ("max_ast_elements", "4000000"),
            ("max_expanded_ast_elements", "4000000"),
        ];
        settings.extend_from_slice(more);
        self.client.query(&format!("{sql} FORMAT RowBinary"), &settings).map_err(|e| self.http(e))
    }

    fn t(&self, name: &str) -> String {
        self.loc.table(name)
    }

    /// Stack texts by id, for the days `[from, to)` spans. The ids go as an external table,
    /// not as SQL text: a fleet's profile names tens of thousands.
    fn texts(&self, ids: &[u64], from_ns: i64, to_ns: i64) -> Result<FxHashMap<u64, Vec<u8>>, StoreError> {
        let mut out = FxHashMap::default();
        if ids.is_empty() {
            return Ok(out);
        }
        let mut rows = Vec::with_capacity(ids.len() * 8);
        for id in ids {
            rows.extend_from_slice(&id.to_le_bytes());
        }
        let sql = format!(
            "SELECT stack_id, any(stack) FROM {} WHERE day >= toDate({}) AND day <= toDate({}) \
             AND stack_id GLOBAL IN (SELECT stack_id FROM wanted) GROUP BY stack_id FORMAT RowBinary",
            self.t("stacks"),
            day_of(from_ns),
            day_of(to_ns.saturating_sub(1)),
        );
        let data = self
            .client
            .query_with_table(&sql, &[], "wanted", "stack_id UInt64", &rows)
            .map_err(|e| self.http(e))?;
        let mut r = Rows::new(&data);
        while !r.done() {
            let id = r.u64().map_err(|e| self.malformed(e))?;
            let text = r.bytes().map_err(|e| self.malformed(e))?;
            out.insert(id, text.to_vec());
        }
        Ok(out)
    }

    /// The units of the range's buckets (`None`: no bucket in the range).
    fn bucket_units(&self, q: &ProfileQuery<'_>) -> Result<Option<Units>, StoreError> {
        let mut w = format!(
            "kind = {} AND start_ns < {} AND end_ns > {} AND day >= toDate({}) AND day <= toDate({})",
            q.kind.code(),
            q.to_ns,
            q.from_ns,
            day_of(q.from_ns.saturating_sub(3_600_000_000_000)),
            day_of(q.to_ns.saturating_sub(1)),
        );
        w.push_str(&host_filter(q.host, q.hosts));
        match q.capture {
            Some(c) => w.push_str(&format!(" AND capture = {}", c.0)),
            None if q.kind.has_always_on() => w.push_str(" AND capture = 0"),
            None => {}
        }
        let data = self.select(&format!(
            "SELECT unit, argMin(event, start_ns), min(start_ns) AS first, count() FROM {} WHERE {w} \
             GROUP BY unit ORDER BY first",
            self.t("buckets")
        ))?;
        let mut r = Rows::new(&data);
        let (mut meta, mut same, mut mixed) = (None, 0, 0);
        while !r.done() {
            let m = |e| self.malformed(e);
            let unit = r.string().map_err(m)?;
            let event = r.string().map_err(m)?;
            let _first = r.i64().map_err(m)?;
            let n = r.u64().map_err(m)?;
            if meta.is_none() {
                meta =
                    Some(Meta { unit: Unit::from_name(&unit), event: (!event.is_empty()).then_some(event) });
                same = n;
            } else {
                mixed += n;
            }
        }
        Ok(meta.map(|meta: Meta| {
            // Only when another unit is in the range does the unit column need reading.
            let filter = if mixed > 0 {
                format!(" AND unit = {}", lit(stored_unit_name(&meta.unit)))
            } else {
                String::new()
            };
            Units { meta, buckets: same, mixed, filter }
        }))
    }

    /// Compressed and uncompressed bytes and rows of each table's active parts, from
    /// `system.parts`: of every shard on a cluster, of the server read otherwise.
    pub fn storage(&self) -> Result<Vec<(String, u64, u64, u64)>, StoreError> {
        let parts = match &self.loc.cluster {
            Some(c) => format!("cluster({}, system.parts)", lit(c)),
            None => "system.parts".to_string(),
        };
        let data = self.select(&format!(
            "SELECT table, sum(data_compressed_bytes), sum(data_uncompressed_bytes), sum(rows) FROM {parts} \
             WHERE database = {} AND active GROUP BY table ORDER BY table",
            lit(&self.loc.database)
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            out.push((r.string().map_err(m)?, r.u64().map_err(m)?, r.u64().map_err(m)?, r.u64().map_err(m)?));
        }
        Ok(out)
    }
}

impl Query for Reader {
    fn profile(&self, q: &ProfileQuery<'_>) -> Result<Profile, StoreError> {
        let Some(Units { meta, buckets, mixed, filter: unit_filter }) = self.bucket_units(q)? else {
            return Ok(Profile {
                stacks: Stacks::Counts(StackCounts::new()),
                meta: Meta::default(),
                samples: 0,
                buckets: 0,
                mixed_units: 0,
            });
        };
        // Every host, every capture and cgroup: whole 10-minute slots come from the fleet's
        // per-slot sums, only the edges from the samples.
        let (a, b) = whole_slots(q, SLOT_NS);
        let whole_slots =
            q.host.is_none() && q.hosts.is_none() && q.capture.is_none() && q.cgroup.is_none() && a < b;
        let edges = |term: &str| {
            format!(
                "SELECT stack_id, sum(weight) AS w, sum(weight_nano) AS n, count() AS c FROM {} WHERE {}{unit_filter}\
                 {term} GROUP BY stack_id",
                self.t("samples"),
                profile_filter(q),
            )
        };
        let sql = if whole_slots {
            let slots = format!(
                "SELECT stack_id, sum(weight), sum(weight_nano), sum(samples) FROM {} WHERE kind = {} AND slot >= {a} \
                 AND slot < {b} AND day >= toDate({}) AND day <= toDate({}){unit_filter} GROUP BY stack_id",
                self.t("samples_10m"),
                q.kind.code(),
                day_of(a),
                day_of(b - 1),
            );
            slots_and_edges(q, (a, b), slots, edges, "sum(w), sum(n), sum(c)", "stack_id")
        } else {
            edges("")
        };
        let data = self.select(&sql)?;
        let mut r = Rows::new(&data);
        let mut sums: Vec<(u64, Weight)> = Vec::new();
        let mut samples = 0u64;
        while !r.done() {
            let m = |e| self.malformed(e);
            let id = r.u64().map_err(m)?;
            let w = r.weight_sum().map_err(m)?;
            samples += r.u64().map_err(m)?;
            sums.push((id, w));
        }
        let ids: Vec<u64> = sums.iter().map(|s| s.0).collect();
        let texts = self.texts(&ids, q.from_ns, q.to_ns)?;
        let mut counts = StackCounts::new();
        counts.reserve(sums.len());
        let mut missing = 0u64;
        for (id, w) in sums {
            match texts.get(&id) {
                Some(t) => counts.add(t, w),
                None => missing += 1,
            }
        }
        if missing > 0 {
            return Err(StoreError::Corrupt {
                store: self.loc.to_string(),
                detail: format!("{missing} stacks of the range have samples but no text in the stacks table"),
            });
        }
        Ok(Profile { stacks: Stacks::Counts(counts), meta, samples, buckets, mixed_units: mixed })
    }

    fn samples(&self, q: &ProfileQuery<'_>) -> Result<Vec<SamplePoint>, StoreError> {
        let data = self.select(&format!(
            "SELECT time_ns, cpu, stack_id, weight, weight_nano FROM {} WHERE {} AND timed = 1 ORDER BY time_ns, cpu",
            self.t("samples"),
            profile_filter(q)
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            out.push(SamplePoint {
                time_ns: r.i64().map_err(m)?,
                cpu: r.u32().map_err(m)?,
                stack: StackId(r.u64().map_err(m)? as i64),
                weight: r.weight().map_err(m)?,
            });
        }
        Ok(out)
    }

    fn stack_text(&self, id: StackId) -> Result<Vec<u8>, StoreError> {
        let mut t = self.stack_texts(&[id])?;
        Ok(t.pop().unwrap_or_default())
    }

    fn stack_texts(&self, ids: &[StackId]) -> Result<Vec<Vec<u8>>, StoreError> {
        let raw: Vec<u64> = ids.iter().map(|i| i.0 as u64).collect();
        let texts = self.texts(&raw, 0, i64::MAX)?;
        raw.iter()
            .map(|id| {
                texts.get(id).cloned().ok_or_else(|| StoreError::Invalid {
                    store: self.loc.to_string(),
                    detail: format!("no stack {}", *id as i64),
                })
            })
            .collect()
    }

    fn series(&self, q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        self.series_many(&[q.name], q)
    }

    fn latency(&self, q: &LatencyQuery<'_>) -> Result<Vec<LatencySeries>, StoreError> {
        let mut w = format!("kind = {} AND {}", q.kind.code(), time_filter(q.from_ns, q.to_ns));
        if let Some(l) = q.label {
            w.push_str(&format!(" AND label = {}", lit(l)));
        }
        w.push_str(&host_filter(q.host, None));
        let data = self.select(&format!(
            "SELECT host, label, time_ns, slow, max_ns, sum_ns, buckets, span_ms FROM {} WHERE {w} \
             ORDER BY host, label, time_ns",
            self.t("latency")
        ))?;
        let mut r = Rows::new(&data);
        let mut out: Vec<LatencySeries> = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            let (host, label) = (r.string().map_err(m)?, r.string().map_err(m)?);
            let (time_ns, slow, max_ns, sum_ns) =
                (r.i64().map_err(m)?, r.u64().map_err(m)?, r.u64().map_err(m)?, r.u64().map_err(m)?);
            let mut histogram = kflame::latency::Histogram { max_ns, sum_ns, ..Default::default() };
            let buckets = r.bytes().map_err(m)?;
            if schema::decode_buckets(buckets, &mut histogram.counts).is_none() {
                return Err(StoreError::Corrupt {
                    store: self.loc.to_string(),
                    detail: format!("latency buckets of {host} {label} at {time_ns} cannot be read"),
                });
            }
            // Rows of batches spooled before the column was added and sent after may hold 0 (the
            // type's default rather than the column's): a read of a second, as all were then.
            let span_ms = match r.u32().map_err(m)? {
                0 => schema::SPAN_MS_BEFORE,
                s => s,
            };
            let point = LatencyPoint { time_ns, histogram, slow, span_ms };
            match out.last_mut() {
                Some(s) if s.host == host && s.label == label => s.points.push(point),
                _ => out.push(LatencySeries { host, kind: q.kind, label, points: vec![point] }),
            }
        }
        Ok(out)
    }

    fn latency_labels(
        &self,
        host: Option<&str>,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<(LatencyKind, String)>, StoreError> {
        let data = self.select(&format!(
            "SELECT DISTINCT kind, label FROM {} WHERE {}{} ORDER BY kind, label",
            self.t("latency"),
            time_filter(from_ns, to_ns),
            host_filter(host, None)
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            let code = r.u8().map_err(m)?;
            let label = r.string().map_err(m)?;
            if let Some(k) = LatencyKind::from_code(code) {
                out.push((k, label));
            }
        }
        Ok(out)
    }

    fn series_many(&self, names: &[&str], q: &SeriesQuery<'_>) -> Result<Vec<Series>, StoreError> {
        kflame_store_api::derived::series_many(
            names,
            q,
            |names, q| self.stored_series(names, q),
            |lq| self.latency(lq),
        )
    }

    fn metric_names(&self, host: Option<&str>) -> Result<Vec<(String, String)>, StoreError> {
        let data = self.select(&format!(
            "SELECT DISTINCT name, label FROM {} WHERE 1{} ORDER BY name, label",
            self.t("metrics"),
            host_filter(host, None)
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let n = r.string().map_err(|e| self.malformed(e))?;
            let l = r.string().map_err(|e| self.malformed(e))?;
            out.push((n, l));
        }
        let labels = self.latency_labels(host, i64::MIN, i64::MAX)?;
        Ok(kflame_store_api::derived::with_names(out, &labels))
    }

    fn events(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
        let hf = host_filter(host, None);
        let mut out = Vec::new();
        let data = self.select(&format!(
            "SELECT id, host, time_ns, rule, metric, value, threshold FROM {} \
             WHERE time_ns >= {from_ns} AND time_ns < {to_ns}{hf}",
            self.t("triggers")
        ))?;
        let mut r = Rows::new(&data);
        while !r.done() {
            let m = |e| self.malformed(e);
            out.push(Event::Trigger {
                id: TriggerId(r.i64().map_err(m)?),
                host: r.string().map_err(m)?,
                time_ns: r.i64().map_err(m)?,
                rule: r.string().map_err(m)?,
                metric: r.string().map_err(m)?,
                value: r.f64().map_err(m)?,
                threshold: r.f64().map_err(m)?,
            });
        }
        // As the embedded store: captures that overlap the range or start in it.
        let captures = self.captures_where(&format!("start_ns < {to_ns}{hf}"), "")?;
        out.extend(captures.into_iter().filter(|c| match c {
            Event::Capture { start_ns, end_ns, .. } => {
                end_ns.is_none_or(|e| e > from_ns) || *start_ns >= from_ns
            }
            _ => false,
        }));
        out.extend(self.reports(from_ns, to_ns, host)?);
        out.sort_by(|a, b| a.time_ns().cmp(&b.time_ns()).then_with(|| a.host().cmp(b.host())));
        Ok(out)
    }

    fn reports(&self, from_ns: i64, to_ns: i64, host: Option<&str>) -> Result<Vec<Event>, StoreError> {
        let hf = host_filter(host, None);
        let data = self.select(&format!(
            "SELECT host, time_ns, kind, title, stack, text FROM {} WHERE time_ns >= {from_ns} AND time_ns < {to_ns}{hf}",
            self.t("reports")
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            out.push(Event::Report {
                host: r.string().map_err(m)?,
                time_ns: r.i64().map_err(m)?,
                kind: r.string().map_err(m)?,
                title: r.string().map_err(m)?,
                stack: r.string().map_err(m)?,
                text: r.string().map_err(m)?,
            });
        }
        out.sort_by(|a, b| a.time_ns().cmp(&b.time_ns()).then_with(|| a.host().cmp(b.host())));
        Ok(out)
    }

    fn capture(&self, id: CaptureId) -> Result<Option<Event>, StoreError> {
        let id = id.0;
        Ok(self.captures_where(&format!("id = {id}"), &format!(" WHERE id = {id}"))?.pop())
    }

    fn capture_event_count(&self, capture: CaptureId) -> Result<u64, StoreError> {
        let data =
            self.select(&format!("SELECT count() FROM {} WHERE capture = {}", self.t("events"), capture.0))?;
        Rows::new(&data).u64().map_err(|e| self.malformed(e))
    }

    fn capture_events(
        &self,
        capture: CaptureId,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.events_where(capture, from_ns, to_ns, "")
    }

    fn outliers(
        &self,
        kind: LatencyKind,
        from_ns: i64,
        to_ns: i64,
        host: Option<&str>,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        self.events_where(kflame_store_api::outlier_capture(kind), from_ns, to_ns, &host_filter(host, None))
    }

    fn hosts(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.host_labels()?.into_iter().map(|(h, _)| h).collect())
    }

    fn host_labels(&self) -> Result<Vec<(String, String)>, StoreError> {
        let data = self.select(&format!(
            "SELECT host, argMax(labels, time_ns) FROM {} GROUP BY host ORDER BY host",
            self.t("hosts")
        ))?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let h = r.string().map_err(|e| self.malformed(e))?;
            let l = r.string().map_err(|e| self.malformed(e))?;
            out.push((h, l));
        }
        Ok(out)
    }

    /// From the `hosts` rows (each writer's labels from the first time it wrote on each
    /// day): the last one of each host at or before the range, and those inside it.
    fn host_label_spans(&self, from_ns: i64, to_ns: i64) -> Result<Vec<LabelSpan>, StoreError> {
        let data = self.select(&format!(
            "SELECT host, max(time_ns), argMax(labels, time_ns) FROM {t} WHERE time_ns <= {from_ns} GROUP BY host \
             UNION ALL SELECT host, time_ns, labels FROM {t} WHERE time_ns > {from_ns} AND time_ns < {to_ns}",
            t = self.t("hosts")
        ))?;
        let mut r = Rows::new(&data);
        let mut rows = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            let h = r.string().map_err(m)?;
            let t = r.i64().map_err(m)?;
            rows.push((h, t, r.string().map_err(m)?));
        }
        Ok(kflame_store_api::labels::spans(rows, from_ns, to_ns))
    }

    fn time_bounds(&self) -> Result<Option<(i64, i64)>, StoreError> {
        let data = self.select(&format!(
            "SELECT count(), min(start_ns), max(end_ns) FROM {} \
             UNION ALL SELECT count(), min(time_ns), max(time_ns) FROM {} \
             UNION ALL SELECT count(), min(time_ns), max(time_ns) FROM {} \
             UNION ALL SELECT count(), min(start_ns), max(start_ns) FROM {} \
             UNION ALL SELECT count(), min(end_ns), max(end_ns) FROM {} \
             UNION ALL SELECT count(), min(time_ns), max(time_ns) FROM {}",
            self.t("buckets"),
            self.t("metrics"),
            self.t("triggers"),
            self.t("captures"),
            self.t("capture_ends"),
            self.t("reports"),
        ))?;
        let mut r = Rows::new(&data);
        let mut bounds: Option<(i64, i64)> = None;
        while !r.done() {
            let m = |e| self.malformed(e);
            let n = r.u64().map_err(m)?;
            let (lo, hi) = (r.i64().map_err(m)?, r.i64().map_err(m)?);
            if n > 0 {
                bounds = Some(bounds.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
            }
        }
        Ok(bounds)
    }

    fn host_shares(&self, q: &ProfileQuery<'_>, frame: &str) -> Result<Vec<HostShare>, StoreError> {
        let Some(units) = self.bucket_units(q)? else { return Ok(Vec::new()) };
        // The stacks that hold the frame, found by each shard in its own texts (a host's
        // texts live on its samples' shard: `distributed_product_mode=local` reads the local
        // table in the subquery; PREWHERE tests the exact frame only on texts that hold its
        // name). Then each host's weight in them and in all: whole hours from its
        // hourly sums (host_stacks_1h), the edges of the range from the samples.
        let frame_match = format!(
            "(stack = {f} OR startsWith(stack, {fs}) OR endsWith(stack, {sf}) OR position(stack, {sfs}) > 0)",
            f = lit(frame),
            fs = lit(&format!("{frame};")),
            sf = lit(&format!(";{frame}")),
            sfs = lit(&format!(";{frame};")),
        );
        let holding = format!(
            "SELECT stack_id FROM {} PREWHERE position(stack, {}) > 0 WHERE day >= toDate({}) AND day <= toDate({}) \
             AND {frame_match}",
            self.t("stacks"),
            lit(frame),
            day_of(q.from_ns),
            day_of(q.to_ns.saturating_sub(1)),
        );
        let (a, b) = whole_slots(q, HOUR_NS);
        let whole = q.capture.is_none() && q.cgroup.is_none() && a < b;
        let u = &units.filter;
        // Each branch: the host, its weight in those stacks (whole part, billionths), in all.
        let sums = format!(
            "sumIf(weight, stack_id IN ({holding})) AS f, sumIf(weight_nano, stack_id IN ({holding})) AS fn, \
             sum(weight) AS t, sum(weight_nano) AS tn"
        );
        let edges = |term: &str| {
            format!(
                "SELECT host, {sums} FROM {} WHERE {}{u}{term} GROUP BY host",
                self.t("samples"),
                profile_filter(q)
            )
        };
        let sql = if whole {
            let slots = format!(
                "SELECT host, {sums} FROM {} WHERE kind = {} AND slot >= {a} AND slot < {b} AND day >= toDate({}) \
                 AND day <= toDate({}){u}{} GROUP BY host",
                self.t("host_stacks_1h"),
                q.kind.code(),
                day_of(a),
                day_of(b - 1),
                host_filter(q.host, q.hosts),
            );
            slots_and_edges(q, (a, b), slots, edges, "sum(f), sum(fn), sum(t), sum(tn)", "host")
        } else {
            edges("")
        };
        let data = self.select_with(&sql, &[("distributed_product_mode", "local")])?;
        let mut r = Rows::new(&data);
        let mut out = Vec::new();
        while !r.done() {
            let m = |e| self.malformed(e);
            out.push(HostShare {
                host: r.string().map_err(m)?,
                frame: r.weight_sum().map_err(m)?,
                total: r.weight_sum().map_err(m)?,
            });
        }
        out.sort_by(|a, b| b.frame.cmp(&a.frame).then_with(|| a.host.cmp(&b.host)));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_quotes_backslashes_and_bytes() {
        assert_eq!(lit("a'b\\c"), "'a\\'b\\\\c'");
        assert_eq!(lit_bytes(b"x\n\xff"), "'x\\x0A\\xFF'");
    }
}
