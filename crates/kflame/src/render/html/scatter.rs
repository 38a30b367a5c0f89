//! The latency scatter page: every event a point (x = time, y = latency), linked to flame
//! graphs drawn by the viewer of this module tree (`assets/scatter.js` builds a
//! `FlameViewer` on the stacks of a point or of a selection).
//!
//! [`ScatterBuilder`] takes events one at a time, from JSON event lines
//! ([`ScatterBuilder::read_json_lines`]: `kflame collapse --events-json`, `kflame record`'s
//! `.json`) or from any other source ([`ScatterBuilder::push`]: the events a history store
//! keeps for a capture). It keeps them as columns (time, latency, pid, tid, CPU, and ids of
//! interned task names, event names, stacks and functions), about 30 bytes an event
//! whatever the input, and never holds a whole input or a parsed JSON document.
//! [`ScatterBuilder::encode`] turns the columns into little-endian typed arrays in base64
//! plus one JSON object (string tables and what each column is), which
//! [`write_scatter_page`] embeds in one self-contained page and a server sends as
//! [`ScatterData::to_json`] to a page that loads `scatter.js` itself.
//!
//! Malformed lines are skipped and counted in [`Diagnostics`] with their line numbers;
//! an event without a stack is kept under the frame [`NO_STACK`]; an event without a
//! duration is no latency and is skipped and counted. Task and frame names reach the page
//! only inside script-safe JSON and are put into the DOM with `textContent`.

mod parse;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::page::{ASSETS, escape_html, inline_module};
use crate::diag::Diagnostics;
use crate::render::json::{to_script_safe_raw, to_script_safe_string};
use crate::text::{LINE_TOO_LONG, Line, LineReader, line_too_long_message};

/// The frame an event without a stack is kept under.
pub const NO_STACK: &str = "[no stack]";

/// Skipped: a line that is not a JSON event object.
pub const MALFORMED: &str = "malformed event line";
/// Skipped: an event without `duration_ns` (a single event has no latency to plot).
pub const NO_DURATION: &str = "event without duration";

/// One event given to [`ScatterBuilder::push`].
#[derive(Clone, Copy, Debug)]
pub struct ScatterEvent<'a> {
    /// Start, ns of the producer's clock (`None`: unknown).
    pub ts_ns: Option<i64>,
    /// Latency, ns.
    pub duration_ns: u64,
    /// CPU (`None`: unknown).
    pub cpu: Option<u32>,
    /// Process id (`None`: unknown).
    pub pid: Option<u32>,
    /// Thread id (`None`: unknown).
    pub tid: Option<u32>,
    /// Task name.
    pub comm: Option<&'a str>,
    /// Event name (`syscall:write`, `function_graph`).
    pub event: &'a str,
    /// The stack, from [`ScatterBuilder::intern_stack`].
    pub stack: StackRef,
}

/// A stack interned by a [`ScatterBuilder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackRef(u32);

/// Titles and notes of the page.
#[derive(Clone, Debug, Default)]
pub struct ScatterOptions {
    /// Page title (default "Latency scatter").
    pub title: Option<String>,
    /// A line under the title (the inputs).
    pub subtitle: Option<String>,
    /// Free text shown on the page (what was skipped).
    pub notes: Option<String>,
}

/// Strings interned in first-seen order.
#[derive(Debug, Default)]
struct Interner {
    ids: HashMap<Box<str>, u32>,
    list: Vec<Box<str>>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(s.into(), id);
        self.list.push(s.into());
        id
    }
}

/// The events of a page, as columns.
#[derive(Debug, Default)]
pub struct ScatterBuilder {
    frames: Interner,
    comms: Interner,
    events: Interner,
    stacks: HashMap<Vec<u32>, u32>,
    /// Frame ids of every stack, each stack as its length then its ids.
    stack_list: Vec<u32>,
    stack_count: u32,
    /// Where each stack starts in `stack_list`.
    stack_off: Vec<usize>,
    /// The stack [`NO_STACK`], once used.
    no_stack_id: Option<u32>,
    /// The function of an (event name, stack) pair: a frame id.
    funcs: HashMap<(u32, u32), u32>,
    ts: Vec<i64>,
    timed: usize,
    dur: Vec<u64>,
    pid: Vec<i32>,
    tid: Vec<i32>,
    has_tid: bool,
    cpu: Vec<u32>,
    comm: Vec<u32>,
    event: Vec<u32>,
    stack: Vec<u32>,
    func: Vec<u32>,
    no_stack: u64,
    scratch: Vec<u32>,
}

