// SPDX-License-Identifier: (MIT OR Apache-2.0)
// What the waiting-time programs (locks, runq, bio) share: the key their time is summed
// under in the kernel, the maps user space drains (`waited`, `stacks`, `control`, `lost`),
// and the helpers that count what could not be kept. Each program includes it once.
#ifndef KFLAME_WAIT_H
#define KFLAME_WAIT_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#define TASK_COMM_LEN 16
#define MAX_STACK_DEPTH 127

// Set by user space before loading.
// Waits shorter than this are not counted.
const volatile __u64 min_ns = 1;
// Only this process (0: every one).
const volatile __u32 only_tgid = 0;

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
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wait_key);
	__type(value, struct wait_value);
	__uint(max_entries, 32768);
} waited SEC(".maps");

// [0]: the generation waits are counted under now.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} control SEC(".maps");

#include "sync.h"

#define LOST_WAITS 0	 // a wait not counted: `waited` was full
#define LOST_STACKS 1	 // a stack not taken: the stack map full, or a walk that failed
#define LOST_STARTS 2	 // a wait not timed: the map of waits in progress was full
#define LOST_UNMATCHED 3 // (bio) an IO of an unseen submitter, not counted under a pid filter

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 4);
} lost SEC(".maps");

static __always_inline void count_lost(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &what);
	if (v)
		*v += 1;
}

// The current task's kernel (flags 0) or user (BPF_F_USER_STACK) stack id; a failed walk is
// counted, except a user stack of a kernel thread (EFAULT), which has none.
static __always_inline __s32 stack_of(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);
	if (id < 0 && id != -14 /* EFAULT */)
		count_lost(LOST_STACKS);
	return (__s32)id;
}

static __always_inline __u32 generation(void)
{
	__u32 zero = 0;
	__u32 *gen = bpf_map_lookup_elem(&control, &zero);
	return gen ? *gen : 0;
}

// Adds `ns` (one wait) under `key`, whose gen it sets; counts a full map.
static __always_inline void add_wait(struct wait_key *key, __u64 ns)
{
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

#endif
