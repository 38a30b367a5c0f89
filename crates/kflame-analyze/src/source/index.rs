//! The on-disk index of a kernel tree: every `.c` and `.h` file's definitions and calls,
//! with the file's size and modification time so that a later open rescans only the files
//! that changed. The file is written whole to a temporary name and renamed; it carries a
//! magic, a format version, the tree's path and a checksum of its contents, and any
//! mismatch or damage makes it rebuilt from the tree (never trusted).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use super::scan::{Def, DefKind, scan};

const MAGIC: &[u8; 16] = b"kflame-srcindex\0";
/// Bumped whenever the scanner or the layout changes: an older index is rebuilt.
const VERSION: u32 = 1;

/// Errors of a kernel tree or its index.
#[derive(Debug)]
pub enum SourceError {
    /// The tree cannot be used (missing, empty, not a kernel).
    Tree(String),
    /// Reading or writing a file failed.
    Io(PathBuf, std::io::Error),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Tree(m) => f.write_str(m),
            SourceError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for SourceError {}

/// A definition in the index: names and calls are ids into the index's strings.
#[derive(Clone, Debug)]
pub(crate) struct IDef {
    pub(crate) names: Vec<u32>,
    pub(crate) calls: Vec<u32>,
    pub(crate) start: u32,
    pub(crate) end: u32,
    pub(crate) kind: DefKind,
}

#[derive(Clone, Debug)]
pub(crate) struct FileEntry {
    pub(crate) path: String,
    mtime: i64,
    size: u64,
    pub(crate) defs: Vec<IDef>,
}

/// What opening an index did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexStatus {
    /// Source files in the tree.
    pub files: usize,
    /// Files scanned in this run (all of them on a first build).
    pub scanned: usize,
    /// Files dropped because they are gone from the tree.
    pub removed: usize,
    /// The index was built from scratch, and why (`None` when an existing index was used).
    pub rebuilt: Option<String>,
    /// The index file was written.
    pub written: bool,
}

/// The index of one kernel tree, in memory.
#[derive(Debug)]
pub struct SourceIndex {
    root: PathBuf,
    pub(crate) strings: Vec<String>,
    ids: HashMap<String, u32>,
    pub(crate) files: Vec<FileEntry>,
    /// Name id → (file, definition) pairs.
    by_name: HashMap<u32, Vec<(u32, u32)>>,
}

/// Checks that `dir` looks like a kernel tree: a top `Makefile` with `VERSION =` and
/// `PATCHLEVEL =` lines and a `kernel/` or `include/linux/` directory, or (a tree imported
/// without its top files) both `kernel/` and `include/linux/`.
pub fn check_tree(dir: &Path) -> Result<PathBuf, SourceError> {
    let meta =
        fs::metadata(dir).map_err(|e| SourceError::Tree(format!("kernel tree {}: {e}", dir.display())))?;
    if !meta.is_dir() {
        return Err(SourceError::Tree(format!("kernel tree {}: not a directory", dir.display())));
    }
    let root = fs::canonicalize(dir).map_err(|e| SourceError::Io(dir.to_path_buf(), e))?;
    let empty = fs::read_dir(&root).map_err(|e| SourceError::Io(root.clone(), e))?.next().is_none();
    if empty {
        return Err(SourceError::Tree(format!("kernel tree {}: the directory is empty", dir.display())));
    }
    let head = fs::read(root.join("Makefile")).unwrap_or_default();
    let head = String::from_utf8_lossy(&head[..head.len().min(4096)]).into_owned();
    let has = |k: &str| head.lines().any(|l| l.starts_with(k) && l[k.len()..].trim_start().starts_with('='));
    let versioned = has("VERSION") && has("PATCHLEVEL");
    let kernel = root.join("kernel").is_dir();
    let include = root.join("include/linux").is_dir();
    if (versioned && (kernel || include)) || (kernel && include) {
        return Ok(root);
    }
    Err(SourceError::Tree(format!(
        "{} is not a kernel source tree: expected a top-level Makefile with VERSION = and PATCHLEVEL = \
         lines and a kernel/ or include/linux/ directory",
        dir.display()
    )))
}

