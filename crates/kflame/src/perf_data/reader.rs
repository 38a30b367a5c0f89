//! The record loop: perf.data records in time order into folded stacks.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use linux_perf_data::linux_perf_event_reader::{
    CommOrExecRecord, CpuMode, Endianness, EventRecord, ForkOrExitRecord, Mmap2FileId, RawData,
    RawEventRecord, RecordParseInfo, SampleRecord,
};
use linux_perf_data::{DsoKey, PerfFileReader, PerfFileRecord};
use rustc_hash::FxHashMap;

use super::dso::Dsos;
use super::kernel::KernelLoad;
use super::machine::{Machine, Mode, user_dso_name};
use super::naming::NameRules;
use super::records::Records;
use super::resolve::{KernelSymbols, Resolver};
use super::stacks::StackTable;
use super::tracing::AllocSize;
use super::unwind::Unwinders;
use super::{Options, PerfDataError, at_byte, header};
use crate::collapse::perf::is_alloc_event;
use crate::collapse::{Order, Output};
use crate::fold::{Meta, Unit};
use crate::symbols::MappedFile;

/// Reads the perf.data file at `path` into folded stacks.
pub fn collapse_file(path: &Path, opts: &Options, order: Order) -> Result<Output, PerfDataError> {
    let data =
        MappedFile::open(path).map_err(|source| PerfDataError::Io { path: path.to_path_buf(), source })?;
    collapse_image(&data, Some(&data), opts, order)
}

/// Reads a perf.data image in memory into folded stacks. Damaged records stop the reading
/// with a diagnostic; what was read before is kept.
pub fn collapse_bytes(data: &[u8], opts: &Options, order: Order) -> Result<Output, PerfDataError> {
    collapse_image(data, None, opts, order)
}

/// `data`, mapped from `mapped` when it is a file (whose pages are then released as the
/// records are consumed).
fn collapse_image(
    data: &[u8],
    mapped: Option<&MappedFile>,
    opts: &Options,
    order: Order,
) -> Result<Output, PerfDataError> {
    if header::is_pipe(data) {
        // `perf record -o -`: attributes and features come as records before the samples.
        let reader = PerfFileReader::parse_pipe(Cursor::new(data))?;
        return read_records(data, None, reader, opts, order, Fix::None);
    }
    header::check(data).map_err(PerfDataError::Header)?;
    let first = match header::check_attributes(data) {
        Ok(()) => match header::cap_auxtrace(data) {
            Some((fixed, at, claimed)) => {
                let reader = PerfFileReader::parse_file(Cursor::new(&fixed[..]))?;
                return read_records(&fixed, None, reader, opts, order, Fix::Auxtrace { at, claimed });
            }
            None => PerfFileReader::parse_file(Cursor::new(data)).map_err(PerfDataError::from),
        },
        Err(problem) => Err(PerfDataError::Header(problem)),
    };
    match first {
        Ok(reader) => read_records(data, mapped, reader, opts, order, Fix::None),
        Err(e) => match header::repair_event_desc(data) {
            Some((fixed, shift)) => {
                let reader = PerfFileReader::parse_file(Cursor::new(&fixed[..]))?;
                read_records(&fixed, None, reader, opts, order, Fix::EventDesc(shift))
            }
            None => Err(e),
        },
    }
}

/// What was changed in a copy of the file before reading it.
enum Fix {
    None,
    /// The EVENT_DESC section was found this many bytes off its recorded offset.
    EventDesc(i64),
    /// An AUXTRACE record at this offset of the data section claimed more trace data than
    /// the section holds; reading ends there.
    Auxtrace {
        at: u64,
        claimed: u64,
    },
}

fn read_records<R: std::io::Read>(
    data: &[u8],
    mapped: Option<&MappedFile>,
    reader: PerfFileReader<R>,
    opts: &Options,
    order: Order,
    fix: Fix,
) -> Result<Output, PerfDataError> {
    let PerfFileReader { mut perf_file, mut record_iter } = reader;
    let events = describe_events(&perf_file);
    let build_ids = perf_file.build_ids().unwrap_or_default();
    let mut st = State::new(opts, &build_ids, order)?;
    st.pairs = opts.pairing.as_ref().map(|p| super::pairs::Pairs::new(p, opts, &perf_file));
    // Sorted stacks are named at the end; time-ordered ones and pairs need names at once.
    st.resolver.set_deferred_naming(order == Order::Sorted && st.pairs.is_none());
    st.resolver.dsos.set_perf_map_dir(opts.perf_map_dir.clone());
    for e in events.iter().filter(|e| e.alloc.is_none() && is_alloc_event(e.name.as_bytes())) {
        st.out.diag.note("no tracepoint format", 0, || {
            format!(
                "the file's tracing data has no usable format for `{}`: its samples weigh 1 each, \
                 not allocated bytes",
                e.name
            )
        });
    }
    st.events = events;
    st.read_lost = header::read_format_lost(data);
    for (i, a) in perf_file.event_attributes().iter().enumerate() {
        st.attr_of_id.extend(a.event_ids.iter().map(|&id| (id, i)));
    }
    match fix {
        Fix::None => {}
        Fix::EventDesc(shift) => st.out.diag.note("header repaired", 0, || {
            format!(
                "the event description section is {shift} bytes off its recorded offset \
                 (file edited after recording?); read from there"
            )
        }),
        Fix::Auxtrace { at, claimed } => st.out.diag.skip("damaged record", 0, || {
            format!(
                "reading stopped at byte {at} of the data section: an AUXTRACE record claims {claimed} bytes \
                 of trace data, more than the section holds; the stacks read before it are kept"
            )
        }),
    }
    if let Some(root) = st.resolver.dsos.root() {
        let mut prefetch = super::prefetch::Prefetch::start(root.to_path_buf());
        for info in build_ids.values().filter(|i| i.path.starts_with(b"/")) {
            prefetch.schedule(&String::from_utf8_lossy(&info.path), Some(&info.build_id));
        }
        st.resolver.dsos.set_prefetch(prefetch);
    }
    read_all(data, mapped, &mut perf_file, &mut record_iter, &mut st);
    st.resolver.name_pending();
    st.resolver.dsos.end_prefetch();
    Ok(st.finish())
}

