//! Which files a tool may read: only regular files under the directories given with
//! `--allow`, after every symlink of the path (and of the roots) has been resolved, and no
//! larger than the size limit. A refusal says which rule the path broke, never what the
//! file holds.

use std::fs;
use std::path::{Path, PathBuf};

use crate::ToolError;

/// The allowed roots, resolved once at start.
#[derive(Clone, Debug)]
pub struct Roots {
    roots: Vec<PathBuf>,
    max_bytes: u64,
}

impl Roots {
    /// Roots from the given directories (each must exist and be a directory); inputs larger
    /// than `max_bytes` are refused.
    pub fn new(dirs: &[PathBuf], max_bytes: u64) -> Result<Roots, String> {
        let mut roots = Vec::new();
        for d in dirs {
            let real = fs::canonicalize(d).map_err(|e| format!("--allow {}: {e}", d.display()))?;
            if !real.is_dir() {
                return Err(format!("--allow {}: not a directory", d.display()));
            }
            roots.push(real);
        }
        Ok(Roots { roots, max_bytes })
    }

    /// The allowed roots, resolved.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The largest input accepted, in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// `path` resolved (symlinks followed), when it is an allowed directory or below one.
    fn resolve(&self, path: &str, what: &str) -> Result<PathBuf, ToolError> {
        if path.is_empty() {
            return Err(ToolError::input(format!("{what}: the path is empty")));
        }
        if self.roots.is_empty() {
            return Err(ToolError::input(format!(
                "{what} {path:?}: this server reads no files (start it with --allow DIR)"
            )));
        }
        let p = Path::new(path);
        if !p.is_absolute() {
            return Err(ToolError::input(format!(
                "{what} {path:?}: give an absolute path under an allowed directory ({})",
                self.list()
            )));
        }
        let real = fs::canonicalize(p).map_err(|e| ToolError::input(format!("{what} {path:?}: {e}")))?;
        if !self.roots.iter().any(|r| real.starts_with(r)) {
            return Err(ToolError::input(format!(
                "{what} {path:?} is outside the directories this server may read ({})",
                self.list()
            )));
        }
        Ok(real)
    }

    /// A readable regular file within the roots and the size limit.
    pub fn file(&self, path: &str, what: &str) -> Result<PathBuf, ToolError> {
        let real = self.resolve(path, what)?;
        let meta = fs::metadata(&real).map_err(|e| ToolError::input(format!("{what} {path:?}: {e}")))?;
        if meta.is_dir() {
            return Err(ToolError::input(format!("{what} {path:?} is a directory, expected a file")));
        }
        if !meta.is_file() {
            return Err(ToolError::input(format!("{what} {path:?} is not a regular file")));
        }
        if meta.len() > self.max_bytes {
            return Err(ToolError::input(format!(
                "{what} {path:?} is {} bytes, over this server's limit of {} (--max-input-bytes)",
                meta.len(),
                self.max_bytes
            )));
        }
        fs::File::open(&real)
            .map_err(|e| ToolError::input(format!("{what} {path:?}: cannot open it: {e}")))?;
        Ok(real)
    }

    fn list(&self) -> String {
        self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_out_of_a_root_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        fs::write(&secret, "x").unwrap();
        let inside = root.path().join("log.txt");
        fs::write(&inside, "x").unwrap();
        std::os::unix::fs::symlink(&secret, root.path().join("link")).unwrap();
        let roots = Roots::new(&[root.path().to_path_buf()], 10).unwrap();
        assert!(roots.file(inside.to_str().unwrap(), "path").is_ok());
        let e = roots.file(root.path().join("link").to_str().unwrap(), "path").unwrap_err();
        assert!(e.to_string().contains("outside the directories"), "{e}");
        let outside_name = outside.path().file_name().unwrap().to_str().unwrap();
        let dotdot = format!("{}/../{outside_name}/secret", root.path().display());
        assert!(roots.file(&dotdot, "path").unwrap_err().to_string().contains("outside"));
        assert!(roots.file("relative.txt", "path").unwrap_err().to_string().contains("absolute"));
        fs::write(&inside, "x".repeat(11)).unwrap();
        assert!(roots.file(inside.to_str().unwrap(), "path").unwrap_err().to_string().contains("limit"));
        let dir = root.path().to_str().unwrap();
        assert!(roots.file(dir, "path").unwrap_err().to_string().contains("directory"));
    }
}
