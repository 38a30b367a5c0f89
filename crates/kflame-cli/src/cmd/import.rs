//! Other tools' profiles as input of `kflame collapse` (pprof, speedscope, OTLP): the whole input
//! read into memory and handed to the library's reader.

use std::io::Read;

use anyhow::{Context, Result};
use kflame::collapse::{Order, Output};
use kflame::import::{self, Kind, Limits};

use crate::input::Input;

/// Reads one pprof or speedscope input.
pub(crate) fn collapse(input: Input, kind: Kind, order: Order) -> Result<Output> {
    let name = input.name.clone();
    let what = match kind {
        Kind::Pprof => "pprof profile",
        Kind::Speedscope => "speedscope file",
        Kind::Otlp => "OTLP profiles request",
    };
    let mut data = Vec::new();
    input.reader().read_to_end(&mut data).with_context(|| format!("reading {name}"))?;
    let got = import::read(kind, &data, order == Order::Time, &Limits::default())
        .with_context(|| format!("reading {what} {name}"))?;
    Ok(Output { stacks: got.stacks, diag: got.diag, meta: got.meta })
}
