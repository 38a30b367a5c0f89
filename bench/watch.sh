#!/usr/bin/env bash
# Overhead of the default `kflame watch` (19 Hz on every CPU, kernel and user stacks, metrics
# every second, 10 s buckets into SQLite) on a CPU-bound workload (as root): one spinner per
# CPU counts loop iterations for DUR seconds while
#   - nothing watches (idle),
#   - `kflame watch` runs (started before, its start-up not counted),
#   - `perf record -F 19 -a -g` records (perf.data into a temporary directory).
# For the two recorders: CPU time over the measured period (utime+stime of /proc/PID/stat,
# read at its start and end) as a percentage of one CPU, and peak RSS (VmHWM). Rounds
# alternate the three so that machine noise hits all alike; medians are printed.
# Targets: watcher <= 1% of one CPU, throughput within 1% of idle, RSS <= 64 MiB.
#
# Usage: bench/watch.sh                 (DUR=60 ROUNDS=1 by default)
#        DUR=30 ROUNDS=3 bench/watch.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-60}
ROUNDS=${ROUNDS:-1}
NCPU=$(nproc)
HZ=$(getconf CLK_TCK)

[ "$(id -u)" = 0 ] || { echo "run as root (system-wide recording)" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }

cargo build --release -p kflame-cli >&2
KFLAME=$PWD/target/release/kflame
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -fno-omit-frame-pointer -pthread -o "$tmp/kfwork" crates/kflame/tests/data/record/workload.c

# Total iterations of NCPU spinners running DUR seconds.
spin() {
    local pids=() i
    for i in $(seq "$NCPU"); do "$tmp/kfwork" spin "$DUR" > "$tmp/spin.$i" & pids+=($!); done
    wait "${pids[@]}"
    cat "$tmp"/spin.* | awk '{ s += $1 } END { print s }'
}

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Runs the spinners while "$@" (started here, pid $!) runs; prints
# "iterations cpu_percent_of_one_cpu rss_mib", and stops it with SIGTERM (exit 0 expected
# of kflame).
with_recorder() {
    local name=$1; shift
    "$@" > /dev/null 2> "$tmp/$name.err" &
    local pid=$!
    sleep 3 # start-up (symbol tables, first windows) is not part of the steady state
    local t0 t1 w0 w1 it
    t0=$(ticks "$pid"); w0=$(date +%s.%N)
    it=$(spin)
    t1=$(ticks "$pid"); w1=$(date +%s.%N)
    local rss
    rss=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
    kill -TERM "$pid"
    local rc=0
    wait "$pid" || rc=$?
    if [ "$name" = watch ] && [ "$rc" != 0 ]; then
        echo "kflame watch exited with $rc:" >&2; cat "$tmp/$name.err" >&2; exit 1
    fi
    echo "$it $(echo "100 * ($t1 - $t0) / $HZ / ($w1 - $w0)" | bc -l) $rss"
}

median() { sort -n | awk '{ a[NR] = $1 } END { printf "%.6f\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

: > "$tmp/idle"; : > "$tmp/watch"; : > "$tmp/perf"
for r in $(seq "$ROUNDS"); do
    echo "round $r/$ROUNDS" >&2
    spin >> "$tmp/idle"
    rm -f "$tmp"/w.db*
    with_recorder watch "$KFLAME" watch --db "$tmp/w.db" --log-level warn >> "$tmp/watch"
    with_recorder perf perf record -F 19 -a -g -o "$tmp/perf.data" >> "$tmp/perf"
done
db_bytes=$(cat "$tmp"/w.db* | wc -c)

idle=$(median < "$tmp/idle")
col() { cut -d' ' -f"$2" "$tmp/$1" | median; }
w_it=$(col watch 1); w_cpu=$(col watch 2); w_rss=$(col watch 3)
p_it=$(col perf 1); p_cpu=$(col perf 2); p_rss=$(col perf 3)
echo "workload: $NCPU spinners x ${DUR}s, $ROUNDS rounds, medians"
printf '%-30s %14s %9s %16s %9s\n' "" "iterations" "vs idle" "CPU % of 1 CPU" "RSS MiB"
printf '%-30s %14s %9s %16s %9s\n' "idle" "$idle" "1.0000" "-" "-"
printf '%-30s %14s %9.4f %16.3f %9s\n' "kflame watch (default)" "$w_it" "$(echo "$w_it / $idle" | bc -l)" "$w_cpu" "$w_rss"
printf '%-30s %14s %9.4f %16.3f %9s\n' "perf record -F 19 -a -g" "$p_it" "$(echo "$p_it / $idle" | bc -l)" "$p_cpu" "$p_rss"
printf 'watch/perf throughput %.4f; watcher CPU %.3f%% of one CPU (target <= 1), RSS %s MiB (target <= 64); database after the last round: %s bytes\n' \
    "$(echo "$w_it / $p_it" | bc -l)" "$w_cpu" "$w_rss" "$db_bytes"
