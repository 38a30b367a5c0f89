// The cgroup filter of `kflame serve` on a real watched history (crates/kflame-serve/tests/
// data/watched-cgroups.db, see its README: `sha256sum` in /kflame-test.slice/burn.service,
// `dd` in /kflame-test.slice/dd.service, the rest of a busy machine in /). The server reads
// a copy, on loopback.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, launchBrowser, scratch, screenshot, startServe, stopServe, writeText } from './lib.mjs';

const TOKEN = 'browser-cgroup-token-3';
let browser, served, base;

before(async () => {
  const dir = scratch();
  const db = join(dir, 'history.db');
  copyFileSync(join(ROOT, 'crates/kflame-serve/tests/data/watched-cgroups.db'), db);
  served = await startServe(['--db', db, '--token-file', writeText(dir, 'token', TOKEN)]);
  base = served.base;
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  if (served) await stopServe(served);
});

const ready = (page, n = 0) => page.waitForFunction((m) => globalThis.kflameServe && kflameServe.S.loaded > m &&
  kflameServe.S.chartsLoaded > 0 && globalThis.kflameViewer, n, { timeout: 20000 });

/** The viewer's total, its frame names, and the heat map's count of the same range and cgroup. */
const shown = (page) => page.evaluate(async () => {
  const { S, ns } = kflameServe;
  const cg = S.cgroup ? '&cgroup=' + encodeURIComponent(S.cgroup) : '';
  const h = await (await fetch(`/api/heatmap?kind=cpu&from=${ns(S.range.from)}&to=${ns(S.range.to)}${cg}`)).json();
  const t = kflameViewer.tree, roots = [];
  for (let i = 0; i < t.n; i++) if (t.depth[i] === 1) roots.push(t.names[t.name[i]]);
  return { viewer: t.total[0], heat: h.total, roots, title: document.querySelector('.ks-panel-title').textContent };
});

test('a cgroup typed in the field narrows the flame graph to its processes, and stays in the address', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push('error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  await page.goto(base + '?token=' + TOKEN);
  await ready(page);
  // The whole history selected: everything the machine ran.
  await page.click('.ks-preset:has-text("All")');
  await page.waitForFunction(() => kflameServe.S.last && kflameServe.S.range.to - kflameServe.S.range.from > 40000);
  await page.waitForFunction(() => { const { S } = kflameServe; return Math.abs(S.last.info.from / 1e6 - S.range.from) < 1; });
  const all = await shown(page);
  assert.equal(all.viewer, all.heat);
  assert.ok(all.roots.length > 5, 'many processes: ' + all.roots.join(', '));
  for (const [cgroup, comm] of [['/kflame-test.slice/burn.service', 'sha256sum'], ['/kflame-test.slice/dd.service', 'dd']]) {
    const n = await page.evaluate(() => kflameServe.S.loaded);
    await page.fill('.ks-cgroup', cgroup);
    await page.press('.ks-cgroup', 'Enter');
    await ready(page, n);
    const one = await shown(page);
    assert.deepEqual(one.roots, [comm], cgroup);
    assert.equal(one.viewer, one.heat, cgroup);
    assert.ok(one.viewer > 0 && one.viewer < all.viewer);
    assert.ok(one.title.endsWith('cgroup ' + cgroup), one.title);
    assert.equal(new URL(page.url()).searchParams.get('cgroup'), cgroup);
    if (comm === 'sha256sum') await screenshot(page, 'serve-cgroup');
  }
  // The slice holds both services; a reload keeps the filter.
  let n = await page.evaluate(() => kflameServe.S.loaded);
  await page.fill('.ks-cgroup', '/kflame-test.slice');
  await page.press('.ks-cgroup', 'Enter');
  await ready(page, n);
  const slice = await shown(page);
  assert.deepEqual(slice.roots.sort(), ['dd', 'sha256sum']);
  await page.reload();
  await ready(page);
  assert.equal(await page.inputValue('.ks-cgroup'), '/kflame-test.slice');
  assert.equal((await shown(page)).viewer, slice.viewer);
  // Emptied: every process again.
  n = await page.evaluate(() => kflameServe.S.loaded);
  await page.fill('.ks-cgroup', '');
  await page.press('.ks-cgroup', 'Enter');
  await ready(page, n);
  assert.equal((await shown(page)).viewer, all.viewer);
  assert.deepEqual(problems, []);
  await page.close();
});
