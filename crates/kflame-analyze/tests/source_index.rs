//! The kernel source index on a small tree written by the test: definitions (static, inline,
//! `SYSCALL_DEFINEn`, macro-defined), callers, incremental update, a damaged index rebuilt,
//! and the errors for a missing, empty or non-kernel tree.

use std::fs;
use std::path::Path;

use kflame_analyze::source::{KernelSource, SourceIndex};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "Makefile", "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n");
    write(
        r,
        "fs/read_write.c",
        "// written for this test\n\
         static ssize_t helper(int fd)\n\
         {\n\
         \treturn fd;\n\
         }\n\
         \n\
         ssize_t ksys_read(unsigned int fd, char *buf, size_t count)\n\
         {\n\
         \treturn helper(fd) + vfs_read(fd);\n\
         }\n\
         \n\
         SYSCALL_DEFINE3(read, unsigned int, fd, char __user *, buf, size_t, count)\n\
         {\n\
         \treturn ksys_read(fd, buf, count);\n\
         }\n",
    );
    write(
        r,
        "include/linux/fs.h",
        "static inline int vfs_read(int fd)\n{\n\treturn fd;\n}\n#define file_count(x) ((x)->count)\n",
    );
    write(
        r,
        "kernel/bpf/helpers.c",
        "BPF_CALL_2(bpf_map_lookup_elem, struct bpf_map *, map, void *, key)\n{\n\treturn helper2(map);\n}\n",
    );
    dir
}

fn open(tree: &Path, index: &Path) -> (KernelSource, kflame_analyze::source::IndexStatus) {
    let (index, status) = SourceIndex::open(tree, index, 2).unwrap();
    (KernelSource { index, vmlinux: None }, status)
}

#[test]
fn definitions_callers_and_updates() {
    let t = tree();
    let idx = t.path().join("idx");
    let (src, status) = open(t.path(), &idx);
    assert_eq!(status.files, 3);
    assert_eq!(status.scanned, 3);
    assert!(status.rebuilt.is_some());

    let d = src.definitions("helper");
    assert_eq!((d[0].file.as_str(), d[0].start, d[0].end, d[0].kind), ("fs/read_write.c", 2, 5, "static"));
    let d = src.definitions("vfs_read");
    assert_eq!((d[0].file.as_str(), d[0].kind), ("include/linux/fs.h", "inline"));
    for name in ["__x64_sys_read", "__se_sys_read", "__do_sys_read", "sys_read"] {
        let d = src.definitions(name);
        assert_eq!((d[0].start, d[0].end, d[0].kind), (12, 15, "syscall"), "{name}");
    }
    assert_eq!(src.definitions("bpf_map_lookup_elem")[0].kind, "macro_defined");
    assert_eq!(src.definitions("file_count")[0].kind, "define");
    assert_eq!(src.definitions("ksys_read.isra.0")[0].start, 7);
    assert!(src.definitions("nonexistent").is_empty());
    let text = src.text("fs/read_write.c", 2, 5).unwrap();
    assert!(text.starts_with("static ssize_t helper(int fd)\n"));

    let callers: Vec<String> = src.callers("ksys_read").into_iter().map(|c| c.function).collect();
    assert_eq!(callers, ["__x64_sys_read"]);
    let callers: Vec<String> = src.callers("helper").into_iter().map(|c| c.function).collect();
    assert_eq!(callers, ["ksys_read"]);

    // Unchanged: read back, nothing rescanned, nothing written.
    let (_, status) = open(t.path(), &idx);
    assert_eq!((status.scanned, status.removed, status.rebuilt.clone(), status.written), (0, 0, None, false));

    // One file changed (size differs), one removed, one added.
    write(
        t.path(),
        "include/linux/fs.h",
        "static inline int vfs_read(int fd, int x)\n{\n\treturn fd + x;\n}\n",
    );
    fs::remove_file(t.path().join("kernel/bpf/helpers.c")).unwrap();
    write(t.path(), "mm/slab.c", "void *kmalloc(int n)\n{\n\treturn alloc(n);\n}\n");
    let (src, status) = open(t.path(), &idx);
    assert_eq!((status.scanned, status.removed, status.rebuilt.is_none()), (2, 1, true));
    assert!(src.definitions("bpf_map_lookup_elem").is_empty());
    assert!(src.definitions("file_count").is_empty());
    assert_eq!(src.definitions("kmalloc")[0].file, "mm/slab.c");
}

#[test]
fn a_damaged_index_is_rebuilt() {
    let t = tree();
    let idx = t.path().join("idx");
    open(t.path(), &idx);
    let mut bytes = fs::read(&idx).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x55;
    fs::write(&idx, &bytes).unwrap();
    let (src, status) = open(t.path(), &idx);
    assert!(status.rebuilt.as_deref().unwrap().contains("checksum"), "{:?}", status.rebuilt);
    assert_eq!(src.definitions("helper").len(), 1);
    // Cut short, and garbage.
    fs::write(&idx, &bytes[..n / 2]).unwrap();
    assert!(open(t.path(), &idx).1.rebuilt.is_some());
    fs::write(&idx, b"not an index").unwrap();
    assert!(open(t.path(), &idx).1.rebuilt.as_deref().unwrap().contains("not a kflame source index"));
    assert_eq!(open(t.path(), &idx).1.rebuilt, None);
}

