#!/usr/bin/env bash
# A fuzzing campaign: every target (or those named) for the same time, JOBS at a time, with
# inputs allowed well past the seeds' lengths, and one line of figures per target.
#
#   bash fuzz/campaign.sh [--seconds N] [--jobs J] [--max-len BYTES] [--no-build] [TARGET...]
#
# Builds with stable Rust (RUSTC_BOOTSTRAP is not needed: the coverage instrumentation is
# LLVM's sancov pass, which stable rustc takes) plus debug assertions and overflow checks, as
# the tests run. Each target works on a scratch copy of its seeds under fuzz/work/ (ignored by
# git), so nothing it finds changes the corpus. A crash is written to
# fuzz/work/artifacts/TARGET/; once fixed, minimize it (`BINARY -minimize_crash=1 FILE`) and add
# it under regressions/TARGET/ with a line in regressions/README.md.
#
# The figures go to fuzz/work/campaign.tsv (target, seconds, CPU seconds it got, runs, crashes,
# peak RSS in MB, largest input in bytes of the scratch corpus) and to standard output. With
# more jobs than cores, or beside other work, a target gets less CPU than its seconds: the CPU
# column says how much.
set -euo pipefail

seconds=600
jobs=1
max_len=262144
build=1
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --max-len) max_len="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "campaign.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
    esac
done

command -v /usr/bin/time >/dev/null || { echo "campaign.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(sed -n '/^\[\[bin\]\]/,/^name/s/^name = "\(.*\)"/\1/p' Cargo.toml)
fi
triple="$(rustc -vV | sed -n 's/^host: //p')"
export CARGO_TARGET_DIR="$here/target/sancov"
bin_dir="$CARGO_TARGET_DIR/$triple/release"
if [ "$build" = 1 ]; then
    RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
        CARGO_INCREMENTAL=0 cargo build --release --locked --target "$triple" --bins >&2
fi

work="$here/work"
mkdir -p "$work"
table="$work/campaign.tsv"
[ -f "$table" ] || printf 'target\tseconds\tcpu_seconds\truns\tcrashes\tpeak_rss_mb\tlargest_input\n' >"$table"

# One target: a scratch corpus seeded from corpus/TARGET, the run, its line of figures.
run_one() {
    local t="$1" scratch="$work/corpus/$1" art="$work/artifacts/$1/" log="$work/logs/$1.log"
    mkdir -p "$scratch" "$art" "$(dirname "$log")"
    local before
    before=$(find "$art" -type f | wc -l)
    /usr/bin/time -f '%U %S' -o "$log.cpu" \
        "$bin_dir/$t" "$scratch" "$here/corpus/$t" -max_total_time="$seconds" -max_len="$max_len" \
        -len_control=0 -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
        -artifact_prefix="$art" >"$log" 2>&1 || true
    local runs rss crashes largest cpu
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
    crashes=$(($(find "$art" -type f | wc -l) - before))
    largest=$(find "$scratch" -type f -printf '%s\n' | sort -n | tail -n 1)
    cpu=$(awk 'END { printf "%.0f", $1 + $2 }' "$log.cpu")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$seconds" "$cpu" "${runs:-?}" "$crashes" "${rss:-?}" \
        "${largest:-0}" | tee -a "$table"
}

running=0
for t in "${targets[@]}"; do
    if [ ! -x "$bin_dir/$t" ]; then
        echo "campaign.sh: no binary for target $t (build it, or drop --no-build)" >&2
        exit 1
    fi
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
