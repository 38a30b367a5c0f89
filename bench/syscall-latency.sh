#!/usr/bin/env bash
# System-call latency histograms counted in the kernel (kflame-bpf's SyscallLatency): what
# counting costs a call, and what the histograms show.
#   1. N getppid() calls (default 1,000,000) timed without the program, with it attached for
#      every process, and with it attached for another process only (the pid filter's cost),
#      ROUNDS alternating, median ns per call of each, and the loop's own getppid histogram;
#   2. every process's calls for SECS seconds (default 5): the calls most made, with p50, p99,
#      max and slow calls per second (over SLOW_MS, default 10).
#
#   bash bench/syscall-latency.sh      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
N=${N:-1000000}
SECS=${SECS:-5}
SLOW_MS=${SLOW_MS:-10}
cargo build --release --locked -p kflame-bpf --example syscall_hist >&2
bin=${CARGO_TARGET_DIR:-target}/release/examples/syscall_hist
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --loop "$N"
echo "== every process for $SECS s"
"$bin" "$SECS" --slow-ms "$SLOW_MS"
