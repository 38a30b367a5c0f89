//! The kernel-aware palette: which kind of code a frame is.
//!
//! Kernel stacks mix code that a reader wants told apart at a glance: kernel and user code,
//! interrupt context (hard and soft IRQs, NMIs), frames the unwinder was not sure of
//! (`? func` in oops traces, `[unknown]`, bare addresses), and the category frames kflame's
//! collapsers add at the root (`[hung_task]`, `kind:oops` or `kind=oops`, `cpu-3`, task
//! states such as `D`). A kernel frame's callees are kernel code too (the
//! kernel never calls into user space), and so are an interrupt's; the classification
//! therefore takes the parent's category.

/// What kind of code a frame is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Category {
    /// The "all" frame.
    #[default]
    Root,
    /// Kernel code.
    Kernel,
    /// User-space code (and anything not recognised as kernel).
    User,
    /// Hard or soft interrupt / NMI context.
    Interrupt,
    /// A frame the unwinder was not sure of.
    Unreliable,
    /// A category frame added by a collapser (`[hung_task]`, `kind:oops`).
    Synthetic,
}

/// Prefixes of kernel functions that start kernel context (entry points and the most
/// common kernel subsystems seen at the top of kernel-only stacks).
const KERNEL_PREFIXES: &[&str] = &[
    "entry_SYSCALL",
    "do_syscall_",
    "x64_sys_call",
    "__x64_sys_",
    "__ia32_sys_",
    "__arm64_sys_",
    "__se_sys_",
    "__do_sys_",
    "ksys_",
    "asm_exc_",
    "exc_page_fault",
    "ret_from_fork",
    "kthread",
    "worker_thread",
    "process_one_work",
    "secondary_startup_",
    "common_startup_",
    "start_kernel",
    "x86_64_start_",
    "cpu_startup_entry",
    "do_idle",
    "rest_init",
    "el0_svc",
    "el0t_",
    "el1h_",
    "do_el0_svc",
    "invoke_syscall",
    "syscall_exit_to_user_mode",
    "schedule",
    "__schedule",
    "io_schedule",
    "smpboot_thread_fn",
    "rcu_gp_kthread",
    "[kernel.kallsyms]",
    "page_fault",
    "async_page_fault",
    "system_call",
    "sysenter_",
    "ia32_sysenter",
];

/// Markers and prefixes of interrupt context.
const IRQ_PREFIXES: &[&str] = &[
    "<IRQ>",
    "<NMI>",
    "<SOFTIRQ>",
    "asm_sysvec_",
    "sysvec_",
    "__sysvec_",
    "asm_common_interrupt",
    "common_interrupt",
    "asm_exc_nmi",
    "exc_nmi",
    "default_do_nmi",
    "nmi_handle",
    "do_IRQ",
    "irq_exit",
    "__irq_exit",
    "irq_enter",
    "handle_irq",
    "__handle_irq",
    "generic_handle_irq",
    "irqentry_",
    "__do_softirq",
    "do_softirq",
    "handle_softirqs",
    "run_ksoftirqd",
    "invoke_softirq",
    "apic_timer_interrupt",
    "smp_apic_timer_interrupt",
];

/// Frames a collapser could add as a category root: `key:value` with these keys.
const SYNTHETIC_KEYS: &[&str] =
    &["kind", "state", "comm", "cpu", "version", "title", "hardware", "taint", "event", "reason"];

/// Bracketed names that are real locations (DSOs, mappings), not categories.
const BRACKET_LOCATIONS: &[&str] = &["[unknown]", "[vdso]", "[vsyscall]", "[anon]", "[heap]", "[stack]"];

