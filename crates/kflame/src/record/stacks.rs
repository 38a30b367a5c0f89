//! Turning raw callchains into folded stacks, with `stackcollapse-perf.pl`'s frame names:
//! the task name as root frame (spaces become `_`, optionally `-PID` or `-PID/TID`), user
//! frames then kernel frames from the outermost call to the leaf, `[libc.so.6]` for an
//! unnamed address in a known file, `[unknown]` otherwise, and optionally `_[k]` after kernel
//! function names. Stacks are aggregated raw while recording and symbolized at the end of each
//! window, with the names found kept for the next windows.

use rustc_hash::FxHashMap;

use super::SampleRecord;
use super::parse::Sample;
use super::sym::Symbolizer;
use super::tasks::Tasks;
use super::unwind;
use crate::events::{EventKind, EventRecord, Frames};
use crate::fold::StackCounts;
use crate::symbols::{is_anonymous, mapped_file_name};

/// `PERF_CONTEXT_KERNEL`, `PERF_CONTEXT_USER`, and the first marker value (`PERF_CONTEXT_MAX`).
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const CONTEXT_USER: u64 = -512i64 as u64;
const CONTEXT_MAX: u64 = -4095i64 as u64;

/// How frames are named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Naming {
    /// Root frame `comm-PID`.
    pub pid: bool,
    /// Root frame `comm-PID/TID`.
    pub tid: bool,
    /// A `cpu-N` frame above the task name.
    pub cpu: bool,
    /// `_[k]` after kernel function names.
    pub annotate_kernel: bool,
}

/// A stack before symbolization; the aggregation key while recording.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawStack {
    pub(crate) pid: u32,
    pub(crate) generation: u32,
    pub(crate) tid: u32,
    pub(crate) cpu: u32,
    pub(crate) comm: Box<[u8]>,
    /// Frames above the task name (a task state, a syscall name).
    pub(crate) prefix: Option<Box<[u8]>>,
    /// Leaf first, with context markers, as in the sample.
    pub(crate) chain: Box<[u64]>,
    /// The cgroup id when samples are kept and the kernel wrote it, else 0 (no cgroup has
    /// id 0).
    pub(crate) cgroup: u64,
    /// A frame after the leaf (a lock's kind).
    pub(crate) leaf: Option<Box<[u8]>>,
    /// The task that woke this one and its stack, folded after a `--` frame, leaf first.
    pub(crate) waker: Option<Box<RawStack>>,
    /// The kernel stack was taken at a tracepoint (by a BPF program on it, or by perf for an
    /// off-CPU block): its leaf frames are the tracing machinery (`bpf_prog_*`,
    /// `bpf_trace_run*`, `__bpf_trace_*`, `__traceiter_*`, as the kernel's version has
    /// them), left out, so that both paths give the same stacks.
    pub(crate) trim_tracing: bool,
}

/// One recorded event, symbolized and owned (kept across windows, for the `.json` output or
/// a flame chart); [`Event::record`] lends it to an [`EventSink`](crate::events::EventSink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// What it is (from the mode that recorded it).
    pub kind: EventKind,
    /// Time stamp, CLOCK_MONOTONIC nanoseconds.
    pub ts: u64,
    /// CPU the event happened on.
    pub cpu: u32,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Task name.
    pub comm: String,
    /// Duration (CPU time of a sample, blocked time, syscall latency), when it has one.
    pub duration_ns: Option<u64>,
    /// The weight added to the folded stack.
    pub weight: u64,
    /// Frames, root first (as in the folded line).
    pub stack: Vec<String>,
}

impl Event {
    /// The event as a record for an [`EventSink`](crate::events::EventSink); `event` names
    /// it (the recording's event, [`Meta::event`](crate::fold::Meta)). A pid of -1 (a task
    /// the kernel could no longer name) is an unknown pid, as in every other event stream.
    pub fn record<'a>(&'a self, event: &'a str) -> EventRecord<'a> {
        let known = |id: u32| (id != super::tasks::UNKNOWN_TASK).then_some(id);
        EventRecord {
            kind: self.kind,
            ts_ns: Some(self.ts),
            duration_ns: self.duration_ns,
            cpu: self.cpu,
            pid: known(self.pid),
            tid: known(self.tid),
            comm: Some(&self.comm),
            event,
            weight: self.weight,
            stack: Frames::Text(&self.stack),
        }
    }
}

