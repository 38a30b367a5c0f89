#!/usr/bin/env bash
# System-wide CPU profiles (user stacks from stack copies, kflame's default) while the machine
# builds software: `kflame record -a` against `perf record -a --call-graph dwarf`, rounds
# alternating, both at 99 Hz for DUR seconds, during a release build of this project in a
# scratch target directory (rustc processes map 7 MiB of unwind tables each, and come and go).
# Prints per round: samples kept, records the kernel dropped (ring buffer full), wall time of
# the recording (kflame's includes naming its stacks), and the ratio of kflame's samples to
# perf's. As root. Usage: bench/record-while-building.sh   (DUR=5 ROUNDS=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-5}
ROUNDS=${ROUNDS:-3}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }
cargo build --release -p kflame-cli >&2
KFLAME=$PWD/target/release/kflame
tmp=$(mktemp -d)
build_pid=
cleanup() {
    [ -n "$build_pid" ] && kill -- -"$build_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
# The load: a build from scratch, in its own process group (stopped at the end).
setsid env CARGO_TARGET_DIR="$tmp/target" cargo build --release -p kflame-cli > "$tmp/build.log" 2>&1 &
build_pid=$!
sleep 20 # past dependency resolution, into the compilers

echo "round  kflame_samples  kflame_dropped  kflame_wall_s  perf_samples  perf_lost  ratio"
for r in $(seq 1 "$ROUNDS"); do
    kill -0 "$build_pid" 2>/dev/null || { echo "the build ended: fewer rounds or a shorter DUR" >&2; exit 1; }
    start=$(date +%s.%N)
    "$KFLAME" record -a -F 99 -d "$DUR" -o "$tmp/k.folded" 2> "$tmp/k.err"
    end=$(date +%s.%N)
    ks=$(grep -o 'recorded [0-9]* samples' "$tmp/k.err" | grep -o '[0-9]*' || echo 0)
    kd=$(grep -o 'dropped [0-9]* records' "$tmp/k.err" | grep -o '[0-9]*' || echo 0)
    perf record -a -F 99 --call-graph dwarf -o "$tmp/p.data" -- sleep "$DUR" 2> "$tmp/p.err" > /dev/null
    ps=$(perf report -i "$tmp/p.data" --stats 2> /dev/null | awk '/SAMPLE events:/ { print $3; exit }')
    pl=$(perf report -i "$tmp/p.data" --stats 2> /dev/null | awk '/LOST events:/ { print $3; exit }')
    printf "%5d  %14s  %14s  %13.1f  %12s  %9s  %5.2f\n" "$r" "$ks" "${kd:-0}" \
        "$(echo "$end - $start" | bc)" "${ps:-0}" "${pl:-0}" "$(echo "scale=3; $ks / ${ps:-1}" | bc)"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
