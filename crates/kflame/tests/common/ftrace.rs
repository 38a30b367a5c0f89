//! The ftrace collapser in every mode, with every option that adds root frames, on small
//! blocks (records straddle block boundaries): shared by the mutation tests and the
//! `collapse_ftrace` fuzz target.

#![allow(dead_code, unreachable_pub)]

use kflame::collapse::Output;

/// Collapses `input` once per mode, single-threaded in 4 KiB blocks, and hands each output
/// (or the error, for in-memory input only a bug) to `check`: the code of the fuzz target,
/// `kflame::fuzzing::ftrace_every_mode`.
pub fn collapse_every_mode(input: &[u8], check: impl FnMut(std::io::Result<Output>)) {
    kflame::fuzzing::ftrace_every_mode(input, check)
}