/// The encoded page data: see [`ScatterBuilder::encode`].
#[derive(Clone, Debug)]
pub struct ScatterData {
    /// JSON object (script-safe): title, counts, string tables, column types.
    pub meta: Box<RawValue>,
    /// Each column's name and its little-endian typed array in base64.
    pub columns: Vec<(&'static str, String)>,
}

impl PartialEq for ScatterData {
    fn eq(&self, other: &Self) -> bool {
        self.meta.get() == other.meta.get() && self.columns == other.columns
    }
}

impl Eq for ScatterData {}

impl ScatterData {
    /// `{"meta": {...}, "columns": {"t": "base64", ...}}`: what a served page fetches
    /// (script-safe, as the page's own data).
    pub fn to_json(&self) -> String {
        to_script_safe_string(&Served { meta: &self.meta, columns: Columns(&self.columns) })
    }
}

/// [`ScatterData::to_json`].
#[derive(Serialize)]
struct Served<'a> {
    meta: &'a RawValue,
    columns: Columns<'a>,
}

/// The columns as one object, in their order.
struct Columns<'a>(&'a [(&'static str, String)]);

impl Serialize for Columns<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(name, b64)| (name, b64)))
    }
}

impl ScatterBuilder {
    /// No events yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of events taken.
    pub fn len(&self) -> usize {
        self.dur.len()
    }

    /// True without events.
    pub fn is_empty(&self) -> bool {
        self.dur.is_empty()
    }

    /// Events kept under [`NO_STACK`].
    pub fn without_stack(&self) -> u64 {
        self.no_stack
    }

    /// Events without a time among events with one: left out of the page (their place on
    /// the time axis is unknown). When no event has a time, the x axis is the event order.
    pub fn untimed_left_out(&self) -> usize {
        if self.timed == 0 { 0 } else { self.len() - self.timed }
    }

