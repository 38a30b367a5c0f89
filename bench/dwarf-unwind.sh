#!/usr/bin/env bash
# DWARF user stacks: `kflame record` (CPU samples unwound from stack copies, its default)
# against `perf record --call-graph dwarf` + `perf script`, on the same program built without
# frame pointers (`crates/kflame/tests/data/record/nofp.c`: main -> kfbar_outer ->
# kfbar_inner), side by side, rounds alternating. Prints, per round and as medians:
#   - CPU time (user+sys) of each tool recording the running program (-p) for DUR seconds:
#     kflame's whole recording (unwinding and naming included), perf's record plus
#     `perf script --no-inline` (perf's folding of the script text is not counted; without
#     --no-inline perf also looks up DWARF inline frames, which kflame's recorder does not
#     add, and takes longer);
#   - the share of kfbar_inner's samples with the whole chain main;kfbar_outer;kfbar_inner;
#   - the weighted overlap of the two profiles (sum over stacks of the smaller share);
#   - the same with frame pointers (`--call-graph fp`), the baseline these binaries break.
# As root. Usage: bench/dwarf-unwind.sh   (DUR=10 F=999 ROUNDS=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-10}
F=${F:-999}
ROUNDS=${ROUNDS:-3}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed" >&2; exit 2; }
cargo build --release -p kflame-cli >&2
KFLAME=$PWD/target/release/kflame
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -o "$tmp/nofp" crates/kflame/tests/data/record/nofp.c

cpu() { awk '{ printf "%.2f", $1 + $2 }' "$1"; }

# share FOLDED: percent of kfbar_inner's weight under main;kfbar_outer;kfbar_inner.
share() {
    awk '!/^#/ { w = $NF; s = $0; sub(/ [0-9]+$/, "", s)
                 if (s ~ /;kfbar_inner$/) { t += w; if (s ~ /;main;kfbar_outer;kfbar_inner$/) f += w } }
         END { printf "%.1f", t ? 100 * f / t : 0 }' "$1"
}

# overlap A B: sum over stacks of min(share in A, share in B).
overlap() {
    python3 - "$1" "$2" <<'PY'
import sys
def load(p):
    d = {}
    for line in open(p, errors="replace"):
        if line.startswith("#") or not line.strip():
            continue
        s, _, w = line.rstrip("\n").rpartition(" ")
        d[s] = d.get(s, 0) + int(w)
    t = sum(d.values()) or 1
    return {s: w / t for s, w in d.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
print("%.3f" % sum(min(v, b.get(s, 0)) for s, v in a.items()))
PY
}

echo "round  kflame_cpu_s  perf_cpu_s(record+script)  ratio  full_chain_kflame%  full_chain_perf%  overlap  fp_full_chain%"
results=()
record_pid() { # record_pid OUT_TIME CMD...: runs the program, records it with CMD, waits for both.
    local out=$1
    shift
    "$tmp/nofp" $((DUR + 2)) > /dev/null &
    local pid=$!
    sleep 0.5
    /usr/bin/time -f "%U %S" -o "$out" "${@//PID/$pid}" > /dev/null 2>> "$tmp/err"
    wait "$pid"
}
for r in $(seq "$ROUNDS"); do
    : > "$tmp/err"
    record_pid "$tmp/k.time" "$KFLAME" record -F "$F" -p PID -d "$DUR" -o "$tmp/k.folded"
    cp "$tmp/err" "$tmp/k.err"
    record_pid "$tmp/pr.time" perf record -q -e cpu-clock -F "$F" --call-graph dwarf -p PID \
        -o "$tmp/perf.data" -- sleep "$DUR"
    /usr/bin/time -f "%U %S" -o "$tmp/ps.time" perf script --no-inline -i "$tmp/perf.data" > "$tmp/perf.txt" 2> /dev/null
    "$KFLAME" collapse "$tmp/perf.txt" -o "$tmp/p.folded" 2> /dev/null
    record_pid "$tmp/fp.time" "$KFLAME" record -F "$F" --call-graph fp -p PID -d "$DUR" -o "$tmp/fp.folded"
    k=$(cpu "$tmp/k.time")
    p=$(awk '{ s += $1 + $2 } END { printf "%.2f", s }' "$tmp/pr.time" "$tmp/ps.time")
    ratio=$(awk -v k="$k" -v p="$p" 'BEGIN { printf "%.3f", k / p }')
    line="$r  $k  $p  $ratio  $(share "$tmp/k.folded")  $(share "$tmp/p.folded")  $(overlap "$tmp/k.folded" "$tmp/p.folded")  $(share "$tmp/fp.folded")"
    echo "$line"
    results+=("$line")
    rm -f "$tmp/perf.data" "$tmp/perf.txt"
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
rows = [l.split()[1:] for l in sys.stdin if l.strip()]
print("median  " + "  ".join("%g" % statistics.median(float(r[i]) for r in rows) for i in range(len(rows[0]))))'
echo "kflame's notes (last round):"
sed 's/^/  /' "$tmp/k.err"
