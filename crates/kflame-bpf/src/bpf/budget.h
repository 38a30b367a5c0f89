// SPDX-License-Identifier: (MIT OR Apache-2.0)
// The bound on outliers every program that keeps them shares (syscalls.bpf.c, outlier.h):
// at most `max_outliers` per CPU and generation (a second); the rest are counted by the
// caller (LOST_OUTLIERS).
#ifndef KFLAME_BUDGET_H
#define KFLAME_BUDGET_H

#include "common.h"

// Set by user space before loading (0: no outliers kept).
const volatile __u32 max_outliers = 0;

// Outliers kept on this CPU in the generation `gen`.
struct budget_t {
	__u32 gen;
	__u32 kept;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct budget_t);
	__uint(max_entries, 1);
} budget SEC(".maps");

// Takes one from the bound `limit` of this CPU's `kept` (a `budget_t` array of one) in the
// current generation: false once it is reached.
static __always_inline int take_one(void *kept, __u32 limit)
{
	__u32 zero = 0;
	struct budget_t *b = bpf_map_lookup_elem(kept, &zero);
	if (!b)
		return 0;
	__u32 gen = generation();
	if (b->gen != gen) {
		b->gen = gen;
		b->kept = 0;
	}
	if (b->kept >= limit)
		return 0;
	b->kept += 1;
	return 1;
}

// An outlier may be kept now on this CPU (the bound per generation not reached).
static __always_inline int may_keep(void)
{
	return take_one(&budget, max_outliers);
}

// Stack walks a program taking no stacks otherwise (`with_stacks` 0) may make per CPU and
// generation, set by user space before loading: the watcher's always-on IO program takes its
// submitters' stacks within it, so that its outliers have them at a bounded cost (a walk of
// both stacks costs one or two microseconds); 0: none.
const volatile __u32 walks_per_gen = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct budget_t);
	__uint(max_entries, 1);
} walk_budget SEC(".maps");

// A stack walk may be made now on this CPU (the bound per generation not reached).
static __always_inline int may_walk(void)
{
	return walks_per_gen && take_one(&walk_budget, walks_per_gen);
}

#endif
