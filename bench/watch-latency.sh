#!/usr/bin/env bash
# What the watcher's always-on latency metrics cost a system-call-heavy workload: N write(2)
# calls of 64 bytes to /dev/null in a loop (the record tests' `kfwork write N`), timed, while
#   - nothing watches (idle),
#   - `kflame watch` runs with its defaults (latency metrics on: system-call histograms
#     summed in the kernel),
#   - `kflame watch --no-latency` runs (the CPU profile and /proc metrics only).
# Rounds alternate the three; medians of ns per call, with the watcher's own CPU over the
# measured period (utime + stime from /proc/PID/stat) as % of one CPU. (A ping-pong between
# two processes was tried first: its round trips vary by 15% from run to run with the CPUs'
# idle states, more than the cost to measure.)
#
#   N=10000000 ROUNDS=3 bash bench/watch-latency.sh      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000000}
ROUNDS=${ROUNDS:-5}
HZ=$(getconf CLK_TCK)
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
cargo build --release --locked -p kflame-cli >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "${CARGO_TARGET_DIR:-target}/release/kflame" "$tmp/kflame"
cc -O1 -fno-omit-frame-pointer -pthread -o "$tmp/kfwork" crates/kflame/tests/data/record/workload.c
# ns per call of N writes
calls() {
  local a b
  a=$(date +%s%N)
  "$tmp/kfwork" write "$N"
  b=$(date +%s%N)
  awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN { printf "%.1f", (b - a) / n }'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# ns per call while the watcher with "$@" runs (started 3 s before); "ns cpu%".
with() {
  rm -f "$tmp/w.db"*
  "$tmp/kflame" watch --db "$tmp/w.db" --no-kmsg --log-level warn "$@" 2> "$tmp/w.err" &
  local pid=$!
  sleep 3
  local t0 ns t1 d0 d1
  t0=$(cpu_ticks "$pid"); d0=$(date +%s%N)
  ns=$(calls)
  t1=$(cpu_ticks "$pid"); d1=$(date +%s%N)
  kill -INT "$pid"
  wait "$pid" || true
  echo "$ns $(awk -v a="$t0" -v b="$t1" -v hz="$HZ" -v d="$(( (d1 - d0) ))" 'BEGIN { printf "%.3f", 100 * (b - a) / hz / (d / 1e9) }')"
}
: > "$tmp/idle"; : > "$tmp/lat"; : > "$tmp/nolat"
for r in $(seq "$ROUNDS"); do
  echo "$(calls) 0" >> "$tmp/idle"
  with >> "$tmp/lat"
  with --no-latency >> "$tmp/nolat"
  echo "round $r: idle $(tail -1 "$tmp/idle"), watch $(tail -1 "$tmp/lat"), --no-latency $(tail -1 "$tmp/nolat")" >&2
done
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
idle=$(cut -d' ' -f1 "$tmp/idle" | med)
lat=$(cut -d' ' -f1 "$tmp/lat" | med); latc=$(cut -d' ' -f2 "$tmp/lat" | med)
nol=$(cut -d' ' -f1 "$tmp/nolat" | med); nolc=$(cut -d' ' -f2 "$tmp/nolat" | med)
echo "== $N writes to /dev/null, ns per call (median of $ROUNDS; load before: $(cut -d' ' -f1-3 /proc/loadavg))"
awk -v i="$idle" -v l="$lat" -v lc="$latc" -v n="$nol" -v nc="$nolc" 'BEGIN {
  printf "idle                          %7.1f ns\n", i
  printf "kflame watch (latency on)     %7.1f ns  (+%.1f ns a call)  watcher CPU %.3f%% of one CPU\n", l, l - i, lc
  printf "kflame watch --no-latency     %7.1f ns  (+%.1f ns a call)  watcher CPU %.3f%% of one CPU\n", n, n - i, nc
  printf "at 10,000 calls/s the latency metrics cost %.2f%% of one CPU in the calls themselves\n", (l - n) * 1e4 / 1e7
}'
