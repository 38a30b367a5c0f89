// Browser tests of the latency scatter page (`kflame scatter`), in headless Chromium, on the
// syscall latency recorded on a real machine (crates/kflame/tests/data/scatter). Expected
// figures are computed here from the event lines, independently of the page.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { ROOT, kflame, launchBrowser, scratch, screenshot, writeText } from './lib.mjs';

const FIXTURE = join(ROOT, 'crates/kflame/tests/data/scatter/syscalls-mixed.json.gz');
const EVENTS = gunzipSync(readFileSync(FIXTURE)).toString('utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));

let browser, dir, pageFile;

before(async () => {
  dir = scratch();
  pageFile = join(dir, 'scatter.html');
  kflame(['scatter', FIXTURE, '-o', pageFile, '--title', 'syscalls under dd, find and a CPU burner']);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
});

/** Opens the page (with a hash), waits for the view; no error may occur. */
async function open(file, hash = '') {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(pathToFileURL(file).href + hash);
  await page.waitForFunction(() => globalThis.kflameScatter);
  page.problems = problems;
  return page;
}

const shownCount = async (page) => Number((await page.textContent('.sc-count')).split(' ')[0]);
/** Indices of the events the page shows. */
const visible = (page) => page.evaluate(() => Array.from(kflameScatter.visible.keys()).filter((i) => kflameScatter.visible[i]));

test('search a function, check it: only its events are shown; reset shows all again', async () => {
  const page = await open(pageFile);
  assert.equal(await shownCount(page), EVENTS.length);
  await page.fill('.sc-search', 'GETDENTS');
  await page.press('.sc-search', 'Enter');
  const want = EVENTS.map((e, i) => (e.stack.includes('getdents64') ? i : -1)).filter((i) => i >= 0);
  assert.ok(want.length > 100);
  const row = page.locator('.sc-fn', { hasText: 'getdents64' }).first();
  assert.equal(await row.locator('.sc-fn-name').textContent(), 'getdents64');
  assert.equal(Number(await row.locator('.sc-fn-count').textContent()), want.length);
  // Case-sensitive: no match; regex: anchored names.
  await page.check('.sc-case');
  assert.equal(await page.locator('.sc-fn').count(), 0);
  await page.uncheck('.sc-case');
  await page.check('.sc-regex');
  await page.fill('.sc-search', '^getdents(64)?$');
  await page.press('.sc-search', 'Enter');
  const names = await page.locator('.sc-fn-name').allTextContents();
  assert.ok(names.length >= 1 && names.every((n) => /^getdents(64)?$/.test(n)), names.join());
  await row.locator('input').check();
  assert.equal(await shownCount(page), want.length);
  assert.deepEqual(await visible(page), want);
  await screenshot(page, 'scatter-function-checked');
  await page.click('[data-act=reset]');
  assert.equal(await shownCount(page), EVENTS.length);
  assert.equal(await page.inputValue('.sc-search'), '');
  assert.equal(await page.locator('.sc-fn input:checked').count(), 0);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('color by process: one legend entry per comm with its count; an entry toggles its points', async () => {
  const page = await open(pageFile);
  await page.selectOption('.sc-color', 'cpu');
  await page.selectOption('.sc-color', 'comm');
  const counts = new Map();
  for (const e of EVENTS) counts.set(e.comm, (counts.get(e.comm) || 0) + 1);
  const items = page.locator('.sc-legend-item');
  const got = new Map();
  for (let k = 0; k < await items.count(); k++) {
    got.set(await items.nth(k).locator('.sc-legend-label').textContent(), Number(await items.nth(k).locator('.sc-legend-count').textContent()));
  }
  assert.deepEqual(got, counts);
  // Each process is drawn in its legend's color: the pixels of its last 20 events (drawn last,
  // so mostly not covered by another process's points).
  const pixels = await page.evaluate(() => {
    const v = kflameScatter, ctx = v.dom.canvas.getContext('2d'), r = v.ratio, out = {};
    for (let i = v.n - 1; i >= 0; i--) {
      const label = v.cats.labels[v.cats.cat[i]];
      out[label] = out[label] || [];
      if (out[label].length >= 20) continue;
      const x = Math.floor(v.px(v.t[i]) * r), y = Math.floor(v.py(v.yOf(v.d[i])) * r);
      out[label].push(Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
    }
    return out;
  });
  const swatches = await page.$$eval('.sc-legend-item', (bs) => bs.map((b) => [b.querySelector('.sc-legend-label').textContent,
    getComputedStyle(b.querySelector('.kf-swatch')).backgroundColor]));
  assert.equal(swatches.length, counts.size);
  for (const [label, css] of swatches) {
    const want = css.match(/\d+/g).map(Number);
    const same = pixels[label].filter((p) => p.every((c, k) => c === want[k])).length;
    assert.ok(same >= pixels[label].length / 2, `${label}: ${css}, pixels ${JSON.stringify(pixels[label])}`);
  }
  await screenshot(page, 'scatter-color-by-process');
  await page.click('.sc-legend-item:has-text("find")');
  assert.equal(await page.getAttribute('.sc-legend-item:has-text("find")', 'aria-pressed'), 'false');
  assert.equal(await shownCount(page), EVENTS.length - counts.get('find'));
  const vis = await visible(page);
  assert.ok(vis.every((i) => EVENTS[i].comm !== 'find'));
  // Keyboard: the legend entries are buttons.
  await page.focus('.sc-legend-item:has-text("find")');
  await page.keyboard.press('Enter');
  assert.equal(await shownCount(page), EVENTS.length);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('click a point: its details, and the flame graph of exactly its stack', async () => {
  const page = await open(pageFile);
  // The slowest dd write, found here.
  let want = -1;
  EVENTS.forEach((e, i) => { if (e.comm === 'dd' && (want < 0 || e.duration_ns > EVENTS[want].duration_ns)) want = i; });
  const at = await page.evaluate((i) => {
    const v = kflameScatter, r = v.dom.canvas.getBoundingClientRect();
    return { x: r.left + v.px(v.t[i]) + 1, y: r.top + v.py(v.yOf(v.d[i])) + 1 };
  }, want);
  await page.mouse.click(at.x, at.y);
  assert.equal(await page.evaluate(() => kflameScatter.point), want);
  const e = EVENTS[want];
  assert.equal(await page.textContent('.sc-comm'), e.comm);
  assert.equal(await page.textContent('.sc-pid'), String(e.pid));
  assert.equal(await page.textContent('.sc-cpu'), String(e.cpu));
  assert.ok((await page.textContent('.sc-start')).startsWith(e.ts.toFixed(9)));
  assert.ok((await page.textContent('.sc-duration')).includes(e.duration_ns.toLocaleString('en-US') + ' ns'));
  assert.equal(await page.textContent('.sc-event'), e.event);
  const path = await page.evaluate(() => {
    const t = kflameScatter.pointViewer.tree, out = [];
    let i = 0;
    while (t.kidOff[i + 1] > t.kidOff[i]) {
      if (t.kidOff[i + 1] - t.kidOff[i] !== 1) return null;
      i = t.kids[t.kidOff[i]];
      out.push(t.names[t.name[i]]);
    }
    return { out, total: t.total[0] };
  });
  assert.deepEqual(path.out, e.stack);
  assert.equal(path.total, e.duration_ns);
  await screenshot(page, 'scatter-point');
  // The outlier list links to points too: its first entry is the slowest event.
  let slowest = 0;
  EVENTS.forEach((x, i) => { if (x.duration_ns > EVENTS[slowest].duration_ns) slowest = i; });
  await page.click('.sc-outlier >> nth=0');
  assert.equal(await page.evaluate(() => kflameScatter.point), slowest);
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('box selection: its flame graph weighs the selected events by latency; differential toggle', async () => {
  const page = await open(pageFile);
  await page.click('[data-act=box]');
  const r = await page.evaluate(() => {
    const v = kflameScatter, b = v.dom.canvas.getBoundingClientRect(), p = v.plot;
    return { x: b.left + p.x, y: b.top + p.y, w: p.w, h: p.h };
  });
  const t0 = Date.now();
  await page.mouse.move(r.x + r.w * 0.45, r.y + r.h * 0.1);
  await page.mouse.down();
  await page.mouse.move(r.x + r.w * 0.7, r.y + r.h * 0.5, { steps: 5 });
  await page.mouse.move(r.x + r.w * 0.75, r.y + r.h * 0.6, { steps: 5 });
  await page.mouse.up();
  await page.waitForSelector('.sc-sel-total');
  const box = await page.evaluate(() => kflameScatter.selection.shape.box);
  // The box in data coordinates: time after the first event (ns) and log10 latency.
  const first = Math.min(...EVENTS.map((e) => Math.round(e.ts * 1e9)));
  let sum = 0, n = 0;
  for (const e of EVENTS) {
    const t = Math.round(e.ts * 1e9) - first, y = Math.log10(Math.max(e.duration_ns, 1));
    if (t >= box[0] && t <= box[1] && y >= box[2] && y <= box[3]) { sum += e.duration_ns; n++; }
  }
  assert.ok(n > 10, `${n} events selected`);
  assert.equal(Number(await page.textContent('.sc-sel-count')), n);
  assert.equal(Number(await page.getAttribute('.sc-sel-total', 'data-ns')), sum);
  const totals = await page.evaluate(() => kflameScatter.selViewers.map((v) => v.tree.total[0]));
  assert.equal(totals[0], sum);
  assert.equal(totals[1], EVENTS.reduce((s, e) => s + e.duration_ns, 0));
  assert.ok(Date.now() - t0 < 5000);
  await screenshot(page, 'scatter-box-selection');
  await page.check('.sc-diff');
  const diff = await page.evaluate(() => ({ n: kflameScatter.selViewers.length, d: !!kflameScatter.selViewers[0].tree.before,
    total: kflameScatter.selViewers[0].tree.total[0] }));
  assert.deepEqual(diff, { n: 1, d: true, total: sum });
  await screenshot(page, 'scatter-box-differential');
  assert.deepEqual(page.problems, []);
  await page.close();
});

test('lasso selection, axis range filters, zoom and pan; the URL keeps filters and view', async () => {
  const page = await open(pageFile);
  // The plot's rectangle in the viewport (filter chips above it move it down).
  const plot = () => page.evaluate(() => {
    const v = kflameScatter, b = v.dom.canvas.getBoundingClientRect(), p = v.plot;
    return { x: b.left + p.x, y: b.top + p.y, w: p.w, h: p.h };
  });
  let r = await plot();
  // Drag on the latency axis: a latency range.
  await page.mouse.move(r.x - 20, r.y + r.h * 0.2);
  await page.mouse.down();
  await page.mouse.move(r.x - 20, r.y + r.h * 0.6, { steps: 4 });
  await page.mouse.up();
  const y = await page.evaluate(() => kflameScatter.state.y);
  const inY = EVENTS.filter((e) => e.duration_ns >= y[0] && e.duration_ns <= y[1]).length;
  assert.equal(await shownCount(page), inY);
  // Drag on the time axis: a time range as well.
  r = await plot();
  await page.mouse.move(r.x + r.w * 0.5, r.y + r.h + 15);
  await page.mouse.down();
  await page.mouse.move(r.x + r.w * 0.9, r.y + r.h + 15, { steps: 4 });
  await page.mouse.up();
  const x = await page.evaluate(() => kflameScatter.state.x);
  const first = Math.min(...EVENTS.map((e) => Math.round(e.ts * 1e9)));
  const both = EVENTS.filter((e) => { const t = Math.round(e.ts * 1e9) - first; return e.duration_ns >= y[0] && e.duration_ns <= y[1] && t >= x[0] && t <= x[1]; });
  assert.equal(await shownCount(page), both.length);
  // Wheel zoom and drag pan change the view.
  r = await plot();
  const v0 = await page.evaluate(() => ({ ...kflameScatter.view }));
  await page.mouse.move(r.x + r.w / 2, r.y + r.h / 2);
  await page.mouse.wheel(0, -400);
  const v1 = await page.evaluate(() => ({ ...kflameScatter.view }));
  assert.ok(v1.x1 - v1.x0 < (v0.x1 - v0.x0) * 0.7);
  await page.mouse.down();
  await page.mouse.move(r.x + r.w / 2 + 100, r.y + r.h / 2, { steps: 3 });
  await page.mouse.up();
  const v2 = await page.evaluate(() => ({ ...kflameScatter.view }));
  assert.ok(v2.x0 < v1.x0);
  // Lasso: a triangle.
  await page.click('[data-act=lasso]');
  await page.mouse.move(r.x + r.w * 0.3, r.y + r.h * 0.9);
  await page.mouse.down();
  for (const [fx, fy] of [[0.9, 0.9], [0.6, 0.05], [0.3, 0.9]]) await page.mouse.move(r.x + r.w * fx, r.y + r.h * fy, { steps: 6 });
  await page.mouse.up();
  const sel = await page.evaluate(() => ({ count: kflameScatter.selection.count, ids: kflameScatter.selection.ids }));
  const vis = new Set(await visible(page));
  assert.ok(sel.ids.every((i) => vis.has(i)));
  assert.equal(Number(await page.textContent('.sc-sel-count')), sel.count);
  await screenshot(page, 'scatter-lasso');
  // Reload with the URL: same filters and view.
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /x=.*y=.*view=/);
  const again = await open(pageFile, hash);
  assert.equal(await shownCount(again), both.length);
  const v3 = await again.evaluate(() => ({ ...kflameScatter.view }));
  assert.ok(Math.abs(v3.x0 - v2.x0) < Math.abs(v2.x1 - v2.x0) * 1e-6);
  await again.click('[data-act=density]');
  assert.match(await again.evaluate(() => location.hash), /density=1/);
  await screenshot(again, 'scatter-density');
  await again.click('[data-act=log]');
  assert.match(await again.evaluate(() => location.hash), /linear=1/);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(again.problems, []);
  await page.close();
  await again.close();
});

test('an empty input gives a page that says so; hostile names stay text', async () => {
  const empty = join(dir, 'empty.html');
  kflame(['scatter', writeText(dir, 'empty.json', ''), '-o', empty]);
  let page = await open(empty);
  assert.equal(await page.isVisible('.sc-empty'), true);
  assert.match(await page.textContent('.sc-empty'), /No events/);
  assert.deepEqual(page.problems, []);
  await page.close();
  const hostile = '</script><img src=x onerror="window.__pwned=1">';
  const events = writeText(dir, 'hostile.json', JSON.stringify({ ts: 1, cpu: 0, pid: 1, comm: hostile, duration_ns: 5, stack: [hostile], event: 'e' }) + '\n' +
    'not json\n' + JSON.stringify({ ts: 2, cpu: 0, pid: 1, comm: 'x', duration_ns: 7, stack: [], event: 'e' }) + '\n');
  const out = join(dir, 'hostile.html');
  kflame(['scatter', events, '-o', out]);
  page = await open(out);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.textContent('.sc-legend-item >> nth=0 >> .sc-legend-label'), hostile);
  assert.match(await page.textContent('.sc-notes'), /hostile\.json:2: skipped 1 line \(malformed event line\)/);
  await page.fill('.sc-search', 'no stack');
  await page.press('.sc-search', 'Enter');
  assert.equal(await page.textContent('.sc-fn-name'), '[no stack]');
  assert.deepEqual(page.problems, []);
  await page.close();
});
