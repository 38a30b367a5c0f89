//! Stacks and frame names stored in chunks (schema 5): many stacks and odd frame names come
//! back as written, ids stay stable across writers, deletions and the migration from schema
//! 3, a failed transaction leaves no trace, and damaged chunks are errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kflame::events::{EventKind, EventRecord, Frames};
use kflame::fold::{Meta, Unit, Weight};
use kflame_store::{
    Bucket, CaptureStart, Kind, OpenMode, Policy, ProfileQuery, Query, SCHEMA_VERSION, Sample, Sqlite,
    StackId, Store, StoreError,
};

const T0: i64 = 1_764_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-store-chunks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `n` distinct stacks from `from`: shared prefixes, frames of invalid UTF-8, NUL, spaces,
/// control bytes, empty frames, a name per stack (so the frames fill several chunks too).
fn stacks(from: usize, n: usize) -> Vec<Vec<u8>> {
    (from..from + n)
        .map(|i| {
            let mut frames: Vec<Vec<u8>> = vec![
                format!("comm-{}", i % 7).into_bytes(),
                b"entry_SYSCALL_64".to_vec(),
                format!("do_syscall_64+0x{:x}", i % 13).into_bytes(),
            ];
            match i % 5 {
                0 => frames.push(vec![0xff, 0xfe, b'x', (i % 251) as u8]),
                1 => frames.push(b"with space\0and nul\t\x01\x7f".to_vec()),
                2 => frames.push(Vec::new()),
                3 => frames.push("caf\u{e9} \u{1f525}".as_bytes().to_vec()),
                _ => {}
            }
            for d in 0..(i % 11) {
                frames.push(format!("depth_{d}_{}", i % 3).into_bytes());
            }
            frames.push(format!("leaf_{i}").into_bytes());
            if i % 17 == 0 {
                frames.push(Vec::new()); // a trailing empty frame: the text ends in ';'
            }
            frames.join(&b';')
        })
        .collect()
}

/// One bucket at `start` holding a sample of each stack (1 ms apart), with weight `w`.
fn append(db: &mut Sqlite, start: i64, stacks: &[Vec<u8>], w: u64) -> Result<(), StoreError> {
    let samples: Vec<Sample<'_>> = stacks
        .iter()
        .enumerate()
        .map(|(i, s)| Sample {
            time_ns: start + i as i64 * 1_000_000,
            cpu: (i % 2) as u32,
            cgroup: None,
            stack: s,
            weight: Weight::from_u64(w),
        })
        .collect();
    db.append_bucket(&Bucket {
        host: "h",
        kind: Kind::Cpu,
        start_ns: start,
        end_ns: start + 3600 * SEC,
        capture: None,
        meta: &Meta::with_unit(Unit::Samples),
        samples: &samples,
        aggregated: &[],
    })
}

/// The stack id of each sample of the bucket at `start`, in order.
fn ids(db: &Sqlite, start: i64) -> Vec<StackId> {
    db.samples(&ProfileQuery::new(Kind::Cpu, start, start + 3600 * SEC))
        .unwrap()
        .iter()
        .map(|p| p.stack)
        .collect()
}

fn profile(db: &Sqlite, from: i64, to: i64) -> BTreeMap<Vec<u8>, Weight> {
    let p = db.profile(&ProfileQuery::new(Kind::Cpu, from, to)).unwrap();
    p.stacks.in_output_order().into_iter().map(|(s, w)| (s.to_vec(), w)).collect()
}

fn want(stacks: &[Vec<u8>], w: u64) -> BTreeMap<Vec<u8>, Weight> {
    stacks.iter().map(|s| (s.clone(), Weight::from_u64(w))).collect()
}

/// Slots in the chunks (deleted ones included): one per id ever given.
fn slots(path: &Path) -> i64 {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row("SELECT coalesce(sum(count), 0) FROM stack_chunks", [], |r| r.get(0)).unwrap()
}

