//! Format detection on text that one format owns: no other format may claim it on the
//! strength of a few lines that happen to look like its records. A wrong guess is the worst
//! outcome of detection: it turns a kernel log into a "profile" of garbage, with exit 0.
//!
//! The inputs are the real kernel logs of the test data (`data/kernel-log/`), as they are and
//! as `dmesg -t` would print them (log prefixes cut), and kmemleak reports in the layout of
//! `print_unreferenced()` (mm/kmemleak.c), which a hex dump row can make look like a
//! `perf script` sample.

use std::path::{Path, PathBuf};

use kflame::collapse::{Format, detect};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel-log")
}

/// Every file of the kernel-log test data that holds a kernel log (not READMEs or lists).
fn kernel_logs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![data()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("test data folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if name.ends_with(".md")
                || name.ends_with(".txt") && name.contains("misses")
                || name.starts_with("COPYING")
            {
                continue;
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The head detection sees: the first 64 KiB, cut at a line's end.
fn head(bytes: &[u8]) -> &[u8] {
    let h = &bytes[..bytes.len().min(64 * 1024)];
    match memchr::memrchr(b'\n', h) {
        Some(i) if h.len() < bytes.len() => &h[..=i],
        _ => h,
    }
}

/// `[  12.345678] text` → `text`, as `dmesg -t` prints it; other lines unchanged.
fn without_timestamps(log: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(log.len());
    for line in log.split_inclusive(|&b| b == b'\n') {
        let cut = (line.first() == Some(&b'['))
            .then(|| memchr::memchr(b']', line))
            .flatten()
            .filter(|&i| line[1..i].iter().all(|b| b.is_ascii_digit() || *b == b'.' || *b == b' '));
        match cut {
            Some(i) => out.extend_from_slice(line[i + 1..].strip_prefix(b" ").unwrap_or(&line[i + 1..])),
            None => out.extend_from_slice(line),
        }
    }
    out
}

#[test]
fn kernel_logs_are_never_taken_for_another_format() {
    let logs = kernel_logs();
    assert!(logs.len() > 100, "only {} kernel logs found", logs.len());
    let mut wrong = Vec::new();
    for p in &logs {
        let bytes = std::fs::read(p).expect("reading a kernel log");
        for (how, text) in [("as it is", bytes.clone()), ("without timestamps", without_timestamps(&bytes))] {
            if let Some(f) = detect(head(&text))
                && f != Format::KernelLog
            {
                wrong.push(format!("{} ({how}): {f}", p.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{} kernel logs taken for another format:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn a_boot_log_without_timestamps_is_a_kernel_log() {
    let log = std::fs::read(data().join("captures/dmesg-full.txt")).expect("dmesg capture");
    let plain = without_timestamps(&log);
    assert!(plain.starts_with(b"Linux version "), "the capture opens with the banner");
    assert_eq!(detect(head(&plain)), Some(Format::KernelLog));
}

/// One kmemleak report as `print_unreferenced()` prints it (kernel 6.x: `backtrace (crc
/// %x):`, frames `[<%pK>] %pS`; older kernels: `backtrace:`), with hex dump rows of the
/// object's bytes (`hex_dump_to_buffer`: 16 bytes, two spaces, the ASCII column).
fn kmemleak(objects: &[&[u8; 32]], old: bool) -> Vec<u8> {
    let mut s = String::new();
    for (n, bytes) in objects.iter().enumerate() {
        s += &format!("unreferenced object 0xffff88810a5c{:04x} (size 32):\n", n * 0x40);
        s += &format!("  comm \"a.out\", pid {}, jiffies {}\n", 2112 + n, 4_295_130_404u64 + n as u64);
        s += "  hex dump (first 32 bytes):\n";
        for row in bytes.chunks(16) {
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            let ascii: String =
                row.iter().map(|&b| if (0x20..0x7f).contains(&b) { b as char } else { '.' }).collect();
            s += &format!("    {}  {}\n", hex.join(" "), ascii);
        }
        s += if old { "  backtrace:\n" } else { "  backtrace (crc 5ab8f2f1):\n" };
        for (addr, f) in [
            ("ffffffff8134b3a5", "__kmalloc_cache_noprof+0x2b5/0x340"),
            ("ffffffffc0a1b04d", "leaky_open+0x1d/0x40 [leaky]"),
            ("ffffffff813c7a3f", "do_dentry_open+0x1df/0x4b0"),
            ("ffffffff813e2f91", "path_openat+0xb21/0xd80"),
            ("ffffffff81bfc6a9", "do_syscall_64+0x79/0x180"),
            ("ffffffff81e0012f", "entry_SYSCALL_64_after_hwframe+0x76/0x7e"),
        ] {
            s += &format!("    [<{addr}>] {f}\n");
        }
    }
    s.into_bytes()
}

#[test]
fn kmemleak_reports_are_kernel_reports() {
    // Rows that read as a `perf script` sample: the first's ASCII column holds a number and
    // ends in `:` (`task 42 blocked:`: comm, tid, event), the second starts with a byte
    // that is a hex "address" (`30 31 ...`: a bare frame).
    let tricky = *b"task 42 blocked:0123456789abcdef";
    let plain = [0x6bu8; 32];
    for old in [false, true] {
        for objects in [vec![&tricky], vec![&tricky, &plain], vec![&plain]] {
            let report = kmemleak(&objects, old);
            let mut dated = b"Sat Nov 28 20:11:02 UTC 2026\n".to_vec();
            dated.extend_from_slice(&report);
            let mut bug = b"BUG: memory leak\n".to_vec();
            bug.extend_from_slice(&report);
            for text in [&report, &dated, &bug] {
                assert_eq!(
                    detect(text),
                    Some(Format::KernelLog),
                    "not read as a kernel log:\n{}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }
}
