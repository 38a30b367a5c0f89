// The latency heat map of `kflame serve`, on the history of the kflame-serve crate's `history`
// example (tests/common/history.rs): every second, ten `write` calls of 2 to 20 µs (and one
// of 50 ms in every tenth second) under `syscall`, counted in the family's total as well, and
// one run-queue wait of 1 ms under `runq` `cpu0`; the histogram of second s is stored at
// T0 + s + 999 ms. The 50 ms call of second s (s % 10 == 9) is kept as an outlier at
// T0 + s + 500 ms: `syscall:write` of `testapp` pid 4242 (tid 4243) on CPU 1, with the
// stack `history::OUTLIER_STACK`. Every expected count is computed here from that description and the
// range the page shows, or from the map's own answer; none is taken from the drawing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'latency-test-token-7';
const T0_MS = 1764000000000;
/** The outlier's stack (tests/common/history.rs, OUTLIER_STACK). */
const OUTLIER_STACK = 'write;testapp;main;save_file;entry_SYSCALL_64;ksys_write;ext4_sync_file;submit_bio_wait'.split(';');
let browser, served;

before(async () => {
  const dir = scratch();
  execFileSync('cargo', ['build', '-q', '-p', 'kflame-serve', '--example', 'history'], { cwd: ROOT, stdio: 'inherit' });
  const db = join(dir, 'history.db');
  execFileSync(join(ROOT, 'target/debug/examples/history'), [db, '900']);
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', TOKEN + '\n')]);
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (served) await stopServe(served, 'kflame serve did not stop cleanly on SIGTERM');
});

async function open(query = '') {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('dialog', (d) => { problems.push('dialog: ' + d.message()); d.dismiss(); });
  await page.goto(served.base + '?token=' + TOKEN + query);
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 && kflameServe.S.chartsLoaded > 0,
    null, { timeout: 15000 });
  return { page, problems };
}

/** Waits until the latency map has been drawn again after `n` loads. */
async function latencyLoaded(page, n) {
  await page.waitForFunction((k) => kflameServe.S.latency.loaded > k, n, { timeout: 10000 });
}
const latencyLoads = (page) => page.evaluate(() => kflameServe.S.latency.loaded);

/** The seconds s (0 ≤ s < 900) whose histogram lies in [from, to) ms. */
function secondsIn(from, to) {
  const out = [];
  for (let s = 0; s < 900; s++) {
    const t = T0_MS + s * 1000 + 999;
    if (t >= from && t < to) out.push(s);
  }
  return out;
}

/** A latency as the page writes it (3 significant digits in ns, µs, ms or s). */
function fmtLatency(ns) {
  const [div, unit] = ns < 1e3 ? [1, 'ns'] : ns < 1e6 ? [1e3, 'µs'] : ns < 1e9 ? [1e6, 'ms'] : [1e9, 's'];
  return +(ns / div).toPrecision(3) + ' ' + unit;
}
const clock = (ms) => new Date(ms).toISOString().slice(11, 19);

/** Column c's edges, ms: the map's start plus c steps (ns), rounded up to whole ms. */
function edge(map, fromMs, c) {
  const ns = BigInt(fromMs) * 1000000n + BigInt(c) * BigInt(map.step_ns);
  return Number((ns + 999999n) / 1000000n);
}