#[test]
fn many_stacks_and_odd_frames_round_trip() {
    let d = dir("many");
    let path = d.join("h.db");
    let all = stacks(0, 10_000);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    // Transactions of 700 new stacks: chunks filled across transactions, and some full.
    for (k, part) in all.chunks(700).enumerate() {
        append(&mut db, T0 + k as i64 * 3600 * SEC, part, 1).unwrap();
    }
    let end = T0 + 15 * 3600 * SEC;
    assert_eq!(profile(&db, T0, end), want(&all, 1));
    drop(db);
    assert_eq!(slots(&path), all.len() as i64);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    assert_eq!(profile(&db, T0, end), want(&all, 1));
    // By id: one, several in any order with repeats, and one each.
    let first: Vec<StackId> = ids(&db, T0);
    let distinct: BTreeSet<StackId> = first.iter().copied().collect();
    assert_eq!(distinct.len(), first.len());
    let texts = db.stack_texts(&first).unwrap();
    assert_eq!(texts, all[..first.len()]);
    let mixed = [first[5], first[0], first[5], first[699]];
    assert_eq!(db.stack_texts(&mixed).unwrap(), [&all[5], &all[0], &all[5], &all[699]].map(Clone::clone));
    assert_eq!(db.stack_text(first[3]).unwrap(), all[3]);
    let e = db.stack_text(StackId(1 << 40)).unwrap_err();
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
}

#[test]
fn a_new_writer_continues_the_ids() {
    let d = dir("reopen");
    let path = d.join("h.db");
    let all = stacks(0, 5000);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    append(&mut db, T0, &all[..3000], 1).unwrap();
    let before = ids(&db, T0);
    drop(db);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    // The old stacks again (found, not stored twice), then new ones.
    append(&mut db, T0 + 3600 * SEC, &all, 2).unwrap();
    let after = ids(&db, T0 + 3600 * SEC);
    assert_eq!(after[..3000], before[..]);
    let max_old = before.iter().map(|s| s.0).max().unwrap();
    assert!(after[3000..].iter().all(|s| s.0 > max_old));
    assert_eq!(after.iter().collect::<BTreeSet<_>>().len(), all.len());
    drop(db);
    assert_eq!(slots(&path), all.len() as i64);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let mut w = want(&all, 2);
    for s in &all[..3000] {
        *w.get_mut(s).unwrap() += Weight::from_u64(1);
    }
    assert_eq!(profile(&db, T0, T0 + 2 * 3600 * SEC), w);
}

#[test]
fn orphans_are_deleted_and_the_other_ids_stay() {
    let d = dir("orphans");
    let path = d.join("h.db");
    let old = stacks(0, 3000);
    let kept = stacks(3000, 6000);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    // The first bucket holds the old stacks and half the kept ones, the last the kept.
    let mut first = old.clone();
    first.extend_from_slice(&kept[..3000]);
    append(&mut db, T0, &first, 1).unwrap();
    append(&mut db, T0 + 3600 * SEC, &kept, 1).unwrap();
    let kept_ids = ids(&db, T0 + 3600 * SEC);
    let old_ids = ids(&db, T0)[..3000].to_vec();
    let m = db.maintain(&Policy { retain_ns: Some(3600 * SEC), ..Policy::new(T0 + 2 * 3600 * SEC) }).unwrap();
    assert_eq!(m.orphan_stacks, 3000);
    assert_eq!(ids(&db, T0 + 3600 * SEC), kept_ids);
    assert_eq!(db.stack_texts(&kept_ids).unwrap(), kept);
    assert_eq!(profile(&db, T0, T0 + 2 * 3600 * SEC), want(&kept, 1));
    assert!(matches!(db.stack_text(old_ids[0]), Err(StoreError::Corrupt { .. })));
    // Nothing left to delete; the old stacks written again get new ids.
    let m = db.maintain(&Policy { retain_ns: Some(3600 * SEC), ..Policy::new(T0 + 2 * 3600 * SEC) }).unwrap();
    assert_eq!(m.orphan_stacks, 0);
    append(&mut db, T0 + 2 * 3600 * SEC, &old, 1).unwrap();
    let again = ids(&db, T0 + 2 * 3600 * SEC);
    let max = kept_ids.iter().chain(&old_ids).map(|s| s.0).max().unwrap();
    assert!(again.iter().all(|s| s.0 > max));
    drop(db);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let mut w = want(&kept, 1);
    w.extend(want(&old, 1));
    assert_eq!(profile(&db, T0, T0 + 3 * 3600 * SEC), w);
    assert_eq!(db.stack_texts(&again).unwrap(), old);
    // Every bucket gone: every stack and frame deleted, the ids still not used again.
    drop(db);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    let m = db.maintain(&Policy { retain_ns: Some(SEC), ..Policy::new(T0 + 9 * 3600 * SEC) }).unwrap();
    assert_eq!(m.orphan_stacks, (kept.len() + old.len()) as u64);
    append(&mut db, T0 + 9 * 3600 * SEC, &old[..10], 1).unwrap();
    assert!(ids(&db, T0 + 9 * 3600 * SEC).iter().all(|s| s.0 > again.iter().map(|s| s.0).max().unwrap()));
    assert_eq!(profile(&db, T0, T0 + 10 * 3600 * SEC), want(&old[..10], 1));
}

