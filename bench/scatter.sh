#!/usr/bin/env bash
# The latency scatter page at 1M events.
#
#   bench/scatter.sh [RUNS]          (default 3 runs of each command; medians reported)
#
# 1M JSON event lines are made by tiling the syscall latency recorded on a real machine
# (crates/kflame/tests/data/scatter/syscalls-mixed.json.gz, 17,259 events): the same events
# repeated with their times shifted by the recording's span (bench/gen_scatter.py). Then:
# - building the page (`kflame scatter`, release) against the anchor a user would write,
#   Python's json module reading the same lines into lists: wall and CPU time, peak RSS;
# - the page's size;
# - the page in headless Chromium (bench/scatter.mjs): first paint, pan/zoom frames/s, a box
#   selection's flame graphs.
# The machines are shared and noisy: compare within one run (the ratio), never across days.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-3}"
out="bench/out"
mkdir -p "$out"
events="$out/scatter-1m.json"
page="$out/scatter-1m.html"

echo "== building kflame (release)"
cargo build --release -p kflame-cli --locked
kflame="target/release/kflame"

if [ ! -s "$events" ]; then
    echo "== generating 1,000,000 events by tiling the recorded fixture"
    python3 bench/gen_scatter.py crates/kflame/tests/data/scatter/syscalls-mixed.json.gz 1000000 > "$events.tmp"
    mv "$events.tmp" "$events"
fi

# Runs "$@" $runs times; prints the median wall seconds, user+sys seconds and peak RSS (KiB).
measure() {
    local name="$1"
    shift
    local log="$out/scatter-$name.times"
    : > "$log"
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %U %S %M" -a -o "$log" "$@" > /dev/null
    done
    sort -n -k1,1 "$log" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf "%s %.2f", $1, $2 + $3 }'
    sort -n -k4,4 "$log" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf " %s\n", $4 }'
}

python_anchor='
import json, sys
ts, dur, pid, comm, stack, event = [], [], [], [], [], []
for line in open(sys.argv[1]):
    e = json.loads(line)
    ts.append(e["ts"]); dur.append(e["duration_ns"]); pid.append(e["pid"])
    comm.append(e["comm"]); stack.append(e["stack"]); event.append(e["event"])
print(len(ts))'

echo "== $(wc -l < "$events") event lines ($(($(stat -c %s "$events") / 1048576)) MiB), $runs runs each"
read -r k_wall k_cpu k_rss < <(measure kflame "$kflame" scatter "$events" -o "$page")
read -r p_wall p_cpu p_rss < <(measure python python3 -c "$python_anchor" "$events")
printf '%-28s %10s %10s %12s\n' command "wall (s)" "cpu (s)" "peak RSS"
printf '%-28s %10s %10s %9d MiB\n' "kflame scatter" "$k_wall" "$k_cpu" $((k_rss / 1024))
printf '%-28s %10s %10s %9d MiB\n' "python3 json into lists" "$p_wall" "$p_cpu" $((p_rss / 1024))
awk -v kw="$k_wall" -v pw="$p_wall" -v kc="$k_cpu" -v pc="$p_cpu" 'BEGIN {
    printf "page build vs python json: %.1fx wall, %.1fx cpu (target >= 5x)\n", pw / kw, pc / kc }'
size=$(stat -c %s "$page")
awk -v s="$size" 'BEGIN { printf "page size: %.1f MB (target <= 60 MB)\n", s / 1e6 }'

echo "== the page in headless Chromium"
# The browser side: playwright-core from tests/browser (as scripts/test installs it).
if [ ! -f tests/browser/node_modules/.package-lock.json ]; then
  (cd tests/browser && npm ci --no-audit --no-fund)
fi
node bench/scatter.mjs "$page"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
