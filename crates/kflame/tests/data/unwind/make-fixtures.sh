#!/bin/bash
# Rebuilds the unwinding fixtures on an x86-64 Linux machine with gcc, binutils and perf:
# the binaries, a perf recording of kfbar with user stack copies, and perf's own unwinding of
# it. Run as root (system-wide perf events) from this directory.
set -euo pipefail
cd "$(dirname "$0")"
flags=(-O2 -fomit-frame-pointer -fno-optimize-sibling-calls -nostdlib -static -fno-stack-protector
       -Wl,--build-id -Wl,--eh-frame-hdr)
# .eh_frame (the default): what every distribution's binaries carry.
gcc "${flags[@]}" -o kfbar kfbar.c
# Only .debug_frame, and that in a separate debug file under .build-id/ (as Debian's -dbgsym
# packages install them under /usr/lib/debug/.build-id/).
gcc "${flags[@]}" -g -fno-asynchronous-unwind-tables -fno-unwind-tables -o kfbar-split.full kfbar.c
id=$(readelf -n kfbar-split.full | awk '/Build ID/ {print $3}')
rm -rf .build-id && mkdir -p ".build-id/${id:0:2}"
objcopy --only-keep-debug kfbar-split.full ".build-id/${id:0:2}/${id:2}.debug"
objcopy --strip-debug kfbar-split.full kfbar-split
rm kfbar-split.full
# 1 s of samples at 199 Hz, 1 KiB of stack each (kfbar's stack is a few hundred bytes).
perf record -q -e cpu-clock -F 199 --call-graph dwarf,1024 -o kfbar.data ./kfbar 1 || true
rm -f kfbar.data.old
perf script -i kfbar.data -F comm,tid,ip,sym > kfbar.script.txt
