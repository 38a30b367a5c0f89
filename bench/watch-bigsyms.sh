#!/usr/bin/env bash
# Memory of the default `kflame watch` beside programs with large symbol tables (as root):
# `rustc -O` of a generated crate of a few thousand lines, in a loop on every CPU, for DUR
# seconds. rustc runs in `librustc_driver` and `libLLVM` (some 340k symbols, 37 MB of
# names between them), so the watcher symbolizes two large libraries in a stream of
# short-lived processes. Prints the watcher's peak RSS (VmHWM) against the 64 MiB target,
# its RSS every 10 s, its CPU time, and the compilations done.
#
# Usage: bench/watch-bigsyms.sh                  (DUR=60 by default)
#        DUR=120 KFLAME=target/release/kflame bench/watch-bigsyms.sh   (a kflame built elsewhere)
#        CAPTURE=1 bench/watch-bigsyms.sh   (with a trigger that keeps a CPU capture running:
#                                            a second recorder, its own caches, beside the first)
#        RECORD=1 DUR=1200 bench/watch-bigsyms.sh
#            (`kflame record -a -F 99` for the whole run instead of `watch`: its RSS, its peak
#            with the end's naming and writing, its CPU time, and how long it took to end;
#            OLD=path/to/kflame records with a second build at the same time, on the same
#            workload, for a side-by-side comparison)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-60}
NCPU=$(nproc)
HZ=$(getconf CLK_TCK)

[ "$(id -u)" = 0 ] || { echo "run as root (system-wide recording)" >&2; exit 2; }
RUSTC=$(rustup which rustc 2>/dev/null || command -v rustc)
[ -n "$RUSTC" ] || { echo "rustc is not installed" >&2; exit 2; }

if [ -z "${KFLAME:-}" ]; then
    cargo build --release -p kflame-cli >&2
    KFLAME=$PWD/${CARGO_TARGET_DIR:-target}/release/kflame
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# A crate of about 3200 lines: generic code that the optimizer inlines and unrolls, so
# that rustc spends its time in both libraries.
gen() {
    local i
    echo 'use std::collections::HashMap;'
    for i in $(seq 200); do
        cat <<EOF
#[derive(Clone, Debug, Default, PartialEq)]
pub struct S$i { a: u64, b: Vec<u32>, c: String, d: Option<Box<S$i>> }
impl S$i {
    pub fn new(n: u64) -> Self { S$i { a: n, b: (0..n as u32 % 64).collect(), c: format!("{n}"), d: None } }
    pub fn sum(&self) -> u64 { self.b.iter().map(|&x| x as u64 * $i).sum::<u64>() + self.a }
    pub fn index(v: &[S$i]) -> HashMap<String, u64> {
        v.iter().filter(|s| s.a % 3 != 0).map(|s| (s.c.clone(), s.sum())).collect()
    }
}
pub fn run$i(n: u64) -> u64 {
    let v: Vec<S$i> = (0..n).map(S$i::new).collect();
    let m = S$i::index(&v);
    let mut keys: Vec<_> = m.keys().cloned().collect();
    keys.sort();
    keys.iter().map(|k| m[k]).fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(b))
}
EOF
    done
}
# One `rustc -O` loop per CPU until $end, each counting its builds; their pids join $pids.
workload() {
    local c
    for c in $(seq "$NCPU"); do
        (
            n=0
            while [ "$(date +%s)" -lt "$end" ]; do
                "$RUSTC" -O --edition 2021 --crate-type lib -o "$tmp/out$c.rlib" "$tmp/big.rs" 2>/dev/null && n=$((n + 1))
            done
            echo "$n" > "$tmp/builds.$c"
        ) &
        pids+=($!)
    done
}
builds_done() { cat "$tmp"/builds.* | awk '{ s += $1 } END { print s }'; }
gen > "$tmp/big.rs"
echo "workload: $(wc -l < "$tmp/big.rs") lines, rustc -O in a loop on $NCPU CPUs for ${DUR}s ($RUSTC)" >&2

