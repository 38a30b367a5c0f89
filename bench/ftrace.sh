#!/usr/bin/env bash
# Throughput of `kflame collapse` on ftrace text, per mode.
# Input: the fresh dd capture (tests/data/ftrace/ftrace-dd-mixed-stacktrace.txt, 440 KB)
# repeated N times (default 200, ~88 MB); each copy restarts the trace clock, which the
# collapser treats as a new segment. Prints MB/s = input bytes / best of 3 runs, for wall
# time and for CPU time (user + sys; on a loaded machine wall time mostly measures waiting).
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
  best_wall=""; best_cpu=""
  for _ in 1 2 3; do
    read -r wall cpu < <(/usr/bin/time -f "%e %U %S" "$BIN" collapse --mode "$mode" "$TMP/in.txt" \
      -o "$TMP/out.folded" 2>&1 >/dev/null | tail -1 | awk '{print $1, $2 + $3}')
    if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc -l)" = 1 ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc -l)" = 1 ]; then best_cpu=$cpu; fi
  done
  printf '%-9s wall %6.2f s (%6.1f MB/s)  cpu %6.2f s (%6.1f MB/s)  %s stacks\n' "$mode" \
    "$best_wall" "$(echo "$BYTES / $best_wall / 1000000" | bc -l)" \
    "$best_cpu" "$(echo "$BYTES / $best_cpu / 1000000" | bc -l)" "$(grep -vc '^#' "$TMP/out.folded")"
done
