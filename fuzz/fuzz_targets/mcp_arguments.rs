//! A tool call's arguments (JSON) and the paths in them, and a line of the stdio transport:
//! errors, never a panic; a path accepted is a file under the allowed root.
//! The checks live in `kflame_mcp::fuzzing::mcp_arguments`, replayed by
//! `crates/kflame-mcp/tests/fuzz_replay.rs` over `fuzz/corpus/mcp_arguments` and `fuzz/regressions/mcp_arguments`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_mcp::fuzzing::mcp_arguments(data));
