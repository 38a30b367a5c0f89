//! Live tests: a full file system (a small tmpfs mounted here, as root). The writer gets a
//! distinct `DiskFull` error, keeps its database usable, frees space by its disk budget and
//! stores again.

use std::path::{Path, PathBuf};
use std::process::Command;

use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{
    Bucket, Kind, Metric, OpenMode, Policy, ProfileQuery, Query, Sample, SeriesQuery, Sqlite, Store,
};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn mount_small_tmpfs(name: &str) -> Option<Mount> {
    let dir = std::env::temp_dir().join(format!("kflame-store-full-{}-{name}", std::process::id()));
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
            pid: 1,
            tid: 1,
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

/// Fills what the file system has left with a file of its own.
fn fill_rest(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    let _ = f.sync_all();
}

#[test]
#[allow(clippy::print_stderr)] // says why it skipped
fn live_metric_values_of_new_series_wait_while_the_disk_is_full() {
    let Some(m) = mount_small_tmpfs("metrics") else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let path = m.0.join("history.db");
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    db.set_metric_block(10 * SEC);
    let mut i = 0;
    while append(&mut db, i).is_ok() {
        i += 1;
        assert!(i < 100_000, "the file system never filled");
    }
    fill_rest(&m.0.join("filler"));
    // A series the database has never seen: its row cannot be made, the values wait.
    let t0 = T0 + (i + 1) * 10 * SEC;
    let mut want = Vec::new();
    for k in 0..30i64 {
        let t = t0 + k * SEC;
        let v = 100.0 * (k * 7 % 101) as f64 / 101.0;
        want.push((t, v));
        let e = db.append_metrics("h", t, &[Metric { name: "io.util", label: "sdz", value: v }]).unwrap_err();
        assert!(e.is_disk_full(), "{e}");
        assert!(e.to_string().contains("wait in memory"), "{e}");
        assert_eq!(db.unwritten_metric_values(), (k as u64 + 1, 0));
    }
    // Room again (the disk budget deletes old buckets): the next write stores what waited,
    // in order, exactly.
    std::fs::remove_file(m.0.join("filler")).unwrap();
    let budget = db.used_bytes().unwrap() / 2;
    db.maintain(&Policy { max_bytes: Some(budget), ..Policy::new(t0) }).unwrap();
    let t = t0 + 30 * SEC;
    want.push((t, 12.5));
    db.append_metrics("h", t, &[Metric { name: "io.util", label: "sdz", value: 12.5 }]).unwrap();
    db.flush().unwrap();
    assert_eq!(db.unwritten_metric_values(), (0, 0));
    let q = SeriesQuery {
        name: "io.util",
        label: Some("sdz"),
        host: None,
        from_ns: t0,
        to_ns: t + 1,
        points: None,
    };
    let got: Vec<(i64, f64)> =
        db.series(&q).unwrap().remove(0).points.iter().map(|p| (p.time_ns, p.avg)).collect();
    assert_eq!(got, want);
}
