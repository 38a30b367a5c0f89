//! `git log -p` output as the fix search reads it: commits, `Fixes:` trailers, hunk headers.
//! The checks live in `kflame_fixes::fuzzing::fixes_git_log`, replayed by
//! `crates/kflame-fixes/tests/fuzz_replay.rs` over `fuzz/corpus/fixes_git_log` and `fuzz/regressions/fixes_git_log`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_fixes::fuzzing::fixes_git_log(data));
