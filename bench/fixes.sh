#!/usr/bin/env bash
# Fix search (`kflame fixes`): time to index a 12k-commit git history (target <= 30 s) and
# the time of one query (target <= 50 ms).
#
# The history: libbpf's real history (crates/kflame-fixes/tests/data/libbpf-2023.bundle,
# 2,214 kernel commits) replayed 6 times one after the other into one branch of 13,284
# commits (bench/fixes_replay.py: `git fast-export` of the branch, each further copy's root
# starting from the previous copy's tip with `deleteall`, so every replayed commit has its
# original diff, message and dates; `git fast-import` writes it).
#
#   WORK=DIR   scratch directory (default bench/out/fixes)
#   COPIES=N   how many times to replay the history (default 6)
#
# Prints the index build time (a cold `kflame fixes` run: git log -p + indexing), the
# re-open time with nothing new, and for 8 queries (a function alone, with --after, with
# --file and --words, as JSON) the median and worst wall time of 5 runs of the whole
# `kflame fixes` process (start, index open, git rev-parse/rev-list, search, output).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-bench/out/fixes}
copies=${COPIES:-6}
kflame=target/release/kflame

echo "== building kflame (release)"
cargo build --release --locked -p kflame-cli
rm -rf "$work"
mkdir -p "$work"
echo "== replaying the libbpf history $copies times into $work/replay"
git clone -q --branch history-2023 crates/kflame-fixes/tests/data/libbpf-2023.bundle "$work/libbpf"
git init -q "$work/replay"
git -C "$work/libbpf" fast-export --signed-tags=strip history-2023 |
    python3 bench/fixes_replay.py "$copies" | git -C "$work/replay" fast-import --quiet
git -C "$work/replay" symbolic-ref HEAD refs/heads/history-2023
commits=$(git -C "$work/replay" rev-list --count HEAD)
[ "$(git -C "$work/replay" rev-parse 'HEAD^{tree}')" = "$(git -C "$work/libbpf" rev-parse 'HEAD^{tree}')" ] ||
    { echo "bench: the replayed history does not end on the original tree" >&2; exit 1; }
echo "   $commits commits (load: $(cut -d' ' -f1-3 /proc/loadavg))"

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

echo "== index build (cold)"
t0=$(now)
"$kflame" fixes --git "$work/replay" --function bpf_object__load -n 1 >/dev/null
t1=$(now)
build_ms=$(ms "$t0" "$t1")
echo "   index of $commits commits: $build_ms ms (target <= 30000); size $(du -sh "$work/replay/.git/kflame-fixes" | cut -f1)"

t0=$(now)
"$kflame" fixes --git "$work/replay" --function bpf_object__load -n 1 >/dev/null
t1=$(now)
echo "   re-open, nothing new: $(ms "$t0" "$t1") ms"

intro=$(git -C "$work/replay" log --format=%H -1 --grep '^libbpf: Add bpf_program__set_insns function$')
queries=(
    "--function bpf_object__load"
    "--function btf__parse_raw"
    "--function xsk_socket__create --limit 20"
    "--function bpf_program__set_insns --after $intro"
    "--function bpf_object__load --after $intro"
    "--function bpf_object__open_file --file src/libbpf.c --words leak"
    "--words null pointer dereference"
    "--function bpf_object__load bpf_object__load_progs bpf_object__create_maps --json"
)
worst_all=0
echo "== queries (5 runs each, wall time of the whole process)"
for q in "${queries[@]}"; do
    times=()
    for _ in 1 2 3 4 5; do
        t0=$(now)
        # shellcheck disable=SC2086
        "$kflame" fixes --git "$work/replay" $q >/dev/null
        t1=$(now)
        times+=("$(ms "$t0" "$t1")")
    done
    sorted=$(printf '%s\n' "${times[@]}" | sort -n)
    median=$(echo "$sorted" | sed -n 3p)
    worst=$(echo "$sorted" | tail -1)
    (( worst > worst_all )) && worst_all=$worst
    printf '   %-90s median %4d ms, worst %4d ms\n' "${q:0:90}" "$median" "$worst"
done
echo "== index build $build_ms ms for $commits commits (target <= 30000 ms); worst query $worst_all ms (target <= 50 ms)"
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
