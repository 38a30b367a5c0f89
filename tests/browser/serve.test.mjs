// `kflame serve` on a history database written by the test (the kflame-serve crate's `history`
// example: real stacks through the store's API, 15 minutes, a trigger with its capture and a
// kernel report with a hostile title). The server listens on 127.0.0.1 (a free port) and is
// stopped with SIGTERM after the tests; it must exit cleanly.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { get } from 'node:http';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'browser-test-token-42';
let browser, served, base;

before(async () => {
  const dir = scratch();
  execFileSync('cargo', ['build', '-q', '-p', 'kflame-serve', '--example', 'history'], { cwd: ROOT, stdio: 'inherit' });
  const db = join(dir, 'history.db');
  execFileSync(join(ROOT, 'target/debug/examples/history'), [db, '900']);
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', '  ' + TOKEN + '\n')]);
  base = served.base;
  assert.equal(served.token, TOKEN);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (served) await stopServe(served, 'kflame serve did not stop cleanly on SIGTERM');
});

/** A GET without the browser (no cookie). */
function raw(path, headers = {}) {
  return new Promise((ok, fail) => {
    get(base + path.replace(/^\//, ''), { headers }, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => ok({ status: r.statusCode, body }));
    }).on('error', fail);
  });
}

/** Opens the page with the token; every error, dialog and 4xx/5xx answer is collected. */
async function open(query = '') {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('dialog', (d) => { problems.push('dialog: ' + d.message()); d.dismiss(); });
  await page.goto(base + '?token=' + TOKEN + query);
  await ready(page);
  return { page, problems };
}

/** Waits for the first flame graph and the charts with their event markers. */
async function ready(page) {
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 && kflameServe.S.chartsLoaded > 0 &&
    globalThis.kflameViewer, null, { timeout: 15000 });
}

/** Waits until the panel has been drawn again after `before` loads. */
async function reloaded(page, before) {
  await page.waitForFunction((n) => kflameServe.S.loaded > n, before, { timeout: 10000 });
}

const loads = (page) => page.evaluate(() => kflameServe.S.loaded);

/** Waits until the flame graph shown is the selected range's (a debounced load of a range
 * passed over while dragging may land first). */
async function rangeShown(page, before) {
  await reloaded(page, before);
  await page.waitForFunction(() => {
    const { S } = kflameServe, i = S.last.info;
    return Math.abs(i.from / 1e6 - S.range.from) < 1 && Math.abs(i.to / 1e6 - S.range.to) < 1;
  }, null, { timeout: 10000 });
}

/** The viewer's total, and the number of samples in the selected range as the heat map
 * endpoint counts them (a separate query: per-sample points, not the merged profile). */
function totals(page) {
  return page.evaluate(async () => {
    const { S, ns } = kflameServe;
    const h = await (await fetch(`/api/heatmap?kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}`)).json();
    return { viewer: kflameViewer.tree.total[0], heat: h.total, range: { ...S.range }, info: S.last.info };
  });
}

/** Page x of a time (ms) on the charts. */
function xOf(page, ms) {
  return page.evaluate((t) => {
    const b = kflameServe.D.brush, r = b.overlay.getBoundingClientRect();
    return r.left + b.toX(t);
  }, ms);
}

async function drag(page, x1, x2, y) {
  await page.mouse.move(x1, y);
  await page.mouse.down();
  await page.mouse.move((x1 + x2) / 2, y, { steps: 4 });
  await page.mouse.move(x2, y, { steps: 4 });
  await page.mouse.up();
}

test('without the token every path is 401; with it the page drops the token from the address', async () => {
  for (const path of ['/', '/api/info', '/viewer/viewer.js', '/assets/app.js']) {
    const r = await raw(path);
    assert.equal(r.status, 401, path);
  }
  assert.equal((await raw('/api/info', { Host: 'evil.example:80', Authorization: 'Bearer ' + TOKEN })).status, 403);
  const { page, problems } = await open();
  assert.ok(!page.url().includes('token'), page.url());
  assert.equal(await page.evaluate(() => document.cookie), '', 'the cookie is HttpOnly');
  const charts = await page.locator('.ks-chart').evaluateAll((cs) => cs.map((c) => c.dataset.chart));
  assert.deepEqual(charts, ['cpu', 'mem', 'io', 'io-util', 'psi']);
  const t = await totals(page);
  assert.ok(t.heat > 1000, 'samples in the default range: ' + t.heat);
  assert.equal(t.viewer, t.heat);
  await screenshot(page, 'serve-page');
  // One CPU instead of all: the CPU chart's series are that CPU's.
  const legend = () => page.locator('.ks-chart[data-chart="cpu"] .ks-legend').textContent();
  assert.equal(await legend(), 'usrsysiowaitirqsoftirqsteal');
  await page.selectOption('.ks-cpu', 'cpu1');
  await page.waitForFunction(() => document.querySelector('.ks-chart[data-chart="cpu"] .ks-legend').textContent.includes('usr cpu1'));
  assert.equal(new URL(page.url()).searchParams.get('cpu'), 'cpu1');
  assert.deepEqual(problems, []);
  await page.close();
});

