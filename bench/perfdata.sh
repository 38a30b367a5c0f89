#!/usr/bin/env bash
# perf.data → folded: `kflame collapse FILE.data` against the perf pipelines it replaces.
#
#   1. the 94 MB benchmark capture: kflame vs `perf script | inferno-collapse-perf`
#      (target: kflame at least 10x faster);
#   2. a --call-graph dwarf capture recorded here: kflame vs `perf script` alone
#      (target: at least 10x faster).
# Prints wall time, peak RSS and ratios, and checks that outputs agree (total weight, top
# stacks). Needs perf, zstd, gcc, root for recording; the benchmark corpus is read from
# ../shared/bench relative to the workspace root.
#
# Cache: ${KFLAME_BENCH_CACHE:-bench/.cache} (decompressed data, inferno, the dwarf capture).
# RUNS=N repeats each timing (median reported; default 3; perf script on the DWARF capture
# runs once: it spends minutes in addr2line). On the large capture kflame and the pipe run
# in alternation (ABBA order), so each ratio compares runs made moments apart on this noisy
# machine; the median of those ratios is the figure. DWARF_PART=skip leaves out the DWARF part
# (its perf script runs take about a quarter of an hour each).
set -euo pipefail
cd "$(dirname "$0")/.."
WS=$(pwd)
CACHE=${KFLAME_BENCH_CACHE:-$WS/bench/.cache}
SHARED=$WS/../shared/bench
RUNS=${RUNS:-3}
mkdir -p "$CACHE"

need() { command -v "$1" >/dev/null || { echo "perfdata.sh: $1 is required" >&2; exit 2; }; }
need perf; need zstd; need gcc; need /usr/bin/time

# -- inputs -------------------------------------------------------------------------------
unpack() { # src.zst dst
  [ -s "$2" ] && return
  [ -f "$1" ] || { echo "perfdata.sh: missing $1 (benchmark corpus)" >&2; exit 2; }
  zstd -dq "$1" -o "$2.tmp.$$" && mv "$2.tmp.$$" "$2"
}
unpack "$SHARED/perf-large.data.zst" "$CACHE/perf-large.data"
unpack "$SHARED/kallsyms-perf-large.txt.zst" "$CACHE/kallsyms-perf-large.txt"

# -- inferno 0.12.8 (another user of the cache may be installing it: wait on its lock) ----
INFERNO=$CACHE/bin/inferno-collapse-perf
(
  flock 9
  [ -x "$INFERNO" ] || cargo install inferno --version 0.12.8 --locked --root "$CACHE" -q
) 9>"$CACHE/.inferno.lock"
while pgrep -f "cargo install inferno .*--root $CACHE" >/dev/null; do sleep 5; done

cargo build --release -q -p kflame-cli
KFLAME=$WS/target/release/kflame

# -- the dwarf capture ----------------------------------------------------------------------
DWARF=$CACHE/perf-dwarf.data
# System-wide for 3 s (whatever runs on the machine, plus the test workload).
if [ ! -s "$DWARF" ]; then
  gcc -O2 -fomit-frame-pointer -o "$CACHE/workload-nofp" crates/kflame/tests/data/perf-data/workload.c
  "$CACHE/workload-nofp" 400000 &
  perf record -q -a -F 199 -e cpu-clock --call-graph dwarf -o "$DWARF" -- sleep 3 2>/dev/null
  wait
fi