impl Category {
    /// Classifies frame `name` at `depth` (1 = first frame of a stack) under `parent`.
    pub fn classify(name: &str, depth: usize, parent: Category) -> Category {
        // bcc and FlameGraph separate the user part of a stack from the kernel part with a
        // `-` frame (drawn grey): what follows it is kernel code.
        if name == "-" {
            return Category::Kernel;
        }
        if is_unreliable(name) {
            return Category::Unreliable;
        }
        if matches!(parent, Category::Root | Category::Synthetic) && is_synthetic(name, depth) {
            return Category::Synthetic;
        }
        if parent == Category::Interrupt || is_interrupt(name) {
            return Category::Interrupt;
        }
        if parent == Category::Kernel || is_kernel(name) {
            return Category::Kernel;
        }
        Category::User
    }
}

fn is_unreliable(name: &str) -> bool {
    name.starts_with('?') || name == "[unknown]" || name.ends_with("_[?]") || is_bare_address(name)
}

/// `0xffffffff8a2b3c4d` or `ffffffff8a2b3c4d`: an address no symbol was found for.
fn is_bare_address(name: &str) -> bool {
    let hex = name.strip_prefix("0x").unwrap_or(name);
    hex.len() >= 8 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Task states (`ps` letters) that snapshot collapsers put at the root.
const TASK_STATES: &[&str] = &["R", "S", "D", "T", "t", "X", "Z", "P", "I"];

fn is_synthetic(name: &str, depth: usize) -> bool {
    // `cpu-3`: the root `--cpu` adds.
    if depth <= 2
        && name.strip_prefix("cpu-").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        return true;
    }
    if name.len() > 2 && name.starts_with('[') && name.ends_with(']') {
        return depth <= 3 && !BRACKET_LOCATIONS.contains(&name) && !name.contains(".so");
    }
    if depth == 1 && TASK_STATES.contains(&name) {
        return true;
    }
    // `kind:oops` or `kind=oops`.
    match name.split_once([':', '=']) {
        Some((key, value)) => SYNTHETIC_KEYS.contains(&key) && !value.is_empty() && !value.starts_with(':'),
        None => false,
    }
}

fn is_interrupt(name: &str) -> bool {
    let n = name.strip_suffix("_[k]").unwrap_or(name);
    IRQ_PREFIXES.iter().any(|p| n.starts_with(p)) || n.ends_with("_interrupt")
}

fn is_kernel(name: &str) -> bool {
    name.ends_with("_[k]") || KERNEL_PREFIXES.iter().any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::Category::{self, *};

    fn chain(frames: &[&str]) -> Vec<Category> {
        let mut parent = Root;
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                parent = Category::classify(f, i + 1, parent);
                parent
            })
            .collect()
    }

    #[test]
    fn perf_stack_user_then_kernel() {
        let c = chain(&["bash", "main", "__libc_write", "entry_SYSCALL_64_after_hwframe", "vfs_write"]);
        assert_eq!(c, [User, User, User, Kernel, Kernel]);
    }

    #[test]
    fn interrupts_and_unreliable_frames() {
        let c = chain(&["swapper", "secondary_startup_64", "asm_sysvec_apic_timer_interrupt", "hrtimer_run"]);
        assert_eq!(c, [User, Kernel, Interrupt, Interrupt]);
        let c = chain(&["[hung_task]", "kind:oops", "? __schedule", "[unknown]", "foo_[k]"]);
        assert_eq!(c, [Synthetic, Synthetic, Unreliable, Unreliable, Kernel]);
        assert_eq!(chain(&["[vdso]"]), [User]);
        assert_eq!(chain(&["cpu-1", "cpu-burner", "main"]), [Synthetic, User, User]);
        assert_eq!(
            chain(&["D", "state=D", "sh", "ffffffff8a2b3c4d"]),
            [Synthetic, Synthetic, User, Unreliable]
        );
        assert_eq!(chain(&["main", "deadbeef", "cafe"]), [User, Unreliable, User]);
        assert_eq!(
            chain(&["python3", "__GI___clock_nanosleep", "-", "do_nanosleep"]),
            [User, User, Kernel, Kernel]
        );
    }
}