#[test]
fn a_schema_3_file_is_migrated_with_its_ids() {
    let d = dir("v3");
    let path = d.join("h.db");
    let a = stacks(0, 1500);
    let b = stacks(1500, 1500);
    let frames = vec!["dd".to_string(), "write".to_string(), "\u{fffd}odd frame".to_string()];
    let h = 3600 * SEC;
    {
        let mut db = Sqlite::open_at_version(&path, 3).unwrap();
        assert_eq!(db.schema_version().unwrap(), 3);
        // Between the buckets kept, stacks of buckets deleted below: gaps in the ids, short
        // and long.
        append(&mut db, T0, &stacks(10_000, 200), 1).unwrap();
        append(&mut db, T0 + h, &a[..700], 1).unwrap();
        append(&mut db, T0 + 2 * h, &stacks(20_000, 30), 1).unwrap();
        append(&mut db, T0 + 3 * h, &a[700..], 1).unwrap();
        append(&mut db, T0 + 4 * h, &stacks(30_000, 100), 1).unwrap();
        append(&mut db, T0 + 5 * h, &a[700..], 1).unwrap();
        let cap = db
            .begin_capture(&CaptureStart {
                host: "h",
                kind: Kind::Syscalls,
                start_ns: T0 + h,
                trigger: None,
                meta: &Meta::with_unit(Unit::Nanoseconds),
            })
            .unwrap();
        let ev = EventRecord {
            kind: EventKind::Syscall,
            ts_ns: Some((T0 + h + SEC) as u64),
            duration_ns: Some(5000),
            cpu: 1,
            pid: Some(42),
            tid: Some(43),
            comm: Some("dd"),
            event: "syscall:write",
            weight: 5000,
            stack: Frames::Text(&frames),
        };
        db.append_events(cap, &[ev]).unwrap();
    }
    // What maintenance of schema 3 left: those buckets, their stacks and their own frames
    // (named leaf_ and 5 digits) deleted.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        let start = |k: i64| T0 + k * h;
        let n = c
            .execute(
                "DELETE FROM buckets WHERE start_ns IN (?1, ?2, ?3)",
                rusqlite::params![start(0), start(2), start(4)],
            )
            .unwrap();
        assert_eq!(n, 3);
        let n = c
            .execute(
                "DELETE FROM stacks WHERE id <= 200 OR id BETWEEN 901 AND 930 OR id BETWEEN 1731 AND 1830",
                [],
            )
            .unwrap();
        assert_eq!(n, 330);
        let n = c.execute("DELETE FROM frames WHERE name LIKE 'leaf%' AND length(name) = 10", []).unwrap();
        assert_eq!(n, 330);
    }
    let mut a_twice = want(&a, 1);
    for s in &a[700..] {
        *a_twice.get_mut(s).unwrap() += Weight::from_u64(1);
    }
    // Read as it is (a reader does not migrate).
    let reader = Sqlite::open(&path, OpenMode::Read).unwrap();
    assert_eq!(reader.schema_version().unwrap(), 3);
    let before = profile(&reader, T0, T0 + 9 * h);
    assert_eq!(before, a_twice);
    let before_ids = [ids(&reader, T0 + h), ids(&reader, T0 + 3 * h)].concat();
    assert_eq!(reader.stack_texts(&before_ids).unwrap(), a);
    let event_stack = reader.capture_events(kflame_store::CaptureId(1), i64::MIN, i64::MAX).unwrap()[0].stack;
    let event_text = "dd;write;\u{fffd}odd frame".as_bytes();
    assert_eq!(reader.stack_text(event_stack).unwrap(), event_text);
    drop(reader);

    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(profile(&db, T0, T0 + 9 * h), before);
    assert_eq!([ids(&db, T0 + h), ids(&db, T0 + 3 * h)].concat(), before_ids);
    assert_eq!(db.stack_texts(&before_ids).unwrap(), a);
    assert_eq!(db.stack_text(event_stack).unwrap(), event_text);
    // The stored stacks are found again; new ones get ids after every old one.
    let all = [a.clone(), b.clone()].concat();
    append(&mut db, T0 + 6 * h, &all, 1).unwrap();
    let now = ids(&db, T0 + 6 * h);
    assert_eq!(now[..1500], before_ids[..]);
    assert_eq!(event_stack.0, 1831);
    assert!(now[1500..].iter().all(|s| s.0 > 1831));
    let c = rusqlite::Connection::open(&path).unwrap();
    let old_tables: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master
             WHERE name IN ('stacks', 'frames', 'stacks_hash', 'stacks_v3', 'frames_v3')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old_tables, 0);
    drop(db);
    let db = Sqlite::open(&path, OpenMode::Read).unwrap();
    let mut w = a_twice;
    for s in &all {
        *w.entry(s.clone()).or_insert(Weight::ZERO) += Weight::from_u64(1);
    }
    assert_eq!(profile(&db, T0, T0 + 9 * h), w);
    assert_eq!(db.stack_texts(&now).unwrap(), all);
}

