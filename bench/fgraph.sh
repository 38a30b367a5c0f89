#!/usr/bin/env bash
# Throughput of `kflame collapse --format function-graph` on a generated function_graph trace
# (bench/gen_fgraph.py, ~2 M lines), compared with `wc -l` as the scan limit. The machines
# are shared: read the CPU time (user + sys) as well as the wall time.
# Usage: bench/fgraph.sh [LINES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-2000000}
runs=${2:-5}
cargo build --release -p kflame-cli >&2
data=target/bench-fgraph-$lines.txt
[ -s "$data" ] || python3 bench/gen_fgraph.py "$lines" > "$data"
echo "input: $data, $(wc -l < "$data") lines, $(( $(stat -c %s "$data") / 1000000 )) MB"
for what in "wc -l" "target/release/kflame collapse --format function-graph" \
            "target/release/kflame collapse --format function-graph --top 10"; do
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %U %S %M" $what "$data" 2>&1 >/dev/null | tail -1
    done | sort -n | awk -v w="$what" '{t[NR]=$1; c[NR]=$2+$3; m[NR]=$4} END {
        k = int((NR+1)/2)
        printf "%-56s median wall %.2f s, cpu %.2f s, peak RSS %d MiB\n", w, t[k], c[k], m[k]/1024 }'
done
# Check: with self times, the total weight equals the summed durations of the top-level calls.
want=$(awk -F'|' '$3 ~ /^  [^ ]/ && $2 ~ /us/ { d=$2; gsub(/[^0-9.]/, "", d); split(d, p, "."); s += p[1]*1000 + p[2] } END { printf "%.0f", s }' "$data")
got=$(target/release/kflame collapse --format function-graph "$data" 2>/dev/null | awk '!/^#/ { s += $NF } END { printf "%.0f", s }')
echo "total self time: $got ns; summed top-level durations: $want ns"
[ "$got" = "$want" ]
