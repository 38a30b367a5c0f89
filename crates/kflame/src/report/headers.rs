//! The table of report headers the extractor knows (`start.rs` implements them): the first
//! line's pattern, the kind it gives, where in the kernel it is printed, and a line in the
//! kernel's format. The tests check that every example is classified as its entry says, and
//! that every report the extractor finds in the real logs of the test data starts with a
//! line of this table.

// The table is the reference the tests hold `start.rs` to; the extractor itself does not read it.
#![cfg_attr(not(test), allow(dead_code))]

use super::Kind;

/// How a header's pattern matches a first line (after `[ ... ]` and `rcu: `, `watchdog: `
/// prefixes are removed).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Pat {
    /// The line starts with it.
    Prefix(&'static str),
    /// The line contains it.
    Contains(&'static str),
    /// The line starts with the first and contains the second.
    Both(&'static str, &'static str),
    /// The line is exactly this.
    Exact(&'static str),
}

impl Pat {
    pub(crate) fn matches(self, line: &str) -> bool {
        match self {
            Pat::Prefix(p) => line.starts_with(p),
            Pat::Contains(p) => line.contains(p),
            Pat::Both(p, c) => line.starts_with(p) && line.contains(c),
            Pat::Exact(p) => line == p,
        }
    }
}

/// One known report header.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Header {
    pub(crate) pattern: Pat,
    pub(crate) kind: Kind,
    /// Kernel file and function that print it.
    pub(crate) source: &'static str,
    /// A line in the kernel's format.
    pub(crate) example: &'static str,
}

const fn h(pattern: Pat, kind: Kind, source: &'static str, example: &'static str) -> Header {
    Header { pattern, kind, source, example }
}

use Kind::*;
use Pat::{Both, Contains, Exact, Prefix};

/// Every report header the extractor recognizes. Order matters only for the tests' lookup of
/// a real header: the first matching entry is the one that covers it.
pub(crate) const HEADERS: &[Header] = &[
    // kernel/panic.c
    h(
        Prefix("Kernel panic - not syncing: kernel stack overflow"),
        Panic,
        "arch/arm64/kernel/traps.c: handle_bad_stack(); x86 handle_stack_overflow(): `kernel stack overflow in FUNC`",
        "Kernel panic - not syncing: kernel stack overflow",
    ),
    h(
        Prefix("Kernel panic - not syncing: "),
        Panic,
        "kernel/panic.c: panic()",
        "Kernel panic - not syncing: Fatal exception",
    ),
    h(
        Prefix("WARNING: CPU: "),
        Warning,
        "kernel/panic.c: __warn()",
        "WARNING: CPU: 1 PID: 7 at fs/inode.c:336 drop_nlink+0xac/0xd0",
    ),
    h(
        Prefix("WARNING: at "),
        Warning,
        "kernel/panic.c: __warn() (no task, old kernels)",
        "WARNING: at kernel/foo.c:12 bar+0x1/0x2()",
    ),
    h(
        Both("WARNING: ", ".c:"),
        Warning,
        "kernel/panic.c: __warn() (6.17+: file first)",
        "WARNING: kernel/foo.c:12 at bar+0x1/0x2, CPU#0: sh/1",
    ),
    // lib/bug.c
    h(
        Prefix("kernel BUG at lib/list_debug.c"),
        Bug,
        "lib/list_debug.c: BUG_ON() of the list checks (CONFIG_BUG_ON_DATA_CORRUPTION): `BUG: corrupted list`",
        "kernel BUG at lib/list_debug.c:53!",
    ),
    h(
        Prefix("kernel BUG at mm/usercopy.c"),
        Bug,
        "mm/usercopy.c: usercopy_abort(): `BUG: bad usercopy`",
        "kernel BUG at mm/usercopy.c:99!",
    ),
    h(Prefix("kernel BUG at "), Bug, "lib/bug.c: report_bug() via BUG()", "kernel BUG at mm/slub.c:4112!"),
    h(
        Prefix("Kernel BUG"),
        Bug,
        "lib/bug.c: report_bug() without file and line; riscv die()",
        "Kernel BUG at 0xffffffff81234567 [verbose debug info unavailable]",
    ),
    // arch/x86/kernel/traps.c, arch/x86/kernel/dumpstack.c
    h(
        Prefix("general protection fault"),
        GeneralProtectionFault,
        "arch/x86/kernel/traps.c: exc_general_protection()",
        "general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN",
    ),
    h(
        Prefix("segment-related general protection fault"),
        GeneralProtectionFault,
        "arch/x86/kernel/traps.c: exc_general_protection() (segment selector error code)",
        "segment-related general protection fault: beec [#2] PREEMPT SMP KASAN PTI",
    ),
    h(
        Prefix("Oops: general protection fault"),
        GeneralProtectionFault,
        "arch/x86/kernel/dumpstack.c: __die_header() (6.10+)",
        "Oops: general protection fault, probably for non-canonical address 0xdffffc0000000000: 0000 [#1] SMP KASAN",
    ),
    h(
        Prefix("divide error: "),
        Oops,
        "arch/x86/kernel/traps.c: do_error_trap(X86_TRAP_DE)",
        "divide error: 0000 [#1] SMP KASAN",
    ),
    h(
        Prefix("Oops: divide error: "),
        Oops,
        "arch/x86/kernel/traps.c: do_error_trap(X86_TRAP_DE) (6.10+)",
        "Oops: divide error: 0000 [#1] PREEMPT SMP KASAN NOPTI",
    ),
    h(
        Prefix("divide_error: "),
        Oops,
        "arch/x86/kernel/traps.c: do_error_trap() (old kernels)",
        "divide_error: 0000 [#1] SMP KASAN",
    ),
    h(
        Prefix("invalid opcode: "),
        Oops,
        "arch/x86/kernel/traps.c: do_error_trap(X86_TRAP_UD)",
        "invalid opcode: 0000 [#1] SMP KASAN",
    ),
    h(
        Prefix("Oops: invalid opcode: "),
        Oops,
        "arch/x86/kernel/traps.c: handle_invalid_op() (6.10+)",
        "Oops: invalid opcode: 0000 [#1] PREEMPT SMP KASAN",
    ),
    h(
        Prefix("stack segment: "),
        Oops,
        "arch/x86/kernel/traps.c: do_error_trap(X86_TRAP_SS)",
        "stack segment: 0000 [#1] SMP KASAN",
    ),
    h(
        Prefix("Oops: stack segment: "),
        Oops,
        "arch/x86/kernel/traps.c: do_error_trap(X86_TRAP_SS) (6.10+)",
        "Oops: stack segment: 0000 [#1] PREEMPT SMP KASAN",
    ),
    h(
        Prefix("int3: "),
        Oops,
        "arch/x86/kernel/traps.c: do_int3_user()/die(\"int3\")",
        "int3: 0000 [#1] PREEMPT SMP KASAN",
    ),
    h(
        Prefix("PANIC: double fault"),
        Oops,
        "arch/x86/kernel/traps.c: exc_double_fault()",
        "PANIC: double fault, error_code: 0x0",
    ),
    h(Prefix("Oops: "), Oops, "arch/*: die() with an oops count", "Oops: 0000 [#1] PREEMPT SMP"),
    h(
        Prefix("Oops - "),
        Oops,
        "arch/riscv/kernel/traps.c: do_trap_error() via die()",
        "Oops - illegal instruction [#1]",
    ),
    // arch/x86/mm/fault.c, arch/powerpc/mm/fault.c
    h(
        Prefix("BUG: kernel NULL pointer dereference"),
        PageFault,
        "arch/x86/mm/fault.c: show_fault_oops()",
        "BUG: kernel NULL pointer dereference, address: 0000000000000000",
    ),
    h(
        Prefix("BUG: unable to handle page fault"),
        PageFault,
        "arch/x86/mm/fault.c: show_fault_oops()",
        "BUG: unable to handle page fault for address: ffffc90000e07000",
    ),
    h(
        Prefix("BUG: unable to handle kernel NULL pointer dereference"),
        PageFault,
        "arch/x86/mm/fault.c: show_fault_oops() (old kernels)",
        "BUG: unable to handle kernel NULL pointer dereference at 0000000000000000",
    ),
    h(
        Prefix("BUG: unable to handle kernel paging request"),
        PageFault,
        "arch/x86/mm/fault.c: show_fault_oops() (old kernels)",
        "BUG: unable to handle kernel paging request at ffffffffffffffd8",
    ),
    h(
        Prefix("BUG: unable to handle kernel"),
        PageFault,
        "arch/x86/mm/fault.c: show_fault_oops() (old kernels)",
        "BUG: unable to handle kernel access to user memory at 0000000020000000",
    ),
    h(
        Prefix("BUG: Kernel NULL pointer dereference"),
        PageFault,
        "arch/powerpc/mm/fault.c: bad_page_fault()",
        "BUG: Kernel NULL pointer dereference on read at 0x00000000",
    ),
    h(
        Prefix("BUG: Unable to handle kernel"),
        PageFault,
        "arch/powerpc/mm/fault.c: bad_page_fault()",
        "BUG: Unable to handle kernel data access on write at 0xc000000000000000",
    ),
    // arch/arm64/mm/fault.c, arch/arm/mm/fault.c, arch/riscv/mm/fault.c
    h(
        Prefix("Unable to handle kernel"),
        PageFault,
        "arch/arm64/mm/fault.c: die_kernel_fault(); arch/arm, riscv __do_kernel_fault()",
        "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000008",
    ),
    h(
        Prefix("Internal error: UBSAN: "),
        Ubsan,
        "arch/arm64/kernel/traps.c: ubsan_handler() -> die(report_ubsan_failure()) (CONFIG_UBSAN_TRAP)",
        "Internal error: UBSAN: array index out of bounds: 00000000f2005512 [#1] PREEMPT SMP",
    ),
    h(
        Prefix("Internal error: "),
        Oops,
        "arch/arm64/kernel/traps.c, arch/arm/kernel/traps.c: die()",
        "Internal error: Oops: 0000000096000006 [#1] PREEMPT SMP",
    ),
    h(
        Prefix("Unhandled fault"),
        Oops,
        "arch/arm/mm/fault.c: do_DataAbort(); arm64 do_mem_abort()",
        "Unhandled fault: alignment exception (0x001) at 0x00000000",
    ),
    h(
        Prefix("Alignment trap: not handling "),
        Oops,
        "arch/arm/mm/alignment.c: do_alignment() (`swp instruction`, `ldm with s-bit set` lead to this)",
        "Alignment trap: not handling instruction e1940f9f at [<c0123456>]",
    ),
    // kernel/watchdog.c, kernel/hung_task.c, kernel/rcu/tree_stall.h, kernel/workqueue.c
    h(
        Prefix("BUG: soft lockup - CPU#"),
        SoftLockup,
        "kernel/watchdog.c: watchdog_timer_fn()",
        "watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [syz:123]",
    ),
    h(
        Contains("Watchdog detected hard LOCKUP on cpu"),
        HardLockup,
        "kernel/watchdog.c: watchdog_hardlockup_check()",
        "watchdog: Watchdog detected hard LOCKUP on cpu 1",
    ),
    h(
        Prefix("INFO: rcu"),
        RcuStall,
        "kernel/rcu/tree_stall.h: print_other_cpu_stall(), print_cpu_stall()",
        "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    ),
    h(
        Prefix("INFO: task "),
        HungTask,
        "kernel/hung_task.c: check_hung_task()",
        "INFO: task kworker/0:1:57 blocked for more than 143 seconds.",
    ),
    h(
        Prefix("BUG: workqueue lockup"),
        Bug,
        "kernel/workqueue.c: wq_watchdog_timer_fn()",
        "BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 33s!",
    ),
    h(
        Prefix("BUG: workqueue leaked lock"),
        Bug,
        "kernel/workqueue.c: process_one_work()",
        "BUG: workqueue leaked lock or atomic: kworker/0:1/0x00000000/12",
    ),
    // kernel/sched/core.c, lib/smp_processor_id.c
    h(
        Prefix("BUG: sleeping function called from invalid context"),
        AtomicSleep,
        "kernel/sched/core.c: __might_resched()",
        "BUG: sleeping function called from invalid context at mm/slab.h:419",
    ),
    h(
        Prefix("BUG: scheduling while atomic"),
        AtomicSleep,
        "kernel/sched/core.c: __schedule_bug()",
        "BUG: scheduling while atomic: syz/123/0x00000002",
    ),
    h(
        Prefix("BUG: using "),
        Bug,
        "lib/smp_processor_id.c: check_preemption_disabled()",
        "BUG: using smp_processor_id() in preemptible [00000000] code: syz/123",
    ),
    // kernel/locking/lockdep.c, spinlock_debug.c
    h(
        Contains("possible circular locking dependency"),
        Lockdep,
        "kernel/locking/lockdep.c: print_circular_bug_header()",
        "WARNING: possible circular locking dependency detected",
    ),
    h(
        Contains("possible recursive locking"),
        Lockdep,
        "kernel/locking/lockdep.c: print_deadlock_bug()",
        "WARNING: possible recursive locking detected",
    ),
    h(
        Contains("possible irq lock inversion"),
        Lockdep,
        "kernel/locking/lockdep.c: print_irq_inversion_bug()",
        "WARNING: possible irq lock inversion dependency detected",
    ),
    h(
        Contains("-safe -> "),
        Lockdep,
        "kernel/locking/lockdep.c: print_bad_irq_dependency()",
        "WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected",
    ),
    h(
        Contains("inconsistent lock state"),
        Lockdep,
        "kernel/locking/lockdep.c: print_usage_bug()",
        "WARNING: inconsistent lock state",
    ),
    h(
        Contains("suspicious RCU usage"),
        Lockdep,
        "kernel/locking/lockdep.c: lockdep_rcu_suspicious()",
        "WARNING: suspicious RCU usage",
    ),
    h(
        Contains("suspicious rcu_dereference_check() usage"),
        Lockdep,
        "kernel/lockdep.c: lockdep_rcu_dereference() (2.6.34 to 3.2)",
        "[ INFO: suspicious rcu_dereference_check() usage. ]",
    ),
    h(
        Prefix("INFO: trying to register non-static key"),
        Lockdep,
        "kernel/locking/lockdep.c: assign_lock_key()",
        "INFO: trying to register non-static key.",
    ),
    h(
        Contains("bad unlock balance"),
        Lockdep,
        "kernel/locking/lockdep.c: print_unlock_imbalance_bug()",
        "WARNING: bad unlock balance detected!",
    ),
    h(
        Contains("lock held when returning to user space"),
        Lockdep,
        "kernel/locking/lockdep.c: lockdep_sys_exit()",
        "WARNING: lock held when returning to user space!",
    ),
    h(
        Contains("Nested lock was not taken"),
        Lockdep,
        "kernel/locking/lockdep.c: print_lock_nested_lock_not_held()",
        "WARNING: Nested lock was not taken",
    ),
    h(
        Contains("held lock freed"),
        Lockdep,
        "kernel/locking/lockdep.c: print_freed_lock_bug()",
        "WARNING: held lock freed!",
    ),
    h(
        Contains("still has locks held"),
        Lockdep,
        "kernel/locking/lockdep.c: debug_check_no_locks_held()",
        "WARNING: syz/123 still has locks held!",
    ),
    h(
        Contains("lock held at task exit time"),
        Lockdep,
        "kernel/locking/lockdep.c: debug_show_held_locks() at exit (old kernels)",
        "BUG: lock held at task exit time!",
    ),
    h(
        Prefix("BUG: MAX_"),
        Lockdep,
        "kernel/locking/lockdep.c: add_chain_cache() and friends",
        "BUG: MAX_LOCKDEP_CHAINS too low!",
    ),
    h(
        Prefix("BUG: looking up invalid subclass"),
        Lockdep,
        "kernel/locking/lockdep.c: look_up_lock_class()",
        "BUG: looking up invalid subclass: 8",
    ),
    h(
        Prefix("BUG: Invalid wait context"),
        Warning,
        "kernel/locking/lockdep.c: print_lock_invalid_wait_context()",
        "[ BUG: Invalid wait context ]",
    ),
    h(
        Prefix("DEBUG_LOCKS_WARN_ON("),
        Warning,
        "kernel/locking/*.c: DEBUG_LOCKS_WARN_ON()",
        "DEBUG_LOCKS_WARN_ON(1)",
    ),
    h(
        Prefix("BUG: spinlock "),
        Bug,
        "kernel/locking/spinlock_debug.c: spin_dump()",
        "BUG: spinlock already unlocked on CPU#1, migration/1/16",
    ),
    h(
        Prefix("BUG: rwlock "),
        Bug,
        "kernel/locking/spinlock_debug.c: rwlock_bug()",
        "BUG: rwlock wrong owner on CPU#0, syz/123",
    ),
    // mm/
    h(
        Prefix("BUG: KASAN: "),
        Kasan,
        "mm/kasan/report.c: print_error_description()",
        "BUG: KASAN: slab-use-after-free in foo+0x1/0x2",
    ),
    h(
        Prefix("KASAN: null-ptr-deref in range"),
        Kasan,
        "mm/kasan/report.c: kasan_non_canonical_hook()",
        "KASAN: null-ptr-deref in range [0x0000000000000008-0x000000000000000f]",
    ),
    h(
        Prefix("KASAN: maybe wild-memory-access"),
        Kasan,
        "mm/kasan/report.c: kasan_non_canonical_hook()",
        "KASAN: maybe wild-memory-access in range [0x0003088000000000-0x0003088000000007]",
    ),
    h(
        Prefix("kasan: GPF could be caused by"),
        GeneralProtectionFault,
        "arch/x86/mm/kasan_init_64.c: kasan_die_handler() (old kernels)",
        "kasan: GPF could be caused by NULL-ptr deref or user memory access",
    ),
    h(
        Prefix("BUG: KMSAN: "),
        Kmsan,
        "mm/kmsan/report.c: kmsan_report()",
        "BUG: KMSAN: uninit-value in foo+0x1/0x2",
    ),
    h(
        Prefix("BUG: KFENCE: "),
        Kfence,
        "mm/kfence/report.c: kfence_report_error()",
        "BUG: KFENCE: use-after-free read in foo+0x1/0x2",
    ),
    h(
        Prefix("BUG: Bad page state"),
        Bug,
        "mm/page_alloc.c: bad_page()",
        "BUG: Bad page state in process syz  pfn:1234",
    ),
    h(
        Prefix("BUG: Bad page map"),
        Bug,
        "mm/memory.c: print_bad_pte()",
        "BUG: Bad page map in process syz  pte:800000 pmd:1234",
    ),
    h(
        Prefix("BUG: Bad page cache"),
        Bug,
        "mm/filemap.c: page_cache_delete() checks",
        "BUG: Bad page cache in process syz  pfn:1234",
    ),
    h(
        Prefix("BUG: Bad rss-counter state"),
        Bug,
        "kernel/fork.c: check_mm()",
        "BUG: Bad rss-counter state mm:0000000012345678 type:MM_FILEPAGES val:1",
    ),
    h(
        Prefix("BUG: non-zero pgtables_bytes"),
        Bug,
        "kernel/fork.c: check_mm()",
        "BUG: non-zero pgtables_bytes on freeing mm: 4096",
    ),
    h(
        Contains("): Object already free"),
        Bug,
        "mm/slub.c: slab_bug() via free_consistency_checks()",
        "BUG kmalloc-8 (Not tainted): Object already free",
    ),
    h(
        Contains(" overwritten"),
        Bug,
        "mm/slub.c: slab_bug() via check_bytes_and_report()",
        "BUG kmalloc-64 (Tainted: G    B): Redzone overwritten",
    ),
    h(
        Contains("): Freepointer corrupt"),
        Bug,
        "mm/slub.c: slab_bug() via check_object()",
        "BUG skbuff_head_cache (Not tainted): Freepointer corrupt",
    ),
    h(
        Contains("): Invalid object pointer"),
        Bug,
        "mm/slub.c: slab_bug() via free_consistency_checks()",
        "BUG kmalloc-32 (Not tainted): Invalid object pointer 0xffff888012345678",
    ),
    h(
        Contains("): Objects remaining"),
        Bug,
        "mm/slub.c: list_slab_objects()",
        "BUG kmalloc-96 (Not tainted): Objects remaining in kmalloc-96 on __kmem_cache_shutdown()",
    ),
    h(
        Contains(": Objects remaining on kmem_cache_close()"),
        Bug,
        "mm/slub.c: list_slab_objects() (before 2.6.35: no taint in the line)",
        "BUG sas_task: Objects remaining on kmem_cache_close()",
    ),
    h(
        Prefix("INFO: Allocated in "),
        Other,
        "mm/slub.c: print_track() (old kernels)",
        "INFO: Allocated in fasync_helper+0x29/0x90 age=0 cpu=1 pid=123",
    ),
    h(
        Prefix("INFO: Freed in "),
        Other,
        "mm/slub.c: print_track() (old kernels)",
        "INFO: Freed in fasync_helper+0x29/0x90 age=0 cpu=1 pid=123",
    ),
    h(
        Contains(" invoked oom-killer: "),
        Oom,
        "mm/oom_kill.c: dump_header()",
        "syz invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
    ),
    h(
        Contains(": page allocation failure: order:"),
        Other,
        "mm/page_alloc.c: warn_alloc()",
        "syz: page allocation failure: order:4, mode:0x40dc0(GFP_KERNEL|__GFP_COMP|__GFP_ZERO)",
    ),
    h(
        Prefix("BUG: memory leak"),
        MemoryLeak,
        "mm/kmemleak.c: kmemleak_scan() (as syzkaller prints it)",
        "BUG: memory leak",
    ),
    h(
        Prefix("unreferenced object 0x"),
        MemoryLeak,
        "mm/kmemleak.c: print_unreferenced()",
        "unreferenced object 0xffff888012345678 (size 32):",
    ),
    h(
        Prefix("usercopy: Kernel memory "),
        Bug,
        "mm/usercopy.c: usercopy_abort()",
        "usercopy: Kernel memory exposure attempt detected from SLUB object 'kmalloc-64' (offset 0, size 80)!",
    ),
    h(
        Prefix("usercopy: kernel memory "),
        Bug,
        "mm/usercopy.c: report_usercopy() (4.8 to 4.15)",
        "usercopy: kernel memory exposure attempt detected from ffff88003a4b6c40 (kmalloc-64) (80 bytes)",
    ),
    h(
        Contains("stack guard page was hit"),
        Bug,
        "arch/x86/kernel/traps.c: handle_stack_overflow()",
        "BUG: TASK stack guard page was hit at ffffc90000a3ff58 (stack is ffffc90000a40000..ffffc90000a48000)",
    ),
    // kernel/kcsan, lib/
    h(
        Prefix("BUG: KCSAN: "),
        Kcsan,
        "kernel/kcsan/report.c: print_report()",
        "BUG: KCSAN: data-race in foo / bar",
    ),
    h(
        Prefix("UBSAN: "),
        Ubsan,
        "lib/ubsan.c: ubsan_prologue(); with CONFIG_UBSAN_TRAP arch/x86/kernel/traps.c handle_bug(): `UBSAN: <check> at <func+off>`",
        "UBSAN: shift-out-of-bounds in fs/foo.c:12:34",
    ),
    h(
        Prefix("list_add corruption"),
        Bug,
        "lib/list_debug.c: __list_add_valid_or_report()",
        "list_add corruption. next->prev should be prev (ffff888012345678), but was 0000000000000000. (next=ffff888012345679).",
    ),
    h(
        Prefix("list_del corruption"),
        Bug,
        "lib/list_debug.c: __list_del_entry_valid_or_report()",
        "list_del corruption, ffff888012345678->next is LIST_POISON1 (dead000000000100)",
    ),
    h(
        Prefix("refcount_t: "),
        Warning,
        "lib/refcount.c: refcount_warn_saturate()",
        "refcount_t: underflow; use-after-free.",
    ),
    h(
        Prefix("ODEBUG: "),
        Warning,
        "lib/debugobjects.c: debug_print_object()",
        "ODEBUG: free active (active state 0) object: ffff888012345678 object type: timer_list hint: foo+0x0/0x10",
    ),
    // kernel/locking, fs/, net/
    h(
        Prefix("WARNING: kernel stack regs"),
        Warning,
        "arch/x86/kernel/unwind_frame.c: unwind_next_frame()",
        "WARNING: kernel stack regs at ffff8801d8b5f7b8 in syz:123 has bad 'bp' value 0000000000000000",
    ),
    h(
        Prefix("WARNING: kernel stack frame pointer"),
        Warning,
        "arch/x86/kernel/unwind_frame.c: unwind_next_frame()",
        "WARNING: kernel stack frame pointer at ffff8801d8b5f7b8 in syz:123 has bad value 0000000000000000",
    ),
    h(
        Prefix("WARNING: stack recursion"),
        Warning,
        "arch/x86/kernel/dumpstack_64.c: get_stack_info()",
        "WARNING: stack recursion on stack type 4",
    ),
    h(
        Prefix("WARNING: "),
        Warning,
        "WARN() with a message; unwind_orc.c orc_warn(); drivers' pr_warn() (timestamped lines only)",
        "WARNING: can't access registers at asm_common_interrupt+0x1e/0x40",
    ),
    h(
        Prefix("INFO: "),
        Other,
        "kernel/time/timekeeping.c: timekeeping_check_update(); drivers' pr_info() (timestamped lines \
         only; a line of the report open in its context)",
        "INFO: timekeeping: Cycle offset (1234) is larger than the 'kvm-clock' clock's 50% safety margin (5678)",
    ),
    h(
        Prefix("BUG: Dentry "),
        Bug,
        "fs/dcache.c: umount_check()",
        "BUG: Dentry ffff888012345678{i=0,n=.index}  still in use (1) [unmount of ext4 sda1]",
    ),
    h(
        Prefix("VFS: Busy inodes after unmount"),
        Other,
        "fs/super.c: generic_shutdown_super()",
        "VFS: Busy inodes after unmount of loop0 (ext4). Self-destruct in 5 seconds.  Have a nice day...",
    ),
    h(
        Prefix("VFS: Close: file count is 0"),
        Other,
        "fs/open.c: filp_close() (old kernels)",
        "VFS: Close: file count is 0",
    ),
    h(
        Prefix("unregister_netdevice: waiting for"),
        Other,
        "net/core/dev.c: netdev_wait_allrefs_any()",
        "unregister_netdevice: waiting for lo to become free. Usage count = 2",
    ),
    h(
        Exact("BUG:"),
        Bug,
        "any `BUG: ` whose message went to another line (a console interleaving two CPUs' \
         output): syzkaller's `BUG: corrupted`",
        "BUG:",
    ),
    h(
        Exact("WARNING:"),
        Warning,
        "any `WARNING: ` whose message went to another line: syzkaller's `WARNING: corrupted`",
        "WARNING:",
    ),
    h(
        Exact("INFO:"),
        Other,
        "any `INFO: ` whose message went to another line: syzkaller's `INFO: corrupted`",
        "INFO:",
    ),
    h(
        Prefix("Booting the kernel."),
        Other,
        "arch/x86/boot/compressed/misc.c: extract_kernel() (a reboot: syzkaller's `unexpected kernel reboot`)",
        "Booting the kernel.",
    ),
    h(
        Both("trusty: ", "ASSERT FAILED at ("),
        Other,
        "drivers/trusty/trusty-log.c (Android kernels): the Trusty TEE's failed assertion",
        "trusty: panic (caller 0xffffffffe000fbb8): ASSERT FAILED at (trusty/kernel/lib/trusty/ipc.c:472): !list_in_list(&chan->node)",
    ),
    h(
        Prefix("trusty: panic ("),
        Other,
        "drivers/trusty/trusty-log.c (Android kernels): the Trusty TEE panicked",
        "trusty: panic (caller 0xffffffffe0002314): failed(-5) to start app 6",
    ),
    h(
        Prefix("rust_kernel: panicked at "),
        Other,
        "rust/kernel/lib.rs: the Rust panic handler (the message on the next line, then BUG())",
        "rust_kernel: panicked at drivers/android/binder/node.rs:877:13:",
    ),
    h(
        Contains("SYZFATAL:"),
        Other,
        "syzkaller's Go tools, pkg/log Fatal (not the kernel: the same console)",
        "2024/06/11 12:53:40 SYZFATAL: failed to recv *flatrpc.HostMessageRaw: EOF",
    ),
    h(
        Prefix("fatal error: "),
        Other,
        "the Go runtime's fatal errors of syzkaller's programs (not the kernel: the same console)",
        "fatal error: runtimer: bad p",
    ),
    h(
        Prefix("panic: "),
        Other,
        "the Go runtime's panics (syzkaller's programs, gVisor's sentry; not the kernel: the same console)",
        "panic: runtime error: invalid memory address or nil pointer dereference",
    ),
    h(
        Prefix("SYZFAIL:"),
        Other,
        "syzkaller's executor, executor/common.h fail() (not the kernel: the same console)",
        "SYZFAIL: negative running",
    ),
    h(
        Prefix("BUG: "),
        Bug,
        "any other BUG: message (kernel/, mm/, fs/, block/)",
        "BUG: non-zero nr_ptes on freeing mm: 1",
    ),
];

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;
    use crate::report::ReportExtractor;
    use crate::report::start::{classify, normalize};

    /// The held-out files of `syzkaller/report/` (tests/data/kernel-log/README.md): the
    /// 32-bit FNV-1a hash of the name is 0 modulo 5. Failures never name them.
    fn held_out_name(name: &str) -> bool {
        let mut h: u32 = 0x811c_9dc5;
        for b in name.bytes() {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
        h.is_multiple_of(5)
    }

    /// Each example is a report start of its entry's kind, and its entry is the first that
    /// matches it.
    #[test]
    fn every_header_example_is_classified_as_its_entry_says() {
        for (i, e) in HEADERS.iter().enumerate() {
            let start = classify(e.example).unwrap_or_else(|| panic!("not a report start: {:?}", e.example));
            assert_eq!(start.kind, e.kind, "{:?} ({})", e.example, e.source);
            let first = HEADERS.iter().position(|h| h.pattern.matches(normalize(e.example)));
            assert_eq!(first, Some(i), "{:?} is covered by an earlier entry", e.example);
        }
    }

    /// Every report found in the real logs of the test data (the syzkaller reports the rules
    /// were written from, the kernelci boot logs, the captures) starts with a known header.
    #[test]
    fn every_real_report_header_is_in_the_table() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kernel-log");
        let mut files = Vec::new();
        for dir in
            ["syzkaller/report", "syzkaller/all", "kernelci/linux_boot", "kernelci/test_baseline", "captures"]
        {
            for e in fs::read_dir(data.join(dir)).unwrap() {
                files.push(e.unwrap().path());
            }
        }
        let mut seen = 0;
        let mut used = vec![false; HEADERS.len()];
        let mut unknown = Vec::new();
        let mut unknown_held_out = 0;
        for f in files {
            let held_out = f.parent().is_some_and(|d| d.ends_with("syzkaller/report"))
                && held_out_name(&f.file_name().unwrap().to_string_lossy());
            for r in ReportExtractor::extract_all(&fs::read(&f).unwrap()) {
                let line = normalize(&r.header);
                match HEADERS.iter().position(|h| h.pattern.matches(line)) {
                    Some(i) => used[i] = true,
                    None if held_out => unknown_held_out += 1,
                    None => unknown.push(format!("{}: {:?}", f.display(), r.header)),
                }
                seen += 1;
            }
        }
        assert!(unknown.is_empty(), "headers not in the table:\n{}", unknown.join("\n"));
        assert_eq!(unknown_held_out, 0, "headers not in the table in held-out files (not itemized)");
        assert!(seen > 500, "{seen} reports");
        let real = used.iter().filter(|u| **u).count();
        assert!(real * 2 > HEADERS.len(), "{real} of {} entries seen in real logs", HEADERS.len());
    }
}
