#!/usr/bin/env bash
# The cost of the always-on profile of a continuous profiler: CPU samples of every CPU at
# 19 Hz with a compact record per sample (the library's `keep_samples`), named in windows
# of 1 s, for 60 s; once on the machine as it is ("idle": whatever else runs), once with
# every CPU kept busy by shell loops. Prints the recorder's own CPU time (from
# /proc/self/stat and /proc/self/schedstat), its peak RSS and what it recorded. Needs root.
#
#   bash bench/recorder-always-on.sh            # SECONDS=60 HZ=19 WINDOW=1
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${SECONDS_:-60}
HZ=${HZ:-19}
WINDOW=${WINDOW:-1}
cargo build --release -q -p kflame --example always_on
bin=target/release/examples/always_on
ncpu=$(nproc)

echo "== idle: nothing started (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$bin" "$SECONDS_" "$HZ" "$WINDOW"

echo
echo "== busy: $ncpu shell loops keep every CPU busy"
pids=()
for _ in $(seq "$ncpu"); do
    sh -c 'while :; do :; done' &
    pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 1
echo "(load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$bin" "$SECONDS_" "$HZ" "$WINDOW"
echo "(load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