struct RawEvent {
    ts: u64,
    duration_ns: Option<u64>,
    weight: u64,
    stack: RawStack,
}

/// A kept sample before naming: its stack by the insertion index of its raw stack.
struct RawSample {
    ts: u64,
    weight: u64,
    key: u32,
}

/// A raw stack's weight in the window, and the order it was first seen in.
struct Slot {
    weight: u64,
    index: u32,
}

/// What a window of one mode collected, named.
#[derive(Default)]
pub(crate) struct Drained {
    pub(crate) stacks: StackCounts,
    pub(crate) events: Vec<Event>,
    pub(crate) samples: Vec<SampleRecord>,
    pub(crate) sample_stacks: Vec<Box<[u8]>>,
}

/// Aggregates raw stacks while recording; optionally keeps every event, or a compact
/// record of every sample. Emptied into named stacks at the end of every window
/// ([`Collector::drain`]).
pub(crate) struct Collector {
    naming: Naming,
    counts: FxHashMap<RawStack, Slot>,
    events: Option<Vec<RawEvent>>,
    samples: Option<Vec<RawSample>>,
    /// Stacks added since recording started (all windows).
    adds: u64,
}

impl Collector {
    /// A collector; `keep_events` keeps every event for the JSON output, `keep_samples` a
    /// [`SampleRecord`] of every sample.
    pub(crate) fn new(naming: Naming, keep_events: bool, keep_samples: bool) -> Collector {
        Collector {
            naming,
            counts: FxHashMap::default(),
            events: keep_events.then(Vec::new),
            samples: keep_samples.then(Vec::new),
            adds: 0,
        }
    }

    /// The raw stack of sample `s` (reads the task's name and, on first sight, its
    /// mappings, while the task most likely still exists).
    pub(crate) fn raw(&self, tasks: &mut Tasks, s: &Sample) -> RawStack {
        let (pid, tid) = (s.pid, s.tid);
        let comm = tasks.comm(pid, tid);
        tasks.maps_of(pid);
        let each = self.events.is_some() || self.samples.is_some();
        RawStack {
            pid,
            generation: tasks.generation(pid),
            tid: if self.naming.tid || each { tid } else { 0 },
            cpu: if self.naming.cpu || each { s.cpu } else { 0 },
            comm,
            prefix: None,
            chain: s.chain.as_slice().into(),
            cgroup: if self.samples.is_some() { s.cgroup.unwrap_or(0) } else { 0 },
            leaf: None,
            waker: None,
            trim_tracing: false,
        }
    }

    /// Adds `weight` to `stack`; `duration_ns` is reported with the event.
    pub(crate) fn add(&mut self, ts: u64, stack: RawStack, weight: u64, duration_ns: Option<u64>) {
        if let Some(ev) = &mut self.events {
            ev.push(RawEvent { ts, duration_ns, weight, stack: stack.clone() });
        }
        self.add_summed(ts, stack, weight);
    }

    /// Adds one stack's weight to the stacks (and samples, when kept), never as an event: a
    /// wait an aggregator summed, whose source keeps only its outliers as events.
    pub(crate) fn add_summed(&mut self, ts: u64, stack: RawStack, weight: u64) {
        let next = u32::try_from(self.counts.len()).unwrap_or(u32::MAX);
        let slot = self.counts.entry(stack).or_insert(Slot { weight: 0, index: next });
        slot.weight += weight;
        if let Some(samples) = &mut self.samples {
            samples.push(RawSample { ts, weight, key: slot.index });
        }
        self.adds += 1;
    }

