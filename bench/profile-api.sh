#!/usr/bin/env bash
# /api/profile of this build beside another one, on the same 24 h history (bench/store.sh's,
# generated when missing): both servers run at once on loopback, and their requests
# alternate (this build, the other, ...) so that both see the same machine.
#
# For the last 1 h and the whole 24 h, as the page asks (viewer JSON, pruned for a 1280 px
# page, compressed), 7 requests each: the median server time (Server-Timing: store + prune +
# encode) and time to the last byte as curl measures it; then each server's peak RSS
# (VmHWM), both having answered the same requests.
#
#   OLD=BIN   the other build's kflame binary (required; e.g. one built from an earlier commit)
#   NEW=BIN   this build's (default target/release/kflame, built here)
#   DB=FILE   the history (default bench/out/store.db)
#
# Targets (issue "one stack model"): 24 h >= 2x faster than the build before it (server
# time), 1 h <= 40 ms of server time, peak RSS no more than before.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${OLD:?OLD=path to the other build\'s kflame binary}
db=${DB:-bench/out/store.db}
if [ ! -f "$db" ]; then
  DB="$db" bash bench/store.sh
fi
if [ -z "${NEW:-}" ]; then
  cargo build --release --locked -p kflame-cli
  new=target/release/kflame
else
  new=$NEW
fi
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/token"
token=$(cat "$tmp/token")
auth="Authorization: Bearer $token"

start() { # name binary -> sets base_NAME, pid_NAME
  "$2" serve --db "$db" --listen 127.0.0.1:0 --token-file "$tmp/token" > "$tmp/$1.out" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do grep -q 'open http' "$tmp/$1.out" && break; sleep 0.1; done
  local base
  base=$(sed -n 's|.*open \(http://[^/]*\)/.*|\1|p' "$tmp/$1.out")
  [ -n "$base" ] || { echo "bench: $2 serve did not start" >&2; exit 1; }
  printf -v "base_$1" '%s' "$base"
  printf -v "pid_$1" '%s' "$pid"
}
start new "$new"
start old "$old"
info=$(curl -sf -H "$auth" "$base_new/api/info")
from=$(echo "$info" | sed -n 's/.*"from":\([0-9]*\).*/\1/p')
to=$(echo "$info" | sed -n 's/.*"to":\([0-9]*\).*/\1/p')
echo "== history: $(( (to - from) / 1000000000 / 3600 )) h in $db ($(du -h "$db" | cut -f1))"
echo "== new: $new ($("$new" --version)); old: $old ($("$old" --version))"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

one() { # name query -> "server_ms total_s bytes"
  local base_var="base_$1"
  curl -sf --compressed -o "$tmp/body.$1" -D "$tmp/headers" -w '%{time_total} %{size_download}' \
    -H "$auth" "${!base_var}/api/profile?kind=cpu&prune=0.0078&$2" > "$tmp/run"
  local st
  st=$(tr -d '\r' < "$tmp/headers" | sed -n 's/^server-timing: //Ip')
  echo "$(echo "$st" | awk -F'dur=' '{s=0; for (i=2;i<=NF;i++) s+=$i+0; print s}') $(cat "$tmp/run")"
}

compare() { # label query
  : > "$tmp/new.runs"
  : > "$tmp/old.runs"
  one new "$2" > /dev/null # warm both (page cache, first allocations)
  one old "$2" > /dev/null
  for _ in 1 2 3 4 5 6 7; do
    one new "$2" >> "$tmp/new.runs"
    one old "$2" >> "$tmp/old.runs"
  done
  med() { sort -n | sed -n 4p; } # the median of 7
  local sn so tn to_ kn ko
  sn=$(cut -d' ' -f1 "$tmp/new.runs" | med)
  so=$(cut -d' ' -f1 "$tmp/old.runs" | med)
  tn=$(cut -d' ' -f2 "$tmp/new.runs" | med)
  to_=$(cut -d' ' -f2 "$tmp/old.runs" | med)
  kn=$(( $(cut -d' ' -f3 "$tmp/new.runs" | med | cut -d. -f1) / 1024 ))
  ko=$(( $(cut -d' ' -f3 "$tmp/old.runs" | med | cut -d. -f1) / 1024 ))
  awk -v l="$1" -v sn="$sn" -v so="$so" -v tn="$tn" -v to="$to_" -v kn="$kn" -v ko="$ko" 'BEGIN {
    printf "%-12s server: new %7.1f ms, old %7.1f ms (%.2fx)   to the last byte: new %7.1f ms, old %7.1f ms   sent: %d / %d KB\n",
      l, sn, so, so / sn, tn * 1000, to * 1000, kn, ko
  }'
  # Same answer: the JSON of both, with the server-specific parts equal.
  if cmp -s "$tmp/body.new" "$tmp/body.old"; then
    echo "             answers identical ($(wc -c < "$tmp/body.new") bytes)"
  else
    echo "             answers differ: $(wc -c < "$tmp/body.new") vs $(wc -c < "$tmp/body.old") bytes"
  fi
}
compare "last 1 h" "from=$((to - 3600000000000))&to=$((to + 1))"
compare "24 h" "from=$from&to=$((to + 1))"
hwm() { sed -n 's/^VmHWM:[[:space:]]*//p' "/proc/$1/status"; }
echo "== peak RSS after the same requests: new $(hwm "$pid_new"), old $(hwm "$pid_old")"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
