#!/usr/bin/env bash
# Off-CPU recording under the worst case, a pipe ping-pong between two processes (every
# round trip two blocks and two wakeups): the workload's round trips while
#   - nothing records (idle),
#   - `kflame record --off-cpu -a` records, summed in the kernel by BPF (WAKERS=1 adds
#     --wakers), its folded output written and named,
#   - `kflame record --off-cpu --via perf -a` records through perf events (the path used
#     where BPF is refused),
#   - `perf record -e sched:sched_switch -a -g` records (its file into a temporary directory),
#     and then `perf script` reads it (its CPU time added to perf's).
# Rounds alternate the four; medians are printed as round trips relative to idle, with each
# recorder's CPU time (user + sys).
#
#   DUR=5 ROUNDS=5 bash bench/offcpu-bpf.sh      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-5}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }
cargo build --release --locked -p kflame-cli >&2
tmp=$(mktemp -d)
cp "${CARGO_TARGET_DIR:-target}/release/kflame" "$tmp/kflame" # a test build may replace target/release/kflame meanwhile
# perf mounts tracefs when none is (to find sched:sched_switch) and leaves it: the machine's
# tracing state is put back as it was.
tracefs_before=$(grep -c ' tracefs ' /proc/mounts || true)
restore() {
  rm -rf "$tmp"
  if [ "$tracefs_before" = 0 ]; then
    grep ' tracefs ' /proc/mounts | awk '{ print $2 }' | while read -r m; do umount "$m" || true; done
  fi
}
trap restore EXIT
cc -O2 -o "$tmp/pingpong" bench/pingpong.c
wakers=()
[ -n "${WAKERS:-}" ] && wakers=(--wakers)

# Round trips while "$@" records (started a second before, ended after); "trips cpu_s".
with() {
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" > "$tmp/rec.out" 2> "$tmp/rec.err" &
  local pid=$!
  sleep 1
  local trips
  trips=$("$tmp/pingpong" "$DUR")
  wait "$pid" || true
  echo "$trips $(awk '{ print $1 + $2 }' "$tmp/time")"
}

: > "$tmp/idle"; : > "$tmp/bpf"; : > "$tmp/kperf"; : > "$tmp/perf"
for r in $(seq "$ROUNDS"); do
  echo "$("$tmp/pingpong" "$DUR") 0" >> "$tmp/idle"
  with "$tmp/kflame" record --off-cpu "${wakers[@]}" -a -d "$((DUR + 2))" -o "$tmp/bpf.folded" >> "$tmp/bpf"
  cp "$tmp/rec.err" "$tmp/bpf.err"
  if [ -z "${WAKERS:-}" ]; then
    with "$tmp/kflame" record --off-cpu --via perf -a -d "$((DUR + 2))" -o "$tmp/kperf.folded" >> "$tmp/kperf"
    cp "$tmp/rec.err" "$tmp/kperf.err"
  fi
  rm -f "$tmp/perf.data"
  line=$(with perf record -q -e sched:sched_switch -a -g -o "$tmp/perf.data" -- sleep "$((DUR + 2))")
  /usr/bin/time -f "%U %S" -o "$tmp/stime" perf script -i "$tmp/perf.data" > /dev/null 2> /dev/null
  script_cpu=$(awk '{ print $1 + $2 }' "$tmp/stime")
  echo "$line $script_cpu" >> "$tmp/perf"
  echo "round $r: idle $(tail -1 "$tmp/idle" | cut -d' ' -f1), bpf $(tail -1 "$tmp/bpf"), kflame via perf $(tail -1 "$tmp/kperf" 2>/dev/null), perf $(tail -1 "$tmp/perf")" >&2
done
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
idle=$(cut -d' ' -f1 "$tmp/idle" | med)
bpf=$(cut -d' ' -f1 "$tmp/bpf" | med)
perf=$(cut -d' ' -f1 "$tmp/perf" | med)
kperf=$(cut -d' ' -f1 "$tmp/kperf" | med)
kperf_cpu=$(cut -d' ' -f2 "$tmp/kperf" | med)
bpf_cpu=$(cut -d' ' -f2 "$tmp/bpf" | med)
perf_cpu=$(awk '{ print $2 + $3 }' "$tmp/perf" | med)
echo "== ping-pong round trips in $DUR s (median of $ROUNDS; load before: $(cut -d' ' -f1-3 /proc/loadavg))"
awk -v i="$idle" -v b="$bpf" -v p="$perf" -v bc="$bpf_cpu" -v pc="$perf_cpu" -v k="${kperf:-0}" -v kc="${kperf_cpu:-0}" -v w="${WAKERS:-}" 'BEGIN {
  printf "idle                              %9d\n", i
  printf "kflame record --off-cpu%-10s %9d  (loses %4.1f%%)  CPU %.2f s\n", (w ? " --wakers" : " (BPF)"), b, 100 * (1 - b / i), bc
  if (k > 0) printf "kflame record --off-cpu --via perf %9d  (loses %4.1f%%)  CPU %.2f s\n", k, 100 * (1 - k / i), kc
  printf "perf record -g sched_switch       %9d  (loses %4.1f%%)  perf record + script CPU %.2f s\n", p, 100 * (1 - p / i), pc
  printf "kflame loses %.2f of what perf loses; its CPU is %.2f of perf'\''s\n", (1 - b / i) / (1 - p / i), bc / pc
}'
echo "== kflame's own report (last round):"
sed 's/^/   /' "$tmp/bpf.err"
