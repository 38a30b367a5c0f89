//! `--call-graph dwarf` while recording: each sample carries the user registers and a copy
//! of the top of the user stack, and the user frames are found here, in-process, with the
//! unwind tables of the binaries the process maps ([`crate::unwind`]), instead of by the
//! kernel's walk of frame pointers (which binaries built without them break).
//!
//! - The tables of a binary are read once (by file identity: device, inode, size and
//!   modification time, so a binary replaced on disk is read again), from the file the
//!   process maps (`/proc/PID/map_files`, else the path inside the process's root), and kept
//!   within a budget of bytes, least recently used dropped first. A `[vdso]` is read from
//!   the process's memory. A binary with neither `.eh_frame` nor `.debug_frame` gets the
//!   `.debug_frame` of its separate debug file (`/usr/lib/debug/.build-id/`).
//! - Each process gets an unwinder of its mappings, built again when it maps something new
//!   or executes another program, forgotten when it was not sampled for a window.
//! - A stack that cannot be followed to its outermost frame ends with a marker frame (never
//!   with addresses the walk could not vouch for): [`COPY_ENDED`] when the walk needed more
//!   of the stack than was copied, [`CANNOT_UNWIND`] when no rule applied or a caller's
//!   address lies outside every executable mapping of the process. Both are counted.
//! - Code without tables (JIT compilers' anonymous memory) is walked by its frame pointers,
//!   as before, and named through the compiler's `/tmp/perf-PID.map`.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use super::parse::{Sample, UserStack};
use super::sym::Mapping;
use super::tasks::{ProcMaps, Tasks};
use crate::unwind::{self, Cache, End, Section, Tables, Unwinder};

/// `PERF_CONTEXT_USER`: the user part of a callchain follows.
const CONTEXT_USER: u64 = -512i64 as u64;

/// Marker values in a callchain, inside the range of `PERF_CONTEXT_*` values that the kernel
/// does not use (-4095..-1): a user stack ended here, and why.
/// The walk needed words past the end of the stack copy.
pub(crate) const COPY_ENDED: u64 = -3000i64 as u64;
/// No unwind rule applied, or a caller's address was outside the process's executable
/// mappings.
pub(crate) const CANNOT_UNWIND: u64 = -3001i64 as u64;

/// The frame names of the markers.
pub(crate) const COPY_ENDED_FRAME: &[u8] = b"[stack copy ended]";
pub(crate) const CANNOT_UNWIND_FRAME: &[u8] = b"[cannot unwind]";

/// `PERF_SAMPLE_REGS_ABI_64`.
const ABI_64: u64 = 2;

/// User frames walked at most (the kernel's default `perf_event_max_stack` is 127, for kernel
/// and user frames together).
const MAX_FRAMES: usize = 256;

/// Where the binaries of a process come from.
pub(crate) trait Images: Send {
    /// The image of mapping `m` of process `pid`: a file (or a `[vdso]`) as that process
    /// maps it.
    fn open(&self, pid: u32, m: &Mapping) -> Option<Image>;
    /// The `.debug_frame` of the separate debug file of the binary with `build_id`.
    fn debug_frame(&self, build_id: &[u8]) -> Option<Section>;
}

/// An opened binary, and what identifies it.
pub(crate) struct Image {
    key: ImageKey,
    data: ImageData,
}

enum ImageData {
    File(std::fs::File),
    Bytes(Vec<u8>),
}

/// The identity of a binary: device, inode, size, modification time (a vDSO: none, its
/// length and a hash of its bytes).
type ImageKey = (u64, u64, u64, i64, i64);

impl Image {
    /// An opened file, identified by what `fstat` says of it.
    pub(crate) fn file(file: std::fs::File) -> Option<Image> {
        let m = file.metadata().ok()?;
        if !m.is_file() {
            return None;
        }
        Some(Image {
            key: (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()),
            data: ImageData::File(file),
        })
    }

