#!/usr/bin/env bash
# perf.data recorded by others: every file of the quipper corpus (../shared/corpora/
# perf-data-quipper relative to the workspace root, or $CORPUS) read by `kflame collapse`
# against `perf script -i F | kflame collapse --format perf-script` (Debian's perf 6.1).
#
# Both sides use nothing of this machine: perf script gets an empty --symfs and --kallsyms,
# kflame --no-host-lookups (the files' kernels and binaries are not here). Kernel frames are
# compared as "a kernel frame" (the file's kernel symbols are not available). Prints, per
# file, kflame's exit status, both total weights and the weighted overlap of stacks
# (targets: equal totals, overlap >= 0.99), and exits non-zero when a target is missed.
#
# Exceptions to the plain `perf script -i F`: Intel PT files get `--no-itrace` (the trace is
# not decoded); perf.data.weight_struct gets `-F comm,tid,time,period,event,ip,sym,dso`: its
# default fields (data source, weights) are not perf script sample lines a collapser reads.
# The tests hold a copy of every file with its perf script text (tests/data/perf-data/quipper,
# test every_corpus_file_agrees_with_perf_script); this runs the same check with the CLI
# and the perf of this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
WS=$(pwd)
CORPUS=${CORPUS:-$WS/../shared/corpora/perf-data-quipper}
[ -d "$CORPUS" ] || { echo "perfdata-corpus.sh: no corpus at $CORPUS" >&2; exit 2; }
command -v perf >/dev/null || { echo "perfdata-corpus.sh: perf is required" >&2; exit 2; }
cargo build --release -q -p kflame-cli
KFLAME=$WS/target/release/kflame
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/symfs"
: > "$TMP/kallsyms"

fail=0
for f in "$CORPUS"/perf.data.*; do
  n=$(basename "$f")
  extra=()
  case $n in
    *intel_pt*) extra=(--no-itrace) ;;
    *weight_struct*) extra=(-F comm,tid,time,period,event,ip,sym,dso) ;;
  esac
  (cd "$TMP/symfs" && perf script -i "$f" --symfs . --kallsyms "$TMP/kallsyms" "${extra[@]}" 2>/dev/null) |
    "$KFLAME" collapse --format perf-script --kernel > "$TMP/script" 2>/dev/null || true
  rc=0
  "$KFLAME" collapse --no-host-lookups --kernel "$f" > "$TMP/kflame" 2>"$TMP/err" || rc=$?
  python3 - "$n" "$rc" "$TMP/script" "$TMP/kflame" <<'PY' || fail=1
import collections, sys
def load(path):
    stacks = collections.Counter()
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        stack, weight = line.rsplit(" ", 1)
        frames = []
        for f in stack.split(";"):
            f = "[k]" if f.endswith("_[k]") else f
            if not (f == "[k]" and frames and frames[-1] == "[k]"):
                frames.append(f)
        stacks[";".join(frames)] += int(weight)
    return stacks
name, rc = sys.argv[1], int(sys.argv[2])
s, k = load(sys.argv[3]), load(sys.argv[4])
ts, tk = sum(s.values()), sum(k.values())
overlap = sum(min(w, k[st]) for st, w in s.items()) / max(ts, 1)
ok = rc == 0 and ts == tk and ts > 0 and overlap >= 0.99
print(f"  {name:<48} exit {rc}  perf script {ts:>11}  kflame {tk:>11}  overlap {overlap:.4f}"
      + ("" if ok else "  MISSED"))
sys.exit(0 if ok else 1)
PY
done
exit $fail