    /// Adds one event (kept only when events are) without summing it into the stacks: an
    /// outlier whose wait an aggregator's sums already hold.
    pub(crate) fn add_event(&mut self, ts: u64, stack: RawStack, weight: u64, duration_ns: u64) {
        if let Some(ev) = &mut self.events {
            ev.push(RawEvent { ts, duration_ns: Some(duration_ns), weight, stack });
            self.adds += 1;
        }
    }

    /// True when nothing was ever added (in any window).
    pub(crate) fn is_empty(&self) -> bool {
        self.adds == 0
    }

    /// Names everything added since the last drain and empties the collector: folded stacks
    /// and (if kept) events of `kind` and sample records, in the order they were added.
    /// Names already found are taken from `cache`, new ones are added to it.
    pub(crate) fn drain(
        &mut self,
        kind: EventKind,
        tasks: &Tasks,
        sym: &mut Symbolizer,
        cache: &mut NameCache,
    ) -> Drained {
        let mut out = Drained::default();
        let mut line = Vec::new();
        let mut namer = Namer { sym, tasks, annotate_kernel: self.naming.annotate_kernel, cache };
        let counts = std::mem::take(&mut self.counts);
        // Per raw stack (by insertion index), with samples kept: its line's index and who.
        let keep = self.samples.as_ref().is_some_and(|s| !s.is_empty());
        let mut keys: Vec<(u32, u32, u32, u32, u64)> = Vec::new();
        if keep {
            keys.resize(counts.len(), (0, 0, 0, 0, 0));
        }
        let mut lines: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        for (raw, slot) in counts {
            let frames = fold_frames(&raw, self.naming, &mut namer);
            line.clear();
            for (i, f) in frames.iter().enumerate() {
                if i > 0 {
                    line.push(b';');
                }
                line.extend_from_slice(f);
            }
            out.stacks.add(&line, crate::fold::Weight::from_u64(slot.weight));
            if let Some(k) = keys.get_mut(slot.index as usize) {
                let next = u32::try_from(out.sample_stacks.len()).unwrap_or(u32::MAX);
                let at = *lines.entry(line.as_slice().into()).or_insert_with(|| {
                    out.sample_stacks.push(line.as_slice().into());
                    next
                });
                *k = (at, raw.cpu, raw.pid, raw.tid, raw.cgroup);
            }
        }
        let samples = self.samples.as_mut().map(std::mem::take).unwrap_or_default();
        out.samples = samples
            .into_iter()
            .filter_map(|s| {
                let &(stack, cpu, pid, tid, cgroup) = keys.get(s.key as usize)?;
                let cgroup = (cgroup != 0).then_some(cgroup);
                Some(SampleRecord { ts: s.ts, cpu, pid, tid, cgroup, weight: s.weight, stack })
            })
            .collect();
        let events = self.events.as_mut().map(std::mem::take).unwrap_or_default();
        out.events = events.into_iter().map(|e| symbolize_event(e, kind, self.naming, &mut namer)).collect();
        out
    }

    /// Names everything at once (a recording of one window).
    #[cfg(test)]
    pub(crate) fn finish(mut self, tasks: &Tasks, sym: &mut Symbolizer) -> Drained {
        self.drain(EventKind::Sample, tasks, sym, &mut NameCache::default())
    }
}

fn symbolize_event(e: RawEvent, kind: EventKind, naming: Naming, namer: &mut Namer<'_>) -> Event {
    let plain = Naming { pid: false, tid: false, cpu: false, ..naming };
    let frames = fold_frames(&e.stack, plain, namer);
    Event {
        kind,
        ts: e.ts,
        cpu: e.stack.cpu,
        pid: e.stack.pid,
        tid: e.stack.tid,
        comm: String::from_utf8_lossy(&e.stack.comm).into_owned(),
        duration_ns: e.duration_ns,
        weight: e.weight,
        stack: frames.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect(),
    }
}