#[test]
fn a_failed_transaction_leaves_no_stack_behind() {
    let d = dir("rollback");
    let path = d.join("h.db");
    let all = stacks(0, 2000);
    let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
    append(&mut db, T0, &all[..1000], 1).unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TRIGGER refuse BEFORE INSERT ON buckets BEGIN SELECT RAISE(ABORT, 'refused'); END;",
    )
    .unwrap();
    assert!(append(&mut db, T0 + 3600 * SEC, &all, 1).is_err());
    assert_eq!(slots(&path), 1000);
    c.execute_batch("DROP TRIGGER refuse").unwrap();
    append(&mut db, T0 + 3600 * SEC, &all[500..], 1).unwrap();
    assert_eq!(slots(&path), 2000);
    let mut w = want(&all, 1);
    for s in &all[500..1000] {
        *w.get_mut(s).unwrap() += Weight::from_u64(1);
    }
    assert_eq!(profile(&db, T0, T0 + 2 * 3600 * SEC), w);
}

#[test]
fn damaged_chunks_are_corrupt() {
    let d = dir("damaged");
    let path = d.join("h.db");
    let all = stacks(0, 100);
    let damages = [
        "UPDATE stack_chunks SET data = x'01ff00'",
        "UPDATE stack_chunks SET data = substr(data, 1, length(data) - 3)",
        "UPDATE stack_chunks SET data = CAST(x'02' || substr(data, 2) AS BLOB)",
        "UPDATE stack_chunks SET count = count + 1",
        "UPDATE stack_chunks SET count = count - 1",
        "UPDATE stack_chunks SET count = 1 << 40",
        "UPDATE stack_chunks SET data = 'text'",
        "UPDATE frame_chunks SET count = count - 1",
        "UPDATE frame_chunks SET data = x'01'",
        "DELETE FROM frame_chunks",
    ];
    for sql in damages {
        for f in ["h.db", "h.db-wal", "h.db-shm"] {
            let _ = std::fs::remove_file(d.join(f));
        }
        let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
        append(&mut db, T0, &all, 1).unwrap();
        drop(db);
        rusqlite::Connection::open(&path).unwrap().execute_batch(sql).unwrap();
        let check = |e: StoreError| {
            assert!(matches!(e, StoreError::Corrupt { .. }), "{sql}: {e}");
            assert!(e.to_string().contains("h.db"), "{sql}: {e}");
        };
        let db = Sqlite::open(&path, OpenMode::Read).unwrap();
        check(db.profile(&ProfileQuery::new(Kind::Cpu, T0, T0 + 3600 * SEC)).unwrap_err());
        drop(db);
        let mut db = Sqlite::open(&path, OpenMode::Write).unwrap();
        check(append(&mut db, T0 + 3600 * SEC, &stacks(100, 1), 1).unwrap_err());
    }
}
