//! What the waiting-time programs (locks, run queue, block IO) share: loading and attaching,
//! the generation flip before a drain, reading and deleting the old generation's keys, the
//! stacks of what was read, the sweep of stacks no one holds any more, and the `lost` counters.
//! The C side is `src/bpf/wait.h`.

use std::collections::HashSet;

use aya::maps::{
    Array, ArrayOfMaps, HashMap as BpfHashMap, MapData, PerCpuArray, PerCpuHashMap, RingBuf, StackTraceMap,
};
use aya::programs::raw_trace_point::RawTracePointLinkId;
use aya::programs::tp_btf::BtfTracePointLinkId;
use aya::programs::{BtfTracePoint, RawTracePoint};
use aya::{Ebpf, EbpfLoader, GlobalData};

use kflame::latency::{Histogram, SLOTS};

use crate::bytes::{comm, i32_at, u32_at};
use crate::{BpfError, map_err, refused};

/// Bytes of `wait.h`'s `struct wait_key`.
pub(crate) const KEY_LEN: usize = 40;

/// A key of `K` bytes and its value (ns, count), as read.
pub(crate) type Taken<const K: usize> = ([u8; K], [u64; 2]);

/// A key of `K` bytes of a per-CPU map and its values, one per possible CPU, as read.
pub(crate) type PerCpuTaken<const K: usize, V> = ([u8; K], Vec<V>);

/// A key of `waited` and its value (ns, count), as read.
pub(crate) type Found = Taken<KEY_LEN>;

/// Which waits to count, for every program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitOptions {
    /// Only this process (`None`: every one).
    pub pid: Option<u32>,
    /// Waits shorter than this are not counted (ns).
    pub min_ns: u64,
    /// Waits at least this long (ns) are counted as slow in their histogram
    /// ([`LabelHistogram::slow`]; `u64::MAX`: none).
    pub slow_ns: u64,
    /// Count the latency histograms only: no stack is taken and no wait summed per task (what
    /// the watcher's always-on run-queue and IO latency need; [`Runq::drain`](crate::Runq)
    /// and the others then return no waits).
    pub histograms_only: bool,
    /// Keep each slow wait (at least `slow_ns`) as a [`WaitOutlier`], at most this many per
    /// CPU and second (the rest counted in [`WaitLost::outliers`]; 0: none).
    pub max_outliers: u32,
    /// Labels (as [`Waited::on`] holds them) with a threshold of their own instead of
    /// `slow_ns` (ns).
    pub slow_labels: Vec<(u32, u64)>,
    /// Off-CPU: a block of a task whose last one was shorter than this takes that block's
    /// stacks ([`crate::OffCpuOptions::reuse_stacks_under_ns`]; 0: never).
    pub reuse_stacks_under_ns: u64,
    /// Block IO with `histograms_only`: the submitters' stacks are still taken, at most this
    /// many per CPU and second, so that outliers have them at a bounded cost (0: none).
    pub stack_walks_per_sec: u32,
}

impl Default for WaitOptions {
    /// Every wait of every process, with stacks; none slow.
    fn default() -> Self {
        WaitOptions {
            pid: None,
            min_ns: 1,
            slow_ns: u64::MAX,
            histograms_only: false,
            max_outliers: 0,
            slow_labels: Vec::new(),
            reuse_stacks_under_ns: 0,
            stack_walks_per_sec: 0,
        }
    }
}

/// One slow wait of a waiting-time program, kept on its own (`outlier.h`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitOutlier {
    /// When it ended, CLOCK_MONOTONIC ns.
    pub end_ns: u64,
    /// How long it was, ns.
    pub ns: u64,
    /// Its process (0 for an IO whose submitter was not seen).
    pub tgid: u32,
    /// Its thread.
    pub tid: u32,
    /// Its name.
    pub comm: Vec<u8>,
    /// What it waited on, as [`Waited::on`] (for off-CPU: the task state, as
    /// [`Blocked::state`](crate::Blocked)).
    pub on: u32,
    /// The CPU it ended on.
    pub cpu: u32,
    /// The kernel stack its wait was counted under, leaf first (empty when none was taken:
    /// the programs counting histograms only take none).
    pub kernel: Vec<u64>,
    /// Its user stack, leaf first.
    pub user: Vec<u64>,
}

