// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Block IO latency aggregated in the kernel, by device and by the stack that submitted the IO.
// `block_bio_queue` (in submit_bio, the submitter's context) keeps the submitter's task and
// stacks under (disk, sector); `block_rq_issue` keeps the issue time under the request's
// (disk, sector); `block_rq_complete` adds the time from issue to completion to `waited`
// under (submitter, its stacks, the disk). A request of several bios counts under the
// submitter of its first (`block_bio_backmerge`/`block_bio_frontmerge` forget the others).
// IOs whose submitter was not seen count with tid 0 and no stacks. Raw tracepoints only,
// attached by name (no tracefs, kprobe or fentry).
#include "wait.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// What is read of the kernel's structs (CO-RE: relocated to the running kernel's BTF).
struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct block_device {
	struct gendisk *bd_disk;
} __attribute__((preserve_access_index));

struct bvec_iter {
	__u64 bi_sector;
	unsigned int bi_size;
} __attribute__((preserve_access_index));

struct bio {
	struct block_device *bi_bdev;
	struct bvec_iter bi_iter;
} __attribute__((preserve_access_index));

// Before Linux 5.12 a bio named its disk, not its block device.
struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	__u64 __sector;
} __attribute__((preserve_access_index));

// Before Linux 5.16 (about) a request named its disk itself.
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

struct io_key {
	__u32 dev;	// 0: the whole disk, major << 20 | minor (the kernel's dev_t)
	__u32 pad;	// 4
	__u64 sector;	// 8
};

struct submitter_t {
	__u64 ts;	// 0
	__u32 tgid;	// 8
	__u32 tid;	// 12
	__s32 kstack;	// 16
	__s32 ustack;	// 20
	__u32 gen;	// 24: the generation it was seen in (user space forgets stale ones)
	__u32 pad;	// 28
	char comm[TASK_COMM_LEN]; // 32
};

struct issue_t {
	__u64 ts;	// 0
	__u32 gen;	// 8
	__u32 pad;	// 12
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct io_key);
	__type(value, struct submitter_t);
	__uint(max_entries, 65536);
} submitters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct io_key);
	__type(value, struct issue_t);
	__uint(max_entries, 65536);
} issued SEC(".maps");

static __always_inline __u32 devt(struct gendisk *disk)
{
	if (!disk)
		return 0;
	__u32 major = BPF_CORE_READ(disk, major);
	__u32 minor = BPF_CORE_READ(disk, first_minor);
	return major << 20 | minor;
}

static __always_inline struct gendisk *bio_disk(struct bio *bio)
{
	if (bpf_core_field_exists(bio->bi_bdev))
		return BPF_CORE_READ(bio, bi_bdev, bd_disk);
	return BPF_CORE_READ((struct bio___old *)bio, bi_disk);
}

static __always_inline void bio_key(struct bio *bio, struct io_key *key)
{
	key->dev = devt(bio_disk(bio));
	key->sector = BPF_CORE_READ(bio, bi_iter.bi_sector);
}

static __always_inline void rq_key(struct request *rq, struct io_key *key)
{
	struct gendisk *disk;
	if (bpf_core_field_exists(((struct request___old *)rq)->rq_disk))
		disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
	else
		disk = BPF_CORE_READ(rq, q, disk);
	key->dev = devt(disk);
	key->sector = BPF_CORE_READ(rq, __sector);
}

// block_bio_queue(struct bio *bio): in submit_bio, the submitter's context.
SEC("raw_tp/block_bio_queue")
int on_bio_queue(struct bpf_raw_tracepoint_args *ctx)
{
	struct io_key key = {};
	bio_key((struct bio *)ctx->args[0], &key);
	__u64 id = bpf_get_current_pid_tgid();
	struct submitter_t s = {};
	s.ts = bpf_ktime_get_ns();
	s.tgid = id >> 32;
	s.tid = (__u32)id;
	s.gen = generation();
	// Other processes' IOs are kept without stacks under a pid filter: their completions
	// are then known not to be counted.
	if (!only_tgid || s.tgid == only_tgid) {
		// Without stacks (the watcher's always-on latency), within a budget of walks: the
		// stacks of the IOs that turn out slow, mostly.
		if (with_stacks || may_walk()) {
			s.kstack = walk_stack(ctx, 0);
			s.ustack = walk_stack(ctx, BPF_F_USER_STACK);
		} else {
			s.kstack = -1;
			s.ustack = -1;
		}
		bpf_get_current_comm(&s.comm, sizeof(s.comm));
	} else {
		s.kstack = -1;
		s.ustack = -1;
	}
	if (bpf_map_update_elem(&submitters, &key, &s, BPF_ANY))
		count_lost(LOST_STARTS);
	return 0;
}

// block_bio_backmerge(struct bio *bio) (Linux 5.11+): the bio joins the end of a request
// whose first bio's submitter stays.
SEC("raw_tp/block_bio_backmerge")
int on_bio_backmerge(struct bpf_raw_tracepoint_args *ctx)
{
	struct io_key key = {};
	bio_key((struct bio *)ctx->args[0], &key);
	bpf_map_delete_elem(&submitters, &key);
	return 0;
}

// block_bio_frontmerge(struct bio *bio) (Linux 5.11+): the bio becomes the request's first;
// the bio that was first (just after it) is forgotten.
SEC("raw_tp/block_bio_frontmerge")
int on_bio_frontmerge(struct bpf_raw_tracepoint_args *ctx)
{
	struct bio *bio = (struct bio *)ctx->args[0];
	struct io_key key = {};
	bio_key(bio, &key);
	key.sector += BPF_CORE_READ(bio, bi_iter.bi_size) >> 9;
	bpf_map_delete_elem(&submitters, &key);
	return 0;
}

// block_rq_issue(struct request *rq)
SEC("raw_tp/block_rq_issue")
int on_rq_issue(struct bpf_raw_tracepoint_args *ctx)
{
	struct io_key key = {};
	rq_key((struct request *)ctx->args[0], &key);
	struct issue_t is = {};
	is.ts = bpf_ktime_get_ns();
	is.gen = generation();
	if (bpf_map_update_elem(&issued, &key, &is, BPF_ANY))
		count_lost(LOST_STARTS);
	return 0;
}

// block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes)
SEC("raw_tp/block_rq_complete")
int on_rq_complete(struct bpf_raw_tracepoint_args *ctx)
{
	struct io_key ikey = {};
	rq_key((struct request *)ctx->args[0], &ikey);
	struct issue_t *is = bpf_map_lookup_elem(&issued, &ikey);
	if (!is)
		return 0; // issued before the start
	__u64 ns = bpf_ktime_get_ns() - is->ts;
	bpf_map_delete_elem(&issued, &ikey);
	struct wait_key key = {};
	key.on = ikey.dev;
	struct submitter_t *s = bpf_map_lookup_elem(&submitters, &ikey);
	if (s) {
		key.tgid = s->tgid;
		key.tid = s->tid;
		key.kstack = s->kstack;
		key.ustack = s->ustack;
		__builtin_memcpy(key.comm, s->comm, sizeof(key.comm));
		bpf_map_delete_elem(&submitters, &ikey);
		if (only_tgid && key.tgid != only_tgid)
			return 0;
	} else {
		if (only_tgid) {
			count_lost(LOST_UNMATCHED);
			return 0;
		}
		key.kstack = -1;
		key.ustack = -1;
	}
	if (ns < min_ns)
		return 0;
	add_wait(&key, ns);
	return 0;
}
