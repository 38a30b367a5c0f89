//! A ClickHouse HTTP answer and its RowBinary rows: errors, never a panic or an allocation by a
//! size the answer claims.
//! The checks live in `kflame_clickhouse::fuzzing::clickhouse_answer`, replayed by
//! `crates/kflame-clickhouse/tests/fuzz_replay.rs` over `fuzz/corpus/clickhouse_answer` and `fuzz/regressions/clickhouse_answer`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kflame_clickhouse::fuzzing::clickhouse_answer(data));
