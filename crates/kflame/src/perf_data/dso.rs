//! The binaries seen in a recording: display names, files to read, lazily loaded symbols.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::binary::{Missing, file_path, load_symbols};
use crate::symbols::{ElfSymbols, MappedFile};

/// Index of a [`Dso`] in [`Dsos`].
pub(crate) type DsoId = u32;

/// One mapped object as perf names it.
pub(crate) struct Dso {
    /// What perf prints between parentheses (`/usr/lib/x86_64-linux-gnu/libc.so.6`).
    pub(crate) name: String,
    /// Build-id recorded in the perf.data header, if any.
    pub(crate) build_id: Option<Vec<u8>>,
    symbols: Option<Option<ElfSymbols>>,
    image: Option<Option<Arc<MappedFile>>>,
}

/// All binaries by name, with the root under which their files are looked up.
pub(crate) struct Dsos {
    list: Vec<Dso>,
    by_name: FxHashMap<String, DsoId>,
    /// `/` or `--symfs`; `None` when binaries may not be read (host lookups off, no symfs).
    root: Option<PathBuf>,
    /// Whether the running machine may be read (see [`super::Host`]).
    host: bool,
    /// Binaries that could not be used, and why.
    pub(crate) missing: Vec<(String, Missing)>,
    prefetch: Option<super::prefetch::Prefetch>,
    /// Where `perf-PID.map` files are read (`None`: `/tmp`, like perf).
    perf_maps: Option<PathBuf>,
}

impl Dsos {
    pub(crate) fn new(root: Option<PathBuf>, host: bool) -> Dsos {
        Dsos {
            list: Vec::new(),
            by_name: FxHashMap::default(),
            root,
            host,
            missing: Vec::new(),
            prefetch: None,
            perf_maps: None,
        }
    }

    /// Reads JIT symbols from `DIR/perf-PID.map` instead of `/tmp/perf-PID.map`.
    pub(crate) fn set_perf_map_dir(&mut self, dir: Option<PathBuf>) {
        self.perf_maps = dir;
    }

    /// Takes symbol tables from a read-ahead thread when it has them.
    pub(crate) fn set_prefetch(&mut self, p: super::prefetch::Prefetch) {
        self.prefetch = Some(p);
    }

    /// Asks the read-ahead thread for the symbols of `id` (a file mapped executable), unless
    /// they are loaded already or it is not a file.
    pub(crate) fn prefetch(&mut self, id: DsoId) {
        let dso = &self.list[id as usize];
        if let Some(p) = self.prefetch.as_mut()
            && dso.symbols.is_none()
            && dso.name.starts_with('/')
        {
            p.schedule(&dso.name, dso.build_id.as_deref());
        }
    }

    /// Stops the read-ahead thread (after the last record): tables still being read are
    /// not waited for.
    pub(crate) fn end_prefetch(&mut self) {
        self.prefetch = None;
    }

    /// The id of `name`, registering it on first sight.
    pub(crate) fn intern(&mut self, name: &str, build_id: Option<&[u8]>) -> DsoId {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = self.list.len() as DsoId;
        let build_id = build_id.map(<[u8]>::to_vec);
        self.list.push(Dso { name: name.to_string(), build_id, symbols: None, image: None });
        self.by_name.insert(name.to_string(), id);
        id
    }

    pub(crate) fn get(&self, id: DsoId) -> &Dso {
        &self.list[id as usize]
    }

    /// Whether [`symbols`](Self::symbols) of `id` would return without waiting for the
    /// read-ahead thread; asks it for the table first if nobody did.
    pub(crate) fn symbols_ready(&mut self, id: DsoId) -> bool {
        self.prefetch(id);
        let dso = &self.list[id as usize];
        dso.symbols.is_some() || self.prefetch.as_mut().is_none_or(|p| p.is_ready(&dso.name))
    }

    /// The symbols of `id`, loaded on first use; `None` when the file is absent, foreign
    /// (another build-id) or unreadable.
    pub(crate) fn symbols(&mut self, id: DsoId) -> Option<&ElfSymbols> {
        let i = id as usize;
        if self.list[i].symbols.is_none() {
            let loaded = self.load(i);
            self.list[i].symbols = Some(loaded);
        }
        self.list[i].symbols.as_ref().and_then(Option::as_ref)
    }

    /// The symbols of `id` if [`symbols`](Self::symbols) loaded them already.
    pub(crate) fn loaded_symbols(&self, id: DsoId) -> Option<&ElfSymbols> {
        self.list[id as usize].symbols.as_ref().and_then(Option::as_ref)
    }

    /// The mapped file of `id` (for unwind tables), if it is the recorded binary.
    pub(crate) fn image(&mut self, id: DsoId) -> Option<Arc<MappedFile>> {
        let i = id as usize;
        if self.list[i].image.is_none() {
            let image = self.file_path(&self.list[i].name).and_then(|p| MappedFile::open(&p).ok());
            let image = image.or_else(|| self.special_image(i));
            let image = image.filter(|m| self.build_id_ok(i, m));
            self.list[i].image = Some(image.map(Arc::new));
        }
        self.list[i].image.clone().flatten()
    }

    fn places(&self) -> super::special::Places {
        super::special::Places { root: self.root.clone(), perf_maps: self.perf_maps.clone(), host: self.host }
    }

    /// The in-memory image of a special mapping (the vDSO).
    fn special_image(&self, i: usize) -> Option<MappedFile> {
        let dso = &self.list[i];
        let image = super::special::image(&self.places(), &dso.name, dso.build_id.as_deref())?;
        MappedFile::from_bytes(&image).ok()
    }

    fn build_id_ok(&self, i: usize, data: &[u8]) -> bool {
        match &self.list[i].build_id {
            Some(want) => crate::symbols::read_build_id(data).is_none_or(|got| &got == want),
            None => true,
        }
    }

    fn load(&mut self, i: usize) -> Option<ElfSymbols> {
        let name = self.list[i].name.clone();
        let special = super::special::load(&self.places(), &name, self.list[i].build_id.as_deref());
        let prefetched = special.or_else(|| self.prefetch.as_mut().and_then(|p| p.take(&name)));
        let result = match prefetched {
            Some(r) => r,
            None => match &self.root {
                Some(root) => load_symbols(root, &name, self.list[i].build_id.as_deref()),
                None => Err(Missing::NotFound),
            },
        };
        match result {
            Ok(s) => Some(s),
            Err(why) => {
                // `//anon` and the like are memory, not files: nothing to report.
                if !name.starts_with("//") {
                    self.missing.push((name, why));
                }
                None
            }
        }
    }

    /// Where the file of a DSO named `name` is: `root/name` for absolute paths.
    fn file_path(&self, name: &str) -> Option<PathBuf> {
        file_path(self.root.as_deref()?, name)
    }

    /// The lookup root (`/` or `--symfs`), `None` when binaries are not read.
    pub(crate) fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }
}
