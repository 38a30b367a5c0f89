#!/usr/bin/env bash
# Throughput of `kflame collapse` on ftrace text, per mode.
# Input: the fresh dd capture (tests/data/ftrace/ftrace-dd-mixed-stacktrace.txt, 440 KB)
# repeated N times (default 200, ~88 MB); each copy restarts the trace clock, which the
# collapser treats as a new segment. Prints MB/s = input bytes / best wall time of 3 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
cargo build --release -q -p kflame-cli
BIN=target/release/kflame
SRC=crates/kflame/tests/data/ftrace/ftrace-dd-mixed-stacktrace.txt
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for _ in $(seq "$N"); do cat "$SRC"; done > "$TMP/in.txt"
BYTES=$(stat -c %s "$TMP/in.txt")
echo "input: $N x $(basename "$SRC") = $BYTES bytes"
for mode in alloc syscalls offcpu events; do
  best=""
  for _ in 1 2 3; do
    start=$(date +%s.%N)
    "$BIN" collapse --mode "$mode" "$TMP/in.txt" -o "$TMP/out.folded" 2>/dev/null
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  done
  printf '%-9s best %6.3f s  %7.1f MB/s  (%s stacks)\n' "$mode" "$best" \
    "$(echo "$BYTES / $best / 1000000" | bc -l)" "$(grep -vc '^#' "$TMP/out.folded")"
done
