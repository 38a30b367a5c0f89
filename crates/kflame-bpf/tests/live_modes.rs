//! Live tests (root, a kernel that loads raw-tracepoint BPF programs) of the waiting-time
//! programs: threads contending for their mmap lock show up under their tids with the rwsem
//! and an mmap stack; threads pinned to one CPU wait on its run queue; `dd` writing with
//! O_DIRECT waits on the disk of its file; and nothing is left loaded after each loader is gone.

#![allow(unsafe_code)] // mmap, munmap and sched_setaffinity, to make the waits measured

use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

mod common;

use common::{Kallsyms, gettid, leaves_nothing};
use kflame::latency::Histogram;
use kflame_bpf::{Bio, Locks, Runq, WaitOptions, Waited, device_name, device_numbers, lock_kind};

/// The tests of this file one at a time: each counts the programs it loaded, and the run-queue
/// one needs the CPU to itself.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Drains with `drain` until `want` holds for what was gathered, at most `limit`.
fn gather<D>(
    mut drain: impl FnMut() -> D,
    mut into: impl FnMut(&mut Vec<Waited>, D),
    limit: Duration,
    want: impl Fn(&[Waited]) -> bool,
) -> Vec<Waited> {
    let end = Instant::now() + limit;
    let mut all = Vec::new();
    while Instant::now() < end {
        into(&mut all, drain());
        if want(&all) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    all
}

/// Maps, touches and unmaps 64 KiB until `until`.
fn map_unmap_until(until: Instant) {
    const LEN: usize = 64 << 10;
    while Instant::now() < until {
        for _ in 0..64 {
            // SAFETY: a fresh private anonymous mapping, written within its length, unmapped
            // once; no reference to it outlives this block.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    LEN,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                p.cast::<u8>().write_volatile(1);
                libc::munmap(p, LEN);
            }
        }
    }
}

#[test]
fn threads_mapping_memory_wait_on_their_mmap_lock() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let mut p = Locks::start(&WaitOptions { pid: Some(pid), ..WaitOptions::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = mpsc::channel();
    let go = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let tx = tx.clone();
            let go = Arc::clone(&go);
            std::thread::spawn(move || {
                tx.send(gettid()).unwrap();
                go.wait();
                map_unmap_until(Instant::now() + Duration::from_secs(1));
            })
        })
        .collect();
    let tids: Vec<u32> = (0..8).map(|_| rx.recv().unwrap()).collect();
    for t in threads {
        t.join().unwrap();
    }
    let kallsyms = Kallsyms::read();
    let rwsem_mmap = |w: &Waited| {
        tids.contains(&w.tid)
            && lock_kind(w.on).starts_with("rwsem")
            && kallsyms.names(&w.kernel).iter().any(|n| n.contains("mmap"))
    };
    let all = gather(
        || p.drain().unwrap(),
        |all, d| all.extend(d),
        Duration::from_secs(10),
        |w| w.iter().any(rwsem_mmap),
    );
    let mine: Vec<&Waited> = all.iter().filter(|w| tids.contains(&w.tid)).collect();
    let kinds: std::collections::BTreeSet<&str> = mine.iter().map(|w| lock_kind(w.on)).collect();
    let seen = all.iter().filter(|w| rwsem_mmap(w)).count();
    assert!(seen > 0, "no rwsem wait with an mmap stack among {} waits of kinds {kinds:?}", mine.len());
    let w = all.iter().find(|w| rwsem_mmap(w)).unwrap();
    assert_eq!(w.tgid, pid);
    assert!(w.ns > 0 && w.count > 0, "{w:?}");
    assert!(!w.user.is_empty(), "the user stack of a user thread");
    // Waits of several of the threads, each under its own tid.
    let waiting: std::collections::BTreeSet<u32> =
        all.iter().filter(|w| rwsem_mmap(w)).map(|w| w.tid).collect();
    assert!(waiting.len() >= 2, "waits of {waiting:?} only, of {tids:?}");
    let lost = p.lost().unwrap();
    assert_eq!((lost.waits, lost.starts), (0, 0), "{lost:?}");
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes within it; the call reads it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(rc, 0, "sched_setaffinity: {}", std::io::Error::last_os_error());
}

