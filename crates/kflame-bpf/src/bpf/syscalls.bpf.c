// SPDX-License-Identifier: (MIT OR Apache-2.0)
// System-call latency histograms aggregated in the kernel: the `sys_enter` raw tracepoint
// keeps (time, nr) in the calling thread's entry of `inflight`; `sys_exit` (same thread)
// counts the time since in hist.h's `hists` under the call's number (a per-CPU histogram: no
// atomics, no cache line shared between CPUs on the hottest path of the kernel), calls at
// least `slow_ns` long also as slow. Raw tracepoints only, attached by name.
//
// A thread's entry stays while it lives (written in place at each call, no allocation on the
// hot path): `sched_process_exit` deletes it (a thread may end inside a call that never
// returns: exit, exit_group, or killed while blocked), `sched_process_exec` moves it when a
// thread that is not the leader execs (it takes the leader's tid, its execve returns under
// it). A full `inflight` is counted (LOST_STARTS), as a full `hists` (LOST_HISTS).
#include "common.h"
#include "budget.h"
#include <bpf/bpf_tracing.h>

// What is read of a task (CO-RE).
struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Set by user space before loading (only_tgid: common.h, slow_ns: hist.h; min_ns is not
// used here).
// Not this process (0: none left out): the recorder's own calls (its drains wait for RCU).
const volatile __u32 skip_tgid = 0;

// Blocks inside a call at least this long have their stack kept for its outlier record.
const volatile __u64 wait_min_ns = 1000000;

// Frames kept of an outlier's wait (kernel) and user stacks.
#define WAIT_DEPTH 32
#define USER_DEPTH 64
// System call numbers with a threshold of their own in `slow_of`.
#define NR_MAX 1024

// The call a thread is in; ts 0: none (returned, or entered before the program was attached).
// While it is switched out inside the call, off_ts is when it left the CPU; longest, the
// longest block of the call so far whose stack is in `waits`.
struct inflight_t {
	__u64 ts;
	__u32 nr;
	__u32 pad;
	__u64 off_ts;
	__u64 longest;
};

// The outlier threshold of each call (set by user space after loading; 0: `slow_ns`;
// ~0: none, for the calls whose purpose is to wait: poll, epoll_wait, futex, nanosleep...).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, NR_MAX);
} slow_of SEC(".maps");

// The kernel stack of the longest block of each thread's call in progress, taken when the
// thread came back (bpf_get_task_stack of the task switched in: where it waited).
struct wait_t {
	__u64 ns;
	__s64 len; // bytes of ips, or < 0: the walk failed
	__u64 ips[WAIT_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct wait_t);
	__uint(max_entries, 8192);
} waits SEC(".maps");

// One slow call, as user space reads it from `outliers` (`src/syscalls.rs`, 880 bytes).
struct outlier_t {
	__u64 end;     // 0: CLOCK_MONOTONIC ns at its exit
	__u64 ns;      // 8: its duration
	__u32 tgid;    // 16
	__u32 tid;     // 20
	__u32 nr;      // 24
	__u32 cpu;     // 28
	__u64 wait_ns; // 32: its longest block with a stack kept (0: none)
	__s64 wait_len; // 40: bytes of wait
	__s64 user_len; // 48: bytes of user
	char comm[TASK_COMM_LEN]; // 56
	__u64 wait[WAIT_DEPTH]; // 72
	__u64 user[USER_DEPTH]; // 328
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} outliers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct inflight_t);
	__uint(max_entries, 65536);
} inflight SEC(".maps");

// sys_enter(struct pt_regs *regs, long id)
SEC("raw_tp/sys_enter")
int on_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if ((only_tgid && (id >> 32) != only_tgid) || (skip_tgid && (id >> 32) == skip_tgid))
		return 0;
	long nr = (long)ctx->args[1];
	if (nr < 0)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct inflight_t *f = bpf_map_lookup_elem(&inflight, &tid);
	if (f) {
		f->ts = now;
		f->nr = (__u32)nr;
		f->off_ts = 0;
		f->longest = 0;
		return 0;
	}
	struct inflight_t n = { .ts = now, .nr = (__u32)nr };
	if (bpf_map_update_elem(&inflight, &tid, &n, BPF_NOEXIST))
		count_lost(LOST_STARTS);
	return 0;
}

