//! Naming cgroup ids. A sample's `PERF_SAMPLE_CGROUP` id is the id of its task's cgroup in
//! the v2 hierarchy (the `perf_event` controller's cgroup, which on a v2 or hybrid system is
//! the task's v2 cgroup), and that id is the inode number of the cgroup's directory under
//! the cgroup2 mount. Names come from the `PERF_RECORD_CGROUP` records the kernel writes
//! (for each cgroup created while recording), else from one walk of the cgroup2 mount, done
//! again only when an id is not known (a cgroup created before the recording, or whose
//! record was lost). Paths are relative to the root of the hierarchy: `/`,
//! `/system.slice/ssh.service`, as the kernel writes them.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

/// Names of cgroup ids, cached for the life of a recorder (bounded).
#[derive(Default)]
pub(crate) struct CgroupNames {
    /// The cgroup2 mount point and the path of its root in the hierarchy, once looked up
    /// (`Some(None)`: there is none).
    mount: Option<Option<(PathBuf, String)>>,
    names: FxHashMap<u64, Arc<str>>,
    /// Ids a walk did not find, not looked for again until another walk.
    missing: FxHashSet<u64>,
    /// Walks of the hierarchy so far.
    pub(crate) walks: u64,
}

impl CgroupNames {
    /// Names kept at most (a machine with more cgroups starts over).
    pub(crate) const LIMIT: usize = 1 << 16;

    /// Learns a name from a `PERF_RECORD_CGROUP` record.
    pub(crate) fn learn(&mut self, id: u64, path: &[u8]) {
        if self.names.len() >= Self::LIMIT {
            self.names.clear();
        }
        self.missing.remove(&id);
        self.names.insert(id, String::from_utf8_lossy(path).into());
    }

    /// Ids cached (named, or known to be missing).
    pub(crate) fn len(&self) -> usize {
        self.names.len() + self.missing.len()
    }

    /// The names of `ids` that can be found, walking the hierarchy at most once.
    pub(crate) fn name(&mut self, ids: impl IntoIterator<Item = u64>) -> BTreeMap<u64, Arc<str>> {
        let mut out = BTreeMap::new();
        let mut unknown = Vec::new();
        for id in ids {
            match self.names.get(&id) {
                Some(n) => {
                    out.insert(id, n.clone());
                }
                None if !self.missing.contains(&id) => unknown.push(id),
                None => {}
            }
        }
        if unknown.is_empty() {
            return out;
        }
        self.walk();
        for id in unknown {
            match self.names.get(&id) {
                Some(n) => {
                    out.insert(id, n.clone());
                }
                None => {
                    self.missing.insert(id);
                }
            }
        }
        out
    }

    /// The cgroup2 mount and the root of the hierarchy in it, looked up once.
    fn mount(&mut self) -> Option<(PathBuf, String)> {
        self.mount
            .get_or_insert_with(|| {
                usable_cgroup2(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
            })
            .clone()
    }

    /// Why cgroups cannot be named here, if they cannot: no cgroup2 hierarchy.
    pub(crate) fn unnamed_why(&mut self) -> Option<String> {
        use super::features::{Feature, masked, masked_why};
        match self.mount() {
            Some(_) => None,
            None if masked(Feature::CgroupV2) => Some(format!(
                "no cgroup v2 hierarchy ({}; it needs Linux 4.5)",
                masked_why(Feature::CgroupV2)
            )),
            None => Some("no cgroup v2 hierarchy is mounted (cgroup2 in /proc/self/mountinfo)".to_string()),
        }
    }

    /// Reads the names of every cgroup under the cgroup2 mount.
    fn walk(&mut self) {
        let Some((dir, root)) = self.mount() else { return };
        self.walks += 1;
        let found = walk(&dir, &root);
        if self.names.len() + found.len() > Self::LIMIT {
            self.names.clear();
        }
        self.missing.clear();
        self.names.extend(found.into_iter().take(Self::LIMIT));
    }
}

/// Every directory under `dir` by inode number, named by its path below `dir` after
/// `root` (the path of `dir` in the hierarchy).
pub(crate) fn walk(dir: &Path, root: &str) -> Vec<(u64, Arc<str>)> {
    const MAX_DEPTH: usize = 64;
    let mut out = Vec::new();
    let Ok(meta) = std::fs::metadata(dir) else { return out };
    out.push((meta.ino(), Arc::from(root)));
    let mut todo = vec![(dir.to_path_buf(), root.trim_end_matches('/').to_string(), 0usize)];
    while let Some((path, name, depth)) = todo.pop() {
        if depth >= MAX_DEPTH || out.len() > CgroupNames::LIMIT {
            continue;
        }
        for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            if !kind.is_dir() {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let child = format!("{name}/{}", entry.file_name().to_string_lossy());
            out.push((meta.ino(), Arc::from(child.as_str())));
            todo.push((entry.path(), child, depth + 1));
        }
    }
    out
}

/// [`cgroup2_mount`] of a mountinfo text, unless `KFLAME_MASK_FEATURES` masks cgroup v2: the
/// hierarchy kflame can name cgroups in.
pub fn usable_cgroup2(mountinfo: &str) -> Option<(PathBuf, String)> {
    cgroup2_mount(mountinfo).filter(|_| !super::features::masked(super::features::Feature::CgroupV2))
}

/// The cgroup2 mount of a `/proc/PID/mountinfo` text: its mount point and the path of its
/// root in the hierarchy (`/` unless a sub-tree is mounted, as in a container).
pub fn cgroup2_mount(mountinfo: &str) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split(' ').next()? != "cgroup2" {
            return None;
        }
        let mut f = left.split(' ');
        let (_id, _parent, _dev) = (f.next()?, f.next()?, f.next()?);
        let (root, point) = (f.next()?, f.next()?);
        Some((PathBuf::from(unescape(point)), unescape(root)))
    })
}

/// mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct =
            b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of real mountinfo files: a hybrid system (v1 controllers, v2 at `unified`), a
    /// container whose cgroup2 root is a sub-tree, and one without cgroup2.
    #[test]
    fn finds_the_cgroup2_mount() {
        let hybrid = "35 24 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n\
            36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n\
            37 35 0:32 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd\n";
        // Mount points here are data given to the parser, not paths of this machine.
        let want = |point: &str, root: &str| Some((PathBuf::from(point), root.to_string()));
        assert_eq!(cgroup2_mount(hybrid), want("/sys/fs/cgroup/unified", "/"));
        let container = "1085 1080 0:27 /docker/abc\\040def /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n";
        assert_eq!(cgroup2_mount(container), want("/sys/fs/cgroup", "/docker/abc def"));
        assert_eq!(cgroup2_mount(&hybrid.lines().step_by(2).collect::<Vec<_>>().join("\n")), None);
        assert_eq!(cgroup2_mount("garbage\n - cgroup2\n"), None);
    }

    /// A directory tree (made here, in a temporary directory) named by inode numbers as a
    /// cgroup2 mount is; records teach names; a cache bounded by `LIMIT`.
    #[test]
    fn walks_a_tree_by_inode_and_learns_from_records() {
        let dir = std::env::temp_dir().join(format!("kflame-cgroups-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("system.slice/ssh.service")).expect("mkdir");
        std::fs::write(dir.join("cgroup.procs"), "").expect("a file, not a cgroup");
        let ino = |p: &str| std::fs::metadata(dir.join(p)).expect("stat").ino();
        let mut found = walk(&dir, "/");
        found.sort();
        let mut want: Vec<(u64, Arc<str>)> = vec![
            (ino(""), "/".into()),
            (ino("system.slice"), "/system.slice".into()),
            (ino("system.slice/ssh.service"), "/system.slice/ssh.service".into()),
        ];
        want.sort();
        assert_eq!(found, want);
        let under = walk(&dir.join("system.slice"), "/docker/x");
        assert!(under.contains(&(ino("system.slice/ssh.service"), "/docker/x/ssh.service".into())));
        std::fs::remove_dir_all(&dir).expect("cleanup");

        let mut names = CgroupNames { mount: Some(None), ..CgroupNames::default() };
        names.learn(42, b"/user.slice");
        let got = names.name([42, 43]);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), [(42, Arc::from("/user.slice"))]);
        assert_eq!(names.walks, 0, "no cgroup2 mount: nothing to walk");
        for id in 0..CgroupNames::LIMIT as u64 + 5 {
            names.learn(1000 + id, b"/x");
        }
        assert!(names.names.len() <= CgroupNames::LIMIT, "{}", names.names.len());
    }
}
