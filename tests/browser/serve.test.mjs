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
  // The latency charts read their percentiles and rates (slow calls and waits per second)
  // from the history's histograms.
  assert.deepEqual(charts, ['cpu', 'mem', 'io', 'io-util', 'psi', 'syscall-lat', 'syscall-slow', 'runq-lat', 'wait', 'slow']);
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
  // The capture's range is the selection, as if brushed: header, brush and URL.
  const capFrom = Math.floor(cap.time / 1e6), capTo = Math.ceil(cap.end / 1e6);
  const utc = (ms) => new Date(ms).toISOString();
  const rangeText = `${utc(capFrom).slice(0, 10)} ${utc(capFrom).slice(11, 19)} – ${utc(capTo).slice(11, 19)} UTC (${(capTo - capFrom) / 1000} s)`;
  assert.equal(await page.locator('.ks-panel-title').innerText(), `Capture #1 (CPU), ${rangeText}`);
  assert.equal(await page.locator('.ks-range').innerText(), rangeText);
  assert.deepEqual(await page.evaluate(() => kflameServe.S.range), { from: capFrom, to: capTo });
  const url = new URL(page.url()).searchParams;
  assert.deepEqual([+url.get('from'), +url.get('to'), url.get('capture')], [capFrom, capTo, String(cap.id)]);
  const brush = await page.evaluate(([a, b]) => {
    const { brush } = kflameServe.D;
    return { range: brush.range, left: parseFloat(brush.sel.style.left) - brush.toX(a), width: parseFloat(brush.sel.style.width) - (brush.toX(b) - brush.toX(a)) };
  }, [capFrom, capTo]);
  assert.deepEqual(brush.range, { from: capFrom, to: capTo });
  assert.ok(Math.abs(brush.left) < 0.01 && Math.abs(brush.width) < 0.01, 'the brush covers the capture: ' + JSON.stringify(brush));
  // A reload shows the capture again.
  await page.reload();
  await ready(page);
  await page.waitForFunction(() => kflameServe.S.event && kflameServe.S.event.type === 'capture', null, { timeout: 10000 });
  assert.equal(await page.evaluate(() => kflameViewer.tree.total[0]), capTotal);
  assert.equal(await page.locator('.ks-range').innerText(), rangeText);
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
  // The text as printed is one click away (under the analysis), and so is the stack (the
  // flame graph first shown is the minute before the report).
  if (!(await page.locator('.ks-rp-text').evaluate((d) => d.open))) await page.click('.ks-rp-text summary');
  assert.match(await page.locator('.ks-report').innerText(), /<script>alert\(4\)<\/script>/);
  assert.equal(await page.locator('.ks-report script, .ks-panel-title b, .ks-rp-panel b b, #app img').count(), 0);
  await page.click('.ks-rp-graph[data-graph="stack"]');
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
  // The history samples each CPU 19 times a second (tests/common/history.rs): rows of at
  // least two periods (105 ms), the shortest such divisor of a second.
  assert.equal(heat.rate_hz, 19);
  assert.equal(1000 % heat.row_ms, 0);
  assert.ok(heat.row_ms * 19 >= 2000, 'rows of two sampling periods at least: ' + heat.row_ms);
  const shorter = [...Array(heat.row_ms).keys()].filter((d) => d >= 10 && 1000 % d === 0).pop();
  assert.ok(shorter * 19 < 2000, `${shorter} ms rows would be shorter than two periods: the shortest rows that are not`);
  assert.equal(heat.rows, 1000 / heat.row_ms);
  // No stripes: every row of every whole second holds samples of both CPUs; at 20 ms rows,
  // most rows of the same seconds are empty.
  for (let c = 0; c < 60; c++) for (let r = 0; r < heat.rows; r++) assert.ok(heat.counts[c * heat.rows + r] >= 2 * 2, `cell ${c},${r}`);
  const fine = await page.evaluate(async () => (await (await fetch('/api/heatmap?kind=cpu&from=1764000000000000000&to=1764000060000000000&row_ms=20')).json()));
  const empty = fine.counts.filter((n) => n === 0).length;
  assert.ok(empty >= fine.counts.length / 4, `20 ms rows at 19 Hz: ${empty} of ${fine.counts.length} cells empty`);
  // Labelled axes: offsets down (round, in ms, 0 to 1000 at row boundaries), UTC clock
  // times across (whole seconds at a round step, the date in the title).
  const axes = await page.evaluate(() => kflameServe.S.heatmap.axes);
  assert.equal(axes.offsets[0], 0);
  assert.equal(axes.offsets[axes.offsets.length - 1], 1000);
  assert.ok(axes.offsets.every((ms) => ms % heat.row_ms === 0), JSON.stringify(axes.offsets));
  assert.match(axes.offsetTitle, /offset/);
  assert.equal(axes.timeTitle, 'time (UTC, 2025-11-24), one column per second');
  const steps = new Set(axes.times.slice(1).map((t, k) => t - axes.times[k]));
  assert.equal(steps.size, 1);
  const [step] = steps;
  assert.ok([1, 2, 5, 10, 15, 30, 60].map((s) => s * 1000).includes(step), 'time step ' + step);
  assert.ok(axes.times.every((t) => t % step === 0 && t >= 1764000000000 && t <= 1764000060000), JSON.stringify(axes.times));
  assert.ok(axes.rowPx >= 3);
  // Seconds 2..14, the first row (offsets up to 125 ms): the bursts of seconds 3 and 13 (in
  // their first 100 ms) are in there.
  let want = 0;
  for (let c = 2; c <= 14; c++) want += heat.counts[c * heat.rows];
  const a = await page.evaluate(() => kflameServe.S.heatmap.pointOf(2, 0));
  const b = await page.evaluate(() => kflameServe.S.heatmap.pointOf(14, 0));
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

