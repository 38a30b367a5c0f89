// SPDX-License-Identifier: (MIT OR Apache-2.0)
// What the waiting-time programs (locks, runq, bio) share beyond common.h: the key their
// time is summed under in the kernel, the map user space drains (`waited`), and the helper
// that adds a wait. Each program includes it once.
#ifndef KFLAME_WAIT_H
#define KFLAME_WAIT_H

#include "common.h"
#include "outlier.h"

// The key time is summed under; `src/drain.rs` reads it at these offsets (40 bytes).
struct wait_key {
	__u32 tgid;	 // 0
	__u32 tid;	 // 4
	__s32 kstack;	 // 8: id in `stacks`, < 0 when not taken
	__s32 ustack;	 // 12
	__u32 on;	 // 16: what was waited on (lock flags, device, CPU)
	__u32 gen;	 // 20: the generation user space is not reading
	char comm[TASK_COMM_LEN]; // 24
};

struct wait_value {
	__u64 ns;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wait_key);
	__type(value, struct wait_value);
	__uint(max_entries, 32768);
} waited SEC(".maps");

// Sum waits per task and stacks in `waited` (0: the latency histograms only).
const volatile __u32 with_waits = 1;

// Keeps the wait of `ns` under `key` as an outlier when at least `slow` (outlier.h) and,
// with waits summed, adds it under `key`, whose gen it sets; counts a full map. The caller
// has counted it in its histogram (count_latency gave `slow`).
static __always_inline void keep_wait(struct wait_key *key, __u64 ns, __u64 slow)
{
	keep_outlier(key->tgid, key->tid, key->on, key->kstack, key->ustack, key->comm, ns, slow);
	if (!with_waits)
		return;
	key->gen = generation();
	struct wait_value *v = bpf_map_lookup_elem(&waited, key);
	if (!v) {
		struct wait_value zero = {};
		// Another CPU may insert it first (EEXIST): look it up again either way.
		bpf_map_update_elem(&waited, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&waited, key);
		if (!v) {
			count_lost(LOST_WAITS);
			return;
		}
	}
	__sync_fetch_and_add(&v->ns, ns);
	__sync_fetch_and_add(&v->count, 1);
}

// Whether a wait of `ns` counted with threshold `slow` needs its key: summed per task, or
// kept as an outlier.
static __always_inline int wait_kept(__u64 ns, __u64 slow)
{
	return with_waits || (max_outliers && ns >= slow);
}

// Counts `ns` (one wait) in the histogram of `key->on`, then keep_wait.
static __always_inline void add_wait(struct wait_key *key, __u64 ns)
{
	keep_wait(key, ns, count_latency(key->on, ns));
}

#endif