/// The frames of `raw`, root first; a waker's after a `--` frame, leaf first, ending with
/// its name (bcc `offwaketime`'s layout: the two stacks meet at the separator).
fn fold_frames(raw: &RawStack, naming: Naming, namer: &mut Namer<'_>) -> Vec<Vec<u8>> {
    let mut frames = Vec::with_capacity(raw.chain.len() + 3);
    if let Some(p) = &raw.prefix {
        frames.push(p.to_vec());
    }
    if naming.cpu {
        frames.push(format!("cpu-{}", raw.cpu).into_bytes());
    }
    frames.push(task_frame(raw, naming));
    let leaf_first = chain_frames(raw, namer);
    frames.extend(leaf_first.into_iter().rev());
    if let Some(l) = &raw.leaf {
        frames.push(l.to_vec());
    }
    if let Some(w) = &raw.waker {
        frames.push(WAKER_SEPARATOR.to_vec());
        frames.extend(chain_frames(w, namer));
        frames.push(task_frame(w, naming));
    }
    frames
}

/// The frame between a blocked stack and the stack of the task that woke it.
pub(crate) const WAKER_SEPARATOR: &[u8] = b"--";

/// The named frames of `raw`'s callchain, leaf first.
fn chain_frames(raw: &RawStack, namer: &mut Namer<'_>) -> Vec<Vec<u8>> {
    let mut ctx = CONTEXT_USER;
    let mut out = Vec::with_capacity(raw.chain.len());
    let mut machinery = raw.trim_tracing;
    for &ip in raw.chain.iter() {
        match ip {
            unwind::COPY_ENDED => out.push(unwind::COPY_ENDED_FRAME.to_vec()),
            unwind::CANNOT_UNWIND => out.push(unwind::CANNOT_UNWIND_FRAME.to_vec()),
            _ => {}
        }
        if ip >= CONTEXT_MAX {
            ctx = ip;
            continue;
        }
        match ctx {
            CONTEXT_KERNEL if machinery => {
                let name = namer.kernel(ip);
                machinery = is_tracing_machinery(&name);
                if !machinery {
                    out.push(name);
                }
            }
            CONTEXT_KERNEL => out.push(namer.kernel(ip)),
            CONTEXT_USER => out.push(namer.user(raw, ip)),
            _ => {} // hypervisor or guest context: not symbolizable here
        }
    }
    out
}