    /// An image read from memory.
    pub(crate) fn bytes(data: Vec<u8>) -> Image {
        use std::hash::Hasher;
        let mut h = FxHasher::default();
        h.write(&data);
        Image { key: (u64::MAX, h.finish(), data.len() as u64, 0, 0), data: ImageData::Bytes(data) }
    }

    fn tables(self, images: &dyn Images) -> Option<Tables> {
        let debug = |id: &[u8]| images.debug_frame(id);
        match self.data {
            ImageData::File(f) => Tables::read(&object::ReadCache::new(f), debug),
            ImageData::Bytes(b) => Tables::read(&b[..], debug),
        }
    }
}

/// The binaries of the running system, as each process sees them.
pub(crate) struct LiveImages;

impl Images for LiveImages {
    fn open(&self, pid: u32, m: &Mapping) -> Option<Image> {
        if m.object == b"[vdso]" {
            return read_memory(pid, m.start, m.end).map(Image::bytes);
        }
        let path = Path::new(std::ffi::OsStr::from_bytes(&m.object));
        let rel = path.strip_prefix("/").ok()?;
        let places = [
            PathBuf::from(format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end)),
            Path::new("/proc").join(pid.to_string()).join("root").join(rel),
            path.to_path_buf(),
        ];
        places.iter().find_map(|p| std::fs::File::open(p).ok().and_then(Image::file))
    }

    fn debug_frame(&self, build_id: &[u8]) -> Option<Section> {
        debug_frame_under(Path::new("/usr/lib/debug/.build-id"), build_id)
    }
}

/// The `.debug_frame` of `DIR/xx/rest.debug` for build id `xxrest` (hex).
pub(crate) fn debug_frame_under(dir: &Path, build_id: &[u8]) -> Option<Section> {
    let (first, rest) = build_id.split_first()?;
    let hex: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    let file = std::fs::File::open(dir.join(format!("{first:02x}")).join(format!("{hex}.debug"))).ok()?;
    Tables::debug_frame(&object::ReadCache::new(file))
}

/// Bytes `start..end` of process `pid`'s memory (a `[vdso]`: a page or two).
fn read_memory(pid: u32, start: u64, end: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(end.checked_sub(start)?).ok().filter(|&l| l > 0 && l <= 1 << 20)?;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0; len];
    mem.read_exact_at(&mut buf, start).ok()?;
    Some(buf)
}

/// What the user stacks of a recording came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnwindStats {
    /// Samples whose user stack was unwound from its copy.
    pub samples: u64,
    /// ... of which ended with `[stack copy ended]`.
    pub copy_ended: u64,
    /// ... of which ended with `[cannot unwind]`.
    pub cannot_unwind: u64,
    /// Binaries whose unwind tables were read.
    pub tables_read: u64,
    /// Binaries without any unwind table (their code is walked by frame pointers).
    pub without_tables: u64,
    /// Binaries whose tables did not parse whole (their frames end stacks with
    /// `[cannot unwind]`).
    pub damaged_tables: u64,
    /// Tables dropped to stay within the budget.
    pub tables_dropped: u64,
    /// Bytes of unwind tables held now.
    pub table_bytes: u64,
}

struct Entry {
    /// The tables, and whether they parse whole ([`Tables::sound`], asked once).
    tables: Option<(Arc<Tables>, bool)>,
    used: u64,
}

/// The unwinder of one process generation, and the binaries it uses.
struct Space {
    generation: u32,
    version: u32,
    unwinder: Unwinder,
    keys: Vec<ImageKey>,
    /// Mappings of binaries whose tables did not parse whole: not unwound through.
    unsound: Vec<std::ops::Range<u64>>,
    window: u64,
}

/// Unwinds the user stacks of `--call-graph dwarf` samples (see the module documentation).
pub(crate) struct UserUnwinder {
    images: Box<dyn Images>,
    tables: FxHashMap<ImageKey, Entry>,
    bytes: usize,
    budget: usize,
    spaces: FxHashMap<u32, Space>,
    cache: Box<Cache>,
    tick: u64,
    window: u64,
    /// The size of the stack copies asked for (for notes).
    copy_bytes: u32,
    stats: UnwindStats,
}

