//! A spool file of the ClickHouse writer: opened or refused naming the file, never a panic;
//! what opens reads back whole and in order.
//! The checks live in `kflame_clickhouse::fuzzing::clickhouse_spool`, replayed by
//! `crates/kflame-clickhouse/tests/fuzz_replay.rs` over `fuzz/corpus/clickhouse_spool` and `fuzz/regressions/clickhouse_spool`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_clickhouse::fuzzing::clickhouse_spool(data));
