//! perf.data read directly into folded stacks, with in-process symbolization and DWARF
//! unwinding: the output of `perf script | stackcollapse-perf.pl` without running perf.
//!
//! ```text
//! perf.data ─▶ linux-perf-data records (time order) ─▶ Machine (threads, maps, kernel)
//!           ─▶ per sample: call chain (+ DWARF-unwound user stack) ─▶ frames resolved
//!              through symbols::{Kallsyms, ElfSymbols} ─▶ naming (stackcollapse rules)
//!           ─▶ fold::Stacks
//! ```
//!
//! With [`Options::pairing`] (`--mode syscalls|offcpu|probes`) the samples of paired
//! tracepoints are not counted but paired into durations, as the perf script text front end
//! pairs them (`pairs/`).
//!
//! Frames are named from the same `SYMBOL+0xOFF (DSO)` text perf prints, so options and
//! quirks match the perf script collapser. Kernel symbols come from `--kallsyms`, the build-id
//! cache (`~/.debug/[kernel.kallsyms]/ID/kallsyms`) or `/proc/kallsyms` when the recording
//! kernel is the running one; a kallsyms file of another boot is relocated through the
//! recorded `_text` address (KASLR). User symbols come from the recorded binaries (checked
//! by build-id), their `/usr/lib/debug/.build-id` files, or `.dynsym`. Frames unwound from
//! `--call-graph dwarf` samples get the DWARF inline chain of their binary, as perf asks
//! addr2line for it (`inline.rs`; `--no-inline` as in perf script). JIT code is named from
//! the `/tmp/perf-PID.map` its JIT wrote (or `--perf-map-dir`), the vDSO from perf's
//! build-id cache or the running kernel's own image, whose unwind tables also serve DWARF
//! unwinding (`special.rs`). With [`Host::Isolated`] none of the running machine is read
//! (no `/proc/kallsyms`, own vDSO, `~/.debug`, `/tmp` maps or binaries outside `symfs`):
//! the output depends on the file and the options alone.
//!
//! Files of any perf are read: pipe mode (`perf record -o -`, also from stdin), zstd
//! compressed records (`-z`: PERF_RECORD_COMPRESSED and COMPRESSED2), AUXTRACE records
//! whose trace data is stepped over (Intel PT is not decoded: the sampled events are read
//! as `perf script --no-itrace` reads them), read values (`PERF_SAMPLE_READ`, with GROUP,
//! ID and LOST) delivered per group member as perf does, `-c N` events without a recorded
//! period (each sample weighs N), and old kernel maps (perf 3.x): a user-mode address
//! outside the user mappings is `[unknown]` whatever the kernel map covers. A sample
//! without a call chain folds to `comm;SYMBOL` or `comm;[dso]` of its sampled address.
//!
//! Known differences from `perf script` (6.1) followed by the perf script collapser (on the
//! 94 MB benchmark capture of a Rust and LLVM build, 99.975% of the weight lies on stacks
//! both name identically):
//! - inline chains come from the `addr2line` crate, not binutils' addr2line (whose
//!   symbol-table naming of C++/Rust functions without a DWARF linkage name is emulated):
//!   the same frames on gcc C and C++ with `-g` and glibc with libc6-dbg; where binutils
//!   picks another alias of a symbol, or nests overlapping DWARF ranges differently,
//!   names may differ; DWARF moved to a dwz supplementary file (`.gnu_debugaltlink`) or to
//!   split `.dwo` files is not followed, so such binaries show no inline frames (for dwz
//!   that is also what perf 6.1 shows: binutils 2.40's addr2line cannot read the
//!   supplementary file either; fixture `inline-dwz`);
//! - `--pid`/`--tid` use the sample's real pid; stackcollapse-perf writes `?` when
//!   `perf script` prints only a tid, and reads odd comms such as `:-1` together with the
//!   CPU and time that follow them;
//! - C++ names are demangled by cpp_demangle adjusted to libiberty's spelling (literals,
//!   thunks); a function type whose return type ends with template arguments is still
//!   written `B<int>(int)` where libiberty writes `B<int> (int)`;
//! - where identical code folding left several same-size symbols at one address, perf
//!   sometimes shows another of them.