#[test]
fn threads_sharing_one_cpu_wait_on_its_run_queue() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let mut p = Runq::start(&WaitOptions { pid: Some(pid), ..WaitOptions::default() })
        .unwrap_or_else(|e| panic!("{e}"));
    const SPIN: Duration = Duration::from_millis(500);
    let (tx, rx) = mpsc::channel();
    let go = Arc::new(Barrier::new(3));
    let started = Instant::now();
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let tx = tx.clone();
            let go = Arc::clone(&go);
            std::thread::spawn(move || {
                pin_to(0);
                tx.send(gettid()).unwrap();
                go.wait();
                let end = Instant::now() + SPIN;
                let mut n = 0u64;
                while Instant::now() < end {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            })
        })
        .collect();
    let tids: Vec<u32> = (0..3).map(|_| rx.recv().unwrap()).collect();
    for t in threads {
        t.join().unwrap();
    }
    let wall = started.elapsed();
    let mut cpu0 = Histogram::default();
    let on_cpu0 = |all: &[Waited], tid: u32| -> u64 {
        all.iter().filter(|w| w.tid == tid && w.on == 0).map(|w| w.ns).sum()
    };
    // Three threads on one CPU for SPIN: each waits about two thirds of it; a quarter at least.
    let enough = |all: &[Waited]| tids.iter().all(|&t| on_cpu0(all, t) >= SPIN.as_nanos() as u64 / 4);
    let all = gather(
        || (p.drain().unwrap(), p.histograms()),
        |all, (waited, histograms)| {
            all.extend(waited);
            for h in histograms.iter().filter(|h| h.label == 0) {
                cpu0.add(&h.histogram);
            }
        },
        Duration::from_secs(10),
        enough,
    );
    let per_thread: Vec<(u32, u64)> = tids.iter().map(|&t| (t, on_cpu0(&all, t))).collect();
    assert!(
        enough(&all),
        "run-queue ns on CPU 0 of each thread, of {} ns spun: {per_thread:?}",
        SPIN.as_nanos()
    );
    // A thread cannot have waited longer than it lived.
    for &t in &tids {
        let ns: u64 = all.iter().filter(|w| w.tid == t).map(|w| w.ns).sum();
        assert!(ns <= wall.as_nanos() as u64, "thread {t} waited {ns} ns in {wall:?}");
    }
    let w = all.iter().find(|w| w.tid == tids[0] && w.on == 0).unwrap();
    assert_eq!(w.tgid, pid);
    assert!(w.count > 0);
    // The histogram counts the same waits as the records (this process's, on CPU 0).
    let waits_on_cpu0: u64 = all.iter().filter(|w| w.on == 0).map(|w| w.count).sum();
    assert!(cpu0.total() > 0, "the CPU 0 histogram: {cpu0:?}");
    assert_eq!(cpu0.total(), waits_on_cpu0, "the CPU 0 histogram: {cpu0:?}");
    let ns_on_cpu0: u64 = all.iter().filter(|w| w.on == 0).map(|w| w.ns).sum();
    assert_eq!(cpu0.sum_ns, ns_on_cpu0, "the CPU 0 histogram's sum");
    let lost = p.lost().unwrap();
    assert_eq!((lost.waits, lost.starts), (0, 0), "{lost:?}");
}