/// Feeds every record to the state, in place when possible.
fn read_all<R: std::io::Read>(
    data: &[u8],
    mapped: Option<&MappedFile>,
    perf_file: &mut linux_perf_data::PerfFile,
    record_iter: &mut linux_perf_data::PerfRecordIter<R>,
    st: &mut State<'_>,
) {
    match data_section(data).filter(|_| in_place(perf_file) && !header::is_pipe(data)) {
        Some(section) => {
            let attrs = perf_file.event_attributes();
            // Pages of records already delivered leave the process's memory.
            let base = section.as_ptr() as usize - data.as_ptr() as usize;
            let mut released = base;
            let consumed = |n: usize| {
                if let Some(file) = mapped {
                    released = file.release(released..base + n);
                }
            };
            let record = |attr, at: usize, rec: &RawEventRecord<'_>| {
                st.at = Some((base + at) as u64);
                st.record(attr, rec);
            };
            let records = Records::new(section, attrs);
            let result = records.for_each(consumed, record);
            st.aux_bytes = records.aux_bytes();
            if let Err(d) = result {
                let (left, len) = (section.len() - d.offset.min(section.len()), section.len().max(1));
                st.out.diag.skip("damaged record", 0, || {
                    format!(
                        "reading stopped at byte {} of the data section: {}; its last {left} bytes ({:.1}% of \
                         the data section) are lost, the {} samples read before it are kept",
                        d.offset,
                        d.what,
                        left as f64 * 100.0 / len as f64,
                        st.samples_read
                    )
                });
            }
        }
        None => {
            loop {
                match record_iter.next_record(perf_file) {
                    Ok(Some(PerfFileRecord::EventRecord { attr_index, record })) => {
                        st.record(attr_index, &record)
                    }
                    Ok(Some(PerfFileRecord::UserRecord(u))) => {
                        if u.record_type == linux_perf_data::UserRecordType::PERF_AUXTRACE {
                            // The record's data holds its trace bytes after the 40-byte head.
                            st.aux_bytes += (u.data.len() as u64).saturating_sub(40);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let n = st.samples_read;
                        st.out.diag.skip("damaged record", 0, || {
                            format!(
                                "reading stopped at a damaged record ({e}); the rest of the file is lost, the {n} \
                                 samples read before it are kept"
                            )
                        });
                        break;
                    }
                }
            }
        }
    }
}

use linux_perf_data::linux_perf_event_reader::{
    HardwareEventId, PerfEventAttr, PerfEventType, SampleFormat as SampleFormatBits, SamplingPolicy,
    SoftwareCounterType,
};

/// The name perf gives an event the file does not name (old and pipe-mode files carry no
/// event names): the generic hardware and software events.
fn attr_name(attr: &PerfEventAttr) -> Option<String> {
    use HardwareEventId as H;
    use SoftwareCounterType as S;
    let name = match attr.type_ {
        PerfEventType::Hardware(id, _) => match id {
            H::CpuCycles => "cycles",
            H::Instructions => "instructions",
            H::CacheReferences => "cache-references",
            H::CacheMisses => "cache-misses",
            H::BranchInstructions => "branches",
            H::BranchMisses => "branch-misses",
            H::BusCycles => "bus-cycles",
            H::StalledCyclesFrontend => "stalled-cycles-frontend",
            H::StalledCyclesBackend => "stalled-cycles-backend",
            H::RefCpuCycles => "ref-cycles",
            _ => return None,
        },
        PerfEventType::Software(id) => match id {
            S::CpuClock => "cpu-clock",
            S::TaskClock => "task-clock",
            S::PageFaults => "page-faults",
            S::ContextSwitches => "context-switches",
            S::CpuMigrations => "cpu-migrations",
            S::PageFaultsMin => "minor-faults",
            S::PageFaultsMaj => "major-faults",
            S::AlignmentFaults => "alignment-faults",
            S::EmulationFaults => "emulation-faults",
            S::Dummy => "dummy",
            S::BpfOutput => "bpf-output",
            S::CgroupSwitches => "cgroup-switches",
            _ => return None,
        },
        _ => return None,
    };
    Some(name.to_string())
}

/// Records are read in place for little-endian files without compressed records; others go
/// through the container's own (copying) iterator.
fn in_place(file: &linux_perf_data::PerfFile) -> bool {
    file.endian() == linux_perf_data::linux_perf_event_reader::Endianness::LittleEndian
        && !file.features().has_feature(linux_perf_data::Feature::COMPRESSED)
        && !file.event_attributes().is_empty()
}

