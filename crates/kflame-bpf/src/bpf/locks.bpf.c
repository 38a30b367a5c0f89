// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Lock contention aggregated in the kernel: the `contention_begin` raw tracepoint (in the
// waiter's context) keeps the time, the lock, its flags and the waiter's stacks in `start`;
// `contention_end` (same context) adds the time waited to `waited` under (task, stacks, the
// lock's flags). Raw tracepoints only, attached by name (no tracefs, kprobe or fentry).
#include "wait.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct start_t {
	__u64 ts;	// 0
	__u64 lock;	// 8
	__s32 kstack;	// 16
	__s32 ustack;	// 20
	__u32 flags;	// 24
	__u32 pad;	// 28
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct start_t);
	__uint(max_entries, 65536);
} start SEC(".maps");

// contention_begin(void *lock, unsigned int flags)
SEC("raw_tp/contention_begin")
int on_contention_begin(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (tid == 0 || (only_tgid && (id >> 32) != only_tgid))
		return 0;
	__u64 lock = ctx->args[0];
	__u32 flags = (__u32)ctx->args[1];
	struct start_t *st = bpf_map_lookup_elem(&start, &tid);
	if (st) {
		// A mutex begins twice, spinning then sleeping: the first time and stacks stay, the
		// flags are the latest. A different lock while this one is awaited (a lock taken
		// on the way to sleep) is part of this wait, not another one.
		if (st->lock == lock)
			st->flags = flags;
		return 0;
	}
	struct start_t s = {};
	s.ts = bpf_ktime_get_ns();
	s.lock = lock;
	s.flags = flags;
	s.kstack = stack_of(ctx, 0);
	s.ustack = stack_of(ctx, BPF_F_USER_STACK);
	if (bpf_map_update_elem(&start, &tid, &s, BPF_ANY))
		count_lost(LOST_STARTS);
	return 0;
}

// contention_end(void *lock, int ret)
SEC("raw_tp/contention_end")
int on_contention_end(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct start_t *st = bpf_map_lookup_elem(&start, &tid);
	if (!st || st->lock != ctx->args[0])
		return 0;
	if (stale(st->ts)) {
		bpf_map_delete_elem(&start, &tid);
		return 0;
	}
	__u64 ns = bpf_ktime_get_ns() - st->ts;
	struct wait_key key = {};
	key.tgid = id >> 32;
	key.tid = tid;
	key.kstack = st->kstack;
	key.ustack = st->ustack;
	key.on = st->flags;
	bpf_map_delete_elem(&start, &tid);
	if (ns < min_ns)
		return 0;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	add_wait(&key, ns);
	return 0;
}
