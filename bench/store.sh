#!/usr/bin/env bash
# The history store: size of 24 h of default watching (19 Hz on 2 CPUs, 10 s buckets,
# per-sample times, 40 metric series at 1 Hz) generated from the real stacks of the large
# shared capture, and the time of the queries the web UI and `kflame query` make.
#
#   HOURS=N   hours to generate (default 24)
#   CPUS=N    CPUs to generate for (default 2)
#   DB=FILE   where the database goes (default bench/out/store.db)
#
# Prints bytes per sample, MB per CPU per 24 h (target <= 5), and the best of 3 runs of:
# the merged profile of 1 h (target <= 50 ms) and of the whole history (<= 500 ms), and
# one metric over the whole history at 1 s (<= 50 ms).
set -euo pipefail
cd "$(dirname "$0")/.."
hours=${HOURS:-24}
cpus=${CPUS:-2}
mkdir -p bench/out
db=${DB:-bench/out/store.db}
folded=../shared/bench/large-pid.folded.zst
[ -f "$folded" ] || { echo "bench: $folded is missing (the shared benchmark corpus)" >&2; exit 1; }

echo "== building the store benchmark (release)"
cargo build --release --locked -p kflame-store --example store_bench
echo "== generating $hours h on $cpus CPUs from $folded into $db"
target/release/examples/store_bench "$folded" "$db" "$hours" "$cpus"