test('charts: the main ones open and short, the others one click away, round ticks clear of the titles', async () => {
  const { page, problems } = await open();
  const shown = () => page.locator('.ks-chart').evaluateAll((cs) => cs.filter((c) => !c.hidden).map((c) => c.dataset.chart));
  assert.deepEqual(await shown(), ['cpu', 'mem', 'io', 'psi']);
  assert.deepEqual(await page.locator('.ks-more-chart').evaluateAll((bs) => bs.map((b) => b.dataset.chart)),
    ['io-util', 'syscall-lat', 'syscall-slow', 'runq-lat', 'wait', 'slow']);
  // The flame graph starts on the first screen of a 1280x900 window, with room to be seen.
  const graph = await page.locator('.ks-viewer .kf-canvas').first().boundingBox();
  assert.ok(graph.y < 900 - 250, 'the flame graph starts at ' + graph.y);
  // Every chart's title sits above its plot (no tick label under it), and its ticks are
  // round: 0 and equal steps of 1, 2 or 5 times a power of ten, in the unit of the labels,
  // up to a top at or above the largest value drawn.
  const charts = await page.evaluate(() => kflameServe.S.charts.filter((c) => !c.element.hidden).map((c) => {
    const t = c.title.getBoundingClientRect(), p = c.canvas.getBoundingClientRect();
    const drawn = c.stacked ? Math.max(...c.series[0].avg.map((_, i) => c.series.reduce((a, s) => a + (s.avg[i] || 0), 0)))
      : Math.max(...c.series.flatMap((s) => s.max.filter((v) => v !== null)));
    return { key: c.group.key, stacked: c.stacked, titleBottom: t.bottom, plotTop: p.top, ticks: c.ticks, labels: c.tickLabels, top: c.ymax, drawn };
  }));
  for (const c of charts) {
    assert.ok(c.titleBottom <= c.plotTop + 0.5, `${c.key}: the title ends at ${c.titleBottom}, the plot starts at ${c.plotTop}`);
    assert.ok(c.ticks.length >= 2 && c.ticks.length <= 6, `${c.key}: ${c.labels}`);
    assert.equal(c.ticks[0], 0);
    assert.equal(c.ticks[c.ticks.length - 1], c.top);
    // (Stacked CPU shares fill 100 % at most: rounding above it is clipped.)
    assert.ok(c.top >= (c.stacked ? Math.min(c.drawn, 100) : c.drawn), `${c.key}: top ${c.top} under the data's ${c.drawn}`);
    const nums = c.labels.map((l) => parseFloat(l)), unit = new Set(c.labels.map((l) => l.replace(/^[\d.]+ ?/, '')));
    assert.equal(unit.size, 1, `${c.key}: one unit: ${c.labels}`);
    const step = nums[1] - nums[0], mantissa = +(step / 10 ** Math.floor(Math.log10(step))).toFixed(6);
    assert.ok([1, 2, 5].includes(mantissa), `${c.key}: step ${step}: ${c.labels}`);
    nums.forEach((v, k) => assert.ok(Math.abs(v - k * step) < step * 1e-6, `${c.key}: ${c.labels}`));
    // The label says the value: the tick divided by the label's number is the unit's size.
    const scale = c.ticks[1] / step;
    assert.ok([1, 1000, 1024, 1024 ** 2, 1024 ** 3, 1e6].some((u) => Math.abs(scale / u - 1) < 1e-9), `${c.key}: ${scale}`);
  }
  assert.ok(charts.some((c) => c.labels.some((l) => / [KMG]iB$/.test(l))), 'memory in binary units');
  assert.ok(charts.some((c) => c.labels.includes('100 %')), 'shares in %');
  // Another chart opens from "More charts" (and is in the URL); its title hides it again.
  await page.click('.ks-more-chart[data-chart="io-util"]');
  assert.deepEqual(await shown(), ['cpu', 'mem', 'io', 'io-util', 'psi']);
  assert.equal(new URL(page.url()).searchParams.get('open'), 'cpu,mem,io,io-util,psi');
  assert.ok(await page.evaluate(() => kflameServe.S.charts.find((c) => c.group.key === 'io-util').ticks.length >= 2), 'drawn when opened');
  await page.reload();
  await ready(page);
  assert.deepEqual(await shown(), ['cpu', 'mem', 'io', 'io-util', 'psi']);
  await page.click('.ks-chart[data-chart="io-util"] .ks-chart-title');
  assert.deepEqual(await shown(), ['cpu', 'mem', 'io', 'psi']);
  assert.equal(new URL(page.url()).searchParams.get('open'), null);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a range\'s CPU profile says which captures it leaves out, and opens them', async () => {
  const { page, problems } = await open('&vfrom=1764000000000&vto=1764000300000&from=1764000000000&to=1764000120000');
  const events = await page.evaluate(async () => (await (await fetch('/api/events?from=1764000000000000000&to=1764000120000000000')).json()).events);
  const caps = events.filter((e) => e.type === 'capture' && e.kind === 'cpu');
  assert.equal(caps.length, 1);
  const info = await page.evaluate(() => kflameServe.S.last.info);
  assert.deepEqual(info.captures_apart, caps.map((c) => ({ id: c.id, host: c.host, start: c.time, end: c.end })));
  // The viewer holds the always-on samples alone: those the heat map counts.
  assert.equal((await totals(page)).viewer, (await totals(page)).heat);
  const note = await page.locator('.ks-apart').innerText();
  assert.match(note, /^The always-on CPU profile; 1 capture of this range \(#1\) sampled at its own rate and is kept apart/);
  const n = await loads(page);
  await page.click('.ks-open-capture[data-capture="1"]');
  await reloaded(page, n);
  const folded = await page.evaluate(async () => (await (await fetch('/api/profile?capture=1&format=folded')).text()));
  const capTotal = folded.trim().split('\n').filter((l) => !l.startsWith('#')).reduce((a, l) => a + +l.slice(l.lastIndexOf(' ') + 1), 0);
  assert.equal(await page.evaluate(() => kflameViewer.tree.total[0]), capTotal);
  assert.deepEqual(await page.evaluate(() => kflameServe.S.range), { from: Math.floor(caps[0].time / 1e6), to: Math.ceil(caps[0].end / 1e6) });
  assert.equal(new URL(page.url()).searchParams.get('capture'), '1');
  assert.equal(await page.locator('.ks-apart').count(), 0, 'a capture\'s own profile leaves nothing out');
  // Another kind has no always-on profile: nothing is said.
  const off = await page.evaluate(async () => (await (await fetch('/api/profile?kind=offcpu&from=1764000000000000000&to=1764000120000000000')).json()).info);
  assert.deepEqual(off.captures_apart, []);
  assert.deepEqual(problems, []);
  await page.close();
});
