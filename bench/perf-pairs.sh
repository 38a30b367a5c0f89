#!/usr/bin/env bash
# Throughput of `kflame collapse` on perf script tracepoint records, per pairing mode,
# against the default sample-counting collapser on the same input.
# Inputs: the real captures in tests/data/perf/captures/ (dd under raw_syscalls, 161 KB;
# system-wide sched_switch, 300 KB) repeated N times (default 300); each copy restarts the
# clock, which the pairers see as events of a new trace (a few unpaired notes per copy).
# Prints MB/s = input bytes / best of 3 runs, for wall and CPU time (user + sys).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300}
cargo build --release -q -p kflame-cli
BIN=target/release/kflame
D=crates/kflame/tests/data/perf/captures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() { # name input args...
  local name=$1 input=$2; shift 2
  local bytes best_wall="" best_cpu=""
  bytes=$(stat -c %s "$input")
  for _ in 1 2 3; do
    read -r wall cpu < <(/usr/bin/time -f "%e %U %S" "$BIN" collapse "$@" "$input" -o "$TMP/out.folded" \
      2>&1 >/dev/null | tail -1 | awk '{print $1, $2 + $3}')
    if [ -z "$best_wall" ] || [ "$(echo "$wall < $best_wall" | bc -l)" = 1 ]; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || [ "$(echo "$cpu < $best_cpu" | bc -l)" = 1 ]; then best_cpu=$cpu; fi
  done
  printf '%-18s %5d MB  wall %6.2f s (%6.1f MB/s)  cpu %6.2f s (%6.1f MB/s)  %s stacks\n' "$name" \
    "$((bytes / 1000000))" "$best_wall" "$(echo "$bytes / $best_wall / 1000000" | bc -l)" \
    "$best_cpu" "$(echo "$bytes / $best_cpu / 1000000" | bc -l)" "$(grep -vc '^#' "$TMP/out.folded")"
}
for _ in $(seq "$N"); do cat "$D/perf-syscalls-dd.script.txt"; done > "$TMP/sys.txt"
for _ in $(seq "$N"); do cat "$D/perf-sched-switch.script.txt"; done > "$TMP/sw.txt"
run "syscalls" "$TMP/sys.txt" --mode syscalls
run "syscalls (counts)" "$TMP/sys.txt" -j 1
run "offcpu" "$TMP/sw.txt" --mode offcpu
run "offcpu (counts)" "$TMP/sw.txt" -j 1