impl UserUnwinder {
    /// Bytes of unwind tables kept by default: a C library's take 100-200 KiB, the largest
    /// libraries (a toolchain's) several MiB: `librustc_driver` maps 7 MiB of `.eh_frame`
    /// and its index, and a machine building software runs a few such processes at once,
    /// whose tables would be read again and again in a smaller budget.
    pub(crate) const BUDGET: usize = 64 << 20;

    /// An unwinder reading binaries from `images`, keeping at most `budget` bytes of tables
    /// (the tables of the process being unwound are kept while used, even past it), for
    /// copies of `copy_bytes`.
    pub(crate) fn new(images: Box<dyn Images>, budget: usize, copy_bytes: u32) -> UserUnwinder {
        UserUnwinder {
            images,
            tables: FxHashMap::default(),
            bytes: 0,
            budget,
            spaces: FxHashMap::default(),
            cache: Box::new(Cache::new()),
            tick: 0,
            window: 0,
            copy_bytes,
            stats: UnwindStats::default(),
        }
    }

    /// Replaces the user part of `s`'s callchain by the frames unwound from its stack copy
    /// (a sample without one, or of a task not recorded, is left as it is).
    pub(crate) fn complete(&mut self, s: &mut Sample, tasks: &mut Tasks) {
        let Some(user) = s.user.take() else { return };
        if !tasks.wanted(s.pid, s.tid) {
            return;
        }
        let generation = tasks.generation(s.pid);
        let maps = tasks.maps_of(s.pid);
        s.chain.push(CONTEXT_USER);
        self.unwind(s.pid, generation, maps, &user, &mut s.chain);
    }

    /// Appends the frames of `user` (leaf first), and a marker if the walk stopped early, to
    /// `out`; `maps` are the executable mappings of generation `generation` of `pid`.
    pub(crate) fn unwind(
        &mut self,
        pid: u32,
        generation: u32,
        maps: &ProcMaps,
        user: &UserStack,
        out: &mut Vec<u64>,
    ) {
        self.stats.samples += 1;
        if user.abi != ABI_64 {
            // A 32-bit task: its registers are not the ones asked for.
            self.stats.cannot_unwind += 1;
            out.push(CANNOT_UNWIND);
            return;
        }
        self.ensure_space(pid, generation, maps);
        let Some(space) = self.spaces.get_mut(&pid) else { return };
        space.window = self.window;
        let (mut n, mut stray) = (0, false);
        let unsound = &space.unsound;
        let walked =
            unwind::walk(&space.unwinder, &mut self.cache, user.regs, &user.stack, MAX_FRAMES, |addr| {
                // The sampled address is where the task was; a caller must be in its code.
                if n > 0 && maps.find(addr).is_none() {
                    stray = true;
                    return false;
                }
                out.push(addr);
                n += 1;
                // In a binary whose tables are damaged, this frame's caller cannot be known.
                stray = unsound.iter().any(|r| r.contains(&addr));
                !stray
            });
        let marker = match (walked.outside, walked.end, stray) {
            (true, _, _) => Some(COPY_ENDED),
            (false, _, true) | (false, End::Failed, _) => Some(CANNOT_UNWIND),
            (false, End::Complete | End::NullReturn, false) => None,
        };
        match marker {
            Some(COPY_ENDED) => self.stats.copy_ended += 1,
            Some(_) => self.stats.cannot_unwind += 1,
            None => {}
        }
        out.extend(marker);
    }