test('the latency heat map: every event in its cells, the slow calls on top, tooltip, selection, labels', async () => {
  const { page, problems } = await open();
  // The profile kinds offered include the always-on off-CPU and lock-wait profiles.
  const kinds = await page.locator('.ks-kind option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
  assert.ok(kinds.some(([v]) => v === 'offcpu') && kinds.some(([v]) => v === 'locks'), JSON.stringify(kinds));
  let n = await latencyLoads(page);
  await page.click('.ks-latency');
  await latencyLoaded(page, n);
  assert.equal(new URL(page.url()).searchParams.get('mode'), 'latency');
  const S = () => page.evaluate(() => {
    const { S } = kflameServe, m = S.latency.map;
    return { range: { ...S.range }, data: S.latency.data, choice: { ...S.latency.choice }, axes: m.axes, rows: m.rows, columns: m.columns };
  });
  let st = await S();
  // The default: the first family's total.
  assert.deepEqual(st.choice, { kind: 'syscall', label: '' });
  assert.equal(await page.locator('.ks-lat-family').inputValue(), 'syscall');
  assert.equal(await page.locator('.ks-lat-label').inputValue(), '');
  const d = st.data;
  // Columns of whole seconds (one histogram each), as many as fit at 3 px, from the range's
  // start to the end of the column holding its end.
  const stepMs = d.step_ns / 1e6, mapFrom = Math.round(d.from / 1e6), mapTo = Math.round(d.to / 1e6);
  assert.equal(stepMs % 1000, 0, 'whole seconds per column: ' + d.step_ns);
  assert.equal(mapFrom, Math.round(st.range.from));
  assert.ok(mapTo >= st.range.to && mapTo - st.range.to < stepMs && (mapTo - mapFrom) % stepMs === 0, `${mapFrom}..${mapTo} for ${JSON.stringify(st.range)}, step ${stepMs}`);
  assert.equal(d.counts.length, (mapTo - mapFrom) / stepMs);
  assert.ok(st.axes.colPx >= 3, 'columns of ' + st.axes.colPx + ' px');
  const secs = secondsIn(mapFrom, mapTo), slowSecs = secs.filter((s) => s % 10 === 9);
  assert.ok(secs.length > 60, 'seconds in the default range: ' + secs.length);
  // Every column holds as many seconds as it is long: no column of two and one of none.
  d.counts.forEach((col, c) => {
    if (mapFrom + (c + 1) * stepMs > T0_MS + 900e3) return; // past the history's end
    assert.equal(col.reduce((a, x) => a + x, 0) - col[col.length - 1], (10 * stepMs) / 1000, `column ${c}: ${col}`);
  });
  const cellSum = d.counts.flat().reduce((a, x) => a + x, 0);
  assert.equal(d.total, 10 * secs.length + slowSecs.length);
  assert.equal(cellSum, d.total, 'the cells hold every event of the range');
  assert.equal(d.slow, slowSecs.length);
  assert.equal(d.max_ms, 50);
  // The 50 ms calls are the top row, and it holds nothing else.
  const top = d.lower_ns.length - 1;
  assert.ok(d.lower_ns[top] <= 50e6 && 50e6 < d.upper_ns, `top row ${d.lower_ns[top]}..${d.upper_ns}`);
  assert.equal(d.counts.reduce((a, c) => a + c[top], 0), slowSecs.length);
  // Drawn: a cell is coloured exactly when it counts events (pixels at the cells' centres).
  const drawn = await page.evaluate(() => {
    const m = kflameServe.S.latency.map, g = m.canvas.getContext('2d'), dpr = window.devicePixelRatio || 1, out = [];
    for (let c = 0; c < m.columns; c++) {
      for (let r = 0; r < m.rows; r++) {
        const x = ((m.x(c) + m.x(c + 1)) / 2) * dpr, y = (m.y(r) + m.rh / 2) * dpr;
        const [R, G, B] = g.getImageData(Math.floor(x), Math.floor(y), 1, 1).data;
        out.push(R === 255 && G === 255 && B === 255 ? 0 : 1);
      }
    }
    return out;
  });
  assert.deepEqual(drawn, d.counts.flatMap((col) => col.map((x) => (x > 0 ? 1 : 0))));
  // Latency ticks: round values, in the rows' range, 10 µs, 1 ms and 10 ms among them.
  for (const v of [1e4, 1e6, 1e7]) assert.ok(st.axes.ticks.includes(v), JSON.stringify(st.axes.ticks));
  assert.ok(st.axes.ticks.every((v) => v >= d.lower_ns[0] && v <= d.upper_ns));
  // The range's figures beside the map.
  const stats = await page.locator('.ks-lat-stats').textContent();
  assert.ok(stats.startsWith(`${d.total.toLocaleString('en-US')} system calls, ${d.slow} slow`), stats);
  assert.match(stats, / · max 50 ms$/);
  // The tooltip of a cell of the top row holding a 50 ms call.
  const c = d.counts.findIndex((col) => col[top] > 0);
  let p = await page.evaluate(([c, r]) => kflameServe.S.latency.map.pointOf(c, r), [c, top]);
  await page.mouse.move(p.x, p.y);
  const from = edge(d, mapFrom, c), to = edge(d, mapFrom, c + 1);
  const tip = await page.locator('.ks-lat-tip').textContent();
  assert.equal(tip, `${clock(from)} – ${clock(to)} UTC (${(to - from) / 1000} s)\n` +
    `${fmtLatency(d.lower_ns[top])} – ${fmtLatency(d.upper_ns)}\n${d.counts[c][top]} system call${d.counts[c][top] === 1 ? '' : 's'}`);
  await screenshot(page, 'serve-latency-tooltip');
  // Drag from the row of 10 µs in column c0 to the top row of column c1: the selection is
  // their seconds and latencies, counted from the map's cells; the page's range becomes the
  // columns' span, and the flame graph and the map follow it.
  const c0 = Math.floor(st.columns / 3), c1 = c0 + 9, r0 = d.lower_ns.findLastIndex((l) => l <= 1e4);
  let want = 0, wantAll = 0;
  for (let k = c0; k <= c1; k++) {
    for (let r = 0; r <= top; r++) { wantAll += d.counts[k][r]; if (r >= r0) want += d.counts[k][r]; }
  }
  assert.ok(want > 10 && want < wantAll, `${want} of ${wantAll}`);
  const span = { from: edge(d, mapFrom, c0), to: edge(d, mapFrom, c1 + 1) };
  const a = await page.evaluate(([c, r]) => kflameServe.S.latency.map.pointOf(c, r), [c0, r0]);
  const b = await page.evaluate(([c, r]) => kflameServe.S.latency.map.pointOf(c, r), [c1, top]);
  const flames = await page.evaluate(() => kflameServe.S.loaded);
  n = await latencyLoads(page);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 6 });
  await page.mouse.up();
  await latencyLoaded(page, n);
  await page.waitForFunction(([k, f]) => kflameServe.S.loaded > k && Math.abs(kflameServe.S.last.info.from / 1e6 - f) < 1, [flames, span.from], { timeout: 10000 });
  st = await S();
  assert.deepEqual(st.range, span);
  assert.deepEqual({ from: +new URL(page.url()).searchParams.get('from'), to: +new URL(page.url()).searchParams.get('to') }, span);
  const info = await page.locator('.ks-lat-info').textContent();
  assert.ok(info.startsWith(`Selected ${new Date(span.from).toISOString().slice(0, 10)} ${clock(span.from)} – ${clock(span.to)} UTC`), info);
  assert.ok(info.includes(`${fmtLatency(d.lower_ns[r0])} – ${fmtLatency(d.upper_ns)}: ${want} system calls.`), info);
  // The map of the selected seconds holds exactly the selected columns' events; the
  // flame graph is the CPU profile of those seconds (the samples the heat-map endpoint
  // counts in them).
  assert.equal(st.data.total, wantAll);
  const cpu = await page.evaluate(async () => {
    const { S, ns } = kflameServe;
    return { viewer: kflameViewer.tree.total[0],
      heat: (await (await fetch(`/api/heatmap?kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}`)).json()).total };
  });
  assert.equal(cpu.viewer, cpu.heat);
  // The selected latencies are marked as a band across the new map: its rows' cells hold
  // what the selection counted.
  const band = await page.evaluate(() => { const m = kflameServe.S.latency.map; return { hidden: m.mark.hidden, w: m.mark.offsetWidth, h: m.mark.offsetHeight, pw: m.pw, rh: m.rh }; });
  assert.ok(!band.hidden && Math.abs(band.w - band.pw) <= 1, JSON.stringify(band));
  const lo = st.data.lower_ns.indexOf(d.lower_ns[r0]);
  assert.ok(lo >= 0);
  assert.equal(band.h, (st.data.lower_ns.length - lo) * band.rh);
  assert.equal(st.data.counts.reduce((a, col) => a + col.slice(lo).reduce((x, y) => x + y, 0), 0), want);
  await screenshot(page, 'serve-latency-selected');
  // Another family and label: the run queue of CPU 0, one 1 ms wait a second.
  n = await latencyLoads(page);
  await page.selectOption('.ks-lat-family', 'runq');
  await latencyLoaded(page, n);
  await page.waitForFunction(() => kflameServe.S.latency.data.kind === 'runq', null, { timeout: 10000 });
  st = await S();
  assert.deepEqual(st.choice, { kind: 'runq', label: 'cpu0' });
  assert.deepEqual(await page.locator('.ks-lat-label option').evaluateAll((os) => os.map((o) => o.value)), ['cpu0']);
  assert.equal(st.data.label, 'cpu0');
  const inRange = secondsIn(st.range.from, st.range.to).length;
  assert.equal(st.data.total, inRange);
  const row = st.data.lower_ns.findIndex((l, r) => l <= 1e6 && 1e6 < (st.data.lower_ns[r + 1] ?? st.data.upper_ns));
  assert.ok(row >= 0);
  assert.equal(st.data.counts.reduce((a, col) => a + col[row], 0), inRange, 'every wait in the bucket of 1 ms');
  assert.ok(st.rows >= 16 && st.axes.rowPx >= 3 && st.axes.ticks.includes(1e6), JSON.stringify(st.axes));
  const url = new URL(page.url()).searchParams;
  assert.deepEqual([url.get('lkind'), url.get('llabel')], ['runq', 'cpu0']);
  // The choice survives a reload.
  await page.reload();
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.latency && kflameServe.S.latency.loaded > 0, null, { timeout: 15000 });
  assert.deepEqual((await S()).choice, { kind: 'runq', label: 'cpu0' });
  await screenshot(page, 'serve-latency-runq');
  assert.deepEqual(problems, []);
  await page.close();
});

