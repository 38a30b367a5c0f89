#!/usr/bin/env bash
# The blocked-time modes on known workloads (kflame's test workload, built here), each
# recorded with `kflame record` as a user would, and what each shows:
#   --off-cpu --wakers  a thread blocked on a pipe that another writes every 10 ms: the share
#                       of the reader's blocked time under the writer's function (after `--`);
#   --locks             eight threads mapping and unmapping memory: the share of all lock
#                       wait time under their own function with an rwsem frame;
#   --runq              three threads spinning on CPU 0 for 2 s: their run-queue time (about
#                       two thirds of 3 x 2 s when the CPU is shared fairly);
#   --bio               dd of 4000 blocks of 4 KiB with oflag=direct: its IO latency under its
#                       own stacks.
# Each records every task (-a) for a few seconds around its workload; each line gives
# kflame's own CPU time (user + sys) for the recording.
#
#   bash bench/blocked-modes.sh      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
cargo build --release --locked -p kflame-cli >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/tmp/kflame-bench-dd' EXIT
cp "${CARGO_TARGET_DIR:-target}/release/kflame" "$tmp/kflame"
cc -O1 -fno-omit-frame-pointer -pthread -o "$tmp/kfwork" crates/kflame/tests/data/record/workload.c
# rec SECONDS OUT MODE... -- WORKLOAD...: records every task for SECONDS while the workload,
# started half a second in, runs; prints kflame's own CPU seconds (not the workload's).
rec() {
  local secs=$1 out=$2; shift 2
  local mode=()
  while [ "$1" != -- ]; do mode+=("$1"); shift; done
  shift
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$tmp/kflame" record -a -d "$secs" -o "$out" "${mode[@]}" > /dev/null 2> "$tmp/err" &
  local pid=$!
  sleep 0.5
  "$@" > /dev/null
  wait "$pid"
  awk '{ printf "%.2f", $1 + $2 }' "$tmp/time"
}
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu=$(rec 5 "$tmp/w.folded" --off-cpu --wakers -- "$tmp/kfwork" wakers 300 10)
awk -v cpu="$cpu" '/;kf_pipe_reader;/ { t += $NF; split($0, p, ";--;"); if (p[2] ~ /;kf_pipe_writer;/) w += $NF }
  END { printf "--off-cpu --wakers  reader blocked %.2f s, %.1f%% under kf_pipe_writer   (kflame CPU %s s)\n", t / 1e9, 100 * w / t, cpu }' "$tmp/w.folded"
cpu=$(rec 4 "$tmp/l.folded" --locks -- "$tmp/kfwork" mappers 8 2)
awk -v cpu="$cpu" '!/^#/ { t += $NF; if ($0 ~ /;kf_map_unmap;/ && $0 ~ /;\[rwsem:[RW]\] [0-9]+$/) m += $NF }
  END { printf "--locks             waits %.2f s, %.1f%% under kf_map_unmap with an rwsem frame   (kflame CPU %s s)\n", t / 1e9, 100 * m / t, cpu }' "$tmp/l.folded"
cpu=$(rec 4 "$tmp/r.folded" --runq -- "$tmp/kfwork" crowd 3 2)
awk -v cpu="$cpu" '/;kf_crowd_spin;/ { t += $NF }
  END { printf "--runq              kf_crowd_spin waited %.2f s on run queues (3 threads x 2 s on one CPU)   (kflame CPU %s s)\n", t / 1e9, cpu }' "$tmp/r.folded"
cpu=$(rec 3 "$tmp/b.json" --bio -- dd if=/dev/zero of=/var/tmp/kflame-bench-dd bs=4k count=4000 oflag=direct status=none)
awk -v cpu="$cpu" -F'"weight":' '/"comm":"dd"/ { split($2, w, /[,}]/); t += w[1] }
  /"comm":"dd"/ && /submit_bio/ { n++ }
  END { printf "--bio               dd: %.1f ms of IO latency under submit_bio stacks of dd   (kflame CPU %s s)\n", t / 1e6, cpu }' "$tmp/b.json"