    fn ensure_space(&mut self, pid: u32, generation: u32, maps: &ProcMaps) {
        let version = maps.version();
        if self.spaces.get(&pid).is_some_and(|s| s.generation == generation && s.version == version) {
            return;
        }
        let mut unwinder = Unwinder::new();
        let (mut keys, mut unsound) = (Vec::new(), Vec::new());
        for m in maps.mappings() {
            let file = m.object.starts_with(b"/") && !crate::symbols::is_anonymous(&m.object);
            if !(file || m.object == b"[vdso]") {
                continue; // anonymous memory (JIT code): frame pointers
            }
            let Some(image) = self.images.open(pid, m) else { continue };
            let key = image.key;
            let Some((tables, sound)) = self.tables_of(image) else { continue };
            keys.push(key);
            if !sound {
                unsound.push(m.start..m.end);
                continue;
            }
            let name = String::from_utf8_lossy(crate::symbols::mapped_file_name(&m.object)).into_owned();
            if let Some(module) = tables.module(name, m.start, m.end, m.pgoff) {
                framehop::Unwinder::add_module(&mut unwinder, module);
            }
        }
        // Past the budget, what other processes use goes first: the tables of this one are
        // all needed for its next sample, and dropping one of them to read the next would
        // read them all again at every sample of a process whose tables exceed the budget.
        self.shrink(&keys);
        self.spaces.insert(pid, Space { generation, version, unwinder, keys, unsound, window: self.window });
    }

    fn tables_of(&mut self, image: Image) -> Option<(Arc<Tables>, bool)> {
        self.tick += 1;
        let key = image.key;
        if let Some(e) = self.tables.get_mut(&key) {
            e.used = self.tick;
            return e.tables.clone();
        }
        let tables = image.tables(&*self.images).map(|t| {
            let sound = t.sound();
            (Arc::new(t), sound)
        });
        match &tables {
            Some((t, sound)) => {
                self.stats.tables_read += 1;
                self.stats.damaged_tables += u64::from(!sound);
                self.bytes += t.bytes();
            }
            None => self.stats.without_tables += 1,
        }
        self.tables.insert(key, Entry { tables: tables.clone(), used: self.tick });
        tables
    }

    /// Drops the least recently used tables (all but `keep`) while over the budget, and the
    /// unwinders that use them.
    fn shrink(&mut self, keep: &[ImageKey]) {
        while self.bytes > self.budget {
            let oldest = self
                .tables
                .iter()
                .filter(|(k, e)| !keep.contains(k) && e.tables.is_some())
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| *k);
            let Some(k) = oldest else { break };
            if let Some(e) = self.tables.remove(&k) {
                self.bytes -= e.tables.map_or(0, |(t, _)| t.bytes());
                self.stats.tables_dropped += 1;
            }
            self.spaces.retain(|_, s| !s.keys.contains(&k));
        }
    }

    /// Ends a window: forgets the unwinders of processes not sampled in it.
    pub(crate) fn next_window(&mut self) {
        let window = self.window;
        self.spaces.retain(|_, s| s.window >= window);
        self.window += 1;
    }

    /// What the user stacks came to so far.
    pub(crate) fn stats(&self) -> UnwindStats {
        UnwindStats { table_bytes: self.bytes as u64, ..self.stats }
    }

    /// Remarks on the user stacks, for the user.
    pub(crate) fn notes(&self) -> Vec<String> {
        let s = &self.stats;
        let mut notes = Vec::new();
        if s.samples == 0 {
            return notes;
        }
        let pct = |n: u64| 100.0 * n as f64 / s.samples as f64;
        notes.push(format!(
            "user stacks of {} samples were unwound from {}-byte stack copies (--call-graph dwarf)",
            s.samples, self.copy_bytes
        ));
        if s.copy_ended > 0 {
            notes.push(format!(
                "{} user stacks ({:.1}%) were deeper than the stack copy and end with {}: \
                 a larger copy (--call-graph dwarf,SIZE) reaches further",
                s.copy_ended,
                pct(s.copy_ended),
                String::from_utf8_lossy(COPY_ENDED_FRAME)
            ));
        }
        if s.cannot_unwind > 0 {
            notes.push(format!(
                "{} user stacks ({:.1}%) end with {}: no unwind rule applied, or a caller's \
                 address was outside the process's code",
                s.cannot_unwind,
                pct(s.cannot_unwind),
                String::from_utf8_lossy(CANNOT_UNWIND_FRAME)
            ));
        }
        if s.damaged_tables > 0 {
            notes.push(format!(
                "{} binaries have damaged unwind tables: stacks end with {} at their frames",
                s.damaged_tables,
                String::from_utf8_lossy(CANNOT_UNWIND_FRAME)
            ));
        }
        if s.tables_dropped > 0 {
            notes.push(format!(
                "{} unwind tables were dropped to keep within {} MiB and read again when needed",
                s.tables_dropped,
                self.budget >> 20
            ));
        }
        notes
    }
}

