# Sourced by the serve benchmarks: starts `kflame serve` (release) on a free loopback port
# with a random token, and reads the history's time bounds.
#
#   serve_start DB TMPDIR   sets pid, base (http://127.0.0.1:PORT), token, auth (the header),
#                           from and to (the history's bounds, ns)
serve_start() {
  local db=$1 dir=$2 info
  head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/token"
  token=$(cat "$dir/token")
  target/release/kflame serve --db "$db" --listen 127.0.0.1:0 --token-file "$dir/token" > "$dir/out" &
  pid=$!
  for _ in $(seq 100); do grep -q 'open http' "$dir/out" && break; sleep 0.1; done
  base=$(sed -n 's|.*open \(http://[^/]*\)/.*|\1|p' "$dir/out")
  [ -n "$base" ] || { echo "bench: kflame serve did not start" >&2; exit 1; }
  auth="Authorization: Bearer $token"
  info=$(curl -sf -H "$auth" "$base/api/info")
  from=$(echo "$info" | sed -n 's/.*"from":\([0-9]*\).*/\1/p')
  to=$(echo "$info" | sed -n 's/.*"to":\([0-9]*\).*/\1/p')
}
