//! `struct perf_event_attr` (include/uapi/linux/perf_event.h), built in safe code.

/// `PERF_TYPE_SOFTWARE`.
pub(crate) const TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_TRACEPOINT`.
pub(crate) const TYPE_TRACEPOINT: u32 = 2;
/// `PERF_COUNT_SW_CPU_CLOCK`.
pub(crate) const SW_CPU_CLOCK: u64 = 0;
/// `PERF_COUNT_SW_DUMMY`: counts and samples nothing; carries side-band records.
pub(crate) const SW_DUMMY: u64 = 9;

/// `PERF_SAMPLE_*` bits.
pub(crate) mod sample {
    pub(crate) const IP: u64 = 1 << 0;
    pub(crate) const TID: u64 = 1 << 1;
    pub(crate) const TIME: u64 = 1 << 2;
    pub(crate) const CALLCHAIN: u64 = 1 << 5;
    pub(crate) const CPU: u64 = 1 << 7;
    pub(crate) const PERIOD: u64 = 1 << 8;
    pub(crate) const RAW: u64 = 1 << 10;
    /// `PERF_SAMPLE_REGS_USER`: the user registers of `sample_regs_user`.
    pub(crate) const REGS_USER: u64 = 1 << 12;
    /// `PERF_SAMPLE_STACK_USER`: `sample_stack_user` bytes of the user stack.
    pub(crate) const STACK_USER: u64 = 1 << 13;
    /// `PERF_SAMPLE_CGROUP` (Linux 5.7): the cgroup id of the sampled task.
    pub(crate) const CGROUP: u64 = 1 << 21;
}

/// Bits of the attr flags word (bitfield after `read_format`).
pub(crate) mod flag {
    pub(crate) const DISABLED: u64 = 1 << 0;
    pub(crate) const INHERIT: u64 = 1 << 1;
    pub(crate) const EXCLUDE_USER: u64 = 1 << 4;
    pub(crate) const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub(crate) const EXCLUDE_HV: u64 = 1 << 6;
    pub(crate) const MMAP: u64 = 1 << 8;
    pub(crate) const COMM: u64 = 1 << 9;
    pub(crate) const FREQ: u64 = 1 << 10;
    pub(crate) const ENABLE_ON_EXEC: u64 = 1 << 12;
    pub(crate) const TASK: u64 = 1 << 13;
    pub(crate) const WATERMARK: u64 = 1 << 14;
    pub(crate) const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub(crate) const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub(crate) const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub(crate) const MMAP2: u64 = 1 << 23;
    pub(crate) const COMM_EXEC: u64 = 1 << 24;
    pub(crate) const USE_CLOCKID: u64 = 1 << 25;
    /// `context_switch`: `PERF_RECORD_SWITCH(_CPU_WIDE)` records at every switch in and out.
    pub(crate) const CONTEXT_SWITCH: u64 = 1 << 26;
    /// `cgroup`: a `PERF_RECORD_CGROUP` record (id and path) whenever a cgroup is created
    /// (Linux 5.7); the cgroups that already exist are not reported (perf reads them from
    /// the cgroup mount, as `record::cgroups` does).
    pub(crate) const CGROUP: u64 = 1 << 32;
}

/// The attribute structure, `PERF_ATTR_SIZE_VER5` (112 bytes), field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PerfEventAttr {
    pub(crate) type_: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    /// `sample_period`, or `sample_freq` when [`flag::FREQ`] is set.
    pub(crate) sample_period_or_freq: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    /// `wakeup_events`, or `wakeup_watermark` (bytes) when [`flag::WATERMARK`] is set.
    pub(crate) wakeup: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) branch_sample_type: u64,
    pub(crate) sample_regs_user: u64,
    pub(crate) sample_stack_user: u32,
    pub(crate) clockid: i32,
    pub(crate) sample_regs_intr: u64,
    pub(crate) aux_watermark: u32,
    pub(crate) sample_max_stack: u16,
    pub(crate) reserved_2: u16,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 112);

impl PerfEventAttr {
    /// An attribute of `type_`/`config`, disabled, with the size field filled in.
    pub(crate) fn new(type_: u32, config: u64) -> Self {
        PerfEventAttr {
            type_,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config,
            flags: flag::DISABLED,
            ..Default::default()
        }
    }
}
