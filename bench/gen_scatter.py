#!/usr/bin/env python3
"""Writes N JSON event lines by tiling a real recording: the events of the input, in order,
repeated with their times shifted by the recording's span each round (every other field as
recorded). Used by bench/scatter.sh to make 1M events out of the syscall fixture.

    gen_scatter.py INPUT.json[.gz] N > OUT.json
"""
import gzip
import re
import sys

TS = re.compile(r'^\{"ts":(\d+)\.(\d{9}),')


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        lines = [l for l in f if l.strip()]
    parsed = []
    for l in lines:
        m = TS.match(l)
        if not m:
            sys.exit(f'{path}: a line without a leading "ts" in seconds with 9 decimals')
        parsed.append((int(m.group(1)) * 10**9 + int(m.group(2)), l[m.end():]))
    t0 = min(t for t, _ in parsed)
    span = max(t for t, _ in parsed) - t0 + 1000
    out = sys.stdout
    written, rnd = 0, 0
    while written < n:
        shift = rnd * span
        for t, rest in parsed:
            if written == n:
                break
            ts = t + shift
            out.write('{"ts":%d.%09d,%s' % (ts // 10**9, ts % 10**9, rest))
            written += 1
        rnd += 1


if __name__ == '__main__':
    main()
