#!/bin/sh
# Builds vdso-standin.so: a stand-in for the [vdso] recorded in vdso-fp.data and
# vdso-dwarf.data (the kernel's vDSO is kernel code and is not committed). It has the recorded
# build-id (`perf buildid-list -i vdso-fp.data`) and the vDSO's exported functions, each a
# GLOBAL `__vdso_` name with its WEAK alias, at the offsets and sizes of the x86_64 vDSO of
# Linux 6.18.44 (`readelf -sW` of the running image; the recording's perf script text places
# __vdso_clock_gettime at 0xaf0 too). It holds no code (int3 fill) and no unwind tables: it
# names frame-pointer chains, not DWARF-unwound ones. Needs gcc and binutils.
set -eu
cd "$(dirname "$0")"
gcc -nostdlib -shared -fPIC -Wl,-T,vdso-standin.lds -Wl,--hash-style=both \
    -Wl,--build-id=0xa599807156a2a62fe956a82e388aeeabc874119c -Wl,-soname,linux-vdso.so.1 \
    -o vdso-standin.so vdso-standin.S
