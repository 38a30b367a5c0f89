#!/usr/bin/env bash
# Kernel source index of `kflame source` / `kflame analyze --kernel-src` on a whole kernel
# tree: the time to build the index from nothing (target <= 60 s for ~60k files), to open it
# again when nothing changed (a stat of every file), to update it after one file changed,
# and to look a function up (target <= 10 ms). The lookup time is measured inside one
# process (the `source_lookup` example: index opened once, then N lookups of functions
# spread over the tree, median and maximum); the whole command, index load included, is
# timed too.
#
# Usage: bench/analyze-source.sh KERNEL_TREE
#   e.g. a tree unpacked from git: git --git-dir=linux.git archive HEAD | tar -x -C /tmp/linux
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${1:?usage: bench/analyze-source.sh KERNEL_TREE}
[ -d "$TREE/kernel" ] || { echo "$TREE: no kernel/ directory, not a kernel tree" >&2; exit 2; }

# (`--example` alone would build only the example: the CLI is asked for by name.)
cargo build --release -p kflame-cli --bin kflame -p kflame-analyze --example source_lookup >&2
KFLAME=$PWD/target/release/kflame
LOOKUP=$PWD/target/release/examples/source_lookup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
IDX=$tmp/index

files=$(find "$TREE" -name '.*' -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print | wc -l)
echo "tree: $TREE ($files .c/.h files), $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)"

# Wall-clock seconds, and CPU seconds (user + system) in parentheses: on a loaded machine the
# CPU time says what the work costs, the wall time what a user waits.
secs() {
    local TIMEFORMAT='%R s (cpu %U user + %S sys)'
    { time "$@" >/dev/null 2>&1; } 2>&1
}

t=$(secs "$KFLAME" source vfs_read --kernel-src "$TREE" --index "$IDX")
echo "index build (first use): ${t} (target <= 60 s); index $(du -h "$IDX" | cut -f1)"
t=$(secs "$KFLAME" source vfs_read --kernel-src "$TREE" --index "$IDX")
echo "command, index unchanged (load + stat of every file + lookup): ${t}"
f=$(find "$TREE/fs" -name 'read_write.c' | head -1)
touch "$f"
t=$(secs "$KFLAME" source vfs_read --kernel-src "$TREE" --index "$IDX")
echo "command after touching $f (one file rescanned): ${t}"
"$LOOKUP" "$TREE" "$IDX"
