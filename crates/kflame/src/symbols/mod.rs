//! Symbolization: kernel symbols (kallsyms), ELF symbol tables of user binaries, and
//! process address spaces, with the rules `perf` applies, so that names match what
//! `perf script` prints.
//!
//! - [`Kallsyms::parse`] / [`Kallsyms::lookup`]: kernel addresses.
//! - [`ElfSymbols::open`] / [`ElfSymbols::lookup`]: user addresses, keyed by *file offset*
//!   (use [`Mapping::file_offset`]); separate debug files are found by build-id.
//! - [`AddressSpace`]: which file a user address belongs to.
//! - [`demangle()`]: C++ and Rust names as perf shows them.
//! - [`DwarfNames`]: DWARF function names of an address, inline chain included.
//! - [`PerfMap`]: `/tmp/perf-PID.map` files of JIT compilers; [`parse_proc_maps_line`]:
//!   `/proc/PID/maps`.
//!
//! - [`FileSymbols`]: the same symbols with their names left in the file, read on demand
//!   (what a recorder that runs for days keeps).
//!
//! Everything here is pure over bytes except the `open` functions, which read (or map) files.

mod demangle;
mod dwarf;
mod elf;
mod file;
mod kallsyms;
mod maps;
mod perf_map;
mod proc_maps;
mod table;

pub use demangle::demangle;
pub use dwarf::{DwarfFrame, DwarfNames};
pub use elf::{ElfSymbols, FileSymbols, debug_file_path, read_build_id};
pub use file::MappedFile;
pub use kallsyms::Kallsyms;
pub use maps::{AddressSpace, Mapping};
pub use perf_map::PerfMap;
pub use proc_maps::{is_anonymous, mapped_file_name, parse_proc_maps_line};

use std::path::PathBuf;

/// A symbol found for an address.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Raw (mangled) name.
    pub name: &'a str,
    /// Start address, in the table's address space.
    pub start: u64,
    /// Position in its table: a stable key for caching per-symbol work.
    pub index: usize,
}

/// Why symbols could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not in the expected format.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

impl Kallsyms {
    /// Reads and parses a kallsyms file (e.g. `/proc/kallsyms` or a saved copy).
    pub fn open(path: &std::path::Path) -> Result<Kallsyms, SymbolError> {
        let data =
            std::fs::read(path).map_err(|source| SymbolError::Io { path: path.to_path_buf(), source })?;
        Ok(Kallsyms::parse(&data))
    }
}
