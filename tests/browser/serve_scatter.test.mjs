// The latency scatter tab of `kflame serve`, in headless Chromium, on a real stored capture:
// `kflame watch` fired a syscalls capture on a live machine and stored its per-event
// records (crates/kflame-serve/tests/data/README.md). Expected figures are read here from
// the database with Python's sqlite3, independently of the server.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'scatter-tab-token-7';
const DB_GZ = join(ROOT, 'crates/kflame-serve/tests/data/watch-syscalls-capture.db.gz');
let browser, served, base, db;

before(async () => {
  const dir = scratch();
  db = join(dir, 'history.db');
  writeFileSync(db, gunzipSync(readFileSync(DB_GZ)));
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', TOKEN + '\n')]);
  base = served.base;
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (served) await stopServe(served);
});

/** Rows of an SQL query on the database (read-only), as JSON. */
function sql(query) {
  const py = 'import json,sqlite3,sys\nc=sqlite3.connect("file:"+sys.argv[1]+"?mode=ro",uri=True)\n' +
    'print(json.dumps(c.execute(sys.argv[2]).fetchall()))';
  return JSON.parse(execFileSync('python3', ['-c', py, db, query], { encoding: 'utf8' }));
}

test('the scatter tab lists the stored capture and opens its events', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(base + '?token=' + TOKEN);
  // The tab link of the main page.
  await page.click('a.ks-tab-scatter');
  await page.waitForSelector('a.sc-open');
  const [[id, events]] = sql('SELECT capture, COUNT(*) FROM events GROUP BY capture');
  assert.equal(await page.textContent('.sc-events'), String(events));
  await page.click('a.sc-open');
  await page.waitForFunction(() => globalThis.kflameScatter && kflameScatter.n > 0);
  assert.match(page.url(), new RegExp('/scatter\\?capture=' + id + '$'));
  assert.equal(await page.evaluate(() => kflameScatter.n), events);
  // Every stored duration, summed, is what the page holds.
  const [[sum]] = sql('SELECT SUM(duration_ns) FROM events WHERE duration_ns IS NOT NULL');
  assert.equal(await page.evaluate(() => kflameScatter.d.reduce((a, b) => a + b, 0)), sum);
  // Color by process: one legend entry per comm (the largest 19, the rest as one).
  const comms = sql('SELECT comm, COUNT(*) FROM events GROUP BY comm ORDER BY 2 DESC');
  const first = page.locator('.sc-legend-item').first();
  assert.equal(await first.locator('.sc-legend-label').textContent(), comms[0][0]);
  assert.equal(Number(await first.locator('.sc-legend-count').textContent()), comms[0][1]);
  // The slowest stored event is the first outlier; its flame graph weighs its duration.
  const [[dur]] = sql('SELECT duration_ns FROM events ORDER BY duration_ns DESC LIMIT 1');
  await page.click('.sc-outlier >> nth=0');
  const i = await page.evaluate(() => kflameScatter.point);
  assert.equal(await page.evaluate((k) => kflameScatter.d[k], i), dur);
  assert.equal(await page.evaluate(() => kflameScatter.pointViewer.tree.total[0]), dur);
  // Times read as UTC clock times: the event's start, and the plot's 0 s (the first event)
  // with its date. (Text: 19-digit times do not fit a JSON number.)
  const [[start]] = sql('SELECT CAST(time_ns AS TEXT) FROM events ORDER BY duration_ns DESC LIMIT 1');
  const [[firstNs]] = sql('SELECT CAST(MIN(time_ns) AS TEXT) FROM events');
  const utc = (ns) => {
    const t = BigInt(ns), iso = new Date(Number(t / 1000000000n) * 1000).toISOString();
    return { date: iso.slice(0, 10), clock: iso.slice(11, 19) + '.' + String(t % 1000000000n).padStart(9, '0') };
  };
  const s0 = utc(start), f0 = utc(firstNs);
  assert.match(await page.textContent('dd.sc-start'), new RegExp(`^${s0.clock} UTC, ${s0.date} \\(`));
  assert.match(await page.textContent('.sc-time-origin'), new RegExp(`${f0.date} ${f0.clock} UTC`));
  await screenshot(page, 'serve-scatter-tab');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the scatter API refuses a bad capture id and answers nothing without the token', async () => {
  const page = await browser.newPage();
  await page.goto(base + '?token=' + TOKEN);
  const bad = await page.evaluate(async () => { const r = await fetch('/api/scatter?capture=x'); return [r.status, await r.json()]; });
  assert.equal(bad[0], 400);
  assert.match(bad[1].error, /capture: expected a capture id/);
  await page.close();
  const r = await fetch(base + 'api/scatter/captures');
  assert.equal(r.status, 401);
});
