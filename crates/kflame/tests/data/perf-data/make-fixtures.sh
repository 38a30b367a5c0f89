#!/usr/bin/env bash
# Regenerates the perf.data fixtures of this folder (see README.md). Needs root, gcc and
# perf (6.1 was used); the shared captures are read from ../shared relative to the
# workspace root, and the kallsyms of their boot from the benchmark corpus.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../../../../.. && pwd)
SHARED="$ROOT/../shared"

# 1. Workloads recorded on this machine, run from /opt/kflame-demo/bin like the shared ones.
mkdir -p /opt/kflame-demo/bin symfs/opt/kflame-demo/bin
gcc -O2 -fno-omit-frame-pointer -o /opt/kflame-demo/bin/workload-fp workload.c
gcc -O2 -fomit-frame-pointer -o /opt/kflame-demo/bin/workload-nofp workload.c
cp /opt/kflame-demo/bin/workload-fp /opt/kflame-demo/bin/workload-nofp symfs/opt/kflame-demo/bin/
perf record -N -q -F 499 -e cpu-clock -g -o workload-fp.data /opt/kflame-demo/bin/workload-fp 50000
perf record -N -q -F 199 -e cpu-clock --call-graph dwarf,4096 -o workload-dwarf.data \
  /opt/kflame-demo/bin/workload-nofp 30000
# A -g build with inlining (no absolute build path in its DWARF).
DBG="-O2 -g -fdebug-prefix-map=$(pwd)=."
gcc $DBG -fno-omit-frame-pointer -o /opt/kflame-demo/bin/inline-fp inline.c
gcc $DBG -fomit-frame-pointer -o /opt/kflame-demo/bin/inline-nofp inline.c
cp /opt/kflame-demo/bin/inline-fp /opt/kflame-demo/bin/inline-nofp symfs/opt/kflame-demo/bin/
g++ $DBG -fomit-frame-pointer -o /opt/kflame-demo/bin/inline-cxx inline-cxx.cc
cp /opt/kflame-demo/bin/inline-cxx symfs/opt/kflame-demo/bin/
# Until at least one sample lands in `work` itself (outside the inlined loop).
until perf record -N -q -F 499 -e cpu-clock --call-graph dwarf,1024 -o inline-cxx.data \
    /opt/kflame-demo/bin/inline-cxx 60000 >/dev/null &&
  perf script -i inline-cxx.data --symfs symfs 2>/dev/null | grep -q 'namespace)::work'; do :; done
perf record -N -q -F 199 -e cpu-clock -g -o inline-fp.data /opt/kflame-demo/bin/inline-fp 1500000 >/dev/null
perf record -N -q -F 199 -e cpu-clock --call-graph dwarf,2048 -o inline-dwarf.data \
  /opt/kflame-demo/bin/inline-nofp 1500000 >/dev/null
# The same workload with its DWARF compressed by dwz into a supplementary file (Debian: dwz),
# which binutils' addr2line (2.40) cannot follow: perf shows no inline frames for it.
gcc $DBG -fomit-frame-pointer -o /opt/kflame-demo/bin/inline-dwz inline.c
gcc $DBG -fno-omit-frame-pointer -o /tmp/inline-dwz2 inline.c
mkdir -p /opt/kflame-demo/lib symfs/opt/kflame-demo/lib
dwz -m /opt/kflame-demo/lib/inline.dwz -M /opt/kflame-demo/lib/inline.dwz /opt/kflame-demo/bin/inline-dwz /tmp/inline-dwz2
rm -f /tmp/inline-dwz2
cp /opt/kflame-demo/bin/inline-dwz symfs/opt/kflame-demo/bin/
cp /opt/kflame-demo/lib/inline.dwz symfs/opt/kflame-demo/lib/
perf record -N -q -F 199 -e cpu-clock --call-graph dwarf,2048 -o inline-dwz.data \
  /opt/kflame-demo/bin/inline-dwz 1500000 >/dev/null
# JIT code named from the map node writes to /tmp, and a program spending its time in the vDSO.
cp jit.js /opt/kflame-demo/jit.js
perf record -N -q -F 199 -e cpu-clock -g -o jit-node.data node --perf-basic-prof /opt/kflame-demo/jit.js 3000 >/dev/null
rm -f isolate-*.log
rm -rf perf-maps && mkdir perf-maps
JIT_PID=$(perf script -i jit-node.data -F pid 2>/dev/null | awk 'NR == 1 {print $1}')
cp "/tmp/perf-$JIT_PID.map" perf-maps/
gcc -O2 -fno-omit-frame-pointer -o /opt/kflame-demo/bin/vdso-fp vdso.c
cp /opt/kflame-demo/bin/vdso-fp symfs/opt/kflame-demo/bin/
perf record -N -q -F 499 -e cpu-clock -g -o vdso-fp.data /opt/kflame-demo/bin/vdso-fp 10000000 >/dev/null
gcc -O2 -fomit-frame-pointer -o /opt/kflame-demo/bin/vdso-nofp vdso.c
cp /opt/kflame-demo/bin/vdso-nofp symfs/opt/kflame-demo/bin/
perf record -N -q -F 199 -e cpu-clock --call-graph dwarf,1024 -o vdso-dwarf.data \
  /opt/kflame-demo/bin/vdso-nofp 10000000 >/dev/null
