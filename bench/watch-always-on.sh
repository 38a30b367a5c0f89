#!/usr/bin/env bash
# The cost of the default `kflame watch` with everything on (CPU profile, metrics, latency
# histograms of every family, the always-on off-CPU and lock profiles), beside the watcher
# with the CPU profile only (--no-latency, what it was before), with the histograms but no
# blocked-time stacks (--no-blocked-profiles) and with the programs' CPU budget off
# (--program-budget=0: always attached), and with the CPU profile's user stacks walked by
# frame pointers (--call-graph=fp) instead of unwound from stack copies (the default), on
# two workloads, as root:
#   - busy: one spinner per CPU counting loop iterations (the CPU-bound machine);
#   - ping-pong: two processes passing a byte through pipes (bench/pingpong.c: two blocks, two
#     wakeups and four system calls a round trip), the worst case for anything hooked on
#     sched_switch and sys_enter/sys_exit.
# For each: the workload's throughput relative to nothing watching (the cost of the BPF
# programs is paid in the workload's time), the programs' own run time as the kernel counts
# it (kernel.bpf_stats_enabled on during the run, the run_time_ns of the programs loaded
# after the watcher started, read with bpftool) as a share of one CPU, the watcher's own CPU
# (utime+stime of /proc/PID/stat over the measured period) as a share of one CPU, and its
# peak RSS. Rounds alternate the configurations; medians are printed. The throughput of a
# ping-pong varies by tens of percent from round to round here: the programs' run time is the
# figure to read.
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
cp "${CARGO_TARGET_DIR:-target}/release/kflame" "$tmp/kflame" # a test build may replace target/release/kflame meanwhile
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
command -v bpftool > /dev/null || { echo "needs bpftool (Debian: bpftool) for the programs' run time" >&2; exit 2; }
stats_before=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$stats_before" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$tmp"' EXIT
echo 1 > /proc/sys/kernel/bpf_stats_enabled
# The highest program id loaded now; with "ns": the run time (ns) of the programs above id $1.
last_prog() { bpftool prog show -j | python3 -c 'import json, sys; print(max([p["id"] for p in json.load(sys.stdin)] or [0]))'; }
prog_ns() { bpftool prog show -j | python3 -c 'import json, sys; print(sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p["id"] > int(sys.argv[1])))' "$1"; }

# "$1": workload function; rest: the watcher's flags ("none": nothing watches). Prints
# "throughput cpu_percent rss_mib programs_percent".
run() {
    local work=$1; shift
    if [ "$1" = none ]; then
        echo "$($work) 0 0 0"
        return
    fi
    rm -f "$tmp"/h.db*
    local first; first=$(last_prog)
    "$tmp/kflame" watch --db "$tmp/h.db" --no-kmsg "$@" > /dev/null 2> "$tmp/watch.err" &
    local pid=$!
    sleep 4 # start-up (programs loaded, symbol tables, first windows) is not the steady state
    local t0 t1 it rss p0 p1
    t0=$(ticks "$pid")
    p0=$(prog_ns "$first")
    it=$($work)
    p1=$(prog_ns "$first")
    t1=$(ticks "$pid")
    rss=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid" || { echo "kflame watch failed:" >&2; cat "$tmp/watch.err" >&2; exit 1; }
    awk -v it="$it" -v d="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" -v dur="$DUR" -v rss="$rss" -v pns="$((p1 - p0))" \
        'BEGIN { printf "%s %.3f %s %.3f\n", it, 100 * d / hz / dur, rss, 100 * pns / 1e9 / dur }'
}

configs=(none "--no-latency" "--no-blocked-profiles" "--program-budget=0" "--call-graph=fp" "default")
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
        progs=$(cut -d' ' -f4 "$tmp/$work.$c" | med)
        awk -v c="$c" -v i="$idle" -v it="$it" -v cpu="$cpu" -v rss="$rss" -v progs="$progs" 'BEGIN {
            printf "watch %-22s throughput %6.2f%% of idle  programs %.3f%% of one CPU  watcher %.3f%%  together %.3f%%  RSS %s MiB\n",
                c, 100 * it / i, progs, cpu, progs + cpu, rss }'
    done
done
