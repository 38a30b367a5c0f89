//! perf.data input of `kflame collapse`: the call into the library's reader, with the
//! options `Target::collapser` configured.

use std::io::Read;

use anyhow::{Context, Result};
use kflame::collapse::{Order, Output};
use kflame::perf_data::{self, Options};

use crate::input::Input;

/// Collapses one perf.data input (a file, or stdin read into memory).
pub(crate) fn collapse(input: Input, opts: &Options, order: Order) -> Result<Output> {
    let name = input.name.clone();
    let out = match input.path.clone() {
        Some(path) => perf_data::collapse_file(&path, opts, order),
        None => {
            let mut data = Vec::new();
            input.reader().read_to_end(&mut data).with_context(|| format!("reading {name}"))?;
            perf_data::collapse_bytes(&data, opts, order)
        }
    }
    .with_context(|| format!("reading perf.data {name}"))?;
    Ok(out)
}
