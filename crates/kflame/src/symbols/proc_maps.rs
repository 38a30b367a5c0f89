//! `/proc/PID/maps` lines as [`Mapping`]s of file paths.

use super::Mapping;

/// Parses one `/proc/PID/maps` line (`START-END PERMS OFFSET DEV INODE [PATH]`); only
/// executable mappings are kept. The object is the path as bytes (empty for anonymous
/// memory, `[vdso]`-style names for special mappings, a ` (deleted)` suffix kept).
pub fn parse_proc_maps_line(line: &str) -> Option<Mapping<Vec<u8>>> {
    let mut it = line.split_ascii_whitespace();
    let (range, perms, off) = (it.next()?, it.next()?, it.next()?);
    if !perms.contains('x') {
        return None;
    }
    let (_dev, _inode) = (it.next()?, it.next()?);
    let path = it.collect::<Vec<_>>().join(" ");
    let (s, e) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        pgoff: u64::from_str_radix(off, 16).ok()?,
        object: path.into_bytes(),
    })
}

/// True for a mapping of no file: anonymous memory as `/proc/PID/maps` shows it (no path, or
/// `[anon:NAME]`) and as `MMAP2` records name it (`//anon`), and perf's other anonymous
/// kinds (`/dev/zero`, `/anon_hugepage`, `memfd:` files). JIT compilers put their code
/// there, and name it in `/tmp/perf-PID.map`.
pub fn is_anonymous(path: &[u8]) -> bool {
    path.is_empty()
        || [&b"//anon"[..], b"/dev/zero", b"/anon_hugepage", b"[anon:", b"/memfd:", b"memfd:"]
            .iter()
            .any(|p| path.starts_with(p))
}

/// The file name of a mapped path without directories or a ` (deleted)` suffix (perf's
/// `[libc.so.6]` frames use it).
pub fn mapped_file_name(path: &[u8]) -> &[u8] {
    let p = path.strip_suffix(b" (deleted)").unwrap_or(path);
    p.rsplit(|&b| b == b'/').next().unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_line() {
        let m = parse_proc_maps_line(
            "7f0e1c028000-7f0e1c1bd000 r-xp 00028000 fe:01 1837   /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!((m.start, m.end, m.pgoff), (0x7f0e1c028000, 0x7f0e1c1bd000, 0x28000));
        assert_eq!(mapped_file_name(&m.object), b"libc.so.6");
        assert_eq!(mapped_file_name(b"/opt/app/a.out (deleted)"), b"a.out");
        assert!(parse_proc_maps_line("7f0e1c000000-7f0e1c028000 r--p 00000000 fe:01 1 /x").is_none());
        assert!(parse_proc_maps_line("garbage").is_none());
        let anon = parse_proc_maps_line("7f0e1c000000-7f0e1c028000 r-xp 00000000 00:00 0").unwrap();
        assert!(anon.object.is_empty());
    }
}
