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

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Set by user space before loading (only_tgid: common.h, slow_ns: hist.h; min_ns is not
// used here).
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
	__u32 nr = f->nr;
	f->ts = 0;
	count_latency(nr, ns);
	// Outliers: a record of each call at least slow_ns long (tid, nr, ns, its stacks, taken
	// here, in the caller's context) goes here, into a ring buffer user space reads.
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
