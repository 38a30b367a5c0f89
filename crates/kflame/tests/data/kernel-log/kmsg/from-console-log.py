#!/usr/bin/env python3
"""Turns the kernel lines of a console or dmesg log (`[ secs.usec] text`) into /dev/kmsg
records (`PRI,SEQ,TS_USEC,FLAGS;MESSAGE`), escaping bytes as the kernel does (below space,
above `~`, and the backslash as `\\xNN`). Console logs carry no log levels: every record
gets priority 4 (warning). Lines without a kernel timestamp are not kernel messages and
are left out. Usage: from-console-log.py LOG FIRST_LINE LAST_LINE FIRST_SEQ > out.txt"""
import re
import sys

log, first, last, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
stamp = re.compile(rb"^\[ *(\d+)\.(\d{6})\] ?(.*)$")
out = sys.stdout.buffer
with open(log, "rb") as f:
    for n, line in enumerate(f, 1):
        if n < first or n > last:
            continue
        m = stamp.match(line.rstrip(b"\r\n"))
        if not m:
            continue
        usec = int(m.group(1)) * 1_000_000 + int(m.group(2))
        text = b"".join(
            b"\\x%02x" % c if c < 0x20 or c > 0x7E or c == 0x5C else bytes([c]) for c in m.group(3)
        )
        out.write(b"4,%d,%d,-;%s\n" % (seq, usec, text))
        seq += 1
