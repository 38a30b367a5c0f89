// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Outliers of the waiting-time programs (locks, run queue, block IO, off-CPU): each wait at
// least its label's threshold long (hist.h's `slow_for`) is a record in the ring buffer `wait_outliers`, with its task,
// label, CPU, end and the ids of the stacks its wait was counted under, at most
// `max_outliers` per CPU and generation (a second); the rest are counted (LOST_OUTLIERS).
// User space reads them at its drain before it frees stack ids (`src/drain.rs`), so their
// stacks are still in `stacks`. The system-call program has its own (syscalls.bpf.c).
#ifndef KFLAME_OUTLIER_H
#define KFLAME_OUTLIER_H

#include "common.h"
#include "budget.h"

// One slow wait, as user space reads it (`src/drain.rs`, 56 bytes).
struct wait_outlier_t {
	__u64 end;	// 0: CLOCK_MONOTONIC ns when the wait ended
	__u64 ns;	// 8: its length
	__u32 tgid;	// 16
	__u32 tid;	// 20
	__u32 on;	// 24: its label (lock flags, CPU, disk, task state)
	__u32 cpu;	// 28: where it ended
	__s32 kstack;	// 32: ids in `stacks` (< 0: none)
	__s32 ustack;	// 36
	char comm[TASK_COMM_LEN]; // 40
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} wait_outliers SEC(".maps");

// Keeps the wait of `ns` as an outlier when it is slow (at least `slow`, its label's
// threshold) and the bound allows.
static __always_inline void keep_outlier(__u32 tgid, __u32 tid, __u32 on, __s32 kstack, __s32 ustack,
					 const char *comm, __u64 ns, __u64 slow)
{
	if (!max_outliers || ns < slow)
		return;
	if (!may_keep()) {
		count_lost(LOST_OUTLIERS);
		return;
	}
	struct wait_outlier_t *o = bpf_ringbuf_reserve(&wait_outliers, sizeof(*o), 0);
	if (!o) {
		count_lost(LOST_OUTLIERS);
		return;
	}
	o->end = bpf_ktime_get_ns();
	o->ns = ns;
	o->tgid = tgid;
	o->tid = tid;
	o->on = on;
	o->cpu = bpf_get_smp_processor_id();
	o->kstack = kstack;
	o->ustack = ustack;
	__builtin_memcpy(o->comm, comm, TASK_COMM_LEN);
	bpf_ringbuf_submit(o, 0);
}

#endif