    /// Interns a stack (root first); no frames is the stack [`NO_STACK`].
    pub fn intern_stack<'a>(&mut self, frames: impl IntoIterator<Item = &'a str>) -> StackRef {
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        ids.extend(frames.into_iter().map(|f| self.frames.id(f)));
        let r = self.stack_of_ids(&mut ids);
        self.scratch = ids;
        r
    }

    fn stack_of_ids(&mut self, ids: &mut Vec<u32>) -> StackRef {
        let empty = ids.is_empty();
        if empty {
            ids.push(self.frames.id(NO_STACK));
        }
        let r = self.stack_of_nonempty(ids);
        if empty {
            self.no_stack_id = Some(r.0);
        }
        r
    }

    fn stack_of_nonempty(&mut self, ids: &[u32]) -> StackRef {
        if let Some(&id) = self.stacks.get(ids) {
            return StackRef(id);
        }
        let id = self.stack_count;
        self.stack_count += 1;
        self.stack_off.push(self.stack_list.len());
        self.stack_list.push(ids.len() as u32);
        self.stack_list.extend_from_slice(ids);
        self.stacks.insert(ids.to_vec(), id);
        StackRef(id)
    }

    /// Frame ids of stack `id`.
    fn frames_of(&self, id: u32) -> &[u32] {
        let at = self.stack_off.get(id as usize).copied().unwrap_or(0);
        let len = self.stack_list.get(at).copied().unwrap_or(0) as usize;
        self.stack_list.get(at + 1..at + 1 + len).unwrap_or(&[])
    }

    /// The frame names of stack `id`, root first (tests and servers describing a point).
    pub fn stack_names(&self, stack: StackRef) -> Vec<&str> {
        self.frames_of(stack.0).iter().map(|&f| &*self.frames.list[f as usize]).collect()
    }

    /// Takes one event.
    pub fn push(&mut self, e: &ScatterEvent<'_>) {
        let event = self.events.id(e.event);
        let func = match self.funcs.get(&(event, e.stack.0)) {
            Some(&f) => f,
            None => {
                let f = self.function_of(e.event, e.stack);
                self.funcs.insert((event, e.stack.0), f);
                f
            }
        };
        if self.no_stack_id == Some(e.stack.0) {
            self.no_stack += 1;
        }
        self.ts.push(e.ts_ns.unwrap_or(i64::MIN));
        self.timed += usize::from(e.ts_ns.is_some());
        self.dur.push(e.duration_ns);
        self.pid.push(e.pid.map_or(-1, |p| i32::try_from(p).unwrap_or(-1)));
        self.tid.push(e.tid.map_or(-1, |p| i32::try_from(p).unwrap_or(-1)));
        self.has_tid |= e.tid.is_some();
        self.cpu.push(e.cpu.unwrap_or(u32::MAX));
        let comm = self.comms.id(e.comm.unwrap_or(""));
        self.comm.push(comm);
        self.event.push(event);
        self.stack.push(e.stack.0);
        self.func.push(func);
    }

    /// What the function of an event is: the system call of `syscall:NAME`, the root frame
    /// of `record`'s system calls (which it names by their call), else the leaf.
    fn function_of(&mut self, event: &str, stack: StackRef) -> u32 {
        if let Some(name) = event.strip_prefix("syscall:") {
            return self.frames.id(name);
        }
        let frames = self.frames_of(stack.0);
        let pick = if event.starts_with("raw_syscalls:") { frames.first() } else { frames.last() };
        match pick {
            Some(&f) => f,
            None => self.frames.id(NO_STACK),
        }
    }

    /// Reads JSON event lines (one object a line, the schema of [`crate::events`]). Blank
    /// lines are ignored; malformed ones and events without a duration are skipped and
    /// counted in `diag` with their line numbers. Returns the number of events taken.
    pub fn read_json_lines<R: BufRead>(&mut self, input: R, diag: &mut Diagnostics) -> io::Result<u64> {
        let mut reader = LineReader::new(input);
        let mut taken = 0;
        let mut frames: Vec<u32> = Vec::new();
        while let Some(line) = reader.next_line()? {
            let (number, bytes) = match line {
                Line::Text(n, b) => (n, b),
                Line::TooLong(n, len) => {
                    diag.skip(LINE_TOO_LONG, n, || line_too_long_message(len));
                    continue;
                }
            };
            let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let Ok(text) = std::str::from_utf8(bytes) else {
                diag.skip(MALFORMED, number, || "the line is not UTF-8 (JSON text is)".to_string());
                continue;
            };
            frames.clear();
            let frames_ref = &mut frames;
            let interner = &mut self.frames;
            let parsed = parse::parse_line(text, &mut |f: Cow<'_, str>| frames_ref.push(interner.id(&f)));
            let fields = match parsed {
                Ok(f) => f,
                Err(msg) => {
                    diag.skip(MALFORMED, number, || {
                        format!("{msg}; expected one JSON event object per line")
                    });
                    continue;
                }
            };
            let Some(duration_ns) = fields.duration_ns else {
                diag.skip(NO_DURATION, number, || {
                    "`duration_ns` is null or missing: a single event has no latency to plot".to_string()
                });
                continue;
            };
            let stack = self.stack_of_ids(&mut frames);
            let event = fields.event.as_deref().unwrap_or("");
            self.push(&ScatterEvent {
                ts_ns: fields.ts_ns,
                duration_ns,
                cpu: fields.cpu,
                pid: fields.pid,
                tid: fields.tid,
                comm: fields.comm.as_deref(),
                event,
                stack,
            });
            taken += 1;
        }
        Ok(taken)
    }

    /// The page data: columns `t` (ns after `t0`, or the event's number when no event has
    /// a time), `d` (latency ns) as f64; `pid`, `tid` (when any event has one) as i32, −1
    /// unknown; `cpu`, `comm`, `event`, `stack`, `func` as the narrowest unsigned type
    /// that holds their largest value (`cpu` unknown is that type's maximum); `stacks`,
    /// each stack as its length then its frame ids, u32.
    pub fn encode(&self, opts: &ScatterOptions) -> ScatterData {
        let keep: Vec<usize> = if self.timed == 0 || self.timed == self.len() {
            (0..self.len()).collect()
        } else {
            (0..self.len()).filter(|&i| self.ts[i] != i64::MIN).collect()
        };
        let t0 = keep.iter().map(|&i| self.ts[i]).min().filter(|_| self.timed > 0).unwrap_or(0);
        let t: Vec<f64> = keep
            .iter()
            .enumerate()
            .map(|(n, &i)| if self.timed == 0 { n as f64 } else { (self.ts[i] - t0) as f64 })
            .collect();
        let mut columns = Vec::new();
        let mut types = Vec::new();
        let mut add = |name: &'static str, ty: &'static str, bytes: Vec<u8>| {
            types.push((name, ty));
            columns.push((name, super::encode::base64(&bytes)));
        };
        add("t", "f64", t.iter().flat_map(|v| v.to_le_bytes()).collect());
        add("d", "f64", keep.iter().flat_map(|&i| (self.dur[i] as f64).to_le_bytes()).collect());
        add("pid", "i32", keep.iter().flat_map(|&i| self.pid[i].to_le_bytes()).collect());
        if self.has_tid {
            add("tid", "i32", keep.iter().flat_map(|&i| self.tid[i].to_le_bytes()).collect());
        }
        for (name, col) in [
            ("cpu", &self.cpu),
            ("comm", &self.comm),
            ("event", &self.event),
            ("stack", &self.stack),
            ("func", &self.func),
        ] {
            let (ty, bytes) = narrow(keep.iter().map(|&i| col[i]));
            add(name, ty, bytes);
        }
        add("stacks", "u32", self.stack_list.iter().flat_map(|v| v.to_le_bytes()).collect());
        let meta = MetaJson {
            version: 1,
            title: opts.title.as_deref().unwrap_or("Latency scatter"),
            subtitle: opts.subtitle.as_deref(),
            notes: opts.notes.as_deref(),
            count: keep.len(),
            unit: "ns",
            timed: self.timed > 0,
            t0: format_seconds(t0),
            no_stack: NO_STACK,
            names: &self.frames.list,
            comms: &self.comms.list,
            events: &self.events.list,
            types: types.iter().map(|&(n, t)| (n, t)).collect(),
        };
        ScatterData { meta: to_script_safe_raw(&meta), columns }
    }
}

