//! Choosing the function a title names: the first frame that is not reporting, locking,
//! scheduling or sanitizer machinery.

use super::Frame;

/// Frames that say how the problem was reported or waited on, not where it is.
const SKIP_PREFIXES: &[&str] = &[
    "dump_stack", "show_stack", "show_trace", "show_regs", "__dump_stack", "sched_show_task", "__warn",
    "warn_slowpath", "report_bug", "handle_bug", "exc_invalid_op", "asm_exc_", "do_error_trap",
    "do_invalid_op", "invalid_op", "do_trap", "die", "oops_end", "no_context", "bad_area",
    "__bad_area", "page_fault", "do_page_fault", "__do_page_fault", "exc_page_fault",
    "asm_exc_page_fault", "do_user_addr_fault", "do_kern_addr_fault", "kernelmode_fixup_or_oops",
    "page_fault_oops", "panic", "__panic", "nmi_", "nmi_cpu_backtrace", "arch_trigger_cpumask",
    "trigger_", "rcu_dump_cpu_stacks", "print_cpu_stall", "check_cpu_stall", "rcu_sched_clock_irq",
    "rcu_pending", "update_process_times", "tick_", "hrtimer_", "__hrtimer_", "watchdog_timer_fn",
    "__sysvec_", "sysvec_", "asm_sysvec_", "smp_apic_timer_interrupt", "apic_timer_interrupt",
    "irq_exit", "__irq_exit", "do_softirq", "__do_softirq", "handle_softirqs", "asm_call_",
    "call_on_stack", "kasan", "__kasan", "asan_", "__asan", "check_memory_region", "memcpy",
    "memset", "memmove", "kmsan", "__msan", "kcsan", "__tsan", "ubsan", "__ubsan", "handle_overflow",
    "print_address_description", "print_report", "report_", "end_report", "start_report",
    "printk", "vprintk", "_printk", "print_", "lockdep", "__lockdep", "lock_acquire", "lock_release",
    "__lock_acquire", "lock_", "mark_lock", "mark_usage", "check_", "validate_chain", "debug_",
    "__debug_", "do_raw_", "_raw_", "raw_", "spin_", "__spin", "_spin", "mutex_", "__mutex_",
    "down", "__down", "up_", "rwsem_", "__rwsem", "percpu_rwsem", "__percpu_down", "percpu_down",
    "rt_mutex", "__rt_mutex", "schedule", "__schedule", "io_schedule", "preempt_schedule",
    "wait_for_", "__wait_for_", "wait_on_", "__wait_on_", "out_of_line_wait", "bit_wait",
    "__might_", "___might_", "might_", "refcount_", "__refcount_", "warn_", "__warn_", "fortify_",
    "__list_", "list_", "kfence_", "__kfence", "slab_", "kmem_cache_", "__kmem_cache", "kmalloc",
    "__kmalloc", "krealloc", "kfree", "__kmem", "kmemleak", "__slab", "___slab", "____kasan",
    "trace_", "__sanitizer", "__fortify", "csd_lock_wait", "oom_", "out_of_memory", "dump_header",
    "__alloc_pages", "alloc_pages", "__get_free_pages", "get_page_from_freelist",
];

/// True when `function` is machinery rather than the culprit.
pub(crate) fn is_machinery(function: &str) -> bool {
    SKIP_PREFIXES.iter().any(|p| function.starts_with(p))
}

/// The first (leaf-most) reliable frame that is not machinery, with compiler suffixes
/// (`.cold`, `.isra.0`, `.constprop.0`) removed; falls back to the leaf frame.
pub(crate) fn guilty(frames: &[Frame]) -> Option<String> {
    let reliable = || frames.iter().filter(|f| !f.unreliable && !f.function.starts_with("0x"));
    let pick = reliable().find(|f| !is_machinery(&f.function)).or_else(|| reliable().next())?;
    Some(base_name(&pick.function).to_string())
}

/// `foo.cold.12` → `foo`.
pub(crate) fn base_name(function: &str) -> &str {
    match function.find('.') {
        Some(i) if i > 0 => &function[..i],
        _ => function,
    }
}
