#!/usr/bin/env bash
# Compares `kflame collapse` with inferno-collapse-perf 0.12.8 on the 338 MB perf script
# capture of ../shared/bench: wall time, throughput and peak RSS of each (median of RUNS
# runs, the tools alternating), their ratios, and whether both give the same stacks.
#
#   KFLAME_BENCH_CACHE=DIR  where inferno is installed and the capture decompressed
#                           (default bench/.cache; share one between worktrees)
#   RUNS=N                  runs per tool (default 5)
#   THREADS=N               threads for both tools (default: all CPUs)
#   OLD=PATH                an older kflame binary, run in the same alternation, to see a
#                           change side by side (its ratio to inferno and to the new build)
#
# The last lines say whether the targets hold: at least 3x inferno's throughput, with no
# more peak memory than inferno.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${KFLAME_BENCH_CACHE:-bench/.cache}
runs=${RUNS:-5}
threads=${THREADS:-$(nproc)}
zst=$root/../shared/bench/perf-large.script.txt.zst
mkdir -p "$cache" bench/out
cache=$(cd "$cache" && pwd)

need() { command -v "$1" >/dev/null || { echo "bench: $1 is required ($2)" >&2; exit 1; }; }
need zstd "apt-get install zstd"
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time is required (apt-get install time)" >&2; exit 1; }

echo "== building kflame (release)"
cargo build --release --locked -p kflame-cli
kflame=$root/target/release/kflame

inferno=$cache/bin/inferno-collapse-perf
if [ ! -x "$inferno" ]; then
    echo "== installing inferno 0.12.8 into $cache"
    cargo install inferno --version 0.12.8 --locked --root "$cache"
fi

input=$cache/perf-large.script.txt
if [ ! -s "$input" ]; then
    [ -f "$zst" ] || { echo "bench: $zst not found" >&2; exit 1; }
    echo "== decompressing $(basename "$zst")"
    zstd -q -d -f "$zst" -o "$input.tmp" && mv "$input.tmp" "$input"
fi
bytes=$(stat -c %s "$input")
cat "$input" >/dev/null # warm the page cache

# run NAME OUT CMD...: appends "wall_seconds peak_kb" to bench/out/NAME.times
run() {
    local name=$1 out=$2
    shift 2
    /usr/bin/time -f "%e %M" -o bench/out/time.tmp "$@" >"$out" 2>/dev/null
    cat bench/out/time.tmp >>"bench/out/$name.times"
}

rm -f bench/out/*.times
echo "== $runs runs each, $threads threads, $(awk -v b="$bytes" 'BEGIN{printf "%.0f MB", b/1e6}') of perf script"
for i in $(seq "$runs"); do
    run kflame bench/out/kflame.folded "$kflame" collapse --format perf -j "$threads" "$input"
    run inferno bench/out/inferno.folded "$inferno" -n "$threads" "$input"
    if [ -n "${OLD:-}" ]; then
        run old bench/out/old.folded "$OLD" collapse --format perf -j "$threads" "$input"
    fi
done

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
report() {
    local name=$1 wall rss
    wall=$(cut -d' ' -f1 "bench/out/$name.times" | median)
    rss=$(cut -d' ' -f2 "bench/out/$name.times" | median)
    awk -v n="$name" -v w="$wall" -v r="$rss" -v b="$bytes" \
        'BEGIN{printf "%-8s wall %6.3f s   %7.1f MB/s   peak RSS %6.1f MiB\n", n, w, b/1e6/w, r/1024}'
    echo "$wall $rss" >"bench/out/$name.median"
}
echo "== results (medians)"
report kflame
report inferno
[ -z "${OLD:-}" ] || report old
read -r kw kr <bench/out/kflame.median
read -r iw ir <bench/out/inferno.median
awk -v kw="$kw" -v iw="$iw" -v kr="$kr" -v ir="$ir" \
    'BEGIN{printf "throughput ratio kflame/inferno: %.2fx   peak RSS ratio kflame/inferno: %.2f\n", iw/kw, kr/ir}'
if [ -n "${OLD:-}" ]; then
    read -r ow or <bench/out/old.median
    awk -v kw="$kw" -v iw="$iw" -v ow="$ow" \
        'BEGIN{printf "old build: %.2fx inferno; new build %.2fx faster than the old\n", iw/ow, ow/kw}'
    cmp -s bench/out/old.folded bench/out/kflame.folded && echo "old and new builds: identical output" ||
        echo "old and new builds: outputs differ"
fi
# The guard: the targets of this benchmark, met or not.
awk -v kw="$kw" -v iw="$iw" -v kr="$kr" -v ir="$ir" 'BEGIN{
    printf "target throughput >= 3.00x inferno: %.2fx, %s\n", iw/kw, (iw/kw >= 3) ? "met" : "NOT MET"
    printf "target peak RSS <= inferno: %.2f, %s\n", kr/ir, (kr <= ir) ? "met" : "NOT MET" }'

# Same stacks and counts. kflame writes metadata as `# key=value` lines first, and it keeps
# three things the reference drops: C++ `(anonymous namespace)::f` frames (the reference
# takes any symbol starting with `(` for a process name), samples without frames (kept as
# the process name alone), and samples of exited tasks, which perf prints as
# `:-1  -1 [001] ...` (the reference cannot parse the `-1` thread id and skips them).
# Applying those three reference rules to kflame's output must give inferno's output exactly.
echo "== comparing outputs"
grep -v '^#' bench/out/kflame.folded | awk '
    {
        n = split($0, w, " "); count = w[n]; stack = substr($0, 1, length($0) - length(count) - 1)
        k = split(stack, f, ";"); out = f[1]; frames = 0
        for (i = 2; i <= k; i++) if (substr(f[i], 1, 1) != "(") { out = out ";" f[i]; frames++ }
        if (frames > 0 && f[1] != ":-1") sum[out] += count
    }
    END { for (s in sum) printf "%s %.0f\n", s, sum[s] }' | sort >bench/out/kflame.sorted
sort bench/out/inferno.folded >bench/out/inferno.sorted
if cmp -s bench/out/kflame.sorted bench/out/inferno.sorted; then
    echo "outputs agree: $(wc -l <bench/out/kflame.sorted) stacks after applying the reference's three drop rules"
else
    total() { awk '{s+=$NF} END {printf "%.0f", s}' "$1"; }
    echo "outputs differ: kflame $(wc -l <bench/out/kflame.sorted) stacks, total $(total bench/out/kflame.sorted);" \
        "inferno $(wc -l <bench/out/inferno.sorted) stacks, total $(total bench/out/inferno.sorted)"
    diff bench/out/inferno.sorted bench/out/kflame.sorted | head -20 || true
    exit 1
fi