/// Bytes of `outlier.h`'s `struct wait_outlier_t`.
const OUTLIER_LEN: usize = 56;

impl WaitOutlier {
    /// A record of the ring buffer, its stacks by id; `None` for one of another size.
    fn read(b: &[u8]) -> Option<(WaitOutlier, i32, i32)> {
        if b.len() != OUTLIER_LEN {
            return None;
        }
        let u64_at = |at: usize| u64::from(u32_at(b, at)) | (u64::from(u32_at(b, at + 4)) << 32);
        let o = WaitOutlier {
            end_ns: u64_at(0),
            ns: u64_at(8),
            tgid: u32_at(b, 16),
            tid: u32_at(b, 20),
            on: u32_at(b, 24),
            cpu: u32_at(b, 28),
            comm: comm(&b[40..56]),
            kernel: Vec::new(),
            user: Vec::new(),
        };
        Some((o, i32_at(b, 32), i32_at(b, 36)))
    }
}

/// One label's latency histogram over an interval (the waits of one disk, one CPU's run
/// queue, one lock kind, one task state, one system call), the CPUs summed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelHistogram {
    /// The program's label: what [`Waited::on`] holds (the lock's flags, the disk, the CPU),
    /// the task state ([`Blocked::state`](crate::Blocked)), the system call's number.
    pub label: u32,
    /// The waits, in the buckets of [`kflame::latency`].
    pub histogram: Histogram,
    /// Waits at least [`WaitOptions::slow_ns`] long.
    pub slow: u64,
}

/// `hist.h`'s `hist_t`: [`SLOTS`] counts, the largest ns, the sum, the slow ones.
type HistValue = [u64; SLOTS + 3];

/// Bytes of `hist.h`'s `hist_key` (label, generation).
const HIST_KEY_LEN: usize = 8;

/// Time one task spent waiting on one thing with one stack, summed over an interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waited {
    /// Its process (0 for an IO whose submitter was not seen).
    pub tgid: u32,
    /// Its thread (0 for an IO whose submitter was not seen).
    pub tid: u32,
    /// Its name (empty for an IO whose submitter was not seen).
    pub comm: Vec<u8>,
    /// Its kernel stack, leaf first (empty when not taken).
    pub kernel: Vec<u64>,
    /// Its user stack, leaf first (empty for a kernel thread or when not taken).
    pub user: Vec<u64>,
    /// What it waited on: the lock's `LCB_F_*` flags ([`crate::Locks`], see
    /// [`crate::lock_kind`]), the disk as `major << 20 | minor` ([`crate::Bio`], see
    /// [`crate::device_name`]), the CPU whose run queue it waited on ([`crate::Runq`]).
    pub on: u32,
    /// Time waited, ns.
    pub ns: u64,
    /// Waits.
    pub count: u64,
}

/// What the kernel side of a waiting-time program could not keep, since the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitLost {
    /// Waits not counted: the aggregation map was full.
    pub waits: u64,
    /// Stacks not taken (the stack map full, or a walk that failed).
    pub stacks: u64,
    /// Waits not timed: a map of waits in progress was full.
    pub starts: u64,
    /// Block IO only: IOs not attributed, either completed with a submitter not seen while a
    /// pid filter was on (not counted), or submissions and issues never completed, forgotten
    /// after a minute (a bio split or merged in a way not traced, a request never completed).
    pub unmatched: u64,
    /// Waits timed but not in a latency histogram: the histogram map was full.
    pub histograms: u64,
    /// Slow calls or waits not kept as outliers (over the bound per second, or their ring
    /// buffer full).
    pub outliers: u64,
}

