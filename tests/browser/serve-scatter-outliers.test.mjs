// The scatter tab of `kflame serve` on the always-on system-call outliers of a range of the
// history (not a capture), in headless Chromium. The history is the kflame-serve crate's
// `history` example (tests/common/history.rs): the watcher's outlier of second s (s % 10 == 9)
// is a 50 ms `syscall:write` of `testapp` pid 4242 on CPU 1 at T0 + s + 500 ms. The expected
// count is computed from that description and checked against the database itself (Python's
// sqlite3, independently of the server); none is taken from the drawing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'scatter-outliers-token-7';
const T0_MS = 1764000000000;
const SECONDS = 900;
let browser, served, db;

before(async () => {
  const dir = scratch();
  execFileSync('cargo', ['build', '-q', '-p', 'kflame-serve', '--example', 'history'], { cwd: ROOT, stdio: 'inherit' });
  db = join(dir, 'history.db');
  const target = process.env.CARGO_TARGET_DIR || join(ROOT, 'target');
  execFileSync(join(target, 'debug/examples/history'), [db, String(SECONDS)]);
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', TOKEN + '\n')]);
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

/** The outliers of the history's description in [fromMs, toMs): their starts, ms. */
function keptIn(fromMs, toMs) {
  const out = [];
  for (let s = 9; s < SECONDS; s += 10) {
    const t = T0_MS + s * 1000 + 500;
    if (t >= fromMs && t < toMs) out.push(t);
  }
  return out;
}

const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

test('the outliers of a range open in the scatter: one point per stored outlier', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(served.base + '?token=' + TOKEN);
  await page.click('a.ks-tab-scatter');
  // The entry comes first, with the last hour by default; the captures follow.
  await page.waitForSelector('.sc-history-outliers form.sc-range');
  assert.equal(await page.inputValue('.sc-from'), '-1h');
  assert.equal(await page.inputValue('.sc-to'), 'now');
  // (The history's one capture, of CPU samples, has no per-event records.)
  await page.waitForSelector('.sc-captures tbody tr');
  const order = await page.evaluate(() => {
    const a = document.querySelector('.sc-history-outliers'), b = document.querySelector('.sc-captures');
    return Boolean(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  });
  assert.ok(order, 'the outliers entry is above the captures list');
  // A range of five minutes, typed as RFC 3339 times.
  const fromMs = T0_MS + 100 * 1000, toMs = T0_MS + 400 * 1000;
  await page.fill('.sc-from', iso(fromMs));
  await page.fill('.sc-to', iso(toMs));
  await page.click('.sc-open-outliers');
  await page.waitForFunction(() => globalThis.kflameScatter && kflameScatter.n > 0, null, { timeout: 15000 });
  const url = new URL(page.url());
  assert.equal(url.pathname, '/scatter');
  assert.deepEqual([url.searchParams.get('kind'), url.searchParams.get('from'), url.searchParams.get('to')],
    ['syscall', iso(fromMs), iso(toMs)]);
  const want = keptIn(fromMs, toMs);
  // The history appends its outliers one at a time: a block of the store each, whose first
  // and last times are the outlier's.
  const [[stored]] = sql(`SELECT SUM(count) FROM event_blocks WHERE capture = -1 AND first_ns >= ${fromMs}000000 AND last_ns < ${toMs}000000`);
  assert.equal(stored, want.length);
  assert.equal(await page.evaluate(() => kflameScatter.n), stored);
  // Each point is a 50 ms call, as the history's description has them.
  assert.equal(await page.evaluate(() => kflameScatter.d.reduce((a, b) => a + b, 0)), want.length * 50e6);
  assert.equal(await page.evaluate(() => Math.max(...kflameScatter.d)), 50e6);
  // The plot's 0 s is the first outlier of the range, said as a UTC time.
  const first = new Date(want[0]).toISOString();
  assert.match(await page.textContent('.sc-time-origin'),
    new RegExp(`${first.slice(0, 10)} ${first.slice(11, 19)}\\.500000000 UTC`));
  // The range stays in the entry, and a reload shows the same points.
  assert.equal(await page.inputValue('.sc-from'), iso(fromMs));
  await screenshot(page, 'serve-scatter-outliers');
  await page.reload();
  await page.waitForFunction(() => globalThis.kflameScatter && kflameScatter.n > 0, null, { timeout: 15000 });
  assert.equal(await page.evaluate(() => kflameScatter.n), stored);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a range without outliers says so; the API needs the token', async () => {
  const page = await browser.newPage();
  await page.goto(served.base + '?token=' + TOKEN);
  const fromMs = T0_MS + 100 * 1000, toMs = fromMs + 5000; // seconds 100 to 104: none kept
  assert.equal(keptIn(fromMs, toMs).length, 0);
  await page.goto(served.base + `scatter?kind=syscall&from=${iso(fromMs)}&to=${iso(toMs)}`);
  await page.waitForFunction(() => /No outliers of system calls/.test(document.querySelector('.sc-scatter-view')?.textContent || ''));
  await page.close();
  const r = await fetch(served.base + `api/scatter?kind=syscall&from=${iso(fromMs)}&to=${iso(toMs)}`);
  assert.equal(r.status, 401);
});