mod binary;
mod dso;
mod frame_cache;
mod header;
mod inline;
mod kernel;
mod machine;
mod naming;
mod pairs;
mod prefetch;
mod reader;
mod records;
mod resolve;
mod sample;
mod special;
mod stacks;
mod tracing;
mod unwind;

use std::path::PathBuf;

pub use crate::collapse::is_perf_data;
pub use pairs::Pairing;
pub use reader::{collapse_bytes, collapse_file};

/// How a perf.data file is collapsed.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Root frame `comm-PID` instead of `comm`.
    pub include_pid: bool,
    /// Root frame `comm-PID/TID`.
    pub include_tid: bool,
    /// `_[k]` after kernel frames.
    pub annotate_kernel: bool,
    /// `_[j]` after JIT frames (`/tmp/perf-PID.map`).
    pub annotate_jit: bool,
    /// Unknown frames as `[dso <address>]`.
    pub include_addrs: bool,
    /// Only samples of this event (as perf script names it, e.g. `cpu-clock:pppH`); default:
    /// the event of the first sample.
    pub event_filter: Option<String>,
    /// Weight 1 per sample instead of the sample period (or, for kmem allocation
    /// tracepoints, the allocated bytes).
    pub counts: bool,
    /// Kernel symbols from this kallsyms file.
    pub kallsyms: Option<PathBuf>,
    /// Look binaries and debug files up under this directory instead of `/` (like perf's
    /// `--symfs`).
    pub symfs: Option<PathBuf>,
    /// Do not unwind `--call-graph dwarf` user stacks (keep only the kernel call chain and
    /// the sampled user address).
    pub no_unwind: bool,
    /// Do not show the DWARF inline frames of unwound user frames (perf script's
    /// `--no-inline`): frames are named from symbol tables only.
    pub no_inline: bool,
    /// `_[i]` after inline frames (the perf script collapser's `--inline`).
    pub mark_inlined: bool,
    /// Read the symbols of JIT code from `DIR/perf-PID.map` instead of `/tmp/perf-PID.map`
    /// (map files copied along with the recording).
    pub perf_map_dir: Option<PathBuf>,
    /// `--mode syscalls|offcpu|probes`: pair tracepoint samples into durations (ns) as the
    /// perf script text front end does, instead of counting samples.
    pub pairing: Option<Pairing>,
    /// What may be read of the machine running the reader besides the files named above.
    pub host: Host,
}

/// What the perf.data reader may look up on the machine it runs on, besides the files its
/// options name (`kallsyms`, `symfs`, `perf_map_dir`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Host {
    /// As perf does when it reports on the machine that recorded: `/proc/kallsyms` (and
    /// `/sys/kernel/notes` for its build-id) when the running kernel is the recorded one,
    /// this process's own `[vdso]` when it is the recorded one, perf's build-id cache in
    /// `$HOME/.debug`, JIT maps in `/tmp`, and binaries under `/` when there is no `symfs`.
    #[default]
    Running,
    /// Nothing of the running machine: kernel symbols only from `kallsyms`, binaries and
    /// perf's build-id cache only under `symfs` (`SYMFS/.debug`; no binaries without it), JIT
    /// maps only from `perf_map_dir`. The result depends on the file and the options alone,
    /// whatever the machine, kernel or user that runs it (fixture tests; reports made for
    /// another machine).
    Isolated,
}

impl Host {
    /// Whether the running machine may be read.
    pub(crate) fn allowed(self) -> bool {
        self == Host::Running
    }
}

/// ` at byte N of the file` for a message about one record (nothing when not known: a
/// big-endian or repaired file, read through the container's iterator).
fn at_byte(at: Option<u64>) -> String {
    at.map(|n| format!(" at byte {n} of the file")).unwrap_or_default()
}

/// Why a perf.data file could not be read at all. Problems with single records are counted
/// in the output's diagnostics instead.
#[derive(Debug, thiserror::Error)]
pub enum PerfDataError {
    /// The file could not be opened or mapped.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The header is not a perf.data header or is inconsistent with the file.
    #[error("not a usable perf.data file: {0}")]
    Header(String),
    /// The container could not be parsed.
    #[error("perf.data container: {0}")]
    Container(#[from] linux_perf_data::Error),
    /// The `--kallsyms` file could not be read.
    #[error("kallsyms: {0}")]
    Kallsyms(#[from] crate::symbols::SymbolError),
}