/// Major and minor of a `st_dev` (glibc's encoding).
fn major_minor(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The whole disk of the block device `major:minor` (itself, or the disk of a partition).
fn whole_disk(major: u32, minor: u32) -> (u32, u32) {
    let sys = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.join("partition").exists() {
        return (major, minor);
    }
    let disk = std::fs::canonicalize(&sys).unwrap().parent().unwrap().join("dev");
    let text = std::fs::read_to_string(&disk).unwrap();
    let (a, b) = text.trim().split_once(':').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

#[test]
fn direct_writes_wait_on_the_disk_of_their_file() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // A directory on a block device: the temporary one, else one under /var/tmp or /.
    let base = [std::env::temp_dir(), "/var/tmp".into(), "/".into()]
        .into_iter()
        .find(|d| d.metadata().is_ok_and(|m| major_minor(m.dev()).0 != 0))
        .expect("a directory on a block device");
    let dir = base.join(format!("kflame-bio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("written");
    let (major, minor) = major_minor(dir.metadata().unwrap().dev());
    let disk = whole_disk(major, minor);
    let mut p = Bio::start(&WaitOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let child = std::process::Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", file.display()))
        .args(["bs=4k", "count=2000", "oflag=direct", "status=none"])
        .spawn()
        .expect("dd");
    let dd = child.id();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "dd: {:?}", out.status);
    let of_dd = |w: &Waited| w.tgid == dd && w.comm == b"dd";
    // dd waited for each write to complete, so its IOs are all summed by now: all of them but
    // any that a request of another task merged (counted under that request's submitter).
    let most = 2000 * 9 / 10;
    let all = gather(
        || p.drain().unwrap(),
        |all, d| all.extend(d),
        Duration::from_secs(10),
        |w| w.iter().filter(|w| of_dd(w)).map(|w| w.count).sum::<u64>() >= most,
    );
    let mine: Vec<&Waited> = all.iter().filter(|w| of_dd(w)).collect();
    let count: u64 = mine.iter().map(|w| w.count).sum();
    let devices: std::collections::BTreeSet<(u32, u32)> = mine.iter().map(|w| device_numbers(w.on)).collect();
    let others: Vec<(u32, u32, String, u32, u64)> = all
        .iter()
        .filter(|w| !of_dd(w))
        .map(|w| (w.tgid, w.tid, String::from_utf8_lossy(&w.comm).into_owned(), w.on, w.count))
        .collect();
    assert!(count >= most, "{count} IOs of dd seen, on {devices:?}; other IOs: {others:?}");
    assert_eq!(devices, [disk].into(), "dd's IOs on the disk of {} ({major}:{minor})", dir.display());
    let w = mine.iter().max_by_key(|w| w.count).unwrap();
    assert!(w.ns > 0, "{w:?}");
    let names = Kallsyms::read().names(&w.kernel);
    assert!(names.iter().any(|n| n.contains("submit_bio")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("write")), "{names:?}");
    assert!(!w.user.is_empty(), "dd's user stack");
    let name = device_name(w.on).expect("a name in /sys/dev/block");
    assert!(!name.is_empty() && !name.contains('/'), "{name:?}");
    let lost = p.lost().unwrap();
    assert_eq!((lost.waits, lost.starts), (0, 0), "{lost:?}");
}

/// The watcher's always-on IO latency (histograms only) keeps each slow IO as an outlier with
/// its submitter's stacks, taken within a budget of walks per CPU and generation (a drain, a
/// second in the watcher): with every IO slow, dd's outliers have `submit_bio` stacks up to
/// the budget, and none without one.
/// Whether process `pid` is stopped (state `T` in its stat), `None` when it is gone.
fn stopped(pid: u32) -> Option<bool> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat[stat.rfind(')')? + 1..].trim_start().starts_with('T'))
}

#[test]
fn histograms_only_io_outliers_have_stacks_within_the_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let base = [std::env::temp_dir(), "/var/tmp".into(), "/".into()]
        .into_iter()
        .find(|d| d.metadata().is_ok_and(|m| major_minor(m.dev()).0 != 0))
        .expect("a directory on a block device");
    let dir = base.join(format!("kflame-bio-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("written");
    let mut with_stacks = 0;
    for walks in [0u32, 16] {
        let opts = WaitOptions {
            histograms_only: true,
            slow_ns: 1,
            max_outliers: 10_000,
            stack_walks_per_sec: walks,
            ..WaitOptions::default()
        };
        // dd, stopped before it starts: the program follows it alone, so that no other IO of
        // the machine (writeback of a build, the journal) takes its walks or its ring.
        let dd_cmd = format!(
            "kill -STOP $$; exec dd if=/dev/zero of={} bs=4k count=200 oflag=direct status=none",
            file.display()
        );
        let child = std::process::Command::new("sh").args(["-c", &dd_cmd]).spawn().expect("dd");
        let dd = child.id();
        let end = Instant::now() + Duration::from_secs(10);
        while stopped(dd) != Some(true) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(stopped(dd), Some(true), "dd's shell stops itself");
        let mut p = Bio::start(&WaitOptions { pid: Some(dd), ..opts }).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            std::process::Command::new("kill").args(["-CONT", &dd.to_string()]).status().unwrap().success()
        );
        assert!(child.wait_with_output().unwrap().status.success());
        let mut outliers = Vec::new();
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end
            && outliers.iter().filter(|o: &&kflame_bpf::WaitOutlier| o.tgid == dd).count() < 180
        {
            assert!(p.drain().unwrap().is_empty(), "no wait summed per task");
            outliers.extend(p.outliers());
            std::thread::sleep(Duration::from_millis(50));
        }
        let of_dd: Vec<&kflame_bpf::WaitOutlier> = outliers.iter().filter(|o| o.tgid == dd).collect();
        assert!(of_dd.len() >= 180, "{} outliers of dd's 200 IOs", of_dd.len());
        let stacked: Vec<&&kflame_bpf::WaitOutlier> = of_dd.iter().filter(|o| !o.kernel.is_empty()).collect();
        if walks == 0 {
            assert!(stacked.is_empty(), "{} outliers with stacks without walks", stacked.len());
            continue;
        }
        // No drain ran while dd did (the loop starts after it): one generation, so at most 16
        // walks on each CPU.
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(!stacked.is_empty(), "no outlier of dd with its stacks");
        let kallsyms = Kallsyms::read();
        for o in &stacked {
            let names = kallsyms.names(&o.kernel);
            assert!(names.iter().any(|n| n.contains("submit_bio")), "{names:?}");
            assert!(!o.user.is_empty(), "dd's user stack");
        }
        with_stacks = stacked.len();
        assert!(
            with_stacks <= 16 * cpus,
            "{with_stacks} outliers with stacks: over 16 walks on each of {cpus} CPUs"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(with_stacks > 0);
}

#[test]
fn nothing_stays_loaded_after_each_loader_is_dropped() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let opts = WaitOptions::default();
    leaves_nothing(|| Locks::start(&opts).unwrap_or_else(|e| panic!("{e}")), 2);
    leaves_nothing(|| Runq::start(&opts).unwrap_or_else(|e| panic!("{e}")), 4);
    leaves_nothing(|| Bio::start(&opts).unwrap_or_else(|e| panic!("{e}")), 5);
}
