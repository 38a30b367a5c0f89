//! Live capture: the only code that reads tracefs, `/proc` or calls perf_event_open.

pub mod proc_stacks;
