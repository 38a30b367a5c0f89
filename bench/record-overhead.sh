#!/usr/bin/env bash
# Overhead of live recording, measured on a fixed CPU-bound workload (as root):
# one spinner per CPU counts loop iterations for DUR seconds while
#   - nothing records (idle),
#   - `kflame record -F 997 -a` records,
#   - `perf record -F 997 -a -g` records (perf.data into a temporary directory).
# Rounds alternate the three so machine noise hits all of them alike; medians are printed,
# as throughput ratios to idle, with the recorder's own CPU time (user+sys, whole process,
# including its work after the signal: symbolization for kflame, build-ids for perf).
#
# Usage: bench/record-overhead.sh            (DUR=5 ROUNDS=5 by default)
#        DUR=10 ROUNDS=3 bench/record-overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-5}
NCPU=$(nproc)

[ "$(id -u)" = 0 ] || { echo "run as root (system-wide recording)" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed: only kflame would be measured" >&2; exit 2; }

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

# Runs the spinners while "$@" records; prints "iterations recorder_cpu_seconds".
with_recorder() {
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" > /dev/null 2> "$tmp/rec.err" &
    local tpid=$!
    sleep 1 # let the recorder set up before the measured period
    local it
    it=$(spin)
    local rpid
    rpid=$(pgrep -P "$tpid" | head -1)
    kill -INT "$rpid"
    # perf re-raises SIGINT when it exits, so its status is not checked; its time is.
    wait "$tpid" || true
    tail -1 "$tmp/time" | grep -Eq '^[0-9.]+ [0-9.]+$' || { cat "$tmp/rec.err" "$tmp/time" >&2; exit 1; }
    echo "$it $(tail -1 "$tmp/time" | awk '{ print $1 + $2 }')"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

: > "$tmp/idle"; : > "$tmp/kflame"; : > "$tmp/perf"
for r in $(seq "$ROUNDS"); do
    echo "round $r/$ROUNDS" >&2
    spin >> "$tmp/idle"
    with_recorder "$KFLAME" record -F 997 -a -o "$tmp/out.folded" >> "$tmp/kflame"
    with_recorder perf record -F 997 -a -g -o "$tmp/perf.data" >> "$tmp/perf"
done

idle=$(median < "$tmp/idle")
k_it=$(cut -d' ' -f1 "$tmp/kflame" | median); k_cpu=$(cut -d' ' -f2 "$tmp/kflame" | median)
p_it=$(cut -d' ' -f1 "$tmp/perf" | median); p_cpu=$(cut -d' ' -f2 "$tmp/perf" | median)
echo "workload: $NCPU spinners x ${DUR}s, $ROUNDS rounds, medians"
printf '%-34s %14s %10s %14s\n' "" "iterations" "vs idle" "recorder CPU s"
printf '%-34s %14s %10s %14s\n' "idle" "$idle" "1.000" "-"
printf '%-34s %14s %10.3f %14.2f\n' "kflame record -F 997 -a" "$k_it" "$(echo "$k_it / $idle" | bc -l)" "$k_cpu"
printf '%-34s %14s %10.3f %14.2f\n' "perf record -F 997 -a -g" "$p_it" "$(echo "$p_it / $idle" | bc -l)" "$p_cpu"
printf 'kflame/perf: throughput %.3f, recorder CPU %.2f\n' \
    "$(echo "$k_it / $p_it" | bc -l)" "$(echo "$k_cpu / ($p_cpu + 0.000001)" | bc -l)"