/// The data section of a checked perf.data image.
fn data_section(data: &[u8]) -> Option<&[u8]> {
    let word = |o: usize| u64::from_le_bytes(data.get(o..o + 8)?.try_into().ok()?).try_into().ok();
    let (offset, size): (usize, usize) = (word(40)?, word(48)?);
    data.get(offset..offset.checked_add(size)?)
}

struct Event {
    name: String,
    has_period: bool,
    /// The period of a `-c N` event whose samples do not record it: each weighs N, as perf
    /// gives a sample without a PERIOD field the attribute's period.
    fixed_period: Option<u64>,
    /// The sample format when its samples are counted from their head alone (see
    /// `sample.rs`): little-endian, no allocation payload, no DWARF stack.
    head_format: Option<SampleFormatBits>,
    /// For kmem allocation tracepoints: where the payload holds the allocated size.
    alloc: Option<AllocSize>,
}

/// Names, period use and allocation-size fields of the recorded events.
fn describe_events(perf_file: &linux_perf_data::PerfFile) -> Vec<Event> {
    let formats = perf_file
        .feature_section_data(linux_perf_data::Feature::TRACING_DATA)
        .and_then(super::tracing::formats)
        .unwrap_or_default();
    let attrs = perf_file.event_attributes();
    let little_endian =
        perf_file.endian() == linux_perf_data::linux_perf_event_reader::Endianness::LittleEndian;
    let event = |(i, a): (usize, &linux_perf_data::AttributeDescription)| {
        let name = a.name().map(str::to_string).or_else(|| attr_name(a.attributes()));
        let name = name.unwrap_or_else(|| format!("event{i}"));
        let tracepoint = match a.attributes().type_ {
            PerfEventType::Tracepoint(id) => Some(id),
            _ => None,
        };
        let alloc = tracepoint
            .filter(|_| is_alloc_event(name.as_bytes()))
            .and_then(|id| formats.get(&id))
            .and_then(AllocSize::of);
        // perf script prints no period for tracepoints: they weigh one per event.
        let recorded = a.attributes().sample_format.contains(SampleFormatBits::PERIOD);
        let fixed_period = match a.attributes().sampling_policy {
            SamplingPolicy::Period(n) if !recorded && tracepoint.is_none() => Some(n.get()),
            _ => None,
        };
        let has_period = (recorded || fixed_period.is_some()) && tracepoint.is_none();
        let format = a.attributes().sample_format;
        let head_format =
            (little_endian && alloc.is_none() && super::sample::reads(format)).then_some(format);
        Event { name, has_period, fixed_period, alloc, head_format }
    };
    attrs.iter().enumerate().map(event).collect()
}

/// Everything the loop keeps.
struct State<'o> {
    opts: &'o Options,
    machine: Machine,
    resolver: Resolver,
    kernel: Option<KernelLoad>,
    user_build_ids: FxHashMap<Vec<u8>, Vec<u8>>,
    unwinders: Unwinders,
    events: Vec<Event>,
    filter: Option<usize>,
    /// The events whose samples are counted: those named as the chosen one, modifiers and
    /// PMU aside (`cpu_core/cycles/` and `cpu_atom/cycles/` of a hybrid CPU are one event).
    selected: Vec<bool>,
    /// Which of them had samples.
    selected_seen: Vec<bool>,
    other_events: u64,
    /// SAMPLE records read, of any event (what a damaged record leaves).
    samples_read: u64,
    /// Lost counts of LOST records (events the kernel could not write: samples and others).
    lost: u64,
    /// Lost counts of LOST_SAMPLES records (samples the kernel could not make, e.g. PEBS;
    /// perf report's "Total Lost Samples").
    lost_samples: u64,
    no_callchain: u64,
    bad_chains: u64,
    /// Bytes of AUX trace data (Intel PT...) in the file, not decoded.
    aux_bytes: u64,
    /// Per event: whether its read values carry a lost count (`PERF_FORMAT_LOST`).
    read_lost: Vec<bool>,
    /// The event of each sample id, and the last read value of each id.
    attr_of_id: FxHashMap<u64, usize>,
    read_values: FxHashMap<u64, u64>,
    out: Output,
    stacks: StackTable,
    frames: Vec<u32>,
    /// `--mode`: samples paired into durations instead of counted.
    pairs: Option<super::pairs::Pairs>,
    /// Where the record being read starts in the file (records read in place only).
    at: Option<u64>,
}

