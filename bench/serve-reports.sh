#!/usr/bin/env bash
# Kernel reports in kflame serve on a 24 h history (bench/store.sh's, as bench/serve.sh uses)
# with syzkaller's corpus of real reports stored ROUNDS times over (default 2: some 950
# reports of 180 bugs on its host), as the watcher stores reports:
#
# - /api/reports of the whole 24 h (the Reports view: every report signed by the analyzer
#   and grouped), best and median of 5, as curl measures it on loopback;
# - /api/report of 20 reports spread over the day (analysis, "seen before" over the whole
#   history, the CPU and off-CPU profiles of the minute before): median, 90th percentile,
#   worst;
# - the page in headless Chromium (bench/serve-report-page.mjs): a click on a report's marker
#   to its panel drawn (target <= 300 ms), and the Reports view.
#
# No kernel tree or git history is given to the server (none of the kernel's size is on this
# machine): the source lookup and fix search of an analysis are not in these figures.
#
#   DB=FILE   the 24 h history (default bench/out/store.db, generated when missing)
#   ROUNDS=N  times the corpus is stored (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
db=${DB:-bench/out/store.db}
[ -f "$db" ] || DB="$db" bash bench/store.sh
echo "== building kflame and the history example (release)"
cargo build --release --locked -p kflame-cli
cargo build --release --locked -p kflame-serve --example history
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
cp "$db" "$tmp/reports.db"
for s in -wal -shm; do [ -f "$db$s" ] && cp "$db$s" "$tmp/reports.db$s"; done
target/release/examples/history --add-corpus "$tmp/reports.db" crates/kflame/tests/data/kernel-log/syzkaller/report "${ROUNDS:-2}"
. bench/lib/serve.sh
serve_start "$tmp/reports.db" "$tmp"
echo "== history: $(( (to - from) / 1000000000 / 3600 )) h; load: $(cut -d' ' -f1-3 /proc/loadavg)"

# /api/reports of the whole history, 5 times: the first signs every report, the others find
# the signatures kept.
: > "$tmp/runs"
for _ in 1 2 3 4 5; do
  curl -sf --compressed -o "$tmp/groups" -w '%{time_total}\n' -H "$auth" "$base/api/reports?from=$from&to=$((to + 1))" >> "$tmp/runs"
done
python3 - "$tmp/groups" "$tmp/runs" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
runs = [float(x) * 1000 for x in open(sys.argv[2])]
t = sorted(runs[1:])
print(f"/api/reports, whole history: {sum(x['count'] for x in g)} reports in {len(g)} groups; first (every report signed) {runs[0]:.1f} ms, "
      f"then (signatures kept) best {t[0]:.1f} ms, median of 4 {(t[1] + t[2]) / 2:.1f} ms")
PY

# /api/report of 20 reports spread over the day.
curl -sf -H "$auth" "$base/api/events?from=$from&to=$((to + 1))" > "$tmp/events"
python3 - "$tmp/events" > "$tmp/picks" <<'PY'
import json, sys
r = [e for e in json.load(open(sys.argv[1]))["events"] if e["type"] == "report"]
for k in range(20):
    e = r[(2 * k + 1) * len(r) // 40]
    print(e["ns"], e["host"])
PY
: > "$tmp/runs"
while read -r ns host; do
  curl -sf --compressed -o "$tmp/report" -w '%{time_total}\n' -H "$auth" "$base/api/report?time=$ns&host=$host" >> "$tmp/runs"
done < "$tmp/picks"
python3 - "$tmp/runs" "$tmp/report" <<'PY'
import json, sys
t = sorted(float(x) * 1000 for x in open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
print(f"/api/report, 20 reports: median {t[len(t)//2]:.1f} ms, p90 {t[int(len(t)*0.9)]:.1f} ms, worst {t[-1]:.1f} ms "
      f"(the last: {r['similar']['count'] if r['similar'] else 0} similar, before.cpu {'present' if r['before'].get('cpu') else 'absent'}, "
      f"analysis {'present' if r['analysis'] else 'absent'})")
PY

if [ ! -f tests/browser/node_modules/.package-lock.json ]; then
  (cd tests/browser && npm ci --no-audit --no-fund)
fi
echo "== the page in headless Chromium"
node bench/serve-report-page.mjs "$base" "$token" 9
kill -TERM "$pid"
wait "$pid" && echo "== kflame serve stopped cleanly on SIGTERM"