// sys_exit(struct pt_regs *regs, long ret): the nr is the one entered (the tracepoint's own
// may be -1, after an execve).
SEC("raw_tp/sys_exit")
int on_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (only_tgid && (id >> 32) != only_tgid)
		return 0;
	struct inflight_t *f = bpf_map_lookup_elem(&inflight, &tid);
	if (!f || !f->ts)
		return 0;
	if (stale(f->ts)) {
		f->ts = 0;
		return 0;
	}
	__u64 end = bpf_ktime_get_ns();
	__u64 ns = end - f->ts;
	__u32 nr = f->nr;
	f->ts = 0;
	__u64 slow = slow_ns;
	__u32 at = nr;
	__u64 *own = bpf_map_lookup_elem(&slow_of, &at);
	if (own && *own)
		slow = *own;
	count_latency_over(nr, ns, slow);
	if (ns < slow)
		return 0;
	// An outlier: kept with the caller's user stack (where the call was made) and the
	// kernel stack of its longest block (where it waited), bounded per CPU and second.
	if (!may_keep()) {
		count_lost(LOST_OUTLIERS);
		return 0;
	}
	struct outlier_t *o = bpf_ringbuf_reserve(&outliers, sizeof(*o), 0);
	if (!o) {
		count_lost(LOST_OUTLIERS);
		return 0;
	}
	o->end = end;
	o->ns = ns;
	o->tgid = id >> 32;
	o->tid = tid;
	o->nr = nr;
	o->cpu = bpf_get_smp_processor_id();
	bpf_get_current_comm(&o->comm, sizeof(o->comm));
	o->wait_ns = 0;
	o->wait_len = 0;
	struct wait_t *w = f->longest ? bpf_map_lookup_elem(&waits, &tid) : 0;
	if (w && w->len > 0) {
		o->wait_ns = w->ns;
		o->wait_len = w->len;
		__builtin_memcpy(o->wait, w->ips, sizeof(o->wait));
	}
	f->longest = 0;
	o->user_len = bpf_get_stack(ctx, o->user, sizeof(o->user), BPF_F_USER_STACK);
	bpf_ringbuf_submit(o, 0);
	return 0;
}

// sched_process_exit(struct task_struct *p), in the exiting thread's context: its entry goes.
SEC("raw_tp/sched_process_exit")
int on_process_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&inflight, &tid);
	return 0;
}

// sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm), in the
// exec'ing thread's context: a thread that was not the leader has taken the leader's tid, and
// its execve returns under it.
SEC("raw_tp/sched_process_exec")
int on_process_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 old = (__u32)ctx->args[1];
	if (old == tid)
		return 0;
	struct inflight_t *f = bpf_map_lookup_elem(&inflight, &old);
	if (!f)
		return 0;
	struct inflight_t moved = *f;
	bpf_map_delete_elem(&inflight, &old);
	if (bpf_map_update_elem(&inflight, &tid, &moved, BPF_ANY))
		count_lost(LOST_STARTS);
	return 0;
}

// sched_switch as a BTF tracepoint (its arguments typed, so that the task switched in can be
// handed to bpf_get_task_stack; still a tracepoint, no trampoline). A thread leaving the CPU
// inside a call notes when; coming back, a block at least wait_min_ns long and the longest of
// the call so far has its stack kept: where it waited. Optional: without it (a kernel without
// BTF tracepoints or bpf_get_task_stack, before 5.9) outliers have no wait stack.
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_tid = BPF_CORE_READ(prev, pid);
	struct inflight_t *f = prev_tid ? bpf_map_lookup_elem(&inflight, &prev_tid) : 0;
	if (f && f->ts)
		f->off_ts = now;
	__u32 next_tid = BPF_CORE_READ(next, pid);
	f = next_tid ? bpf_map_lookup_elem(&inflight, &next_tid) : 0;
	if (!f || !f->ts || !f->off_ts || stale(f->off_ts))
		return 0;
	__u64 block = now - f->off_ts;
	f->off_ts = 0;
	if (block < wait_min_ns || block <= f->longest)
		return 0;
	struct wait_t *w = bpf_map_lookup_elem(&waits, &next_tid);
	if (!w) {
		struct wait_t zero = {};
		bpf_map_update_elem(&waits, &next_tid, &zero, BPF_ANY);
		w = bpf_map_lookup_elem(&waits, &next_tid);
		if (!w)
			return 0;
	}
	w->ns = block;
	w->len = bpf_get_task_stack(next, w->ips, sizeof(w->ips), 0);
	f->longest = block;
	return 0;
}