test('times per second (ms/s) and latencies are written in µs, ms or s', async () => {
  const { page, problems } = await open();
  const got = await page.evaluate(async () => {
    const { fmtValue, niceScale } = await import('/assets/charts.js');
    return { v: [fmtValue(1500, 'ms/s'), fmtValue(12.5, 'ms/s'), fmtValue(0.25, 'ms'), fmtValue(0, 'ms/s')],
      big: niceScale(2600, 'ms/s').labels, small: niceScale(0.04, 'ms').labels, mid: niceScale(40, 'ms/s').labels };
  });
  assert.deepEqual(got.v, ['1.50 s/s', '12.5 ms/s', '250 µs', '0.00 ms/s']);
  assert.ok(got.big.slice(1).every((l) => / s\/s$/.test(l)), got.big.join());
  assert.ok(got.small.slice(1).every((l) => / µs$/.test(l)), got.small.join());
  assert.ok(got.mid.slice(1).every((l) => / ms\/s$/.test(l)), got.mid.join());
  assert.deepEqual(problems, []);
  await page.close();
});

/** The times (ms) of the outliers the history keeps in [from, to) ms: one in every tenth
 * second, half a second into it. */
function outliersIn(from, to) {
  const out = [];
  for (let s = 9; s < 900; s += 10) {
    const t = T0_MS + s * 1000 + 500;
    if (t >= from && t < to) out.push(t);
  }
  return out;
}