impl<'o> State<'o> {
    fn new(
        opts: &'o Options,
        build_ids: &std::collections::HashMap<DsoKey, linux_perf_data::DsoInfo>,
        order: Order,
    ) -> Result<State<'o>, PerfDataError> {
        let mut user_build_ids = FxHashMap::default();
        let mut kernel_build_id = None;
        for (key, info) in build_ids {
            match key {
                DsoKey::Kernel => kernel_build_id = Some(info.build_id.clone()),
                _ => {
                    user_build_ids.insert(info.path.clone(), info.build_id.clone());
                }
            }
        }
        let host = opts.host.allowed();
        let root = opts.symfs.clone().or_else(|| host.then(|| PathBuf::from("/")));
        Ok(State {
            opts,
            machine: Machine::default(),
            resolver: Resolver::new(
                Dsos::new(root, host),
                KernelSymbols { syms: None, delta: 0 },
                rules(opts),
            ),
            kernel: Some(KernelLoad::start(opts, kernel_build_id)),
            user_build_ids,
            unwinders: Unwinders::default(),
            events: Vec::new(),
            filter: None,
            selected: Vec::new(),
            selected_seen: Vec::new(),
            other_events: 0,
            samples_read: 0,
            lost: 0,
            lost_samples: 0,
            no_callchain: 0,
            bad_chains: 0,
            aux_bytes: 0,
            read_lost: Vec::new(),
            attr_of_id: FxHashMap::default(),
            read_values: FxHashMap::default(),
            out: Output::new(order),
            stacks: StackTable::new(order),
            frames: Vec::new(),
            pairs: None,
            at: None,
        })
    }

    fn dsos(&mut self) -> &mut Dsos {
        &mut self.resolver.dsos
    }

    fn record(&mut self, attr_index: usize, rec: &RawEventRecord<'_>) {
        if rec.record_type.0 == KSYMBOL {
            self.ksymbol(rec);
            return;
        }
        if rec.record_type.0 == LOST_SAMPLES {
            // { u64 lost; struct sample_id } (linux-perf-event-reader 0.10 does not parse it).
            let mut data = rec.data;
            let lost = match rec.parse_info.endian {
                Endianness::LittleEndian => data.read_u64::<byteorder::LittleEndian>(),
                Endianness::BigEndian => data.read_u64::<byteorder::BigEndian>(),
            };
            match lost {
                Ok(n) => self.lost_samples = self.lost_samples.saturating_add(n),
                Err(_) => {
                    let at = at_byte(self.at);
                    self.out.diag.skip("damaged record", 0, || {
                        format!("a LOST_SAMPLES record{at} is shorter than its lost count")
                    });
                }
            }
            return;
        }
        if rec.record_type.0 == SAMPLE {
            self.samples_read += 1;
        }
        if rec.record_type.0 == SAMPLE
            && let RawData::Single(body) = rec.data
            && self.sample_head(attr_index, body, rec.misc)
        {
            return;
        }
        if let Some(len) = mmap2_build_id_too_long(rec) {
            let at = at_byte(self.at);
            self.out.diag.skip("damaged record", 0, || {
                format!("a MMAP2 record{at} gives a build id of {len} bytes, more than the 20 a build id has")
            });
            return;
        }
        // Read values in samples (`perf record -e '{a,b}:S'`): linux-perf-event-reader 0.10
        // swaps the group and single layouts and knows no LOST field, so they are cut out
        // here and the rest parsed without them.
        let stripped;
        let without_read;
        let mut values = None;
        let rec = if rec.record_type.0 == SAMPLE
            && rec.parse_info.sample_format.contains(SampleFormatBits::READ)
        {
            match strip_read(rec, self.read_lost.get(attr_index).copied().unwrap_or(false)) {
                Some(s) => {
                    stripped = s.body;
                    values = Some(s.values);
                    without_read =
                        RawEventRecord::new(rec.record_type, rec.misc, RawData::from(&stripped[..]), s.info);
                    &without_read
                }
                None => {
                    let at = at_byte(self.at);
                    self.out.diag.skip("damaged record", 0, || {
                        format!("a SAMPLE record{at} is shorter than the read values its event records")
                    });
                    return;
                }
            }
        } else {
            rec
        };
        if rec.record_type.0 == SAMPLE
            && !super::sample::chain_fits(
                &rec.data.as_slice(),
                rec.parse_info.sample_format,
                matches!(rec.parse_info.endian, Endianness::BigEndian),
            )
        {
            let at = at_byte(self.at);
            self.out.diag.skip("damaged record", 0, || {
                format!("a SAMPLE record{at} gives a call chain longer than the record")
            });
            return;
        }
        let parsed = match rec.parse() {
            Ok(p) => p,
            Err(e) => {
                let at = at_byte(self.at);
                self.out.diag.skip("damaged record", 0, || {
                    format!("a {:?} record{at} could not be parsed: {e}", rec.record_type)
                });
                return;
            }
        };
        match parsed {
            EventRecord::Sample(s) => match values {
                Some(values) => self.read_sample(&s, &values),
                None => self.sample(attr_index, &s),
            },
            EventRecord::Comm(c) => self.comm(&c),
            EventRecord::Fork(f) => self.fork(&f),
            EventRecord::Mmap(m) => {
                let exec = m.is_executable;
                self.mmap(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), exec, None)
            }
            EventRecord::Mmap2(m) => {
                let bid = match &m.file_id {
                    Mmap2FileId::BuildId(b) => Some(b.clone()),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                let exec = m.protection & 4 != 0;
                self.mmap(m.pid, m.address, m.length, m.page_offset, &m.path.as_slice(), exec, bid)
            }
            EventRecord::Lost(l) => self.lost = self.lost.saturating_add(l.count),
            _ => {}
        }
    }

    fn comm(&mut self, c: &CommOrExecRecord<'_>) {
        self.machine.set_comm(c.pid, c.tid, &c.name.as_slice());
    }

    fn fork(&mut self, f: &ForkOrExitRecord) {
        self.machine.fork(f.pid, f.ppid, f.tid, f.ptid);
    }

    #[allow(clippy::too_many_arguments)]
    fn mmap(
        &mut self,
        pid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &[u8],
        exec: bool,
        bid: Option<Vec<u8>>,
    ) {
        if pid == -1 {
            self.machine.map_kernel(path, start, len, pgoff, &mut self.resolver.dsos);
            return;
        }
        let name = user_dso_name(path, pid, exec);
        let pgoff = super::special::map_pgoff(&name, start, pgoff);
        let bid = bid.or_else(|| self.user_build_ids.get(path).cloned());
        let id = self.dsos().intern(&name, bid.as_deref());
        if exec && !self.resolver.defers_naming() {
            self.dsos().prefetch(id);
        }
        self.machine.map(pid, start, len, pgoff, id);
    }

    fn ksymbol(&mut self, rec: &RawEventRecord<'_>) {
        let data = rec.data.as_slice();
        if data.len() < 16 {
            return;
        }
        let addr = u64::from_le_bytes(data[0..8].try_into().unwrap_or_default());
        let len = u32::from_le_bytes(data[8..12].try_into().unwrap_or_default());
        let flags = u16::from_le_bytes(data[14..16].try_into().unwrap_or_default());
        let name_bytes = &data[16..];
        let name_end = name_bytes.iter().position(|&b| b == 0).unwrap_or(name_bytes.len());
        let name = String::from_utf8_lossy(&name_bytes[..name_end]).into_owned();
        if flags & 1 != 0 || name.is_empty() {
            return; // unregistration: later samples in that range were taken before it
        }
        let id = self.dsos().intern(&name, None);
        self.machine.add_ksym(crate::symbols::Mapping {
            start: addr,
            end: addr.saturating_add(u64::from(len)),
            pgoff: 0,
            object: id,
        });
    }

    /// Takes the kernel symbols once the kernel map (recorded before any sample) is known.
    fn ensure_kernel(&mut self) {
        if let Some(load) = self.kernel.take() {
            self.resolver.kernel = load.finish(self.machine.kernel_text, &mut self.out);
        }
    }

    /// A sample read by its head only (see `sample.rs`); false when it needs the general
    /// parser.
    fn sample_head(&mut self, attr_index: usize, body: &[u8], misc: u16) -> bool {
        let Some(format) = self.events.get(attr_index).and_then(|e| e.head_format) else { return false };
        if self.pairs.is_some() {
            return false;
        }
        let Some(h) = super::sample::head(body, format) else { return false };
        if !self.wanted(attr_index) {
            return true;
        }
        let tid = h.tid.unwrap_or(-1);
        let pid = h.pid.or_else(|| self.machine.pid_of(tid)).unwrap_or(-1);
        let root = self.stacks.root(&self.machine, pid, tid, self.opts.include_pid, self.opts.include_tid);
        let leaf = h.ip.map(|ip| (ip, sample_mode(CpuMode::from_misc(misc))));
        self.chain_frames(h.chain.map(super::sample::chain_words), leaf, pid, root.java);
        let weight = self.plain_weight(attr_index, h.period);
        self.stacks.add(root, &self.frames, weight, h.time, &self.resolver, &mut self.out);
        true
    }

    /// Whether samples of this event are counted (the others are counted as left out).
    fn wanted(&mut self, attr_index: usize) -> bool {
        if self.filter.is_none() {
            let first = first_event(self.opts, &self.events, attr_index);
            self.filter = Some(first);
            let key = match &self.opts.event_filter {
                Some(want) => event_key(want),
                None => self.events.get(first).map_or("", |e| event_key(&e.name)),
            };
            self.selected = self.events.iter().map(|e| event_key(&e.name) == key).collect();
            self.selected_seen = vec![false; self.events.len()];
        }
        let wanted = self.selected.get(attr_index).copied().unwrap_or(false);
        if wanted {
            if let Some(seen) = self.selected_seen.get_mut(attr_index) {
                *seen = true;
            }
        } else {
            self.other_events += 1;
        }
        wanted
    }

    fn sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        if self.pairs.is_some() {
            return self.paired_sample(attr_index, s);
        }
        if !self.wanted(attr_index) {
            return;
        }
        let tid = s.tid.unwrap_or(-1);
        let pid = s.pid.or_else(|| self.machine.pid_of(tid)).unwrap_or(-1);
        let root = self.stacks.root(&self.machine, pid, tid, self.opts.include_pid, self.opts.include_tid);
        self.collect_frames(s, true, pid, root.java);
        let Some(weight) = self.weight(attr_index, s) else { return };
        self.stacks.add(root, &self.frames, weight, s.timestamp, &self.resolver, &mut self.out);
    }

    /// A sample with read values (`PERF_SAMPLE_READ`, e.g. `-e '{a,b}:S'`), delivered as
    /// perf does: once per value, for the event of its id, weighing what the counter
    /// advanced since that event's previous sample (nothing when it did not, or when the
    /// values carry no ids).
    fn read_sample(&mut self, s: &SampleRecord<'_>, values: &[(u64, Option<u64>)]) {
        for &(value, id) in values {
            let Some(id) = id else { continue };
            let Some(&attr) = self.attr_of_id.get(&id) else { continue };
            let before = self.read_values.insert(id, value).unwrap_or(0);
            let delta = value.wrapping_sub(before);
            if delta == 0 {
                continue;
            }
            let mut one = s.clone();
            one.period = Some(delta);
            self.sample(attr, &one);
        }
    }

    /// `--mode`: the sample as a trace event fed to the pairing (`pairs/`).
    fn paired_sample(&mut self, attr_index: usize, s: &SampleRecord<'_>) {
        let Some(mut pairs) = self.pairs.take() else { return };
        if let Some(ev) = pairs.event(attr_index, s, &self.machine, self.at, &mut self.out) {
            let pid = s.pid.or_else(|| self.machine.pid_of(s.tid.unwrap_or(-1))).unwrap_or(-1);
            self.collect_frames(s, false, pid, ev.comm.replace(' ', "_") == "java");
            pairs.feed(ev, self.frames.iter().map(|&f| self.resolver.text(f)), &mut self.out);
        }
        self.pairs = Some(pairs);
    }

    /// A sample's weight: 1 with `counts`, allocated bytes for kmem allocation tracepoints,
    /// else the period; `None` (reported) when an allocation payload lacks the size.
    fn weight(&mut self, attr_index: usize, s: &SampleRecord<'_>) -> Option<u64> {
        let event = self.events.get(attr_index);
        if self.opts.counts {
            return Some(1);
        }
        if let Some(alloc) = event.and_then(|e| e.alloc.as_ref()) {
            let raw = s.raw.as_ref().map(|r| r.as_slice()).unwrap_or_default();
            return match alloc.bytes(&raw) {
                Ok(b) => Some(b),
                Err(msg) => {
                    let at = at_byte(self.at);
                    self.out.diag.skip("no allocation size", 0, || format!("{msg} (the sample{at})"));
                    None
                }
            };
        }
        Some(self.plain_weight(attr_index, s.period))
    }

    /// The weight of a sample of an event that is not an allocation tracepoint.
    fn plain_weight(&self, attr_index: usize, period: Option<u64>) -> u64 {
        match self.events.get(attr_index) {
            Some(e) if e.has_period && !self.opts.counts => {
                period.or(e.fixed_period).filter(|&p| p > 0).unwrap_or(1)
            }
            _ => 1,
        }
    }

    /// The frames of a sample, leaf first: the recorded call chain, then (for
    /// `--call-graph dwarf`) the unwound user stack. Without a chain, the sampled address
    /// alone when `ip_alone` (as perf script prints it on the sample's line).
    fn collect_frames(&mut self, s: &SampleRecord<'_>, ip_alone: bool, pid: i32, java: bool) {
        let chain = s.callchain.map(|c| (0..c.len()).map_while(move |i| c.get(i)));
        let leaf = s.ip.filter(|_| ip_alone).map(|ip| (ip, sample_mode(s.cpu_mode)));
        if self.chain_frames(chain, leaf, pid, java)
            && !self.opts.no_unwind
            && s.user_regs.is_some()
            && s.user_stack.is_some()
        {
            let mut frames = std::mem::take(&mut self.frames);
            self.unwinders.unwind(s, pid, java, &self.machine, &mut self.resolver, &mut frames, MAX_STACK);
            self.frames = frames;
        }
    }

    /// The frames of a recorded call chain (addresses and context markers, leaf first)
    /// into `self.frames`; false when there is no chain or it is corrupt. A sample without
    /// a chain gets the frame of its sampled address `leaf` (and the mode it was taken in)
    /// when there is one, as `perf script | stackcollapse-perf.pl` gives it.
    fn chain_frames(
        &mut self,
        chain: Option<impl Iterator<Item = u64>>,
        leaf: Option<(u64, Mode)>,
        pid: i32,
        java: bool,
    ) -> bool {
        self.frames.clear();
        let Some(chain) = chain else {
            self.no_callchain += 1;
            if let Some((ip, mode)) = leaf {
                self.ensure_kernel();
                self.resolver.check_kernel(&self.machine);
                let space = self.machine.space_generation(pid);
                let f = self.resolver.frame_cached(&self.machine, pid, space, ip, mode, java);
                self.frames.push(f);
            }
            return false;
        };
        self.ensure_kernel();
        let mut mode = Mode::User;
        let mut n = 0;
        let mut frames = std::mem::take(&mut self.frames);
        self.resolver.check_kernel(&self.machine);
        let space = self.machine.space_generation(pid);
        for ip in chain {
            if ip >= PERF_CONTEXT_MAX {
                match ip {
                    PERF_CONTEXT_KERNEL => mode = Mode::Kernel,
                    PERF_CONTEXT_USER => mode = Mode::User,
                    PERF_CONTEXT_HV
                    | PERF_CONTEXT_GUEST
                    | PERF_CONTEXT_GUEST_KERNEL
                    | PERF_CONTEXT_GUEST_USER => mode = Mode::Other,
                    _ => {
                        // A corrupt chain: perf discards all of it (and does not unwind).
                        frames.clear();
                        self.frames = frames;
                        self.bad_chains += 1;
                        return false;
                    }
                }
                continue;
            }
            if n >= MAX_STACK {
                break;
            }
            n += 1;
            let f = self.resolver.frame_cached(&self.machine, pid, space, ip, mode, java);
            frames.push(f);
        }
        self.frames = frames;
        true
    }

    fn finish(mut self) -> Output {
        self.stacks.flush(&self.resolver, &mut self.out);
        let event = self.filter.and_then(|i| self.events.get(i));
        let unit = match event {
            Some(e) if e.alloc.is_some() && !self.opts.counts => Unit::Bytes,
            Some(e) if e.has_period && !self.opts.counts => Unit::Period,
            // Sample counts: no header, as `perf script | kflame collapse` writes them.
            _ => Unit::Unspecified,
        };
        self.out.meta = Meta { unit, event: event.map(|e| e.name.clone()) };
        // What a sample without frames becomes: its process name alone when counting, a
        // `[no stack]` frame under the interval's labels when pairing.
        let stackless = match self.pairs.take() {
            Some(pairs) => {
                pairs.finish(&mut self.out);
                "their intervals are kept under a `[no stack]` frame"
            }
            None => "only the process name",
        };
        let chainless = match stackless {
            "only the process name" => "the sampled address alone under the process name",
            paired => paired,
        };
        let (other, nocc) = (self.other_events, self.no_callchain);
        if self.bad_chains > 0 {
            self.out.diag.add(crate::diag::Severity::Note, "corrupt call chain", 0, self.bad_chains, || {
                format!("call chains with an invalid context marker were dropped (as perf does): {stackless}")
            });
        }
        let name = event.map(|e| e.name.clone()).unwrap_or_default();
        let merged: Vec<&str> = (self.events.iter().zip(&self.selected_seen))
            .filter(|(_, seen)| **seen)
            .map(|(e, _)| e.name.as_str())
            .collect();
        if merged.len() > 1 {
            let list = merged.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            self.out.diag.note("events merged", 0, || {
                format!("samples of {list} are folded together: one event on several PMUs (hybrid CPU) or with other modifiers; choose one with its full name in --event-filter")
            });
        }
        if event.is_none()
            && let Some(want) = &self.opts.event_filter
        {
            let names = self.events.iter().map(|e| format!("`{}`", e.name)).collect::<Vec<_>>().join(", ");
            self.out.diag.note("no such event", 0, || {
                format!("no event of the file is named `{want}` (--event-filter); it recorded {names}")
            });
        } else if other > 0 {
            self.out.diag.add(crate::diag::Severity::Note, "other events", 0, other, || {
                format!("only samples of event `{name}` were kept; choose another with --event-filter")
            });
        }
        let records = match (self.lost > 0, self.lost_samples > 0) {
            (true, true) => "LOST and LOST_SAMPLES records",
            (true, false) => "LOST records",
            (false, _) => "LOST_SAMPLES records",
        };
        let lost = self.lost.saturating_add(self.lost_samples);
        if lost > 0 {
            self.out.diag.add(crate::diag::Severity::Note, "lost samples", 0, lost, || {
                format!("the kernel lost samples while recording ({records})")
            });
        }
        if nocc > 0 {
            self.out.diag.add(crate::diag::Severity::Note, "no call chain", 0, nocc, || {
                format!("samples without a call chain (record with -g or --call-graph): {chainless}")
            });
        }
        if self.aux_bytes > 0 {
            let n = self.aux_bytes;
            self.out.diag.note("trace data not decoded", 0, || {
                format!(
                    "{n} bytes of AUX trace data (Intel PT, CoreSight...) are not decoded: only the sampled \
                     events are read, as `perf script --no-itrace` does"
                )
            });
        }
        report_missing(&self.resolver.dsos, &mut self.out);
        self.out
    }
}