/// A waiting-time program, loaded and attached.
pub(crate) struct Loaded {
    pub(crate) ebpf: Ebpf,
    /// The generation the kernel counts under now.
    pub(crate) generation: u32,
    /// Waits for the programs running at a flip (see [`Loaded::flip`]).
    grace: GracePeriod,
    /// The histograms taken at the flips since they were last asked for, by label.
    histograms: Vec<LabelHistogram>,
    /// Events counted in the histograms taken at the flips since [`Loaded::take_events`].
    events: u64,
    /// `outlier.h`'s ring buffer, when outliers are kept.
    outlier_ring: Option<RingBuf<MapData>>,
    /// The outliers read at the drains since they were last asked for, in the order read.
    outliers: Vec<WaitOutlier>,
    /// Its programs' attachments, in the order made (detached in the reverse order).
    attachments: Vec<Attachment>,
    /// Whether they are attached now (see [`Loaded::set_attached`]).
    attached: bool,
}

/// A program's attachment, kept so that it can be detached and made again.
enum Attachment {
    Raw { program: String, tracepoint: String, link: Option<RawTracePointLinkId> },
    Btf { program: String, link: Option<BtfTracePointLinkId> },
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("generation", &self.generation)
            .field("outliers", &self.outlier_ring.is_some())
            .finish_non_exhaustive()
    }
}

/// `sync.h`'s `sync` and the map written into it after a flip of the generation: the update
/// returns once every program running at the flip is done.
#[derive(Debug)]
pub(crate) struct GracePeriod {
    sync: ArrayOfMaps<MapData, MapData>,
    sync_value: MapData,
}

impl GracePeriod {
    /// Takes the two maps out of a loaded object.
    pub(crate) fn take(ebpf: &mut Ebpf) -> Result<GracePeriod, BpfError> {
        let sync = ebpf.take_map("sync").ok_or_else(|| map_err("sync", "missing"))?;
        let sync = ArrayOfMaps::try_from(sync).map_err(|e| map_err("sync", e))?;
        let sync_value = match ebpf.take_map("sync_value") {
            Some(aya::maps::Map::Array(m)) => m,
            _ => return Err(map_err("sync_value", "missing")),
        };
        Ok(GracePeriod { sync, sync_value })
    }

    /// Returns once every BPF program running when it was called is done: an update of a
    /// map of maps, which the kernel returns from after an RCU grace period (milliseconds),
    /// exact where a fixed sleep is not (a host may pause a CPU for longer).
    pub(crate) fn wait(&mut self) -> Result<(), BpfError> {
        self.sync.set(0, &self.sync_value, 0).map_err(|e| map_err("sync", e))
    }
}

