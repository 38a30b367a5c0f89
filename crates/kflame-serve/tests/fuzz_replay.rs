//! Replays this crate's fuzz targets (`kflame_serve::fuzzing`, the code each
//! `fuzz/fuzz_targets/<name>.rs` calls) over their seeds and past crashes, within a memory
//! budget per input: the shared harness, `crates/kflame/tests/common/crate_fuzz_replay.rs`.

// The harness's tracking allocator is the only unsafe code: it forwards to the system allocator.
#![allow(unsafe_code)]

#[path = "../../kflame/tests/common/crate_fuzz_replay.rs"]
mod harness;

use kflame_serve::fuzzing::TARGETS;

#[test]
fn every_seed_and_past_crash_passes_within_its_memory() {
    harness::every_seed_and_past_crash_passes_within_its_memory(TARGETS);
}

#[test]
fn every_target_of_the_crate_is_built_and_listed() {
    harness::every_target_is_built_and_listed(TARGETS, "kflame_serve::fuzzing");
}
