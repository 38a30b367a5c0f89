// SPDX-License-Identifier: (MIT OR Apache-2.0)
// System-call latency histograms aggregated in the kernel: the `sys_enter` raw tracepoint
// keeps (time, nr) in the calling thread's entry of `inflight`; `sys_exit` (same thread)
// counts the time since in `latency`, a per-CPU histogram under (nr, generation): no atomics,
// no cache line shared between CPUs on the hottest path of the kernel. Calls at least
// `slow_ns` long are also counted per nr in `slow`. Raw tracepoints only, attached by name.
//
// A thread's entry stays while it lives (written in place at each call, no allocation on the
// hot path): `sched_process_exit` deletes it (a thread may end inside a call that never
// returns: exit, exit_group, or killed while blocked), `sched_process_exec` moves it when a
// thread that is not the leader execs (it takes the leader's tid, its execve returns under
// it). A full `inflight` is counted (LOST_STARTS), as a full `latency` or `slow` (LOST_WAITS).
#include "common.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// kflame::latency::SLOTS
#define SLOTS 128

// Set by user space before loading (only_tgid: common.h; min_ns is not used here).
// Calls at least this long are counted in `slow` too.
const volatile __u64 slow_ns = 10000000;
// Not this process (0: none left out): the recorder's own calls (its drains wait for RCU).
const volatile __u32 skip_tgid = 0;

// The call a thread is in; ts 0: none (returned, or entered before the program was attached).
struct inflight_t {
	__u64 ts;
	__u32 nr;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct inflight_t);
	__uint(max_entries, 65536);
} inflight SEC(".maps");

// The key of `latency` and `slow`; `src/syscalls.rs` reads it (8 bytes).
struct call_key {
	__u32 nr;  // 0
	__u32 gen; // 4: the generation user space is not reading
};

// kflame::latency::Histogram, as user space sums it over the CPUs.
struct call_hist {
	__u64 counts[SLOTS];
	__u64 max_ns;
};

// Allocated at the first call of a nr in a generation only (a few hundred keys at most, each
// of one value per CPU): memory for the calls made, not for every possible one.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, struct call_key);
	__type(value, struct call_hist);
	__uint(max_entries, 2048);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} latency SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, struct call_key);
	__type(value, __u64);
	__uint(max_entries, 2048);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} slow SEC(".maps");

// The bucket of `ns`, exactly as kflame::latency::slot_of computes it (keep the two the same):
// below 1024 ns four buckets of 256 ns, above each power of two split in four; the last
// bucket open-ended. The most significant bit is found with shifts (no loop, no clz).
static __always_inline __u32 slot_of(__u64 ns)
{
	__u64 v = ns >> 8;
	if (v < 4)
		return (__u32)v;
	__u64 x = v;
	__u32 msb = 0;
	if (x >> 32) { x >>= 32; msb += 32; }
	if (x >> 16) { x >>= 16; msb += 16; }
	if (x >> 8) { x >>= 8; msb += 8; }
	if (x >> 4) { x >>= 4; msb += 4; }
	if (x >> 2) { x >>= 2; msb += 2; }
	if (x >> 1) { msb += 1; }
	// msb >= 2 here (v >= 4).
	__u32 sub = (__u32)(v >> (msb - 2)) & 3;
	__u32 slot = 4 * (msb - 1) + sub;
	return slot < SLOTS - 1 ? slot : SLOTS - 1;
}

// A zero histogram to create keys with (too large for the BPF stack).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct call_hist);
	__uint(max_entries, 1);
} zero_hist SEC(".maps");

// Creates `key` in `map` with the value `zero` and returns this CPU's value; NULL when the
// map is full (counted). Only this CPU writes its values, but another CPU may create the
// key first (EEXIST): look it up again either way.
static __always_inline void *created(void *map, struct call_key *key, void *zero)
{
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	void *v = bpf_map_lookup_elem(map, key);
	if (!v)
		count_lost(LOST_WAITS);
	return v;
}

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
	__u64 ns = bpf_ktime_get_ns() - f->ts;
	struct call_key key = { .nr = f->nr, .gen = generation() };
	f->ts = 0;
	struct call_hist *h = bpf_map_lookup_elem(&latency, &key);
	if (!h) {
		// The first call of this nr in this generation.
		__u32 zero = 0;
		struct call_hist *empty = bpf_map_lookup_elem(&zero_hist, &zero);
		if (empty)
			h = created(&latency, &key, empty);
	}
	if (h) {
		h->counts[slot_of(ns) & (SLOTS - 1)] += 1;
		if (ns > h->max_ns)
			h->max_ns = ns;
	}
	if (ns >= slow_ns) {
		__u64 *s = bpf_map_lookup_elem(&slow, &key);
		if (!s) {
			__u64 none = 0;
			s = created(&slow, &key, &none);
		}
		if (s)
			*s += 1;
		// Outliers: a record of each slow call (tid, nr, ns, its stacks, taken here, in the
		// caller's context) goes here, into a ring buffer user space reads.
	}
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