/// A frame of the code that runs a BPF program on a tracepoint.
fn is_tracing_machinery(name: &[u8]) -> bool {
    [&b"bpf_prog_"[..], b"bpf_trace_run", b"__bpf_trace_", b"__traceiter_"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The root frame: the task name, with `-PID` or `-PID/TID`. Ids are signed, as perf prints
/// them: a task the kernel could no longer name is `:-1` (pid or tid -1), not `:4294967295`.
fn task_frame(raw: &RawStack, naming: Naming) -> Vec<u8> {
    let mut name: Vec<u8> = raw.comm.iter().map(|&b| if b == b' ' { b'_' } else { b }).collect();
    let name = tidy(&mut name);
    let (pid, tid) = (raw.pid as i32, raw.tid as i32);
    if naming.tid {
        name.extend_from_slice(format!("-{pid}/{tid}").as_bytes());
    } else if naming.pid {
        name.extend_from_slice(format!("-{pid}").as_bytes());
    }
    name.clone()
}

/// Frame names by address, kept across windows so that each address is symbolized once
/// (bounded by bytes: emptied when it grows past its budget, [`NameCache::BUDGET`] by
/// default, for recorders that run for days).
pub(crate) struct NameCache {
    kernel: FxHashMap<u64, Box<[u8]>>,
    /// Addresses in mapped files, by process generation. Addresses outside any file (JIT
    /// code, whose `/tmp/perf-PID.map` grows while recording) are named again each window.
    user: FxHashMap<(u32, u32, u64), Box<[u8]>>,
    /// Bytes held by `kernel` and by `user` (names, keys, table slots).
    kernel_bytes: usize,
    user_bytes: usize,
    budget: usize,
    resets: u64,
}

impl Default for NameCache {
    fn default() -> NameCache {
        NameCache::with_budget(NameCache::BUDGET)
    }
}

impl NameCache {
    /// Bytes the names take at most by default: some 100k frames of 40-byte names.
    pub(crate) const BUDGET: usize = 8 << 20;

    /// What an entry costs besides its name's bytes: key, box, hash table slot.
    const KERNEL_ENTRY: usize = 8 + 16 + 8;
    const USER_ENTRY: usize = 16 + 16 + 8;

    /// An empty cache of at most `budget` bytes.
    pub(crate) fn with_budget(budget: usize) -> NameCache {
        NameCache {
            kernel: FxHashMap::default(),
            user: FxHashMap::default(),
            kernel_bytes: 0,
            user_bytes: 0,
            budget,
            resets: 0,
        }
    }

    /// Empties the cache if it grew past its budget (counted in
    /// [`resets`](Self::resets)); says whether it did. Called after every name added, so
    /// that one long window (a whole `record` named at its end) keeps the bound too.
    pub(crate) fn trim(&mut self) -> bool {
        let full = self.bytes() > self.budget;
        if full {
            *self = NameCache { resets: self.resets + 1, ..NameCache::with_budget(self.budget) };
        }
        full
    }

    /// Times the cache was emptied for growing past its budget.
    pub(crate) fn resets(&self) -> u64 {
        self.resets
    }

    /// Names kept.
    pub(crate) fn len(&self) -> usize {
        self.kernel.len() + self.user.len()
    }

    /// Bytes the names kept take.
    pub(crate) fn bytes(&self) -> usize {
        self.kernel_bytes + self.user_bytes
    }

    /// Forgets the kernel frame names (kallsyms was read again).
    pub(crate) fn forget_kernel(&mut self) {
        self.kernel.clear();
        self.kernel_bytes = 0;
    }

    /// Forgets the user-space names of the processes that exited: those of pid `p` with a
    /// generation below `g`, for each `(p, g)` of `ended`.
    pub(crate) fn forget(&mut self, ended: &[(u32, u32)]) {
        if ended.is_empty() || self.user.is_empty() {
            return;
        }
        let ended: FxHashMap<u32, u32> = ended.iter().copied().collect();
        let mut freed = 0;
        self.user.retain(|(pid, g, _), name| {
            let keep = ended.get(pid).is_none_or(|below| g >= below);
            if !keep {
                freed += name.len() + Self::USER_ENTRY;
            }
            keep
        });
        self.user_bytes -= freed;
    }
}

/// Names frames through a [`NameCache`].
struct Namer<'a> {
    sym: &'a mut Symbolizer,
    tasks: &'a Tasks,
    annotate_kernel: bool,
    cache: &'a mut NameCache,
}

impl Namer<'_> {
    fn kernel(&mut self, ip: u64) -> Vec<u8> {
        if let Some(name) = self.cache.kernel.get(&ip) {
            return name.to_vec();
        }
        let name = kernel_frame(self.sym, ip, self.annotate_kernel);
        self.cache.kernel_bytes += name.len() + NameCache::KERNEL_ENTRY;
        self.cache.kernel.insert(ip, name.clone().into());
        self.cache.trim();
        name
    }

    fn user(&mut self, raw: &RawStack, ip: u64) -> Vec<u8> {
        let key = (raw.pid, raw.generation, ip);
        if let Some(name) = self.cache.user.get(&key) {
            return name.to_vec();
        }
        let (name, in_file) = user_frame(self.sym, self.tasks, raw, ip);
        if in_file {
            self.cache.user_bytes += name.len() + NameCache::USER_ENTRY;
            self.cache.user.insert(key, name.clone().into());
            self.cache.trim();
        }
        name
    }
}

fn kernel_frame(sym: &Symbolizer, ip: u64, annotate: bool) -> Vec<u8> {
    match sym.kernel(ip) {
        Some(name) => {
            let mut f = name.as_bytes().to_vec();
            if annotate {
                f.extend_from_slice(b"_[k]");
            }
            f
        }
        None => b"[kernel.kallsyms]".to_vec(),
    }
}

