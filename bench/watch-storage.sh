#!/usr/bin/env bash
# Storage of the default `kflame watch` (everything on: CPU profile, metrics, latency
# histograms of every family, outliers, the always-on off-CPU and lock profiles) on a busy
# machine, per kind, as root: the watcher runs DUR seconds while a mix of workloads loops
# (a CPU burner, O_DSYNC writes, threads contending for the mmap lock, spinners crowding a
# run queue, a pipe ping-pong, page churn); then the database's bytes are read per table
# (SQLite's dbstat: pages in use) and per profile kind (bucket payloads), and scaled to a day
# and to one CPU. Target (issue: latency always on): all of it <= 10 MB per CPU per day.
#
# The file is then aged (`examples/age.rs`: maintenance as of two hours on, as a day of
# watching keeps all but its last hour) and reported again; and what the second half of the
# run added (a copy taken half way, aged too) is reported as the rate past the start.
#
# Usage: bench/watch-storage.sh          (DUR=900: a 10-minute span of histograms folded;
#        WATCH_ARGS="--no-latency": flags added to the watcher's, to see what a part costs)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-900}
NCPU=$(nproc)
[ "$(id -u)" = 0 ] || { echo "run as root (system-wide recording)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 shell (Debian: sqlite3)" >&2; exit 2; }

cargo build --release --locked -p kflame-cli >&2
cargo build --release --locked -p kflame-store --example age >&2
tmp=$(mktemp -d /var/tmp/kflame-storage.XXXXXX) # on the disk: the O_DSYNC writes wait for it
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] && echo "kept: $tmp/h.db" >&2 || rm -rf "$tmp"' EXIT
cp "${CARGO_TARGET_DIR:-target}/release/kflame" "$tmp/kflame"
cp "${CARGO_TARGET_DIR:-target}/release/examples/age" "$tmp/age"
cc -O1 -fno-omit-frame-pointer -pthread -o "$tmp/kfwork" crates/kflame/tests/data/record/workload.c
cc -O2 -o "$tmp/pingpong" bench/pingpong.c

"$tmp/kflame" watch --db "$tmp/h.db" --no-kmsg ${WATCH_ARGS:-} 2> "$tmp/watch.err" &
watch=$!
sleep 2
end=$((SECONDS + DUR))
mid=$((SECONDS + DUR / 2))
"$tmp/kfwork" cpu "$DUR" > /dev/null &
while [ $SECONDS -lt $end ]; do
    # A copy half way (a consistent snapshot of the live file): what the second half added
    # is the rate of a watcher past its start (the tables' first pages, the first sight of
    # every stack and frame), which is what a day of watching is made of.
    if [ $SECONDS -ge $mid ] && [ ! -f "$tmp/mid.db" ]; then
        sqlite3 "$tmp/h.db" ".backup $tmp/mid.db"
        mid_at=$SECONDS
    fi
    "$tmp/kfwork" dsync 3 "$tmp/written" > /dev/null
    "$tmp/kfwork" mappers 4 2 > /dev/null
    "$tmp/kfwork" crowd 3 1 > /dev/null
    "$tmp/pingpong" 3 > /dev/null
    "$tmp/kfwork" churn 3 > /dev/null
done
wait_burner=$(jobs -p | grep -v "^$watch$" || true)
stop_at=$SECONDS
kill -INT "$watch"
wait "$watch" || { echo "kflame watch failed:" >&2; cat "$tmp/watch.err" >&2; exit 1; }
[ -z "$wait_burner" ] || wait $wait_burner 2>/dev/null || true

db=$tmp/h.db
day() { awk -v b="$1" -v d="$2" -v n="$NCPU" 'BEGIN { printf "%8.2f MB per CPU per day", b * 86400 / d / n / 1e6 }'; }
# Pages in use per table (its indexes with it), "TABLE BYTES" lines, largest first.
tables() {
    sqlite3 "$1" "SELECT CASE WHEN name LIKE 'sqlite_autoindex_%' THEN substr(name, 18, length(name) - 19) ELSE name END AS t,
                   sum(pgsize) FROM dbstat GROUP BY t" |
        while IFS='|' read -r t b; do
            case $t in buckets_*) t=buckets ;; metric_spans_*) t=metric_spans ;; latency_spans_*) t=latency_spans ;; event_blocks_*) t=event_blocks ;; esac
            echo "$t $b"
        done | awk '{ s[$1] += $2 } END { for (t in s) print t, s[t] }' | sort -k2 -rn
}
# The report of database $1, $2 seconds of watching.
report() {
    local db=$1 dur=$2
    echo "file: $(stat -c %s "$db") bytes ($(day "$(stat -c %s "$db")" "$dur"))"
    echo "-- pages in use per table (with its indexes):"
    tables "$db" | while read -r t b; do printf "  %-16s %10d bytes  %s\n" "$t" "$b" "$(day "$b" "$dur")"; done
    echo "-- profile buckets per kind (payload):"
    sqlite3 "$db" "SELECT kind, count(*), sum(length(data)) FROM buckets GROUP BY kind" |
        while IFS='|' read -r k n b; do
            name=$(echo "cpu offcpu mem syscalls blocked locks" | cut -d' ' -f$((k + 1)))
            printf "  %-16s %10d bytes in %d buckets  %s\n" "$name" "$b" "$n" "$(day "$b" "$dur")"
        done
    echo "-- latency histograms: $(sqlite3 "$db" "SELECT count(*) || ' rows, ' || sum(length(data)) || ' bytes' FROM latency_spans")"
    echo "-- outliers kept: $(sqlite3 "$db" "SELECT coalesce(sum(count), 0) || ' in ' || count(*) || ' blocks, ' || coalesce(sum(length(data)), 0) || ' bytes' FROM event_blocks WHERE capture < 0")"
}
echo "== kflame watch (defaults${WATCH_ARGS:+ and $WATCH_ARGS}) for $DUR s on $NCPU CPUs, a busy mix (load before the end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "-- as written (the last hour's latency and metric seconds not folded yet):"
report "$db" "$DUR"
# What a day keeps is maintained data: every hour but the last folded (outliers, profile
# buckets compacted per hour, latency and metric rows folded per hour). Aged as the watcher's
# maintenance would age it two hours on, then VACUUMed.
"$tmp/age" "$db" 2 >&2
echo "-- aged (maintained as of 2 h after the last data, VACUUMed):"
report "$db" "$DUR"
if [ -f "$tmp/mid.db" ]; then
    "$tmp/age" "$tmp/mid.db" 2 >&2
    half=$((stop_at - mid_at))
    echo "-- the second half alone ($half s; both copies aged): what watching adds past its start"
    join <(tables "$tmp/mid.db" | sort) <(tables "$db" | sort) | awk '{ print $1, $3 - $2 }' | sort -k2 -rn |
        while read -r t b; do printf "  %-16s %10d bytes  %s\n" "$t" "$b" "$(day "$b" "$half")"; done
    added=$(( $(stat -c %s "$db") - $(stat -c %s "$tmp/mid.db") ))
    echo "  file             $(printf "%10d" "$added") bytes  $(day "$added" "$half")"
fi
echo "-- the watcher's log (warnings):"
grep -v ": info:" "$tmp/watch.err" | sed 's/^/   /' | head -20 || true
