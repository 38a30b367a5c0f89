//! Mappings perf names without a binary on disk: JIT code and the vDSO.
//!
//! - **JIT code.** Executable anonymous memory of process PID is the DSO
//!   `/tmp/perf-PID.map`, named from the map file the JIT compiler wrote there
//!   (`node --perf-basic-prof`, the JVM with perf-map-agent...): `START SIZE NAME` lines,
//!   looked up by the sampled address itself (perf's identity mapping). perf reads the file
//!   from `/tmp` at report time; [`Options::perf_map_dir`](super::Options) reads
//!   `DIR/perf-PID.map` instead (maps copied off the recording machine).
//! - **The vDSO.** perf keeps a copy of the recorded `[vdso]` in its build-id cache,
//!   `~/.debug/.build-id/xx/yyyy…/vdso` (`SYMFS/.debug/…` under `--symfs`). When the copy is
//!   absent and the recording kernel is the running one (the recorded build-id is that of
//!   this process's own `[vdso]`), the running image is read, as perf does. Frames are looked
//!   up by their offset in the vDSO image.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::binary::Missing;
use crate::symbols::{ElfSymbols, PerfMap, parse_proc_maps_line, read_build_id};

const VDSO: &str = "[vdso]";

/// True for the DSO name perf gives JIT code, `/tmp/perf-PID.map`.
pub(crate) fn is_perf_map(name: &str) -> bool {
    name.strip_prefix("/tmp/perf-")
        .and_then(|r| r.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The page offset the reader keeps for a mapping of `name`, so that `Mapping::file_offset`
/// gives the address perf looks symbols up by: the address itself for JIT code, the offset
/// in the image for the vDSO.
pub(crate) fn map_pgoff(name: &str, start: u64, pgoff: u64) -> u64 {
    if is_perf_map(name) {
        start
    } else if name == VDSO {
        0
    } else {
        pgoff
    }
}

/// Where perf maps and perf's build-id cache are.
#[derive(Clone, Debug)]
pub(crate) struct Places {
    /// `--symfs` root (`/` without it; `None` when the host may not be read and there is no
    /// `--symfs`).
    pub(crate) root: Option<PathBuf>,
    /// Directory of `perf-PID.map` files (`/tmp` by default).
    pub(crate) perf_maps: Option<PathBuf>,
    /// Whether the running machine may be read (`/tmp`, `~/.debug`, the own vDSO).
    pub(crate) host: bool,
}

/// The symbols of a special mapping, or `None` when `name` is an ordinary file.
pub(crate) fn load(
    places: &Places,
    name: &str,
    build_id: Option<&[u8]>,
) -> Option<Result<ElfSymbols, Missing>> {
    if is_perf_map(name) {
        return Some(perf_map(places, name));
    }
    (name == VDSO).then(|| vdso(places, build_id))
}

fn perf_map(places: &Places, name: &str) -> Result<ElfSymbols, Missing> {
    let path = match &places.perf_maps {
        Some(dir) => dir.join(name.rsplit('/').next().unwrap_or(name)),
        None if places.host => PathBuf::from(name),
        None => {
            return Err(Missing::Unreadable(format!(
                "JIT symbols: {name} is not read (host lookups are off and no perf map directory was given)"
            )));
        }
    };
    match PerfMap::open(&path) {
        Ok(map) => Ok(map.to_symbols()),
        Err(e) => Err(Missing::Unreadable(format!("JIT symbols: {e}"))),
    }
}

fn vdso(places: &Places, build_id: Option<&[u8]>) -> Result<ElfSymbols, Missing> {
    let image = vdso_image(places, build_id)?;
    ElfSymbols::parse(&image).map_err(|e| Missing::Unreadable(e.to_string()))
}

/// The image of a special mapping for unwind tables: the recorded vDSO (`None` for other
/// names or when it cannot be found).
pub(crate) fn image(places: &Places, name: &str, build_id: Option<&[u8]>) -> Option<Vec<u8>> {
    (name == VDSO).then(|| vdso_image(places, build_id).ok()).flatten()
}

/// The recorded vDSO: perf's cached copy, else the running one if it is the same.
fn vdso_image(places: &Places, build_id: Option<&[u8]>) -> Result<Vec<u8>, Missing> {
    let Some(want) = build_id else {
        return Err(Missing::Unreadable("the [vdso] has no recorded build-id".into()));
    };
    if let Some(data) = from_cache(places, want) {
        return Ok(data);
    }
    let hex: String = want.iter().map(|b| format!("{b:02x}")).collect();
    if !places.host {
        return Err(Missing::Unreadable(format!(
            "no copy of the recorded [vdso] (build-id {hex}) in perf's build-id cache under the symfs \
             (host lookups are off)"
        )));
    }
    if let Some(image) = own_vdso().filter(|img| read_build_id(img).as_deref() == Some(want)) {
        return Ok(image);
    }
    Err(Missing::Unreadable(format!(
        "no copy of the recorded [vdso] (build-id {hex}) in perf's build-id cache, and the running kernel's \
         is another"
    )))
}

/// The vDSO of build-id `want` from perf's build-id cache.
fn from_cache(places: &Places, want: &[u8]) -> Option<Vec<u8>> {
    let cached = build_id_cache(places).map(|dir| cached_vdso(&dir, want));
    let path = cached.iter().flatten().find(|p| p.is_file())?;
    let data = std::fs::read(path).ok()?;
    (read_build_id(&data).as_deref() == Some(want)).then_some(data)
}

/// perf's build-id cache: `SYMFS/.debug` under `--symfs`, else `~/.debug` (when the host
/// may be read).
fn build_id_cache(places: &Places) -> Option<PathBuf> {
    match &places.root {
        Some(root) if root != Path::new("/") => Some(root.join(".debug")),
        _ if places.host => std::env::var_os("HOME").map(|h| Path::new(&h).join(".debug")),
        _ => None,
    }
}

/// The two paths of a cached vDSO: through the `.build-id` link and directly.
fn cached_vdso(cache: &Path, build_id: &[u8]) -> [PathBuf; 2] {
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let (dir, rest) = hex.split_at(2.min(hex.len()));
    [cache.join(".build-id").join(dir).join(rest).join("vdso"), cache.join(VDSO).join(&hex).join("vdso")]
}

/// The vDSO image mapped into this process (the running kernel's), read through
/// `/proc/self/mem`.
fn own_vdso() -> Option<Vec<u8>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let m = maps.lines().filter_map(parse_proc_maps_line).find(|m| m.object == VDSO.as_bytes())?;
    let len = usize::try_from(m.end.checked_sub(m.start)?).ok()?;
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(m.start)).ok()?;
    let mut image = vec![0; len];
    mem.read_exact(&mut image).ok()?;
    Some(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_names_and_offsets() {
        assert!(is_perf_map("/tmp/perf-42.map"));
        assert!(!is_perf_map("/tmp/perf-.map") && !is_perf_map("/tmp/perf-4x.map") && !is_perf_map("[vdso]"));
        assert_eq!(map_pgoff("/tmp/perf-42.map", 0x7f00, 0), 0x7f00);
        assert_eq!(map_pgoff("[vdso]", 0x7f00, 0x7f), 0);
        assert_eq!(map_pgoff("/bin/x", 0x7f00, 0x1000), 0x1000);
        let [link, direct] = cached_vdso(Path::new("/c"), &[0xa5, 0x99, 0x80]);
        assert_eq!(link, Path::new("/c/.build-id/a5/9980/vdso"));
        assert_eq!(direct, Path::new("/c/[vdso]/a59980/vdso"));
    }

    #[test]
    fn missing_vdso_and_map_are_explained() {
        let places = Places {
            root: Some(PathBuf::from("/nonexistent-root")),
            perf_maps: Some("/nonexistent".into()),
            host: false,
        };
        match vdso(&places, Some(&[1, 2, 3])) {
            Err(Missing::Unreadable(m)) => assert!(m.contains("build-id 010203"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(vdso(&places, None), Err(Missing::Unreadable(_))));
        match load(&places, "/tmp/perf-7.map", None) {
            Some(Err(Missing::Unreadable(m))) => assert!(m.contains("/nonexistent/perf-7.map"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(load(&places, "/usr/bin/true", None).is_none());
    }

    /// A vDSO in the build-id cache under `--symfs` is found by its build-id (the fixtures'
    /// stand-in image, see tests/data/perf-data/make-vdso-standin.sh).
    #[test]
    fn vdso_from_the_build_id_cache() {
        let image =
            std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/perf-data/vdso-standin.so"))
                .unwrap();
        let id = read_build_id(&image).unwrap();
        let root = std::env::temp_dir().join(format!("kflame-vdso-cache-{}", std::process::id()));
        let [link, _] = cached_vdso(&root.join(".debug"), &id);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::fs::write(&link, &image).unwrap();
        let places = Places { root: Some(root.clone()), perf_maps: None, host: false };
        assert_eq!(from_cache(&places, &id).as_deref(), Some(&image[..]));
        assert!(from_cache(&places, &[1, 2, 3]).is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Live test (reads this process's memory): its own vDSO is an ELF image with a build-id
    /// and the vDSO's symbols.
    #[test]
    #[allow(clippy::print_stderr)]
    fn live_own_vdso_is_readable() {
        let Some(image) = own_vdso() else {
            eprintln!("no [vdso] mapping here: skipped");
            return;
        };
        assert!(read_build_id(&image).is_some());
        let syms = ElfSymbols::parse(&image).unwrap();
        assert!(!syms.is_empty());
    }
}
