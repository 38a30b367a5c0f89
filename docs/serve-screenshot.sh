#!/usr/bin/env bash
# Remakes docs/serve.png from a real watched history (as root): `kflame watch` records this
# machine for SECONDS (default 240) while a workload runs in two cgroups of its own
#   /kflame-demo.slice/burn.service  two CPU burners (sha256sum /dev/zero) from 60 s to 150 s
#   /kflame-demo.slice/dd.service    dd oflag=dsync (a sync write per 4 KiB) from 100 s to 180 s
# with trigger rules that the burners and the writes cross (a CPU capture, an off-CPU capture);
# then `kflame serve` on that history and headless Chromium (docs/serve-screenshot.mjs,
# through tests/browser's playwright-core) take the picture of the whole history with a
# minute of the burners selected. The history is kept as KEEP=FILE when given (the browser and API
# tests of the cgroup filter use such a history).
#
#   bash docs/serve-screenshot.sh            # SECONDS=240 KFLAME=target/release/kflame OUT=docs/serve.png
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${SECONDS_:-240}
out=${OUT:-docs/serve.png}
kflame=${KFLAME:-target/release/kflame}
[ "$(id -u)" = 0 ] || { echo "serve-screenshot: needs root (perf events on every CPU, cgroups)" >&2; exit 1; }
[ -x "$kflame" ] || cargo build --release --locked -p kflame-cli
[ -d tests/browser/node_modules ] || (cd tests/browser && npm ci --no-audit --no-fund)

tmp=$(mktemp -d)
# The cgroup v2 hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid system.
cg=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$cg" ] || { echo "serve-screenshot: no cgroup v2 hierarchy mounted" >&2; exit 1; }
slice="$cg/kflame-demo.slice"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rmdir "$slice/burn.service" "$slice/dd.service" "$slice" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$slice/burn.service" "$slice/dd.service"
db=$tmp/history.db

echo "== kflame watch for $secs s into $db (load: $(cut -d' ' -f1-3 /proc/loadavg))"
"$kflame" watch --db "$db" --no-kmsg --cooldown 60s \
    --trigger 'cpu > 90% for 5s => cpu 20s' \
    --trigger 'cpu.iowait > 5% for 3s => offcpu 20s' > "$tmp/watch.log" 2>&1 &
watch=$!
pids+=("$watch")

# Runs "$@" in cgroup $1 (a directory under the slice) from second $2 to second $3.
in_cgroup() {
    local dir=$1 from=$2 to=$3
    shift 3
    (
        sleep "$from"
        echo $BASHPID > "$slice/$dir/cgroup.procs"
        exec timeout $((to - from)) "$@"
    ) > /dev/null 2>&1 &
    pids+=($!)
}
in_cgroup burn.service 60 150 sha256sum /dev/zero
in_cgroup burn.service 60 150 sha256sum /dev/zero
in_cgroup dd.service 100 180 dd if=/dev/zero of="$tmp/dd.out" bs=4k count=1000000 oflag=dsync
sleep "$secs"
kill -INT "$watch"
wait "$watch" || true
cat "$tmp/watch.log"
"$kflame" query --db "$db" --events --from 2000-01-01T00:00:00Z
if [ -n "${KEEP:-}" ]; then
    cp "$db" "$KEEP"
    echo "== kept the history as $KEEP"
fi

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/token"
"$kflame" serve --db "$db" --listen 127.0.0.1:0 --token-file "$tmp/token" > "$tmp/serve.out" &
serve=$!
pids+=("$serve")
for _ in $(seq 100); do grep -q 'open http' "$tmp/serve.out" && break; sleep 0.1; done
base=$(sed -n 's|.*open \(http://[^/]*\)/.*|\1|p' "$tmp/serve.out")
# The burners' minute selected (seconds after the first metric read).
node docs/serve-screenshot.mjs "$base" "$(cat "$tmp/token")" "$out" 75 135
kill -TERM "$serve"
wait "$serve" || true
echo "== $out: $(wc -c < "$out") bytes"
