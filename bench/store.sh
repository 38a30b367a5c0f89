#!/usr/bin/env bash
# The history store: size of 24 h of default watching (10 s buckets, per-sample times,
# metric blocks of one bucket, as `kflame watch` writes) replayed from real recordings of a
# busy 2-CPU machine (bench/data/README.md): the 19 Hz sample stream (times, CPUs, when the
# stack changes) and 1 Hz metric reads, tiled over the hours, with stacks drawn from the
# large shared capture; then the time of the queries the web UI and `kflame query` make.
#
#   HOURS=N   hours to generate (default 24)
#   DB=FILE   where the database goes (default bench/out/store.db)
#
# Prints bytes per sample, MB per CPU per 24 h (target <= 5), and the best of 3 runs of:
# the merged profile of 1 h (target <= 50 ms) and of the whole history (<= 500 ms), and
# one metric over the whole history at 1 s (<= 50 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
hours=${HOURS:-24}
mkdir -p bench/out
db=${DB:-bench/out/store.db}
folded=../shared/bench/large-pid.folded.zst
[ -f "$folded" ] || { echo "bench: $folded is missing (the shared benchmark corpus)" >&2; exit 1; }

echo "== building the store benchmark (release)"
cargo build --release --locked -p kflame-store --example store_bench
echo "== generating $hours h from bench/data and $folded into $db (load: $(cut -d' ' -f1-3 /proc/loadavg))"
target/release/examples/store_bench "$folded" bench/data/samples-19hz.txt.zst bench/data/metrics-1hz.txt.zst \
    "$db" "$hours"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
