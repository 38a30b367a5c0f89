//! Live tests: a full file system (a small tmpfs mounted here, as root). The writer gets a
//! distinct `DiskFull` error, keeps its database usable, frees space by its disk budget and
//! stores again.

use std::path::{Path, PathBuf};
use std::process::Command;

use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{Bucket, Kind, OpenMode, Policy, ProfileQuery, Query, Sample, Sqlite, Store};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A tmpfs of 8 MiB of its own (`name`: tests run in parallel).
fn mount_small_tmpfs(name: &str) -> Option<Mount> {
    let dir = std::env::temp_dir().join(format!("kflame-store-full-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    Some(Mount(dir))
}

fn bucket_stacks(i: i64) -> Vec<Vec<u8>> {
    // Distinct stacks per bucket, so that every bucket needs new pages.
    (0..200).map(|k| format!("worker;run;step{};leaf{}", i, k).into_bytes()).collect()
}

fn append(db: &mut Sqlite, i: i64) -> Result<(), kflame_store::StoreError> {
    let stacks = bucket_stacks(i);
    let meta = Meta::with_unit(Unit::Samples);
    let samples: Vec<Sample<'_>> = stacks
        .iter()
        .enumerate()
        .map(|(k, s)| Sample {
            time_ns: T0 + i * 10 * SEC + k as i64 * 1_000_000,
            cpu: (k % 2) as u32,
            cgroup: None,
            stack: s,
            weight: Weight::ONE,
        })
        .collect();
    db.append_bucket(&Bucket {
        host: "h",
        kind: Kind::Cpu,
        start_ns: T0 + i * 10 * SEC,
        end_ns: T0 + (i + 1) * 10 * SEC,
        capture: None,
        meta: &meta,
        samples: &samples,
        aggregated: &[],
    })
}

fn fill_until_full(path: &Path) {
    let mut db = Sqlite::open(path, OpenMode::Write).unwrap();
    let mut i = 0;
    let err = loop {
        match append(&mut db, i) {
            Ok(()) => i += 1,
            Err(e) => break e,
        }
        assert!(i < 100_000, "the file system never filled");
    };
    assert!(err.is_disk_full(), "expected disk full, got: {err}");
    assert!(err.to_string().contains(&path.display().to_string()));
    // The failed bucket left nothing behind; what was stored before is intact.
    let p = db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + (i + 1) * 10 * SEC)).unwrap();
    assert_eq!(p.stacks.total(), Weight::from_u64(200 * i as u64));
    // Free by the disk budget, then store again.
    let budget = db.used_bytes().unwrap() / 2;
    let m = db.maintain(&Policy { max_bytes: Some(budget), ..Policy::new(T0 + i * 10 * SEC) }).unwrap();
    assert!(m.budget_rows > 0);
    append(&mut db, i).unwrap();
    append(&mut db, i + 1).unwrap();
}

#[test]
#[allow(clippy::print_stderr)] // says why it skipped
fn live_disk_full_is_reported_and_recovered_from() {
    let Some(m) = mount_small_tmpfs("buckets") else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    fill_until_full(&m.0.join("history.db"));
}

#[test]
#[allow(clippy::print_stderr)] // says why it skipped
fn live_metric_values_wait_in_memory_while_the_disk_is_full() {
    let Some(m) = mount_small_tmpfs("metrics") else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let path = m.0.join("history.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    // Blocks of one second, as a watcher of 1 s buckets writes them.
    db.set_metric_block(SEC);
    let labels: Vec<String> = (0..40).map(|i| format!("dev{i}")).collect();
    // From the 5th second on, a series more, first seen while the disk is full: its row
    // cannot be made until there is room, and its values wait too.
    let values = |s: i64| -> Vec<kflame_store::Metric<'_>> {
        let mut v: Vec<kflame_store::Metric<'_>> = labels
            .iter()
            .enumerate()
            .map(|(k, l)| kflame_store::Metric {
                name: "io.util",
                label: l,
                value: ((s * 7 + k as i64) % 1000) as f64 / 10.0,
            })
            .collect();
        if s >= 5 {
            v.push(kflame_store::Metric { name: "load1", label: "", value: s as f64 * 0.25 });
        }
        v
    };
    let base = T0 + 100_000 * 10 * SEC;
    for s in 0..5 {
        db.append_metrics("h", base + s * SEC, &values(s)).unwrap();
    }
    // Fill the file system with buckets (each needs new pages), to the last page.
    let mut i = 0;
    while append(&mut db, i).is_ok() {
        i += 1;
        assert!(i < 100_000, "the file system never filled");
    }
    let mut filler = Vec::new();
    for k in 0.. {
        let f = m.0.join(format!("filler{k}"));
        if std::fs::write(&f, [0u8; 4096]).is_err() {
            break;
        }
        filler.push(f);
    }
    // Metric values go on coming: each append either stores or says the disk is full, and
    // what it could not write waits.
    let mut full = 0;
    for s in 5..40 {
        match db.append_metrics("h", base + s * SEC, &values(s)) {
            Ok(()) => {}
            Err(e) if e.is_disk_full() => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(full > 0, "no metric write found the disk full");
    // Room again (the disk budget deletes the oldest buckets): the waiting values are
    // written by the next append, and none is missing.
    for f in filler {
        std::fs::remove_file(f).unwrap();
    }
    let budget = db.used_bytes().unwrap() / 2;
    db.maintain(&Policy { max_bytes: Some(budget), ..Policy::new(base) }).unwrap();
    for s in 40..45 {
        db.append_metrics("h", base + s * SEC, &values(s)).unwrap();
    }
    db.flush().unwrap();
    let q = kflame_store::SeriesQuery {
        name: "io.util",
        label: None,
        host: Some("h"),
        from_ns: base,
        to_ns: base + 3600 * SEC,
        points: None,
    };
    let load = db.series(&kflame_store::SeriesQuery { name: "load1", ..q }).unwrap();
    let load: Vec<(i64, f64)> = load[0].points.iter().map(|p| ((p.time_ns - base) / SEC, p.avg)).collect();
    assert_eq!(load, (5..45).map(|s| (s, s as f64 * 0.25)).collect::<Vec<_>>());
    let got = db.series(&q).unwrap();
    assert_eq!(got.len(), labels.len());
    for (k, s) in got.iter().enumerate() {
        let times: Vec<i64> = s.points.iter().map(|p| (p.time_ns - base) / SEC).collect();
        assert_eq!(times, (0..45).collect::<Vec<_>>(), "{}", s.label);
        let k = labels.iter().position(|l| *l == s.label).unwrap_or(k) as i64;
        for p in &s.points {
            let sec = (p.time_ns - base) / SEC;
            assert_eq!(p.avg, ((sec * 7 + k) % 1000) as f64 / 10.0);
        }
    }
}
