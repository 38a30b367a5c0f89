#!/usr/bin/env bash
# The fleet store on ClickHouse: a two-shard rig of Debian's clickhouse-server on loopback,
# 100 simulated hosts writing 1 h of 19 Hz samples on 2 CPUs each (13.7 M rows; stacks of
# the shared large capture). Ingest is timed end to end (writers and servers on the same
# cores) and for the rig alone (the writers spool while the servers are down, then the
# servers take the spools); then the fleet-wide flame graph of the hour, the per-host
# breakdown of a frame, and the space per host-day from system.parts.
#
#   HOSTS=N    simulated hosts (default 100)
#   WRITERS=N  writer threads (default 2)
#   MODE=local each writer inserts into its server's local tables (insert=local) instead of
#              through the Distributed tables (default distributed)
#
# Targets: ingest >= 1 M rows/s; the fleet flame graph of 1 h <= 1 s; the per-host
# breakdown <= 500 ms; storage per host-day reported.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${KFLAME_BENCH_CACHE:-bench/.cache}
mkdir -p "$cache"
src=../shared/bench/large-pid.folded.zst
[ -f "$src" ] || { echo "bench: $src is missing (the shared benchmark corpus)" >&2; exit 1; }
folded="$cache/large-pid.folded"
[ -f "$folded" ] || zstd -q -d -o "$folded" "$src"
if ! [ -x /usr/bin/clickhouse-server ] && ! [ -x /usr/sbin/clickhouse-server ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server clickhouse-client
fi
echo "== building the fleet benchmark (release)"
cargo build --release --locked -p kflame-clickhouse --example fleet_bench
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
target/release/examples/fleet_bench "$folded" "${HOSTS:-100}" "${WRITERS:-2}" "${MODE:-distributed}"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