fn rules(opts: &Options) -> NameRules {
    NameRules {
        annotate_kernel: opts.annotate_kernel,
        annotate_jit: opts.annotate_jit,
        include_addrs: opts.include_addrs,
        inline: !opts.no_inline,
        mark_inlined: opts.mark_inlined,
    }
}

fn report_missing(dsos: &Dsos, out: &mut Output) {
    use super::binary::Missing;
    for (name, why) in &dsos.missing {
        let (kind, msg) = match why {
            Missing::NotFound => (
                "binary not found",
                match dsos.root() {
                    Some(root) => {
                        format!(
                            "{name} is not on this machine (under {}): its frames are [unknown]",
                            root.display()
                        )
                    }
                    None => format!(
                        "{name} is not read (host lookups are off and no symfs was given): its frames are [unknown]"
                    ),
                },
            ),
            Missing::BuildIdMismatch => (
                "build-id mismatch",
                format!(
                    "{name} on this machine is not the recorded binary (build-id differs): its frames are [unknown]"
                ),
            ),
            Missing::Unreadable(e) => ("unreadable binary", format!("{e}: its frames are [unknown]")),
        };
        out.diag.note(kind, 0, || msg);
    }
}

/// The event to keep: `--event-filter` by name (the full name, else the name without
/// modifiers and PMU), else the event of the first sample.
fn first_event(opts: &Options, events: &[Event], first: usize) -> usize {
    match &opts.event_filter {
        Some(want) => events
            .iter()
            .position(|e| &e.name == want)
            .or_else(|| events.iter().position(|e| event_key(&e.name) == event_key(want)))
            .unwrap_or(usize::MAX),
        None => first,
    }
}

