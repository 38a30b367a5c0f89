#!/usr/bin/env python3
"""Records the /proc files the watcher's metric sampler reads, once a second, as it does.

Usage: record_proc.py SECONDS OUT   (OUT: one record per read, "@ TIME_NS" then each file
as "# PATH" followed by its text). See bench/data/README.md.
"""
import sys, time

FILES = ["/proc/uptime", "/proc/stat", "/proc/meminfo", "/proc/diskstats", "/proc/loadavg",
         "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io"]

def main():
    secs, out = int(sys.argv[1]), sys.argv[2]
    with open(out, "w") as f:
        start = time.monotonic()
        for k in range(secs + 1):
            # A 1 s timer on the monotonic clock, as the watcher's interval.
            time.sleep(max(0.0, start + k - time.monotonic()))
            f.write(f"@ {time.time_ns()}\n")
            for p in FILES:
                try:
                    with open(p) as g:
                        f.write(f"# {p}\n{g.read()}")
                except OSError:
                    pass
    return 0

sys.exit(main())
