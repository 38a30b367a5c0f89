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

fn mount_small_tmpfs() -> Option<Mount> {
    let dir = std::env::temp_dir().join(format!("kflame-store-full-{}", std::process::id()));
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
    let Some(m) = mount_small_tmpfs() else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    fill_until_full(&m.0.join("history.db"));
}