test('drag a range, resize it by an edge, move it: the flame graph is always the sum of the range', async () => {
  const { page, problems } = await open();
  const box = await page.locator('.ks-chart[data-chart="cpu"]').boundingBox();
  const y = box.y + box.height / 2;
  const view = await page.evaluate(() => kflameServe.S.view);
  const span = view.to - view.from;
  // Select 20 %..45 % of the view.
  let n = await loads(page);
  await drag(page, await xOf(page, view.from + span * 0.2), await xOf(page, view.from + span * 0.45), y);
  await rangeShown(page, n);
  let t = await totals(page);
  assert.ok(Math.abs(t.range.from - (view.from + span * 0.2)) < span / 200, JSON.stringify(t.range));
  assert.ok(Math.abs(t.range.to - (view.from + span * 0.45)) < span / 200, JSON.stringify(t.range));
  assert.equal(t.viewer, t.heat);
  assert.ok(t.heat > 0);
  // The right edge, dragged 10 % further.
  const before = t.range;
  n = await loads(page);
  await drag(page, await xOf(page, before.to), await xOf(page, before.to + span * 0.1), y);
  await rangeShown(page, n);
  t = await totals(page);
  assert.equal(t.range.from, before.from, 'the left edge stays');
  assert.ok(Math.abs(t.range.to - (before.to + span * 0.1)) < span / 200, JSON.stringify(t.range));
  assert.equal(t.viewer, t.heat);
  // The middle, dragged back by 15 %: same length, moved.
  const len = t.range.to - t.range.from, mid = (t.range.from + t.range.to) / 2, was = t.range;
  n = await loads(page);
  await drag(page, await xOf(page, mid), await xOf(page, mid - span * 0.15), y);
  await rangeShown(page, n);
  t = await totals(page);
  assert.ok(Math.abs(t.range.to - t.range.from - len) < 1, 'the length stays');
  assert.ok(Math.abs(t.range.from - (was.from - span * 0.15)) < span / 200, JSON.stringify(t.range));
  assert.equal(t.viewer, t.heat);
  // The URL keeps the range; the viewer's own state (a search) is in the hash.
  await page.fill('.kf-search', 'vfs_');
  await page.press('.kf-search', 'Enter');
  const url = new URL(page.url());
  assert.equal(+url.searchParams.get('from'), Math.round(t.range.from));
  assert.equal(+url.searchParams.get('to'), Math.round(t.range.to));
  await screenshot(page, 'serve-brush');
  // Reload: the same range, the same flame graph, the same search.
  await page.reload();
  await ready(page);
  const again = await totals(page);
  assert.equal(Math.round(again.range.from), Math.round(t.range.from));
  assert.equal(Math.round(again.range.to), Math.round(t.range.to));
  assert.equal(again.viewer, t.viewer);
  assert.equal(await page.inputValue('.kf-search'), 'vfs_');
  // Zoom into the selection, then out again.
  await page.click('.ks-zoom-in');
  const zoomed = await page.evaluate(() => kflameServe.S.view);
  assert.ok(zoomed.to - zoomed.from < span / 2, 'zoomed in');
  await page.click('.ks-zoom-out');
  assert.ok(await page.evaluate((z) => kflameServe.S.view.to - kflameServe.S.view.from > z, zoomed.to - zoomed.from));
  assert.deepEqual(problems, []);
  await page.close();
});

