//! `kflame watch` from the command line: usage and configuration errors, the help text, the
//! systemd unit. Live tests (`live_*`) run the watcher as root.

use std::process::Command;

fn kflame(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kflame")).args(args).output().expect("run kflame");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kflame-watch-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_bad_rule_is_a_usage_error_naming_rule_and_column() {
    let (code, _, err) =
        kflame(&["watch", "--trigger", "cpu > 80% for 5s => cpu 30s", "--trigger", "mem.avail < 10%"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim(),
        "kflame: error: command line: trigger rule `mem.avail < 10%`, column 1: unknown metric `mem.avail` \
         (`kflame watch --help` lists them)"
    );
}

#[test]
fn a_bad_configuration_names_the_file_line_and_key() {
    let d = scratch("config");
    let cfg = d.join("watch.toml");
    std::fs::write(&cfg, "rate = 19\nbuckett = \"10s\"\n").unwrap();
    let (code, _, err) = kflame(&["watch", "--config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with(&format!("kflame: error: configuration {}: ", cfg.display())), "{err}");
    assert!(err.contains("line 2") && err.contains("buckett"), "{err}");
    std::fs::write(&cfg, "triggers = [\"load1 > 2*ncpu => gpu\"]\n").unwrap();
    let (code, _, err) = kflame(&["watch", "--config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "configuration {}: trigger rule `load1 > 2*ncpu => gpu`, column 19: unknown capture kind `gpu`",
            cfg.display()
        )),
        "{err}"
    );
    let (code, _, err) = kflame(&["watch", "--config", d.join("missing.toml").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read the configuration") && err.contains("missing.toml"), "{err}");
    let (code, _, err) = kflame(&["watch", "--rate", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("command line: `rate`: 0 Hz"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn help_lists_every_metric() {
    let (code, out, _) = kflame(&["watch", "--help"]);
    assert_eq!(code, 0);
    for name in ["cpu.iowait", "mem.available", "io.util", "psi.io.some", "load1", "forks", "ctxt"] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(&format!("{name} "))),
            "{name} missing:\n{out}"
        );
    }
    assert!(out.contains("METRIC OP VALUE [for DURATION] [=> KIND [DURATION]]"));
}

#[test]
fn the_systemd_unit_verifies() {
    let unit = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dist/kflame-watch.service");
    let text = std::fs::read_to_string(unit).unwrap();
    for key in [
        "AmbientCapabilities=",
        "CapabilityBoundingSet=",
        "ProtectSystem=strict",
        "StateDirectory=kflame",
        "NoNewPrivileges=yes",
    ] {
        assert!(text.contains(key), "{key} missing");
    }
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        return; // no systemd here: the text checks above are all
    }
    // ExecStart must name an executable that exists: the binary under test stands in.
    let d = scratch("unit");
    let copy = d.join("kflame-watch.service");
    std::fs::write(&copy, text.replace("/usr/local/bin/kflame", env!("CARGO_BIN_EXE_kflame"))).unwrap();
    let out = Command::new("systemd-analyze").arg("verify").arg(&copy).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.trim().is_empty(), "systemd-analyze verify: {err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_example_configuration_is_accepted_and_shows_every_key() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../dist/kflame-watch.toml");
    let text = std::fs::read_to_string(path).unwrap();
    // every key of the file format, set or (when its default cannot be written) commented out
    for key in [
        "db",
        "host",
        "rate",
        "bucket",
        "retain",
        "disk_budget",
        "budget",
        "cooldown",
        "kmsg",
        "all_devices",
        "log_level",
        "triggers",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{key} = ")) || l.starts_with(&format!("# {key} = "))),
            "{key} missing from the example"
        );
    }
    let (code, out, err) = kflame(&["watch", "--config", path, "--check"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("configuration {path}: valid\n")), "{out}");
    // each rule of the file, as the watcher reads it
    let file = kflame_watch::config::File::read(std::path::Path::new(path)).unwrap();
    let rules = file.triggers.unwrap();
    assert!(rules.len() >= 5);
    for r in &rules {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("trigger: {r} (read as: "))),
            "{r} not listed:\n{out}"
        );
    }
    // --check reads the configuration: a broken copy is refused, naming the rule
    let d = scratch("example");
    let bad = d.join("watch.toml");
    std::fs::write(&bad, text.replace("\"mem.available < 10%", "\"mem.avail < 10%")).unwrap();
    let (code, _, err) = kflame(&["watch", "--config", bad.to_str().unwrap(), "--check"]);
    assert_ne!(code, 0);
    assert!(err.contains(&bad.display().to_string()) && err.contains("unknown metric `mem.avail`"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_second_writer_of_a_database_is_refused_naming_the_first() {
    let d = scratch("two-writers");
    let db = d.join("history.db");
    let _ = std::fs::remove_file(&db);
    // The first writer: this process, as a running `kflame watch` holds it.
    let first = kflame_store::Sqlite::open(&db, kflame_store::OpenMode::Write).unwrap();
    let before = std::fs::read(&db).unwrap();
    let (code, _, err) = kflame(&["watch", "--db", db.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains(&format!("already opened for writing by process {}", std::process::id())), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the refused watcher wrote to the database");
    // Gone, it leaves no stale lock: the next watcher gets past the lock (to wherever
    // this machine lets it go; what matters is that it is not refused as a second writer).
    drop(first);
    let again = kflame_store::Sqlite::open(&db, kflame_store::OpenMode::Write);
    assert!(again.is_ok(), "{:?}", again.err());
    drop(again);
    std::fs::remove_dir_all(&d).unwrap();
}
