#!/usr/bin/env python3
"""Keeps the lines of a kallsyms file that perf needs to name the given kernel addresses.

usage: trim_kallsyms.py FULL_KALLSYMS DELTA_HEX < addresses > trimmed
For every address (plus DELTA, the relocation between the recording boot and the file),
keeps every line at the start address of the containing symbol and at the next start
address (which ends it), using perf's filter (types T W D B, no module symbols), plus
`_text` for the relocation. Lookups in the trimmed file name the same symbols.
"""
import bisect, sys

full, delta = sys.argv[1], int(sys.argv[2], 16)
lines, starts = [], []
for line in open(full):
    parts = line.split()
    if len(parts) < 3:
        continue
    lines.append(line)
    if len(parts) == 3 and parts[1].upper() in "TWDB":
        starts.append(int(parts[0], 16))
starts = sorted(set(starts))
keep = set()
for tok in sys.stdin.read().split():
    addr = (int(tok, 16) + delta) & (2**64 - 1)
    i = bisect.bisect_right(starts, addr) - 1
    if i >= 0:
        keep.add(starts[i])
    if i + 1 < len(starts):
        keep.add(starts[i + 1])
for line in lines:
    parts = line.split()
    if parts[2] == "_text" or (int(parts[0], 16) in keep and len(parts) == 3):
        sys.stdout.write(line)
