#!/usr/bin/env bash
# Rendering benchmark: `kflame flamegraph` against inferno-flamegraph 0.12.8 on the
# 287k-distinct-stack folded file of the shared bench corpus; then how long headless
# Chromium takes to open each SVG.
#
#   bench/render.sh [RUNS]          (default 5 runs per tool; medians reported)
#
# Environment: KFLAME_BENCH_CACHE (default bench/.cache) holds the reference tools and the
# decompressed input; KFLAME_BENCH_DATA (default ../shared/bench) the corpus;
# KFLAME_BENCH_BROWSER=0 skips the browser part.
# Machines here are shared and noisy: compare the tools of one run, as ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-5}"
cache="${KFLAME_BENCH_CACHE:-bench/.cache}"
data="${KFLAME_BENCH_DATA:-../shared/bench}"
out="bench/out"
mkdir -p "$cache" "$out"

inferno="$cache/bin/inferno-flamegraph"
if [ ! -x "$inferno" ]; then
    echo "== installing inferno 0.12.8 into $cache"
    cargo install inferno --version 0.12.8 --locked --root "$cache"
fi

input="$cache/large-pid.folded"
if [ ! -s "$input" ]; then
    zstd -dc "$data/large-pid.folded.zst" > "$input.tmp" && mv "$input.tmp" "$input"
fi

echo "== building kflame (release)"
cargo build --release -p kflame-cli --locked
kflame="target/release/kflame"

# Runs "$@" $runs times; prints the median wall seconds, user+sys seconds and peak RSS (KiB).
measure() {
    local name="$1"
    shift
    local log="$out/render-$name.times"
    : > "$log"
    for _ in $(seq "$runs"); do
        /usr/bin/time -f "%e %U %S %M" -a -o "$log" "$@" > /dev/null
    done
    sort -n -k1,1 "$log" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf "%s %.2f", $1, $2 + $3 }'
    sort -n -k4,4 "$log" | awk -v n="$runs" 'NR == int((n + 1) / 2) { printf " %s\n", $4 }'
}

echo "== rendering $(wc -l < "$input") stacks, $runs runs each"
read -r k_wall k_cpu k_rss < <(measure kflame "$kflame" flamegraph "$input" -o "$out/large-kflame.svg")
read -r i_wall i_cpu i_rss < <(measure inferno sh -c "\"$inferno\" \"$input\" > \"$out/large-inferno.svg\"")

printf '%-20s %10s %10s %12s\n' tool "wall (s)" "cpu (s)" "peak RSS"
printf '%-20s %10s %10s %9d MiB\n' kflame "$k_wall" "$k_cpu" $((k_rss / 1024))
printf '%-20s %10s %10s %9d MiB\n' inferno-flamegraph "$i_wall" "$i_cpu" $((i_rss / 1024))
awk -v kw="$k_wall" -v iw="$i_wall" -v kc="$k_cpu" -v ic="$i_cpu" -v kr="$k_rss" -v ir="$i_rss" 'BEGIN {
    printf "speed-up vs inferno: %.2fx wall, %.2fx cpu (target >= 2x); RSS ratio %.2f (target <= 0.5)\n",
        iw / kw, ic / kc, kr / ir }'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${KFLAME_BENCH_BROWSER:-1}" != 0 ]; then
    if [ ! -d tests/browser/node_modules ]; then
        (cd tests/browser && npm ci --no-audit --no-fund)
    fi
    echo "== headless Chromium opening the SVGs (target: under 2 s)"
    echo "kflame:";  node bench/svg-open.mjs "$out/large-kflame.svg" 3
    echo "inferno:"; node bench/svg-open.mjs "$out/large-inferno.svg" 3
fi
