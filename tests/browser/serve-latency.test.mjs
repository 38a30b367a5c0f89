// The latency heat map of `kflame serve`, on the history of the kflame-serve crate's `history`
// example (tests/common/history.rs): every second, ten `write` calls of 2 to 20 µs (and one
// of 50 ms in every tenth second) under `syscall`, counted in the family's total as well, and
// one run-queue wait of 1 ms under `runq` `cpu0`; the histogram of second s is stored at
// T0 + s + 999 ms. Every expected count is computed here from that description and the
// range the page shows, or from the map's own answer; none is taken from the drawing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'latency-test-token-7';
const T0_MS = 1764000000000;
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
