// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Shared by every program drained by generation: not used by the programs themselves. User
// space writes `sync_value` into `sync` after each flip of the generation, an update the
// kernel returns from only once every BPF program running then is done (synchronize_rcu), so
// that the older generation is no longer written when it is read and deleted.
#ifndef KFLAME_SYNC_H
#define KFLAME_SYNC_H

struct sync_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
};

struct sync_inner sync_value SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__type(key, __u32);
	__uint(max_entries, 1);
	__array(values, struct sync_inner);
} sync SEC(".maps");

#endif
