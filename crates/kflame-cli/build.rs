//! Names the build in `kflame --version`: the commit it was built from (`KFLAME_COMMIT` when
//! set, as a package build from a tarball gives it; else git's `HEAD`; else `unknown`) and
//! the build date (UTC; `SOURCE_DATE_EPOCH` when set, for reproducible builds).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// `YYYY-MM-DD` of `secs` since the epoch (UTC).
fn date(secs: i64) -> String {
    // Howard Hinnant's days-to-civil.
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn main() {
    println!("cargo:rerun-if-env-changed=KFLAME_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // The commit changes with HEAD and the branch it names.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
        println!("cargo:rerun-if-changed={dir}/packed-refs");
    }
    let given = std::env::var("KFLAME_COMMIT").ok().filter(|c| !c.trim().is_empty());
    let (commit, source) = match given {
        Some(c) => (c.trim().to_string(), "env"),
        None => match git(&["rev-parse", "--short=12", "HEAD"]) {
            Some(c) => (c, "git"),
            None => ("unknown".to_string(), "none"),
        },
    };
    // Where the commit came from, for the test of `--version`.
    println!("cargo:rustc-env=KFLAME_COMMIT_SOURCE={source}");
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    println!("cargo:rustc-env=KFLAME_COMMIT={commit}");
    println!("cargo:rustc-env=KFLAME_BUILD_DATE={}", date(secs));
}