/// A source file of the tree: relative path, mtime (ns since the epoch) and size.
struct Listed {
    path: String,
    mtime: i64,
    size: u64,
}

fn list(root: &Path) -> Result<Vec<Listed>, SourceError> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if rel.as_os_str().is_empty() => return Err(SourceError::Io(dir, e)),
            // An unreadable subdirectory: its files are not indexed.
            Err(_) => continue,
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let Ok(ft) = entry.file_type() else { continue };
            let r = rel.join(name);
            if ft.is_dir() {
                stack.push(r);
            } else if ft.is_file() && (name.ends_with(".c") || name.ends_with(".h")) {
                let Ok(m) = entry.metadata() else { continue };
                let mtime = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
                let Some(path) = r.to_str() else { continue };
                out.push(Listed { path: path.to_string(), mtime, size: m.len() });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

impl SourceIndex {
    /// Opens the index of the kernel tree `dir` kept in the file `index`: reads it, rescans
    /// the files whose size or mtime changed (and new ones), drops those gone, and writes
    /// it back when anything changed. A missing, foreign, older or damaged index file is
    /// rebuilt from the tree. `threads` scanners run at once (at least 1).
    pub fn open(dir: &Path, index: &Path, threads: usize) -> Result<(SourceIndex, IndexStatus), SourceError> {
        let root = check_tree(dir)?;
        let listed = list(&root)?;
        if listed.is_empty() {
            return Err(SourceError::Tree(format!("kernel tree {}: no .c or .h file in it", dir.display())));
        }
        let mut status = IndexStatus { files: listed.len(), ..IndexStatus::default() };
        let old = match fs::read(index) {
            Ok(bytes) => match decode(&bytes, &root) {
                Ok(idx) => Some(idx),
                Err(why) => {
                    status.rebuilt = Some(format!("the index {} {why}", index.display()));
                    None
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                status.rebuilt = Some("no index yet".into());
                None
            }
            Err(e) => {
                status.rebuilt = Some(format!("the index {} could not be read ({e})", index.display()));
                None
            }
        };
        let mut idx = old.unwrap_or_else(|| SourceIndex::empty(root.clone()));
        let mut previous: HashMap<String, FileEntry> =
            std::mem::take(&mut idx.files).into_iter().map(|f| (f.path.clone(), f)).collect();
        let mut files: Vec<Option<FileEntry>> = Vec::with_capacity(listed.len());
        let mut todo: Vec<usize> = Vec::new();
        for (i, l) in listed.iter().enumerate() {
            match previous.remove(&l.path) {
                Some(f) if f.mtime == l.mtime && f.size == l.size => files.push(Some(f)),
                _ => {
                    files.push(None);
                    todo.push(i);
                }
            }
        }
        status.removed = previous.len();
        status.scanned = todo.len();
        let scanned = scan_files(&root, &listed, &todo, threads.max(1));
        for (i, defs) in scanned {
            let l = &listed[i];
            let defs = defs.into_iter().map(|d| idx.intern_def(d)).collect();
            files[i] = Some(FileEntry { path: l.path.clone(), mtime: l.mtime, size: l.size, defs });
        }
        idx.files = files.into_iter().flatten().collect();
        idx.build_names();
        if status.scanned > 0 || status.removed > 0 || status.rebuilt.is_some() {
            idx.write(index)?;
            status.written = true;
        }
        Ok((idx, status))
    }

    fn empty(root: PathBuf) -> SourceIndex {
        SourceIndex {
            root,
            strings: Vec::new(),
            ids: HashMap::new(),
            files: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    /// The tree's root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Files indexed.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// Names defined (distinct).
    pub fn name_count(&self) -> usize {
        self.by_name.len()
    }

    fn intern(&mut self, s: String) -> u32 {
        if let Some(&id) = self.ids.get(&s) {
            return id;
        }
        let id = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.strings.push(s.clone());
        self.ids.insert(s, id);
        id
    }

    fn intern_def(&mut self, d: Def) -> IDef {
        IDef {
            names: d.names.into_iter().map(|n| self.intern(n)).collect(),
            calls: d.calls.into_iter().map(|n| self.intern(n)).collect(),
            start: d.start,
            end: d.end,
            kind: d.kind,
        }
    }

    fn build_names(&mut self) {
        let mut by_name: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for (fi, f) in self.files.iter().enumerate() {
            for (di, d) in f.defs.iter().enumerate() {
                for &n in &d.names {
                    by_name.entry(n).or_default().push((fi as u32, di as u32));
                }
            }
        }
        self.by_name = by_name;
    }

    /// Every name defined in the tree, sorted.
    pub fn defined_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.by_name.keys().map(|&id| self.strings[id as usize].as_str()).collect();
        v.sort_unstable();
        v
    }

    /// The id of a name, if any file mentions it.
    pub(crate) fn id(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// Definitions of `name`: (file path, definition), in path order.
    pub(crate) fn defs(&self, name: &str) -> Vec<(&FileEntry, &IDef)> {
        let Some(id) = self.id(name) else { return Vec::new() };
        self.by_name
            .get(&id)
            .map(|v| {
                v.iter()
                    .map(|&(f, d)| (&self.files[f as usize], &self.files[f as usize].defs[d as usize]))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The definitions whose bodies call `name`.
    pub(crate) fn callers(&self, name: &str) -> Vec<(&FileEntry, &IDef)> {
        let Some(id) = self.id(name) else { return Vec::new() };
        let mut out = Vec::new();
        for f in &self.files {
            for d in &f.defs {
                if d.calls.contains(&id) {
                    out.push((f, d));
                }
            }
        }
        out
    }

    fn write(&self, path: &Path) -> Result<(), SourceError> {
        let payload = self.encode();
        let mut out = Vec::with_capacity(payload.len() + 40);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&checksum(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| SourceError::Io(dir.to_path_buf(), e))?;
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let res = fs::File::create(&tmp).and_then(|mut f| f.write_all(&out).and_then(|()| f.sync_all()));
        if let Err(e) = res {
            let _ = fs::remove_file(&tmp);
            return Err(SourceError::Io(tmp, e));
        }
        fs::rename(&tmp, path).map_err(|e| SourceError::Io(path.to_path_buf(), e))
    }

    fn encode(&self) -> Vec<u8> {
        let mut o = Vec::new();
        put_str(&mut o, self.root.to_str().unwrap_or(""));
        put(&mut o, self.strings.len() as u64);
        for s in &self.strings {
            put_str(&mut o, s);
        }
        put(&mut o, self.files.len() as u64);
        for f in &self.files {
            put_str(&mut o, &f.path);
            put(&mut o, f.mtime as u64);
            put(&mut o, f.size);
            put(&mut o, f.defs.len() as u64);
            for d in &f.defs {
                o.push(d.kind.as_u8());
                put(&mut o, u64::from(d.start));
                put(&mut o, u64::from(d.end - d.start));
                put(&mut o, d.names.len() as u64);
                for &n in &d.names {
                    put(&mut o, u64::from(n));
                }
                put(&mut o, d.calls.len() as u64);
                for &n in &d.calls {
                    put(&mut o, u64::from(n));
                }
            }
        }
        o
    }
}

/// Scans the files `todo` (indexes into `listed`) on `threads` threads.
fn scan_files(root: &Path, listed: &[Listed], todo: &[usize], threads: usize) -> Vec<(usize, Vec<Def>)> {
    let next = AtomicUsize::new(0);
    let mut out: Vec<(usize, Vec<Def>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(todo.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&i) = todo.get(k) else { break };
                        // An unreadable file counts as empty; it is rescanned when it changes.
                        let defs = fs::read(root.join(&listed[i].path)).map(|b| scan(&b)).unwrap_or_default();
                        mine.push((i, defs));
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out
}

/// 64-bit FNV-1a over 8-byte words (and the tail bytes): enough to notice damage.
fn checksum(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    for &x in chunks.remainder() {
        h = (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn put(o: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            o.push(b);
            return;
        }
        o.push(b | 0x80);
    }
}

fn put_str(o: &mut Vec<u8>, s: &str) {
    put(o, s.len() as u64);
    o.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn get(&mut self) -> Result<u64, String> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.b.get(self.at) else { return Err("ends early".into()) };
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("holds a malformed number".into())
    }

    /// A count of items that each take at least one byte: never more than the bytes left.
    fn count(&mut self) -> Result<usize, String> {
        let n = self.get()?;
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            return Err("holds a count larger than the file".into());
        }
        Ok(n as usize)
    }

    fn str(&mut self) -> Result<String, String> {
        let n = self.count()?;
        let s = self.b.get(self.at..self.at + n).ok_or("ends early")?;
        self.at += n;
        String::from_utf8(s.to_vec()).map_err(|_| "holds a name that is not UTF-8".to_string())
    }

    fn u32(&mut self) -> Result<u32, String> {
        u32::try_from(self.get()?).map_err(|_| "holds an out-of-range number".to_string())
    }
}

/// Reads an index file; the error says what is wrong with it.
fn decode(bytes: &[u8], root: &Path) -> Result<SourceIndex, String> {
    if bytes.len() < 36 || &bytes[..16] != MAGIC {
        return Err("is not a kflame source index".into());
    }
    let version = u32::from_le_bytes(bytes[16..20].try_into().map_err(|_| "is cut")?);
    if version != VERSION {
        return Err(format!("has format {version}, this kflame writes {VERSION}"));
    }
    let len = u64::from_le_bytes(bytes[20..28].try_into().map_err(|_| "is cut")?);
    let sum = u64::from_le_bytes(bytes[28..36].try_into().map_err(|_| "is cut")?);
    let payload = &bytes[36..];
    if payload.len() as u64 != len {
        return Err("is cut or has trailing bytes".into());
    }
    if checksum(payload) != sum {
        return Err("is damaged (checksum mismatch)".into());
    }
    let mut r = Reader { b: payload, at: 0 };
    let stored_root = r.str()?;
    if Path::new(&stored_root) != root {
        return Err(format!("was built for another tree ({stored_root})"));
    }
    let n = r.count()?;
    let mut idx = SourceIndex::empty(root.to_path_buf());
    idx.strings.reserve(n);
    idx.ids.reserve(n);
    for i in 0..n {
        let s = r.str()?;
        idx.ids.insert(s.clone(), i as u32);
        idx.strings.push(s);
    }
    let nstr = n as u64;
    let id = |r: &mut Reader<'_>| -> Result<u32, String> {
        let v = r.get()?;
        if v >= nstr {
            return Err("refers to a name it does not hold".into());
        }
        Ok(v as u32)
    };
    let nf = r.count()?;
    idx.files.reserve(nf);
    for _ in 0..nf {
        let path = r.str()?;
        let mtime = r.get()? as i64;
        let size = r.get()?;
        let nd = r.count()?;
        let mut defs = Vec::with_capacity(nd);
        for _ in 0..nd {
            let kind =
                r.b.get(r.at)
                    .copied()
                    .and_then(DefKind::from_u8)
                    .ok_or("holds an unknown definition kind")?;
            r.at += 1;
            let start = r.u32()?;
            let end = start.checked_add(r.u32()?).ok_or("holds an out-of-range line")?;
            let nn = r.count()?;
            let names = (0..nn).map(|_| id(&mut r)).collect::<Result<Vec<_>, _>>()?;
            let nc = r.count()?;
            let calls = (0..nc).map(|_| id(&mut r)).collect::<Result<Vec<_>, _>>()?;
            defs.push(IDef { names, calls, start, end, kind });
        }
        idx.files.push(FileEntry { path, mtime, size, defs });
    }
    if r.at != payload.len() {
        return Err("has trailing bytes".into());
    }
    Ok(idx)
}