/// An event name without its PMU and modifiers, as events are compared: `cycles:ppp`,
/// `cpu_core/cycles:ppp/` and `cpu_atom/cycles/` are all `cycles`; tracepoints
/// (`kmem:kmalloc`) keep their whole name.
fn event_key(name: &str) -> &str {
    // `pmu/event/` or `pmu/event/modifiers`.
    let name = match name.split_once('/') {
        Some((_, rest)) => match rest.rsplit_once('/') {
            Some((inner, mods)) if mods.chars().all(|c| c.is_ascii_alphabetic()) => inner,
            _ => name,
        },
        None => name,
    };
    match name.rsplit_once(':') {
        Some((base, mods)) if !mods.is_empty() && mods.bytes().all(|b| b"ukhHGpPSDIWe".contains(&b)) => base,
        _ => name,
    }
}

/// A sample body without its read values.
struct Stripped {
    body: Vec<u8>,
    info: RecordParseInfo,
    /// The (value, id) pairs read (id `None` without `PERF_FORMAT_ID`).
    values: Vec<(u64, Option<u64>)>,
}

/// A sample body without its read values (`PERF_SAMPLE_READ`), the parse info of such
/// bodies and the values; `None` when the body is too short for them.
/// `lost`: the read format has `PERF_FORMAT_LOST`.
fn strip_read(rec: &RawEventRecord<'_>, lost: bool) -> Option<Stripped> {
    use linux_perf_data::linux_perf_event_reader::ReadFormat;
    let info = rec.parse_info;
    let body = rec.data.as_slice();
    let before = [
        SampleFormatBits::IDENTIFIER,
        SampleFormatBits::IP,
        SampleFormatBits::TID,
        SampleFormatBits::TIME,
        SampleFormatBits::ADDR,
        SampleFormatBits::ID,
        SampleFormatBits::STREAM_ID,
        SampleFormatBits::CPU,
        SampleFormatBits::PERIOD,
    ];
    let start = 8 * before.iter().filter(|&&f| info.sample_format.contains(f)).count();
    let rf = info.read_format;
    let flag = |f: ReadFormat| if rf.contains(f) { 8usize } else { 0 };
    let times = flag(ReadFormat::TOTAL_TIME_ENABLED) + flag(ReadFormat::TOTAL_TIME_RUNNING);
    let per_value = 8 + flag(ReadFormat::ID) + if lost { 8 } else { 0 };
    let len = if rf.contains(ReadFormat::GROUP) {
        // { nr, time_enabled, time_running, { value, id, lost } x nr }
        let nr: [u8; 8] = body.get(start..start + 8)?.try_into().ok()?;
        let nr = match info.endian {
            Endianness::LittleEndian => u64::from_le_bytes(nr),
            Endianness::BigEndian => u64::from_be_bytes(nr),
        };
        usize::try_from(nr).ok()?.checked_mul(per_value)?.checked_add(8 + times)?
    } else {
        // { value, time_enabled, time_running, id, lost }
        times + per_value
    };
    let end = start.checked_add(len)?;
    if end > body.len() {
        return None;
    }
    let word = |at: usize| -> u64 {
        let b: [u8; 8] = body[at..at + 8].try_into().unwrap_or_default();
        match info.endian {
            Endianness::LittleEndian => u64::from_le_bytes(b),
            Endianness::BigEndian => u64::from_be_bytes(b),
        }
    };
    let has_id = rf.contains(ReadFormat::ID);
    let (first, n) = if rf.contains(ReadFormat::GROUP) {
        (start + 8 + times, (len - 8 - times) / per_value)
    } else {
        (start, 1)
    };
    let values = (0..n)
        .map(|i| {
            let at = first + i * per_value;
            // In a single value the times sit between the value and the id.
            let id_at = if rf.contains(ReadFormat::GROUP) { at + 8 } else { at + 8 + times };
            (word(at), has_id.then(|| word(id_at)))
        })
        .collect();
    let mut out = Vec::with_capacity(body.len() - len);
    out.extend_from_slice(&body[..start]);
    out.extend_from_slice(&body[end..]);
    let mut info = info;
    info.sample_format.remove(SampleFormatBits::READ);
    Some(Stripped { body: out, info, values })
}