/// One image for every mapping (fuzzing).
struct OneImage(Vec<u8>);

impl Images for OneImage {
    fn open(&self, _pid: u32, _m: &Mapping) -> Option<Image> {
        Some(Image::bytes(self.0.clone()))
    }
    fn debug_frame(&self, _build_id: &[u8]) -> Option<Section> {
        None
    }
}

/// Where the fuzzed image is mapped.
const FUZZ_BASE: u64 = 0x40_0000;

/// Fuzzing input: a flags byte (bit 0 raw data, bit 1 cgroup ids, bit 2 user registers and
/// stack copies), the length of an ELF image (u32, little-endian), the image, then ring
/// buffer records. The records are decoded, and the user stacks of the samples unwound with
/// the image mapped whole at 0x400000: never a panic, and every frame after the first is a
/// marker or inside the mapping.
pub(crate) fn fuzz_ring(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else { return };
    let Some(len) = rest.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize) else {
        return;
    };
    let rest = &rest[4..];
    let (image, ring) = rest.split_at(len.min(rest.len()));
    let user = flags & 4 != 0;
    let layout = super::parse::Layout {
        raw: flags & 1 != 0,
        cgroup: flags & 2 != 0,
        user_regs: if user { unwind::USER_REGS_MASK } else { 0 },
        user_stack: user,
    };
    let (mut records, mut bad) = (Vec::new(), 0);
    super::parse::records(ring, layout, &mut records, &mut bad);
    let end = FUZZ_BASE + (image.len() as u64).next_multiple_of(4096).max(4096);
    let maps = ProcMaps::of([Mapping { start: FUZZ_BASE, end, pgoff: 0, object: b"/fuzz".to_vec() }]);
    let mut u = UserUnwinder::new(Box::new(OneImage(image.to_vec())), UserUnwinder::BUDGET, 8192);
    for r in records {
        let super::parse::Record::Sample(s) = r else { continue };
        let Some(user) = &s.user else { continue };
        let mut chain = Vec::new();
        u.unwind(s.pid, 0, &maps, user, &mut chain);
        for &a in chain.iter().skip(1) {
            assert!(a == COPY_ENDED || a == CANNOT_UNWIND || maps.find(a).is_some(), "{chain:x?}");
        }
    }
}

/// The fuzzing seed made of the fixture (`tests/data/unwind`): its binary, and its samples
/// as kflame's ring buffer holds them.
#[cfg(test)]
pub(crate) fn fuzz_seed(image: &[u8], pid: u32, stacks: &[UserStack]) -> Vec<u8> {
    let mut seed = vec![4u8];
    seed.extend_from_slice(&(image.len() as u32).to_le_bytes());
    seed.extend_from_slice(image);
    for (i, u) in stacks.iter().enumerate() {
        let mut r = Vec::new();
        for w in [
            u.regs.ip,
            u64::from(pid) | u64::from(pid) << 32,
            i as u64,
            0,
            1,
            0,
            u.abi,
            u.regs.bp,
            u.regs.sp,
            u.regs.ip,
        ] {
            r.extend_from_slice(&w.to_le_bytes());
        }
        r.extend_from_slice(&(u.stack.len() as u64).to_le_bytes());
        r.extend_from_slice(&u.stack);
        r.extend_from_slice(&(u.stack.len() as u64).to_le_bytes());
        let mut rec = 9u32.to_le_bytes().to_vec();
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&((r.len() + 8) as u16).to_le_bytes());
        rec.extend(r);
        seed.extend(rec);
    }
    seed
}

