// SPDX-License-Identifier: (MIT OR Apache-2.0)
// What every kflame program shares: the stack map, the generation user space flips before
// it drains (`control`, and `sync` to wait for the programs running at the flip), the `lost`
// counters, the helpers that take a stack and count what could not be kept, and the filters
// user space sets before loading. Each program includes it once (through wait.h, or itself).
#ifndef KFLAME_COMMON_H
#define KFLAME_COMMON_H

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
// Take stacks (0: histograms and times only, as the watcher's always-on run-queue and IO
// latency need: no stack walk on the hot path).
const volatile __u32 with_stacks = 1;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

// [0]: the generation waits are counted under now.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} control SEC(".maps");

#include "sync.h"

#define LOST_WAITS 0	 // a wait not counted: the aggregation map was full
#define LOST_STACKS 1	 // a stack not taken: the stack map full, or a walk that failed
#define LOST_STARTS 2	 // a wait not timed: the map of waits in progress was full
#define LOST_UNMATCHED 3 // (bio) an IO of an unseen submitter, not counted under a pid filter
#define LOST_HISTS 4	 // an event not in a latency histogram: `hists` was full
#define LOST_OUTLIERS 5	 // (syscalls) an outlier not kept: over the bound per second, or its buffer full
#define LOST_ENDS 6	 // (offcpu) a block whose end was not seen and could not be timed: not counted
#define LOST_ENDS_TIMED 7 // (offcpu, runq) a wait whose end was not seen, timed by ran_since_picked

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 8);
} lost SEC(".maps");

static __always_inline void count_lost(__u32 what)
{
	__u64 *v = bpf_map_lookup_elem(&lost, &what);
	if (v)
		*v += 1;
}

// The current task's kernel (flags 0) or user (BPF_F_USER_STACK) stack id; a failed walk is
// counted, except a user stack that does not exist: EFAULT for a kernel thread, EPERM (recent
// kernels) when the current task is the idle one (an interrupt on an idle CPU).
static __always_inline __s32 walk_stack(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);
	int no_user_stack = (flags & BPF_F_USER_STACK) && (id == -14 /* EFAULT */ || id == -1 /* EPERM */);
	if (id < 0 && id != -14 && !no_user_stack)
		count_lost(LOST_STACKS);
	return (__s32)id;
}

static __always_inline __s32 stack_of(void *ctx, __u64 flags)
{
	if (!with_stacks)
		return -1;
	return walk_stack(ctx, flags);
}

static __always_inline __u32 generation(void)
{
	__u32 zero = 0;
	__u32 *gen = bpf_map_lookup_elem(&control, &zero);
	return gen ? *gen : 0;
}

// [0]: when user space last attached the programs again after detaching them to keep within
// a budget of CPU (bpf_ktime_get_ns's clock, CLOCK_MONOTONIC): a start noted before it may
// have lost its end while they were detached (the task ran, blocked or called again
// unseen), so it is not used.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} resumed SEC(".maps");

// A start noted at `ts` that is older than the last reattachment.
static __always_inline int stale(__u64 ts)
{
	__u32 zero = 0;
	__u64 *at = bpf_map_lookup_elem(&resumed, &zero);
	return at && ts < *at;
}

// What is read of a task to tell when it was last picked to run (CO-RE: a flavour of the
// kernel's task_struct, beside each program's own).
struct sched_entity___kf {
	__u64 sum_exec_runtime;
	__u64 prev_sum_exec_runtime;
} __attribute__((preserve_access_index));

struct task_struct___picked {
	unsigned int policy;
	struct sched_entity___kf se;
} __attribute__((preserve_access_index));

// include/uapi/linux/sched.h: the fair class's policies (SCHED_NORMAL 0, BATCH 3, IDLE 5).
#define KF_SCHED_BATCH 3
#define KF_SCHED_IDLE 5

// The run time (ns) of `task`, the one on this CPU, since it was last picked to run: it has
// not left the CPU since, so it was picked that long before `now`. Now and then the switch
// that brings a task back reaches no program (a few in a thousand switches under load, for
// perf's sched_switch events too): a program that finds its start still open when the task
// leaves the CPU again closes it then. The fair class's `sum_exec_runtime` less its value when
// the task was picked; false for other classes.
static __always_inline int ran_since_picked(void *task, __u64 *ran)
{
	struct task_struct___picked *t = task;
	unsigned int policy = BPF_CORE_READ(t, policy);
	if (policy != 0 && policy != KF_SCHED_BATCH && policy != KF_SCHED_IDLE)
		return 0;
	*ran = BPF_CORE_READ(t, se.sum_exec_runtime) - BPF_CORE_READ(t, se.prev_sum_exec_runtime);
	return 1;
}

#include "hist.h"

#endif