/// The context a sample was taken in (the record's cpumode) as a frame's mode.
fn sample_mode(mode: CpuMode) -> Mode {
    match mode {
        CpuMode::Kernel => Mode::Kernel,
        CpuMode::User => Mode::User,
        _ => Mode::Other,
    }
}

const SAMPLE: u32 = 9;
const MMAP2: u32 = 10;
const KSYMBOL: u32 = 17;
/// `PERF_RECORD_LOST_SAMPLES`.
const LOST_SAMPLES: u32 = 13;
/// `PERF_RECORD_MISC_MMAP_BUILD_ID`: the MMAP2 record holds a build id, not an inode.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// The length byte of an MMAP2 record's build id when it is over 20: linux-perf-event-reader
/// 0.10 asserts that it is not, so such a record must not reach its parser.
fn mmap2_build_id_too_long(rec: &RawEventRecord<'_>) -> Option<u8> {
    if rec.record_type.0 != MMAP2 || rec.misc & MISC_MMAP_BUILD_ID == 0 {
        return None;
    }
    // pid, tid, address, length, page offset, then the build id's length.
    let mut data = rec.data;
    data.skip(4 + 4 + 8 + 8 + 8).ok()?;
    data.read_u8().ok().filter(|&len| len > 20)
}
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
const PERF_CONTEXT_HV: u64 = -32i64 as u64;
const PERF_CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
const PERF_CONTEXT_GUEST: u64 = -2048i64 as u64;
const PERF_CONTEXT_GUEST_USER: u64 = -2560i64 as u64;
/// perf script's default `--max-stack`.
const MAX_STACK: usize = 127;

#[cfg(test)]
mod tests {
    use super::event_key;

    #[test]
    fn event_keys_drop_pmus_and_modifiers() {
        for name in ["cycles", "cycles:ppp", "cpu_core/cycles:ppp/", "cpu_atom/cycles/", "cpu_atom/cycles/u"]
        {
            assert_eq!(event_key(name), "cycles", "{name}");
        }
        assert_eq!(event_key("kmem:kmalloc"), "kmem:kmalloc");
        assert_eq!(event_key("cpu-clock:pppH"), "cpu-clock");
        assert_eq!(
            event_key("MEM_TRANS_RETIRED.LOAD_LATENCY:ldlat=64:precise=2:mh:mg:pinned:"),
            "MEM_TRANS_RETIRED.LOAD_LATENCY:ldlat=64:precise=2:mh:mg:pinned:"
        );
    }
}
