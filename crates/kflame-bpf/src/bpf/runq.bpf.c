// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Run-queue time aggregated in the kernel: how long a task waited runnable before it ran.
// `sched_wakeup`/`sched_wakeup_new` (a task runnable from now) and `sched_switch` (a task
// switched out still runnable is runnable from now; at every switch the task leaving keeps
// its stacks, the ones it will run again with; the task coming in adds the time it waited)
// fill `waited` under (task, its stacks, the CPU) and the latency histogram of the CPU. Raw
// tracepoints only, attached by name (no tracefs, kprobe or fentry).
#include "wait.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct task_struct {
	int pid;
	int tgid;
	char comm[TASK_COMM_LEN];
	unsigned int __state;
} __attribute__((preserve_access_index));

// The state field was `state` before Linux 5.14.
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

struct left_t {
	__s32 kstack; // 0
	__s32 ustack; // 4
};

// When each runnable task became runnable, 0 while it runs or sleeps: an entry per task is
// kept and written in place (a lookup, no bucket lock or allocation on the hot path), and
// removed when the task exits.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 65536);
} runnable SEC(".maps");

// The stacks each task left the CPU with (least recently used evicted: tasks that exited).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct left_t);
	__uint(max_entries, 65536);
} left SEC(".maps");

static __always_inline long state_of(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

static __always_inline int wanted(struct task_struct *t, __u32 *tid)
{
	*tid = BPF_CORE_READ(t, pid);
	if (*tid == 0)
		return 0; // the idle task
	return !only_tgid || (__u32)BPF_CORE_READ(t, tgid) == only_tgid;
}

// The task `tid` is runnable from `since` (0: not runnable any more); `v` its entry in
// `runnable`, if it has one.
static __always_inline void put_runnable(__u64 *v, __u32 tid, __u64 since)
{
	if (v)
		*v = since;
	else if (since && bpf_map_update_elem(&runnable, &tid, &since, BPF_ANY))
		count_lost(LOST_STARTS);
}

static __always_inline void set_runnable(__u32 tid, __u64 since)
{
	put_runnable(bpf_map_lookup_elem(&runnable, &tid), tid, since);
}

static __always_inline void runnable_now(struct task_struct *p)
{
	__u32 tid;
	if (!wanted(p, &tid))
		return;
	set_runnable(tid, bpf_ktime_get_ns());
}

// sched_wakeup(struct task_struct *p)
SEC("raw_tp/sched_wakeup")
int on_wakeup(struct bpf_raw_tracepoint_args *ctx)
{
	runnable_now((struct task_struct *)ctx->args[0]);
	return 0;
}

// sched_wakeup_new(struct task_struct *p)
SEC("raw_tp/sched_wakeup_new")
int on_wakeup_new(struct bpf_raw_tracepoint_args *ctx)
{
	runnable_now((struct task_struct *)ctx->args[0]);
	return 0;
}

// Task `t` (`tid`) waited `ns` runnable on this CPU before it ran.
static __always_inline void wait_ended(struct task_struct *t, __u32 tid, __u64 ns)
{
	if (ns < min_ns)
		return;
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 slow = count_latency(cpu, ns);
	// The histograms alone (the watcher's always-on run queue): the task's name and stacks
	// only for an outlier.
	if (!wait_kept(ns, slow))
		return;
	struct wait_key key = {};
	key.tgid = BPF_CORE_READ(t, tgid);
	key.tid = tid;
	key.on = cpu;
	BPF_CORE_READ_STR_INTO(&key.comm, t, comm);
	struct left_t *l = with_stacks ? bpf_map_lookup_elem(&left, &tid) : 0;
	if (l) {
		key.kstack = l->kstack;
		key.ustack = l->ustack;
	} else {
		key.kstack = -1;
		key.ustack = -1;
	}
	keep_wait(&key, ns, slow);
}

// prev leaves the CPU with a start of a wait still noted. Either a wakeup came while it was
// still running (the start is after it was picked), or the switch that brought it here
// reached no program (common.h's `ran_since_picked`): then the wait ended when it was
// picked, on this CPU, where it has run since.
static __always_inline void unseen_end(struct task_struct *prev, __u32 tid, __u64 now, __u64 since)
{
	__u64 ran;
	if (stale(since) || !ran_since_picked(prev, &ran) || ran >= now || now - ran <= since)
		return;
	count_lost(LOST_ENDS_TIMED);
	wait_ended(prev, tid, now - ran - since);
}

// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...)
SEC("raw_tp/sched_switch")
int on_switch(struct bpf_raw_tracepoint_args *ctx)
{
	int preempt = (int)ctx->args[0];
	struct task_struct *prev = (struct task_struct *)ctx->args[1];
	struct task_struct *next = (struct task_struct *)ctx->args[2];
	__u64 now = bpf_ktime_get_ns();
	__u32 tid;
	if (wanted(prev, &tid)) {
		__u64 *v = bpf_map_lookup_elem(&runnable, &tid);
		if (v && *v)
			unseen_end(prev, tid, now, *v);
		// The current task is still prev: its stacks are the ones it will run again with.
		if (with_stacks) {
			struct left_t l = {};
			l.kstack = stack_of(ctx, 0);
			l.ustack = stack_of(ctx, BPF_F_USER_STACK);
			bpf_map_update_elem(&left, &tid, &l, BPF_ANY);
		}
		// Runnable from now when preempted; asleep otherwise, so that a wakeup seen while it
		// was still running is no longer the start.
		put_runnable(v, tid, preempt || state_of(prev) == 0 ? now : 0);
	}
	if (!wanted(next, &tid))
		return 0;
	__u64 *since = bpf_map_lookup_elem(&runnable, &tid);
	if (!since || *since == 0)
		return 0;
	__u64 ns = now - *since;
	int was_stale = stale(*since);
	*since = 0;
	if (!was_stale)
		wait_ended(next, tid, ns);
	return 0;
}

// sched_process_exit(struct task_struct *p, ...), in the exiting thread's context: its entry
// goes.
SEC("raw_tp/sched_process_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&runnable, &tid);
	return 0;
}
