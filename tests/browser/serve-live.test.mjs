// `kflame serve --live` while a writer appends to the history, as a running `kflame watch`
// does: the kflame-serve crate's `history` example writes 120 s of history, the server
// starts, the page opens on the newest minutes, then `history --follow` appends 30 more
// seconds (one every 300 ms). The page must follow: charts, selection and flame graph move
// with the newest time, and the flame graph stays the sum of its range. Loopback only; every
// wait is bounded, and the writer and the server are stopped after the test.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'browser-live-token-7';
const T0_MS = 1764000000000;
let browser, served, writer, base, db;

before(async () => {
  const dir = scratch();
  execFileSync('cargo', ['build', '-q', '-p', 'kflame-serve', '--example', 'history'], { cwd: ROOT, stdio: 'inherit' });
  db = join(dir, 'history.db');
  execFileSync(join(ROOT, 'target/debug/examples/history'), [db, '120']);
  served = await startServe(['--live', '--db', db, '--token-file', writeText(dir, 'token', TOKEN + '\n')]);
  base = served.base;
  browser = await launchBrowser();
});

after(async () => {
  if (writer && writer.exitCode === null) writer.kill('SIGTERM');
  if (browser) await browser.close();
  if (served) await stopServe(served, 'kflame serve --live did not stop cleanly on SIGTERM');
});

test('--live: the page follows a history that grows while it is open', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(base + '?token=' + TOKEN);
  await page.waitForFunction(() => globalThis.kflameServe && kflameServe.S.loaded > 0 && kflameServe.S.chartsLoaded > 0,
    null, { timeout: 20000 });
  const start = await page.evaluate(() => ({ ...kflameServe.S.range, end: kflameServe.S.bounds.to, follow: kflameServe.S.follow }));
  assert.equal(start.follow, true, 'a selection that ends at the newest data follows it');
  // The page's end is the history's newest time (/api/info), the selection ends there.
  const newest = () => page.evaluate(async () => Math.floor((await (await fetch('/api/info')).json()).to / 1e6) + 1);
  assert.equal(start.end, await newest());
  assert.ok(start.end > T0_MS + 119000 && start.end < T0_MS + 149000, 'about 120 s written: ' + (start.end - T0_MS));
  assert.equal(start.to, start.end);

  writer = spawn(join(ROOT, 'target/debug/examples/history'), ['--follow', db, '120', '150', '300'], { stdio: 'inherit' });
  const wrote = new Promise((ok) => writer.on('exit', (code) => ok(code)));
  // The newest time moves while the writer runs: the page has seen it before the end.
  await page.waitForFunction((e) => kflameServe.S.bounds.to >= e + 5000, start.end, { timeout: 20000 });
  assert.equal(await Promise.race([wrote, new Promise((ok) => setTimeout(() => ok('timeout'), 30000))]), 0);
  const end = await newest();
  // (The store's newest time is the end of the metric block in progress: one bucket long.)
  assert.ok(end > T0_MS + 149000 && end <= T0_MS + 150001, 'about 150 s written: ' + (end - T0_MS));
  await page.waitForFunction((e) => kflameServe.S.bounds.to === e, end, { timeout: 10000 });
  // The selection kept its length and moved to the end; the flame graph shown is of it.
  await page.waitForFunction(() => {
    const { S } = kflameServe, i = S.last && S.last.info;
    return i && Math.abs(i.to / 1e6 - S.range.to) < 1 && S.range.to === S.bounds.to;
  }, null, { timeout: 10000 });
  // Samples are stored a bucket at a time, after the newest time has moved past them: the
  // page reloads what was written inside its range (within 5 s), until the flame graph is
  // the sum of the range.
  const state = () => page.evaluate(async () => {
    const { S, ns } = kflameServe;
    const h = await (await fetch(`/api/heatmap?kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}`)).json();
    const cpu = S.charts[0].series[0];
    return { range: { ...S.range }, viewer: kflameViewer.tree.total[0], heat: h.total, lastPoint: cpu.t[cpu.t.length - 1] };
  });
  let now = await state();
  for (let k = 0; k < 30 && now.viewer !== now.heat; k++) {
    await new Promise((ok) => setTimeout(ok, 500));
    now = await state();
  }
  assert.ok(Math.abs(now.range.to - now.range.from - (start.to - start.from)) < 1, 'the length stays');
  assert.equal(now.range.to, end);
  assert.equal(now.viewer, now.heat, 'the flame graph is the sum of the moved range');
  assert.ok(now.heat > 0);
  // The charts reach the newest seconds too (one point per pixel: the last point's span
  // ends at the newest second).
  assert.ok(now.lastPoint > T0_MS + 140000, 'the charts follow: last point at ' + (now.lastPoint - T0_MS) + ' ms');
  // The address keeps the moved range.
  assert.equal(+new URL(page.url()).searchParams.get('to'), end);
  await screenshot(page, 'serve-live');
  assert.deepEqual(problems, []);
  await page.close();
});