#[cfg(test)]
mod tests {
    //! Stack copies and registers recorded by `perf record --call-graph dwarf` of a program
    //! built without frame pointers (`tests/data/unwind`, see its README), unwound here with
    //! the fixture's binaries only, and compared with perf's own unwinding of the same samples.

    use std::path::{Path, PathBuf};

    use linux_perf_data::linux_perf_event_reader::EventRecord;
    use linux_perf_data::{PerfFileReader, PerfFileRecord};
    use object::{Object, ObjectSection, ObjectSymbol};

    use super::*;
    use crate::symbols::mapped_file_name;

    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/unwind")
    }

    /// The fixture's binaries in place of the recorded ones (by file name, through
    /// `rename`), separate debug files under its `.build-id/`, or an image given whole.
    struct FixtureImages {
        rename: Vec<(&'static str, &'static str)>,
        whole: Option<Vec<u8>>,
    }

    impl Images for FixtureImages {
        fn open(&self, _pid: u32, m: &Mapping) -> Option<Image> {
            let name = String::from_utf8_lossy(mapped_file_name(&m.object)).into_owned();
            if let Some(bytes) = &self.whole {
                return (name == "kfbar").then(|| Image::bytes(bytes.clone()));
            }
            let name = self.rename.iter().find(|(from, _)| *from == name).map_or(name.as_str(), |(_, to)| to);
            std::fs::File::open(dir().join(name)).ok().and_then(Image::file)
        }

        fn debug_frame(&self, build_id: &[u8]) -> Option<Section> {
            debug_frame_under(&dir().join(".build-id"), build_id)
        }
    }

    struct Recorded {
        pid: u32,
        maps: ProcMaps,
        stacks: Vec<UserStack>,
    }

    /// The executable mappings and the user states of the samples of `kfbar.data`.
    fn recorded() -> Recorded {
        let data = std::fs::read(dir().join("kfbar.data")).unwrap();
        let PerfFileReader { mut perf_file, mut record_iter } =
            PerfFileReader::parse_file(std::io::Cursor::new(&data[..])).unwrap();
        let (mut maps, mut stacks, mut pid) = (Vec::new(), Vec::new(), 0);
        while let Some(rec) = record_iter.next_record(&mut perf_file).unwrap() {
            let PerfFileRecord::EventRecord { record, .. } = rec else { continue };
            match record.parse().unwrap() {
                EventRecord::Mmap2(m) if m.protection & 4 != 0 => maps.push(Mapping {
                    start: m.address,
                    end: m.address + m.length,
                    pgoff: m.page_offset,
                    object: m.path.as_slice().to_vec(),
                }),
                EventRecord::Sample(s) => {
                    let (Some(regs), Some((stack, dyn_size))) = (&s.user_regs, &s.user_stack) else {
                        continue;
                    };
                    let reg = |r: u32| regs.get(u64::from(r)).unwrap();
                    let regs = crate::unwind::Regs {
                        ip: reg(crate::unwind::REG_IP),
                        sp: reg(crate::unwind::REG_SP),
                        bp: reg(crate::unwind::REG_BP),
                    };
                    let stack = stack.as_slice();
                    let stack = stack[..(*dyn_size as usize).min(stack.len())].to_vec();
                    pid = s.pid.unwrap() as u32;
                    stacks.push(UserStack { abi: ABI_64, regs, stack });
                }
                _ => {}
            }
        }
        Recorded { pid, maps: ProcMaps::of(maps), stacks }
    }

    /// perf script's frames of each sample, leaf first.
    fn perf_stacks() -> Vec<Vec<String>> {
        let text = std::fs::read_to_string(dir().join("kfbar.script.txt")).unwrap();
        text.split("\n\n")
            .filter(|b| !b.trim().is_empty())
            .map(|b| {
                b.lines().skip(1).filter_map(|l| l.split_whitespace().nth(1)).map(String::from).collect()
            })
            .collect()
    }

    /// Names addresses by the symbols of the fixture binary (static, not relocated).
    fn namer() -> impl Fn(u64) -> String {
        let bytes = std::fs::read(dir().join("kfbar")).unwrap();
        let obj = object::File::parse(&bytes[..]).unwrap();
        let mut syms: Vec<(u64, u64, String)> = obj
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text)
            .map(|s| (s.address(), s.size(), s.name().unwrap().to_string()))
            .collect();
        syms.sort();
        move |addr| match addr {
            COPY_ENDED => String::from_utf8_lossy(COPY_ENDED_FRAME).into_owned(),
            CANNOT_UNWIND => String::from_utf8_lossy(CANNOT_UNWIND_FRAME).into_owned(),
            _ => syms
                .iter()
                .find(|(a, size, _)| (*a..a + size).contains(&addr))
                .map_or("[unknown]".into(), |(_, _, n)| n.clone()),
        }
    }

    fn unwind_all(images: FixtureImages, rec: &Recorded, cut: Option<usize>) -> (Vec<Vec<u64>>, UnwindStats) {
        let mut u = UserUnwinder::new(Box::new(images), UserUnwinder::BUDGET, 1024);
        let stacks = rec
            .stacks
            .iter()
            .map(|s| {
                let mut s = s.clone();
                if let Some(n) = cut {
                    s.stack.truncate(n);
                }
                let mut out = Vec::new();
                u.unwind(rec.pid, 0, &rec.maps, &s, &mut out);
                out
            })
            .collect();
        (stacks, u.stats())
    }

    /// The functions of `kfbar.c`.
    const KFBAR_FUNCTIONS: [&str; 5] = ["kfbar_inner", "kfbar_outer", "main", "_start", "seconds_now"];

    fn plain() -> FixtureImages {
        FixtureImages { rename: vec![], whole: None }
    }

    /// Every sample unwinds to the frames perf found for it, the full chain from `_start`
    /// in every sample of the hot function.
    #[test]
    fn fixture_stacks_are_perfs_stacks() {
        let rec = recorded();
        let name = namer();
        let (ours, stats) = unwind_all(plain(), &rec, None);
        let theirs = perf_stacks();
        assert!(ours.len() > 100, "{} samples", ours.len());
        assert_eq!(ours.len(), theirs.len());
        for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            let o: Vec<String> = o.iter().map(|&a| name(a)).collect();
            // perf's chain starts with the kernel's frames (a sample in a system call).
            let user = t.iter().skip_while(|f| !KFBAR_FUNCTIONS.contains(&f.as_str())).cloned();
            assert_eq!(o, user.collect::<Vec<_>>(), "sample {i}");
        }
        let hot: Vec<&Vec<u64>> = ours.iter().filter(|s| name(s[0]) == "kfbar_inner").collect();
        let full = hot
            .iter()
            .filter(|s| {
                s.iter().map(|&a| name(a)).collect::<Vec<_>>()
                    == ["kfbar_inner", "kfbar_outer", "main", "_start"]
            })
            .count();
        assert!(hot.len() > 100 && full == hot.len(), "{full} of {} samples have the whole chain", hot.len());
        assert_eq!(
            (stats.samples, stats.copy_ended, stats.cannot_unwind, stats.tables_read),
            (ours.len() as u64, 0, 0, 1)
        );
    }

    /// The same code with its unwind tables only in a separate debug file (`.debug_frame`,
    /// found by build id) unwinds to the same frames.
    #[test]
    fn tables_from_a_separate_debug_file() {
        let rec = recorded();
        let split = FixtureImages { rename: vec![("kfbar", "kfbar-split")], whole: None };
        let bytes = std::fs::read(dir().join("kfbar-split")).unwrap();
        let obj = object::File::parse(&bytes[..]).unwrap();
        assert!(obj.section_by_name(".eh_frame").is_none() && obj.section_by_name(".debug_frame").is_none());
        assert_eq!(unwind_all(split, &rec, None).0, unwind_all(plain(), &rec, None).0);
    }

    /// A copy cut short gives the frames it holds, then `[stack copy ended]`, counted.
    #[test]
    fn truncated_copies_end_with_a_marker() {
        let rec = recorded();
        let (full, _) = unwind_all(plain(), &rec, None);
        let longest = rec.stacks.iter().map(|s| s.stack.len()).max().unwrap();
        for cut in (0..=longest).step_by(8).chain([3, 13]) {
            let (short, stats) = unwind_all(plain(), &rec, Some(cut));
            let mut ended = 0;
            for (s, f) in short.iter().zip(&full) {
                if s == f {
                    continue;
                }
                ended += 1;
                let (last, frames) = s.split_last().unwrap();
                assert_eq!(*last, COPY_ENDED, "cut at {cut}: {s:x?} for {f:x?}");
                assert!(!frames.is_empty() && f.starts_with(frames), "cut at {cut}: {s:x?} for {f:x?}");
            }
            assert_eq!(stats.copy_ended, ended, "cut at {cut}");
            if cut < 8 {
                assert_eq!(ended, rec.stacks.len() as u64, "cut at {cut}");
            }
        }
    }

    /// Damaged tables never give a chain the tables could not vouch for: the frame in the
    /// damaged binary ends the stack with `[cannot unwind]`; random damage never panics, and
    /// every frame it leaves is inside the process's code.
    #[test]
    fn damaged_tables_end_with_a_marker() {
        let rec = recorded();
        let bytes = std::fs::read(dir().join("kfbar")).unwrap();
        let obj = object::File::parse(&bytes[..]).unwrap();
        let (off, size) = obj.section_by_name(".eh_frame").unwrap().file_range().unwrap();
        let (off, size) = (off as usize, size as usize);
        let mut zeroed = bytes.clone();
        zeroed[off..off + size].fill(0);
        let (stacks, stats) = unwind_all(FixtureImages { rename: vec![], whole: Some(zeroed) }, &rec, None);
        assert_eq!(stats.damaged_tables, 1);
        for (s, u) in stacks.iter().zip(&rec.stacks) {
            assert_eq!(s, &[u.regs.ip, CANNOT_UNWIND]);
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300 {
            let mut damaged = bytes.clone();
            for _ in 0..1 + x % 4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                damaged[off + (x as usize) % size] = (x >> 32) as u8;
            }
            let (stacks, _) = unwind_all(FixtureImages { rename: vec![], whole: Some(damaged) }, &rec, None);
            for s in stacks {
                for &a in &s[1..] {
                    assert!(a == COPY_ENDED || a == CANNOT_UNWIND || rec.maps.find(a).is_some(), "{s:x?}");
                }
            }
        }
    }

    /// The fuzzing seed is this fixture (`KFLAME_WRITE_SEEDS=1` writes it again), and the
    /// fuzz target unwinds its samples to the same frames.
    #[test]
    fn fuzz_seed_is_the_fixture() {
        let rec = recorded();
        let image = std::fs::read(dir().join("kfbar")).unwrap();
        let seed = fuzz_seed(&image, rec.pid, &rec.stacks[..40]);
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/record_unwind/kfbar");
        if std::env::var_os("KFLAME_WRITE_SEEDS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &seed).unwrap();
        }
        assert!(std::fs::read(&path).unwrap() == seed, "{} is not the fixture's seed", path.display());
        fuzz_ring(&seed);
    }

    /// The tables of a binary are read once, however many processes map it, and dropped
    /// (with the unwinders using them) past the budget.
    #[test]
    fn tables_are_cached_within_the_budget() {
        let rec = recorded();
        let mut u = UserUnwinder::new(Box::new(plain()), UserUnwinder::BUDGET, 1024);
        let mut out = Vec::new();
        for pid in [1, 2, 1] {
            u.unwind(pid, 0, &rec.maps, &rec.stacks[0], &mut out);
        }
        let s = u.stats();
        assert_eq!((s.tables_read, s.table_bytes > 0), (1, true), "{s:?}");
        let mut small = UserUnwinder::new(Box::new(plain()), 16, 1024);
        small.unwind(1, 0, &rec.maps, &rec.stacks[0], &mut out);
        // One table larger than the budget is kept while it is the one used.
        assert_eq!(small.stats().tables_dropped, 0);
    }
}
