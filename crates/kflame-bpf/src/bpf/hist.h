// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Latency histograms every program counts into: `hists`, a per-CPU hash under (label,
// generation parity) of kflame::latency's buckets (no atomics, no cache line shared between
// CPUs), with the largest value, the sum and the count of events at least `slow_ns` long. The
// label is the program's: the system call's number, the disk, the CPU, the task state, the
// lock's flags. A key is made once: user space reads and zeroes the other parity's values
// after each flip, never deletes them, so that no allocation happens on the hot path after
// the first event of a label (a burst of allocations at each flip would fail). Included by
// common.h, after `generation()`.
#ifndef KFLAME_HIST_H
#define KFLAME_HIST_H

// kflame::latency::SLOTS
#define SLOTS 128

// Set by user space before loading: events at least this long are counted as slow too.
const volatile __u64 slow_ns = ~0ULL;

// The key of `hists`; `src/drain.rs` reads it (8 bytes).
struct hist_key {
	__u32 label; // 0
	__u32 gen;   // 4: the parity of the generation user space is not reading
};

// kflame::latency::Histogram as user space sums it over the CPUs, and the slow events.
struct hist_t {
	__u64 counts[SLOTS];
	__u64 max_ns;
	__u64 sum_ns;
	__u64 slow;
};

// Allocated at the first event of a label in a generation only: memory for the labels seen.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, struct hist_key);
	__type(value, struct hist_t);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} hists SEC(".maps");

// A zero histogram to create keys with (too large for the BPF stack).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hist_t);
	__uint(max_entries, 1);
} zero_hist SEC(".maps");

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

// Counts one event of `ns` under `label` in this CPU's histogram of the current generation,
// as slow when at least `slow`; a full map is counted (LOST_HISTS). Only this CPU writes its
// values, but another CPU may create the key first (EEXIST): looked up again either way.
static __always_inline void count_latency_over(__u32 label, __u64 ns, __u64 slow)
{
	struct hist_key key = { .label = label, .gen = generation() & 1 };
	struct hist_t *h = bpf_map_lookup_elem(&hists, &key);
	if (!h) {
		__u32 zero = 0;
		struct hist_t *empty = bpf_map_lookup_elem(&zero_hist, &zero);
		if (!empty)
			return;
		bpf_map_update_elem(&hists, &key, empty, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&hists, &key);
		if (!h) {
			count_lost(LOST_HISTS);
			return;
		}
	}
	h->counts[slot_of(ns) & (SLOTS - 1)] += 1;
	if (ns > h->max_ns)
		h->max_ns = ns;
	h->sum_ns += ns;
	if (ns >= slow)
		h->slow += 1;
}

// Labels with a threshold of their own (set by user space after loading), and the smallest
// threshold of any label and of `slow_ns` (set before loading): events shorter than it need
// no lookup, so the hot path of a short wait stays as it was.
const volatile __u64 slow_min_ns = ~0ULL;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 256);
} slow_of_label SEC(".maps");

// The threshold of `label` for an event of `ns`: its own, else `slow_ns` (the own one looked
// up only when the event is at least `slow_min_ns`; below it, no threshold is reached).
static __always_inline __u64 slow_for(__u32 label, __u64 ns)
{
	if (ns < slow_min_ns)
		return slow_ns;
	__u64 *own = bpf_map_lookup_elem(&slow_of_label, &label);
	return own ? *own : slow_ns;
}

// count_latency_over with the label's threshold (`slow_for`); returns it.
static __always_inline __u64 count_latency(__u32 label, __u64 ns)
{
	__u64 slow = slow_for(label, ns);
	count_latency_over(label, ns, slow);
	return slow;
}

#endif