test('event markers open the capture\'s flame graph and the report\'s stack and text, as text', async () => {
  const { page, problems } = await open('&vfrom=1764000000000&vto=1764000300000&from=1764000000000&to=1764000030000');
  const types = await page.locator('.ks-marker').evaluateAll((ms) => ms.map((m) => m.dataset.type));
  assert.deepEqual(types, ['trigger', 'capture', 'report']);
  let n = await loads(page);
  await page.click('.ks-m-capture');
  await reloaded(page, n);
  const events = await page.evaluate(async () => (await (await fetch('/api/events')).json()).events);
  const cap = events.find((e) => e.type === 'capture');
  const capture = await page.evaluate(async (id) => (await (await fetch(`/api/profile?capture=${id}&format=folded`)).text()), cap.id);
  const capTotal = capture.trim().split('\n').filter((l) => !l.startsWith('#')).reduce((a, l) => a + +l.slice(l.lastIndexOf(' ') + 1), 0);
  assert.equal(await page.evaluate(() => kflameViewer.tree.total[0]), capTotal);
  assert.match(await page.locator('.ks-panel-title').innerText(), /^Capture #1 \(cpu\)$/);
  // A range against the capture: the capture is the BEFORE side.
  await page.click('.ks-compare-capture');
  await page.waitForFunction(() => kflameViewer.meta.differential === true, null, { timeout: 10000 });
  assert.equal(await page.evaluate(() => kflameViewer.tree.totalBefore[0]), capTotal);
  assert.equal(await page.evaluate(() => kflameViewer.tree.total[0]), (await totals(page)).heat);
  // The trigger opens the capture it started.
  n = await loads(page);
  await page.click('.ks-m-trigger');
  await reloaded(page, n);
  assert.match(await page.locator('.ks-panel-title').innerText(), /^Capture #1/);
  // The report: its title and text shown as they are, markup included, as text.
  n = await loads(page);
  await page.click('.ks-m-report');
  await reloaded(page, n);
  const title = await page.locator('.ks-panel-title').innerText();
  assert.equal(title, 'warning: WARNING: <script>alert(3)</script> at <b>kernel/x.c</b>');
  assert.match(await page.locator('.ks-report').innerText(), /<script>alert\(4\)<\/script>/);
  assert.equal(await page.locator('.ks-report script, .ks-panel-title b, #app img').count(), 0);
  assert.deepEqual(await page.evaluate(() => kflameViewer.tree.names.slice().sort()),
    ['<b>bad_work_fn</b>', 'kthread', 'process_one_work', 'ret_from_fork', 'worker_thread']);
  await screenshot(page, 'serve-report');
  // Hostile frame names in a range's flame graph: in the top functions table as text.
  n = await loads(page);
  await page.click('.ks-flame');
  await reloaded(page, n);
  assert.ok(await page.evaluate(() => kflameViewer.tree.names.includes('<img src=x onerror=alert(1)>')));
  await page.evaluate(() => kflameViewer.select(kflameViewer.tree.names.indexOf('<img src=x onerror=alert(1)>')));
  assert.equal(await page.locator('.kf-sel-name').innerText(), '<img src=x onerror=alert(1)>');
  await page.fill('.kf-search', 'leaf&amp;');
  await page.press('.kf-search', 'Enter');
  assert.match(await page.locator('.kf-matched').innerText(), /\S/);
  await page.click('.kf-views button[data-view="top"]');
  assert.equal(await page.locator('img, .kf-top script, .kf-sel-name *').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('compare two ranges: the differential flame graph of the selection against the base', async () => {
  const { page, problems } = await open('&vfrom=1764000000000&vto=1764000900001&from=1764000000000&to=1764000120000');
  await page.click('.ks-set-base');
  const base = await totals(page);
  const box = await page.locator('.ks-chart[data-chart="cpu"]').boundingBox();
  let n = await loads(page);
  await drag(page, await xOf(page, 1764000300000), await xOf(page, 1764000600000), box.y + 40);
  await rangeShown(page, n);
  const after = await totals(page);
  await page.click('.ks-compare');
  await page.waitForFunction(() => kflameViewer.meta.differential === true, null, { timeout: 10000 });
  const d = await page.evaluate(() => ({ diff: kflameViewer.meta.differential, total: kflameViewer.tree.total[0],
    before: kflameViewer.tree.totalBefore[0], info: kflameServe.S.last.info }));
  assert.equal(d.diff, true);
  assert.equal(d.total, after.heat);
  assert.equal(d.before, base.heat);
  assert.ok(new URL(page.url()).searchParams.get('mode') === 'diff');
  await screenshot(page, 'serve-compare');
  // The comparison survives a reload.
  await page.reload();
  await ready(page);
  assert.equal(await page.evaluate(() => kflameViewer.meta.differential), true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('heat map: a rectangle of cells gives the flame graph of exactly those samples', async () => {
  const { page, problems } = await open('&vfrom=1764000000000&vto=1764000900001&from=1764000000000&to=1764000060000&mode=heat');
  await page.waitForFunction(() => kflameServe.S.heat, null, { timeout: 10000 });
  const heat = await page.evaluate(() => kflameServe.S.heat);
  assert.equal(heat.columns, 60);
  assert.equal(heat.rows, 50);
  // Seconds 2..14, offsets 0..100 ms (rows 0..4): the burst of seconds 3 and 13 is in there.
  let want = 0;
  for (let c = 2; c <= 14; c++) for (let r = 0; r <= 4; r++) want += heat.counts[c * heat.rows + r];
  const a = await page.evaluate(() => kflameServe.S.heatmap.pointOf(2, 0));
  const b = await page.evaluate(() => kflameServe.S.heatmap.pointOf(14, 4));
  const n = await loads(page);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 5 });
  await page.mouse.up();
  await reloaded(page, n);
  assert.equal(await page.evaluate(() => kflameViewer.tree.total[0]), want);
  assert.ok(want > 12 * 5, 'the rectangle holds the bursts: ' + want);
  await screenshot(page, 'serve-heatmap');
  assert.deepEqual(problems, []);
  await page.close();
});