/// A user frame: the function in the mapped file, else `[file]`; outside any file (JIT code in
/// anonymous memory, see [`is_anonymous`]), the name from the process's `/tmp/perf-PID.map`,
/// else `[unknown]`;
/// special mappings keep their own name (`[vdso]`). Also says whether the address lies in a
/// mapping (named the same way for as long as the process lives).
fn user_frame(sym: &mut Symbolizer, tasks: &Tasks, raw: &RawStack, ip: u64) -> (Vec<u8>, bool) {
    let map = tasks.maps_at(raw.pid, raw.generation).and_then(|m| m.find(ip));
    let file = map.filter(|m| !is_anonymous(&m.object));
    let name = match file {
        Some(m) => sym.user(raw.pid, m, ip),
        None => sym.jit(raw.pid, ip),
    };
    if let Some(name) = name {
        let mut f = name.as_bytes().to_vec();
        return (tidy(&mut f).clone(), file.is_some());
    }
    let name = match file {
        Some(m) if m.object.starts_with(b"[") => m.object.clone(),
        Some(m) => [b"[", mapped_file_name(&m.object), b"]"].concat(),
        None => b"[unknown]".to_vec(),
    };
    (name, file.is_some())
}

/// `stackcollapse-perf.pl`'s generic tidying: `;` would split the frame, so it becomes `:`;
/// argument lists are cut (except Go method names like `pkg.(*T).M`); `<>"'` are dropped.
fn tidy(f: &mut Vec<u8>) -> &mut Vec<u8> {
    for b in f.iter_mut() {
        if *b == b';' {
            *b = b':';
        }
    }
    let go_method = f.windows(2).any(|w| w == b".(");
    if !go_method
        && let Some(p) = f.iter().position(|&b| b == b'(')
        && p > 0
    {
        f.truncate(p);
    }
    f.retain(|b| !matches!(b, b'<' | b'>' | b'"' | b'\''));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::parse::Record;

    fn sample(pid: u32, tid: u32, cpu: u32, chain: Vec<u64>) -> Sample {
        Sample { pid, tid, cpu, chain, ..Sample::default() }
    }

    /// Kept samples point into the window's list of stacks, each line once; their weights
    /// add up to the aggregated stacks'; the task, CPU and cgroup of each are its own even
    /// when the folded line (without `-PID` or `cpu-N` frames) is shared.
    #[test]
    fn kept_samples_index_the_windows_stacks() {
        let mut tasks = Tasks::new(None);
        for tid in [5, 6] {
            tasks.apply(&Record::Comm { time: 0, pid: 5, tid, comm: b"w".to_vec(), exec: false });
        }
        let mut c = Collector::new(Naming::default(), true, true);
        let outer = vec![CONTEXT_KERNEL, 0xffff_0010];
        let inner = vec![CONTEXT_KERNEL, 0xffff_0110, 0xffff_0010];
        let adds =
            [(10, 5, 0, &outer, 1, Some(7)), (20, 6, 1, &inner, 1, None), (30, 6, 1, &outer, 3, Some(7))];
        for (ts, tid, cpu, chain, weight, cgroup) in adds {
            let s = Sample { cgroup, ..sample(5, tid, cpu, chain.clone()) };
            let raw = c.raw(&mut tasks, &s);
            c.add(ts, raw, weight, None);
        }
        let mut sym = Symbolizer::with_kallsyms("ffff0000 T outer\nffff0100 t inner\n".into());
        let mut cache = NameCache::default();
        let d = c.drain(EventKind::Sample, &tasks, &mut sym, &mut cache);
        let text = |i: u32| String::from_utf8_lossy(&d.sample_stacks[i as usize]).into_owned();
        let got: Vec<_> = d
            .samples
            .iter()
            .map(|s| (s.ts, s.cpu, s.pid, s.tid, s.cgroup, s.weight, text(s.stack)))
            .collect();
        assert_eq!(
            got,
            [
                (10, 0, 5, 5, Some(7), 1, "w;outer".to_string()),
                (20, 1, 5, 6, None, 1, "w;outer;inner".to_string()),
                (30, 1, 5, 6, Some(7), 3, "w;outer".to_string()),
            ]
        );
        assert_eq!(d.sample_stacks.len(), 2, "each line once");
        let sorted = d.stacks.sorted();
        assert_eq!(sorted.len(), 2);
        for (line, w) in sorted {
            let sum: u64 = d
                .samples
                .iter()
                .filter(|s| *d.sample_stacks[s.stack as usize] == *line)
                .map(|s| s.weight)
                .sum();
            assert_eq!(crate::fold::Weight::from_u64(sum), w);
        }
        // Events are kept beside them, as before.
        assert_eq!(d.events.len(), 3);
        // Nothing is kept twice: the next window starts empty.
        let d = c.drain(EventKind::Sample, &tasks, &mut sym, &mut cache);
        assert!(d.samples.is_empty() && d.sample_stacks.is_empty() && d.stacks.sorted().is_empty());
    }

    #[test]
    fn chain_becomes_root_first_user_then_kernel() {
        let mut tasks = Tasks::new(None);
        tasks.apply(&Record::Comm { time: 0, pid: 7, tid: 7, comm: b"my prog".to_vec(), exec: true });
        tasks.apply(&Record::Mmap {
            time: 0,
            pid: 7,
            start: 0x1000,
            len: 0x1000,
            pgoff: 0,
            path: b"/nonexistent/libfoo.so".to_vec(),
        });
        let c = Collector::new(Naming { pid: true, ..Naming::default() }, false, false);
        let chain = vec![CONTEXT_KERNEL, 0x10, CONTEXT_USER, 0x1500, 0x9999];
        let raw = c.raw(&mut tasks, &sample(7, 7, 0, chain));
        let mut sym = Symbolizer::default();
        let mut cache = NameCache::default();
        let mut namer = Namer { sym: &mut sym, tasks: &tasks, annotate_kernel: false, cache: &mut cache };
        let frames = fold_frames(&raw, c.naming, &mut namer);
        let frames: Vec<_> = frames.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect();
        assert_eq!(frames, ["my_prog-7", "[unknown]", "[libfoo.so]", "[kernel.kallsyms]"]);
    }

    /// JIT code in anonymous memory (`//anon` in `MMAP2` records, no path in
    /// `/proc/PID/maps`) is named from the process's perf map, and the unwinding markers
    /// keep their names.
    #[test]
    fn anonymous_code_is_named_from_the_perf_map() {
        let mut tasks = Tasks::new(None);
        tasks.apply(&Record::Comm { time: 0, pid: 7, tid: 7, comm: b"node".to_vec(), exec: true });
        for (start, path) in [(0x1000, &b"//anon"[..]), (0x3000, b"")] {
            tasks.apply(&Record::Mmap { time: 0, pid: 7, start, len: 0x1000, pgoff: 0, path: path.to_vec() });
        }
        let c = Collector::new(Naming::default(), false, false);
        let chain = vec![CONTEXT_USER, 0x1010, 0x3010, 0x1800, unwind::COPY_ENDED];
        let raw = c.raw(&mut tasks, &sample(7, 7, 0, chain));
        let mut sym = Symbolizer::default();
        sym.set_jit_map(
            7,
            crate::symbols::PerfMap::parse("1000 100 LazyCompile:*leaf app.js:3\n3000 100 JS:~outer\n"),
        );
        let mut cache = NameCache::default();
        let mut namer = Namer { sym: &mut sym, tasks: &tasks, annotate_kernel: false, cache: &mut cache };
        let frames = fold_frames(&raw, c.naming, &mut namer);
        let frames: Vec<_> = frames.iter().map(|f| String::from_utf8_lossy(f).into_owned()).collect();
        assert_eq!(
            frames,
            ["node", "[stack copy ended]", "[unknown]", "JS:~outer", "LazyCompile:*leaf app.js:3"]
        );
    }

    #[test]
    fn kernel_frames_cpu_and_tid_naming() {
        let mut tasks = Tasks::new(None);
        tasks.apply(&Record::Comm { time: 0, pid: 5, tid: 6, comm: b"w".to_vec(), exec: false });
        let naming = Naming { tid: true, cpu: true, annotate_kernel: true, ..Naming::default() };
        let mut c = Collector::new(naming, false, false);
        let raw = c.raw(&mut tasks, &sample(5, 6, 1, vec![CONTEXT_KERNEL, 0xffff_0110, 0xffff_0010, 0x1]));
        c.add(0, raw.clone(), 2, None);
        c.add(1, raw, 3, None);
        let mut sym = Symbolizer::with_kallsyms("ffff0000 T outer\nffff0100 t inner\n".into());
        let counts = c.finish(&tasks, &mut sym).stacks;
        let lines: Vec<_> =
            counts.sorted().into_iter().map(|(s, w)| (String::from_utf8_lossy(s).into_owned(), w)).collect();
        assert_eq!(lines.len(), 1);
        // 0x1 lies below every kernel symbol: unnamed, like perf's [kernel.kallsyms].
        assert_eq!(lines[0].0, "cpu-1;w-5/6;[kernel.kallsyms];outer_[k];inner_[k]");
        assert_eq!(lines[0].1, crate::fold::Weight::from_u64(5));
    }

    /// A sample of a task that already left its pid behind (tid -1, taken in `do_task_dead`)
    /// is named as the perf script route names the same sample in a real capture: `:-1`,
    /// `:-1-2284`, `:-1-2284/-1`, never `:4294967295`.
    #[test]
    fn unknown_task_is_named_as_perf_script_names_it() {
        use crate::collapse::perf::{PerfOptions, PerfScript};
        use crate::collapse::testkit::{data, run};
        use crate::record::tasks::UNKNOWN_TASK;
        let text = data("perf/captures/perf-sched-switch.script.txt");
        let text = String::from_utf8_lossy(&text);
        let record = text.split("\n\n").find(|r| r.starts_with(":-1 ")).expect("the fixture's :-1 record");
        // The name comes from `Tasks` (no /proc read for tid -1); the stack is built by hand
        // so that nothing of this machine's /proc is read.
        let comm = Tasks::new(None).comm(2284, UNKNOWN_TASK);
        let raw = |pid, tid| RawStack {
            pid,
            generation: 0,
            tid,
            cpu: 1,
            comm: comm.clone(),
            prefix: None,
            chain: [].into(),
            cgroup: 0,
            leaf: None,
            waker: None,
            trim_tracing: false,
        };
        for (pid, tid) in [(false, false), (true, false), (false, true)] {
            let opts = PerfOptions { include_pid: pid, include_tid: tid, ..PerfOptions::default() };
            let out = run(Box::new(PerfScript::new(opts)), format!("{record}\n\n").as_bytes());
            let stacks = out.stacks.in_output_order();
            let perf_root = stacks[0].0.split(|&b| b == b';').next().expect("a root frame");
            let ours = task_frame(&raw(2284, UNKNOWN_TASK), Naming { pid, tid, ..Naming::default() });
            assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(perf_root));
        }
        // The same with the pid unknown too.
        let naming = Naming { tid: true, ..Naming::default() };
        assert_eq!(task_frame(&raw(UNKNOWN_TASK, UNKNOWN_TASK), naming), b":-1--1/-1");
    }

    #[test]
    fn tidy_like_stackcollapse_perf() {
        let t = |s: &str| String::from_utf8(tidy(&mut s.as_bytes().to_vec()).clone()).unwrap();
        assert_eq!(t("foo(int, char)"), "foo");
        assert_eq!(t("net/http.(*Client).Do"), "net/http.(*Client).Do");
        assert_eq!(t("a;b<T>"), "a:bT");
        assert_eq!(t("(anonymous)"), "(anonymous)");
    }
}
