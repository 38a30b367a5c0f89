#!/usr/bin/env bash
# Streams a large synthetic kern.log through `kflame collapse --format kernel-log` and reports
# throughput and peak memory: the log is built from the project's real fixtures (a clean
# boot log of 346 lines and a real hung task, as syslog `Mon DD HH:MM:SS host kernel:` lines)
# repeated until SIZE_MB, and piped (never written to disk) into kflame.
#
# Usage: bench/kernel-log-stream.sh [SIZE_MB] (default 2048), from the workspace root.
# Needs a release build: cargo build --release -p kflame-cli
set -euo pipefail
size_mb=${1:-2048}
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/target/release/kflame"
data="$root/crates/kflame/tests/data/kernel-log/captures"
[ -x "$bin" ] || { echo "build first: cargo build --release -p kflame-cli" >&2; exit 1; }
block=$(mktemp)
trap 'rm -f "$block"' EXIT
# One block of about 8 MB: boot log lines and hung tasks, in syslog form.
while [ "$(stat -c %s "$block")" -lt $((8 << 20)) ]; do
    cat "$data/dmesg-full.txt" "$data/dmesg-hung-task-calltrace.txt" \
        | sed 's/^/Nov 22 00:32:10 host kernel: /' >> "$block"
done
block_bytes=$(stat -c %s "$block")
reps=$(( (size_mb << 20) / block_bytes + 1 ))
reports_per_block=$(grep -c 'INFO: task' "$block")
echo "input: $reps x $block_bytes bytes = $((reps * block_bytes >> 20)) MB, $((reps * reports_per_block)) hung task reports"
start=$(date +%s.%N)
for _ in $(seq "$reps"); do cat "$block"; done \
    | /usr/bin/time -f "peak RSS %M KB, %e s elapsed, %U s user" "$bin" collapse --format kernel-log -j1 >"$block.out"
end=$(date +%s.%N)
echo "output:"; cat "$block.out"; rm -f "$block.out"
awk -v b=$((reps * block_bytes)) -v s="$start" -v e="$end" 'BEGIN { printf "throughput: %.1f MB/s\n", b / (e - s) / 1048576 }'
