#!/usr/bin/env bash
# What TLS costs the fleet store: one clickhouse-server of the rig (Debian's 18.16) serving
# HTTP and HTTPS on loopback with a certificate of a CA the rig makes, and the same work
# through each, alternating round by round (examples/tls_bench.rs): a statement on its own
# connection (over HTTPS with its handshake), 10 minutes of a host's history written
# (19 Hz on 2 CPUs, the shared capture's real stacks), and its profile read back.
#
#   ROUNDS=N  rounds (default 5); medians are printed, with https/http ratios.
#
# Target: reported (the handshake per statement, and whether it shows in a writer's or a
# reader's time).
set -euo pipefail
cd "$(dirname "$0")/.."
folded=crates/kflame/tests/data/render/perf-sys-cpuclock.folded
if ! [ -x /usr/bin/clickhouse-server ] && ! [ -x /usr/sbin/clickhouse-server ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server clickhouse-client
fi
command -v openssl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl
echo "== building the TLS benchmark (release)"
cargo build --release --locked -p kflame-clickhouse --example tls_bench
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"
target/release/examples/tls_bench "$folded" "${ROUNDS:-5}"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
