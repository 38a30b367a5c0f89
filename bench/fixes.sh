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
# Prints the cold build time of the index (git log -p + indexing), then the median and
# worst of 5 runs of each query through the library (a function alone, several, with
# --after: rev-parse and rev-list included), and the re-open time with nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${WORK:-bench/out/fixes}
copies=${COPIES:-6}

echo "== building the fix-search benchmark (release)"
cargo build --release --locked -p kflame-fixes --example fixes_bench
bench=target/release/examples/fixes_bench
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

# An introducing commit of the last copy (subject quoted by a later Fixes: trailer), and one
# of the first copy (so that most of the history comes after it).
last=$(git -C "$work/replay" log --format=%H -1 --grep '^libbpf: Add bpf_program__set_insns function$')
first=$(git -C "$work/replay" log --reverse --format=%H --grep '^libbpf: Add bpf_program__set_insns function$' | head -1)
queries=(
    bpf_object__load
    btf__parse_raw
    xsk_socket__create
    "bpf_program__set_insns@$last"
    "bpf_object__load@$first"
    bpf_object__load,bpf_object__load_progs,bpf_object__create_maps,bpf_object__open_file
)
echo "== cold build of the index, then 5 runs of each query (library, in-process)"
"$bench" "$work/replay" "$work/index" "${queries[@]}"
echo "== re-open with nothing new"
"$bench" "$work/replay" "$work/index"
echo "== targets: build <= 30000 ms for >= 12k commits; a query <= 50 ms"
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