impl Loaded {
    /// Loads `obj` with `opts` and the program's own globals (`extra`: name and value) and
    /// attaches its programs to the raw tracepoints, in the order given (`(program,
    /// tracepoint)`).
    pub(crate) fn start<'a>(
        obj: &[u8],
        opts: &WaitOptions,
        extra: Vec<(&'a str, GlobalData<'a>)>,
        attach: &[(&str, &str)],
    ) -> Result<Loaded, BpfError> {
        let only_tgid = opts.pid.unwrap_or(0);
        let min_ns = opts.min_ns.max(1);
        let full = u32::from(!opts.histograms_only);
        let slow_min_ns = opts.slow_labels.iter().map(|l| l.1).fold(opts.slow_ns, u64::min);
        let mut loader = EbpfLoader::new();
        loader
            .override_global("min_ns", &min_ns, true)
            .override_global("only_tgid", &only_tgid, true)
            .override_global("slow_ns", &opts.slow_ns, true)
            .override_global("with_stacks", &full, true)
            // Only the programs of `outlier.h` have it (the system-call program's own is in
            // `extra`).
            .override_global("max_outliers", &opts.max_outliers, false)
            .override_global("slow_min_ns", &slow_min_ns, false)
            // Only the IO program walks stacks within a budget.
            .override_global("walks_per_gen", &opts.stack_walks_per_sec, false)
            // The system-call program sums no waits.
            .override_global("with_waits", &full, false);
        for (name, value) in extra {
            loader.override_global(name, value, true);
        }
        use kflame::record::features::{Feature, masked, masked_error, raw_tracepoint_feature};
        if masked(Feature::Bpf) {
            return Err(refused("load", masked_error(Feature::Bpf)));
        }
        if let Some(f) = attach.iter().filter_map(|(_, tp)| raw_tracepoint_feature(tp)).find(|&f| masked(f)) {
            let tp = attach.iter().find(|(_, tp)| raw_tracepoint_feature(tp) == Some(f)).map_or("", |a| a.1);
            return Err(refused(&format!("attach to the raw tracepoint {tp}"), masked_error(f)));
        }
        let mut ebpf = loader.load(obj).map_err(|e| refused("load", e))?;
        let mut attachments = Vec::new();
        for &(prog, tp) in attach {
            let p: &mut RawTracePoint = ebpf
                .program_mut(prog)
                .ok_or_else(|| refused("load", format!("no program {prog} in the object")))?
                .try_into()
                .map_err(|e| refused("load", e))?;
            p.load().map_err(|e| refused(&format!("load of {prog}"), e))?;
            let link = p.attach(tp).map_err(|e| refused(&format!("attach to the raw tracepoint {tp}"), e))?;
            attachments.push(Attachment::Raw {
                program: prog.into(),
                tracepoint: tp.into(),
                link: Some(link),
            });
        }
        if !opts.slow_labels.is_empty() {
            let map = ebpf.map_mut("slow_of_label").ok_or_else(|| map_err("slow_of_label", "missing"))?;
            let mut own: BpfHashMap<&mut MapData, u32, u64> =
                BpfHashMap::try_from(map).map_err(|e| map_err("slow_of_label", e))?;
            for &(label, ns) in &opts.slow_labels {
                own.insert(label, ns, 0).map_err(|e| map_err("slow_of_label", e))?;
            }
        }
        let grace = GracePeriod::take(&mut ebpf)?;
        let outlier_ring = match (opts.max_outliers, ebpf.take_map("wait_outliers")) {
            (1.., Some(map)) => Some(RingBuf::try_from(map).map_err(|e| map_err("wait_outliers", e))?),
            _ => None,
        };
        Ok(Loaded {
            ebpf,
            generation: 0,
            grace,
            histograms: Vec::new(),
            events: 0,
            outlier_ring,
            outliers: Vec::new(),
            attachments,
            attached: true,
        })
    }

    /// Keeps the BTF tracepoint program `program`, loaded and attached apart (`link`), with
    /// the others: detached and attached again with them.
    pub(crate) fn attached_btf(&mut self, program: &str, link: BtfTracePointLinkId) {
        self.attachments.push(Attachment::Btf { program: program.into(), link: Some(link) });
    }

    /// Detaches the programs (`on` false: they run no more, costing nothing; their maps stay
    /// as they are) or attaches them again (the starts noted before now are then ignored:
    /// their ends may have gone unseen, see `common.h`'s `resumed`).
    pub(crate) fn set_attached(&mut self, on: bool) -> Result<(), BpfError> {
        if on == self.attached {
            return Ok(());
        }
        if on {
            let now = kflame::record::monotonic_now_ns();
            let map = self.ebpf.map_mut("resumed").ok_or_else(|| map_err("resumed", "missing"))?;
            let mut resumed: Array<&mut MapData, u64> =
                Array::try_from(map).map_err(|e| map_err("resumed", e))?;
            resumed.set(0, now, 0).map_err(|e| map_err("resumed", e))?;
        }
        let ebpf = &mut self.ebpf;
        let mut each = |a: &mut Attachment| -> Result<(), BpfError> {
            match a {
                Attachment::Raw { program, tracepoint, link } => {
                    let p: &mut RawTracePoint = ebpf
                        .program_mut(program)
                        .ok_or_else(|| refused("attach", format!("no program {program}")))?
                        .try_into()
                        .map_err(|e| refused("attach", e))?;
                    match (on, link.take()) {
                        (true, None) => {
                            let id = p.attach(tracepoint).map_err(|e| {
                                refused(&format!("attach to the raw tracepoint {tracepoint}"), e)
                            })?;
                            *link = Some(id);
                        }
                        (false, Some(id)) => {
                            p.detach(id).map_err(|e| refused(&format!("detach from {tracepoint}"), e))?
                        }
                        (_, kept) => *link = kept,
                    }
                }
                Attachment::Btf { program, link } => {
                    let p: &mut BtfTracePoint = ebpf
                        .program_mut(program)
                        .ok_or_else(|| refused("attach", format!("no program {program}")))?
                        .try_into()
                        .map_err(|e| refused("attach", e))?;
                    match (on, link.take()) {
                        (true, None) => {
                            *link = Some(p.attach().map_err(|e| refused(&format!("attach of {program}"), e))?)
                        }
                        (false, Some(id)) => {
                            p.detach(id).map_err(|e| refused(&format!("detach of {program}"), e))?
                        }
                        (_, kept) => *link = kept,
                    }
                }
            }
            Ok(())
        };
        if on {
            self.attachments.iter_mut().try_for_each(&mut each)?;
        } else {
            self.attachments.iter_mut().rev().try_for_each(&mut each)?;
        }
        self.attached = on;
        Ok(())
    }

    /// The time its programs ran since they were loaded, as the kernel counts it while its
    /// run-time statistics are on (`BPF_ENABLE_STATS`; zero otherwise).
    pub(crate) fn run_time(&self) -> std::time::Duration {
        self.ebpf.programs().filter_map(|(_, p)| p.info().ok()).map(|i| i.run_time()).sum()
    }

    /// Flips the generation the kernel counts under, then waits until every program running
    /// at the flip is done: the earlier generations are no longer written, and their keys can
    /// be read and deleted without losing an increment. The wait is the kernel's: an update
    /// of a map of maps returns once the programs running then are done (an RCU grace
    /// period, milliseconds), even one whose CPU the hypervisor paused for longer.
    pub(crate) fn flip(&mut self) -> Result<(), BpfError> {
        self.generation = self.generation.wrapping_add(1);
        let map = self.ebpf.map_mut("control").ok_or_else(|| map_err("control", "missing"))?;
        let mut control: Array<&mut MapData, u32> =
            Array::try_from(map).map_err(|e| map_err("control", e))?;
        control.set(0, self.generation, 0).map_err(|e| map_err("control", e))?;
        self.grace.wait()?;
        let taken = self.take_histogram_values()?;
        for (k, per_cpu) in taken {
            let label = u32_at(&k, 0);
            let histogram =
                Histogram::from_per_cpu(per_cpu.iter().map(|v| (&v[..SLOTS], v[SLOTS], v[SLOTS + 1])));
            let slow = per_cpu.iter().map(|v| v[SLOTS + 2]).sum::<u64>();
            self.events += histogram.total();
            // Keys of two old generations (a drain that failed half way) add up.
            match self.histograms.iter_mut().find(|h| h.label == label) {
                Some(h) => {
                    h.histogram.add(&histogram);
                    h.slow += slow;
                }
                None => self.histograms.push(LabelHistogram { label, histogram, slow }),
            }
        }
        Ok(())
    }

    /// Reads the values of `hists`' keys of the parity not written now (call after the flip
    /// and its grace period) and zeroes them in place: the keys stay for the kernel's next
    /// use of that parity. Keys whose values are all zero are not returned.
    fn take_histogram_values(&mut self) -> Result<Vec<PerCpuTaken<HIST_KEY_LEN, HistValue>>, BpfError> {
        let old = self.generation.wrapping_sub(1) & 1;
        let map = self.ebpf.map_mut("hists").ok_or_else(|| map_err("hists", "missing"))?;
        let mut values: PerCpuHashMap<&mut MapData, [u8; HIST_KEY_LEN], HistValue> =
            PerCpuHashMap::try_from(map).map_err(|e| map_err("hists", e))?;
        let keys: Vec<[u8; HIST_KEY_LEN]> =
            values.keys().filter_map(Result::ok).filter(|k| u32_at(k, 4) == old).collect();
        let cpus = aya::util::nr_cpus().map_err(|(what, e)| map_err("hists", format!("{what}: {e}")))?;
        let mut found = Vec::new();
        for k in keys {
            let Ok(v) = values.get(&k, 0) else { continue };
            let per_cpu: Vec<HistValue> = v.iter().copied().collect();
            if per_cpu.iter().all(|h| h.iter().all(|&n| n == 0)) {
                continue;
            }
            let zeros = aya::maps::PerCpuValues::try_from(vec![[0u64; SLOTS + 3]; cpus])
                .map_err(|e| map_err("hists", e))?;
            values.insert(k, zeros, 0).map_err(|e| map_err("hists", e))?;
            found.push((k, per_cpu));
        }
        Ok(found)
    }

    /// The latency histograms taken at the flips since the last call, by label.
    /// The events counted in the histograms taken since the last call (what the program ran
    /// for, more or less: the CPU budget's measure of its rate).
    pub(crate) fn take_events(&mut self) -> u64 {
        std::mem::take(&mut self.events)
    }

    pub(crate) fn take_histograms(&mut self) -> Vec<LabelHistogram> {
        let mut h = std::mem::take(&mut self.histograms);
        h.sort_by_key(|h| h.label);
        h
    }

    /// Reads and deletes the keys of `waited` of the generations before the current one
    /// (call [`Loaded::flip`] first); the stack ids the current generation's keys hold go into
    /// `held`.
    pub(crate) fn take_waited(&mut self, held: &mut HashSet<i32>) -> Result<Vec<Found>, BpfError> {
        self.take_keys::<KEY_LEN>("waited", 20, &[8, 12], held)
    }

    /// Reads and deletes the keys of the map `name` (keys of `K` bytes, their generation at
    /// `gen_at`, values (ns, count)) of the generations before the current one (call
    /// [`Loaded::flip`] first); the stack ids (at `stacks_at`) that the current generation's
    /// keys hold go into `held`.
    pub(crate) fn take_keys<const K: usize>(
        &mut self,
        name: &'static str,
        gen_at: usize,
        stacks_at: &[usize],
        held: &mut HashSet<i32>,
    ) -> Result<Vec<Taken<K>>, BpfError> {
        let map = self.ebpf.map_mut(name).ok_or_else(|| map_err(name, "missing"))?;
        let mut counts: BpfHashMap<&mut MapData, [u8; K], [u64; 2]> =
            BpfHashMap::try_from(map).map_err(|e| map_err(name, e))?;
        let keys: Vec<[u8; K]> = counts.keys().filter_map(Result::ok).collect();
        let mut found = Vec::with_capacity(keys.len());
        for k in keys {
            if u32_at(&k, gen_at) == self.generation {
                held.extend(stacks_at.iter().map(|&at| i32_at(&k, at)));
                continue;
            }
            if let Ok(v) = counts.get(&k, 0) {
                found.push((k, v));
            }
            let _ = counts.remove(&k);
        }
        Ok(found)
    }

    /// Adds to `held` the kernel and user stack ids (at `at` and `at + 4` of each value) that
    /// the map `name`, of keys of `K` bytes and values of `V` bytes, refers to.
    pub(crate) fn held_by<const K: usize, const V: usize>(
        &self,
        name: &'static str,
        at: usize,
        held: &mut HashSet<i32>,
    ) -> Result<(), BpfError> {
        let map = self.ebpf.map(name).ok_or_else(|| map_err(name, "missing"))?;
        let tasks: BpfHashMap<&MapData, [u8; K], [u8; V]> =
            BpfHashMap::try_from(map).map_err(|e| map_err(name, e))?;
        for (_, v) in tasks.iter().filter_map(Result::ok) {
            held.extend([i32_at(&v, at), i32_at(&v, at + 4)]);
        }
        Ok(())
    }

    /// The records of `found` with their stacks; then every stack id not in `held` is freed
    /// (those just read, and those nothing refers to any more).
    pub(crate) fn finish(&mut self, found: &[Found], held: &HashSet<i32>) -> Result<Vec<Waited>, BpfError> {
        self.with_stacks(held, |frames_of| {
            found
                .iter()
                .map(|(k, v)| Waited {
                    tgid: u32_at(k, 0),
                    tid: u32_at(k, 4),
                    kernel: frames_of(i32_at(k, 8)),
                    user: frames_of(i32_at(k, 12)),
                    on: u32_at(k, 16),
                    comm: comm(&k[24..40]),
                    ns: v[0],
                    count: v[1],
                })
                .collect()
        })
    }

    /// Calls `read` with the frames of a stack id (leaf first; empty for an id < 0 or not in
    /// the map), then frees every stack id not in `held`.
    pub(crate) fn with_stacks<R>(
        &mut self,
        held: &HashSet<i32>,
        read: impl FnOnce(&dyn Fn(i32) -> Vec<u64>) -> R,
    ) -> Result<R, BpfError> {
        // The outliers written so far: their stack ids are held by the waits in progress
        // they ended, or by keys of the generation just read, so nothing freed them yet.
        let mut raw = Vec::new();
        if let Some(ring) = &mut self.outlier_ring {
            while let Some(item) = ring.next() {
                raw.extend(WaitOutlier::read(&item));
            }
        }
        let map = self.ebpf.map_mut("stacks").ok_or_else(|| map_err("stacks", "missing"))?;
        let mut stacks: StackTraceMap<&mut MapData> =
            StackTraceMap::try_from(map).map_err(|e| map_err("stacks", e))?;
        let frames_of = |id: i32| -> Vec<u64> {
            let Ok(id) = u32::try_from(id) else { return Vec::new() };
            match stacks.get(&id, 0) {
                Ok(t) => t.frames().iter().map(|f| f.ip).collect(),
                Err(_) => Vec::new(),
            }
        };
        for (mut o, kstack, ustack) in raw {
            o.kernel = frames_of(kstack);
            o.user = frames_of(ustack);
            self.outliers.push(o);
        }
        let out = read(&frames_of);
        let ids: Vec<u32> = stacks.stack_ids().filter_map(Result::ok).collect();
        for id in ids {
            if !held.contains(&(id as i32)) {
                let _ = stacks.remove(&id);
            }
        }
        Ok(out)
    }

    /// The outliers read at the drains since the last call, in the order they were written.
    pub(crate) fn take_outliers(&mut self) -> Vec<WaitOutlier> {
        std::mem::take(&mut self.outliers)
    }

    /// `common.h`'s `lost` counter `i` summed over the CPUs.
    pub(crate) fn lost_count(&self, i: u32) -> Result<u64, BpfError> {
        let map = self.ebpf.map("lost").ok_or_else(|| map_err("lost", "missing"))?;
        let lost: PerCpuArray<&MapData, u64> = PerCpuArray::try_from(map).map_err(|e| map_err("lost", e))?;
        let v = lost.get(&i, 0).map_err(|e| map_err("lost", e))?;
        Ok(v.iter().sum())
    }

    /// The `lost` counters summed over the CPUs, plus `unmatched` counted in user space.
    pub(crate) fn lost(&self, unmatched: u64) -> Result<WaitLost, BpfError> {
        let sum = |i: u32| self.lost_count(i);
        Ok(WaitLost {
            waits: sum(0)?,
            stacks: sum(1)?,
            starts: sum(2)?,
            unmatched: sum(3)? + unmatched,
            histograms: sum(4)?,
            outliers: sum(5)?,
        })
    }
}

/// Deletes the entries of the map `name` (keys of `K` bytes, values of `V` bytes, the
/// generation they were written in at `gen_at` of the value) that `stale` says are stale by
/// their generation; returns how many went.
pub(crate) fn forget_stale<const K: usize, const V: usize>(
    ebpf: &mut Ebpf,
    name: &'static str,
    gen_at: usize,
    stale: impl Fn(u32) -> bool,
) -> Result<u64, BpfError> {
    let map = ebpf.map_mut(name).ok_or_else(|| map_err(name, "missing"))?;
    let mut entries: BpfHashMap<&mut MapData, [u8; K], [u8; V]> =
        BpfHashMap::try_from(map).map_err(|e| map_err(name, e))?;
    let old: Vec<[u8; K]> = entries
        .iter()
        .filter_map(Result::ok)
        .filter(|(_, v)| stale(u32_at(v, gen_at)))
        .map(|(k, _)| k)
        .collect();
    let mut gone = 0;
    for k in old {
        // Read again: the kernel may have written the key anew since.
        if entries.get(&k, 0).is_ok_and(|v| stale(u32_at(&v, gen_at))) && entries.remove(&k).is_ok() {
            gone += 1;
        }
    }
    Ok(gone)
}