#[test]
fn missing_empty_and_foreign_trees_are_errors() {
    let t = tempfile::tempdir().unwrap();
    let idx = t.path().join("idx");
    let missing = SourceIndex::open(&t.path().join("nope"), &idx, 1).unwrap_err().to_string();
    assert!(missing.contains("nope"), "{missing}");
    let empty = t.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let e = SourceIndex::open(&empty, &idx, 1).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    let other = t.path().join("other");
    write(&other, "Makefile", "all:\n\techo hi\n");
    let e = SourceIndex::open(&other, &idx, 1).unwrap_err().to_string();
    assert!(e.contains("not a kernel source tree"), "{e}");
}

/// `func+off/size` → source line through the DWARF of a small ELF built for the test; the
/// expected lines are what GNU addr2line printed for the same addresses (`expected.txt`).
#[test]
fn frames_resolve_to_the_lines_addr2line_gives() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vmlinux");
    let v = kflame_analyze::source::Vmlinux::open(&dir.join("tiny.elf")).unwrap();
    let expected = fs::read_to_string(dir.join("expected.txt")).unwrap();
    let mut checked = 0;
    for line in expected.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (func, off) = cols[0].split_once('+').unwrap();
        let got = v.locate(func, off).unwrap().unwrap_or_else(|| panic!("{} not resolved", cols[0]));
        assert_eq!(got.address, cols[1], "{}", cols[0]);
        // Innermost first, as addr2line -i prints it.
        let (_, first) = cols[2].split_once(' ').unwrap();
        let (file, line_no) = first.rsplit_once(':').unwrap();
        assert_eq!(
            (got.file.trim_start_matches("./").trim_start_matches("./"), got.line),
            (file.trim_start_matches("././"), line_no.parse().unwrap()),
            "{}",
            cols[0]
        );
        if cols.len() > 3 {
            let chain: Vec<String> =
                cols[2..].iter().map(|c| c.replace(' ', " (").replace("././", "") + ")").collect();
            let got_chain: Vec<String> =
                got.inlined.iter().map(|c| c.replace("././", "").replace("./", "")).collect();
            assert_eq!(got_chain, chain, "{}", cols[0]);
        }
        checked += 1;
    }
    assert_eq!(checked, 2);
    // A size that matches no symbol of that name, an unknown name: no line, no error.
    assert_eq!(v.locate("caller", "0x9/0x99").unwrap(), None);
    assert_eq!(v.locate("nonexistent", "0x1/0x2").unwrap(), None);
    // Not an ELF file: a clear error naming it.
    let e = kflame_analyze::source::Vmlinux::open(&dir.join("tiny.c")).unwrap_err().to_string();
    assert!(e.contains("tiny.c") && e.contains("not an ELF"), "{e}");
}

/// A report analysed against a tree with a `MAINTAINERS` file (written for the test in the
/// file's format): the file to blame, its sections most specific first, and the summary
/// that names who to tell; without the file, a note says so.
#[test]
fn maintainers_of_the_blamed_file() {
    use kflame::report::ReportExtractor;
    use kflame_analyze::ReportAnalyzer;

    let t = tree();
    write(
        t.path(),
        "MAINTAINERS",
        "List of maintainers\n===================\n\n\
         FILESYSTEMS (VFS and infrastructure)\nM:\tA Maintainer <a@example.org>\nL:\tfsdevel@example.org\n\
         S:\tMaintained\nF:\tfs/*\nX:\tfs/ext4/\n\n\
         THE REST\nM:\tB Maintainer <b@example.org>\nL:\tkernel@example.org\nS:\tBuried alive\nF:\t*\nF:\t*/\n",
    );
    let log = "\
BUG: KASAN: use-after-free in helper+0x1/0x2 fs/read_write.c:4
Call Trace:
 dump_stack_lvl+0x1/0x2 lib/dump_stack.c:106
 kasan_report+0x1/0x2 mm/kasan/report.c:400
 helper+0x1/0x2 fs/read_write.c:4
 ksys_read+0x1/0x2 fs/read_write.c:9
";
    let analyse = |tree: &Path| {
        let idx = tempfile::tempdir().unwrap();
        let (src, _) = open(tree, &idx.path().join("i"));
        let mut a = ReportAnalyzer::new();
        for r in ReportExtractor::extract_all(log.as_bytes()) {
            a.add_report("test.log", &r);
        }
        a.finish(Some(&src), None, 5).remove(0)
    };
    let g = analyse(t.path());
    assert_eq!(g.error.blame.as_ref().map(|b| b.file.as_str()), Some("fs/read_write.c"));
    let names: Vec<&str> = g.resolution.maintainers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["FILESYSTEMS (VFS and infrastructure)", "THE REST"]);
    assert_eq!(g.resolution.maintainers[0].maintainers, ["A Maintainer <a@example.org>"]);
    assert!(g.summary.iter().any(|s| s.contains("A Maintainer, fsdevel@example.org")), "{:?}", g.summary);
    fs::remove_file(t.path().join("MAINTAINERS")).unwrap();
    let g = analyse(t.path());
    assert!(g.resolution.maintainers.is_empty());
    assert!(g.resolution.notes.iter().any(|n| n.contains("no MAINTAINERS")), "{:?}", g.resolution.notes);
}