VDSO_ID=$(perf buildid-list -i vdso-fp.data | awk '$2 == "[vdso]" {print $1}')
# perf finds the vDSO in its build-id cache, SYMFS/.debug under --symfs: there while the
# script texts are made (step 4), not committed (kernel code).
rm -rf symfs/.debug && mkdir -p "symfs/.debug/.build-id/${VDSO_ID:0:2}/${VDSO_ID:2}"
cp "$HOME/.debug/.build-id/${VDSO_ID:0:2}/${VDSO_ID:2}/vdso" "symfs/.debug/.build-id/${VDSO_ID:0:2}/${VDSO_ID:2}/"

# 2. Small shared captures (recorded on another boot of kernel build-id 4a5a9b0a…).
for f in perf-burn-fp-fp perf-burn-nofp-fp perf-kmalloc perf-sched perf-sys-cpuclock; do
  cp "$SHARED/captures/perf-data/$f.data" .
done

# 3. Trimmed kallsyms: only the symbols these files hit (and the ones ending them).
kaddrs() { for f in "$@"; do perf script -i "$f" --symfs symfs 2>/dev/null; done |
  awk 'length($1) == 16 && $1 ~ /^ffff/ {print $1}' | sort -u; }
text_of() { awk '$3 == "_text" {print $1; exit}' "$1"; }
rec_text() { perf script -i "$1" --show-mmap-events 2>/dev/null |
  awk '/\[kernel.kallsyms\]_text/ {match($0, /\(0x[0-9a-f]+\) @ 0x[0-9a-f]+/); s=substr($0, RSTART, RLENGTH); sub(/.*@ 0x/, "", s); print s; exit}'; }
BENCH_KALLSYMS=$(mktemp)
zstd -dcq "$SHARED/bench/kallsyms-perf-large.txt.zst" > "$BENCH_KALLSYMS"
d=$(printf '%x' $(( 0x$(text_of "$BENCH_KALLSYMS") - 0x$(rec_text perf-sys-cpuclock.data) )))
kaddrs perf-burn-fp-fp.data perf-burn-nofp-fp.data perf-kmalloc.data perf-sched.data perf-sys-cpuclock.data |
  python3 trim_kallsyms.py "$BENCH_KALLSYMS" "$d" > kallsyms-4a5a9b0a.txt
rm -f "$BENCH_KALLSYMS"
kaddrs workload-fp.data workload-dwarf.data inline-fp.data inline-dwarf.data inline-cxx.data inline-dwz.data jit-node.data vdso-fp.data vdso-dwarf.data | python3 trim_kallsyms.py /proc/kallsyms 0 > kallsyms-local.txt

# 4. The perf script text of every file, made with the same symbols.
for f in perf-burn-fp-fp perf-burn-nofp-fp perf-kmalloc perf-sched perf-sys-cpuclock; do
  perf script -i "$f.data" --kallsyms kallsyms-4a5a9b0a.txt --symfs symfs > "$f.script.txt" 2>/dev/null
done
for f in workload-fp workload-dwarf inline-fp inline-dwarf inline-cxx inline-dwz jit-node vdso-fp vdso-dwarf; do
  perf script -i "$f.data" --kallsyms kallsyms-local.txt --symfs symfs > "$f.script.txt" 2>/dev/null
done
perf script --no-inline -i inline-dwarf.data --kallsyms kallsyms-local.txt --symfs symfs \
  > inline-dwarf.noinline.script.txt 2>/dev/null
rm -rf symfs/.debug

# 5. Paired tracepoint captures (--mode syscalls|offcpu|probes), with their --ns texts.
gcc -O2 -fno-omit-frame-pointer -o /opt/kflame-demo/bin/sleeper sleeper.c
cp /opt/kflame-demo/bin/sleeper symfs/opt/kflame-demo/bin/
perf record -N -q -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -g -o pairs-syscalls.data -- \
  dd if=/dev/zero of=/dev/null bs=1k count=50
X=""
for c in read write openat; do X="$X -e syscalls:sys_enter_$c -e syscalls:sys_exit_$c"; done
perf record -N -q $X -g -o pairs-syscalls-x.data -- dd if=/dev/zero of=/dev/null bs=1k count=20
perf record -N -q -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -o pairs-syscalls-nocc.data -- \
  dd if=/dev/zero of=/dev/null bs=1k count=20
perf record -N -q -e sched:sched_switch -a -g -o pairs-offcpu.data -- /opt/kflame-demo/bin/sleeper 20
perf probe -q -x /opt/kflame-demo/bin/sleeper -a nap -a 'nap%return'
perf record -N -q -e probe_sleeper:nap -e probe_sleeper:nap__return -g -o pairs-probes.data -- \
  /opt/kflame-demo/bin/sleeper 20
perf probe -q -d 'probe_sleeper:*'
P="pairs-syscalls pairs-syscalls-x pairs-syscalls-nocc pairs-offcpu pairs-probes"
for f in $P; do perf script -i "$f.data" --symfs symfs 2>/dev/null; done |
  awk 'length($1) == 16 && $1 ~ /^ffff/ {print $1}' | sort -u | python3 trim_kallsyms.py /proc/kallsyms 0 > kallsyms-pairs.txt
for f in $P; do
  chmod 644 "$f.data"
  perf script --ns -i "$f.data" --kallsyms kallsyms-pairs.txt --symfs symfs > "$f.ns.script.txt" 2>/dev/null
done