/** Drags over the latency map from cell (c0, r0) to (c1, r1) and waits until the map of the
 * new range is drawn and the selection's outliers were asked for. */
async function dragCells(page, [c0, r0], [c1, r1]) {
  const a = await page.evaluate(([c, r]) => kflameServe.S.latency.map.pointOf(c, r), [c0, r0]);
  const b = await page.evaluate(([c, r]) => kflameServe.S.latency.map.pointOf(c, r), [c1, r1]);
  const n = await latencyLoads(page), k = await page.evaluate(() => kflameServe.S.latency.outliersLoaded || 0);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y, { steps: 6 });
  await page.mouse.up();
  await latencyLoaded(page, n);
  await page.waitForFunction((k) => (kflameServe.S.latency.outliersLoaded || 0) > k, k, { timeout: 10000 });
}

test('a selection over the slow calls lists their outliers, with their flame graph weighted by duration', async () => {
  const { page, problems } = await open('&mode=latency');
  await page.waitForFunction(() => kflameServe.S.latency.loaded > 0 && kflameServe.S.latency.data, null, { timeout: 10000 });
  // Nothing selected: no outliers section.
  assert.equal(await page.locator('.ks-lat-outliers').isHidden(), true);
  const d = await page.evaluate(() => kflameServe.S.latency.data);
  const mapFrom = Math.round(d.from / 1e6), top = d.lower_ns.length - 1;
  assert.ok(d.lower_ns[top] <= 50e6 && 50e6 < d.upper_ns, `top row ${d.lower_ns[top]}..${d.upper_ns}`);
  // Columns c0..c1, from the row of 10 ms to the top: the 50 ms calls of those seconds.
  const columns = d.counts.length, c0 = Math.floor(columns / 4), c1 = c0 + 69, r0 = d.lower_ns.findLastIndex((l) => l <= 1e7);
  assert.ok(c1 < columns && r0 > 0 && r0 < top, `${columns} columns, row ${r0} of ${top}`);
  const span = { from: edge(d, mapFrom, c0), to: edge(d, mapFrom, c1 + 1) };
  const want = outliersIn(span.from, span.to);
  assert.ok(want.length > 5, 'more outliers in the selection than the table lists: ' + want.length);
  let cells = 0;
  for (let c = c0; c <= c1; c++) for (let r = r0; r <= top; r++) cells += d.counts[c][r];
  assert.equal(cells, want.length, 'the selected cells count the kept calls');
  await dragCells(page, [c0, r0], [c1, top]);
  const sel = await page.evaluate(() => {
    const s = kflameServe.S.latency.selection;
    return { from: s.from, to: s.to, minNs: s.minNs, maxNs: s.maxNs, outliers: s.outliers };
  });
  assert.deepEqual({ from: sel.from, to: sel.to }, span);
  const info = sel.outliers.info;
  // Exactly the history's outliers of the selected seconds, within the selected band.
  assert.equal(info.count, want.length);
  assert.equal(sel.outliers.total, want.length * 50e6);
  assert.deepEqual(info.listed.map((o) => Math.round(o.time / 1e6)), want);
  for (const o of info.listed) {
    assert.deepEqual({ d: o.duration_ns, e: o.event, comm: o.comm, pid: o.pid, tid: o.tid, cpu: o.cpu },
      { d: 50e6, e: 'syscall:write', comm: 'testapp', pid: 4242, tid: 4243, cpu: 1 });
  }
  assert.deepEqual([info.min_ns, info.max_ns], [sel.minNs, sel.maxNs]);
  // Under the map: the count, the longest few (all 50 ms: the earliest first), the button.
  const box = page.locator('.ks-lat-outliers');
  assert.equal(await box.isVisible(), true);
  const shown = Math.min(5, want.length);
  const head = await box.locator('.ks-lat-outliers-count').textContent();
  assert.equal(head, `${want.length} outliers in the selection (system calls kept with their stacks)` +
    (want.length > shown ? `, the ${shown} longest:` : ':'));
  const rows = await box.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.deepEqual(rows, want.slice(0, shown).map((t) => [new Date(t).toISOString().slice(11, 23), '50 ms', 'syscall:write', 'testapp[4242/4243]', '1']));
  const button = box.locator('.ks-lat-outlier-flame');
  assert.equal(await button.textContent(), `Flame graph of these ${want.length} outliers`);
  await screenshot(page, 'serve-latency-outliers');
  // Their flame graph in the page's viewer: the outliers' stack, weighted by duration.
  let loaded = await page.evaluate(() => kflameServe.S.loaded);
  await button.click();
  await page.waitForFunction((k) => kflameServe.S.loaded > k, loaded, { timeout: 10000 });
  const flame = await page.evaluate((stack) => {
    const t = kflameViewer.tree, leaf = t.find(stack);
    return { total: t.total[0], names: t.names.slice(), leaf: leaf < 0 ? null : t.total[leaf], save: t.names.includes('save_file'), title: kflameServe.D.panelTitle.textContent,
      viewerTitle: document.querySelector('.ks-viewer .kf-title').textContent,
      downloads: kflameServe.D.downloads.hidden, back: !!document.querySelector('.ks-outliers-back') };
  }, OUTLIER_STACK);
  assert.equal(flame.total, want.length * 50e6);
  assert.ok(flame.save, 'save_file in ' + flame.names.join());
  assert.equal(flame.leaf, want.length * 50e6, 'the whole stack, every outlier');
  assert.ok(flame.title.startsWith(`Outliers of the selection, weighted by duration: ${want.length} system calls of `), flame.title);
  assert.equal(flame.viewerTitle, 'Outliers of the selection, weighted by duration');
  assert.equal(flame.downloads, true, 'the downloads are the range’s: hidden');
  assert.equal(flame.back, true);
  // The URL is the range's, as before: a reload shows its flame graph.
  assert.deepEqual({ from: +new URL(page.url()).searchParams.get('from'), to: +new URL(page.url()).searchParams.get('to') }, span);
  await screenshot(page, 'serve-latency-outliers-flame');
  // Back to the range's flame graph: the CPU profile of the selected seconds.
  loaded = await page.evaluate(() => kflameServe.S.loaded);
  await page.click('.ks-outliers-back');
  await page.waitForFunction((k) => kflameServe.S.loaded > k, loaded, { timeout: 10000 });
  const back = await page.evaluate(async () => {
    const { S, ns } = kflameServe;
    return { title: kflameServe.D.panelTitle.textContent, viewer: kflameViewer.tree.total[0],
      heat: (await (await fetch(`/api/heatmap?kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}`)).json()).total };
  });
  assert.ok(back.title.startsWith('Flame graph: CPU'), back.title);
  assert.equal(back.viewer, back.heat);
  // The selection and its outliers are still shown under the map of its seconds.
  assert.equal(await box.isVisible(), true);
  // A band below 50 ms, over the map of the selected seconds: calls, but no outliers, and no
  // outliers section.
  const m = await page.evaluate(() => kflameServe.S.latency.data);
  const top2 = m.lower_ns.length - 1, low = m.lower_ns.findLastIndex((l) => l <= 1e4);
  assert.ok(m.lower_ns[top2] <= 50e6 && low >= 0 && low < top2 - 1);
  const cols = m.counts.length;
  let below = 0;
  for (let c = 0; c < cols; c++) for (let r = low; r < top2; r++) below += m.counts[c][r];
  assert.ok(below > 0, 'calls in the band below 50 ms');
  await dragCells(page, [0, low], [cols - 1, top2 - 1]);
  const none = await page.evaluate(() => {
    const s = kflameServe.S.latency.selection;
    return { outliers: s.outliers, max: s.maxNs, kids: document.querySelector('.ks-lat-outliers').childElementCount };
  });
  assert.ok(none.max <= 50e6, 'the band ends below the 50 ms calls: ' + none.max);
  assert.equal(none.outliers, null);
  assert.equal(await box.isHidden(), true);
  assert.equal(none.kids, 0);
  const text = await page.locator('.ks-lat-panel').textContent();
  assert.ok(!/outlier/i.test(text), text);
  await screenshot(page, 'serve-latency-no-outliers');
  assert.deepEqual(problems, []);
  await page.close();
});
