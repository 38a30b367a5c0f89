//! `KFLAME_CLICKHOUSE_SQL_LOG=DIR`: every statement kflame sends to ClickHouse is written to
//! `DIR/statements.jsonl` (one JSON object a line: `sql`, and `data` naming the file of an
//! insert's rows (`Native`) or of an external table's (`RowBinary`)), and each `SELECT` is
//! run a second time as TSV, its answer kept in a file named by `tsv`. For support (what exactly did it
//! ask?) and for running the same SQL on another ClickHouse version (`tests/clickhouse/`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

struct Log {
    dir: PathBuf,
    file: std::fs::File,
    n: u64,
}

fn log() -> Option<&'static Mutex<Log>> {
    static LOG: OnceLock<Option<Mutex<Log>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let dir = PathBuf::from(std::env::var_os("KFLAME_CLICKHOUSE_SQL_LOG")?);
        std::fs::create_dir_all(&dir).ok()?;
        let file =
            std::fs::OpenOptions::new().create(true).append(true).open(dir.join("statements.jsonl")).ok()?;
        Some(Mutex::new(Log { dir, file, n: 0 }))
    })
    .as_ref()
}

/// True when statements are logged.
pub fn enabled() -> bool {
    log().is_some()
}

/// One line of `statements.jsonl`.
#[derive(serde::Serialize)]
struct Line<'a> {
    n: u64,
    sql: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data_kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tsv: Option<String>,
}

/// Records a `SELECT` that was answered, with the data sent with it; when it asked for
/// `RowBinary`, `as_tsv` runs the same statement asking for TSV and its answer is kept too.
pub fn record_select(sql: &str, data: Option<(&str, &[u8])>, as_tsv: impl FnOnce(&str) -> Option<Vec<u8>>) {
    if !enabled() {
        return;
    }
    let tsv = sql.strip_suffix(" FORMAT RowBinary").and_then(|s| as_tsv(&format!("{s} FORMAT TSV")));
    record(sql, data, tsv.as_deref());
}

/// Records one statement: its SQL, the data sent with it (`kind` `insert` or an external
/// table's `name:structure`), and a TSV answer.
pub fn record(sql: &str, data: Option<(&str, &[u8])>, tsv: Option<&[u8]>) {
    let Some(l) = log() else { return };
    let Ok(mut l) = l.lock() else { return };
    l.n += 1;
    let n = l.n;
    let mut line = Line { n, sql, data: None, data_kind: None, tsv: None };
    if let Some((kind, bytes)) = data {
        let name = format!("{n:05}.bin");
        if std::fs::write(l.dir.join(&name), bytes).is_ok() {
            line.data = Some(name);
            line.data_kind = Some(kind);
        }
    }
    if let Some(t) = tsv {
        let name = format!("{n:05}.tsv");
        if std::fs::write(l.dir.join(&name), t).is_ok() {
            line.tsv = Some(name);
        }
    }
    let Ok(mut line) = serde_json::to_string(&line) else { return };
    line.push('\n');
    let _ = l.file.write_all(line.as_bytes());
}
