#!/usr/bin/env python3
"""Turns `perf script --ns -F comm,pid,tid,cpu,time,ip,sym` text of a `perf record -F 19 -a -g`
capture into the sample stream the store benchmark replays: one line per sample,
"CPU TIME_NS STACK" with TIME_NS relative to the first sample and STACK the index of the
sample's distinct (command and symbolized call chain: the stack the store keeps; the
task is stored apart) in order of first appearance. Reads stdin, writes
stdout. See bench/data/README.md.
"""
import sys

def main():
    stacks = {}
    out = []
    head, ips = None, []

    def flush():
        if head is None:
            return
        key = (head[0], tuple(ips))
        idx = stacks.setdefault(key, len(stacks))
        out.append((head[1], head[2], idx))

    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if line[0] not in " \t":
            flush()
            # comm may hold spaces: "comm PID/TID [CPU] SECS.NSECS:"
            lb = line.rindex("[")
            rb = line.index("]", lb)
            cpu = int(line[lb + 1:rb])
            t = line[rb + 1:].strip().rstrip(":")
            s, ns = t.split(".")
            time_ns = int(s) * 1_000_000_000 + int(ns)
            # The command, without "PID/TID" (the store keeps the task apart from the stack).
            task = line[:lb].rstrip().rsplit(None, 1)[0]
            head, ips = (task, cpu, time_ns), []
        else:
            # "ADDR SYMBOL": the symbol (an unknown one by its address).
            f = line.split(None, 1)
            ips.append(f[1] if len(f) > 1 and f[1] != "[unknown]" else f[0])
    flush()
    out.sort(key=lambda r: (r[1], r[0]))
    t0 = out[0][1]
    w = sys.stdout.write
    for cpu, t, idx in ((c, t, i) for (c, t, i) in out):
        w(f"{cpu} {t - t0} {idx}\n")
    print(f"{len(out)} samples, {len(stacks)} distinct stacks", file=sys.stderr)

main()
