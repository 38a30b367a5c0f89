#!/usr/bin/env bash
# The cost of the default `kflame watch` with everything on (CPU profile, metrics, latency
# histograms of every family, the always-on off-CPU and lock profiles), beside the watcher
# with the CPU profile only (--no-latency, what it was before) and with the histograms but
# no blocked-time stacks (--no-blocked-profiles), on two workloads, as root:
#   - busy: one spinner per CPU counting loop iterations (the CPU-bound machine);
#   - ping-pong: two processes passing a byte through pipes (bench/pingpong.c: two blocks, two
#     wakeups and four system calls a round trip), the worst case for anything hooked on
#     sched_switch and sys_enter/sys_exit.
# For each: the workload's throughput relative to nothing watching (the cost of the BPF
# programs is paid in the workload's time), the watcher's own CPU (utime+stime of
# /proc/PID/stat over the measured period) as a share of one CPU, and its peak RSS. Rounds
# alternate the configurations; medians are printed.
# Targets (issue: latency always on): watcher + its programs' share <= 1% of one CPU,
# RSS <= 64 MiB.
#
# Usage: bench/watch-always-on.sh         (DUR=20 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-20}
ROUNDS=${ROUNDS:-3}
NCPU=$(nproc)
[ "$(id -u)" = 0 ] || { echo "run as root (system-wide recording)" >&2; exit 2; }

cargo build --release --locked -p kflame-cli >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp target/release/kflame "$tmp/kflame" # a test build may replace target/release/kflame meanwhile
cc -O1 -fno-omit-frame-pointer -pthread -o "$tmp/kfwork" crates/kflame/tests/data/record/workload.c
cc -O2 -o "$tmp/pingpong" bench/pingpong.c

busy() {
    local pids=() i
    for i in $(seq "$NCPU"); do "$tmp/kfwork" spin "$DUR" > "$tmp/spin.$i" & pids+=($!); done
    wait "${pids[@]}"
    cat "$tmp"/spin.* | awk '{ s += $1 } END { print s }'
}
pingpong() { "$tmp/pingpong" "$DUR"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# "$1": workload function; rest: the watcher's flags ("none": nothing watches). Prints
# "throughput cpu_percent rss_mib".
run() {
    local work=$1; shift
    if [ "$1" = none ]; then
        echo "$($work) 0 0"
        return
    fi
    rm -f "$tmp"/h.db*
    "$tmp/kflame" watch --db "$tmp/h.db" --no-kmsg "$@" > /dev/null 2> "$tmp/watch.err" &
    local pid=$!
    sleep 4 # start-up (programs loaded, symbol tables, first windows) is not the steady state
    local t0 t1 it rss
    t0=$(ticks "$pid")
    it=$($work)
    t1=$(ticks "$pid")
    rss=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid" || { echo "kflame watch failed:" >&2; cat "$tmp/watch.err" >&2; exit 1; }
    awk -v it="$it" -v d="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v dur="$DUR" -v rss="$rss" \
        'BEGIN { printf "%s %.3f %s\n", it, 100 * d / hz / dur, rss }'
}

configs=(none "--no-latency" "--no-blocked-profiles" "default")
for work in busy pingpong; do
    for c in "${configs[@]}"; do : > "$tmp/$work.$c"; done
    for r in $(seq "$ROUNDS"); do
        for c in "${configs[@]}"; do
            case $c in
                none) line=$(run "$work" none) ;;
                default) line=$(run "$work" --log-level info) ;;
                *) line=$(run "$work" "$c") ;;
            esac
            echo "$line" >> "$tmp/$work.$c"
            echo "$work round $r $c: $line" >&2
        done
    done
done
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "== medians of $ROUNDS rounds of $DUR s, $NCPU CPUs (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
for work in busy pingpong; do
    idle=$(cut -d' ' -f1 "$tmp/$work.none" | med)
    echo "-- $work (nothing watching: $idle)"
    for c in "${configs[@]:1}"; do
        it=$(cut -d' ' -f1 "$tmp/$work.$c" | med)
        cpu=$(cut -d' ' -f2 "$tmp/$work.$c" | med)
        rss=$(cut -d' ' -f3 "$tmp/$work.$c" | med)
        awk -v c="$c" -v i="$idle" -v it="$it" -v cpu="$cpu" -v rss="$rss" -v n="$NCPU" 'BEGIN {
            loss = 100 * (1 - it / i)
            printf "watch %-22s throughput %6.2f%% of idle (the programs: %.2f%% of one CPU)  watcher CPU %.3f%%  RSS %s MiB\n",
                c, 100 * it / i, loss * n, cpu, rss }'
    done
done
