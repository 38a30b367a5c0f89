// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Off-CPU time aggregated in the kernel: a task switched out leaves its time, state and
// stacks in `start`; switched in again, the time it was away is added to `blocked` under
// (task, its stacks, and with wakers on, the stacks of the task that woke it, kept by the
// sched_waking tracepoint in the waker's own context). Raw tracepoints only (attached by name:
// no tracefs, no kprobe, fentry or trampoline). User space reads and clears `blocked` once
// per interval.
#include "common.h"
#include "outlier.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// What is read of a task, as the kernel's BTF names it (CO-RE: offsets are relocated to the
// running kernel's). The state field was `state` before Linux 5.14 and `__state` since.
struct task_struct {
	int pid;
	int tgid;
	unsigned int flags;
	char comm[TASK_COMM_LEN];
	unsigned int __state;
} __attribute__((preserve_access_index));

// include/linux/sched.h
#define PF_KTHREAD 0x00200000
#define TASK_REPORT 0x7f
#define TASK_IDLE 0x402

struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

// Set by user space before loading (min_ns and only_tgid: common.h).
const volatile __u64 max_ns = ~0ULL;
// Bit `s` set: count blocks that began in state `s`, numbered as the kernel reports states
// (__task_state_index): 1 S, 2 D, 3 T, 4 t, 5 X, 6 Z, 7 P, 8 I; 0: preempted while runnable.
const volatile __u64 state_mask = (1 << 1) | (1 << 2) | (1 << 8);
// Count kernel threads waiting for work (asleep in S or I) too.
const volatile __u32 idle_kthreads = 0;
const volatile __u32 with_wakers = 0;
// Sum blocks per task and stacks in `blocked` (0: the latency histograms only).
const volatile __u32 with_waits = 1;
// A block of a user task that follows one shorter than this (ns), in the same state, program
// and place, takes the stacks that block had instead of walking them again (one in
// REFRESH_STACKS, drawn at random, walks them anyway); 0: every block walks its stacks. The
// place is where the task entered the kernel: the system call, the user instruction and stack
// pointer it entered from (a page fault's too). Walking both stacks costs about 1.7 us a switch
// here: a task switching 70,000 times a second (a pipe ping-pong) would cost a CPU a quarter
// of its time, and such a task blocks in the same place each time.
const volatile __u64 reuse_stacks_under_ns = 0;
#define REFRESH_STACKS 64

// One per task that blocked, kept while it runs (its last stacks, for the next block):
// removed when it exits or execs, least recently used evicted when the map is full.
struct start_t {
	__u64 ts; // when it was switched out; 0 while it runs
	__u32 tgid;
	__s32 kstack;
	__s32 ustack;
	__u32 state;
	char comm[TASK_COMM_LEN];
	__u64 last_ns; // how long its last block lasted
	__u64 place;   // where it entered the kernel for its last block (place_of)
};

// The user registers saved at kernel entry (x86-64 names; elsewhere no place is found and
// every block walks its stacks).
struct pt_regs___kf {
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long sp;
} __attribute__((preserve_access_index));

// Where the current task entered the kernel: its system call (-1: an exception such as a
// page fault), user instruction and stack pointer, mixed; 0 when not known.
static __always_inline __u64 place_of(void)
{
	struct pt_regs___kf *regs = (struct pt_regs___kf *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs || !bpf_core_field_exists(regs->orig_ax))
		return 0;
	__u64 nr = BPF_CORE_READ(regs, orig_ax), ip = BPF_CORE_READ(regs, ip), sp = BPF_CORE_READ(regs, sp);
	__u64 h = (ip * 0x9E3779B97F4A7C15ULL) ^ (sp * 0xC2B2AE3D27D4EB4FULL) ^ (nr * 0x165667B19E3779F9ULL);
	return h ? h : 1;
}

struct waker_t {
	__u32 tgid;
	__u32 tid;
	__s32 kstack;
	__s32 ustack;
	char comm[TASK_COMM_LEN];
};

struct key_t {
	__u32 tgid;
	__u32 tid;
	__s32 kstack;
	__s32 ustack;
	__u32 state;
	__u32 waker_tgid;
	__u32 waker_tid;
	__s32 waker_kstack;
	__s32 waker_ustack;
	// The generation user space is not reading: it flips it, then reads the other one.
	__u32 gen;
	char comm[TASK_COMM_LEN];
	char waker_comm[TASK_COMM_LEN];
};