if [ -n "${RECORD:-}" ]; then
    command -v /usr/bin/time > /dev/null || { echo "needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
    builds=("$KFLAME" ${OLD:+"$OLD"})
    names=(new ${OLD:+old})
    for i in "${!builds[@]}"; do
        /usr/bin/time -f '%M %e %U %S' -o "$tmp/time.$i" \
            "${builds[$i]}" record -a -F 99 -d $((DUR + 3)) -o "$tmp/rec.$i.folded" 2> "$tmp/rec.$i.err" &
        pids+=($!)
    done
    nrec=${#builds[@]}
    sleep 3
    end=$(( $(date +%s) + DUR ))
    workload
    s=0
    while [ "$(date +%s)" -lt "$end" ]; do
        sleep 10
        s=$((s + 10))
        line=$(printf '  %4ss:' "$s")
        for i in $(seq 0 $((nrec - 1))); do
            child=$(pgrep -P "${pids[$i]}" | head -n 1 || true)
            rss=$( [ -n "$child" ] && awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$child/status" 2>/dev/null || echo "?")
            line+=" ${names[$i]} RSS ${rss} MiB,"
        done
        echo "$line load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    done
    wait "${pids[@]:$nrec}"
    printf 'rustc -O builds: %s in %ss on %s CPUs; load after: %s\n' \
        "$(builds_done)" "$DUR" "$NCPU" "$(cut -d' ' -f1-3 /proc/loadavg)"
    for i in $(seq 0 $((nrec - 1))); do
        rc=0
        wait "${pids[$i]}" || rc=$?
        [ "$rc" = 0 ] || { echo "${names[$i]}: kflame record exited with $rc:" >&2; cat "$tmp/rec.$i.err" >&2; exit 1; }
        read -r kb el us sy < "$tmp/time.$i"
        printf '%s (%s): peak RSS %.1f MiB, CPU %.1f s, ended %.1f s after recording stopped; %s\n' \
            "${names[$i]}" "${builds[$i]}" "$(echo "$kb / 1024" | bc -l)" "$(echo "$us + $sy" | bc -l)" \
            "$(echo "$el - $DUR - 3" | bc -l)" "$(grep -o 'recorded .*' "$tmp/rec.$i.err" | head -n 1)"
    done
    exit 0
fi

extra=()
if [ -n "${CAPTURE:-}" ]; then
    # rustc keeps every CPU busy: the trigger fires at once, and again after each cooldown.
    extra=(--trigger "cpu > 30% for 2s => cpu 20s" --cooldown 5s --budget 1000)
    echo "with captures: ${extra[*]}" >&2
fi
"$KFLAME" watch --db "$tmp/w.db" --log-level warn "${extra[@]}" > /dev/null 2> "$tmp/watch.err" &
wpid=$!
pids+=("$wpid")
sleep 3 # start-up
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
t0=$(ticks "$wpid")
end=$(( $(date +%s) + DUR ))
workload
s=0
while [ "$(date +%s)" -lt "$end" ]; do
    sleep 10
    s=$((s + 10))
    kill -0 "$wpid" 2>/dev/null || { echo "kflame watch died:" >&2; cat "$tmp/watch.err" >&2; exit 1; }
    printf '  %3ss: watcher RSS %s MiB, load %s\n' "$s" \
        "$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$wpid/status")" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
wait "${pids[@]:1}"
t1=$(ticks "$wpid")
hwm=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$wpid/status")
rss=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$wpid/status")
kill -TERM "$wpid"
rc=0
wait "$wpid" || rc=$?
[ "$rc" = 0 ] || { echo "kflame watch exited with $rc:" >&2; cat "$tmp/watch.err" >&2; exit 1; }
builds=$(builds_done)
cpu=$(echo "100 * ($t1 - $t0) / $HZ / $DUR" | bc -l)
printf 'rustc -O builds: %s in %ss on %s CPUs; load after: %s\n' "$builds" "$DUR" "$NCPU" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'kflame watch: peak RSS %s MiB (target <= 64), RSS at the end %s MiB, CPU %.2f%% of one CPU\n' "$hwm" "$rss" "$cpu"
if [ -n "${CAPTURE:-}" ]; then
    printf 'captures stored: %s\n' "$("$KFLAME" query --db "$tmp/w.db" --events --from -1d 2>/dev/null | grep -c capture || true)"
fi