/// The values as the narrowest of u8, u16, u32 (`u32::MAX`, an unknown CPU, becomes that
/// type's maximum).
fn narrow(values: impl Iterator<Item = u32> + Clone) -> (&'static str, Vec<u8>) {
    let max = values.clone().filter(|&v| v != u32::MAX).max().unwrap_or(0);
    if max < u8::MAX as u32 {
        ("u8", values.map(|v| v.min(u8::MAX as u32) as u8).collect())
    } else if max < u16::MAX as u32 {
        ("u16", values.flat_map(|v| (v.min(u16::MAX as u32) as u16).to_le_bytes()).collect())
    } else {
        ("u32", values.flat_map(u32::to_le_bytes).collect())
    }
}

/// ns as exact seconds with 9 decimals.
fn format_seconds(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MetaJson<'a> {
    version: u32,
    title: &'a str,
    subtitle: Option<&'a str>,
    notes: Option<&'a str>,
    count: usize,
    unit: &'a str,
    timed: bool,
    t0: String,
    no_stack: &'a str,
    names: &'a [Box<str>],
    comms: &'a [Box<str>],
    events: &'a [Box<str>],
    types: std::collections::BTreeMap<&'static str, &'static str>,
}

/// No network at all: the page only runs its own inline code and styles.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

/// The modules the scatter page inlines, in dependency order.
const MODULES: [&str; 7] =
    ["model.js", "palette.js", "render.js", "ui.js", "viewer.js", "scatter.js", "scatter_page.js"];

fn bundle() -> &'static str {
    static BUNDLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUNDLE.get_or_init(|| {
        let mut out = String::new();
        for name in MODULES {
            if let Some(asset) = ASSETS.iter().find(|a| a.path == name) {
                out.push_str(&inline_module(asset.path, asset.text));
            }
        }
        out
    })
}

fn style() -> &'static str {
    let find = |p: &str| ASSETS.iter().find(|a| a.path == p).map_or("", |a| a.text);
    static STYLE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    STYLE.get_or_init(|| format!("{}{}", find("viewer.css"), find("scatter.css")))
}

/// Writes the self-contained scatter page (no network) of `data`. Deterministic: the same
/// data and options give the same bytes.
pub fn write_scatter_page(out: &mut dyn Write, data: &ScatterData, opts: &ScatterOptions) -> io::Result<()> {
    let title = opts.title.as_deref().unwrap_or("Latency scatter");
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n\
         <div id=\"kflame-scatter\"></div>\n",
        escape_html(title),
        style()
    )?;
    out.write_all(b"<script type=\"application/json\" id=\"kflame-scatter-meta\">")?;
    out.write_all(data.meta.get().as_bytes())?;
    out.write_all(b"</script>\n")?;
    for (name, b64) in &data.columns {
        write!(out, "<script type=\"application/octet-stream\" id=\"kflame-scatter-{name}\">")?;
        out.write_all(b64.as_bytes())?;
        out.write_all(b"</script>\n")?;
    }
    out.write_all(b"<script>\n")?;
    out.write_all(bundle().as_bytes())?;
    out.write_all(b"</script>\n</body>\n</html>\n")
}

#[cfg(test)]
mod tests;