struct value_t {
	__u64 ns;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct start_t);
	__uint(max_entries, 65536);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct waker_t);
	__uint(max_entries, 65536);
} wakers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct key_t);
	__type(value, struct value_t);
	__uint(max_entries, 32768);
} blocked SEC(".maps");

static __always_inline long state_of(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

// A block of task `tid` that began at `st->ts` and lasted `delta` ns ended: counted (the entry
// deleted, unless entries are kept or `keep`).
static __always_inline void count_block(__u32 tid, struct start_t *st, __u64 delta, int keep)
{
	st->ts = 0;
	st->last_ns = delta;
	struct key_t key = {};
	key.tgid = st->tgid;
	key.tid = tid;
	key.kstack = st->kstack;
	key.ustack = st->ustack;
	key.state = st->state;
	__builtin_memcpy(key.comm, st->comm, sizeof(key.comm));
	if (!reuse_stacks_under_ns && !keep)
		bpf_map_delete_elem(&start, &tid);
	struct waker_t *w = with_wakers ? bpf_map_lookup_elem(&wakers, &tid) : 0;
	if (w) {
		key.waker_tgid = w->tgid;
		key.waker_tid = w->tid;
		key.waker_kstack = w->kstack;
		key.waker_ustack = w->ustack;
		__builtin_memcpy(key.waker_comm, w->comm, sizeof(key.waker_comm));
		bpf_map_delete_elem(&wakers, &tid);
	} else {
		key.waker_kstack = -1;
		key.waker_ustack = -1;
	}
	if (delta < min_ns || delta > max_ns)
		return;
	__u64 slow = count_latency(key.state, delta);
	// Outliers of uninterruptible blocks alone (D: IO, a page, a lock slept on): a long sleep
	// in S is mostly a task waiting for work (poll, futex, nanosleep), as a system call's
	// outliers leave out the calls whose purpose is to wait.
	if (key.state == 2)
		keep_outlier(key.tgid, key.tid, key.state, key.kstack, key.ustack, key.comm, delta, slow);
	if (!with_waits)
		return;
	key.gen = generation();
	struct value_t *v = bpf_map_lookup_elem(&blocked, &key);
	if (!v) {
		struct value_t zero = {};
		if (bpf_map_update_elem(&blocked, &key, &zero, BPF_NOEXIST) && bpf_map_lookup_elem(&blocked, &key) == 0) {
			count_lost(LOST_WAITS);
			return;
		}
		v = bpf_map_lookup_elem(&blocked, &key);
		if (!v) {
			count_lost(LOST_WAITS);
			return;
		}
	}
	__sync_fetch_and_add(&v->ns, delta);
	__sync_fetch_and_add(&v->count, 1);
}

// prev leaves the CPU while its entry says it is still blocked: the switch that brought it
// back reached no program (common.h's `ran_since_picked`). The block is counted as ended
// when the task was picked; for other classes than the fair one, or a stale entry, it is
// counted in `lost`.
static __always_inline void unseen_end(struct task_struct *prev, __u32 tid, struct start_t *old, __u64 now)
{
	__u64 ran;
	if (stale(old->ts) || !ran_since_picked(prev, &ran) || ran >= now - old->ts) {
		old->ts = 0;
		count_lost(LOST_ENDS);
		return;
	}
	count_lost(LOST_ENDS_TIMED);
	count_block(tid, old, now - ran - old->ts, 1);
}

// sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...), with
// the state prev had when it called schedule(), or -1 to read it from prev now.
static __always_inline int switched(struct bpf_raw_tracepoint_args *ctx, long prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	int preempt = (int)ctx->args[0];
	struct task_struct *prev = (struct task_struct *)ctx->args[1];
	struct task_struct *next = (struct task_struct *)ctx->args[2];
	__u32 prev_tid = BPF_CORE_READ(prev, pid);
	long state = preempt ? 0 : prev_state >= 0 ? prev_state : state_of(prev);
	// The state as the kernel reports it (__task_state_index): TASK_IDLE is I (8), else the
	// highest reported bit, plus one (S 1, D 2, ...); 0 when preempted while runnable.
	__u32 s = 0;
	if ((state & TASK_IDLE) == TASK_IDLE) {
		s = 8;
	} else {
		long rep = state & TASK_REPORT;
		for (int i = 0; i < 7; i++)
			if (rep & (1 << i))
				s = i + 1;
	}
	__u32 tgid = BPF_CORE_READ(prev, tgid);
	int kthread = BPF_CORE_READ(prev, flags) & PF_KTHREAD;
	int waiting_for_work = (s == 1 || s == 8) && kthread;
	struct start_t *old = prev_tid != 0 && (!only_tgid || tgid == only_tgid) ? bpf_map_lookup_elem(&start, &prev_tid) : 0;
	if (old && old->ts != 0)
		unseen_end(prev, prev_tid, old, now);
	if (prev_tid != 0 && s < 64 && (state_mask & (1ULL << s)) && (!only_tgid || tgid == only_tgid) &&
	    (idle_kthreads || !waiting_for_work)) {
		int reuse = reuse_stacks_under_ns && !kthread;
		if (!reuse)
			old = 0;
		__u64 place = reuse ? place_of() : 0;
		__u64 comm[TASK_COMM_LEN / 8] = {};
		if (old)
			BPF_CORE_READ_STR_INTO(&comm, prev, comm);
		if (old && place && old->place == place && old->ts == 0 && old->state == s && old->tgid == tgid &&
		    old->last_ns < reuse_stacks_under_ns && old->kstack >= 0 && comm[0] == ((__u64 *)old->comm)[0] &&
		    comm[1] == ((__u64 *)old->comm)[1] && bpf_get_prandom_u32() % REFRESH_STACKS != 0) {
			// The task is this CPU's current one, running nowhere else: its entry is written
			// in place.
			old->ts = now;
		} else {
			struct start_t st = {};
			st.ts = now;
			st.tgid = tgid;
			st.state = s;
			st.place = place;
			st.kstack = stack_of(ctx, 0);
			st.ustack = stack_of(ctx, BPF_F_USER_STACK);
			BPF_CORE_READ_STR_INTO(&st.comm, prev, comm);
			if (bpf_map_update_elem(&start, &prev_tid, &st, BPF_ANY))
				count_lost(LOST_STARTS);
		}
	}
	__u32 next_tid = BPF_CORE_READ(next, pid);
	struct start_t *st = bpf_map_lookup_elem(&start, &next_tid);
	if (!st || st->ts == 0)
		return 0;
	if (stale(st->ts)) {
		st->ts = 0;
		return 0;
	}
	count_block(next_tid, st, now - st->ts, 0);
	return 0;
}

// Since Linux 5.18 the tracepoint passes the state prev had when it called schedule()
// (`unsigned int prev_state`, its fourth argument). Read from prev at the tracepoint instead,
// it may already be TASK_WAKING: a wakeup on another CPU (the timer of a sleep preempted
// before it called schedule() and moved meanwhile) sets it while the switch is under way,
// and a block the kernel counts (as a voluntary switch) would be missed. Attaching fails on
// older kernels (the program reads beyond the tracepoint's arguments): `on_switch` then.
SEC("raw_tp/sched_switch")
int on_switch_state(struct bpf_raw_tracepoint_args *ctx)
{
	return switched(ctx, (long)(unsigned int)ctx->args[3]);
}

SEC("raw_tp/sched_switch")
int on_switch(struct bpf_raw_tracepoint_args *ctx)
{
	return switched(ctx, -1);
}

// sched_waking(struct task_struct *p): in the waker's own context, always (sched_wakeup may
// fire on the wakee's CPU, from its idle task, when the wakeup is queued there).
SEC("raw_tp/sched_waking")
int on_wakeup(struct bpf_raw_tracepoint_args *ctx)
{
	if (!with_wakers)
		return 0;
	struct task_struct *p = (struct task_struct *)ctx->args[0];
	__u32 wakee = BPF_CORE_READ(p, pid);
	if (!bpf_map_lookup_elem(&start, &wakee))
		return 0; // not a task whose block is being timed
	__u64 id = bpf_get_current_pid_tgid();
	struct waker_t w = {};
	w.tgid = id >> 32;
	w.tid = (__u32)id;
	w.kstack = stack_of(ctx, 0);
	w.ustack = stack_of(ctx, BPF_F_USER_STACK);
	bpf_get_current_comm(&w.comm, sizeof(w.comm));
	bpf_map_update_elem(&wakers, &wakee, &w, BPF_ANY);
	return 0;
}

// sched_process_exit(struct task_struct *p, ...), in the exiting thread's context: its entry
// goes (and the stacks it held with it).
SEC("raw_tp/sched_process_exit")
int on_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&start, &tid);
	return 0;
}

// sched_process_exec(struct task_struct *p, pid_t old_pid, ...), in the exec'ing thread's
// context: the stacks it kept are of the program it left.
SEC("raw_tp/sched_process_exec")
int on_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 old = (__u32)ctx->args[1];
	bpf_map_delete_elem(&start, &tid);
	if (old != tid)
		bpf_map_delete_elem(&start, &old);
	return 0;
}
