#!/bin/sh
# Two reads of the /proc files the watcher uses, 1 s apart, into DIR/a and DIR/b, with
# mpstat and iostat measuring the same second for comparison. Run under a known load.
set -eu
dir=${1:?usage: capture.sh DIR}
snap() {
    mkdir -p "$1/proc/pressure"
    for f in stat meminfo diskstats loadavg uptime; do cat /proc/$f > "$1/proc/$f"; done
    for f in cpu memory io; do cat /proc/pressure/$f > "$1/proc/pressure/$f"; done
}
LC_ALL=C mpstat -P ALL 1 1 > "$dir.mpstat.txt" &
LC_ALL=C iostat -dxy 1 1 > "$dir.iostat.txt" &
snap "$dir/a"
sleep 1
snap "$dir/b"
wait