# -- measuring ------------------------------------------------------------------------------
# measure NAME CMD: runs the shell command CMD RUNS times; sets WALL and CPU (medians, s;
# CPU = user + system of all its processes) and RSS (peak of its largest process, KiB).
# On a shared machine compare CPU as well as wall time.
measure() {
  local name=$1 cmd=$2 t walls=() rsss=() cpus=()
  t=$(mktemp)
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$t" -f "%e %M %U %S" bash -c "$cmd > /dev/null 2>&1"
    read -r w r u k < "$t"
    walls+=("$w"); rsss+=("$r"); cpus+=("$(awk -v u="$u" -v k="$k" 'BEGIN {print u + k}')")
  done
  rm -f "$t"
  WALL=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  RSS=$(printf '%s\n' "${rsss[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  CPU=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '  %-44s wall %7.2f s   cpu %7.2f s   peak RSS %6d MiB\n' "$name" "$WALL" "$CPU" $((RSS / 1024))
}

# agree KFLAME_FOLDED REFERENCE_FOLDED: total weight and top stacks (compare_folded.py).
agree() { python3 bench/compare_folded.py reference "$1" "$2"; }

# pairs NAME_A CMD_A NAME_B CMD_B: RUNS pairs in ABBA order; prints each side's median wall
# and CPU time and peak RSS, and the ratios B/A of each pair (min, median, max).
pairs() {
  local t i first second
  t=$(mktemp)
  : > "$t.a"; : > "$t.b"
  for i in $(seq "$RUNS"); do
    if [ $((i % 2)) = 1 ]; then first=a; second=b; else first=b; second=a; fi
    for side in $first $second; do
      local cmd=$2
      [ "$side" = b ] && cmd=$4
      /usr/bin/time -o "$t" -f "%e %M %U %S" bash -c "$cmd > /dev/null 2>&1"
      echo "$i $(cat "$t")" >> "$t.$side"
    done
  done
  python3 - "$1" "$t.a" "$3" "$t.b" <<'PY'
import statistics as st, sys
def rows(p): return {int(r[0]): [float(x) for x in r[1:]] for r in (l.split() for l in open(p))}
a, b = rows(sys.argv[2]), rows(sys.argv[4])
for name, d in ((sys.argv[1], a), (sys.argv[3], b)):
    wall = st.median(r[0] for r in d.values()); cpu = st.median(r[2] + r[3] for r in d.values())
    rss = st.median(r[1] for r in d.values()) / 1024
    print(f"  {name:<44} wall {wall:7.2f} s   cpu {cpu:7.2f} s   peak RSS {rss:6.0f} MiB")
for what, f in (("wall", lambda r: r[0]), ("CPU", lambda r: r[2] + r[3])):
    ratios = sorted(f(b[i]) / f(a[i]) for i in a)
    print(f"  ratio per pair ({what}): min {ratios[0]:.1f}x, median {st.median(ratios):.1f}x, max {ratios[-1]:.1f}x"
          f" over {len(ratios)} pairs (target 10x)")
PY
  rm -f "$t" "$t.a" "$t.b"
}

echo "== perf.data (94 MB, 595k samples, -a -g) → folded"
LARGE=$CACHE/perf-large.data KALL=$CACHE/kallsyms-perf-large.txt
pairs "kflame collapse --kallsyms" "$KFLAME collapse $LARGE --kallsyms $KALL" \
  "perf script | inferno-collapse-perf" "perf script -i $LARGE --kallsyms $KALL | $INFERNO"
# inferno weighs samples by their period, as kflame does by default.
$KFLAME collapse "$LARGE" --kallsyms "$KALL" -o "$CACHE/large.kflame.folded" 2>/dev/null
perf script -i "$LARGE" --kallsyms "$KALL" 2>/dev/null | $INFERNO > "$CACHE/large.inferno.folded"
agree "$CACHE/large.kflame.folded" "$CACHE/large.inferno.folded"
# The perf.data reader's own target: the output of perf script | kflame collapse.
perf script -i "$LARGE" --kallsyms "$KALL" 2>/dev/null | $KFLAME collapse 2>/dev/null > "$CACHE/large.script.folded"
echo "  vs perf script | kflame collapse:"
python3 bench/compare_folded.py same "$CACHE/large.kflame.folded" "$CACHE/large.script.folded"

[ "${DWARF_PART:-}" = skip ] && exit 0
echo "== --call-graph dwarf perf.data ($(du -m "$DWARF" | cut -f1) MB) → folded"
measure "kflame collapse (unwinding in-process)" "$KFLAME collapse $DWARF"
K_WALL=$WALL K_CPU=$CPU
# perf script runs addr2line for inline frames here: minutes; once is enough.
RUNS=1 measure "perf script (alone)" "perf script -i $DWARF"
P_WALL=$WALL P_CPU=$CPU
awk -v k="$K_WALL" -v p="$P_WALL" -v kc="$K_CPU" -v pc="$P_CPU" \
  'BEGIN {printf "  ratio: kflame is %.1fx faster than perf script alone in wall time, %.1fx in CPU time (target 10x)\n", p / k, pc / kc}'
$KFLAME collapse "$DWARF" -o "$CACHE/dwarf.kflame.folded" 2>/dev/null
perf script -i "$DWARF" 2>/dev/null | $INFERNO > "$CACHE/dwarf.inferno.folded"
agree "$CACHE/dwarf.kflame.folded" "$CACHE/dwarf.inferno.folded"
